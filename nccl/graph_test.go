package nccl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
)

// runbookGraph is the erdma-controller runbook's published graph
// (docs/erdma-benchmark/nccl-graph.xml at 72e8f0c9): 8 GPUs, 2 NICs.
const runbookGraph = "testdata/graph/runbook-nccl-graph.xml"

func gpus(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestMultiNICGraphIsTheRunbooksGraph: the ring and tree graphs are the
// runbook's; its empty collnet/NVLS entries (ids 2-4, nchannels 0) are left
// out, because NCCL's loader (src/graph/search.cc ncclTopoGetGraphFromXmlSub)
// copies an entry's pattern, typeintra/typeinter and samechannels into the
// graph whatever its nchannels, before NCCL searches that id itself.
func TestMultiNICGraphIsTheRunbooksGraph(t *testing.T) {
	f, err := os.Open(runbookGraph)
	require.NoError(t, err)
	defer f.Close()
	want, err := ParseGraph(context.Background(), f)
	require.NoError(t, err)
	require.Len(t, want.Graphs, 5)
	for _, g := range want.Graphs[2:] {
		assert.Zero(t, g.NChannels, "the runbook's graph %d is empty", g.ID)
	}

	got, err := MultiNICGraph(GraphPlan{GPUs: gpus(8), NICs: []string{"erdma_0", "erdma_1"}})
	require.NoError(t, err)
	assert.Equal(t, want.Graphs[:2], got.Graphs, "the runbook's ring and tree graphs for an 8-GPU, 2-NIC host")
	for _, g := range got.Graphs {
		assert.NotZero(t, g.NChannels, "no empty graph entry (id %d)", g.ID)
	}

	// NVLink between the GPUs (NVML): the intra-node type is NVL, a word
	// NCCL's kvDictLinkType knows; without, SYS (PCIe through the CPUs).
	nvl, err := MultiNICGraph(GraphPlan{GPUs: gpus(8), NICs: []string{"erdma_0", "erdma_1"}, NVLink: true})
	require.NoError(t, err)
	for _, g := range nvl.Graphs {
		assert.Equal(t, "NVL", g.TypeIntra)
		assert.Equal(t, "SYS", g.TypeInter)
	}
	inv := host()
	inv.GPU.NVLink = "yes"
	p, err := PlanGraph(inv, "")
	require.NoError(t, err)
	assert.True(t, p.NVLink)
	inv.GPU.NVLink = "unknown"
	p, err = PlanGraph(inv, "")
	require.NoError(t, err)
	assert.False(t, p.NVLink, "NVL only where NVML reports NVLink")
}

func TestMultiNICGraphRoundTrip(t *testing.T) {
	for _, n := range []int{1, 2, 8, 16} {
		for _, nics := range [][]string{{"erdma_0", "erdma_1"}, {"erdma_0", "erdma_1", "erdma_2"}} {
			t.Run(fmt.Sprintf("%d GPUs %d NICs", n, len(nics)), func(t *testing.T) {
				g, err := MultiNICGraph(GraphPlan{GPUs: gpus(n), NICs: nics})
				require.NoError(t, err)
				var b bytes.Buffer
				_, err = g.WriteTo(&b)
				require.NoError(t, err)
				text := b.String()
				// What NCCL's tokenizer needs (src/graph/xml.cc): no tabs, no
				// prolog, no double spaces inside a tag.
				assert.NotContains(t, text, "\t")
				assert.NotContains(t, text, "<?")
				assert.NotRegexp(t, `<[^>]*  [^>]*>`, text)
				back, err := ParseGraph(context.Background(), &b)
				require.NoError(t, err)
				assert.Equal(t, g, back)
				assert.Equal(t, n, back.GPUCount())
				assert.Len(t, back.NetDevs(), len(nics))
				for _, gr := range back.Graphs[:2] {
					require.Len(t, gr.Channels, len(nics))
					for i, c := range gr.Channels {
						assert.Equal(t, i, c.NetIn, "channel %d enters by net dev %d", i, i)
						assert.Equal(t, i, c.NetOut)
						assert.Equal(t, gpus(n), c.GPUs, "every GPU in every channel")
					}
				}
			})
		}
	}
}

func TestGraphDevsAreHexAsNCCLReadsThem(t *testing.T) {
	g, err := MultiNICGraph(GraphPlan{GPUs: gpus(16), NICs: []string{"erdma_0", "erdma_1"}})
	require.NoError(t, err)
	var b bytes.Buffer
	_, err = g.WriteTo(&b)
	require.NoError(t, err)
	// NCCL: dev = strtol(str, NULL, 16); a decimal "10" would be GPU 16.
	assert.Contains(t, b.String(), `<gpu dev="0xa"/>`)
	assert.Contains(t, b.String(), `<gpu dev="0xf"/>`)
	assert.NotContains(t, b.String(), `dev="10"`)
}

func TestMultiNICGraphRefuses(t *testing.T) {
	_, err := MultiNICGraph(GraphPlan{GPUs: gpus(8), NICs: []string{"erdma_0"}})
	assert.ErrorIs(t, err, ErrGraph)
	assert.ErrorContains(t, err, "1 eRDMA NIC")
	_, err = MultiNICGraph(GraphPlan{NICs: []string{"erdma_0", "erdma_1"}})
	assert.ErrorContains(t, err, "no GPU")
	_, err = MultiNICGraph(GraphPlan{GPUs: []int{0, 0}, NICs: []string{"erdma_0", "erdma_1"}})
	assert.ErrorContains(t, err, "repeated")
}

func TestPlanGraph(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(*erdma.Inventory)
		wantGPUs int
		wantNICs []string
		err      string
	}{
		{"2 NICs 2 GPUs", nil, 2, []string{"erdma_0", "erdma_1"}, ""},
		{"2 NICs 8 GPUs", func(i *erdma.Inventory) { i.GPU.Count = 8 }, 8, []string{"erdma_0", "erdma_1"}, ""},
		{"2 NICs 1 GPU", func(i *erdma.Inventory) { i.GPU.Count = 1 }, 1, []string{"erdma_0", "erdma_1"}, ""},
		{"1 NIC 8 GPUs", func(i *erdma.Inventory) { i.Devices = i.Devices[:1]; i.GPU.Count = 8 }, 0, nil, "1 eRDMA device"},
		{"second NIC down", func(i *erdma.Inventory) { i.Devices[1].Ports[0].State, i.Devices[1].Ports[0].StateCode = "DOWN", 1 }, 0, nil, "1 eRDMA device"},
		{"second NIC in iWARP mode", func(i *erdma.Inventory) { i.Devices[1].Transport = erdma.TransportIWARP }, 0, nil, "1 eRDMA device"},
		{"no GPU facts", func(i *erdma.Inventory) { i.GPU = &erdma.GPUInfo{Reason: "libnvidia-ml not found"} }, 0, nil, "libnvidia-ml not found"},
		// NCCL before 2.29.7 numbers net devs in ibv_get_device_list order
		// filtered by NCCL_IB_HCA (src/transport/net_ib/init.cc
		// ncclIbInitDevices), the kernel's registration order: the uverbs
		// number, then the PCI address; never the inventory's or a name's.
		{"NCCL 2.29.3: libibverbs' order (uverbs number)", func(i *erdma.Inventory) {
			i.Devices[0].UVerbs, i.Devices[1].UVerbs = "uverbs1", "uverbs0"
		}, 2, []string{"erdma_1", "erdma_0"}, ""},
		{"NCCL 2.29.3: then the PCI address", func(i *erdma.Inventory) {
			i.Devices[0].PCIAddress, i.Devices[1].PCIAddress = "0000:80:05.0", "0000:00:05.0"
		}, 2, []string{"erdma_1", "erdma_0"}, ""},
		{"NCCL 2.29.3: the inventory's order does not matter", func(i *erdma.Inventory) {
			i.Devices[0], i.Devices[1] = i.Devices[1], i.Devices[0]
		}, 2, []string{"erdma_0", "erdma_1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := host()
			if tt.edit != nil {
				tt.edit(inv)
			}
			p, err := PlanGraph(inv, "2.29.3")
			if tt.err != "" {
				assert.ErrorIs(t, err, ErrGraph)
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Len(t, p.GPUs, tt.wantGPUs)
			assert.Equal(t, tt.wantNICs, p.NICs)
			// NCCL_IB_HCA lists them in the same order (for the reader:
			// NCCL ignores the order of its names): net dev i is NICs[i].
			hca, _ := AdviseEnv(inv, EnvOptions{NCCL: []NCCLInstall{{Version: "2.29.3"}}}).Get("NCCL_IB_HCA")
			assert.Equal(t, tt.wantNICs, HCANames(hca))
		})
	}
}

func TestAdviseEnvGraphFile(t *testing.T) {
	inv := host()
	inv.GPU.Count = 8
	a := AdviseEnv(inv, EnvOptions{GraphFile: "/root/nccl-graph.xml"})
	v, ok := a.Get("NCCL_GRAPH_FILE")
	require.True(t, ok)
	assert.Equal(t, "/root/nccl-graph.xml", v)
	require.NotNil(t, a.Graph)
	assert.Equal(t, 8, a.Graph.GPUCount())
	assert.Empty(t, a.Warnings)

	// Without --graph-file: no variable, a note saying how.
	a = AdviseEnv(inv, EnvOptions{})
	_, ok = a.Get("NCCL_GRAPH_FILE")
	assert.False(t, ok)
	require.Len(t, a.Notes, 1)
	assert.Contains(t, a.Notes[0], "--graph-file")
	assert.Empty(t, a.Warnings)

	// Asked for on a one-NIC host: a warning, never a graph that cannot match.
	inv.Devices = inv.Devices[:1]
	a = AdviseEnv(inv, EnvOptions{GraphFile: "/root/nccl-graph.xml"})
	_, ok = a.Get("NCCL_GRAPH_FILE")
	assert.False(t, ok)
	assert.Nil(t, a.Graph)
	require.Len(t, a.Warnings, 1)
	assert.Contains(t, a.Warnings[0], "NCCL_GRAPH_FILE not set")
}

func TestGraphWriteFile(t *testing.T) {
	g, err := MultiNICGraph(GraphPlan{GPUs: gpus(2), NICs: []string{"erdma_0", "erdma_1"}})
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "g.xml")
	require.NoError(t, g.WriteFile(p))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	back, err := ParseGraph(context.Background(), f)
	require.NoError(t, err)
	assert.Equal(t, g, back)
	ents, _ := os.ReadDir(filepath.Dir(p))
	assert.Len(t, ents, 1, "no temporary file left")

	err = g.WriteFile(filepath.Join(t.TempDir(), "missing", "g.xml"))
	assert.ErrorIs(t, err, ErrGraph)
	assert.True(t, errors.Is(err, os.ErrNotExist))
}

func TestParseGraphBadInput(t *testing.T) {
	tests := []struct{ name, in, err string }{
		{"empty", "", "no <graphs>"},
		{"wrong root", `<graph id="0"/>`, "want <graphs>"},
		{"wrong version", `<graphs version="2"></graphs>`, "version 2"},
		{"no version", `<graphs></graphs>`, "no version"},
		{"unterminated", `<graphs version="1">`, "unterminated <graphs>"},
		{"mismatch", `<graphs version="1"></graph>`, "unexpected </graph>"},
		{"text", `<graphs version="1">x</graphs>`, "expected '<'"},
		{"unterminated comment", `<!-- x <graphs version="1"/>`, "unterminated comment"},
		{"bad link type", `<graphs version="1"><graph id="0" pattern="4" crossnic="0" nchannels="0" speedintra="1" speedinter="1" typeintra="XYZ" typeinter="SYS" samechannels="0"/></graphs>`, "typeintra"},
		{"missing attribute", `<graphs version="1"><graph id="0" pattern="4"/></graphs>`, "no crossnic"},
		{"bad dev", `<graphs version="1"><graph id="0" pattern="4" crossnic="0" nchannels="1" speedintra="1" speedinter="1" typeintra="SYS" typeinter="SYS" samechannels="0"><channel><gpu dev="zz"/></channel></graph></graphs>`, "not a hex"},
		{"too deep", `<graphs version="1"><graph><channel><gpu><x>`, "nested deeper"},
		{"unquoted value", `<graphs version=1/>`, "not name=\"value\""},
		{"long value", `<graphs version="` + strings.Repeat("1", 300) + `"/>`, "longer than 255"},
		{"two roots", `<graphs version="1"/><graphs version="1"/>`, "after the root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseGraph(context.Background(), strings.NewReader(tt.in))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrGraph)
			assert.ErrorContains(t, err, tt.err)
		})
	}
}

func TestParseGraphBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<graphs version="1">`)
	for i := 0; i < maxGraphSubs+1; i++ {
		b.WriteString(`<graph id="0" pattern="4" crossnic="0" nchannels="0" speedintra="0" speedinter="0" typeintra="LOC" typeinter="LOC" samechannels="0"/>`)
	}
	b.WriteString(`</graphs>`)
	_, err := ParseGraph(context.Background(), strings.NewReader(b.String()))
	assert.ErrorContains(t, err, "more than 640 children")
}

func FuzzParseGraph(f *testing.F) {
	b, err := os.ReadFile(runbookGraph)
	require.NoError(f, err)
	f.Add(string(b))
	for _, n := range []int{1, 8} {
		g, _ := MultiNICGraph(GraphPlan{GPUs: gpus(n), NICs: []string{"erdma_0", "erdma_1"}})
		var buf bytes.Buffer
		_, _ = g.WriteTo(&buf)
		f.Add(buf.String())
	}
	f.Add(`<graphs version="1"><!-- c --></graphs>`)
	f.Fuzz(func(t *testing.T, in string) {
		g, err := ParseGraph(context.Background(), strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrGraph) {
				t.Fatalf("error does not wrap ErrGraph: %v", err)
			}
			return
		}
		// What parses writes and parses back to the same graphs.
		var buf bytes.Buffer
		if _, err := g.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := ParseGraph(context.Background(), &buf)
		if err != nil {
			t.Fatalf("written graph does not parse: %v\n%s", err, buf.String())
		}
		if g.GPUCount() != back.GPUCount() || len(g.Graphs) != len(back.Graphs) {
			t.Fatalf("round trip changed the graph")
		}
	})
}

func TestCommandApplyAdvice(t *testing.T) {
	inv := host()
	inv.GPU.Count = 8
	a := AdviseEnv(inv, EnvOptions{GraphFile: "/root/g.xml", SocketIfname: "bond0"})
	c := DefaultCommand()
	c.Env = append(c.Env, Var{Name: "NCCL_IB_GID_INDEX", Value: "3"})
	require.NoError(t, c.ApplyAdvice(a))
	assert.Equal(t, "bond0", c.SocketIfname, "the advised bootstrap interface carries Open MPI's TCP traffic too")
	got := map[string]string{}
	for _, v := range c.Vars() {
		got[v.Name] = v.Value
	}
	assert.Equal(t, "3", got["NCCL_IB_GID_INDEX"], "a variable set by hand wins")
	assert.Equal(t, "=erdma_0:1,erdma_1:1", got["NCCL_IB_HCA"])
	assert.Equal(t, "/root/g.xml", got["NCCL_GRAPH_FILE"])
	assert.Equal(t, "bond0", got["NCCL_SOCKET_IFNAME"])
	argv, err := c.Argv()
	require.NoError(t, err)
	assert.Contains(t, ShellJoin(argv), "-mca btl_tcp_if_include bond0 -mca oob_tcp_if_include bond0")

	c = DefaultCommand()
	c.RanksPerHost = 4
	err = c.ApplyAdvice(a)
	assert.ErrorIs(t, err, ErrBadCommand)
	assert.ErrorContains(t, err, "8 GPUs in each channel but the command runs 4 ranks per host")
}

// TestMultiNICGraphJSONHasNoNullList: the unused graphs (CollNet, NVLS)
// have no channels, and `nccl env --json` prints them as [], not null.
func TestMultiNICGraphJSONHasNoNullList(t *testing.T) {
	g, err := MultiNICGraph(GraphPlan{GPUs: gpus(8), NICs: []string{"erdma_0", "erdma_1"}})
	require.NoError(t, err)
	b, err := json.Marshal(g)
	require.NoError(t, err)
	require.NotContains(t, string(b), "null")
}

// TestNetDevOrderFollowsTheNCCLThatRuns: issue 54 item 4. From NCCL 2.29.7
// (56a0c229) NCCL sorts its IB devices by PCI bus id:
// NCCL_PARAM(IbDevicePciOrder, "IB_DEVICE_PCI_ORDER", 1) and
// qsort(ncclIbDevs, ..., ncclIbCompareDevs) at src/transport/net_ib/init.cc
// lines 30 and 484 (NVIDIA/nccl 5067397, 2.30.7), comparing the last
// component of each device's PCI path (lines 44-58). Before, net dev i was
// the i-th of ibv_get_device_list. On a host whose two orders differ
// (erdma_0 registered first, erdma_1 on the lower PCI bus) the graph's net
// ids, NCCL_IB_HCA's order and the text follow the NCCL that runs; an
// unknown version is taken as current.
func TestNetDevOrderFollowsTheNCCLThatRuns(t *testing.T) {
	differ := func() *erdma.Inventory {
		inv := host()
		inv.GPU.Count = 8
		inv.Devices[0].UVerbs, inv.Devices[0].PCIAddress = "uverbs0", "0000:b1:00.0"
		inv.Devices[1].UVerbs, inv.Devices[1].PCIAddress = "uverbs1", "0000:3b:00.0"
		return inv
	}
	tests := []struct {
		version string
		want    []string
		order   string
	}{
		{"2.29.3", []string{"erdma_0", "erdma_1"}, "libibverbs' device list (NCCL < 2.29.7)"},
		{"2.29.7", []string{"erdma_1", "erdma_0"}, "by PCI bus id (NCCL >= 2.29.7"},
		{"2.30.7", []string{"erdma_1", "erdma_0"}, "by PCI bus id"},
		{"", []string{"erdma_1", "erdma_0"}, "version unknown: taken as >= 2.29.7"},
	}
	for _, tt := range tests {
		t.Run("NCCL "+tt.version, func(t *testing.T) {
			p, err := PlanGraph(differ(), tt.version)
			require.NoError(t, err)
			assert.Equal(t, tt.want, p.NICs)
			assert.Contains(t, p.Order, tt.order)
			var opts EnvOptions
			if tt.version != "" {
				opts.NCCL = []NCCLInstall{{Version: tt.version}}
			}
			opts.GraphFile = "/etc/nccl-graph.xml"
			a := AdviseEnv(differ(), opts)
			hca, _ := a.Get("NCCL_IB_HCA")
			assert.Equal(t, tt.want, HCANames(hca))
			require.NotNil(t, a.Graph)
			var gf string
			for _, v := range a.Vars {
				if v.Name == "NCCL_GRAPH_FILE" {
					gf = v.Reason
				}
			}
			assert.Contains(t, gf, strings.Join(tt.want, ", ")+", in ")
			assert.Contains(t, gf, tt.order)
		})
	}
	t.Run("installed NCCLs that disagree are warned about", func(t *testing.T) {
		a := AdviseEnv(differ(), EnvOptions{NCCL: []NCCLInstall{{Version: "2.27.3"}, {Version: "2.29.7"}}, GraphFile: "/etc/g.xml"})
		hca, _ := a.Get("NCCL_IB_HCA")
		assert.Equal(t, []string{"erdma_1", "erdma_0"}, HCANames(hca), "the newest is followed")
		assert.Contains(t, strings.Join(a.Warnings, "\n"), "number the eRDMA devices differently")
	})
}

// TestIBHCAIsAnExactMatch: issue 54 item 6. NCCL matches NCCL_IB_HCA's
// names by prefix unless the value starts with '=' (searchExact,
// src/transport/net_ib/init.cc lines 322-323 at 5067397; matchIfList in
// src/misc/utils.cc): erdma_1 would also take erdma_10. The advice uses the
// exact form with each device's port.
func TestIBHCAIsAnExactMatch(t *testing.T) {
	inv := host()
	hca, ok := AdviseEnv(inv, EnvOptions{}).Get("NCCL_IB_HCA")
	require.True(t, ok)
	assert.Equal(t, "=erdma_0:1,erdma_1:1", hca)
	for i := 2; i <= 10; i++ { // erdma_1 and erdma_10 on one host
		d := erdmaDev(fmt.Sprintf("erdma_%d", i), fmt.Sprintf("eth%d", i+1), 1)
		inv.Devices = append(inv.Devices, d)
	}
	hca, _ = AdviseEnv(inv, EnvOptions{}).Get("NCCL_IB_HCA")
	assert.True(t, strings.HasPrefix(hca, "="), hca)
	assert.Contains(t, hca, "erdma_1:1,")
	assert.Contains(t, hca, "erdma_10:1")
	assert.Equal(t, []string{"erdma_0", "erdma_1"}, HCANames("^=erdma_0:1,erdma_1"))
}

// TestRunDiagnosesAGraphForTheOtherOrder: issue 54 item 4, the version the
// run's log shows. A graph written for NCCL >= 2.29.7's PCI order
// (src/transport/net_ib/init.cc line 484 at 5067397) run under NCCL 2.27.3,
// which numbers its devices in libibverbs' order, is a warning with the
// fix; under 2.30.7 nothing is said.
func TestRunDiagnosesAGraphForTheOtherOrder(t *testing.T) {
	inv := host()
	inv.GPU.Count = 8
	inv.Devices[0].UVerbs, inv.Devices[0].PCIAddress = "uverbs0", "0000:b1:00.0"
	inv.Devices[1].UVerbs, inv.Devices[1].PCIAddress = "uverbs1", "0000:3b:00.0"
	a := AdviseEnv(inv, EnvOptions{GraphFile: "/etc/g.xml", NCCL: []NCCLInstall{{Version: "2.29.7"}}})
	require.Equal(t, OrderPCI, a.GraphOrder)
	c := DefaultCommand()
	require.NoError(t, c.ApplyAdvice(a))
	assert.Equal(t, OrderPCI, c.GraphOrder)
	run := func(v string) map[string]health.Finding {
		res := &TestResult{NCCL: &ncclog.Summary{NCCLVersion: v}, Rows: []Row{{Size: 1 << 20}}}
		return byFindingID(DiagnoseRun(&RunResult{Result: res, GraphOrder: c.GraphOrder, Env: c.Vars()}, Expectation{}))
	}
	f, ok := run("2.27.3")["nccl-graph-order"]
	require.True(t, ok)
	assert.Equal(t, health.Warn, f.Severity)
	assert.Contains(t, f.Summary, "NCCL 2.27.3 numbers its IB devices in NCCL 2.27.3's order: libibverbs' device list")
	assert.Contains(t, f.Remediation, "erdmakit nccl env --nccl-version 2.27.3 --graph-file PATH")
	_, ok = run("2.30.7")["nccl-graph-order"]
	assert.False(t, ok)
}
