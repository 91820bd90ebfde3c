package perf

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenVerbsLinksNamesWhatFailed(t *testing.T) {
	_, _, err := OpenVerbsLinks(t.Context(), nil, VerbsOptions{Root: t.TempDir()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no RDMA devices under")
	_, _, err = OpenVerbsLinks(t.Context(), []string{"nosuch0"}, VerbsOptions{Root: t.TempDir()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nosuch0")
}

type countCloser struct {
	n   int
	err error
}

func (c *countCloser) Close() error { c.n++; return c.err }

func TestCloseAllClosesEachOnceAndJoinsErrors(t *testing.T) {
	boom := errors.New("boom")
	a, b := &countCloser{}, &countCloser{err: boom}
	all := &closeAll{cs: []io.Closer{a, b}}
	assert.ErrorIs(t, all.Close(), boom)
	assert.ErrorIs(t, all.Close(), boom, "the second Close says the same")
	assert.Equal(t, 1, a.n)
	assert.Equal(t, 1, b.n)
}
