package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/internal/atomicfile"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/nccl"
	"github.com/erdmakit/erdmakit/report"
)

// proveNCCLFlags are fleet prove's flags for its NCCL stage.
type proveNCCLFlags struct {
	skip                              bool
	binary, launcher, srunMPI, ifname string
	logFile                           string
	perHost                           int
	expect                            float64
	timeout                           time.Duration
	env, launcherArgs                 []string
	oversubscribe, noRoot             bool
}

func (f *proveNCCLFlags) add(c *cobra.Command) {
	fl := c.Flags()
	fl.BoolVar(&f.skip, "no-nccl", false, "skip the NCCL stage")
	fl.StringVar(&f.binary, "nccl-binary", "", "nccl-tests all_reduce_perf, the same path on every host (default: the first of "+strings.Join(fleet.DefaultNCCLBinaries(), ", ")+" on rank 0; none: the stage is skipped)")
	fl.StringVar(&f.launcher, "nccl-launcher", "", "mpirun or srun (default: the job's own launcher)")
	fl.StringVar(&f.srunMPI, "nccl-srun-mpi", "pmix", "srun --mpi plugin for the NCCL run")
	fl.IntVar(&f.perHost, "nccl-ranks-per-host", 0, "NCCL ranks per host (default: one per GPU the host's doctor saw, else 8)")
	fl.StringVar(&f.ifname, "nccl-socket-ifname", "eth0", "interface for NCCL bootstrap and MPI TCP traffic (\"\" for none)")
	fl.StringArrayVar(&f.env, "nccl-env", nil, "NAME=VALUE given to every NCCL rank (repeatable); NAME alone forwards it")
	fl.StringArrayVar(&f.launcherArgs, "nccl-launcher-arg", nil, "extra launcher argument for the NCCL run (repeatable)")
	fl.BoolVar(&f.oversubscribe, "nccl-oversubscribe", false, "mpirun --oversubscribe for the NCCL run")
	fl.BoolVar(&f.noRoot, "nccl-no-allow-run-as-root", false, "leave out mpirun --allow-run-as-root")
	fl.Float64Var(&f.expect, "nccl-expect-busbw", 0, "expected NCCL bus bandwidth at the largest size, GB/s (degraded below it)")
	fl.DurationVar(&f.timeout, "nccl-timeout", 10*time.Minute, "end the NCCL run (every rank) after this long")
	fl.StringVar(&f.logFile, "nccl-log", "", "write the NCCL run's output to FILE")
	completeValues(c, "nccl-launcher", string(nccl.LauncherMPIRun), string(nccl.LauncherSrun))
	completeValues(c, "nccl-srun-mpi", srunMPIPlugins()...)
}

// command builds the NCCL stage's command from the flags.
func (f *proveNCCLFlags) command(me fleet.Rank, testArgs []string) (nccl.Command, error) {
	c := nccl.DefaultCommand()
	c.Hosts = nil // the job's hosts, filled by fleet.NCCLStage
	c.Launcher = fleet.JobLauncher(me, os.Getenv)
	if f.launcher != "" {
		c.Launcher = nccl.Launcher(f.launcher)
	}
	c.RanksPerHost = f.perHost
	c.SrunMPI = f.srunMPI
	c.SocketIfname = f.ifname
	c.Oversubscribe = f.oversubscribe
	c.AllowRunAsRoot = !f.noRoot
	c.LauncherArgs = f.launcherArgs
	rankEnvAndTestArgs(&c, f.env, testArgs)
	bin := f.binary
	if bin == "" {
		found, err := fleet.FindNCCLBinary(fleet.DefaultNCCLBinaries())
		if err != nil {
			return c, err
		}
		bin = found
	}
	c.Binary = bin
	probe := c
	probe.Hosts = []nccl.Host{{Name: "probe", Slots: 1}}
	if _, err := probe.Argv(); err != nil {
		return c, err
	}
	return c, nil
}

func newFleetProveCmd(g *globals) *cobra.Command {
	bf := &bwFlags{}
	var ff fleetFlags
	var nf proveNCCLFlags
	var reportFile, jsonFile string
	var cloud eri.CloudOptions
	var sf meshScheduleFlags
	c := &cobra.Command{
		Use:   "prove [flags] [-- nccl-tests flags]",
		Short: "One verdict for the cluster: doctor on every host, bw mesh over every pair and ERI, NCCL all_reduce; proven/degraded/broken",
		Long: `prove runs one rank per host (under mpirun or srun, like fleet doctor) and three stages in one
session: the doctor on every host; bw mesh over every pair of hosts that has an RDMA device, every
ERI of each (device i to device i), with its culprit isolation (bad host, bad link, dead host);
then nccl-tests all_reduce_perf across all hosts from rank 0 through the job's launcher, when it
is found (--nccl-binary; skipped with one line when not). Rank 0 prints one verdict, the culprit
hosts and pairs, and for each the first thing to fix (the doctor's own remediation where the
doctor found it). Flags after -- replace all_reduce_perf's.
Exit: 0 proven, 1 degraded, 2 broken, 3 could not run or interrupted (what was reached is reported).`,
		Example: `  export ERDMAKIT_FLEET_SECRET=$(head -c 32 /dev/urandom | base64)   # authenticates the ranks
  mpirun --allow-run-as-root -x ERDMAKIT_FLEET_SECRET -np 16 -npernode 1 -H gpu001,...,gpu016 \
      erdmakit fleet prove --rendezvous gpu001 -D 5s -q 16 --nccl-binary /opt/nccl-tests/build/all_reduce_perf
  srun -N 16 --ntasks-per-node=1 erdmakit fleet prove --json > proof.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			bf.progress = false
			return runFleetProve(cmd.Context(), g, bf, &ff, &nf, &cloud, &sf, args, reportFile, jsonFile)
		},
	}
	bf.add(c, true)
	c.Flags().Lookup("expect-gbps").Usage = "expected Gbit/s per pair of hosts, all devices together (default: the instance type's, when every eRDMA device is tested)"
	_ = c.Flags().MarkHidden("plot")
	_ = c.Flags().MarkHidden("all")
	_ = c.Flags().MarkHidden("sizes")
	_ = c.Flags().MarkHidden("server-device")
	_ = c.Flags().MarkHidden("progress")
	ff.add(c)
	nf.add(c)
	c.Flags().StringVar(&reportFile, "report", "", "also write the proof as one self-contained HTML page (erdmakit report's) to FILE.html")
	c.Flags().StringVar(&jsonFile, "json-output", "", "also write the proof's JSON (--json's schema) to FILE, atomically, whatever stdout shows (a Job's volume)")
	addFleetCloudFlags(c, &cloud)
	sf.add(c)
	return c
}

func runFleetProve(ctx context.Context, g *globals, bf *bwFlags, ff *fleetFlags, nf *proveNCCLFlags, cloud *eri.CloudOptions, sf *meshScheduleFlags, args []string, reportFile, jsonFile string) error {
	if bf.plot != "" || bf.all || bf.sizes != "" {
		return couldNotRun(fmt.Errorf("fleet prove tests one size (-s); --plot, --all and --sizes are bw's"))
	}
	cl, err := fleetCloud(cloud)
	if err != nil {
		return couldNotRun(err)
	}
	cfg, _, err := bf.config(g)
	if err != nil {
		return couldNotRun(err)
	}
	me, addr, opt, err := ff.resolve(ctx, g)
	if err != nil {
		return couldNotRun(err)
	}
	pc := fleet.ProveConfig{Options: opt, Port: bf.port,
		Doctor: func(ctx context.Context) (*erdma.Report, error) {
			return runDoctorOn(ctx, g.root, defaultDoctorFlags().options(), cl)
		},
	}
	// A host without an RDMA device still reports its doctor; the mesh
	// runs without it and says so.
	links, closeAll, err := bf.openLinks(ctx, g)
	if err != nil {
		pc.NoWorker = err
	} else {
		defer closeAll()
		pc.Worker = &fleet.BwWorker{Links: links, Config: cfg}
	}
	if me.Rank != 0 {
		if _, err := fleet.Prove(ctx, me, addr, pc); err != nil {
			return couldNotRun(err)
		}
		return nil
	}

	progress := func(format string, a ...any) { fmt.Fprintf(g.stderr, "fleet prove: "+format+"\n", a...) }
	pc.Mesh = fleet.MeshOptions{ExpectGbps: bf.expect}
	sf.apply(&pc.Mesh)
	if links != nil {
		pc.Mesh.ExpectGbps = bf.expectation(ctx, g, "fleet prove: mesh", links, false)
	}
	ncclCmd, ncclErr := nf.command(me, args)
	ncclSkipped := nf.skip || errors.Is(ncclErr, fleet.ErrSkipped)
	pc.Progress = proveProgress(progress, ncclSkipped)
	stage, done, err := proveNCCLStage(ctx, g, nf, ncclCmd, ncclErr, progress)
	if err != nil {
		return couldNotRun(err)
	}
	defer done()
	pc.NCCL = stage
	p, err := fleet.Prove(ctx, me, addr, pc)
	if err != nil {
		return couldNotRun(err)
	}
	if err := writeProof(g, p, reportFile, jsonFile, progress); err != nil {
		return couldNotRun(err)
	}
	return exitCode(p.Exit())
}

// proveProgress is fleet prove's progress on stderr: a line per stage
// step, the doctor's per tenth of the hosts, none for an NCCL stage
// skipped before it began.
func proveProgress(progress func(format string, a ...any), ncclSkipped bool) func(fleet.ProveProgress) {
	return func(p fleet.ProveProgress) {
		switch {
		case p.Stage == fleet.StageNCCL && ncclSkipped && strings.HasPrefix(p.Message, "over "):
			// Skipped before it began (--no-nccl, no nccl-tests): the
			// stage's own line says so; "over N host(s)" would not be true.
		case p.Stage == fleet.StageDoctor && p.Done > 0 && p.Done < p.Total:
			// One line per tenth of the hosts, not one per host.
			if p.Total >= 10 && p.Done%(p.Total/10) != 0 {
				return
			}
			progress("doctor: %d/%d hosts reported", p.Done, p.Total)
		case p.Stage == fleet.StageMesh && p.Done > 0:
			progress("mesh: %s", p.Message)
		default:
			progress("%s: %s", p.Stage, p.Message)
		}
	}
}

// proveNCCLStage is fleet prove's NCCL stage: skipped (--no-nccl, or no
// nccl-tests: cerr wraps fleet.ErrSkipped) or nccl-tests' command c, its
// raw log at --nccl-log; done commits and closes that log once the proof
// has run. An error is one the command cannot run with (exit 3).
func proveNCCLStage(ctx context.Context, g *globals, nf *proveNCCLFlags, c nccl.Command, cerr error,
	progress func(format string, a ...any)) (stage func(context.Context, []fleet.JobHost) (*nccl.RunReport, error), done func(), err error) {
	done = func() {}
	switch {
	case nf.skip:
		return func(context.Context, []fleet.JobHost) (*nccl.RunReport, error) {
			return nil, fmt.Errorf("--no-nccl: %w", fleet.ErrSkipped)
		}, done, nil
	case errors.Is(cerr, fleet.ErrSkipped):
		return func(context.Context, []fleet.JobHost) (*nccl.RunReport, error) { return nil, cerr }, done, nil
	case cerr != nil:
		return nil, done, cerr
	}
	so := fleet.NCCLStageOptions{Expect: nccl.Expectation{BusBWGBs: nf.expect}, Timeout: nf.timeout,
		OnRow: ncclProgressRows(progress)}
	if nf.expect == 0 {
		so.Expect.Profile = instanceProfile(ctx, g)
	}
	if nf.logFile != "" {
		lf, err := atomicfile.Create(nf.logFile, 0o644)
		if err != nil {
			return nil, done, fmt.Errorf("--nccl-log: %w", err)
		}
		done = func() {
			if err := lf.Commit(); err != nil {
				fmt.Fprintln(g.stderr, "erdmakit: --nccl-log:", err)
			}
			lf.Close()
		}
		so.Log = lf
	}
	return fleet.NCCLStage(c, so), done, nil
}

// writeProof writes the proof's page to reportFile and its JSON to jsonFile
// ("" for none; a failure of either is only said) and the proof to stdout,
// as JSON with --json.
func writeProof(g *globals, p *fleet.Proof, reportFile, jsonFile string, progress func(format string, a ...any)) error {
	if reportFile != "" {
		if err := writeProofPage(reportFile, p); err != nil {
			fmt.Fprintln(g.stderr, "erdmakit: --report:", err)
		} else {
			progress("report: %s", reportFile)
		}
	}
	if jsonFile != "" {
		if err := atomicfile.Write(jsonFile, 0o644, func(w io.Writer) error { return render.JSON(w, p) }); err != nil {
			fmt.Fprintln(g.stderr, "erdmakit: --json-output:", err)
		} else {
			progress("json: %s", jsonFile)
		}
	}
	if g.json {
		return render.JSON(g.stdout, p)
	}
	return report.WriteProofTable(g.stdout, p, g.tableOptions())
}

// writeProofPage writes the proof's HTML page (package report) to path,
// atomically.
func writeProofPage(path string, p *fleet.Proof) error {
	in, err := report.FromValue("fleet prove", p)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("erdmakit fleet prove: %s (%d ranks)", p.Verdict, p.Size)
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		return report.Write(w, report.Options{Title: title}, in)
	})
}

// ncclProgressRows prints the NCCL stage's rows as they come, under their
// columns' header (once).
func ncclProgressRows(progress func(format string, a ...any)) func(nccl.Row) {
	header := false
	return func(r nccl.Row) {
		if !header {
			header = true
			progress("nccl: %s", report.NCCLLiveHeader)
		}
		progress("nccl: %s", report.NCCLLiveRow(r))
	}
}
