package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/spf13/cobra"
)

// doctorFlags are `erdmakit doctor`'s own flags.
type doctorFlags struct {
	format       string
	noMetadata   bool
	metadataURL  string
	instanceType string
	interval     time.Duration
	skipTools    bool
}

// newDoctorCmd: `erdmakit doctor`, every step of the eRDMA guide checked.
func newDoctorCmd(g *globals) *cobra.Command {
	var f doctorFlags
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check every step of the eRDMA guide on this host",
		Long: "Reads the host (or --root, a recorded host), asks the ECS metadata service for the instance type\n" +
			"(bounded to about 1 s; --no-metadata skips it) and checks every step of the eRDMA guide: devices and\n" +
			"their count, driver, uverbs, GPU driver and nvidia_peermem, netdev IPv4, port state, compat/iWARP,\n" +
			"GID index, MTU, memlock, rate-limit drop counters, network-card channels. Each finding has evidence\n" +
			"and the step that fixes it.\n\n" +
			"Exit code: 0 ok, 1 warn, 2 fail, 3 could not run (Nagios convention).",
		Example: "  erdmakit doctor\n" +
			"  erdmakit doctor --root testdata/hosts/ebmgn8is-healthy.tar.gz\n" +
			"  erdmakit doctor --json\n" +
			"  erdmakit doctor --format prom > /var/lib/node_exporter/textfile/erdmakit.prom.$$ && mv ...",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runDoctor(cmd.Context(), g, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.format, "format", "table", "output: table, json (the same as --json) or prom (node_exporter textfile collector)")
	fl.BoolVar(&f.noMetadata, "no-metadata", false, "do not ask the ECS metadata service for the instance type")
	fl.StringVar(&f.metadataURL, "metadata-url", erdma.DefaultMetadataURL, "ECS metadata service address")
	fl.StringVar(&f.instanceType, "instance-type", "", "instance type to check against (ecs.<family>.<size>), instead of the metadata service's")
	fl.DurationVar(&f.interval, "interval", doctorDefaultInterval, "time between the two hw_counters readings of the rate-limit-drops check (live host; 0: one reading)")
	fl.BoolVar(&f.skipTools, "skip-tools", false, "do not look for eadm and the other tools on PATH")
	return c
}

func runDoctor(ctx context.Context, g *globals, f doctorFlags) error {
	format := f.format
	if g.json {
		if format != "table" && format != "json" {
			return &exitError{code: ExitUnknown, err: fmt.Errorf("--json and --format %s contradict each other", format)}
		}
		format = "json"
	}
	if format != "table" && format != "json" && format != "prom" {
		return &exitError{code: ExitUnknown, err: fmt.Errorf("--format %q: want table, json or prom", f.format)}
	}
	if f.interval < 0 {
		return &exitError{code: ExitUnknown, err: fmt.Errorf("--interval %s: must not be negative", f.interval)}
	}
	var flagInstance *erdma.Instance
	if f.instanceType != "" {
		t, err := erdma.ParseInstanceType(f.instanceType)
		if err != nil {
			return &exitError{code: ExitUnknown, err: fmt.Errorf("--instance-type: %w", err)}
		}
		flagInstance = &erdma.Instance{Type: t.String(), Source: "flag"}
	}

	h, closer, err := erdma.OpenHost(g.root)
	if err != nil {
		return &exitError{code: ExitUnknown, err: err}
	}
	defer closer.Close()
	rep, err := doctorReport(ctx, h, f, flagInstance, func(inv *erdma.Inventory) {
		if format == "table" && render.IsTerminal(g.stderr) && hasERDMA(inv) && h.Live() && f.interval > 0 {
			fmt.Fprintf(g.stderr, "reading hw_counters twice, %s apart...\n", f.interval)
		}
	})
	if err != nil {
		return &exitError{code: ExitUnknown, err: err}
	}

	switch format {
	case "json":
		err = render.JSON(g.stdout, rep)
	case "prom":
		err = erdma.WritePrometheus(g.stdout, rep)
	default:
		err = printDoctor(g.stdout, rep, render.ColorWanted(g.stdout), g.verbose)
	}
	if err != nil {
		return &exitError{code: ExitUnknown, err: err}
	}
	return exitCode(severityExit(rep.Status))
}

// doctorInstance decides the instance: the flag, else what a recorded host
// carries, else the metadata service (unless --no-metadata). The error says
// why it is unknown; it is evidence, not a reason to stop.
func doctorInstance(ctx context.Context, h erdma.Host, f doctorFlags, flag *erdma.Instance) (*erdma.Instance, error) {
	if flag != nil {
		return flag, nil
	}
	if !h.Live() {
		inst, err := h.RecordedInstance()
		if err != nil {
			return nil, fmt.Errorf("recorded instance: %w", err)
		}
		if inst == nil {
			return nil, errors.New("the recorded host has no " + erdma.RecordedInstanceFile)
		}
		inst.Source = "recorded"
		return inst, nil
	}
	if f.noMetadata {
		return nil, errors.New("--no-metadata: the metadata service was not asked")
	}
	inst, err := (&erdma.MetadataClient{BaseURL: f.metadataURL}).Instance(ctx)
	if err != nil {
		return nil, err
	}
	return inst, nil
}

func hasERDMA(inv *erdma.Inventory) bool {
	for _, d := range inv.Devices {
		if d.ERDMA {
			return true
		}
	}
	return false
}

// printDoctor prints the findings as a table, then the evidence and the fix
// of every warning and failure (of every finding with verbose).
func printDoctor(w io.Writer, rep *erdma.Report, color, verbose bool) error {
	var b strings.Builder
	root, typ := "/", "unknown"
	if rep.Host != nil {
		root = rep.Host.Root
		if rep.Host.Instance != nil && rep.Host.Instance.Type != "" {
			typ = rep.Host.Instance.Type + " (" + rep.Host.Instance.Source + ")"
		}
	}
	fmt.Fprintf(&b, "erdmakit doctor: host %s, instance type %s\n\n", root, typ)
	t := render.NewTable("RESULT", "CHECK", "SUMMARY")
	t.Color, t.SeverityColumn = color, 0
	counts := map[erdma.Severity]int{}
	for _, f := range rep.Findings {
		t.Add(string(f.Severity), f.ID, f.Summary)
		counts[f.Severity]++
	}
	if err := t.Write(&b); err != nil {
		return err
	}
	sev := func(s erdma.Severity) string {
		if color {
			return render.Severity(string(s))
		}
		return string(s)
	}
	var next string
	for _, f := range rep.Findings {
		problem := f.Severity == erdma.SeverityWarn || f.Severity == erdma.SeverityFail
		if !problem && !verbose {
			continue
		}
		fmt.Fprintf(&b, "\n%s %s: %s\n", sev(f.Severity), f.ID, f.Summary)
		for _, e := range f.Evidence {
			fmt.Fprintf(&b, "    read: %s\n", e)
		}
		if f.Remediation != "" {
			fmt.Fprintf(&b, "    fix:  %s\n", f.Remediation)
		}
		if next == "" && f.Severity == erdma.SeverityFail && f.Remediation != "" {
			next = f.ID + ": " + f.Remediation
		}
	}
	fmt.Fprintf(&b, "\nstatus: %s (%d ok, %d warn, %d fail, %d skip)\n", sev(rep.Status),
		counts[erdma.SeverityOK], counts[erdma.SeverityWarn], counts[erdma.SeverityFail], counts[erdma.SeveritySkip])
	if next != "" {
		fmt.Fprintf(&b, "first step: %s\n", next)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// doctorDefaultInterval is the time between the two counter readings of the
// rate-limit-drops check on a live host.
const doctorDefaultInterval = 2 * time.Second
