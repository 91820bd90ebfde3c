package moduletest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/fixture"
)

// TestDoctorSameInEveryBuild (library-3 item 3): the doctor's verdict on
// a recorded host does not depend on the build. A recording carries its
// NVML answers (erdmakit/nvml.json), which a build without cgo replays as
// the cgo build does; only the live NVML needs cgo. The CLI is built both
// ways and `doctor --root R --json` must print the same bytes and exit
// with the same code for every recording in testdata/hosts.
func TestDoctorSameInEveryBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI twice: not in -short")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		need(t, "go not on PATH: %v", err)
	}
	root, err := fixture.ModuleRoot()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	bin := t.TempDir()
	build := func(cgo string) string {
		out := filepath.Join(bin, "erdmakit-cgo"+cgo)
		cmd := execx.Command(ctx, gobin, "build", "-o", out, "./examples/erdmakit")
		cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED="+cgo)
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "CGO_ENABLED=%s go build ./examples/erdmakit:\n%s", cgo, b)
		return out
	}
	withCgo, without := build("1"), build("0")
	hosts, err := filepath.Glob(filepath.Join(root, "testdata", "hosts", "*.tar.gz"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(hosts), 9)
	doctor := func(cli, host string) (string, int) {
		cmd := execx.Command(ctx, cli, "doctor", "--root", host, "--json")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		require.NoError(t, err)
		return string(out), 0
	}
	for _, h := range hosts {
		name := strings.TrimSuffix(filepath.Base(h), ".tar.gz")
		want, wantCode := doctor(withCgo, h)
		got, gotCode := doctor(without, h)
		assert.Equal(t, wantCode, gotCode, "%s: exit code with and without cgo", name)
		assert.Equal(t, want, got, "%s: doctor --json with and without cgo", name)
		assert.Contains(t, want, `"id": "gpu-count"`, name)
	}
}
