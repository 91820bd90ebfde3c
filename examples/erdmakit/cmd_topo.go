package main

import (
	"context"
	"fmt"
	"io"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/nvml"
	"github.com/erdmakit/erdmakit/nvml/smitopo"
	"github.com/erdmakit/erdmakit/report"
	"github.com/spf13/cobra"
)

// newTopoCmd: `erdmakit topo`, the GPU<->eRDMA matrix from the PCI tree.
func newTopoCmd(g *globals) *cobra.Command {
	var compare string
	c := &cobra.Command{
		Use:   "topo",
		Short: "GPU<->eRDMA PCIe distance matrix (like nvidia-smi topo -m), nearest eRDMA device per GPU, NCCL meaning",
		Long: "Computes the matrix from sysfs (sys/bus/pci/devices) for the GPUs NVML lists and the host's eRDMA\n" +
			"devices, with nvidia-smi's words (X, PIX, PXB, PHB, NODE, SYS; NVLink is not evaluated), then the\n" +
			"nearest eRDMA device per GPU and whether NCCL uses GPUDirect RDMA at that distance (its default\n" +
			"NCCL_NET_GDR_LEVEL is PXB). --compare FILE lists where `nvidia-smi topo -m` output disagrees.\n" +
			"Exit by its findings (doctor.TopologyFindings): 0; 1 when some devices could not be placed\n" +
			"(gpu-nic-distance, the doctor's check) or --compare found differences (topo-nvidia-smi); 2 when\n" +
			"NVML is unusable (topo-nvml); 3 when the host or FILE cannot be read.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTopo(cmd.Context(), g, compare, cmd.InOrStdin())
		},
	}
	c.Flags().StringVar(&compare, "compare", "", "nvidia-smi topo -m output to compare with (- for stdin)")
	return c
}

// runTopo is `erdmakit topo`: the doctor's topology (doctor.Topology),
// compared with nvidia-smi's matrix in the file compare ("" for none).
func runTopo(ctx context.Context, g *globals, compare string, stdin io.Reader) error {
	var theirs *nvml.Matrix
	if compare != "" {
		m, err := parseTopoFile(ctx, compare, stdin)
		if err != nil {
			return couldNotRun(err)
		}
		theirs = m
	}
	h, closer, err := erdma.OpenHost(ctx, g.root)
	if err != nil {
		return couldNotRun(err)
	}
	defer closer.Close()
	tr, err := doctor.Topology(ctx, h, theirs)
	if err != nil {
		return couldNotRun(err)
	}
	for _, n := range tr.Notes {
		fmt.Fprintln(g.stderr, "erdmakit:", n)
	}
	rep := tr.GPUs
	topo := rep.Topology
	if topo == nil {
		topo = &nvml.Topology{Matrix: nvml.Matrix{Source: "sysfs", Endpoints: []nvml.Endpoint{}, Links: [][]nvml.Link{}}, Nearest: []nvml.Nearest{}}
	}
	out := topoJSON{Available: rep.Available, Reason: rep.Reason, Error: rep.Error, Remediation: rep.Remediation, Topology: topo,
		GDRReady: rep.GDR.Ready, Comparison: tr.Comparison, Status: tr.Status, Findings: tr.Findings}
	if !rep.Available {
		// The JSON still comes, with the reason, as `gpus --json` gives it.
		if g.json {
			if err := render.JSON(g.stdout, out); err != nil {
				return couldNotRun(err)
			}
		}
		return exitWith(out.Status.Exit(), fmt.Errorf("NVML unavailable: %s (%s); fix: %s", rep.Reason, rep.Error, rep.Remediation))
	}
	if g.json {
		err = render.JSON(g.stdout, out)
	} else {
		err = printTopoResult(g, &out, rep.GDR)
	}
	if err != nil {
		return couldNotRun(err)
	}
	return exitCode(out.Status.Exit())
}

// printTopoResult is `topo` without --json: the matrix and the nearest NIC
// per GPU, the comparison with nvidia-smi's, the findings and the status.
func printTopoResult(g *globals, out *topoJSON, gdr nvml.GDR) error {
	w := g.stdout
	if err := printTopo(w, out.Topology, gdr); err != nil {
		return err
	}
	if out.Comparison != nil {
		fmt.Fprintln(w)
		if err := report.WriteTopoComparisonTable(w, out.Comparison, report.TableOptions{}); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	if err := report.WriteFindingsTable(w, out.Findings, g.tableOptions()); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nstatus: %s\n", out.Status)
	return err
}

// topoJSON is `topo --json`: the matrix, NVML's availability, the
// comparison with nvidia-smi's and the verdict (doctor.TopologyFindings).
type topoJSON struct {
	Available   bool   `json:"available"`
	Reason      string `json:"reason,omitempty"`
	Error       string `json:"error,omitempty"`
	Remediation string `json:"remediation,omitempty"`
	*nvml.Topology
	GDRReady   bool             `json:"gdr_ready"`
	Comparison *nvml.Comparison `json:"comparison,omitempty"`
	Status     health.Severity  `json:"status"`
	Findings   []health.Finding `json:"findings"`
}

func printTopo(w io.Writer, topo *nvml.Topology, gdr nvml.GDR) error {
	if len(topo.Matrix.Endpoints) == 0 {
		fmt.Fprintln(w, "No GPUs to place.")
		return nil
	}
	if err := topo.Matrix.WriteText(w); err != nil {
		return err
	}
	for _, e := range topo.Errors {
		fmt.Fprintln(w, "not placed:", e)
	}
	fmt.Fprintln(w)
	if len(topo.Nearest) == 0 {
		fmt.Fprintln(w, "No eRDMA device could be placed: no nearest device per GPU.")
		return nil
	}
	return printNearest(w, topo.Nearest, &gdr)
}

// printNearest prints report's nearest-NIC table and, when GPUDirect RDMA
// is not ready, that it is not at any distance; gdr nil when unknown
// (parsed nvidia-smi output).
func printNearest(w io.Writer, nearest []nvml.Nearest, gdr *nvml.GDR) error {
	if err := report.WriteNearestTable(w, nearest, report.TableOptions{}); err != nil {
		return err
	}
	if gdr != nil && !gdr.Ready {
		_, err := fmt.Fprintf(w, "GPUDirect RDMA is not ready at any distance: %s\n  fix: %s\n", gdr.Missing, gdr.Remediation)
		return err
	}
	return nil
}

// parseTopoFile parses nvidia-smi topo -m output from a file or stdin ("-"),
// giving up when ctx ends (Ctrl-C on a silent stdin or FIFO).
func parseTopoFile(ctx context.Context, name string, stdin io.Reader) (*smitopo.Matrix, error) {
	r, err := openParseInput(ctx, name, stdin)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	m, err := smitopo.Parse(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}
