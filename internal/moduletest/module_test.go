package moduletest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	goversion "go/version"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

const modulePath = "github.com/erdmakit/erdmakit"

// need fails t under CI=true and skips it elsewhere: a module test that
// cannot run in CI has silently stopped guarding anything.
func need(t *testing.T, format string, args ...any) {
	t.Helper()
	if labtest.InCI() {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// checkout copies what a clone of this tree holds (the files git tracks,
// plus untracked ones it does not ignore: what the next commit would hold)
// into a fresh directory, symlinks as symlinks, and returns it.
func checkout(t *testing.T) string {
	t.Helper()
	root, err := fixture.ModuleRoot()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := execx.Command(ctx, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		need(t, "git ls-files in %s: %v (the module test needs a git checkout)", root, err)
	}
	dst := filepath.Join(t.TempDir(), "erdmakit")
	n := 0
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, filepath.FromSlash(rel))
		fi, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the worktree, not yet committed
		}
		require.NoError(t, err)
		to := filepath.Join(dst, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o755))
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(src)
			require.NoError(t, err)
			require.NoError(t, os.Symlink(target, to))
			n++
			continue
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(to, b, 0o644))
		n++
	}
	require.NotZero(t, n, "git lists no files")
	return dst
}

// TestModuleZip is what the module proxy does with a tagged commit: the
// tree must pass the module zip's checks with nothing omitted (a path with
// ':' is invalid; a symlink is dropped, so a fixture built on links would
// arrive broken).
func TestModuleZip(t *testing.T) {
	dir := checkout(t)
	cf, err := zip.CheckDir(dir)
	for _, f := range cf.Omitted {
		// tools/release is a module of its own (nfpm and cobra/doc stay
		// out of erdmakit's graph): the zip leaves it out by design.
		if rel, _ := filepath.Rel(dir, f.Path); strings.HasPrefix(filepath.ToSlash(rel), "tools/release/") ||
			filepath.ToSlash(rel) == "tools/release" {
			continue
		}
		t.Errorf("omitted from the module zip: %v", f)
	}
	if err == nil {
		err = cf.Err()
	}
	if err != nil {
		msg := err.Error()
		if len(msg) > 4000 {
			msg = msg[:4000] + "..."
		}
		t.Fatalf("the module zip refuses the tree: %s", msg)
	}
	var buf bytes.Buffer
	require.NoError(t, zip.CreateFromDir(&buf, module.Version{Path: modulePath, Version: "v0.0.0-20260101000000-000000000000"}, dir))
	assert.Less(t, buf.Len(), 50<<20, "the module zip stays far below the proxy's 500 MB limit")
}

// TestTestsRunWithoutExecBits: a module zip, so `go get`'s copy, keeps no
// file modes. The tests that run a stand-in script from testdata
// (perftest's fake_ib_write_bw) pass in such a copy: checkout writes every
// file 0644.
func TestTestsRunWithoutExecBits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a package's tests in a copy of the module: not in -short")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		need(t, "go not on PATH: %v", err)
	}
	dir := checkout(t)
	fi, err := os.Stat(filepath.Join(dir, "perf", "perftest", "testdata", "fake_ib_write_bw"))
	require.NoError(t, err)
	require.Zero(t, fi.Mode()&0o111, "the copy keeps no exec bit, as a module zip")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := execx.Command(ctx, gobin, "test", "-count=1", "-run", "TestRunWrite", "./perf/perftest/")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.NotContains(t, string(out), "permission denied")
}

// importerModule is a fresh module outside the repository that fetches this
// tree's module zip through a file:// module proxy (every other module
// comes from this machine's module cache, so nothing is downloaded).
type importerModule struct {
	gobin, dir, tmp, version string
	env                      []string
	// run runs the go command in the importer's module; it fails the
	// test with the command's output.
	run func(args ...string) string
}

// newImporter writes the proxy (this tree's zip at a pseudo-version) and
// an empty importer module (go.mod only) requiring nothing yet.
func newImporter(t *testing.T, ctx context.Context) *importerModule {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		need(t, "go not on PATH: %v", err)
	}
	dir := checkout(t)
	tmp := t.TempDir()
	version := "v0.0.0-" + time.Now().UTC().Format("20060102150405") + "-000000000000"
	at := filepath.Join(tmp, "proxy", modulePath, "@v")
	require.NoError(t, os.MkdirAll(at, 0o755))
	zf, err := os.Create(filepath.Join(at, version+".zip"))
	require.NoError(t, err)
	require.NoError(t, zip.CreateFromDir(zf, module.Version{Path: modulePath, Version: version}, dir))
	require.NoError(t, zf.Close())
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(at, version+".mod"), gomod, 0o644))
	info := fmt.Sprintf(`{"Version":%q,"Time":%q}`, version, time.Now().UTC().Format(time.RFC3339))
	require.NoError(t, os.WriteFile(filepath.Join(at, version+".info"), []byte(info), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(at, "list"), []byte(version+"\n"), 0o644))

	goenv := func(name string) string {
		out, err := execx.Command(ctx, gobin, "env", name).Output()
		require.NoError(t, err)
		return strings.TrimSpace(string(out))
	}
	cache := filepath.Join(goenv("GOMODCACHE"), "cache", "download")
	// The importer's module graph loads the go.mod of every version an
	// unpruned dependency (rdmamap, go 1.13) requires: netlink v1.1.0's,
	// which building erdmakit itself never reads, so a fresh machine's cache
	// lacks it. `go list -m all` here fetches every go.mod of our own graph
	// (a superset) through this machine's usual proxy, before the importer
	// is cut off from it.
	prime := execx.Command(ctx, gobin, "list", "-m", "all")
	prime.Dir = dir
	prime.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := prime.CombinedOutput(); err != nil {
		need(t, "go list -m all (reading our module graph into the module cache): %v\n%s", err, out)
	}
	importer := filepath.Join(tmp, "importer")
	require.NoError(t, os.MkdirAll(importer, 0o755))
	// As `go mod init` writes it today. Without the go line the module
	// graph is unpruned (go 1.16) and needs the go.mod of every old version
	// our dependencies once required (rdmamap's netlink v1.1.0), which a
	// fresh machine's module cache does not hold.
	require.NoError(t, os.WriteFile(filepath.Join(importer, "go.mod"), []byte("module example.com/importer\n\ngo 1.26.0\n"), 0o644))
	env := append(os.Environ(),
		"GOPROXY=file://"+filepath.Join(tmp, "proxy")+",file://"+cache,
		"GOMODCACHE="+filepath.Join(tmp, "modcache"),
		"GOFLAGS=-modcacherw -mod=mod",
		"GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local",
	)
	run := func(args ...string) string {
		t.Helper()
		cmd := execx.Command(ctx, gobin, args...)
		cmd.Dir, cmd.Env = importer, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	return &importerModule{gobin: gobin, dir: importer, tmp: tmp, version: version, env: env, run: run}
}

// TestGoGetFromProxy is a new user's first step: a fresh module outside
// the repository `go get`s erdmakit through a module proxy (a file:// one
// holding this tree's zip; every other module comes from this machine's
// module cache, so nothing is downloaded) and builds a program importing
// the library packages.
func TestGoGetFromProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a fresh module: not in -short")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	imp := newImporter(t, ctx)
	require.NoError(t, os.WriteFile(filepath.Join(imp.dir, "main.go"), []byte(importerMain), 0o644))
	gobin, importer, env, tmp, version, run := imp.gobin, imp.dir, imp.env, imp.tmp, imp.version, imp.run
	run("get", modulePath+"@"+version)
	run("build", "-o", filepath.Join(tmp, "importer.bin"), ".")
	// The fixture as the fetched module holds it (read-only module cache).
	var modDir bytes.Buffer
	cmd := execx.Command(ctx, gobin, "list", "-m", "-f", "{{.Dir}}", modulePath)
	cmd.Dir, cmd.Env, cmd.Stdout = importer, env, &modDir
	require.NoError(t, cmd.Run())
	archive := filepath.Join(strings.TrimSpace(modDir.String()), "testdata", "hosts", "ebmgn8is-healthy.tar.gz")
	out, err := execx.Command(ctx, filepath.Join(tmp, "importer.bin"), archive).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "devices: 2, perftest parse of garbage fails: true\n", string(out))
}

// importerMain is a user's program: read a recorded host (an archive from
// the fetched module's own testdata) and parse a perftest log.
const importerMain = `package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/perf/perftest"
)

func main() {
	h, closer, err := erdma.OpenHost(context.Background(), os.Args[1])
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	defer closer.Close()
	inv, err := erdma.ReadInventory(context.Background(), h, erdma.InventoryOptions{})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	_, err = perftest.Parse(context.Background(), strings.NewReader("not perftest output"))
	fmt.Printf("devices: %d, perftest parse of garbage fails: %v\n", len(inv.Devices), err != nil)
}
`

// codeFloor is the Go our own code needs: os.Root's ReadFile, Readlink,
// MkdirAll and Symlink came in 1.25.
const codeFloor = "1.25"

// TestGoDirectiveIsTheFloor: go.mod's go line is the lowest the code and
// the dependencies allow (a higher one forces every importer's toolchain up
// for nothing), and go.mod pins no toolchain.
func TestGoDirectiveIsTheFloor(t *testing.T) {
	root, err := fixture.ModuleRoot()
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	mf, err := modfile.Parse("go.mod", b, nil)
	require.NoError(t, err)
	require.NotNil(t, mf.Go)
	assert.Nil(t, mf.Toolchain, "go.mod pins a toolchain")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := execx.Command(ctx, "go", "list", "-m", "-f", "{{.Path}} {{.GoVersion}}", "all")
	cmd.Dir = root
	// The module proxy may be asked for go.mod files of the graph that no
	// build needed yet (a fresh module cache in CI): GOPROXY=off failed there.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		need(t, "go list -m all: %v: %s", err, stderr.String())
	}
	floor, by := codeFloor, "our code"
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, v, _ := strings.Cut(l, " ")
		if v == "" || path == modulePath {
			continue
		}
		if goversion.Compare("go"+v, "go"+floor) > 0 {
			floor, by = v, path
		}
	}
	assert.Equal(t, 0, goversion.Compare("go"+mf.Go.Version, "go"+floor),
		"go.mod says go %s; the floor is %s (set by %s)", mf.Go.Version, floor, by)
}

// portable are the packages a laptop must be able to use to read a
// cluster's logs and chart its results: no cgo, any GOOS, nothing heavy
// (the parsers of nccl-tests, NCCL_DEBUG and launcher logs, perftest logs
// and nvidia-smi topo -m, the charts, and the build's version).
var portable = []string{"./connect", "./gid", "./health", "./nccl/ncclog", "./nvml/smitopo", "./perf/perftest", "./plot", "./version"}

// nocgo are packages that wrap a C library and must still build without
// cgo on any OS (stubs returning a clear error, as ibverbs has), so that an
// importer's CGO_ENABLED=0 build does not fail in them.
var nocgo = []string{"./nvml", "./ibverbs"}

// offline are the domain packages a laptop uses on results and recordings
// (library-3 item 4): they build with CGO_ENABLED=0 on linux, darwin and
// windows (report's tests compile there too: vetted). Their live reads (netlink,
// getrlimit, mpirun) answer erdma.ErrNotLinux, or fail as a missing tool
// does, outside Linux; the rendering of JSON results into a page
// (report) and the replay of recorded hosts work everywhere.
var offline = []string{"./report", "./setup/setupresult", "./erdma", "./doctor", "./doctor/verbsprobe", "./setup", "./eri", "./perf", "./fleet", "./nccl", "./monitor"}

// vetted are the packages whose tests must compile on every GOOS: the
// portable ones, nvml, and report.
var vetted = append([]string{"./nvml", "./report"}, portable...)

// heavy are the modules a portable package must not pull in.
var heavy = []string{"gonum.org/", "github.com/vishvananda/netlink", "github.com/Mellanox/rdmamap", "github.com/NVIDIA/go-nvml"}

// domain are the module's packages that drive the host (ibverbs' cgo,
// netlink, NVML) or take their results: a portable package imports none.
var domain = []string{"doctor", "erdma", "eri", "fleet", "ibverbs", "monitor", "nccl", "nvml", "perf", "report", "setup"}

// printless are the domain packages that return data and print nothing:
// their text tables are package report's, and whether a terminal gets
// colour is the CLI's decision. report is among them: it is handed the
// colour, it does not look for a terminal.
var printless = []string{"./doctor", "./nccl", "./perf", "./perf/perftest", "./fleet", "./health", "./erdma", "./eri", "./report"}

// TestDomainPackagesPrintNothing: no domain package links the CLI's
// terminal code (internal/render, and golang.org/x/term through it).
func TestDomainPackagesPrintNothing(t *testing.T) {
	root, err := fixture.ModuleRoot()
	require.NoError(t, err)
	list := execx.Command(t.Context(), "go", append([]string{"list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}"}, printless...)...)
	list.Dir = root
	out, err := list.Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, len(printless))
	for _, l := range lines {
		deps := strings.Fields(l)
		for _, d := range deps[1:] {
			assert.NotEqual(t, modulePath+"/internal/render", d, "%s imports %s", deps[0], d)
			assert.False(t, strings.HasPrefix(d, "golang.org/x/term"), "%s imports %s", deps[0], d)
		}
	}
}

// TestParsersArePortable builds the portable packages (and nocgo's and
// offline's) with CGO_ENABLED=0 for linux, darwin and windows, runs go vet
// (which compiles their tests) on vetted's, and checks the portable
// packages' dependencies.
func TestParsersArePortable(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-builds: not in -short")
	}
	root, err := fixture.ModuleRoot()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	for _, goos := range []string{"linux", "darwin", "windows"} {
		env := append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH=amd64")
		pkgs := append(append(append([]string{}, portable...), nocgo...), offline...)
		build := execx.Command(ctx, "go", append([]string{"build"}, pkgs...)...)
		build.Dir, build.Env = root, env
		out, err := build.CombinedOutput()
		require.NoError(t, err, "CGO_ENABLED=0 GOOS=%s go build %v:\n%s", goos, pkgs, out)
		vet := execx.Command(ctx, "go", append([]string{"vet"}, vetted...)...)
		vet.Dir, vet.Env = root, env
		out, err = vet.CombinedOutput()
		require.NoError(t, err, "CGO_ENABLED=0 GOOS=%s go vet %v:\n%s", goos, vetted, out)
		list := execx.Command(ctx, "go", append([]string{"list", "-deps"}, portable...)...)
		list.Dir, list.Env = root, env
		deps, err := list.Output()
		require.NoError(t, err)
		for _, d := range strings.Fields(string(deps)) {
			for _, h := range heavy {
				assert.False(t, strings.HasPrefix(d, h), "GOOS=%s: %v pulls %s", goos, portable, d)
			}
			for _, p := range domain {
				assert.NotEqual(t, modulePath+"/"+p, d, "GOOS=%s: %v pull a domain package", goos, portable)
			}
		}
	}
	// No cgo either where cgo is on: outside the standard library (whose
	// net and os/user use it on Linux), no dependency has C files.
	list := execx.Command(ctx, "go", append([]string{"list", "-deps", "-f", "{{if and .CgoFiles (not .Standard)}}{{.ImportPath}}{{end}}"}, portable...)...)
	list.Dir, list.Env = root, append(os.Environ(), "CGO_ENABLED=1")
	out, err := list.Output()
	require.NoError(t, err)
	assert.Empty(t, strings.Fields(string(out)), "%v use cgo", portable)
}
