package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/doctor/verbsprobe"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/atomicfile"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/kube"
	"github.com/erdmakit/erdmakit/report"
	"github.com/erdmakit/erdmakit/setup"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// doctorFlags are `erdmakit doctor`'s own flags.
type doctorFlags struct {
	format       string
	noMetadata   bool
	metadataURL  string
	instanceType string
	interval     time.Duration
	skipTools    bool
	output       string // --output FILE, written atomically
	formatSet    bool   // --format given on the command line
	cloud        eri.CloudOptions
	// fix: doctor --fix, setup's host stages for the failing checks.
	fix  bool
	host setupFlags
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
			"--output FILE writes the report to FILE atomically (a temporary file renamed over it) and still exits\n" +
			"with the status, so a cron line `erdmakit doctor --format prom --output DIR/erdmakit.prom` publishes a\n" +
			"failure too (with `> f.tmp && mv` the non-zero exit skips the mv and the collector keeps the last ok).\n\n" +
			"Exit code: 0 ok, 1 warn, 2 fail, 3 could not run (Nagios convention).",
		Example: "  erdmakit doctor\n" +
			"  erdmakit doctor --root testdata/hosts/ebmgn8is-healthy.tar.gz\n" +
			"  erdmakit doctor --json\n" +
			"  erdmakit doctor --format prom --output /var/lib/node_exporter/textfile/erdmakit.prom",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.formatSet = cmd.Flags().Changed("format")
			return runDoctor(cmd.Context(), g, f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.format, "format", "table", "output: table, json (the same as --json) or prom (node_exporter textfile collector)")
	fl.StringVar(&f.output, "output", "", "write the report to FILE atomically (temporary file + rename) instead of stdout; the exit code is still the status")
	f.addInstanceFlags(fl)
	fl.DurationVar(&f.interval, "interval", doctor.DefaultInterval, "time between the two hw_counters readings of the rate-limit-drops check (live host; 0: one reading)")
	fl.StringVar(&f.cloud.Mode, "cloud", eri.CloudAuto, "cloud checks (network-card-channel from the ECS API, eri-mode): auto (a recorded view, or the API within about 1 s if credentials answer), on, off")
	completeValues(c, "format", doctorFormats()...)
	completeValues(c, "cloud", eri.CloudAuto, eri.CloudOn, eri.CloudOff)
	fl.StringVar(&f.cloud.Endpoint, "endpoint", "", "ECS endpoint for the cloud checks (default: $"+eri.EndpointEnv+", else the region's)")
	fl.BoolVar(&f.fix, "fix", false, "fix what fails: setup's host stages (driver, os, gpu, limits) for the failing checks only, then the doctor again (as root; asks once, --yes for scripts)")
	fl.BoolVar(&f.host.dryRun, "dry-run", false, "with --fix: print the fixes and change nothing")
	f.host.addHost(c)
	return c
}

// addInstanceFlags adds the flags that decide the instance the doctor's
// checks judge by and the tools it looks for: doctor's and gpus'.
func (f *doctorFlags) addInstanceFlags(fl *pflag.FlagSet) {
	fl.BoolVar(&f.noMetadata, "no-metadata", false, "do not ask the ECS metadata service for the instance type")
	fl.StringVar(&f.metadataURL, "metadata-url", erdma.DefaultMetadataURL, "ECS metadata service address")
	fl.StringVar(&f.instanceType, "instance-type", "", "instance type to check against (ecs.<family>.<size>), instead of the metadata service's")
	fl.BoolVar(&f.skipTools, "skip-tools", false, "do not look for eadm and the other tools on PATH")
}

// options turns the flags into the doctor's options.
func (f doctorFlags) options() doctor.Options {
	opt := doctor.Options{InstanceType: f.instanceType, Interval: f.interval, SkipTools: f.skipTools, Verbs: verbsprobe.Live{}}
	if !f.noMetadata {
		opt.Metadata = &erdma.MetadataClient{BaseURL: f.metadataURL}
	}
	return opt
}

// doctorDefaults are doctor.DefaultOptions with the live verbs probe
// (libibverbs through package ibverbs): the doctor the CLI's commands run
// without its flags.
func doctorDefaults() doctor.Options {
	opt := doctor.DefaultOptions()
	opt.Verbs = verbsprobe.Live{}
	return opt
}

// defaultDoctorFlags are the doctor's flag defaults, for the commands that
// run it without its flags (fleet doctor).
func defaultDoctorFlags() doctorFlags {
	return doctorFlags{format: "table", metadataURL: erdma.DefaultMetadataURL, interval: doctor.DefaultInterval}
}

// doctorFormats are the values of doctor --format.
func doctorFormats() []string { return []string{"table", "json", "prom"} }

func runDoctor(ctx context.Context, g *globals, f doctorFlags) error {
	if f.fix {
		return runDoctorFix(ctx, g, f)
	}
	if f.host.dryRun {
		return couldNotRun(errors.New("--dry-run plans the fixes: use it with --fix"))
	}
	jumbo, err := jumboFlag(f.host.jumbo)
	if err != nil {
		return couldNotRun(err)
	}
	format, err := f.check(g.json)
	if err != nil {
		return couldNotRun(err)
	}
	opt := f.options()
	opt.JumboFrames = jumbo
	if format == "table" && render.IsTerminal(g.stderr) {
		opt.Progress = func(msg string) { fmt.Fprintln(g.stderr, msg) }
	}
	rep, err := runDoctorOn(ctx, g.root, opt, &f.cloud)
	if err != nil {
		if format == "prom" {
			err = writeDoctorUnable(g, f.output, err)
		}
		return couldNotRun(err)
	}
	if err := writeDoctor(g, rep, format, f.output); err != nil {
		return couldNotRun(err)
	}
	return exitCode(severityExit(rep.Status))
}

// check validates the doctor's flags (without --fix) and returns the
// output format: --json is json; an --output FILE.prom is prom.
func (f *doctorFlags) check(json bool) (string, error) {
	format := f.format
	if json {
		if format != "table" && format != "json" {
			return "", fmt.Errorf("--json and --format %s contradict each other", format)
		}
		format = "json"
	}
	if !slices.Contains(doctorFormats(), format) {
		return "", fmt.Errorf("--format %q: want table, json or prom", f.format)
	}
	// node_exporter's textfile collector reads only *.prom files, and a table
	// in one is a scrape error: the name implies the format, and a format
	// asked for that contradicts it is refused.
	if strings.HasSuffix(f.output, ".prom") && format != "prom" {
		if json || f.formatSet {
			return "", fmt.Errorf("--output %s is a node_exporter textfile (.prom) but the format is %s: use --format prom, or another file name", f.output, format)
		}
		format = "prom"
	}
	if f.interval < 0 {
		return "", fmt.Errorf("--interval %s: must not be negative", f.interval)
	}
	if f.instanceType != "" {
		if _, err := erdma.ParseInstanceType(f.instanceType); err != nil {
			return "", fmt.Errorf("--instance-type: %w", err)
		}
	}
	switch f.cloud.Mode {
	case eri.CloudAuto, eri.CloudOn, eri.CloudOff:
	default:
		return "", fmt.Errorf("--cloud %q: want auto, on or off", f.cloud.Mode)
	}
	return format, nil
}

// writeDoctorUnable writes, for --format prom, that the doctor could not
// run (erdmakit_doctor_up 0, status 3): a textfile that still said "ok"
// would hide it. It returns err, with the write's error if any.
func writeDoctorUnable(g *globals, output string, err error) error {
	unable := erdma.PromRun{Err: err, Time: time.Now()}
	if output == "" {
		_ = unable.Write(g.stdout)
		return err
	}
	if werr := erdma.WritePrometheusFile(output, unable); werr != nil {
		return fmt.Errorf("%w; and writing %s: %w", err, output, werr)
	}
	return err
}

// writeDoctor writes the doctor's report in format (table, json, prom) to
// output, atomically, or to stdout when output is "".
func writeDoctor(g *globals, rep *erdma.Report, format, output string) error {
	run := erdma.PromRun{Report: rep, Time: time.Now()}
	write := func(w io.Writer, color bool) error {
		switch format {
		case "json":
			return render.JSON(w, rep)
		case "prom":
			return run.Write(w)
		}
		return report.WriteDoctorTable(w, rep, report.TableOptions{Color: color, Verbose: g.verbose, Hint: doctorHint})
	}
	switch {
	case output != "" && format == "prom":
		return erdma.WritePrometheusFile(output, run)
	case output != "":
		return atomicfile.Write(output, 0o644, func(w io.Writer) error { return write(w, g.color == render.ColorAlways) })
	}
	return write(g.stdout, g.colorOn(g.stdout))
}

// runDoctorFix is doctor --fix: setup's host stages for the failing
// checks only, then the doctor again.
func runDoctorFix(ctx context.Context, g *globals, f doctorFlags) error {
	if f.format != "table" || f.output != "" {
		return couldNotRun(errors.New("--fix prints the fixes and the doctor's verdict: use --json, not --format or --output"))
	}
	opt := setup.Options{Root: g.root, DryRun: f.host.dryRun, FailingOnly: true, Doctor: f.options()}
	if err := f.host.hostOptions(&opt); err != nil {
		return couldNotRun(err)
	}
	return applySetup(ctx, g, &f.host, opt, os.Stdin)
}

// runDoctorOn opens root (directory, archive or "/") and runs the doctor,
// with the cloud checks when cloud is set.
func runDoctorOn(ctx context.Context, root string, opt doctor.Options, cloud *eri.CloudOptions) (*erdma.Report, error) {
	h, closer, err := erdma.OpenHost(ctx, root)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	if cloud != nil {
		opt.Checks = append(opt.Checks, doctor.HostChecks(eri.DoctorChecks(ctx, h, *cloud)...)...)
	}
	// In a pod on Kubernetes, reading the node it runs on (a recorded host
	// is no pod's node).
	inPod := kube.InPod(os.Getenv) && filepath.Clean(root) == "/"
	if inPod {
		// A container's PATH is its image's, not the host's: eadm and
		// ofed_info are the host's and cannot be seen from here.
		opt.SkipTools = true
	}
	rep, err := doctor.Run(ctx, h, opt)
	if err == nil && inPod {
		// In a pod on Kubernetes, setting the node up is ack-erdma-controller's
		// job: its checks name the controller's step first.
		rep = kube.WithControllerSteps(rep, os.Getenv("NODE_NAME"))
	}
	return rep, err
}

// doctorHint names the flags that answer a finding (library findings never
// name CLI flags).
func doctorHint(f health.Finding) string {
	switch {
	case f.ID == erdma.FindingInstanceProfile && f.Severity != health.OK:
		return "--instance-type ecs.<family>.<size> checks against a type you name; without --no-metadata the doctor asks the metadata service"
	case f.ID == erdma.FindingRateLimitDrops && f.Severity == health.Skip:
		return "--interval 2s on the live host reads the counters twice"
	case f.ID == erdma.FindingEadm && f.Severity == health.Skip:
		return "without --skip-tools the doctor looks for eadm on PATH"
	}
	return ""
}
