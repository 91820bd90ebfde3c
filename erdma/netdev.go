package erdma

import (
	"context"
	"fmt"
	"sort"
)

// Netdevs lists the host's network interfaces (loopback left out), sorted
// by name: from netlink on a live host (with rdmamap's answer for the RDMA
// device of each link), from erdmakit/netdevs.json on a recorded one.
func (h Host) Netdevs(ctx context.Context) ([]Netdev, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !h.live {
		var nds []Netdev
		ok, err := h.readJSON(ctx, RecordedNetdevsFile, &nds)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%s: not recorded, no network interfaces known", h.Path(RecordedNetdevsFile))
		}
		for i := range nds {
			if nds[i].IPv4 == nil {
				nds[i].IPv4 = []string{}
			}
			if nds[i].Name == "" {
				return nil, fmt.Errorf("%s: %w: entry %d has no name", h.Path(RecordedNetdevsFile), ErrMalformed, i)
			}
		}
		sort.SliceStable(nds, func(i, j int) bool { return nds[i].Name < nds[j].Name })
		return nds, nil
	}
	return liveNetdevs()
}

// Memlock is RLIMIT_MEMLOCK: getrlimit on a live host, erdmakit/limits.json
// on a recorded one (nil without error when not recorded).
func (h Host) Memlock(ctx context.Context) (*Limit, error) {
	if h.live {
		return liveMemlock()
	}
	var rec struct {
		Memlock *Limit `json:"memlock"`
	}
	ok, err := h.readJSON(ctx, RecordedLimitsFile, &rec)
	if err != nil || !ok {
		return nil, err
	}
	if rec.Memlock == nil {
		return nil, nil
	}
	l := NewLimit(rec.Memlock.Soft, rec.Memlock.Hard)
	l.Unlimited = l.Unlimited || rec.Memlock.Unlimited
	return l, nil
}
