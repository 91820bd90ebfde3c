package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/internal/slurmtest"
)

// runMPIRunJSONEnv is runMPIRunJSON with mpirun's environment given (nil:
// this process's); it returns mpirun's stderr (every rank's).
func runMPIRunJSONEnv(t *testing.T, mpirun string, env, args []string, v any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mpirun, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = env
	var stderr bytesBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !(errorsAs(err, &ee) && ee.ExitCode() == ExitFail) {
		t.Fatalf("mpirun: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	require.NoError(t, json.Unmarshal(out, v), "stdout:\n%s\nstderr:\n%s", out, stderr.String())
	return stderr.String()
}

// forgePeermem is what the attacker of issue 27 item 4 did to a captured
// report: a made-up gdr-peermem failure on a healthy host.
func forgePeermem(p []byte) []byte {
	return bytes.Replace(p, []byte(`"id":"gdr-peermem","severity":"ok"`), []byte(`"id":"gdr-peermem","severity":"fail"`), 1)
}

// editFrames rewrites the report frames (type 3) of a member's byte
// stream with edit; other frames pass verbatim. It knows only the frame
// header (internal/frame), as an attacker on the wire would.
func editFrames(r io.Reader, w io.Writer, edit func([]byte) []byte) (edited int, err error) {
	for {
		var h [12]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return edited, err
		}
		p := make([]byte, binary.BigEndian.Uint32(h[8:]))
		if _, err := io.ReadFull(r, p); err != nil {
			return edited, err
		}
		if h[6] == 3 {
			if q := edit(p); !bytes.Equal(q, p) {
				p = q
				edited++
				binary.BigEndian.PutUint32(h[8:], uint32(len(p)))
			}
		}
		if _, err := w.Write(append(h[:], p...)); err != nil {
			return edited, err
		}
	}
}

// wireProxy stands between rank 1 and rank 0 (loopback): it records what
// the member sends and edits its report frames on the way.
type wireProxy struct {
	l        net.Listener
	mu       sync.Mutex
	captured bytes.Buffer // the member's bytes as it sent them
	edited   int
}

func startWireProxy(t *testing.T, target string, edit func([]byte) []byte) *wireProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &wireProxy{l: l}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.relay(c, target, edit)
		}
	}()
	return p
}

func (p *wireProxy) relay(c net.Conn, target string, edit func([]byte) []byte) {
	defer c.Close()
	var up net.Conn
	for deadline := time.Now().Add(60 * time.Second); ; {
		var err error
		if up, err = net.Dial("tcp", target); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer up.Close()
	go func() { _, _ = io.Copy(c, up); c.Close() }()
	rec := &lockedWriter{mu: &p.mu, w: &p.captured}
	n, _ := editFrames(io.TeeReader(c, rec), up, edit)
	p.mu.Lock()
	p.edited += n
	p.mu.Unlock()
}

func (p *wireProxy) result() ([]byte, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Clone(p.captured.Bytes()), p.edited
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestFleetSessionRefusesForgedAndReplayedReports: issue 27 items 4 and 22,
// under the real mpirun with ERDMAKIT_FLEET_SECRET passed by -x.
//
// A proxy between rank 1 and rank 0 edits rank 1's report in flight (a
// made-up gdr-peermem failure): the old rank 0 printed the forgery, since
// only the hello was authenticated; now the report fails its tag and the
// host is an error. Then the bytes rank 1 sent, the hello verbatim and the
// report edited, are replayed to a new job's rank 0 with the same secret:
// the old rank 0 welcomed them as rank 1; now the hello answers another
// challenge and is refused, and rank 1 is missing.
func TestFleetSessionRefusesForgedAndReplayedReports(t *testing.T) {
	mpirun := requireMPIRun(t)
	bin := buildCLI(t)
	env := append(os.Environ(), fleet.SecretEnv+"=fleet-test-secret-b7d1")
	root, err := filepath.Abs(hostDir("ebmgn8is-healthy"))
	require.NoError(t, err)
	common := []string{"fleet", "doctor", "--root", root, "--join-timeout", "60s", "--timeout", "60s"}

	rdv0 := fmt.Sprintf("127.0.0.1:%d", fixture.FreePort(t))
	proxy := startWireProxy(t, rdv0, forgePeermem)
	args := append(mpirunArgs(), "-x", fleet.SecretEnv, "-np", "1", bin)
	args = append(args, append(common, "--rendezvous", rdv0, "--json")...)
	args = append(args, ":", "-np", "1", bin)
	args = append(args, append(common, "--rendezvous", proxy.l.Addr().String())...)
	var rep fleet.FleetReport
	stderr := runMPIRunJSONEnv(t, mpirun, env, args, &rep)
	captured, edited := proxy.result()
	require.Equal(t, 1, edited, "the proxy did not find the report to forge")
	assert.True(t, rep.Authenticated, "run with %s", fleet.SecretEnv)
	assert.NotContains(t, stderr, fleet.SecretEnv+" is not set")
	require.Len(t, rep.Hosts, 2, "%+v", rep)
	assert.NotContains(t, rep.Hosts[1].Problems, "gdr-peermem", "an edited report was accepted: %+v", rep.Hosts[1])
	assert.Equal(t, fleet.Errored, rep.Hosts[1].Status, "%+v", rep.Hosts[1])
	assert.Contains(t, rep.Hosts[1].Error, "not authenticated")

	// The replay: a new job (same secret), its rank 0 expecting 2 ranks.
	var forged bytes.Buffer
	n, _ := editFrames(bytes.NewReader(captured), &forged, forgePeermem)
	require.Equal(t, 1, n)
	rdv1 := fmt.Sprintf("127.0.0.1:%d", fixture.FreePort(t))
	replayed := make(chan error, 1)
	go func() {
		var c net.Conn
		var err error
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if c, err = net.Dial("tcp", rdv1); err == nil {
				break
			}
		}
		if err != nil {
			replayed <- err
			return
		}
		defer c.Close()
		_, err = c.Write(forged.Bytes())
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, _ = io.Copy(io.Discard, c)
		replayed <- err
	}()
	args = append(mpirunArgs(), "-x", fleet.SecretEnv, "-np", "1", bin, "fleet", "doctor", "--ranks", "2",
		"--rendezvous", rdv1, "--root", root, "--json", "--join-timeout", "8s")
	var rep2 fleet.FleetReport
	runMPIRunJSONEnv(t, mpirun, env, args, &rep2)
	require.NoError(t, <-replayed)
	require.Len(t, rep2.Hosts, 2, "%+v", rep2)
	assert.Equal(t, fleet.Missing, rep2.Hosts[1].Status, "a replayed session was welcomed: %+v", rep2.Hosts[1])
	assert.NotContains(t, rep2.Hosts[1].Problems, "gdr-peermem")
	assert.Contains(t, strings.Join(rep2.Errors, "\n"), "not authenticated", "%+v", rep2)
}

// TestFleetDoctorSaysItIsUnauthenticated: issue 27 item 22. Without
// ERDMAKIT_FLEET_SECRET the key comes from launcher values any local user
// can read, so the report says the ranks were not authenticated and rank 0
// warns; with it, under the real srun (which exports the environment), the
// ranks are authenticated.
func TestFleetDoctorSaysItIsUnauthenticated(t *testing.T) {
	mpirun := requireMPIRun(t)
	bin := buildCLI(t)
	root, err := filepath.Abs(hostDir("ebmgn8is-healthy"))
	require.NoError(t, err)
	rdv := fmt.Sprintf("127.0.0.1:%d", fixture.FreePort(t))
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, fleet.SecretEnv+"=") {
			env = append(env, e)
		}
	}
	args := append(mpirunArgs(), "-np", "2", bin, "fleet", "doctor", "--rendezvous", rdv, "--root", root, "--json", "--join-timeout", "60s")
	var rep fleet.FleetReport
	stderr := runMPIRunJSONEnv(t, mpirun, env, args, &rep)
	require.Len(t, rep.Hosts, 2)
	assert.Equal(t, "ok", string(rep.Hosts[1].Status), "%+v", rep)
	assert.False(t, rep.Authenticated)
	assert.Equal(t, 1, strings.Count(stderr, fleet.SecretEnv+" is not set: the ranks are not authenticated"), "rank 0 warns, once:\n%s", stderr)

	t.Run("srun", func(t *testing.T) {
		slurmtest.Start(t)
		t.Setenv(fleet.SecretEnv, "srun-test-secret-31c9")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		rdv := fmt.Sprintf("127.0.0.1:%d", fixture.FreePort(t))
		cmd := exec.CommandContext(ctx, "srun", "-n", "2", "--overcommit", "--mpi=none", bin, "fleet", "doctor", "--rendezvous", rdv, "--root", root, "--json", "--join-timeout", "60s")
		var stderr bytesBuffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, stderr.String())
		var rep fleet.FleetReport
		require.NoError(t, json.Unmarshal(out, &rep), "stdout:\n%s\nstderr:\n%s", out, stderr.String())
		require.Len(t, rep.Hosts, 2)
		assert.Equal(t, "ok", string(rep.Hosts[1].Status), "%+v", rep)
		assert.True(t, rep.Authenticated)
		assert.NotContains(t, stderr.String(), "is not set")
	})
}

// TestFleetSecretStaysOffTheCommandLine: issue 27 item 22, the launch path
// across hosts. mpirun starts rank 1 through a remote orted (here a fake ssh
// that logs the command it is asked to run and runs it locally): the orted's
// command line, which any user of that host can read in /proc, carries the
// launcher values the old key was derived from (ess_base_jobid,
// orte_hnp_uri), and not ERDMAKIT_FLEET_SECRET, which `-x` passes in the
// launch message; rank 1 has it and the ranks are authenticated.
func TestFleetSecretStaysOffTheCommandLine(t *testing.T) {
	mpirun := requireMPIRun(t)
	bin := buildCLI(t)
	dir := t.TempDir()
	argvLog := filepath.Join(dir, "argv.log")
	agent := filepath.Join(dir, "fakessh")
	require.NoError(t, os.WriteFile(agent, []byte(`#!/bin/sh
printf '%s\n' "$*" >> '`+argvLog+`'
while [ $# -gt 1 ]; do case "$1" in -*) shift;; *) shift; break;; esac; done
exec sh -c "$*"
`), 0o755))
	const secret = "fleet-secret-never-on-argv-5e0a"
	env := append(os.Environ(), fleet.SecretEnv+"="+secret)
	root, err := filepath.Abs(hostDir("ebmgn8is-healthy"))
	require.NoError(t, err)
	rdv := fmt.Sprintf("127.0.0.1:%d", fixture.FreePort(t))
	args := append(mpirunArgs(), "-mca", "plm_rsh_agent", agent, "-H", "localhost,remotehost", "-npernode", "1",
		"-x", fleet.SecretEnv, "-np", "2", bin, "fleet", "doctor", "--rendezvous", rdv, "--root", root, "--json", "--join-timeout", "60s")
	var rep fleet.FleetReport
	runMPIRunJSONEnv(t, mpirun, env, args, &rep)
	argv, err := os.ReadFile(argvLog)
	require.NoError(t, err, "rank 1 was not started through the remote agent")
	assert.Contains(t, string(argv), "orted")
	assert.Contains(t, string(argv), "ess_base_jobid", "the launcher values are public")
	assert.NotContains(t, string(argv), secret, "the secret is on a command line")
	require.Len(t, rep.Hosts, 2)
	assert.Equal(t, "ok", string(rep.Hosts[1].Status), "%+v", rep)
	assert.True(t, rep.Authenticated)
}
