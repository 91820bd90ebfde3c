package lab

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestShellFilterPassesOnlyTheCommandsOutput(t *testing.T) {
	var out bytes.Buffer
	f := &shellFilter{w: &out, pair: true}
	pa := &prefixWriter{w: f, prefix: "[a] "}
	pb := &prefixWriter{w: f, prefix: "[b] "}
	for _, l := range []string{"@@ERDMAKIT-LAB READY 3\n", "[    1.0] kernel noise\n", "@@ERDMAKIT-LAB BEGIN shell\n"} {
		pa.Write([]byte(l))
		pb.Write([]byte(l))
	}
	pa.Write([]byte("hello from a\n"))
	pb.Write([]byte("hello from b\n"))
	pa.Write([]byte("@@ERDMAKIT-LAB END shell 0\n"))
	pa.Write([]byte("[   20.1] reboot: Restarting system\n"))
	pb.Write([]byte("still b\n"))
	assert.Equal(t, "[a] hello from a\n[b] hello from b\n[b] still b\n", out.String())

	out.Reset()
	one := &shellFilter{w: &out}
	one.Write([]byte("noise\n@@ERDMAKIT-LAB BEGIN shell\nresult\n@@ERDMAKIT-LAB END shell 0\nreboot\n"))
	assert.Equal(t, "result\n", out.String())
}

func FuzzParseMarker(f *testing.F) {
	f.Add("@@ERDMAKIT-LAB END ibverbs 0\r\n")
	f.Add("[ 1.0] @@ERDMAKIT-LAB READY 16.90")
	f.Add("@@ERDMAKIT-LAB ")
	f.Fuzz(func(t *testing.T, line string) {
		m, ok := ParseMarker(line)
		if ok && m.Word == "" {
			t.Fatalf("marker without a word from %q", line)
		}
	})
}
