package setup_test

import (
	"io"
	"os/exec"
	"testing"

	"github.com/erdmakit/erdmakit/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validateKeyfile has NetworkManager's own keyfile parser read c: nmcli
// --offline reads a keyfile on stdin and prints it back normalised (it
// fails on a key or value it does not accept).
func validateKeyfile(t *testing.T, c string) {
	if _, err := exec.LookPath("nmcli"); err != nil {
		if labtest.InCI() {
			t.Fatal("nmcli missing (CI=true)")
		}
		t.Log("nmcli not installed: keyfile not validated")
		return
	}
	cmd := exec.Command("nmcli", "--offline", "connection", "modify", "connection.autoconnect", "yes")
	cmd.Stdin = stringsReader(c)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "nmcli --offline: %s", out)
	assert.Contains(t, string(out), "mtu=8500")
	assert.Contains(t, string(out), "address1=10.0.1.11/24")
}

func stringsReader(s string) *stringReader { return &stringReader{s: s} }

type stringReader struct{ s string }

func (r *stringReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, eof
	}
	n := copy(p, r.s)
	r.s = r.s[n:]
	return n, nil
}

var eof = io.EOF
