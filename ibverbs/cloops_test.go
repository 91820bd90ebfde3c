//go:build linux && cgo

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
// libibverbs' inline dispatchers, once under AddressSanitizer and
// UndefinedBehaviorSanitizer and once under ThreadSanitizer (the ping-pong's
// two sides run on two threads, stop is set from a third), and runs it:
// every write checked for where it went, a list replaced by another user of
// the QP between two runs (the stream's built.gen guard), a send queue never
// overfilled, refused posts, failed and foreign completions, stalls and
// stops. The lab proves the same loops on a real verbs stack; this covers
// what rxe cannot be made to do, in seconds.
func TestCLoopsUnderSanitizers(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		needOrFail(t, "gcc: %v", err)
	}
	for _, sanitize := range []string{"address,undefined", "thread"} {
		t.Run(sanitize, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			bin := filepath.Join(t.TempDir(), "cloops")
			build := []string{"-std=gnu11", "-g", "-O1", "-Wall", "-Wextra", "-Werror",
				"-fsanitize=" + sanitize, "-fno-sanitize-recover=all", "-fno-omit-frame-pointer",
				"-I.", "-o", bin, "shim.c", "stream.c", "pingpong.c", "testdata/cloops/cloops_test.c", "-ldl", "-lpthread"}
			if out, err := execx.Command(ctx, "gcc", build...).CombinedOutput(); err != nil {
				t.Fatalf("gcc %s: %v\n%s", strings.Join(build, " "), err, out)
			}
			run := execx.Command(ctx, bin)
			run.Env = append(os.Environ(), "ASAN_OPTIONS=detect_leaks=1", "UBSAN_OPTIONS=print_stacktrace=1",
				"TSAN_OPTIONS=halt_on_error=1")
			out, err := run.CombinedOutput()
			t.Logf("%s", out)
			if err != nil {
				t.Fatalf("cloops: %v", err)
			}
		})
	}
}
