package lab

import (
	"bufio"
	"fmt"
	"go/build/constraint"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Suite is one package with lab tests: test files with the build tag `lab`
// that declare TestLab... functions.
type Suite struct {
	Dir    string   // relative to the module root, slash-separated: "ibverbs", "internal/lab"
	Single bool     // has TestLab... functions that are not TestLab2Host...
	Pair   bool     // has TestLab2Host... functions
	Bench  bool     // has BenchmarkLab... functions
	Tests  []string // the TestLab... function names, in file order
}

// Matching returns the suite's one-VM and two-VM test names that a -run
// pattern selects at the top level (its first slash-separated element, as
// `go test` does); an empty pattern selects all.
func (s Suite) Matching(pattern string) (single, pair []string, err error) {
	var re *regexp.Regexp
	if pattern != "" {
		first := strings.SplitN(pattern, "/", 2)[0]
		if re, err = regexp.Compile(first); err != nil {
			return nil, nil, fmt.Errorf("-run %q: %w", pattern, err)
		}
	}
	for _, t := range s.Tests {
		if re != nil && !re.MatchString(t) {
			continue
		}
		if strings.HasPrefix(t, "TestLab2Host") {
			pair = append(pair, t)
		} else {
			single = append(single, t)
		}
	}
	return single, pair, nil
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
		tests, bench, err := scanTestFile(path)
		if err != nil {
			return err
		}
		if len(tests) == 0 && !bench {
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
		for _, t := range tests {
			if strings.HasPrefix(t, "TestLab2Host") {
				s.Pair = true
			} else {
				s.Single = true
			}
		}
		s.Tests = append(s.Tests, tests...)
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

// scanTestFile reports, for a Go test file built only with the lab tag,
// its TestLab... function names and whether it declares BenchmarkLab...
func scanTestFile(path string) (tests []string, bench bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
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
					return nil, false, nil
				}
				continue
			}
			if constraint.IsGoBuild(line) {
				expr, perr := constraint.Parse(line)
				if perr != nil {
					return nil, false, fmt.Errorf("%s: %w", path, perr)
				}
				tagged = needsLab(expr)
			}
			continue
		}
		switch {
		case strings.HasPrefix(line, "func TestLab"):
			name := strings.TrimPrefix(line, "func ")
			if i := strings.IndexByte(name, '('); i > 0 {
				tests = append(tests, name[:i])
			}
		case strings.HasPrefix(line, "func BenchmarkLab"):
			bench = true
		}
	}
	return tests, bench, sc.Err()
}

// needsLab reports whether expr holds with the lab tag and not without it.
func needsLab(expr constraint.Expr) bool {
	with := expr.Eval(func(tag string) bool {
		return tag == "lab" || tag == "linux" || tag == "amd64" || tag == "cgo" || tag == "unix"
	})
	without := expr.Eval(func(tag string) bool { return tag == "linux" || tag == "amd64" || tag == "cgo" || tag == "unix" })
	return with && !without
}
