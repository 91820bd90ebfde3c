package fleet

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteMeshTableMatrixAndCulprits(t *testing.T) {
	v := 12.5
	rep := &MeshReport{Hosts: []string{"a", "b", "c"}, Rounds: 3, MedianGbps: 12.5, ExpectGbps: 20,
		Results:   make([]PairResult, 3),
		Matrix:    [][]*float64{{nil, &v, nil}, {&v, nil, &v}, {nil, &v, nil}},
		DeadHosts: []Culprit{{Hosts: []string{"c"}, Reason: "never answered", Evidence: []string{"pair a-c failed", "rank 2 silent"}}},
		Errors:    []string{"rank 2: timeout"}}
	var b strings.Builder
	require.NoError(t, WriteMeshTable(&b, rep))
	out := b.String()
	assert.True(t, strings.HasPrefix(out, "3 hosts, 3 rounds, 3 pair tests; median 12.50 Gbit/s, expected 20.00\n"), out)
	assert.Contains(t, out, "\nGBPS  a     b     c\na     -     12.5  fail\n")
	assert.Contains(t, out, "dead host  c      never answered  pair a-c failed; rank 2 silent\n")
	assert.True(t, strings.HasSuffix(out, "rendezvous: rank 2: timeout\n"), out)

	b.Reset()
	rep.DeadHosts, rep.Errors = nil, nil
	require.NoError(t, WriteMeshTable(&b, rep))
	assert.True(t, strings.HasSuffix(b.String(), "\nno outliers: every pair within the expectation and the fleet median\n"))
}
