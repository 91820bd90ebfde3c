package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/doctor/verbsprobe"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/atomicfile"
	"github.com/erdmakit/erdmakit/internal/ctxio"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/nccl"
	"github.com/erdmakit/erdmakit/plot"
	"github.com/erdmakit/erdmakit/report"
)

// newNCCLCmd: `erdmakit nccl run|env`.
func newNCCLCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "nccl",
		Short: "Run nccl-tests over eRDMA (mpirun or srun) and print the NCCL environment a host should use",
	}
	c.AddCommand(newNCCLRunCmd(g), newNCCLEnvCmd(g))
	return c
}

type ncclRunFlags struct {
	hosts, hostfile, launcher, binary, socketIfname, logFile, plot, srunMPI string
	np, perHost                                                             int
	perHostSet                                                              bool // --ranks-per-host given
	expect                                                                  float64
	env, launcherArgs                                                       []string
	oversubscribe, noRoot, dryRun, socketIfnameSet                          bool
	timeout                                                                 time.Duration
	// hostEnv: give every rank `nccl env`'s advice for this host (--root).
	hostEnv bool
	advice  ncclEnvFlags
	// noNVLink: the GPUs have no NVLink (explains a capped two-NIC busbw).
	noNVLink bool
}

func newNCCLRunCmd(g *globals) *cobra.Command {
	var f ncclRunFlags
	c := &cobra.Command{
		Use:   "run [flags] [-- nccl-tests flags]",
		Short: "Run an nccl-tests binary across hosts, show rows as they finish, and diagnose the result",
		Long: "Builds the guide's command (mpirun --allow-run-as-root -np 16 -npernode 8 -H host1:8,host2:8 --bind-to none --tag-output\n" +
			"-mca btl_tcp_if_include eth0 -mca oob_tcp_if_include eth0 -x NCCL_SOCKET_IFNAME=eth0 -x NCCL_DEBUG=INFO -x LD_LIBRARY_PATH -x PATH\n" +
			"./build/all_reduce_perf -b 4M -e 4M -f 2 -g 1 -t 1 -n 20) from the flags, runs it, and prints the result\n" +
			"table and what NCCL really used (NET/IB or sockets, GPUDirect RDMA), #wrong, and bus bandwidth against\n" +
			"--expect-busbw (default: across hosts, from 64 MiB, half the instance type's RDMA write rate where its\n" +
			"profile gives one). Flags after -- replace the test's flags. Exit 0 ok, 1 below expectation (or another\n" +
			"warning), 2 failed (launcher failure, test failure, socket fallback, #wrong), 3 could not run.",
		RunE: func(cmd *cobra.Command, args []string) error {
			f.socketIfnameSet = cmd.Flags().Changed("socket-ifname")
			f.perHostSet = cmd.Flags().Changed("ranks-per-host")
			return runNCCL(cmd.Context(), g, f, args)
		},
	}
	fl := c.Flags()
	fl.BoolVar(&f.noNVLink, "no-nvlink", false, "the hosts' GPUs have no NVLink (nvidia-smi nvlink -s prints nothing; with --host-env NVML tells): a two-NIC bus bandwidth below the expectation is explained by intra-node PCIe")
	fl.BoolVar(&f.hostEnv, "host-env", false, "give every rank the variables `erdmakit nccl env` advises for this host (--root), with -x; -x NAME=VALUE still wins")
	fl.StringVar(&f.advice.graphFile, "graph-file", "", "with --host-env on a host with two or more eRDMA NICs: write the NCCL graph to PATH and pass NCCL_GRAPH_FILE=PATH (PATH must hold it on every host)")
	fl.StringVar(&f.advice.gdr, "gdr", "auto", "with --host-env: auto, on or off, as nccl env --gdr")
	fl.StringVar(&f.advice.inventory, "inventory", "", "with --host-env: read the inventory from FILE (erdmakit devices --json) instead of --root")
	fl.StringVar(&f.hosts, "hosts", "", "hosts and ranks per host, as mpirun -H: h1:8,h2:8 (slots given here win over the default --ranks-per-host)")
	fl.StringVar(&f.hostfile, "hostfile", "", "hostfile (mpirun --hostfile, srun --nodelist FILE)")
	fl.IntVar(&f.np, "np", 0, "total ranks (default: ranks per host x hosts)")
	fl.IntVar(&f.perHost, "ranks-per-host", 8, "ranks per host (mpirun -npernode, srun --ntasks-per-node)")
	fl.StringVar(&f.launcher, "launcher", "mpirun", "mpirun or srun")
	fl.StringVar(&f.srunMPI, "srun-mpi", "pmix", "srun --mpi plugin: none, pmi2, pmix, pmix_vN, cray_shasta (srun --mpi=list shows what the site has)")
	completeValues(c, "gdr", gdrModes()...)
	completeValues(c, "launcher", string(nccl.LauncherMPIRun), string(nccl.LauncherSrun))
	completeValues(c, "srun-mpi", srunMPIPlugins()...)
	fl.StringVar(&f.binary, "binary", "./build/all_reduce_perf", "nccl-tests binary, the same path on every host")
	fl.StringVar(&f.socketIfname, "socket-ifname", "eth0", "interface for NCCL bootstrap and MPI TCP traffic (\"\" for none)")
	fl.StringArrayVarP(&f.env, "env", "x", nil, "NAME=VALUE given to every rank (repeatable); NAME alone forwards it")
	fl.StringArrayVar(&f.launcherArgs, "launcher-arg", nil, "extra launcher argument, before the binary (repeatable)")
	fl.BoolVar(&f.oversubscribe, "oversubscribe", false, "mpirun --oversubscribe: more ranks than slots")
	fl.BoolVar(&f.noRoot, "no-allow-run-as-root", false, "leave out mpirun --allow-run-as-root")
	fl.Float64Var(&f.expect, "expect-busbw", 0, "expected bus bandwidth at the largest size, GB/s (exit 1 below it; default: the instance type's, see above)")
	fl.StringVar(&f.logFile, "log", "", "write the launcher's output to FILE, line by line (ranks' lines whole, tags removed); FILE appears when the run ends")
	fl.StringVar(&f.plot, "plot", "", "write bus bandwidth against size to FILE.svg")
	fl.DurationVar(&f.timeout, "timeout", 0, "end the run (every rank) after this long; 0 for no limit")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the command and exit")
	return c
}

func ncclCommand(f ncclRunFlags, testArgs []string) (nccl.Command, error) {
	c := nccl.DefaultCommand()
	c.Launcher = nccl.Launcher(f.launcher)
	c.Hosts = nil
	if f.hosts != "" {
		h, err := nccl.ParseHosts(f.hosts)
		if err != nil {
			return c, err
		}
		c.Hosts = h
	}
	c.Hostfile = f.hostfile
	c.NP = f.np
	c.RanksPerHost = f.perHost
	if !f.perHostSet {
		// -H h1:4 says 4 ranks there: the default 8 per host would ask for
		// more ranks than slots.
		c.UseHostSlots()
	}
	c.Binary = f.binary
	c.SrunMPI = f.srunMPI
	c.SocketIfname = f.socketIfname
	c.Oversubscribe = f.oversubscribe
	c.AllowRunAsRoot = !f.noRoot
	c.LauncherArgs = f.launcherArgs
	rankEnvAndTestArgs(&c, f.env, testArgs)
	_, err := c.Argv()
	return c, err
}

// ncclDryRun is `nccl run --dry-run --json` (docs/nccl.md): the launcher's
// argv, the same as one shell-quoted line, and the environment srun is
// given (mpirun carries it in -x; [] then).
type ncclDryRun struct {
	Argv    []string `json:"argv"`
	Command string   `json:"command"`
	Env     []string `json:"env"`
}

func runNCCL(ctx context.Context, g *globals, f ncclRunFlags, args []string) error {
	c, err := ncclCommand(f, args)
	if err != nil {
		return couldNotRun(err)
	}
	peerMem := ""
	if f.hostEnv {
		noNVLink, pm, err := applyHostEnv(ctx, g, f, &c)
		if err != nil {
			return couldNotRun(err)
		}
		f.noNVLink = f.noNVLink || noNVLink
		peerMem = pm
	} else if f.advice.graphFile != "" || f.advice.inventory != "" || f.advice.gdr != "auto" {
		return couldNotRun(errors.New("--graph-file, --gdr and --inventory go with --host-env"))
	}
	if f.dryRun {
		return printNCCLDryRun(g, c)
	}
	exp := nccl.Expectation{BusBWGBs: f.expect, NoNVLink: f.noNVLink, HostPeerMem: peerMem}
	if f.expect == 0 {
		// Asked before the run, whose --timeout may use up ctx.
		exp.Profile = instanceProfile(ctx, g)
	}
	var rawLog *atomicfile.File
	if f.logFile != "" {
		// The raw log is an output like any other (internal/atomicfile):
		// it appears at --log when the run ends, whatever its outcome.
		if rawLog, err = atomicfile.Create(f.logFile, 0o644); err != nil {
			return couldNotRun(fmt.Errorf("raw log: %w", err))
		}
		defer rawLog.Close()
	}
	run, live, err := launchNCCL(ctx, g, f, c, rawLog)
	if err != nil && !errors.Is(err, nccl.ErrCancelled) {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("%w (install Open MPI or Slurm, or give --launcher)", err)
		}
		return couldNotRun(err)
	}
	rep := nccl.NewRunReport(run, exp)
	if f.plot != "" {
		plotNCCLRun(g, f.plot, rep)
	}
	if g.json {
		if err := render.JSON(g.stdout, rep); err != nil {
			return couldNotRun(err)
		}
	} else {
		printNCCLReport(g, rep, live)
	}
	if run.Cancelled {
		return couldNotRun(err)
	}
	return exitCode(severityExit(rep.Status))
}

// launchNCCL runs c under --timeout, its raw log into rawLog (nil: none;
// committed whatever the outcome), its rows shown as they arrive where
// they can be (live), after the environment conflicts' warnings.
func launchNCCL(ctx context.Context, g *globals, f ncclRunFlags, c nccl.Command, rawLog *atomicfile.File) (run *nccl.RunResult, live bool, err error) {
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	opts := nccl.RunOptions{}
	if rawLog != nil {
		opts.Log = rawLog
	}
	live = showNCCLRows(g, c, &opts)
	for _, w := range c.EnvConflicts(os.Environ()) {
		fmt.Fprintln(g.stderr, "erdmakit: warning:", w)
	}
	run, err = nccl.Run(ctx, c, opts)
	if rawLog != nil {
		if cerr := rawLog.Commit(); cerr != nil {
			fmt.Fprintln(g.stderr, "erdmakit: raw log:", cerr)
		}
	}
	return run, live, err
}

// printNCCLDryRun is `nccl run --dry-run`: the launcher's command line
// (shell-quoted) and srun's environment, or ncclDryRun with --json.
func printNCCLDryRun(g *globals, c nccl.Command) error {
	if g.json {
		argv, _ := c.Argv() // ncclCommand checked it
		env := c.Environ()
		if env == nil {
			env = []string{}
		}
		if err := render.JSON(g.stdout, ncclDryRun{Argv: argv, Command: c.String(), Env: env}); err != nil {
			return couldNotRun(err)
		}
		return nil
	}
	fmt.Fprintln(g.stdout, c)
	if env := c.Environ(); len(env) > 0 {
		fmt.Fprintln(g.stdout, "# with, in srun's environment:", strings.Join(env, " "))
	}
	return nil
}

// showNCCLRows sets opts to print rows as they finish: on stdout when it
// is a terminal (live: the table is then not printed again), else as
// progress on stderr when that is a terminal; -v sends every line to
// stderr. It reports live.
func showNCCLRows(g *globals, c nccl.Command, opts *nccl.RunOptions) bool {
	live := !g.json && render.IsTerminal(g.stdout)
	progress := g.stdout
	if !live && render.IsTerminal(g.stderr) && !g.verbose {
		progress = g.stderr
	}
	if live || progress == g.stderr {
		fmt.Fprintln(progress, "running:", c)
		header := false
		opts.OnRow = func(r nccl.Row) {
			if !header {
				header = true
				fmt.Fprintln(progress, report.NCCLLiveHeader)
			}
			fmt.Fprintln(progress, report.NCCLLiveRow(r))
		}
	}
	if g.verbose {
		opts.OnLine = func(l string) { fmt.Fprintln(g.stderr, l) }
	}
	return live
}

// plotNCCLRun writes --plot, the bus bandwidth chart; a failure is said on
// stderr and does not change the verdict.
func plotNCCLRun(g *globals, path string, rep *nccl.RunReport) {
	if err := writeSVG(path, func(w io.Writer) error {
		title := rep.Collective
		if rep.Ranks > 0 {
			title += fmt.Sprintf(", %d ranks on %d hosts", rep.Ranks, rep.Hosts)
		}
		return plot.BusBW(w, rep.TestResult, title, rep.ExpectBusBWGBs)
	}); err != nil {
		fmt.Fprintln(g.stderr, "erdmakit: plot:", err)
	}
}

// applyHostEnv gives c the NCCL environment advised for this host, with
// the advice's warnings on stderr, and says whether NVML saw no NVLink
// between the host's GPUs and which peer-memory module it has
// (nccl.HostPeerMem).
func applyHostEnv(ctx context.Context, g *globals, f ncclRunFlags, c *nccl.Command) (bool, string, error) {
	f.advice.socketIfname = ""
	if f.socketIfnameSet {
		f.advice.socketIfname = f.socketIfname
	}
	a, inv, err := hostEnvAdvice(ctx, g, f.advice)
	if err != nil {
		return false, "", fmt.Errorf("--host-env: %w", err)
	}
	for _, w := range a.Warnings {
		fmt.Fprintln(g.stderr, "nccl env warning:", w)
	}
	for _, n := range a.Notes {
		fmt.Fprintln(g.stderr, "nccl env note:", n)
	}
	keep := c.SocketIfname
	if err := c.ApplyAdvice(a); err != nil {
		return false, "", err
	}
	if f.socketIfnameSet {
		c.SocketIfname = keep
	}
	if _, err := c.Argv(); err != nil {
		return false, "", err
	}
	return inv.GPU != nil && inv.GPU.NVLink == "no", nccl.HostPeerMem(inv), nil
}

// instanceProfile is the instance profile of the host at --root (nil:
// unknown): nccl run and fleet prove judge bus bandwidth by it when
// --expect-busbw is not given (nccl.Expectation.Profile).
func instanceProfile(ctx context.Context, g *globals) *erdma.Profile {
	h, closer, err := erdma.OpenHost(ctx, g.root)
	if err != nil {
		return nil
	}
	defer closer.Close()
	p, _ := doctor.InstanceProfile(ctx, h, doctor.DefaultOptions())
	return p
}

func printNCCLReport(g *globals, rep *nccl.RunReport, rowsShown bool) {
	_ = report.WriteNCCLRunTable(g.stdout, rep, report.TableOptions{Color: g.colorOn(g.stdout), RowsShown: rowsShown})
}

type ncclEnvFlags struct {
	format, inventory, version, socketIfname, gdr, graphFile string
}

func newNCCLEnvCmd(g *globals) *cobra.Command {
	var f ncclEnvFlags
	c := &cobra.Command{
		Use:   "env",
		Short: "Print the NCCL environment this host should use, derived from its eRDMA inventory",
		Long: "Derives NCCL_IB_HCA (the eRDMA devices with an ACTIVE port), NCCL_SOCKET_IFNAME, NCCL_IB_GID_INDEX\n" +
			"(or -1 with NCCL_IB_ADDR_FAMILY/NCCL_IB_ROCE_VERSION_NUM/NCCL_IB_ADDR_RANGE when the NICs disagree) and\n" +
			"NCCL_NET_GDR_LEVEL=SYS (GPUDirect RDMA ready, GPU<->NIC distance SYS), each with its reason, and warns\n" +
			"about NCCL versions that crash on eRDMA and a low memlock limit. --format shell (export lines, the\n" +
			"default), mpirun (-x arguments) or --json. Exit 0, 1 with warnings, 3 when the host cannot be read.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runNCCLEnv(cmd.Context(), g, f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.format, "format", "shell", "shell (export lines), mpirun (-x NAME=VALUE) or json (the same as --json)")
	fl.StringVar(&f.inventory, "inventory", "", "read the inventory from FILE (erdmakit devices --json) instead of --root")
	fl.StringVar(&f.version, "nccl-version", "", "the NCCL version in use (default: libnccl.so.2.X.Y and nvidia_nccl wheels under --root)")
	fl.StringVar(&f.socketIfname, "socket-ifname", "", "the bootstrap interface (default: eth0, else the first interface up with IPv4)")
	fl.StringVar(&f.gdr, "gdr", "auto", "auto, on or off: whether to advise NCCL_NET_GDR_LEVEL=SYS")
	completeValues(c, "format", "shell", "mpirun", "json")
	completeValues(c, "gdr", gdrModes()...)
	fl.StringVar(&f.graphFile, "graph-file", "", "with two or more ACTIVE eRDMA devices: write the NCCL graph giving each NIC a channel to PATH and export NCCL_GRAPH_FILE=PATH (copy it to the same path on every host)")
	return c
}

func runNCCLEnv(ctx context.Context, g *globals, f ncclEnvFlags) error {
	switch {
	case f.format == "json": // as doctor --format json: the same as --json
		g.json = true
	case g.json && f.format == "mpirun":
		return couldNotRun(fmt.Errorf("--json and --format %s contradict each other", f.format))
	case f.format != "shell" && f.format != "mpirun":
		return couldNotRun(fmt.Errorf("--format %q: want shell, mpirun or json", f.format))
	}
	a, _, err := hostEnvAdvice(ctx, g, f)
	if err != nil {
		return couldNotRun(err)
	}
	switch {
	case g.json:
		if err := render.JSON(g.stdout, a); err != nil {
			return couldNotRun(err)
		}
	case f.format == "mpirun":
		for _, w := range a.Warnings {
			fmt.Fprintln(g.stderr, "warning:", w)
		}
		for _, n := range a.Notes {
			fmt.Fprintln(g.stderr, "note:", n)
		}
		fmt.Fprintln(g.stdout, nccl.ShellJoin(a.MPIRunArgs()))
	default:
		fmt.Fprint(g.stdout, a.Shell())
	}
	if len(a.Warnings) > 0 {
		return exitCode(ExitWarn)
	}
	return nil
}

// hostEnvAdvice reads the host (or --inventory) and advises its NCCL
// environment, writing the graph file when one is advised.
func hostEnvAdvice(ctx context.Context, g *globals, f ncclEnvFlags) (*nccl.EnvAdvice, *erdma.Inventory, error) {
	opts := nccl.EnvOptions{SocketIfname: f.socketIfname, GraphFile: f.graphFile}
	switch f.gdr {
	case "auto", "":
	case "on":
		opts.GDR = nccl.GDROn
	case "off":
		opts.GDR = nccl.GDROff
	default:
		return nil, nil, fmt.Errorf("--gdr %q: want auto, on or off", f.gdr)
	}
	h, closer, err := erdma.OpenHost(ctx, g.root)
	if err != nil {
		return nil, nil, err
	}
	defer closer.Close()
	var inv *erdma.Inventory
	if f.inventory != "" {
		if inv, err = readInventoryFile(ctx, f.inventory); err != nil {
			return nil, nil, err
		}
	}
	if f.version != "" {
		opts.NCCL = []nccl.NCCLInstall{{Version: f.version, Path: "--nccl-version"}}
	}
	a, inv, err := doctor.NCCLEnv(ctx, h, inv, doctor.Options{Verbs: verbsprobe.Live{}}, opts)
	if err != nil {
		return nil, nil, err
	}
	if f.inventory == "" {
		for _, e := range inv.Errors {
			slog.Warn("nccl env: read error", "err", e)
		}
	}
	if _, ok := a.Get("NCCL_GRAPH_FILE"); ok && a.Graph != nil {
		if err := a.Graph.WriteFile(f.graphFile); err != nil {
			return nil, nil, err
		}
	}
	return a, inv, nil
}

// maxInventoryFile bounds an --inventory file: a host's inventory JSON is
// tens of KiB.
const maxInventoryFile = 16 << 20

// readInventoryFile reads the JSON of `erdmakit devices --json` (a FIFO
// with no writer gives up on Ctrl-C).
func readInventoryFile(ctx context.Context, path string) (*erdma.Inventory, error) {
	b, err := ctxio.ReadFile(ctx, path, maxInventoryFile)
	if err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	var inv erdma.Inventory
	if err := json.Unmarshal(b, &inv); err != nil {
		return nil, fmt.Errorf("inventory %s: not the JSON of erdmakit devices --json: %w", path, err)
	}
	return &inv, nil
}

// rankEnvAndTestArgs gives c the -x flags (NAME=VALUE set in every rank,
// NAME alone forwarded) and the nccl-tests flags after --, as nccl run and
// fleet prove take them.
func rankEnvAndTestArgs(c *nccl.Command, env, testArgs []string) {
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			c.Forward = append(c.Forward, name)
			continue
		}
		c.Env = append(c.Env, nccl.Var{Name: name, Value: value})
	}
	if len(testArgs) > 0 {
		c.TestArgs = testArgs
	}
}
