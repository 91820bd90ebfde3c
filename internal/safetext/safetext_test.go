package safetext_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/erdmakit/erdmakit/internal/safetext"
	"github.com/stretchr/testify/assert"
)

func TestLineEscapesControlsAndBadUTF8(t *testing.T) {
	for in, want := range map[string]string{
		"erdma_0":                        "erdma_0",
		"GPU 0 → NIC":                    "GPU 0 → NIC",
		"a\nerdmakit: all good (exit 0)": `a\nerdmakit: all good (exit 0)`,
		"\x1b]0;owned\a\x1b[2J":          `\x1b]0;owned\a\x1b[2J`,
		"tab\there\r":                    `tab\there\r`,
		"bad\xffbyte":                    `bad\xffbyte`,
		"c1\u009bcsi":                    `c1\u009bcsi`,
		"rtl\u202eevil":                  `rtl\u202eevil`,
		"del\x7f":                        `del\x7f`,
	} {
		assert.Equal(t, want, safetext.Line(in), "%q", in)
	}
}

func TestTextKeepsNewlinesAndTabs(t *testing.T) {
	assert.Equal(t, "policy:\n\t{}\n", safetext.Text("policy:\n\t{}\n"))
	assert.Equal(t, `x\x1b[2J`+"\n"+`y\r`, safetext.Text("x\x1b[2J\ny\r"))
}

func TestWriterLetsOnlyOurColoursThrough(t *testing.T) {
	var b bytes.Buffer
	w := safetext.NewWriter(&b)
	in := "RESULT\n\x1b[32mok\x1b[0m  host \x1b]0;title\a\x1b[2Jx\n"
	n, err := w.Write([]byte(in))
	assert.NoError(t, err)
	assert.Equal(t, len(in), n)
	assert.Equal(t, "RESULT\n\x1b[32mok\x1b[0m  host "+`\x1b]0;title\a\x1b[2Jx`+"\n", b.String())
	assert.Equal(t, ^uintptr(0), w.Fd(), "a buffer has no descriptor")
}

func FuzzLine(f *testing.F) {
	for _, s := range []string{"erdma_0", "a\nb", "\x1b[31m", "\xff\xfe", "\u0085", "ok\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := safetext.Line(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Line(%q) = %q: invalid UTF-8", s, out)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
				t.Fatalf("Line(%q) = %q: control %U left", s, out, r)
			}
		}
		var b bytes.Buffer
		if _, err := safetext.NewWriter(&b).Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		for _, r := range strings.ReplaceAll(b.String(), "\x1b[", "[") {
			if r == 0x1b || r == '\r' || r == 0x07 {
				t.Fatalf("Writer(%q) = %q: %U left", s, b.String(), r)
			}
		}
	})
}

func ExampleLine() {
	// A host name a peer sent, with a forged line and a title escape.
	fmt.Println(safetext.Line("vm1\nerdmakit: all good\x1b]0;x\a"))
	// Output: vm1\nerdmakit: all good\x1b]0;x\a
}
