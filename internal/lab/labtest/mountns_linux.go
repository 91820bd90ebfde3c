package labtest

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/internal/execx"
)

// RerunInMountNamespace runs the test named name once more, in a child
// process of this test binary with a private mount namespace (bind mounts
// over /sys or /etc stay the child's) and env=1 in its environment, and
// fails t unless the child's run passed. The test body checks env to tell
// the child from the parent. It returns the child's output.
func RerunInMountNamespace(t testing.TB, name, env string, timeout time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := execx.Command(ctx, os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNS
	cmd.Env = append(os.Environ(), env+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in a private mount namespace: %v\nchild:\n%s", name, err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("%s in a private mount namespace did not pass\nchild:\n%s", name, out)
	}
	return string(out)
}
