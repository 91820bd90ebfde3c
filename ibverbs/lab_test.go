//go:build lab && linux && cgo

package ibverbs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/gid"
	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
)

// Lab tests: real verbs on Soft-RoCE (rxe0) under qemu; see internal/lab.
// Ports 18400-18419 are this package's.

func openLab(t testing.TB) *Context {
	t.Helper()
	labtest.Require(t)
	c, err := Open(labtest.Device())
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	return c
}

// side is one end of an RC connection: its resources, closed in reverse
// order when the test ends.
type side struct {
	pd  *PD
	cq  *CQ
	buf *Buffer
	mr  *MR
	qp  *QP
}

func newSide(t testing.TB, c *Context, size int, cfg QPConfig) *side {
	t.Helper()
	s := &side{}
	var err error
	s.pd, err = c.AllocPD()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.pd.Close()) })
	s.cq, err = c.CreateCQ(512)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.cq.Close()) })
	s.buf, err = NewBuffer(size)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.buf.Close()) })
	s.mr, err = s.pd.RegMR(s.buf, AccessRemoteWrite|AccessRemoteRead)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.mr.Close()) })
	if cfg.MaxSendWR >= 0 {
		s.qp, err = s.pd.CreateQP(s.cq, cfg)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, s.qp.Close()) })
	}
	return s
}

func (s *side) endpoint(t testing.TB) Endpoint {
	t.Helper()
	ep, err := s.qp.Endpoint()
	require.NoError(t, err)
	return ep.WithMR(s.mr)
}

// waitWC polls cq until want completions arrived or d passed.
func waitWC(t testing.TB, cq *CQ, want int, d time.Duration) ([]WC, error) {
	t.Helper()
	wcs := make([]WC, 16)
	var got []WC
	end := time.Now().Add(d)
	for len(got) < want {
		n, err := cq.Poll(wcs)
		got = append(got, wcs[:n]...)
		if err != nil {
			return got, err
		}
		if n == 0 {
			if time.Now().After(end) {
				return got, fmt.Errorf("%d of %d completions after %v", len(got), want, d)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	return got, nil
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

func TestLabQueriesMatchDevinfo(t *testing.T) {
	c := openLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := execx.Output(ctx, "ibv_devinfo", "-v", "-d", c.Name())
	require.NoError(t, err)
	di, err := parseDevinfo(bytes.NewReader(out))
	require.NoError(t, err)
	require.Len(t, di.Devices, 1)
	want := di.Devices[0]
	require.Equal(t, c.Name(), want.Name)

	attr, err := c.QueryDevice()
	require.NoError(t, err)
	compared := 0
	num := func(scope string, attrs map[string]string, key string, got uint64) {
		t.Helper()
		v, ok := attrs[key]
		if !assert.True(t, ok, "%s: ibv_devinfo printed no %s", scope, key) {
			return
		}
		n, err := devinfoNumber(v)
		require.NoError(t, err, "%s %s=%q", scope, key, v)
		assert.Equal(t, n, got, "%s %s: ibv_devinfo %q", scope, key, v)
		compared++
	}
	str := func(scope string, attrs map[string]string, key, got string) {
		t.Helper()
		assert.Equal(t, attrs[key], got, "%s %s", scope, key)
		compared++
	}
	d := want.Attrs
	num("device", d, "transport", uint64(c.Transport()))
	str("device", d, "fw_ver", attr.FWVer)
	str("device", d, "node_guid", attr.NodeGUID.String())
	str("device", d, "sys_image_guid", attr.SysImageGUID.String())
	for key, got := range map[string]uint64{
		"vendor_id": uint64(attr.VendorID), "vendor_part_id": uint64(attr.VendorPartID), "hw_ver": uint64(attr.HWVer),
		"phys_port_cnt": uint64(attr.PhysPortCnt), "max_mr_size": attr.MaxMRSize, "page_size_cap": attr.PageSizeCap,
		"max_qp": uint64(attr.MaxQP), "max_qp_wr": uint64(attr.MaxQPWR), "device_cap_flags": uint64(attr.DeviceCapFlags),
		"max_sge": uint64(attr.MaxSGE), "max_sge_rd": uint64(attr.MaxSGERD), "max_cq": uint64(attr.MaxCQ),
		"max_cqe": uint64(attr.MaxCQE), "max_mr": uint64(attr.MaxMR), "max_pd": uint64(attr.MaxPD),
		"max_qp_rd_atom": uint64(attr.MaxQPRdAtom), "max_ee_rd_atom": uint64(attr.MaxEECRdAtom),
		"max_res_rd_atom": uint64(attr.MaxResRdAtom), "max_qp_init_rd_atom": uint64(attr.MaxQPInitRdAtom),
		"max_ee_init_rd_atom": uint64(attr.MaxEEInitRdAtom), "atomic_cap": uint64(attr.AtomicCap),
		"max_ee": uint64(attr.MaxEE), "max_rdd": uint64(attr.MaxRDD), "max_mw": uint64(attr.MaxMW),
		"max_raw_ipv6_qp": uint64(attr.MaxRawIPv6QP), "max_raw_ethy_qp": uint64(attr.MaxRawEthyQP),
		"max_mcast_grp": uint64(attr.MaxMcastGrp), "max_mcast_qp_attach": uint64(attr.MaxMcastQPAttach),
		"max_total_mcast_qp_attach": uint64(attr.MaxTotalMcastQPAttach), "max_ah": uint64(attr.MaxAH),
		"max_fmr": uint64(attr.MaxFMR), "max_srq": uint64(attr.MaxSRQ), "max_srq_wr": uint64(attr.MaxSRQWR),
		"max_srq_sge": uint64(attr.MaxSRQSGE), "max_pkeys": uint64(attr.MaxPKeys),
		"local_ca_ack_delay": uint64(attr.LocalCACKDelay),
	} {
		num("device", d, key, got)
	}

	require.Len(t, want.Ports, attr.PhysPortCnt)
	for _, wp := range want.Ports {
		pa, err := c.QueryPort(wp.Num)
		require.NoError(t, err)
		scope := fmt.Sprintf("port %d", wp.Num)
		p := wp.Attrs
		str(scope, p, "link_layer", pa.LinkLayer.String())
		for key, got := range map[string]uint64{
			"state": uint64(pa.State), "max_mtu": uint64(pa.MaxMTU), "active_mtu": uint64(pa.ActiveMTU),
			"sm_lid": uint64(pa.SMLID), "port_lid": uint64(pa.LID), "port_lmc": uint64(pa.LMC),
			"max_msg_sz": uint64(pa.MaxMsgSz), "port_cap_flags": uint64(pa.PortCapFlags),
			"max_vl_num": uint64(pa.MaxVLNum), "bad_pkey_cntr": uint64(pa.BadPKeyCntr),
			"qkey_viol_cntr": uint64(pa.QKeyViolCntr), "sm_sl": uint64(pa.SMSL), "pkey_tbl_len": uint64(pa.PKeyTblLen),
			"gid_tbl_len": uint64(pa.GIDTblLen), "subnet_timeout": uint64(pa.SubnetTimeout),
			"init_type_reply": uint64(pa.InitTypeReply), "active_width": uint64(pa.ActiveWidth),
			"active_speed": uint64(pa.ActiveSpeed), "phys_state": uint64(pa.PhysState),
		} {
			num(scope, p, key, got)
		}

		gids, err := c.GIDs(wp.Num)
		require.NoError(t, err)
		require.Len(t, gids, len(wp.GIDs), "populated GIDs: ours %v, ibv_devinfo %v", gids, wp.GIDs)
		for _, g := range gids {
			w, ok := wp.GIDs[g.Index]
			require.True(t, ok, "GID[%d] %s not in ibv_devinfo", g.Index, g.GID)
			assert.Equal(t, devinfoGIDText(t, w.GID), g.GID, "GID[%d] %q", g.Index, w.GID)
			if w.Type != "" {
				assert.Equal(t, w.Type, g.Type.String(), "GID[%d] type", g.Index)
			}
			one, err := c.QueryGID(wp.Num, g.Index)
			require.NoError(t, err)
			assert.Equal(t, g, one)
			// The sysfs fallback (libibverbs without ibv_query_gid_ex) agrees.
			se, ok, err := sysfsGIDEntry("/", c.Name(), wp.Num, g.Index)
			require.NoError(t, err)
			require.True(t, ok, "sysfs GID[%d] populated", g.Index)
			assert.Equal(t, g.GID, se.GID, "sysfs GID[%d]", g.Index)
			assert.Equal(t, g.Type, se.Type, "sysfs GID[%d] type", g.Index)
			compared += 4
		}
		if idx := labtest.GIDIndex(); idx >= 0 {
			e, err := c.QueryGID(wp.Num, idx)
			require.NoError(t, err)
			ip, ok := e.GID.IPv4()
			require.True(t, ok)
			assert.Equal(t, labtest.IP(), ip.String())
			assert.Equal(t, GIDTypeRoCEv2, e.Type)
			assert.Equal(t, idx, pickGID(gids), "automatic GID choice is the lab's RoCE v2 IPv4 entry")
		}
	}
	t.Logf("%d fields agree with ibv_devinfo -v", compared)
	assert.GreaterOrEqual(t, compared, 60)
}

// devinfoGIDText reads a GID as ibv_devinfo prints it: rdma-core 44 uses the
// IPv6 text form ("fe80::5054:ff:fe00:901", "::ffff:10.0.9.1"), older ones
// the sysfs form.
func devinfoGIDText(t testing.TB, s string) gid.GID {
	t.Helper()
	if g, err := gid.Parse(s); err == nil {
		return g
	}
	a, err := netip.ParseAddr(s)
	require.NoError(t, err, "GID %q", s)
	return gid.GID(a.As16())
}

// resCounts is `rdma res show` for one device: "pd" -> 1, "qp" -> 1, ...
func resCounts(t testing.TB, dev string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := execx.Output(ctx, "rdma", "res", "show")
	require.NoError(t, err)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || strings.TrimSuffix(f[1], ":") != dev {
			continue
		}
		m := map[string]int{}
		for i := 2; i+1 < len(f); i += 2 {
			n, err := strconv.Atoi(f[i+1])
			require.NoError(t, err, "rdma res show: %q", sc.Text())
			m[f[i]] = n
		}
		return m
	}
	t.Fatalf("rdma res show has no line for %s:\n%s", dev, out)
	return nil
}

func TestLabResourceCyclesLeaveNothing(t *testing.T) {
	labtest.Require(t)
	dev := labtest.Device()
	before := resCounts(t, dev)
	for i := 0; i < 5; i++ {
		c, err := Open(dev)
		require.NoError(t, err)
		pd, err := c.AllocPD()
		require.NoError(t, err)
		cq, err := c.CreateCQ(64)
		require.NoError(t, err)
		buf, err := NewBuffer(1 << 16)
		require.NoError(t, err)
		mr, err := pd.RegMR(buf, AccessRemoteWrite)
		require.NoError(t, err)
		qp, err := pd.CreateQP(cq, QPConfig{})
		require.NoError(t, err)

		if i == 0 {
			mid := resCounts(t, dev)
			for _, k := range []string{"pd", "cq", "qp", "mr", "ctx"} {
				assert.Equal(t, before[k]+1, mid[k], "%s while open", k)
			}
			// Parents refuse to close under live children, and free nothing.
			for name, cl := range map[string]func() error{"context": c.Close, "pd": pd.Close, "cq": cq.Close, "buffer": buf.Close} {
				err := cl()
				assert.ErrorIs(t, err, syscall.EBUSY, name)
				assert.Contains(t, err.Error(), "close them first", name)
			}
			assert.Equal(t, mid, resCounts(t, dev), "a refused Close frees nothing")
		}

		for _, cl := range []func() error{qp.Close, mr.Close, buf.Close, cq.Close, pd.Close, c.Close} {
			require.NoError(t, cl())
			require.NoError(t, cl(), "Close is idempotent")
		}
		_, err = qp.Endpoint()
		assert.ErrorIs(t, err, ErrClosed)
		assert.ErrorIs(t, qp.PostWrites(Writes{MR: mr, Count: 1}), ErrClosed)
		_, err = cq.Poll(make([]WC, 1))
		assert.ErrorIs(t, err, ErrClosed)
	}
	assert.Equal(t, before, resCounts(t, dev), "rdma res show before and after 5 open/close cycles")
}

func TestLabGIDTableMatchesEntryByEntry(t *testing.T) {
	c := openLab(t)
	pa, err := c.QueryPort(1)
	require.NoError(t, err)
	table, ok := c.gidTable(1, pa.GIDTblLen)
	require.True(t, ok, "the lab's rdma-core has ibv_query_gid_table")
	one, err := c.gidsOneByOne(1, pa.GIDTblLen)
	require.NoError(t, err)
	require.NotEmpty(t, one, "rxe0 has its netdev's GIDs")
	assert.Equal(t, one, table, "one ibv_query_gid_table, %d ibv_query_gid_ex", pa.GIDTblLen)
	gids, err := c.GIDs(1)
	require.NoError(t, err)
	assert.Equal(t, one, gids)

	none, ok := c.gidTable(2, pa.GIDTblLen)
	assert.True(t, ok)
	assert.Empty(t, none, "rxe0 has one port")
}

func TestLabUnknownDevice(t *testing.T) {
	labtest.Require(t)
	_, err := Open("rxe9")
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNoDevice)
	assert.Contains(t, err.Error(), labtest.Device(), "the error lists the devices present")
}

func TestLabWrongGIDIndex(t *testing.T) {
	c := openLab(t)
	s := newSide(t, c, 4096, QPConfig{MaxSendWR: -1})
	pa, err := c.QueryPort(1)
	require.NoError(t, err)
	tests := []struct {
		name  string
		index int
		want  string
	}{
		{"unpopulated entry", 500, "not populated"},
		{"beyond the table", pa.GIDTblLen + 5, "beyond"},
		{"negative", -3, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.pd.CreateQP(s.cq, QPConfig{GIDIndex: tt.index, GIDIndexSet: true})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), c.Name())
		})
	}
	_, err = c.QueryPort(7)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "port 7")
}

// connectLoopback connects two QPs of one device to each other out of band,
// passing the endpoints through their wire encoding.
func connectLoopback(t testing.TB, a, b *side) {
	t.Helper()
	wire := func(e Endpoint) Endpoint {
		raw, err := e.MarshalBinary()
		require.NoError(t, err)
		var back Endpoint
		require.NoError(t, back.UnmarshalBinary(raw))
		return back
	}
	ea, eb := wire(a.endpoint(t)), wire(b.endpoint(t))
	require.NoError(t, a.qp.Connect(eb))
	require.NoError(t, b.qp.Connect(ea))
}

func TestLabRCLoopbackWriteLandsExactBytes(t *testing.T) {
	c := openLab(t)
	const size = 1 << 16
	a := newSide(t, c, size, QPConfig{})
	b := newSide(t, c, size, QPConfig{})
	connectLoopback(t, a, b)
	assert.Equal(t, labtest.GIDIndex(), a.qp.GIDIndex(), "picked the lab's RoCE v2 IPv4 GID")

	tests := []struct {
		name          string
		offset, size  int
		count, signal int
		wrid          uint64
	}{
		{"one byte", 0, 1, 1, 1, 1000},
		{"one page at an offset", 4096, 4096, 1, 1, 1000},
		{"list of 16 signalled every 4", 100, 3000, 16, 4, 1000},
		// The shim keeps the list it built: the same arguments again only
		// renumber the work requests.
		{"the same list again", 100, 3000, 16, 4, 5000},
		{"whole buffer", 0, size, 1, 1, 1000},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clear(b.buf.Bytes())
			src := pattern(tt.size, byte(i+1))
			copy(a.buf.Bytes()[tt.offset:], src)
			w := Writes{MR: a.mr, Offset: uint64(tt.offset), RemoteAddr: b.mr.Addr() + uint64(tt.offset), RKey: b.mr.RKey(),
				Size: uint32(tt.size), Count: tt.count, SignalEvery: tt.signal, WRID: tt.wrid}
			require.NoError(t, a.qp.PostWrites(w))
			wcs, err := waitWC(t, a.cq, w.Signalled(), 20*time.Second)
			require.NoError(t, err)
			for _, wc := range wcs {
				assert.Equal(t, WCRDMAWrite, wc.Opcode)
				assert.Equal(t, a.qp.QPN(), wc.QPN)
			}
			assert.Equal(t, tt.wrid+uint64(tt.count-1), wcs[len(wcs)-1].WRID, "the last WR of a list is signalled")
			got := b.buf.Bytes()
			require.True(t, bytes.Equal(src, got[tt.offset:tt.offset+tt.size]), "written bytes differ")
			assert.Zero(t, bytes.Count(got[:tt.offset], []byte{1}))
			for j, v := range got[tt.offset+tt.size:] {
				if v != 0 {
					t.Fatalf("byte %d past the write is %d: the write spilled", tt.offset+tt.size+j, v)
				}
			}
		})
	}

	// SEND/RECV of a small message, as the perf engine's sync uses.
	require.NoError(t, b.qp.PostRecv(b.mr, 0, 64, 7))
	copy(a.buf.Bytes(), "hello")
	require.NoError(t, a.qp.PostSend(a.mr, 0, 5, 8))
	_, err := waitWC(t, a.cq, 1, 20*time.Second)
	require.NoError(t, err)
	wcs, err := waitWC(t, b.cq, 1, 20*time.Second)
	require.NoError(t, err)
	assert.Equal(t, WCRecv, wcs[0].Opcode)
	assert.Equal(t, uint32(5), wcs[0].ByteLen)
	assert.Equal(t, "hello", string(b.buf.Bytes()[:5]))
}

func TestLabPostWritesBadArguments(t *testing.T) {
	c := openLab(t)
	a := newSide(t, c, 4096, QPConfig{MaxSendWR: 8})
	assert.ErrorContains(t, a.qp.PostWrites(Writes{MR: a.mr, Count: 9, Size: 8}), "outside 1..8")
	assert.ErrorContains(t, a.qp.PostWrites(Writes{MR: a.mr, Count: 1, Offset: 4000, Size: 100}), "beyond the 4096-byte MR")
	assert.ErrorContains(t, a.qp.PostWrites(Writes{Count: 1}), "nil MR")
}

func TestLabPeerNeverAnswersRetryExceeded(t *testing.T) {
	c := openLab(t)
	a := newSide(t, c, 4096, QPConfig{Timeout: 8, RetryCnt: 1, RetryCntSet: true})
	self := a.endpoint(t)
	// A QPN nobody owns on our own address: the packets go out and nothing
	// ever acknowledges them.
	ghost := Endpoint{QPN: 0xabcde, PSN: 1, GID: self.GID, MTU: MTU1024}
	require.NoError(t, a.qp.Connect(ghost))
	start := time.Now()
	require.NoError(t, a.qp.PostWrites(Writes{MR: a.mr, RemoteAddr: 0x10000, RKey: 0x1234, Size: 64, Count: 1}))
	_, err := waitWC(t, a.cq, 1, 30*time.Second)
	elapsed := time.Since(start)
	require.Error(t, err)
	var we *WCError
	require.ErrorAs(t, err, &we, "want a failed completion, got %v", err)
	assert.Equal(t, WCRetryExcErr, we.Status)
	assert.Contains(t, err.Error(), "IBV_WC_RETRY_EXC_ERR")
	assert.Contains(t, err.Error(), "retry")
	assert.Less(t, elapsed, 20*time.Second)
	t.Logf("retry exceeded after %v: %v", elapsed, err)
}

func TestLabDataPathZeroAllocs(t *testing.T) {
	c := openLab(t)
	a := newSide(t, c, 4096, QPConfig{})
	b := newSide(t, c, 4096, QPConfig{})
	connectLoopback(t, a, b)
	w := Writes{MR: a.mr, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey(), Size: 64, Count: 16, SignalEvery: 16}
	wcs := make([]WC, 16)
	var failed error
	allocs := testing.AllocsPerRun(200, func() {
		if err := a.qp.PostWrites(w); err != nil {
			failed = err
			return
		}
		for got := 0; got < 1; {
			n, err := a.cq.Poll(wcs)
			if err != nil {
				failed = err
				return
			}
			got += n
		}
	})
	require.NoError(t, failed)
	assert.Zero(t, allocs, "allocations per post-list + poll")
}

// cmSide is one end of an rdma_cm connection, resources on its Context.
func cmSide(t testing.TB, conn *CMConn, size int) *side {
	t.Helper()
	s := newSide(t, conn.Context(), size, QPConfig{MaxSendWR: -1})
	qp, err := conn.CreateQP(s.pd, s.cq, QPConfig{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, qp.Close()) })
	s.qp = qp
	return s
}

func TestLabCMConnectAndWrite(t *testing.T) {
	labtest.Require(t)
	ctx := labtest.Deadline(t)
	addr := net.JoinHostPort(labtest.IP(), "18400")
	l, err := ListenCM(ctx, addr, CMConfig{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, l.Close()) }()
	const size = 8192
	want := pattern(size, 0x5a)

	type result struct {
		got []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		conn, err := l.Accept(ctx)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer conn.Close()
		var got []byte
		err = func() error {
			pd, err := conn.Context().AllocPD()
			if err != nil {
				return err
			}
			defer pd.Close()
			cq, err := conn.Context().CreateCQ(16)
			if err != nil {
				return err
			}
			defer cq.Close()
			buf, err := NewBuffer(size)
			if err != nil {
				return err
			}
			defer buf.Close()
			mr, err := pd.RegMR(buf, AccessRemoteWrite)
			if err != nil {
				return err
			}
			defer mr.Close()
			qp, err := conn.CreateQP(pd, cq, QPConfig{})
			if err != nil {
				return err
			}
			defer qp.Close()
			if err := qp.PostRecv(mr, 0, 16, 1); err != nil {
				return err
			}
			ep, err := qp.Endpoint()
			if err != nil {
				return err
			}
			if err := conn.Accept(ctx, ep.WithMR(mr)); err != nil {
				return err
			}
			// The client's SEND arrives after its WRITE (RC ordering).
			wcs := make([]WC, 1)
			for {
				n, err := cq.Poll(wcs)
				if err != nil {
					return err
				}
				if n == 1 {
					break
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				time.Sleep(time.Millisecond)
			}
			got = append([]byte(nil), buf.Bytes()...)
			return nil
		}()
		done <- result{got: got, err: err}
	}()

	conn, err := DialCM(ctx, addr, CMConfig{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, conn.Close()) }) // after the resources made on it
	assert.Equal(t, labtest.Device(), conn.Context().Name())
	s := cmSide(t, conn, size)
	remote, err := conn.Connect(ctx, s.endpoint(t))
	require.NoError(t, err)
	require.Equal(t, uint64(size), remote.Len)
	copy(s.buf.Bytes(), want)
	require.NoError(t, s.qp.PostWrites(Writes{MR: s.mr, RemoteAddr: remote.Addr, RKey: remote.RKey, Size: size, Count: 1}))
	require.NoError(t, s.qp.PostSend(s.mr, 0, 4, 2))
	_, err = waitWC(t, s.cq, 2, 20*time.Second)
	require.NoError(t, err)
	r := <-done
	require.NoError(t, r.err)
	assert.True(t, bytes.Equal(want, r.got), "bytes written over rdma_cm differ")
}

func TestLabCMNobodyListens(t *testing.T) {
	labtest.Require(t)
	ctx := labtest.Deadline(t)
	conn, err := DialCM(ctx, net.JoinHostPort(labtest.IP(), "18419"), CMConfig{Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, conn.Close()) })
	s := cmSide(t, conn, 4096)
	start := time.Now()
	_, err = conn.Connect(ctx, s.endpoint(t))
	require.Error(t, err)
	assert.Less(t, time.Since(start), 15*time.Second)
	assert.True(t, errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ETIMEDOUT), "%v", err)
	t.Logf("connect to a port nobody listens on: %v", err)
}

func TestLabCMDialUnroutable(t *testing.T) {
	labtest.Require(t)
	ctx := labtest.Deadline(t)
	start := time.Now()
	_, err := DialCM(ctx, "192.0.2.1:18418", CMConfig{Timeout: 2 * time.Second})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Contains(t, err.Error(), "rdma_resolve_addr")
	t.Logf("dial an unroutable address: %v", err)
}

// exchange writes ours and reads the peer's endpoint over the lab's TCP link.
func exchange(t testing.TB, conn net.Conn, ours Endpoint) Endpoint {
	t.Helper()
	require.NoError(t, conn.SetDeadline(time.Now().Add(labtest.DefaultDeadline)))
	raw, err := ours.MarshalBinary()
	require.NoError(t, err)
	_, err = conn.Write(raw)
	require.NoError(t, err)
	in := make([]byte, EndpointSize)
	_, err = io.ReadFull(conn, in)
	require.NoError(t, err)
	var peer Endpoint
	require.NoError(t, peer.UnmarshalBinary(in))
	return peer
}

func TestLab2HostRCWriteOutOfBand(t *testing.T) {
	labtest.Require2Host(t)
	var conn net.Conn
	if labtest.IsServer() {
		conn = labtest.Listen(t, 18401)
	} else {
		conn = labtest.Dial(t, 18401)
	}
	c := openLab(t)
	const size = 1 << 16
	s := newSide(t, c, size, QPConfig{})
	peer := exchange(t, conn, s.endpoint(t))
	require.NoError(t, s.qp.Connect(peer))
	want := pattern(size, 0x33)
	one := make([]byte, 1)
	if labtest.IsServer() {
		// a: wait for b's "written", then check the bytes.
		_, err := io.ReadFull(conn, one)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, s.buf.Bytes()), "bytes written by the other host differ")
		_, err = conn.Write([]byte{'k'})
		require.NoError(t, err)
		return
	}
	copy(s.buf.Bytes(), want)
	require.NoError(t, s.qp.PostWrites(Writes{MR: s.mr, RemoteAddr: peer.Addr, RKey: peer.RKey, Size: size, Count: 1}))
	_, err := waitWC(t, s.cq, 1, 30*time.Second)
	require.NoError(t, err)
	_, err = conn.Write([]byte{'w'})
	require.NoError(t, err)
	_, err = io.ReadFull(conn, one)
	require.NoError(t, err)
}

func TestLab2HostCMWrite(t *testing.T) {
	labtest.Require2Host(t)
	ctx := labtest.Deadline(t)
	const size = 1 << 15
	want := pattern(size, 0x77)
	if labtest.IsServer() {
		l, err := ListenCM(ctx, net.JoinHostPort(labtest.IP(), "18402"), CMConfig{})
		require.NoError(t, err)
		defer func() { assert.NoError(t, l.Close()) }()
		labtest.Listen(t, 18403) // b dials only once we listen
		conn, err := l.Accept(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, conn.Close()) })
		s := cmSide(t, conn, size)
		require.NoError(t, s.qp.PostRecv(s.mr, 0, 16, 1))
		require.NoError(t, conn.Accept(ctx, s.endpoint(t)))
		wcs, err := waitWC(t, s.cq, 1, 30*time.Second)
		require.NoError(t, err)
		assert.Equal(t, WCRecv, wcs[0].Opcode)
		require.True(t, bytes.Equal(want, s.buf.Bytes()), "bytes written over rdma_cm by the other host differ")
		return
	}
	labtest.Dial(t, 18403)
	conn, err := DialCM(ctx, net.JoinHostPort(labtest.Peer(), "18402"), CMConfig{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, conn.Close()) })
	s := cmSide(t, conn, size)
	remote, err := conn.Connect(ctx, s.endpoint(t))
	require.NoError(t, err)
	copy(s.buf.Bytes(), want)
	require.NoError(t, s.qp.PostWrites(Writes{MR: s.mr, RemoteAddr: remote.Addr, RKey: remote.RKey, Size: size, Count: 1}))
	require.NoError(t, s.qp.PostSend(s.mr, 0, 4, 2))
	_, err = waitWC(t, s.cq, 2, 30*time.Second)
	require.NoError(t, err)
}

// BenchmarkLabPostPoll measures the per-message CPU cost of the data path
// (PostWrites lists + batched Poll) on a loopback RC pair, at post-list
// batch sizes 1, 16 and 64, one signalled WR per list, up to 128 WRs in
// flight. On rxe the figure includes the kernel's software RDMA work.
func BenchmarkLabPostPoll(b *testing.B) {
	c := openLab(b)
	const depth = 128
	x := newSide(b, c, 4096, QPConfig{MaxSendWR: depth})
	y := newSide(b, c, 4096, QPConfig{MaxSendWR: depth})
	connectLoopback(b, x, y)
	for _, batch := range []int{1, 16, 64} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			w := Writes{MR: x.mr, RemoteAddr: y.mr.Addr(), RKey: y.mr.RKey(), Size: 64, Count: batch, SignalEvery: batch}
			wcs := make([]WC, 32)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			posted, inflight, polls := 0, 0, 0
			var inPost, inPoll time.Duration
			for posted < b.N || inflight > 0 {
				for posted < b.N && inflight+batch <= depth {
					t0 := time.Now()
					if err := x.qp.PostWrites(w); err != nil {
						b.Fatal(err)
					}
					inPost += time.Since(t0)
					posted += batch
					inflight += batch
				}
				t0 := time.Now()
				n, err := x.cq.Poll(wcs)
				inPoll += time.Since(t0)
				polls++
				if err != nil {
					b.Fatal(err)
				}
				inflight -= n * batch
			}
			el := time.Since(start)
			// ns/msg: wall time per message, rxe's software RDMA included;
			// post-ns/msg: time inside PostWrites (shim, provider, the
			// doorbell syscall) per message; poll-ns/call: one batched Poll.
			b.ReportMetric(float64(el.Nanoseconds())/float64(posted), "ns/msg")
			b.ReportMetric(float64(inPost.Nanoseconds())/float64(posted), "post-ns/msg")
			b.ReportMetric(float64(inPoll.Nanoseconds())/float64(polls), "poll-ns/call")
		})
	}
}

// BenchmarkLabPollEmpty is the fixed cost of one CQ.Poll on an empty CQ:
// one cgo crossing plus the provider's queue check, no kernel work. It is
// the floor under the per-message figures of BenchmarkLabPostPoll.
func BenchmarkLabPollEmpty(b *testing.B) {
	c := openLab(b)
	cq, err := c.CreateCQ(64)
	require.NoError(b, err)
	defer cq.Close()
	wcs := make([]WC, 32)
	b.ReportAllocs()
	for b.Loop() {
		if n, err := cq.Poll(wcs); err != nil || n != 0 {
			b.Fatal(n, err)
		}
	}
}

// TestLabProbeDMABUF: NCCL's DMA-BUF probe on rxe0. rdma-core's rxe provider
// (providers/rxe/rxe.c) has no reg_dmabuf_mr, so libibverbs answers with
// dummy_ops' EOPNOTSUPP: the "not supported" path, exactly what eRDMA's
// provider (providers/erdma/erdma.c, also without reg_dmabuf_mr) answers.
// The PD is freed again (no resource left behind).
func TestLabProbeDMABUF(t *testing.T) {
	c := openLab(t)
	before, err := labtest.ResourcesOf(t.Context(), labtest.Device())
	require.NoError(t, err)
	p, err := c.ProbeDMABUF()
	require.NoError(t, err)
	t.Logf("rxe0: ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0) -> %s (errno %d, no symbol %v)", p.Result(), int(p.Errno), p.NoSymbol)
	assert.Equal(t, labtest.Device(), p.Device)
	assert.False(t, p.NoSymbol, "Debian's rdma-core is >= 34: libibverbs has ibv_reg_dmabuf_mr")
	assert.Equal(t, syscall.EOPNOTSUPP, p.Errno, p.Result())
	assert.False(t, p.Supported)
	after, err := labtest.ResourcesOf(t.Context(), labtest.Device())
	require.NoError(t, err)
	assert.Equal(t, before, after, "the probe's PD is freed")
}

// connectPairs connects n QPs of a (made with ca) to n of b (cb), each pair
// with the other's MR, closed when the test ends; it returns a's QPs and
// where each writes in b.
func connectPairs(t *testing.T, a, b *side, n int, ca, cb QPConfig) ([]*QP, []RemoteBuffer) {
	t.Helper()
	var qps []*QP
	var remote []RemoteBuffer
	for range n {
		qa, err := a.pd.CreateQP(a.cq, ca)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, qa.Close()) })
		qb, err := b.pd.CreateQP(b.cq, cb)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, qb.Close()) })
		ea, err := qa.Endpoint()
		require.NoError(t, err)
		eb, err := qb.Endpoint()
		require.NoError(t, err)
		require.NoError(t, qa.Connect(eb.WithMR(b.mr)))
		require.NoError(t, qb.Connect(ea.WithMR(a.mr)))
		qps = append(qps, qa)
		remote = append(remote, RemoteBuffer{Addr: b.mr.Addr(), RKey: b.mr.RKey()})
	}
	return qps, remote
}

// TestLabWriteStreamPostAPIs: rxe has the work request API, so a QP takes it
// unless QPConfig.OldPostSend; either way the write loop lands every byte
// and completes exactly the writes of Iterations mode, with and without
// inline data.
func TestLabWriteStreamPostAPIs(t *testing.T) {
	c := openLab(t)
	for _, old := range []bool{false, true} {
		for _, size := range []int{64, 4096} {
			t.Run(fmt.Sprintf("old=%v/size=%d", old, size), func(t *testing.T) {
				inline := size <= 64
				a := newSide(t, c, size, QPConfig{MaxSendWR: -1})
				b := newSide(t, c, size, QPConfig{MaxSendWR: -1})
				qcfg := QPConfig{MaxSendWR: 8, OldPostSend: old}
				if inline {
					qcfg.MaxInlineData = size
				}
				qps, remote := connectPairs(t, a, b, 2, qcfg, QPConfig{MaxSendWR: 8})
				for _, qp := range qps {
					assert.Equal(t, !old, qp.WRAPI(), "rxe's provider has ibv_wr_*")
				}
				src := pattern(size, 3)
				copy(a.buf.Bytes(), src)
				ws, err := NewWriteStream(StreamConfig{CQ: a.cq, QPs: qps, MR: a.mr, Remote: remote, Size: uint32(size),
					Depth: 8, LowWater: 2, SignalEvery: 8, Inline: inline, Iterations: 101})
				require.NoError(t, err)
				defer ws.Close()
				var st StreamStatus
				for st.State != RunDone {
					st, err = ws.Run(time.Second)
					require.NoError(t, err)
				}
				assert.Equal(t, uint64(202), st.Completed)
				assert.True(t, bytes.Equal(src, b.buf.Bytes()), "written bytes differ")
			})
		}
	}
}

// TestLabWriteStream: the C write loop writes the MR's first Size bytes into
// the peer's buffer on every QP, completes exactly the writes of
// Iterations mode (one signalled in four), honours StopPosting and Stop,
// allocates nothing per Run, and a write the peer cannot take fails with a
// WCError.
func TestLabWriteStream(t *testing.T) {
	c := openLab(t)
	const size = 8192
	a := newSide(t, c, size, QPConfig{MaxSendWR: -1})
	b := newSide(t, c, size, QPConfig{MaxSendWR: -1})
	qpsA, remote := connectPairs(t, a, b, 3, QPConfig{MaxSendWR: 16}, QPConfig{MaxSendWR: 16})
	src := pattern(size, 9)
	copy(a.buf.Bytes(), src)
	cfg := StreamConfig{CQ: a.cq, QPs: qpsA, MR: a.mr, Remote: remote, Size: size, Depth: 16, LowWater: 4,
		SignalEvery: 4, Iterations: 250, PeakWindow: 10 * time.Millisecond, Slack: time.Millisecond}
	ws, err := NewWriteStream(cfg)
	require.NoError(t, err)
	defer ws.Close()
	ws.StartPeak()
	var st StreamStatus
	for st.State != RunDone {
		st, err = ws.Run(50 * time.Millisecond)
		require.NoError(t, err)
	}
	assert.Equal(t, uint64(750), st.Posted)
	assert.Equal(t, uint64(750), st.Completed)
	assert.Zero(t, st.InFlight)
	assert.Positive(t, st.PeakPerSec)
	assert.True(t, bytes.Equal(src, b.buf.Bytes()), "written bytes differ")
	t.Logf("750 writes: %d posts, %d polls, %d yields, peak %.0f writes/s", st.Posts, st.Polls, st.Yields, st.PeakPerSec)

	// Duration mode: post until StopPosting, then drain; Stop ends a run.
	cfg.Iterations = 0
	ws2, err := NewWriteStream(cfg)
	require.NoError(t, err)
	defer ws2.Close()
	st, err = ws2.Run(100 * time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, RunDeadline, st.State)
	assert.Positive(t, st.Completed)
	allocs := testing.AllocsPerRun(3, func() {
		if _, err := ws2.Run(time.Millisecond); err != nil {
			t.Error(err)
		}
	})
	assert.Zero(t, allocs, "allocations per Run")
	ws2.StopPosting()
	for st.State != RunDrained {
		st, err = ws2.Run(time.Second)
		require.NoError(t, err)
	}
	assert.Equal(t, st.Posted, st.Completed)
	ws2.Stop()
	st, err = ws2.Run(time.Hour)
	require.NoError(t, err)
	assert.Contains(t, []RunState{RunStopped, RunDrained}, st.State)

	// A write with the wrong rkey fails at the responder: a WCError.
	bad := cfg
	bad.Remote = []RemoteBuffer{{Addr: b.mr.Addr(), RKey: b.mr.RKey() + 1}, remote[1], remote[2]}
	bad.Iterations = 4
	ws3, err := NewWriteStream(bad)
	require.NoError(t, err)
	defer ws3.Close()
	deadline := time.Now().Add(20 * time.Second)
	for err == nil && time.Now().Before(deadline) {
		st, err = ws3.Run(100 * time.Millisecond)
		if st.State == RunDone {
			break
		}
	}
	var we *WCError
	require.ErrorAs(t, err, &we)
	assert.Equal(t, qpsA[0].QPN(), we.QPN)
	_, err = NewWriteStream(StreamConfig{CQ: a.cq, QPs: qpsA, MR: a.mr, Remote: remote, Size: size, Depth: 17})
	assert.ErrorContains(t, err, "depth 17 outside 1..16")
}

// pingPair is two sides on rxe0, each with one QP (depth 4) and its own
// CQ and 128-byte MR, connected to each other (the ping-pong puts its
// receive area at 0 and its send area at 64).
func pingPair(t *testing.T, c *Context) (a, b *side) {
	t.Helper()
	return pingPairSized(t, c, 128, 4)
}

// pingPairSized is pingPair with buffers of size bytes and QPs of depth.
func pingPairSized(t *testing.T, c *Context, size, depth int) (a, b *side) {
	t.Helper()
	a = newSide(t, c, size, QPConfig{MaxSendWR: depth})
	b = newSide(t, c, size, QPConfig{MaxSendWR: depth})
	ea, eb := a.endpoint(t), b.endpoint(t)
	require.NoError(t, a.qp.Connect(eb))
	require.NoError(t, b.qp.Connect(ea))
	return a, b
}

func pingConfig(s, peer *side, size uint32, answer bool) PingConfig {
	return PingConfig{CQ: s.cq, QP: s.qp, MR: s.mr, Remote: RemoteBuffer{Addr: peer.mr.Addr(), RKey: peer.mr.RKey()},
		Size: size, Send: 64, Recv: 0, Answer: answer, Stall: 20 * time.Second}
}

// wrPingPong connects two sides whose QPs post through the work request API
// (rxe's provider has it; 4 deep, 64 bytes inline) and makes a's writing
// ping-pong and b's answering one, inline or not; pongStall, when set, is
// the answering side's Stall. Closed at the test's end.
func wrPingPong(t *testing.T, c *Context, size uint32, inline bool, pongStall time.Duration) (a, b *side, ping, pong *PingPong) {
	t.Helper()
	a = newSide(t, c, 128, QPConfig{MaxSendWR: 4, MaxInlineData: 64})
	b = newSide(t, c, 128, QPConfig{MaxSendWR: 4, MaxInlineData: 64})
	require.True(t, a.qp.WRAPI() && b.qp.WRAPI(), "rxe's provider has ibv_wr_*")
	require.NoError(t, a.qp.Connect(b.endpoint(t)))
	require.NoError(t, b.qp.Connect(a.endpoint(t)))
	pcfg, qcfg := pingConfig(a, b, size, false), pingConfig(b, a, size, true)
	pcfg.Inline, qcfg.Inline = inline, inline
	if pongStall > 0 {
		qcfg.Stall = pongStall
	}
	ping, err := NewPingPong(pcfg)
	require.NoError(t, err)
	t.Cleanup(func() { ping.Close() })
	pong, err = NewPingPong(qcfg)
	require.NoError(t, err)
	t.Cleanup(func() { pong.Close() })
	return a, b, ping, pong
}

// TestLabPingPongInline: the ping-pong with its writes' data inline, through
// the work request API (rxe has it): the whole send area lands, round after
// round, not only the byte each side polls for.
func TestLabPingPongInline(t *testing.T) {
	c := openLab(t)
	const size = 48
	a, b, ping, pong := wrPingPong(t, c, size, true, 0)
	copy(a.buf.Bytes()[64:64+size-1], pattern(size-1, 5))
	copy(b.buf.Bytes()[64:64+size-1], pattern(size-1, 6))
	const n = 100
	answered := make(chan error, 1)
	go func() {
		_, err := pong.Run(nil, n, time.Hour)
		answered <- err
	}()
	st, err := ping.Run(nil, n, time.Hour)
	require.NoError(t, err)
	require.NoError(t, <-answered)
	assert.Equal(t, RunDone, st.State)
	assert.Equal(t, pattern(size-1, 5), b.buf.Bytes()[:size-1], "the ping's payload")
	assert.Equal(t, pattern(size-1, 6), a.buf.Bytes()[:size-1], "the pong's payload")
	assert.Equal(t, byte(n), a.buf.Bytes()[size-1], "the last round answered")
}

// TestLabPingPongResume: an answering side whose writer stops comes to the
// end of its Run with its next write built through the work request API;
// that write is discarded (ibv_wr_abort), and its next Run answers on, on
// the same QP, with and without inline data.
func TestLabPingPongResume(t *testing.T) {
	c := openLab(t)
	const size = 48
	for _, inline := range []bool{false, true} {
		a, _, ping, pong := wrPingPong(t, c, size, inline, 300*time.Millisecond)
		rtts := make([]time.Duration, 20)
		for k := 1; k <= 3; k++ {
			answered := make(chan PingStatus, 1)
			go func() {
				st, err := pong.Run(nil, 1000, time.Hour)
				assert.NoError(t, err)
				answered <- st
			}()
			st, err := ping.Run(rtts, 20, time.Hour)
			require.NoError(t, err, "inline %v, run %d", inline, k)
			pst := <-answered
			assert.Equal(t, RunDone, st.State)
			assert.Equal(t, RunStalled, pst.State, "the pong waits for a 21st write")
			assert.Equal(t, uint64(20*k), st.Rounds)
			assert.Equal(t, uint64(20*k), pst.Rounds)
			assert.Equal(t, byte(20*k), a.buf.Bytes()[size-1], "inline %v, run %d: answered", inline, k)
			for i, d := range rtts {
				require.Positive(t, d, "round trip %d", i)
			}
		}
	}
}

// TestLabPingPong: the C ping-pong on rxe0, both sides in this process: the
// writer times every round trip, Runs continue each other's numbering, the
// payload lands, a Run allocates nothing, the deadline and Stop end runs;
// a peer that never answers is RunStalled after Stall, and a write the
// peer cannot take is a WCError.
func TestLabPingPong(t *testing.T) {
	c := openLab(t)
	const size = 48
	a, b := pingPair(t, c)
	copy(a.buf.Bytes()[64:64+size-1], pattern(size-1, 3))
	ping, err := NewPingPong(pingConfig(a, b, size, false))
	require.NoError(t, err)
	defer ping.Close()
	pong, err := NewPingPong(pingConfig(b, a, size, true))
	require.NoError(t, err)
	defer pong.Close()
	answered := make(chan PingStatus, 1)
	go func() {
		var st PingStatus
		var err error
		for st.State != RunStopped && err == nil {
			st, err = pong.Run(nil, 1<<30, time.Hour)
		}
		assert.NoError(t, err)
		answered <- st
	}()
	const n = 300
	rtts := make([]time.Duration, n)
	st, err := ping.Run(rtts[:100], 100, time.Hour)
	require.NoError(t, err)
	assert.Equal(t, RunDone, st.State)
	st, err = ping.Run(rtts[100:], n-100, math.MaxInt64) // no overflow: no deadline
	require.NoError(t, err)
	assert.Equal(t, RunDone, st.State)
	assert.Equal(t, uint64(n), st.Rounds)
	for i, d := range rtts {
		require.Positive(t, d, "round trip %d", i)
	}
	assert.Equal(t, rtts[n-1], st.Last)
	assert.Equal(t, byte(n%256), b.buf.Bytes()[size-1], "the last round's number")
	assert.Equal(t, byte(n%256), a.buf.Bytes()[size-1], "answered")
	assert.Equal(t, pattern(size-1, 3), b.buf.Bytes()[:size-1], "the payload")
	t.Logf("%d round trips: median %s, %d yields", n, median(rtts), st.Yields)

	one := make([]time.Duration, 1)
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := ping.Run(one, 1, time.Hour); err != nil {
			t.Error(err)
		}
	})
	assert.Zero(t, allocs, "allocations per Run")
	before := ping.status(RunDone).Rounds
	st, err = ping.Run(nil, 1<<30, 50*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, RunDeadline, st.State)
	assert.Greater(t, st.Rounds, before)
	pong.Stop()
	pst := <-answered
	assert.Equal(t, RunStopped, pst.State)
	assert.Equal(t, st.Rounds, pst.Rounds, "every write answered")
	_, err = ping.Run(rtts[:2], 3, time.Hour)
	assert.ErrorContains(t, err, "3 round trips and room for 2")

	// Nobody answers: stalled after Stall, waiting for the peer's write.
	x, y := pingPair(t, c)
	cfg := pingConfig(x, y, size, false)
	cfg.Stall = 200 * time.Millisecond
	lone, err := NewPingPong(cfg)
	require.NoError(t, err)
	defer lone.Close()
	start := time.Now()
	st, err = lone.Run(nil, 10, time.Hour)
	require.NoError(t, err)
	assert.Equal(t, RunStalled, st.State)
	assert.False(t, st.WaitingForCompletion)
	assert.Zero(t, st.Rounds)
	assert.Less(t, time.Since(start), 5*time.Second)
	// Stop ends a wait long before its Stall.
	cfg.Stall = time.Minute
	lone2, err := NewPingPong(cfg)
	require.NoError(t, err)
	defer lone2.Close()
	time.AfterFunc(100*time.Millisecond, lone2.Stop)
	start = time.Now()
	st, err = lone2.Run(nil, 10, time.Hour)
	require.NoError(t, err)
	assert.Equal(t, RunStopped, st.State)
	assert.Less(t, time.Since(start), 10*time.Second)

	// A write with the wrong rkey fails at the responder: a WCError, from
	// the completion the writer reaps before it waits for an answer.
	u, v := pingPair(t, c)
	cfg = pingConfig(u, v, size, false)
	cfg.Remote.RKey++
	bad, err := NewPingPong(cfg)
	require.NoError(t, err)
	defer bad.Close()
	start = time.Now()
	_, err = bad.Run(nil, 1, time.Hour)
	var we *WCError
	require.ErrorAs(t, err, &we)
	assert.Equal(t, u.qp.QPN(), we.QPN)
	assert.Less(t, time.Since(start), 15*time.Second, "reported by its completion, not a stalled wait")

	_, err = NewPingPong(PingConfig{CQ: a.cq, QP: a.qp, MR: a.mr, Size: 100, Send: 64})
	assert.ErrorContains(t, err, "do not fit")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestLabWriteStreamPerQPCQs: the C write loop over QPs that each have their
// own CQ and MR (what rdma_cm connections have): each QP's writes carry its
// own MR's bytes, every CQ is reaped, and the configuration is checked.
func TestLabWriteStreamPerQPCQs(t *testing.T) {
	c := openLab(t)
	const size = 4096
	var (
		qps    []*QP
		cqs    []*CQ
		mrs    []*MR
		remote []RemoteBuffer
		dst    []*side
	)
	for i := range 2 {
		a, b := pingPairSized(t, c, size, 16)
		copy(a.buf.Bytes(), pattern(size, byte(20+i)))
		qps, cqs, mrs = append(qps, a.qp), append(cqs, a.cq), append(mrs, a.mr)
		remote = append(remote, RemoteBuffer{Addr: b.mr.Addr(), RKey: b.mr.RKey()})
		dst = append(dst, b)
	}
	cfg := StreamConfig{CQs: cqs, QPs: qps, MRs: mrs, Remote: remote, Size: size, Depth: 16, LowWater: 4, SignalEvery: 4, Iterations: 100}
	ws, err := NewWriteStream(cfg)
	require.NoError(t, err)
	defer ws.Close()
	var st StreamStatus
	for st.State != RunDone {
		st, err = ws.Run(100 * time.Millisecond)
		require.NoError(t, err)
	}
	assert.Equal(t, uint64(200), st.Posted)
	assert.Equal(t, uint64(200), st.Completed)
	for i, b := range dst {
		assert.True(t, bytes.Equal(pattern(size, byte(20+i)), b.buf.Bytes()), "QP %d's bytes", i)
	}
	both := cfg
	both.CQ = cqs[0]
	_, err = NewWriteStream(both)
	assert.ErrorContains(t, err, "one or the other")
	short := cfg
	short.MRs = mrs[:1]
	_, err = NewWriteStream(short)
	assert.ErrorContains(t, err, "2 QPs, 2 CQs and 1 MRs")
}
