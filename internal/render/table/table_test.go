package table

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTableAligns(t *testing.T) {
	tb := New("DEVICE", "STATE", "NOTE")
	tb.Add("erdma_0", "ACTIVE", "ok")
	tb.Add("erdma_10", "DOWN") // a short row prints empty cells
	var b bytes.Buffer
	require.NoError(t, tb.Write(&b))
	assert.Equal(t, "DEVICE    STATE   NOTE\nerdma_0   ACTIVE  ok\nerdma_10  DOWN    \n", b.String())
}

func TestTableColorsSeverityColumnOnly(t *testing.T) {
	tb := New("CHECK", "SEVERITY")
	tb.Color, tb.SeverityColumn = true, 1
	tb.Add("fail", "fail")
	var b bytes.Buffer
	require.NoError(t, tb.Write(&b))
	lines := strings.Split(b.String(), "\n")
	assert.Equal(t, "CHECK  SEVERITY", lines[0], "the header is never coloured")
	assert.Equal(t, "fail   "+red+"fail"+reset, lines[1], "padding is computed on the plain text")
}

func TestSeverity(t *testing.T) {
	assert.Equal(t, green+"ok"+reset, Severity("ok"))
	assert.Equal(t, yellow+"warn"+reset, Severity("warn"))
	assert.Equal(t, grey+"skip"+reset, Severity("skip"))
	assert.Equal(t, "ACTIVE", Severity("ACTIVE"))
}

func ExampleTable() {
	t := New("DEVICE", "PORT", "STATE")
	t.Add("erdma_0", "1", "ACTIVE")
	t.Add("erdma_1", "1", "DOWN")
	_ = t.Write(os.Stdout)
	// Output:
	// DEVICE   PORT  STATE
	// erdma_0  1     ACTIVE
	// erdma_1  1     DOWN
}

func TestTableEscapesCells(t *testing.T) {
	tb := New("HOST", "RESULT")
	tb.Add("vm1\nvm9  ok  forged", "fail")
	tb.Add("\x1b]0;title\a", "ok")
	var b strings.Builder
	require.NoError(t, tb.Write(&b))
	assert.Equal(t, "HOST                  RESULT\n"+
		`vm1\nvm9  ok  forged`+"  fail\n"+
		`\x1b]0;title\a`+"        ok\n", b.String())
}
