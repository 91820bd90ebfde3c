//go:build lab

package lab

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
)

// These tests prove the lab itself: they run inside the guest (labrun).

func TestLabDeviceActive(t *testing.T) {
	labtest.Require(t)
	dev := labtest.Device()
	require.NotEmpty(t, dev, "ERDMAKIT_LAB_DEVICE")
	port := filepath.Join("/sys/class/infiniband", dev, "ports/1")
	state, err := os.ReadFile(filepath.Join(port, "state"))
	require.NoError(t, err)
	assert.Equal(t, "4: ACTIVE", strings.TrimSpace(string(state)))
	ll, err := os.ReadFile(filepath.Join(port, "link_layer"))
	require.NoError(t, err)
	assert.Equal(t, "Ethernet", strings.TrimSpace(string(ll)))
	parent, err := os.ReadFile(filepath.Join("/sys/class/infiniband", dev, "parent"))
	require.NoError(t, err)
	assert.Equal(t, labtest.Netdev(), strings.TrimSpace(string(parent)))

	idx := labtest.GIDIndex()
	require.GreaterOrEqual(t, idx, 0, "ERDMAKIT_LAB_GID_INDEX")
	gid, err := os.ReadFile(filepath.Join(port, "gids", strconv.Itoa(idx)))
	require.NoError(t, err)
	ip := strings.Split(labtest.IP(), ".")
	require.Len(t, ip, 4)
	var b [4]int
	for i := range ip {
		b[i], _ = strconv.Atoi(ip[i])
	}
	assert.Equal(t, fmt.Sprintf("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", b[0], b[1], b[2], b[3]), strings.TrimSpace(string(gid)))
	typ, err := os.ReadFile(filepath.Join(port, "gid_attrs/types", strconv.Itoa(idx)))
	require.NoError(t, err)
	assert.Equal(t, "RoCE v2", strings.TrimSpace(string(typ)))
	for _, d := range []string{"/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"} {
		_, err := os.Stat(d)
		assert.NoError(t, err, d)
	}
}

func TestLabIbvDevinfo(t *testing.T) {
	labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := execx.Output(ctx, "ibv_devinfo", "-v", "-d", labtest.Device())
	require.NoError(t, err)
	s := string(out)
	assert.Contains(t, s, "hca_id:\t"+labtest.Device())
	assert.Contains(t, s, "PORT_ACTIVE")
	assert.Contains(t, s, "link_layer:\t\tEthernet")
	assert.Contains(t, s, "::ffff:"+labtest.IP()+", RoCE v2", "the IPv4 RoCE v2 GID")
}

func TestLabRdmaResShow(t *testing.T) {
	labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := labtest.ResourcesOf(ctx, labtest.Device())
	require.NoError(t, err)
	for _, k := range []string{"pd", "cq", "qp", "mr", "ctx"} {
		assert.Contains(t, res, k)
	}
	// A perftest run creates and destroys a context, PD, CQ, QP and MR: the
	// counts come back to where they were (what leak checks rely on).
	before := res
	srv, cli := perftestPair(t, 18611, "-x", strconv.Itoa(labtest.GIDIndex()), "-n", "50")
	require.NoError(t, srv.err, srv.out)
	require.NoError(t, cli.err, cli.out)
	after, err := labtest.ResourcesOf(ctx, labtest.Device())
	require.NoError(t, err)
	assert.Equal(t, before, after, "rdma res show counts after a perftest run")
}

func TestLabIbWriteBwOOB(t *testing.T) {
	labtest.Require(t)
	srv, cli := perftestPair(t, 18601, "-x", strconv.Itoa(labtest.GIDIndex()))
	require.NoError(t, srv.err, srv.out)
	require.NoError(t, cli.err, cli.out)
	checkBW(t, cli.out)
	assert.Contains(t, cli.out, "GID index       : "+strconv.Itoa(labtest.GIDIndex()))
}

func TestLabIbWriteBwRDMACM(t *testing.T) {
	labtest.Require(t)
	srv, cli := perftestPair(t, 18602, "-R")
	require.NoError(t, srv.err, srv.out)
	require.NoError(t, cli.err, cli.out)
	checkBW(t, cli.out)
	assert.Contains(t, cli.out, "rdma_cm QPs\t : ON")
}

// TestLab2HostIbWriteBw runs on both VMs: a is the ib_write_bw server, b the
// client; a tells b over the lab network when its server listens.
func TestLab2HostIbWriteBw(t *testing.T) {
	labtest.Require2Host(t)
	const port, ctrl = 18603, 18604
	args := []string{"-d", labtest.Device(), "-x", strconv.Itoa(labtest.GIDIndex()), "-p", strconv.Itoa(port), "-n", "200", "-F", "--report_gbits"}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if labtest.IsServer() {
		srv := start(ctx, "ib_write_bw", args...)
		require.NoError(t, labtest.WaitTCPListen(ctx, port), "ib_write_bw server never listened")
		c := labtest.Listen(t, ctrl)
		_, err := c.Write([]byte("go\n"))
		require.NoError(t, err)
		r := <-srv
		require.NoError(t, r.err, r.out)
		checkBW(t, r.out)
		return
	}
	c := labtest.Dial(t, ctrl)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err, "waiting for the server's go")
	require.Equal(t, "go\n", line)
	r := <-start(ctx, "ib_write_bw", append(args, labtest.Peer())...)
	require.NoError(t, r.err, r.out)
	checkBW(t, r.out)
}

type result struct {
	out string
	err error
}

// start runs a program under ctx and delivers its combined output.
func start(ctx context.Context, name string, args ...string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		cmd := execx.Command(ctx, name, args...)
		b, err := cmd.CombinedOutput()
		ch <- result{string(b), err}
	}()
	return ch
}

// perftestPair runs an ib_write_bw server and client on the lab device in
// this VM, the client against this VM's IP.
func perftestPair(t *testing.T, port int, extra ...string) (srv, cli result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"-d", labtest.Device(), "-p", strconv.Itoa(port), "-n", "200", "-F", "--report_gbits"}, extra...)
	s := start(ctx, "ib_write_bw", args...)
	wait := labtest.WaitTCPListen
	for _, a := range extra {
		if a == "-R" {
			wait = labtest.WaitCMListen // rdma_cm: the server listens on a cm_id, not a TCP socket
		}
	}
	if err := wait(ctx, port); err != nil {
		cancel()
		r := <-s
		t.Fatalf("ib_write_bw server never listened: %v\n%s", err, r.out)
	}
	cli = <-start(ctx, "ib_write_bw", append(args, labtest.IP())...)
	srv = <-s
	return srv, cli
}

// checkBW finds perftest's result row (#bytes #iterations BW peak BW
// average ...) and checks the average is positive.
func checkBW(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.Contains(l, "#bytes") || i+1 >= len(lines) {
			continue
		}
		f := strings.Fields(lines[i+1])
		require.GreaterOrEqual(t, len(f), 4, "result row %q", lines[i+1])
		avg, err := strconv.ParseFloat(f[3], 64)
		require.NoError(t, err, "BW average in %q", lines[i+1])
		assert.Greater(t, avg, 0.0, "BW average")
		t.Logf("ib_write_bw: %s bytes x %s: BW average %.3f Gb/s", f[0], f[1], avg)
		return
	}
	t.Fatalf("no result row in ib_write_bw output:\n%s", out)
}
