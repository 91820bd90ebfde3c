package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/nccl"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
)

// The page's words say one thing once (report-2 item 9).
func TestWording(t *testing.T) {
	t.Run("the title says the verdict once", func(t *testing.T) {
		ins := readInputs(t, "fleet-prove-4.json")
		var b bytes.Buffer
		require.NoError(t, Write(&b, Options{Title: "erdmakit fleet prove: broken (4 ranks)"}, ins...))
		assert.Contains(t, b.String(), "<title>erdmakit fleet prove: broken (4 ranks)</title>")
		b.Reset()
		require.NoError(t, Write(&b, Options{Title: "cluster"}, ins...))
		assert.Contains(t, b.String(), "<title>cluster: broken</title>")
	})
	t.Run("the chart names the collective nccl run launched", func(t *testing.T) {
		raw, err := os.ReadFile(filepath.Join("testdata", "nccl-run-B02.json"))
		require.NoError(t, err)
		var r nccl.RunReport
		require.NoError(t, json.Unmarshal(raw, &r))
		r.Collective = "" // a log whose header was cut
		in, err := FromValue("nccl.json", &r)
		require.NoError(t, err)
		p, err := build(Options{}, []Input{in})
		require.NoError(t, err)
		svg := string(p.Sections[0].Charts[0].SVG)
		assert.Contains(t, svg, ">all_reduce, 16 ranks on 2 hosts<")
		assert.NotContains(t, svg, ">, ")
	})
	t.Run("GPUDirect RDMA and the NIC balance in words", func(t *testing.T) {
		l := &ncclog.Summary{GDRDMAChannels: 4, NICSpread: ncclog.NICsOne}
		in, err := FromValue("log.json", l)
		require.NoError(t, err)
		p, err := build(Options{}, []Input{in})
		require.NoError(t, err)
		facts := map[string]string{}
		for _, f := range p.Sections[0].Facts {
			facts[f[0]] = f[1]
		}
		assert.Equal(t, "the log names no HCA's GPU Direct RDMA state; 4 channel(s) over GDRDMA", facts["GPUDirect RDMA"])
		assert.Equal(t, "one NET/IB device listed: nothing to spread", facts["NIC balance"])
		l.GDR = ncclog.GDR{Enabled: []string{"erdma_0"}}
		p, err = build(Options{}, []Input{in})
		require.NoError(t, err)
		for _, f := range p.Sections[0].Facts {
			if f[0] == "GPUDirect RDMA" {
				assert.Equal(t, "enabled on erdma_0; 4 channel(s) over GDRDMA", f[1])
			}
		}
	})
}
