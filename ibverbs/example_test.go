package ibverbs_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/erdmakit/erdmakit/gid"
	"github.com/erdmakit/erdmakit/ibverbs"
)

// Listing devices works on any host: without the RDMA stack the error is
// ErrNotInstalled, which a health checker reports as a finding.
func ExampleDevices() {
	devs, err := ibverbs.Devices()
	if errors.Is(err, ibverbs.ErrNotInstalled) || errors.Is(err, ibverbs.ErrNotSupported) {
		fmt.Println("no RDMA stack:", err)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range devs {
		fmt.Println(d.Name, d.GUID, d.Transport, ibverbs.MethodFor(d.Transport))
	}
}

// A Loader pointing at a library that is not there gives ErrNotInstalled,
// never a loader crash.
func ExampleLoader() {
	_, err := ibverbs.Loader{Verbs: "libibverbs-not-here.so.1"}.Load()
	fmt.Println(errors.Is(err, ibverbs.ErrNotInstalled) || errors.Is(err, ibverbs.ErrNotSupported))
	// Output: true
}

// Query a device, its first port and the GID the QPs will use.
func ExampleOpen() {
	c, err := ibverbs.Open("erdma_0")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	attr, err := c.QueryDevice()
	if err != nil {
		log.Fatal(err)
	}
	port, err := c.QueryPort(1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s vendor 0x%x part %d fw %q: port 1 %s, active MTU %s, %s\n",
		c.Name(), attr.VendorID, attr.VendorPartID, attr.FWVer, port.State, port.ActiveMTU, port.LinkLayer)
	gids, err := c.GIDs(1)
	if err != nil {
		log.Fatal(err)
	}
	for _, g := range gids {
		fmt.Println(g.Index, g.GID, g.Type)
	}
}

// The out-of-band path: create the resources, send Endpoint to the peer
// (over TCP, say), connect to the peer's, then write into its buffer with
// chained post lists and poll completions in batches.
func ExampleQP_Connect() {
	c, err := ibverbs.Open("erdma_0")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	pd, err := c.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	defer pd.Close()
	cq, err := c.CreateCQ(256)
	if err != nil {
		log.Fatal(err)
	}
	defer cq.Close()
	buf, err := ibverbs.NewBuffer(1 << 20)
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close()
	mr, err := pd.RegMR(buf, ibverbs.AccessRemoteWrite)
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	qp, err := pd.CreateQP(cq, ibverbs.QPConfig{MaxSendWR: 128})
	if err != nil {
		log.Fatal(err)
	}
	defer qp.Close()

	local, err := qp.Endpoint()
	if err != nil {
		log.Fatal(err)
	}
	wire, _ := local.WithMR(mr).MarshalBinary()
	_ = wire // ... send wire to the peer, receive its bytes ...
	var remote ibverbs.Endpoint
	if err := remote.UnmarshalBinary(wire); err != nil {
		log.Fatal(err)
	}
	if err := qp.Connect(remote); err != nil {
		log.Fatal(err)
	}
	w := ibverbs.Writes{MR: mr, RemoteAddr: remote.Addr, RKey: remote.RKey, Size: 65536, Count: 64, SignalEvery: 16}
	if err := qp.PostWrites(w); err != nil {
		log.Fatal(err)
	}
	wcs := make([]ibverbs.WC, 16)
	for done := 0; done < w.Signalled(); {
		n, err := cq.Poll(wcs)
		if err != nil {
			log.Fatal(err) // a *ibverbs.WCError names the status
		}
		done += n
	}
}

// A write loop run in C, as perftest runs its own: connected QPs on one CQ
// (set up as in the QP.Connect example), every free send-queue slot posted
// as one list, one write in 16 signalled, busy polling between; each Run is
// one cgo call. Here ten seconds of writes, then the drain.
func ExampleNewWriteStream() {
	var (
		cq     *ibverbs.CQ      // the QPs' CQ
		qps    []*ibverbs.QP    // connected (RTS), MaxSendWR 128
		mr     *ibverbs.MR      // the source buffer
		remote ibverbs.Endpoint // the peer's buffer (Endpoint.WithMR on its side)
	)
	targets := make([]ibverbs.RemoteBuffer, len(qps))
	for i := range targets {
		targets[i] = ibverbs.RemoteBuffer{Addr: remote.Addr, RKey: remote.RKey}
	}
	ws, err := ibverbs.NewWriteStream(ibverbs.StreamConfig{CQ: cq, QPs: qps, MR: mr, Remote: targets,
		Size: 65536, Depth: 128, LowWater: 16, SignalEvery: 16, PeakWindow: 100 * time.Millisecond, Slack: 100 * time.Microsecond})
	if err != nil {
		log.Fatal(err)
	}
	defer ws.Close()
	ws.StartPeak()
	end := time.Now().Add(10 * time.Second)
	var st ibverbs.StreamStatus
	for time.Now().Before(end) {
		if st, err = ws.Run(time.Until(end)); err != nil {
			log.Fatal(err) // a *ibverbs.WCError names a failed completion
		}
	}
	ws.StopPosting()
	for st.InFlight > 0 {
		if st, err = ws.Run(time.Second); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("%d writes, peak %.0f writes/s\n", st.Completed, st.PeakPerSec)
}

// ib_write_lat's ping-pong run in C: one QP, its CQ and an MR of two
// 64-byte areas (the peer writes into the first, ours are sent from the
// second); the peer runs the same with Answer set. Each Run is one cgo
// call; here 1000 round trips, each timed from one post's return to the
// next's.
func ExampleNewPingPong() {
	var (
		cq     *ibverbs.CQ      // the QP's send CQ
		qp     *ibverbs.QP      // connected (RTS)
		mr     *ibverbs.MR      // 128 bytes, zeroed
		remote ibverbs.Endpoint // the peer's MR (Endpoint.WithMR on its side)
	)
	pp, err := ibverbs.NewPingPong(ibverbs.PingConfig{CQ: cq, QP: qp, MR: mr,
		Remote: ibverbs.RemoteBuffer{Addr: remote.Addr, RKey: remote.RKey}, Size: 2, Send: 64, Recv: 0, Stall: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer pp.Close()
	rtts := make([]time.Duration, 1000)
	st, err := pp.Run(rtts, len(rtts), time.Minute)
	if err != nil {
		log.Fatal(err) // a *ibverbs.WCError names a failed completion
	}
	if st.State != ibverbs.RunDone {
		log.Fatalf("after %d round trips: %v", st.Rounds, st.State) // RunStalled: the peer stopped answering
	}
	slices.Sort(rtts)
	fmt.Printf("median one-way latency %s\n", rtts[len(rtts)/2]/2)
}

// The rdma_cm path (required on iWARP devices): resolve, create the QP on
// the connection's device, connect with the Endpoint as private data.
func ExampleDialCM() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := ibverbs.DialCM(ctx, "10.0.9.1:7471", ibverbs.CMConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	dev := conn.Context()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	defer pd.Close()
	cq, err := dev.CreateCQ(64)
	if err != nil {
		log.Fatal(err)
	}
	defer cq.Close()
	qp, err := conn.CreateQP(pd, cq, ibverbs.QPConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer qp.Close()
	local, err := qp.Endpoint()
	if err != nil {
		log.Fatal(err)
	}
	remote, err := conn.Connect(ctx, local)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("connected to qp %d; may write %d bytes at 0x%x\n", remote.QPN, remote.Len, remote.Addr)
}

func ExampleEndpoint_MarshalBinary() {
	g, _ := gid.Parse("0000:0000:0000:0000:0000:ffff:0a00:0901")
	b, _ := ibverbs.Endpoint{QPN: 17, PSN: 1, GID: g, MTU: ibverbs.MTU1024}.MarshalBinary()
	var e ibverbs.Endpoint
	_ = e.UnmarshalBinary(b)
	ip, _ := e.GID.IPv4()
	fmt.Println(len(b), e.QPN, ip, e.MTU)
	// Output: 52 17 10.0.9.1 1024 (3)
}

// NCCL's DMA-BUF question, asked of every device: does its provider
// register dma-bufs? (rxe and erdma answer EOPNOTSUPP: no.)
func ExampleContext_ProbeDMABUF() {
	c, err := ibverbs.Open("erdma_0")
	if err != nil {
		log.Print(err)
		return
	}
	defer c.Close()
	p, err := c.ProbeDMABUF()
	if err != nil {
		log.Print(err)
		return
	}
	fmt.Printf("%s: ibv_reg_dmabuf_mr(fd -1) -> %s, DMA-BUF supported %v\n", p.Device, p.Result(), p.Supported)
}
