//go:build linux && cgo

package ibverbs

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
)

// needOrFail skips t, or fails it under CI=true, where .ci/deps.sh installs
// what the test needs.
func needOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if labtest.InCI() {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// abiProgram is a C program printing, for each line of
// testdata/rdma_abi.txt, the size, offset or value it names.
func abiProgram(t *testing.T, include string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "rdma_abi.txt"))
	require.NoError(t, err)
	defer f.Close()
	var b strings.Builder
	b.WriteString(include + "\n#include <stdio.h>\n#include <stddef.h>\nint main(void) {\n")
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kind, what, _ := strings.Cut(line, " ")
		switch kind {
		case "size":
			fmt.Fprintf(&b, "\tprintf(\"size %s %%zu\\n\", sizeof(%s));\n", what, what)
		case "offset":
			typ, field, ok := strings.Cut(what, ".")
			require.True(t, ok, line)
			fmt.Fprintf(&b, "\tprintf(\"offset %s %%zu\\n\", offsetof(%s, %s));\n", what, typ, field)
		case "value":
			fmt.Fprintf(&b, "\tprintf(\"value %s %%lld\\n\", (long long)%s);\n", what, what)
		default:
			t.Fatalf("rdma_abi.txt: %q: want size, offset or value", line)
		}
		n++
	}
	require.NoError(t, sc.Err())
	require.Greater(t, n, 400)
	b.WriteString("\treturn 0;\n}\n")
	return b.String()
}

func runC(t *testing.T, ctx context.Context, src string, cflags ...string) string {
	t.Helper()
	dir := t.TempDir()
	c, bin := filepath.Join(dir, "abi.c"), filepath.Join(dir, "abi")
	require.NoError(t, os.WriteFile(c, []byte(src), 0o644))
	out, err := execx.Command(ctx, "gcc", append(cflags, "-Wall", "-Werror", "-o", bin, c)...).CombinedOutput()
	require.NoError(t, err, "gcc: %s", out)
	out, err = execx.Command(ctx, bin).Output()
	require.NoError(t, err)
	return string(out)
}

// rdma_abi.h, which lets the shim build without libibverbs-dev and
// librdmacm-dev, has the layout of rdma-core's own headers: every struct's
// size, every member's offset and every enumerator's value are the same.
func TestShimABIMatchesTheHeaders(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		needOrFail(t, "gcc: %v", err)
	}
	for _, h := range []string{"/usr/include/infiniband/verbs.h", "/usr/include/rdma/rdma_cma.h"} {
		if _, err := os.Stat(h); err != nil {
			needOrFail(t, "%s (libibverbs-dev, librdmacm-dev: .ci/deps.sh test): %v", h, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	real := runC(t, ctx, abiProgram(t, "#include <infiniband/verbs.h>\n#include <rdma/rdma_cma.h>"))
	abs, err := filepath.Abs(".")
	require.NoError(t, err)
	ours := runC(t, ctx, abiProgram(t, `#include "rdma_abi.h"`), "-I", abs)
	assert.Equal(t, real, ours)
	assert.Contains(t, ours, "size struct ibv_send_wr ")
}

// An importer builds with cgo where libibverbs-dev and librdmacm-dev are
// not installed: in a private mount namespace, empty directories hide
// /usr/include/infiniband and /usr/include/rdma, and a program importing
// ibverbs (testdata/ldd) builds, with its cgo packages compiled again (a
// CGO_CFLAGS of its own keeps the build cache from answering), and lists
// devices.
func TestImporterBuildsWithoutTheRDMAHeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	if os.Geteuid() != 0 {
		needOrFail(t, "hiding the headers in a mount namespace needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		needOrFail(t, "unshare (util-linux): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "importer")
	const script = `set -e
for d in /usr/include/infiniband /usr/include/rdma; do
	if [ -d "$d" ]; then mount -t tmpfs -o size=1m,mode=0755 erdmakit-hidden "$d"; fi
done
if [ -e /usr/include/infiniband/verbs.h ] || [ -e /usr/include/rdma/rdma_cma.h ]; then
	echo "the headers are still visible"; exit 1
fi
echo '#include <infiniband/verbs.h>' | gcc -E -x c - >/dev/null 2>&1 && { echo "gcc still finds verbs.h"; exit 1; }
"$1" build -o "$2" ./testdata/ldd
"$2"`
	cmd := execx.Command(ctx, unshare, "-m", "--propagation", "private", "sh", "-c", script, "sh", goTool(t), bin)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1",
		fmt.Sprintf("CGO_CFLAGS=-O2 -g -DERDMAKIT_NO_RDMA_HEADERS_%d", time.Now().UnixNano()))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "not_supported=false err=<nil>", "the cgo build lists devices: %s", out)
}
