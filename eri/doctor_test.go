package eri_test

import (
	"testing"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/health"
	"github.com/stretchr/testify/assert"
)

func ip(n int) *int { return &n }

// twoERIHost is the inventory of a host with two eRDMA devices on eth1/eth2.
func twoERIHost() *erdma.Inventory {
	return &erdma.Inventory{
		Devices: []erdma.Device{{Name: "erdma_0", ERDMA: true, Netdev: "eth1"}, {Name: "erdma_1", ERDMA: true, Netdev: "eth2"}},
		Netdevs: []erdma.Netdev{{Name: "eth0", MAC: "00:16:3e:00:00:01"}, {Name: "eth1", MAC: "00:16:3e:00:00:02"},
			{Name: "eth2", MAC: "00:16:3e:00:00:03"}},
	}
}

func view(enis ...eri.ENI) *eri.View {
	return &eri.View{Target: target, Source: "api", ENIs: append([]eri.ENI{{ID: "eni-p", MAC: "00:16:3e:00:00:01",
		Type: "Primary", TrafficMode: eri.ModeStandard, InstanceID: testInst, NetworkCardIndex: ip(0)}}, enis...)}
}

func hp(id, mac string, card int) eri.ENI {
	return eri.ENI{ID: id, MAC: mac, Type: "Secondary", TrafficMode: eri.ModeHighPerformance, InstanceID: testInst,
		NetworkCardIndex: ip(card), Status: eri.StatusInUse}
}

func TestCloudFindings(t *testing.T) {
	for name, tc := range map[string]struct {
		v             *eri.View
		channel, mode health.Severity
		text          string
	}{
		"two ERIs on distinct channels": {view(hp("eni-1", "00:16:3e:00:00:02", 0), hp("eni-2", "00:16:3e:00:00:03", 1)),
			health.OK, health.OK, ""},
		"two ERIs on one channel": {view(hp("eni-1", "00:16:3e:00:00:02", 1), hp("eni-2", "00:16:3e:00:00:03", 1)),
			health.Fail, health.OK, "eni-1 and eni-2 on NetworkCardIndex 1"},
		"an eRDMA netdev on a Standard ENI": {view(hp("eni-1", "00:16:3e:00:00:02", 0), eri.ENI{ID: "eni-2", MAC: "00:16:3e:00:00:03",
			TrafficMode: eri.ModeStandard, InstanceID: testInst, NetworkCardIndex: ip(1)}),
			health.Skip, health.Fail, "erdma_1's ENI eni-2 is Standard"},
		"an ERI without netdev": {view(hp("eni-1", "00:16:3e:00:00:02", 0), hp("eni-2", "00:16:3e:00:00:03", 1),
			hp("eni-3", "00:16:3e:00:00:09", 2)), health.OK, health.Fail, "ERI eni-3 (00:16:3e:00:00:09) has no netdev"},
	} {
		t.Run(name, func(t *testing.T) {
			ch := eri.ChannelFinding(tc.v)
			md := eri.ModeFinding(tc.v, twoERIHost())
			assert.Equal(t, tc.channel, ch.Severity, ch.Summary)
			assert.Equal(t, tc.mode, md.Severity, md.Summary)
			if tc.text != "" {
				assert.Contains(t, ch.Summary+" | "+md.Summary, tc.text)
			}
		})
	}
}

func TestProfileFromType(t *testing.T) {
	p := eri.ProfileFromType(eri.TypeInfo{Type: "ecs.gn9x.8xlarge", EriQuantity: 4, GPUAmount: 2, GPUSpec: "X", BandwidthRxKbps: 32000000})
	assert.Equal(t, "gn9x", p.Family)
	assert.Equal(t, erdma.MaxERIs, p.ERIs)
	assert.Equal(t, 2, p.GPUs)
	assert.Equal(t, 32.0, p.NetGbps)
	assert.Contains(t, p.Source, "DescribeInstanceTypes")
}
