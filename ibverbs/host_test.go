//go:build linux && cgo

package ibverbs

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/execx"
)

// These run on any Linux host with libibverbs installed (CI has it, no RDMA
// hardware needed).

func TestDevicesListsWithoutError(t *testing.T) {
	devs, err := Devices()
	require.NoError(t, err, "libibverbs is installed by .ci/deps.sh: listing must work with zero devices too")
	for _, d := range devs {
		assert.NotEmpty(t, d.Name)
	}
	t.Logf("%d devices: %+v", len(devs), devs)
}

func TestOpenUnknownDeviceIsClear(t *testing.T) {
	_, err := Open("erdmakit_no_such_dev")
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNoDevice)
	assert.Contains(t, err.Error(), `"erdmakit_no_such_dev"`)
	assert.Contains(t, err.Error(), "devices present")
}

func TestLoaderMissingVerbsIsErrNotInstalled(t *testing.T) {
	_, err := Loader{Verbs: "liberdmakit-missing-ibverbs.so.1"}.Load()
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNotInstalled)
	assert.Contains(t, err.Error(), "apt-get install libibverbs1 ibverbs-providers rdma-core (Debian, Ubuntu)")
	assert.Contains(t, err.Error(), "dnf or yum install rdma-core libibverbs")
	assert.Contains(t, err.Error(), "liberdmakit-missing-ibverbs.so.1")
}

func TestLoaderNotVerbsIsErrNotInstalled(t *testing.T) {
	// A library that exists but is not libibverbs: missing symbols.
	_, err := Loader{Verbs: "libc.so.6"}.Load()
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNotInstalled)
	assert.Contains(t, err.Error(), "ibv_get_device_list")
}

func TestLoaderMissingRDMACMKeepsVerbs(t *testing.T) {
	lib, err := Loader{RDMACM: "liberdmakit-missing-rdmacm.so.1"}.Load()
	require.NoError(t, err)
	_, err = lib.Devices()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = lib.DialCM(ctx, "10.0.9.1:7471", CMConfig{})
	assert.ErrorIs(t, err, ErrRDMACMNotInstalled)
	_, err = lib.ListenCM(ctx, "0.0.0.0:0", CMConfig{})
	assert.ErrorIs(t, err, ErrRDMACMNotInstalled)
}

func TestCMBadAddress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := DialCM(ctx, "10.0.9.1", CMConfig{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "want ip:port")
}

func TestBufferIsPageAlignedZeroedCMemory(t *testing.T) {
	b, err := NewBuffer(10000)
	require.NoError(t, err)
	assert.Equal(t, 10000, b.Len())
	view := b.Bytes()
	require.Len(t, view, 10000)
	assert.Zero(t, uintptrOf(view)%uintptr(os.Getpagesize()), "page aligned")
	for i, c := range view {
		if c != 0 {
			t.Fatalf("byte %d is %d, want zeroed memory", i, c)
		}
	}
	view[0], view[9999] = 1, 2
	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "Close is idempotent")
	assert.Nil(t, b.Bytes())

	_, err = NewBuffer(0)
	assert.Error(t, err)
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafePointer(b)) }

func goTool(t *testing.T) string {
	t.Helper()
	// go test puts $GOROOT/bin first in PATH, so this is the go that runs us.
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go tool in PATH to build the check program: %v", err)
	}
	return p
}

func buildCheckProgram(t *testing.T, cgo bool) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a program")
	}
	out := filepath.Join(t.TempDir(), "ldd-check")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := execx.Command(ctx, goTool(t), "build", "-o", out, "./testdata/ldd")
	env := os.Environ()
	if cgo {
		env = append(env, "CGO_ENABLED=1")
	} else {
		env = append(env, "CGO_ENABLED=0")
	}
	cmd.Env = env
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", b)
	return out
}

func TestBinaryDoesNotLinkVerbs(t *testing.T) {
	bin := buildCheckProgram(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ldd, err := execx.Output(ctx, "ldd", bin)
	require.NoError(t, err)
	assert.NotContains(t, string(ldd), "libibverbs", "ldd:\n%s", ldd)
	assert.NotContains(t, string(ldd), "librdmacm", "ldd:\n%s", ldd)
	run, err := execx.Output(ctx, bin)
	require.NoError(t, err)
	assert.Contains(t, string(run), "not_supported=false err=<nil>", "the cgo build lists devices: %s", run)
}

func TestNoCgoBuildReturnsErrNotSupported(t *testing.T) {
	bin := buildCheckProgram(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := execx.Output(ctx, bin)
	require.NoError(t, err)
	assert.Contains(t, string(run), "devices=0 not_supported=true", "%s", run)
}

func TestErrNotInstalledIsNotErrNotSupported(t *testing.T) {
	assert.False(t, errors.Is(ErrNotInstalled, ErrNotSupported))
	assert.True(t, strings.HasPrefix(ErrNotInstalled.Error(), "libibverbs is not installed"))
	assert.ErrorIs(t, &Error{Verb: "ibv_dealloc_pd", Errno: syscall.EBUSY}, syscall.EBUSY)
}
