package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/perf"
)

func TestBwLoopbackEmulated(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "sweep.svg")
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"ok", []string{"-n", "50"}, ExitOK},
		{"below expectation warns", []string{"-n", "50", "--expect-gbps", "1000"}, ExitWarn},
		{"sweep with plot, two devices", []string{"-n", "20", "--sizes", "4K,64K", "-d", "e0", "-d", "e1", "--plot", svg}, ExitOK},
		{"bad size is a usage error", []string{"-s", "lots"}, ExitUnknown},
		{"size above 1G is a usage error", []string{"-s", "2G"}, ExitUnknown},
		{"bad method is a usage error", []string{"--conn", "carrier-pigeon"}, ExitUnknown},
		{"-R against --conn oob is a usage error", []string{"-R", "--conn", "oob"}, ExitUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bw", "loopback", "--json", "--emulate-gbps", "2", "-q", "2"}, tc.args...)
			code, out, stderr := runCLI(args...)
			require.Equal(t, tc.code, code, "stderr: %s", stderr)
			if tc.code == ExitUnknown {
				assert.Contains(t, stderr, "erdmakit:")
				return
			}
			var rep perf.Report
			require.NoError(t, json.Unmarshal([]byte(out), &rep))
			assert.NotEmpty(t, rep.Results)
			for _, r := range rep.Results {
				assert.Equal(t, 2, r.QPs)
				require.NotNil(t, r.TX)
				assert.True(t, r.TX.OK)
			}
		})
	}
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.Contains(t, string(b), "<svg")
}

func TestBwServeAndRunEmulated(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &globals{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	root := newRootCmd(g)
	root.SetArgs([]string{"bw", "serve", "--emulate-gbps", "2", "-d", "srv0", "--bind", "127.0.0.1", "-p", strconv.Itoa(port)})
	served := make(chan error, 1)
	go func() { served <- root.ExecuteContext(ctx) }()
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 5*time.Second, 20*time.Millisecond)
	code, out, stderr := runCLI("bw", "run", "127.0.0.1", "-p", strconv.Itoa(port), "--emulate-gbps", "2", "-d", "cli0", "-n", "50")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "cli0    srv0")
	assert.Contains(t, out, "status: ok")
	cancel()
	require.NoError(t, <-served)
	// Nothing listens any more: the client says so and fails.
	code, _, stderr = runCLI("bw", "run", "127.0.0.1:"+strconv.Itoa(port), "--emulate-gbps", "2", "-n", "5", "--step-timeout", "1s")
	assert.Equal(t, ExitFail, code)
	assert.Contains(t, stderr, "connecting to the bw server")
}
