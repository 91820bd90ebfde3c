package shq

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"eth1":            "eth1",
		"10.0.1.0/24":     "10.0.1.0/24",
		"":                "''",
		"e;touch${IFS}Z":  "'e;touch${IFS}Z'",
		"it's":            `'it'\''s'`,
		"a b":             "'a b'",
		"$(touch /tmp/x)": "'$(touch /tmp/x)'",
	} {
		assert.Equal(t, want, Quote(in), in)
	}
}

// FuzzQuote: bash reads every quoted word back as the word, one argument,
// and runs nothing else.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"eth1", "e;touch${IFS}Z", "it's", "a\nb", "`id`", "$(id)", "\\", "''"} {
		f.Add(s)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		f.Fatal("bash is needed")
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 200 || containsNUL(s) {
			return
		}
		out, err := exec.Command(bash, "--norc", "--noprofile", "-c", `printf '%s\0' `+Quote(s)+` "$@"; printf '%d' $#`, "x").Output()
		require.NoError(t, err)
		assert.Equal(t, s+"\x000", string(out))
	})
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}
