// Command release is the part of `make release` that is not a shell one-liner:
// man pages from erdmakit's cobra command tree, the third-party license file
// from the binary's own module list, the Debian copyright and changelog files,
// reproducible tar.gz and gzip members, and the glibc floor check.
//
// It lives in its own module (tools/release) so that cobra/doc, go-md2man and
// nfpm never enter the module graph of a program importing erdmakit.
//
//	release man -version V -epoch S DIR         one roff page per command (erdmakit.1, erdmakit-doctor.1, ...), gzipped
//	release licenses -o FILE BINARY             every linked module's license files, read from the module cache
//	release debian -version V -epoch S DIR      copyright and changelog.Debian.gz for the .deb
//	release tar -epoch S -prefix P -o F.tar.gz DIR
//	release gzip -epoch S FILE...               FILE -> FILE.gz, reproducibly (no name, fixed mtime)
//	release glibc -max 2.17 BINARY              fails if a symbol needs a newer glibc
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: release man|licenses|debian|tar|gzip|glibc ...")
		os.Exit(2)
	}
	ctx := context.Background()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "man":
		err = cmdMan(ctx, args)
	case "licenses":
		err = cmdLicenses(ctx, args)
	case "debian":
		err = cmdDebian(args)
	case "tar":
		err = cmdTar(args)
	case "gzip":
		err = cmdGzip(args)
	case "glibc":
		err = cmdGlibc(args)
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func epochTime(s int64) time.Time { return time.Unix(s, 0).UTC() }

// ---- man pages ----

// manGen is added to erdmakit's package main through -overlay: the command
// tree is built by package main's newRootCmd, which no other package can
// import, and cobra/doc must not become a requirement of erdmakit's module.
// The program it makes is run once and thrown away; the released binary is
// built without it.
const manGen = `package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra/doc"
)

func init() {
	if len(os.Args) != 5 || os.Args[1] != "__release_man" {
		return
	}
	epoch, err := strconv.ParseInt(os.Args[4], 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "epoch:", err)
		os.Exit(1)
	}
	date := time.Unix(epoch, 0).UTC()
	root := newRootCmd(&globals{stdout: os.Stdout, stderr: os.Stderr})
	root.DisableAutoGenTag = true
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	h := &doc.GenManHeader{Title: "ERDMAKIT", Section: "1", Date: &date,
		Source: "erdmakit " + os.Args[3], Manual: "erdmakit manual"}
	if err := doc.GenManTree(root, h, os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "man:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
`

func cmdMan(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("man", flag.ContinueOnError)
	ver := fl.String("version", "", "version for the pages' footer")
	epoch := fl.Int64("epoch", 0, "SOURCE_DATE_EPOCH: the pages' date")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 1 || *ver == "" || *epoch == 0 {
		return errors.New("man: -version V -epoch S DIR")
	}
	out, err := filepath.Abs(fl.Arg(0))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	mod, err := goOut(ctx, "", "list", "-m", "-f", "{{.Dir}}", "github.com/erdmakit/erdmakit")
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "erdmakit-man")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	gen := filepath.Join(tmp, "gen.go")
	if err := os.WriteFile(gen, []byte(manGen), 0o644); err != nil {
		return err
	}
	ov, err := json.Marshal(map[string]map[string]string{"Replace": {
		filepath.Join(strings.TrimSpace(mod), "examples", "erdmakit", "zz_release_man.go"): gen}})
	if err != nil {
		return err
	}
	ovPath := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ovPath, ov, 0o644); err != nil {
		return err
	}
	bin := filepath.Join(tmp, "erdmakit-man")
	if _, err := goOut(ctx, "", "build", "-overlay", ovPath, "-o", bin, "github.com/erdmakit/erdmakit/examples/erdmakit"); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, "__release_man", out, *ver, strconv.FormatInt(*epoch, 10))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("generating man pages: %w", err)
	}
	pages, err := filepath.Glob(filepath.Join(out, "*.1"))
	if err != nil {
		return err
	}
	if len(pages) == 0 {
		return errors.New("man: no pages generated")
	}
	for _, p := range pages {
		if err := gzipFile(p, *epoch); err != nil {
			return err
		}
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "man: %d pages in %s\n", len(pages), out)
	return nil
}

func goOut(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// ---- licenses ----

// licenseName matches the files a module's license is in, at the module's root.
var licenseName = regexp.MustCompile(`(?i)^(licen[cs]e|copying|notice|patents)([.-].*)?$`)

// Module is one module linked into the binary and its license files.
type Module struct {
	Path, Version string
	Files         []string // names in the module's root
	Dir           string
}

// linkedModules lists the modules bin was built from (what `go version -m`
// prints), the replacement where there is one, without the main module.
func linkedModules(bin string) ([]Module, error) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("reading the build info of %s: %w", bin, err)
	}
	var mods []Module
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		if m.Version == "" {
			return nil, fmt.Errorf("%s is replaced by a directory (%s): its license cannot be read from the module cache", d.Path, m.Path)
		}
		mods = append(mods, Module{Path: m.Path, Version: m.Version})
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Path < mods[j].Path })
	return mods, nil
}

func cmdLicenses(ctx context.Context, args []string) error {
	fl := flag.NewFlagSet("licenses", flag.ContinueOnError)
	out := fl.String("o", "", "output file")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 1 || *out == "" {
		return errors.New("licenses: -o FILE BINARY")
	}
	mods, err := linkedModules(fl.Arg(0))
	if err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "Third-party licenses of erdmakit's binary\n\n"+
		"The erdmakit binary is statically linked with the Go standard library and the Go modules below\n"+
		"(the list is the binary's own build information, `go version -m erdmakit`). Each module's\n"+
		"license files follow, as the module ships them.\n\n")
	r, err := goOut(ctx, "", "env", "GOROOT")
	if err != nil {
		return err
	}
	goroot := strings.TrimSpace(r)
	fmt.Fprintf(&b, "  %-60s %s\n", "Go standard library and runtime (go.dev)", "LICENSE")
	for i := range mods {
		m := &mods[i]
		js, err := goOut(ctx, "", "mod", "download", "-json", m.Path+"@"+m.Version)
		if err != nil {
			return err
		}
		var dl struct{ Dir, Error string }
		if err := json.Unmarshal([]byte(js), &dl); err != nil {
			return fmt.Errorf("go mod download %s@%s: %w", m.Path, m.Version, err)
		}
		if dl.Error != "" || dl.Dir == "" {
			return fmt.Errorf("go mod download %s@%s: %s", m.Path, m.Version, dl.Error)
		}
		m.Dir = dl.Dir
		ents, err := os.ReadDir(dl.Dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if e.Type().IsRegular() && licenseName.MatchString(e.Name()) {
				m.Files = append(m.Files, e.Name())
			}
		}
		if len(m.Files) == 0 {
			return fmt.Errorf("%s@%s has no license file in %s: it cannot be shipped until one is found", m.Path, m.Version, dl.Dir)
		}
		fmt.Fprintf(&b, "  %-60s %s\n", m.Path+" "+m.Version, strings.Join(m.Files, ", "))
	}
	writeFile := func(title, path string) error {
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "\n%s\n%s\n\n%s", strings.Repeat("=", 78), title, text)
		if !bytes.HasSuffix(text, []byte("\n")) {
			b.WriteByte('\n')
		}
		return nil
	}
	if err := writeFile("Go standard library and runtime: LICENSE", filepath.Join(goroot, "LICENSE")); err != nil {
		return err
	}
	for _, m := range mods {
		for _, f := range m.Files {
			if err := writeFile(m.Path+" "+m.Version+": "+f, filepath.Join(m.Dir, f)); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(*out, b.Bytes(), 0o644)
}

// ---- Debian's copyright and changelog ----

const maintainer = "erdmakit maintainers <erdmakit@users.noreply.github.com>"

func cmdDebian(args []string) error {
	fl := flag.NewFlagSet("debian", flag.ContinueOnError)
	ver := fl.String("version", "", "package version (as the .deb names it)")
	rev := fl.String("revision", "", "git commit")
	epoch := fl.Int64("epoch", 0, "SOURCE_DATE_EPOCH")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 1 || *ver == "" || *epoch == 0 {
		return errors.New("debian: -version V -revision R -epoch S DIR")
	}
	dir := fl.Arg(0)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	copyright := `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: erdmakit
Source: https://github.com/erdmakit/erdmakit
Comment: The binary is statically linked with Go modules; their licenses are
 in /usr/share/doc/erdmakit/THIRD_PARTY_LICENSES, collected from the binary's
 build information.

Files: *
Copyright: %d erdmakit authors
License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License");
 you may not use this file except in compliance with the License.
 You may obtain a copy of the License at
 .
 http://www.apache.org/licenses/LICENSE-2.0
 .
 Unless required by applicable law or agreed to in writing, software
 distributed under the License is distributed on an "AS IS" BASIS,
 WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 See the License for the specific language governing permissions and
 limitations under the License.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0
 can be found in "/usr/share/common-licenses/Apache-2.0".
`
	copyright = fmt.Sprintf(copyright, epochTime(*epoch).Year())
	if err := os.WriteFile(filepath.Join(dir, "copyright"), []byte(copyright), 0o644); err != nil {
		return err
	}
	what := "Release " + *ver
	if *rev != "" {
		what += ",\n    built from commit " + *rev
	}
	changelog := fmt.Sprintf("erdmakit (%s) unstable; urgency=medium\n\n  * %s.\n\n -- %s  %s\n",
		*ver, what, maintainer, epochTime(*epoch).Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	p := filepath.Join(dir, "changelog.Debian")
	if err := os.WriteFile(p, []byte(changelog), 0o644); err != nil {
		return err
	}
	if err := gzipFile(p, *epoch); err != nil {
		return err
	}
	return os.Remove(p)
}

// ---- reproducible archives ----

// gzipFile writes path.gz: best compression, no name, mtime epoch (gzip -9n
// with a fixed time), so the bytes depend on the content only.
func gzipFile(path string, epoch int64) error {
	in, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := gzipTo(&b, in, epoch); err != nil {
		return err
	}
	return os.WriteFile(path+".gz", b.Bytes(), 0o644)
}

func gzipTo(w io.Writer, data []byte, epoch int64) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	zw.ModTime = epochTime(epoch)
	zw.OS = 3 // Unix, whatever the build host
	if _, err := zw.Write(data); err != nil {
		return err
	}
	return zw.Close()
}

func cmdGzip(args []string) error {
	fl := flag.NewFlagSet("gzip", flag.ContinueOnError)
	epoch := fl.Int64("epoch", 0, "SOURCE_DATE_EPOCH")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *epoch == 0 {
		return errors.New("gzip: -epoch S FILE (one or more)")
	}
	for _, p := range fl.Args() {
		if err := gzipFile(p, *epoch); err != nil {
			return err
		}
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	return nil
}

// writeTar packs dir under prefix: members sorted by name, directories
// first in their place, mtime epoch, owner root, modes 0755 or 0644 (as the
// file's owner-exec bit), so the archive depends on the content only.
func writeTar(w io.Writer, dir, prefix string, epoch int64) error {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mt := epochTime(epoch)
	hdr := func(name string, typ byte, mode, size int64) *tar.Header {
		return &tar.Header{Name: name, Typeflag: typ, Mode: mode, Size: size, ModTime: mt,
			Uname: "root", Gname: "root", Format: tar.FormatPAX}
	}
	if err := tw.WriteHeader(hdr(prefix+"/", tar.TypeDir, 0o755, 0)); err != nil {
		return err
	}
	for _, p := range paths {
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := prefix + "/" + filepath.ToSlash(rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			if err := tw.WriteHeader(hdr(name+"/", tar.TypeDir, 0o755, 0)); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			mode := int64(0o644)
			if fi.Mode()&0o100 != 0 {
				mode = 0o755
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := tw.WriteHeader(hdr(name, tar.TypeReg, mode, int64(len(data)))); err != nil {
				return err
			}
			if _, err := tw.Write(data); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a file or directory (%s)", p, fi.Mode())
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gzipTo(w, buf.Bytes(), epoch)
}

func cmdTar(args []string) error {
	fl := flag.NewFlagSet("tar", flag.ContinueOnError)
	epoch := fl.Int64("epoch", 0, "SOURCE_DATE_EPOCH")
	prefix := fl.String("prefix", "", "top directory in the archive")
	out := fl.String("o", "", "output .tar.gz")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 1 || *epoch == 0 || *prefix == "" || *out == "" {
		return errors.New("tar: -epoch S -prefix P -o F.tar.gz DIR")
	}
	var b bytes.Buffer
	if err := writeTar(&b, fl.Arg(0), *prefix, *epoch); err != nil {
		return err
	}
	return os.WriteFile(*out, b.Bytes(), 0o644)
}

// ---- glibc floor ----

// GlibcNeed is the newest glibc symbol version a binary needs, and the
// symbols that need it.
type GlibcNeed struct {
	Version [2]int
	Symbols []string
}

func (g GlibcNeed) String() string {
	return fmt.Sprintf("GLIBC_%d.%d (%s)", g.Version[0], g.Version[1], strings.Join(g.Symbols, ", "))
}

var glibcVersion = regexp.MustCompile(`^GLIBC_(\d+)\.(\d+)(?:\.\d+)?$`)

// glibcFloor reads the dynamic symbols bin imports and returns the newest
// GLIBC_x.y version among them.
func glibcFloor(bin string) (GlibcNeed, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return GlibcNeed{}, err
	}
	defer f.Close()
	syms, err := f.ImportedSymbols()
	if err != nil {
		return GlibcNeed{}, fmt.Errorf("%s: %w", bin, err)
	}
	var need GlibcNeed
	for _, s := range syms {
		m := glibcVersion.FindStringSubmatch(s.Version)
		if m == nil {
			continue
		}
		maj, _ := strconv.Atoi(m[1])
		min, _ := strconv.Atoi(m[2])
		v := [2]int{maj, min}
		name := s.Name + "@" + s.Version
		switch c := cmpVer(v, need.Version); {
		case c > 0:
			need = GlibcNeed{Version: v, Symbols: []string{name}}
		case c == 0:
			need.Symbols = append(need.Symbols, name)
		}
	}
	if need.Version == [2]int{} {
		return need, fmt.Errorf("%s imports no versioned glibc symbol (not a dynamically linked glibc binary?)", bin)
	}
	slices.Sort(need.Symbols)
	return need, nil
}

func cmpVer(a, b [2]int) int {
	if a[0] != b[0] {
		return a[0] - b[0]
	}
	return a[1] - b[1]
}

func parseVer(s string) ([2]int, error) {
	maj, min, ok := strings.Cut(strings.TrimPrefix(s, "GLIBC_"), ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if !ok || err1 != nil || err2 != nil {
		return [2]int{}, fmt.Errorf("glibc version %q: want MAJOR.MINOR, e.g. 2.17", s)
	}
	return [2]int{a, b}, nil
}

func cmdGlibc(args []string) error {
	fl := flag.NewFlagSet("glibc", flag.ContinueOnError)
	maxV := fl.String("max", "2.17", "the newest glibc the binary may need")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 1 {
		return errors.New("glibc: -max 2.17 BINARY")
	}
	limit, err := parseVer(*maxV)
	if err != nil {
		return err
	}
	need, err := glibcFloor(fl.Arg(0))
	if err != nil {
		return err
	}
	if cmpVer(need.Version, limit) > 0 {
		return fmt.Errorf("%s needs %s, newer than the floor GLIBC_%s: a dependency or the sysroot raised it", fl.Arg(0), need, *maxV)
	}
	fmt.Printf("glibc floor: %s needs %s (limit GLIBC_%s)\n", fl.Arg(0), need, *maxV)
	return nil
}
