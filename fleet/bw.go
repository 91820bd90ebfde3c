package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/erdmakit/erdmakit/perf"
)

// BwWorker is the mesh Worker of `erdmakit bw mesh`: this host's side of
// the pair tests, run with the perf engine. It serves every link with a bw
// server, or writes from every link into the partner's device of the same
// name, all links in parallel.
type BwWorker struct {
	Links  []perf.Link
	Config perf.Config // one test at Config.Size
	// Logger receives the server's log; slog.Default() when nil.
	Logger *slog.Logger
}

// Serve implements Worker.
func (w *BwWorker) Serve(ctx context.Context, port int, ready func()) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("bw mesh: serving on port %d: %w", port, err)
	}
	log := w.Logger
	if log == nil {
		log = slog.Default()
	}
	var (
		mu     sync.Mutex
		failed error
	)
	srv := &perf.Server{Links: w.Links, Logger: log, OnTest: func(t perf.ServerTest) {
		mu.Lock()
		defer mu.Unlock()
		if t.Err != nil && failed == nil {
			failed = fmt.Errorf("%s from %s: %w", t.Device, t.Peer, t.Err)
		}
	}}
	ready()
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return failed
}

// Client implements Worker: device i of this host into device i of host,
// the pair's Gbps the sum over the devices.
func (w *BwWorker) Client(ctx context.Context, host string, port int) PairResult {
	cs := perf.Clients{Links: w.Links, Addr: net.JoinHostPort(host, strconv.Itoa(port)), SameDevice: true, Config: w.Config}
	results, errs := cs.Run(ctx, nil)
	res := PairResult{Devices: make([]DeviceResult, len(w.Links))}
	var failed []string
	for i, l := range w.Links {
		d := DeviceResult{Index: i, Name: l.Device()}
		if errs[i] != nil {
			d.Error = errs[i].Error()
			failed = append(failed, d.Name+": "+d.Error)
		} else {
			for _, r := range results {
				if r.Device == d.Name {
					d.Gbps = r.AvgGbps // one size: the last is the only one
				}
			}
		}
		res.Gbps += d.Gbps
		res.Devices[i] = d
	}
	res.Error = strings.Join(failed, "; ")
	return res
}
