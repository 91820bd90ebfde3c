package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A tree packed twice, with other file times and created in another order,
// gives the same bytes: sorted members, the epoch's mtime, root owner.
func TestWriteTarIsReproducible(t *testing.T) {
	const epoch = 1765134582
	mk := func(order []string) []byte {
		dir := t.TempDir()
		for _, n := range order {
			p := filepath.Join(dir, n)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			mode := os.FileMode(0o644)
			if n == "erdmakit" {
				mode = 0o755
			}
			require.NoError(t, os.WriteFile(p, []byte("content of "+n), mode))
			require.NoError(t, os.Chtimes(p, time.Now(), time.Now().Add(-time.Duration(len(n))*time.Hour)))
		}
		var b bytes.Buffer
		require.NoError(t, writeTar(&b, dir, "erdmakit_v1.0.0_linux_amd64", epoch))
		return b.Bytes()
	}
	a := mk([]string{"erdmakit", "man/man1/erdmakit.1.gz", "LICENSE", "completions/_erdmakit"})
	b := mk([]string{"completions/_erdmakit", "LICENSE", "man/man1/erdmakit.1.gz", "erdmakit"})
	require.Equal(t, a, b)

	zr, err := gzip.NewReader(bytes.NewReader(a))
	require.NoError(t, err)
	assert.Equal(t, int64(epoch), zr.ModTime.Unix())
	assert.Empty(t, zr.Name)
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		names = append(names, h.Name)
		assert.Equal(t, int64(epoch), h.ModTime.Unix(), h.Name)
		assert.Equal(t, "root", h.Uname)
		if h.Name == "erdmakit_v1.0.0_linux_amd64/erdmakit" {
			assert.Equal(t, int64(0o755), h.Mode)
		}
	}
	assert.Equal(t, []string{"erdmakit_v1.0.0_linux_amd64/", "erdmakit_v1.0.0_linux_amd64/LICENSE",
		"erdmakit_v1.0.0_linux_amd64/completions/", "erdmakit_v1.0.0_linux_amd64/completions/_erdmakit",
		"erdmakit_v1.0.0_linux_amd64/erdmakit", "erdmakit_v1.0.0_linux_amd64/man/", "erdmakit_v1.0.0_linux_amd64/man/man1/",
		"erdmakit_v1.0.0_linux_amd64/man/man1/erdmakit.1.gz"}, names)
}

// The floor check on real binaries: a C program built here against this
// machine's glibc (2.36: its __libc_start_main is GLIBC_2.34) is refused
// at 2.17 and accepted at its own version.
func TestGlibcFloorOfABinaryBuiltHere(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("gcc not found: %v", err)
		}
		t.Skipf("gcc not found: %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	bin := filepath.Join(dir, "p")
	require.NoError(t, os.WriteFile(src, []byte("#include <stdio.h>\nint main(void){puts(\"hi\");return 0;}\n"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, gcc, "-o", bin, src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	need, err := glibcFloor(bin)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, need.Version[1], 2, "a binary linked by gcc needs at least GLIBC_2.2.5: %v", need)
	assert.NotEmpty(t, need.Symbols)
	if cmpVer(need.Version, [2]int{2, 34}) >= 0 {
		assert.Contains(t, need.Symbols, "__libc_start_main@GLIBC_2.34", "glibc >= 2.34 moved __libc_start_main")
	}
	err = cmdGlibc([]string{"-max", "2.2", bin})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "newer than the floor GLIBC_2.2")
	require.NoError(t, cmdGlibc([]string{"-max", "2.99", bin}))
}

func TestGlibcFloorRefusesWhatIsNotAGlibcBinary(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755))
	_, err := glibcFloor(p)
	require.Error(t, err)
	for _, bad := range []string{"2", "two.17", "", "2.x"} {
		_, err := parseVer(bad)
		assert.Error(t, err, bad)
	}
	v, err := parseVer("GLIBC_2.28")
	require.NoError(t, err)
	assert.Equal(t, [2]int{2, 28}, v)
}

// The license collector reads the module list from a binary's build info:
// this test binary's own.
func TestLinkedModulesOfThisTestBinary(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	mods, err := linkedModules(exe)
	require.NoError(t, err)
	var paths []string
	for _, m := range mods {
		paths = append(paths, m.Path)
		assert.NotEmpty(t, m.Version, m.Path)
	}
	assert.Contains(t, paths, "github.com/spf13/cobra")
	assert.IsIncreasing(t, paths)
	for _, n := range []string{"LICENSE", "LICENSE.txt", "COPYING", "NOTICE", "license.md", "PATENTS"} {
		assert.True(t, licenseName.MatchString(n), n)
	}
	for _, n := range []string{"licenses.go", "README.md", "LICENSEE"} {
		assert.False(t, licenseName.MatchString(n), n)
	}
}

func TestGzipIsReproducible(t *testing.T) {
	var a, b bytes.Buffer
	require.NoError(t, gzipTo(&a, []byte(".TH ERDMAKIT 1\n"), 1765134582))
	require.NoError(t, gzipTo(&b, []byte(".TH ERDMAKIT 1\n"), 1765134582))
	assert.Equal(t, a.Bytes(), b.Bytes())
	zr, err := gzip.NewReader(&a)
	require.NoError(t, err)
	assert.Equal(t, int64(1765134582), zr.ModTime.Unix())
}
