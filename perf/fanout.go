package perf

import (
	"context"
	"sort"
	"sync"
)

// Clients is the client side of a multi-device test: one Client per link,
// all in parallel against the same bw server (what `bw run`, `bw loopback`
// and a `bw mesh` pair test do).
type Clients struct {
	Links []Link
	// Addr is the server's out-of-band address, "host:port".
	Addr string
	// ServerDevice is the server device every link writes into. "": with
	// one link the server's first device; with several, each link writes
	// into the server's device of its own name (erdma_0 into erdma_0, as
	// SameDevice), since one server NIC taking every stream would cap the
	// total at its own rate. Ignored with SameDevice.
	ServerDevice string
	// SameDevice makes each link write into the server's device of its own
	// name (loopback, and device i to device i in a mesh).
	SameDevice bool
	Config     Config
}

// Run runs one test per size (Config.Size when sizes is empty) from every
// link at once. It returns every result, ordered by size then device, and
// each link's error: errs[i] belongs to Links[i], nil when it succeeded.
func (cs Clients) Run(ctx context.Context, sizes []int) (results []Result, errs []error) {
	errs = make([]error, len(cs.Links))
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for i, l := range cs.Links {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &Client{Link: l, Addr: cs.Addr, ServerDevice: cs.serverDevice(l), Config: cs.Config}
			rs, err := c.Run(ctx, sizes)
			errs[i] = err
			mu.Lock()
			defer mu.Unlock()
			results = append(results, rs...)
		}()
	}
	wg.Wait()
	sort.SliceStable(results, func(i, j int) bool {
		if results[i].Size != results[j].Size {
			return results[i].Size < results[j].Size
		}
		return results[i].Device < results[j].Device
	})
	return results, errs
}

// serverDevice is the server device l writes into ("": the server's first).
func (cs Clients) serverDevice(l Link) string {
	switch {
	case cs.SameDevice:
		return l.Device()
	case cs.ServerDevice != "":
		return cs.ServerDevice
	case len(cs.Links) > 1:
		return l.Device()
	}
	return ""
}
