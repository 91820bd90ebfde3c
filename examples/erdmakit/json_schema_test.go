package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A documented JSON schema is a fenced block in docs/*.md:
//
//	```json-keys
//	# erdmakit doctor --json --root testdata/hosts/no-peermem.tar.gz
//	.status
//	.findings[]
//	.findings[].id
//	.host.profile?          optional: absent when unknown
//	.counters{}             an object with free-form keys (not descended)
//	```
//
// The first line is the command the test runs (paths relative to the
// repository root; more "# erdmakit ..." lines run more commands against the
// same keys). Every other line is a key path: ".a.b" for an object's key,
// "[]" for a list (a list must be [] when empty, never null or absent),
// a trailing "?" for a key that may be absent. The test fails on a key the
// output has and the block does not name, on a required key the output
// lacks, and on a list that is null.
type schemaBlock struct {
	file     string
	commands [][]string
	keys     map[string]bool // path -> required
	maps     map[string]bool
}

func readSchemaBlocks(t *testing.T) []schemaBlock {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	var out []schemaBlock
	for _, f := range files {
		if filepath.Base(f) == "README.md" { // describes the format, with an example block
			continue
		}
		fh, err := os.Open(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(fh)
		var cur *schemaBlock
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			switch {
			case cur == nil && line == "```json-keys":
				cur = &schemaBlock{file: filepath.Base(f), keys: map[string]bool{}, maps: map[string]bool{}}
			case cur != nil && line == "```":
				out = append(out, *cur)
				cur = nil
			case cur != nil && strings.HasPrefix(line, "# erdmakit "):
				cur.commands = append(cur.commands, strings.Fields(strings.TrimPrefix(line, "# erdmakit ")))
			case cur != nil && strings.HasPrefix(line, "."):
				p := strings.Fields(line)[0]
				req := !strings.HasSuffix(p, "?")
				p = strings.TrimSuffix(p, "?")
				if m, ok := strings.CutSuffix(p, "{}"); ok {
					cur.maps[m] = true
				}
				cur.keys[p] = req
			}
		}
		fh.Close()
		require.NoError(t, sc.Err())
	}
	return out
}

// jsonPaths lists the key paths of v as schemaBlock spells them; nulls
// lists the paths whose value is null.
func jsonPaths(v any, path string, maps map[string]bool, paths map[string]bool, nulls map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		if maps[path] {
			paths[path+"{}"] = true
			return
		}
		for k, e := range x {
			p := path + "." + k
			paths[p] = true
			jsonPaths(e, p, maps, paths, nulls)
		}
	case []any:
		paths[path+"[]"] = true
		for _, e := range x {
			jsonPaths(e, path+"[]", maps, paths, nulls)
		}
	case nil:
		nulls[path] = true
	}
}

// TestJSONMatchesDocs runs every documented --json command and compares its
// keys with the documented schema.
func TestJSONMatchesDocs(t *testing.T) {
	blocks := readSchemaBlocks(t)
	require.NotEmpty(t, blocks)
	for _, b := range blocks {
		require.NotEmpty(t, b.commands, "%s: a json-keys block without a '# erdmakit ...' line", b.file)
		for _, args := range b.commands {
			name := b.file + ": erdmakit " + strings.Join(args, " ")
			t.Run(name, func(t *testing.T) {
				args = append([]string(nil), args...)
				for i, a := range args {
					if rel := filepath.Join("..", "..", a); !strings.HasPrefix(a, "-") && strings.Contains(a, "/") {
						if _, err := os.Stat(rel); err == nil {
							args[i] = rel
						}
					}
				}
				code, out, stderr := runCLI(args...)
				require.Less(t, code, ExitUnknown, "stderr: %s", stderr)
				paths, nulls := map[string]bool{}, map[string]bool{}
				dec := json.NewDecoder(strings.NewReader(out))
				for dec.More() { // stat --json prints one object per interval
					var v any
					require.NoError(t, dec.Decode(&v), out)
					jsonPaths(v, "", b.maps, paths, nulls)
				}
				var extra, missing, nullLists []string
				for p := range paths {
					if _, ok := b.keys[p]; !ok {
						extra = append(extra, p)
					}
				}
				for p, req := range b.keys {
					if req && !paths[p] && !nulls[p] {
						missing = append(missing, p)
					}
					if l, ok := strings.CutSuffix(p, "[]"); ok && nulls[l] {
						nullLists = append(nullLists, l)
					}
				}
				sort.Strings(extra)
				sort.Strings(missing)
				sort.Strings(nullLists)
				if len(extra)+len(missing)+len(nullLists) > 0 {
					t.Errorf("output keys differ from %s:\nundocumented: %v\ndocumented, absent: %v\nnull lists: %v", b.file, extra, missing, nullLists)
				}
			})
		}
	}
}
