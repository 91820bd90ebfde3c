package hostfs

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Escape is one hostile link layout, for tests: symlinks that, followed the
// way the kernel follows them, leave the root and land on a canary file
// outside it. The TextInside ones look inside the root when their text is
// checked (the attack of issue 12), so only confined reads stop them.
type Escape struct {
	Name string
	// Dirs are directories to create, Links symlinks (name -> target),
	// both relative to the root.
	Dirs  []string
	Links map[string]string
	// Read is the name that, followed by the kernel, is a canary.
	Read string
	// TextInside: every link's target, joined to the link's directory as
	// text, stays inside the root.
	TextInside bool
}

// CanaryName is the file PlantCanaries puts at every level above a root.
const CanaryName = "canary"

// PlantCanaries makes base/x1/.../x<levels>, with a CanaryName file holding
// content in base and in each level, and returns the deepest directory:
// make roots in it, and a link climbing up to levels+1 above such a root
// lands on a canary.
func PlantCanaries(base string, levels int, content []byte) (string, error) {
	dir := base
	for i := 0; i <= levels; i++ {
		if i > 0 {
			dir = filepath.Join(dir, "x"+strconv.Itoa(i))
			if err := os.Mkdir(dir, 0o755); err != nil {
				return "", err
			}
		}
		if err := os.WriteFile(filepath.Join(dir, CanaryName), content, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// EscapeLayouts returns layouts whose Read is a link at at (relative to the
// root, e.g. a sysfs attribute) reaching a canary planted by PlantCanaries
// (at least 13 levels) or the absolute canary file abs: absolute links,
// plain "..", the chains of directory links at several depths
// (c/n/.../n/up -> ../..), an "a -> ." loop, a link to an outside
// directory read through, and a multi-hop chain.
func EscapeLayouts(at, abs string) []Escape {
	toRoot := strings.Repeat("../", depth(path.Dir(at)))
	dots := func(n int) string { return strings.Repeat("../", n) }
	out := []Escape{
		{Name: "absolute link to the file", Links: map[string]string{at: abs}, Read: at},
		{Name: "dotdot 1 level", Links: map[string]string{at: toRoot + dots(1) + CanaryName}, Read: at},
		{Name: "dotdot 3 levels", Links: map[string]string{at: toRoot + dots(3) + CanaryName}, Read: at},
		{Name: "multi-hop to absolute", Links: map[string]string{at: toRoot + "h1", "h1": "h2", "h2": abs}, Read: at},
	}
	// The chain: directories c, c/n, ..., d deep; up at the bottom
	// climbs d levels (to the root: inside, as text and for real). A link
	// through up followed by d+1 dotdots is back at the root as text, but
	// d+1 levels above it for the kernel.
	for _, d := range []int{1, 3, 12} {
		chain := chainDirs("c"+strconv.Itoa(d), d)
		bottom := chain[len(chain)-1]
		out = append(out, Escape{
			Name:       fmt.Sprintf("directory chain depth %d", d),
			Dirs:       chain,
			Links:      map[string]string{bottom + "/up": dots(d), at: toRoot + bottom + "/up/" + dots(d+1) + CanaryName},
			Read:       at,
			TextInside: true,
		})
	}
	// loop/a -> ".": loop/a/a/a/a/a is loop for the kernel, six components
	// for the text.
	out = append(out, Escape{
		Name:       "dot loop",
		Dirs:       []string{"loop"},
		Links:      map[string]string{"loop/a": ".", at: toRoot + "loop/" + strings.Repeat("a/", 5) + dots(6) + CanaryName},
		Read:       at,
		TextInside: true,
	})
	// outdir is a directory link to three levels above the root; the
	// canary is read through it.
	out = append(out, Escape{
		Name:       "directory link read through",
		Dirs:       chainDirs("d2", 2),
		Links:      map[string]string{"d2/n/up": dots(2), "outdir": "d2/n/up/" + dots(3), at: toRoot + "outdir/" + CanaryName},
		Read:       at,
		TextInside: true,
	})
	return out
}

// chainDirs is prefix, prefix/n, prefix/n/n, ... (d directories).
func chainDirs(prefix string, d int) []string {
	out := make([]string, d)
	p := prefix
	for i := range out {
		out[i] = p
		p += "/n"
	}
	return out
}

func depth(dir string) int {
	if dir == "." || dir == "" {
		return 0
	}
	return strings.Count(dir, "/") + 1
}

// Materialize creates e under root, replacing whatever is at its link
// names (a fixture's file becomes the hostile link).
func (e Escape) Materialize(root string) error {
	for _, d := range e.Dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	for name, target := range e.Links {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.RemoveAll(p); err != nil {
			return err
		}
		if err := os.Symlink(target, p); err != nil {
			return err
		}
	}
	return nil
}
