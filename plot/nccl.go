package plot

import (
	"fmt"
	"io"
	"slices"

	"github.com/erdmakit/erdmakit/nccl/ncclog"
)

// NCCLUse writes an SVG bar chart of what an NCCL_DEBUG=INFO log says NCCL
// used: the channels per transport (NET/IB, NET/Socket, P2P, SHM) and, per
// NET/IB device, its channels and how many of them went over GPUDirect
// RDMA (GDRDMA). A summary without channels or NICs is ErrNoData.
func NCCLUse(w io.Writer, title string, s *ncclog.Summary) error {
	if s == nil {
		return ErrNoData
	}
	var labels []string
	var total, gdr []float64
	keys := make([]string, 0, len(s.Channels))
	for k := range s.Channels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		labels = append(labels, k)
		total = append(total, float64(s.Channels[k]))
		gdr = append(gdr, 0)
	}
	for _, n := range s.NICs {
		name := n.Name
		if name == "" {
			name = fmt.Sprintf("NIC %d", n.Index)
		}
		labels = append(labels, name)
		total = append(total, float64(n.Channels))
		gdr = append(gdr, float64(n.GDRDMAChannels))
	}
	if len(labels) == 0 {
		return ErrNoData
	}
	top := max(1, slices.Max(total), slices.Max(gdr))
	ch := newChart(max(480, 192+77*float64(len(labels))), 400, nominalAxis("", labels, 1),
		linearAxis("channels", 0, top*1.15, true), layout{title: fmt.Sprintf("%s (network: %s)", title, s.Transport)})
	// Two bars side by side at each label, each at most 20 px wide.
	bar := min(20, (ch.px(1)-ch.px(0))/3)
	for i := range labels {
		for j, v := range []float64{total[i], gdr[i]} {
			x, y := ch.px(float64(i))+float64(j-1)*bar, ch.py(v)
			ch.rect(x, y, bar, ch.py(0)-y, fmt.Sprintf(`fill="%s"`, colour(j)))
		}
	}
	ch.legend(topRight, entry{name: "channels", colour: colour(0), solid: true},
		entry{name: "over GPUDirect RDMA (GDRDMA)", colour: colour(1), solid: true})
	return ch.write(w)
}
