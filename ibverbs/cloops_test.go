//go:build linux

package ibverbs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/internal/execx"
)

// TestCLoopsUnderSanitizers builds the C write loop and ping-pong (shim.c,
// stream.c, pingpong.c) with testdata/cloops, a fake device behind
// libibverbs' inline dispatchers, under AddressSanitizer and
// UndefinedBehaviorSanitizer, and runs it: every write checked for where it
// went, a list replaced by another user of the QP between two runs (the
// stream's built.gen guard), refused posts, failed and foreign completions,
// stalls and stops. The lab proves the same loops on a real verbs stack;
// this covers what rxe cannot be made to do, in a fraction of a second.
func TestCLoopsUnderSanitizers(t *testing.T) {
	cc, ccArgs := cCompiler(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "cloops")
	build := append(ccArgs, "-std=gnu11", "-g", "-O1", "-Wall", "-Wextra", "-Werror",
		"-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer",
		"-I.", "-o", bin, "shim.c", "stream.c", "pingpong.c", "testdata/cloops/cloops_test.c", "-ldl", "-lpthread")
	if out, err := execx.Command(ctx, cc, build...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(build, " "), err, out)
	}
	run := execx.Command(ctx, bin)
	run.Env = append(os.Environ(), "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0", "UBSAN_OPTIONS=print_stacktrace=1")
	out, err := run.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("cloops: %v", err)
	}
}

// cCompiler is cgo's C compiler: $CC (a program and its flags), else cc.
func cCompiler(t *testing.T) (string, []string) {
	t.Helper()
	name, args := "cc", []string(nil)
	if f := strings.Fields(os.Getenv("CC")); len(f) > 0 {
		name, args = f[0], f[1:]
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, args
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no C compiler (%s): the C loops' sanitizer test needs one, as cgo does (apt-get install gcc)", name)
	}
	t.Skipf("no C compiler (%s)", name)
	return "", nil
}
