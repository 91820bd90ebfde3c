package plot

import (
	"fmt"
	"io"
	"sort"

	"github.com/erdmakit/erdmakit/nccl/ncclog"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
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
	var total, gdr plotter.Values
	keys := make([]string, 0, len(s.Channels))
	for k := range s.Channels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
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
	p := gplot.New()
	p.Title.Text = fmt.Sprintf("%s (network: %s)", title, s.Transport)
	p.Y.Label.Text = "channels"
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	width := vg.Points(14)
	all, err := plotter.NewBarChart(total, width)
	if err != nil {
		return fmt.Errorf("plot: channels: %w", err)
	}
	all.Color = plotutil.Color(0)
	all.Offset = -width / 2
	g, err := plotter.NewBarChart(gdr, width)
	if err != nil {
		return fmt.Errorf("plot: GDRDMA channels: %w", err)
	}
	g.Color = plotutil.Color(1)
	g.Offset = width / 2
	p.Add(all, g)
	p.Legend.Add("channels", all)
	p.Legend.Add("over GPUDirect RDMA (GDRDMA)", g)
	p.Legend.Top = true
	p.NominalX(labels...)
	return writeSVG(w, p, 2+0.8*float64(len(labels)), 4)
}
