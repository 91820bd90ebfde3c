package moduletest

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/fixture"
)

// makefileCgoCFLAGS is the CGO_CFLAGS the Makefile exports for every build.
func makefileCgoCFLAGS(t *testing.T, root string) []string {
	f, err := os.Open(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "export CGO_CFLAGS ?="); ok {
			return strings.Fields(v)
		}
	}
	t.Fatal("the Makefile exports no CGO_CFLAGS")
	return nil
}

// TestBuildPrintsNoCgoWarnings: go-nvml's cgo code calls NVML functions its
// own header marks deprecated, and a fresh `make build` printed ~150 lines of
// gcc warnings before our output. The test runs cgo on go-nvml as the go
// command does and compiles the C it generates, with the Makefile's
// CGO_CFLAGS (no warning) and without the flag that silences them (warnings:
// proof that the check sees what a user would).
func TestBuildPrintsNoCgoWarnings(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles go-nvml's generated C")
	}
	root, err := fixture.ModuleRoot()
	require.NoError(t, err)
	flags := makefileCgoCFLAGS(t, root)
	require.Contains(t, flags, "-Wno-deprecated-declarations")

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	run := func(dir string, name string, args ...string) string {
		t.Helper()
		cmd := execx.Command(ctx, name, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			need(t, "%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	const pkg = "github.com/NVIDIA/go-nvml/pkg/nvml"
	listed := strings.Split(strings.TrimSpace(run(root, "go", "list", "-f", "{{.Dir}}\n{{join .CgoCFLAGS \" \"}}\n{{join .CgoFiles \" \"}}", pkg)), "\n")
	require.Len(t, listed, 3, "go list %s", pkg)
	dir, pkgFlags, files := listed[0], strings.Fields(listed[1]), strings.Fields(listed[2])
	require.NotEmpty(t, files)

	obj := t.TempDir()
	run(dir, "go", append(append([]string{"tool", "cgo", "-objdir", obj, "-importpath", pkg, "--"}, pkgFlags...), files...)...)
	var without []string
	for _, f := range flags {
		if f != "-Wno-deprecated-declarations" {
			without = append(without, f)
		}
	}
	warnings := func(cflags []string) int {
		n := 0
		for _, f := range files {
			c := filepath.Join(obj, strings.TrimSuffix(f, ".go")+".cgo2.c")
			args := append(append(append([]string{"-c", "-o", os.DevNull, "-I", dir, "-I", obj}, cflags...), pkgFlags...), c)
			n += strings.Count(run(obj, "gcc", args...), "warning:")
		}
		return n
	}
	require.Positive(t, warnings(without), "go-nvml compiles without deprecation warnings now: the flag may be dropped")
	require.Zero(t, warnings(flags), "a build with the Makefile's CGO_CFLAGS prints gcc warnings")
}
