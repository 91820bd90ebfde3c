package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A small run end to end: the log is built, the three tools run and agree
// on what the file holds.
func TestRunSmall(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-size", "256K", "-runs", "1", "-samples", "../../testdata", "-json"}, &out))
	var v struct {
		Bytes   int64    `json:"bytes"`
		Results []Result `json:"results"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &v))
	assert.GreaterOrEqual(t, v.Bytes, int64(256<<10))
	require.Len(t, v.Results, 4)
	for _, r := range v.Results {
		assert.Positive(t, r.MBps, r.Tool)
		assert.NotEmpty(t, r.Output, r.Tool)
	}
	assert.Contains(t, v.Results[2].Output, "NCCL lines")
}

func TestRunBadSamples(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-size", "1K", "-samples", t.TempDir()}, &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no sample logs")
}
