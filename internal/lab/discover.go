package lab

import (
	"bufio"
	"fmt"
	"go/build/constraint"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Suite is one package with lab tests: test files with the build tag `lab`
// that declare TestLab... functions.
type Suite struct {
	Dir    string // relative to the module root, slash-separated: "ibverbs", "internal/lab"
	Single bool   // has TestLab... functions that are not TestLab2Host...
	Pair   bool   // has TestLab2Host... functions
	Bench  bool   // has BenchmarkLab... functions
}

// ID is the suite's name in markers, logs and binaries: "internal_lab".
func (s Suite) ID() string { return strings.ReplaceAll(s.Dir, "/", "_") }

// Discover walks the module at root for packages with lab tests. It skips
// testdata, vendor and hidden directories.
func Discover(root string) ([]Suite, error) {
	byDir := map[string]*Suite{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, "_test.go") {
			return nil
		}
		single, pair, bench, err := scanTestFile(path)
		if err != nil {
			return err
		}
		if !single && !pair && !bench {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		s := byDir[rel]
		if s == nil {
			s = &Suite{Dir: rel}
			byDir[rel] = s
		}
		s.Single = s.Single || single
		s.Pair = s.Pair || pair
		s.Bench = s.Bench || bench
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("discover lab tests under %s: %w", root, err)
	}
	var out []Suite
	for _, s := range byDir {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out, nil
}

// scanTestFile reports whether a Go test file is built only with the lab tag
// and which kinds of lab functions it declares.
func scanTestFile(path string) (single, pair, bench bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, false, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	tagged := false
	header := true
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if header {
			if strings.HasPrefix(line, "package ") {
				header = false
				if !tagged {
					return false, false, false, nil
				}
				continue
			}
			if constraint.IsGoBuild(line) {
				expr, perr := constraint.Parse(line)
				if perr != nil {
					return false, false, false, fmt.Errorf("%s: %w", path, perr)
				}
				tagged = needsLab(expr)
			}
			continue
		}
		switch {
		case strings.HasPrefix(line, "func TestLab2Host"):
			pair = true
		case strings.HasPrefix(line, "func TestLab"):
			single = true
		case strings.HasPrefix(line, "func BenchmarkLab"):
			bench = true
		}
	}
	return single, pair, bench, sc.Err()
}

// needsLab reports whether expr holds with the lab tag and not without it.
func needsLab(expr constraint.Expr) bool {
	with := expr.Eval(func(tag string) bool {
		return tag == "lab" || tag == "linux" || tag == "amd64" || tag == "cgo" || tag == "unix"
	})
	without := expr.Eval(func(tag string) bool { return tag == "linux" || tag == "amd64" || tag == "cgo" || tag == "unix" })
	return with && !without
}
