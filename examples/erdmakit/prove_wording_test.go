package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/nccl"
	"github.com/erdmakit/erdmakit/report"
)

// fleet prove's progress says what is true (report-2 item 9): with
// --no-nccl no "nccl: over N host(s)" line (the stage never ran), and the
// NCCL rows come under their columns' header.
func TestReportWordingOfFleetProveProgress(t *testing.T) {
	root, err := filepath.Abs(hostDir("ebmgn8is-healthy"))
	require.NoError(t, err)
	code, _, stderr := runCLI("fleet", "prove", "--rank", "0", "--ranks", "1", "--rendezvous", fmt.Sprintf("127.0.0.1:%d", fixture.FreePort(t)),
		"--root", root, "--emulate-gbps", "10", "-D", "200ms", "--no-nccl", "--json", "--join-timeout", "10s")
	assert.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "fleet prove: nccl: --no-nccl")
	assert.NotContains(t, stderr, "nccl: over")

	var lines []string
	rows := ncclProgressRows(func(format string, a ...any) { lines = append(lines, fmt.Sprintf(format, a...)) })
	rows(nccl.Row{Size: 4 << 20})
	rows(nccl.Row{Size: 8 << 20})
	require.Len(t, lines, 3)
	assert.Equal(t, "nccl: "+report.NCCLLiveHeader, lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "nccl: "), lines[1])
	// The columns line up: the size ends where the header's SIZE does.
	assert.Equal(t, strings.Index(lines[0], "SIZE")+len("SIZE"), strings.Index(lines[1], "4M")+len("4M"), "%q\n%q", lines[0], lines[1])
}
