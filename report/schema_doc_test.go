package report

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The bw mesh JSON schema in docs/bw.md names every key of a real mesh
// report (the fixture the code makes), and the report has every key the
// schema requires (report-2 item 10); null only where the schema says so:
// the matrix's cells (its diagonal).
func TestMeshSchemaDocumented(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "docs", "bw.md"))
	require.NoError(t, err)
	defer f.Close()
	var file string
	keys := map[string]bool{} // path -> required
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "```json-keys-of "):
			in, file = true, strings.TrimPrefix(line, "```json-keys-of ")
		case in && line == "```":
			in = false
		case in && strings.HasPrefix(line, "."):
			p := strings.Fields(line)[0]
			keys[strings.TrimSuffix(p, "?")] = !strings.HasSuffix(p, "?")
		}
	}
	require.NoError(t, sc.Err())
	require.Equal(t, "report/testdata/bw-mesh-4.json", file)
	b, err := os.ReadFile(filepath.Join("..", file))
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	paths, nulls := map[string]bool{}, map[string]bool{}
	var walk func(v any, p string)
	walk = func(v any, p string) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				paths[p+"."+k] = true
				walk(e, p+"."+k)
			}
		case []any:
			paths[p+"[]"] = true
			for _, e := range x {
				walk(e, p+"[]")
			}
		case nil:
			nulls[p] = true
		}
	}
	walk(v, "")
	var undocumented, absent []string
	for p := range paths {
		if _, ok := keys[p]; !ok {
			undocumented = append(undocumented, p)
		}
	}
	// A required key is absent only where its parent is there (a
	// required key of an optional list that is absent is not).
	parent := func(p string) string {
		if q, ok := strings.CutSuffix(p, "[]"); ok {
			return q
		}
		return p[:strings.LastIndex(p, ".")]
	}
	for p, req := range keys {
		if req && !paths[p] && !nulls[p] && (parent(p) == "" || paths[parent(p)]) {
			absent = append(absent, p)
		}
	}
	sort.Strings(undocumented)
	sort.Strings(absent)
	assert.Empty(t, undocumented, "keys of the mesh report docs/bw.md does not name")
	assert.Empty(t, absent, "keys docs/bw.md requires that the mesh report lacks")
	assert.Equal(t, map[string]bool{".matrix[][]": true}, nulls, "null only in the matrix")
	m := v.(map[string]any)["matrix"].([]any)
	for i, row := range m {
		assert.Nil(t, row.([]any)[i], "the diagonal is null")
	}
}
