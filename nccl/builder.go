// Package nccl runs nccl-tests over eRDMA and says what NCCL really did:
// a command builder for mpirun and srun (argv, never a shell line), a runner
// that streams the output and classifies launcher failures, the NCCL
// environment a host should use, and a diagnosis of a run's results.
package nccl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Launcher is the program that starts the ranks.
type Launcher string

const (
	// LauncherMPIRun is Open MPI's mpirun (the guide's launcher).
	LauncherMPIRun Launcher = "mpirun"
	// LauncherSrun is Slurm's srun with PMIx.
	LauncherSrun Launcher = "srun"
)

// ErrBadCommand is wrapped by every error of Command.Argv.
var ErrBadCommand = errors.New("invalid nccl-tests command")

// Host is one host of a run and the ranks (Open MPI "slots") it takes.
type Host struct {
	Name  string
	Slots int // 0: the command's RanksPerHost
}

// ParseHosts reads the -H form "host1:8,host2:8" (":N" optional).
func ParseHosts(s string) ([]Host, error) {
	var hosts []Host
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		name, slots, found := strings.Cut(f, ":")
		h := Host{Name: name}
		if name == "" {
			return nil, fmt.Errorf("%w: host %q has no name", ErrBadCommand, f)
		}
		if found {
			n, err := strconv.Atoi(slots)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("%w: host %q: slots must be a positive number", ErrBadCommand, f)
			}
			h.Slots = n
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("%w: no host in %q", ErrBadCommand, s)
	}
	return hosts, nil
}

// Var is one environment variable given to every rank.
type Var struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Command describes one nccl-tests run. DefaultCommand is the guide's line;
// change the fields that differ. Argv turns it into the launcher's argv.
type Command struct {
	Launcher Launcher
	// GraphOrder is the net dev order the graph file it passes was written
	// for (EnvAdvice.GraphOrder, set by ApplyAdvice): the run's diagnosis
	// checks it against the NCCL version that ran. "" when none.
	GraphOrder string
	// Program is the launcher's path; "" means Launcher's name on PATH.
	Program string
	// Hosts (the -H list) or Hostfile; exactly one of them for mpirun, and
	// for srun none means "what the allocation has".
	Hosts    []Host
	Hostfile string
	// RanksPerHost is -npernode (mpirun) or --ntasks-per-node (srun); 0
	// lets each host's Slots say how many ranks it takes.
	RanksPerHost int
	// NP is the total number of ranks; 0 means RanksPerHost x len(Hosts),
	// or the sum of the hosts' Slots when RanksPerHost is 0 (omitted with a
	// hostfile).
	NP int
	// AllowRunAsRoot adds --allow-run-as-root (mpirun).
	AllowRunAsRoot bool
	// Oversubscribe adds --oversubscribe (mpirun): more ranks than slots.
	Oversubscribe bool
	// TagOutput adds --tag-output (mpirun): mpirun forwards the ranks'
	// output in 4 KiB pieces, not lines, so one rank's line can arrive cut
	// by another's; tagged, Run puts every line back together.
	TagOutput bool
	// SocketIfname is the interface for Open MPI's TCP traffic
	// (-mca btl_tcp_if_include and oob_tcp_if_include) and NCCL's bootstrap (NCCL_SOCKET_IFNAME,
	// unless Env sets it); "" for neither.
	SocketIfname string
	// Env is given to every rank with its value (-x NAME=VALUE).
	Env []Var
	// Forward names variables copied from the launcher's environment
	// (-x NAME), e.g. LD_LIBRARY_PATH and PATH.
	Forward []string
	// SrunMPI is srun's --mpi plugin; "" means pmix.
	SrunMPI string
	// LauncherArgs are extra launcher arguments, placed before the binary.
	LauncherArgs []string
	// Binary is the nccl-tests program: "./build/all_reduce_perf".
	Binary string
	// TestArgs are the binary's flags: "-b 4M -e 4M -f 2 -g 1 -t 1 -n 20".
	TestArgs []string
}

// DefaultCommand returns the guide's command: 2 hosts x 8 ranks, all_reduce
// at 4 MiB, NCCL_DEBUG=INFO, bootstrap and MPI traffic on eth0; plus
// --tag-output, so that no rank's line reaches the parser cut.
func DefaultCommand() Command {
	return Command{
		Launcher:       LauncherMPIRun,
		Hosts:          []Host{{Name: "host1", Slots: 8}, {Name: "host2", Slots: 8}},
		RanksPerHost:   8,
		AllowRunAsRoot: true,
		TagOutput:      true,
		SocketIfname:   "eth0",
		Env:            []Var{{Name: "NCCL_DEBUG", Value: "INFO"}},
		Forward:        []string{"LD_LIBRARY_PATH", "PATH"},
		Binary:         "./build/all_reduce_perf",
		TestArgs:       strings.Fields("-b 4M -e 4M -f 2 -g 1 -t 1 -n 20"),
	}
}

// ValidSrunMPI checks an srun --mpi value: Slurm's plugin names (none, pmi2,
// pmix, pmix_vN, cray_shasta); "" is srun's default here, pmix. Which of them
// a site has is what `srun --mpi=list` prints.
func ValidSrunMPI(t string) error {
	switch t {
	case "", "none", "pmi2", "pmix", "cray_shasta":
		return nil
	}
	if v, ok := strings.CutPrefix(t, "pmix_v"); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 && n < 100 {
			return nil
		}
	}
	return fmt.Errorf("%w: srun --mpi %q: want none, pmi2, pmix, pmix_vN or cray_shasta (srun --mpi=list shows what this Slurm has)", ErrBadCommand, t)
}

// UseHostSlots lets the slots given with every host (-H a:4,b:4) decide the
// ranks per host instead of RanksPerHost: the same count on every host
// becomes RanksPerHost, different counts leave it 0 (each host takes its
// slots). Without slots on every host it changes nothing.
func (c *Command) UseHostSlots() {
	if len(c.Hosts) == 0 {
		return
	}
	n := c.Hosts[0].Slots
	for _, h := range c.Hosts {
		if h.Slots <= 0 {
			return
		}
		if h.Slots != n {
			n = 0
		}
	}
	c.RanksPerHost = n
}

// Ranks is the number of ranks the command starts, 0 when it is left to
// the launcher (a hostfile or a Slurm allocation without NP).
func (c Command) Ranks() int {
	if c.NP > 0 {
		return c.NP
	}
	if len(c.Hosts) > 0 && c.RanksPerHost > 0 {
		return c.RanksPerHost * len(c.Hosts)
	}
	n := 0
	for _, h := range c.Hosts {
		if h.Slots <= 0 {
			return 0
		}
		n += h.Slots
	}
	return n
}

// HostOfRank returns the host rank r runs on when the command fixes it
// (Hosts with RanksPerHost: ranks fill hosts in order), "" otherwise.
func (c Command) HostOfRank(r int) string {
	if r < 0 {
		return ""
	}
	if c.RanksPerHost <= 0 {
		if c.Ranks() == 0 {
			return ""
		}
		for _, h := range c.Hosts {
			if r < h.Slots {
				return h.Name
			}
			r -= h.Slots
		}
		return ""
	}
	i := r / c.RanksPerHost
	if i >= len(c.Hosts) {
		return ""
	}
	return c.Hosts[i].Name
}

// vars is Env with NCCL_SOCKET_IFNAME first when SocketIfname sets it.
func (c Command) vars() []Var {
	var out []Var
	if c.SocketIfname != "" && !c.hasEnv("NCCL_SOCKET_IFNAME") {
		out = append(out, Var{Name: "NCCL_SOCKET_IFNAME", Value: c.SocketIfname})
	}
	return append(out, c.Env...)
}

// ApplyAdvice gives every rank what a host's EnvAdvice recommends (the
// variables of `erdmakit nccl env`, the graph file among them), except the
// variables c.Env already sets: those were chosen by hand. The advised
// NCCL_SOCKET_IFNAME becomes c.SocketIfname, so Open MPI's TCP traffic
// takes the same interface. A graph file is refused unless the ranks per
// host equal its GPU count: NCCL fails a communicator whose GPUs the graph
// does not name ("XML Import Channel : dev N not found").
func (c *Command) ApplyAdvice(a *EnvAdvice) error {
	if a == nil {
		return nil
	}
	if path, ok := a.Get("NCCL_GRAPH_FILE"); ok && !c.hasEnv("NCCL_GRAPH_FILE") && a.Graph != nil {
		if n := a.Graph.GPUCount(); c.RanksPerHost > 0 && c.RanksPerHost != n {
			return fmt.Errorf("%w: the graph file %s puts %d GPUs in each channel but the command runs %d ranks per host: "+
				"run %d ranks per host or leave the graph out", ErrBadCommand, path, n, c.RanksPerHost, n)
		}
		c.GraphOrder = a.GraphOrder
	}
	for _, v := range a.Vars {
		if c.hasEnv(v.Name) {
			continue
		}
		if v.Name == "NCCL_SOCKET_IFNAME" {
			c.SocketIfname = v.Value
			continue
		}
		c.Env = append(c.Env, Var{Name: v.Name, Value: v.Value})
	}
	return nil
}

// Vars returns every variable the command gives each rank with a value,
// NCCL_SOCKET_IFNAME first when SocketIfname supplies it.
func (c Command) Vars() []Var { return c.vars() }

func (c Command) hasEnv(name string) bool {
	for _, v := range c.Env {
		if v.Name == name {
			return true
		}
	}
	return false
}

func (c Command) validate() error {
	if c.Binary == "" {
		return fmt.Errorf("%w: no nccl-tests binary", ErrBadCommand)
	}
	if c.Hostfile != "" && len(c.Hosts) > 0 {
		return fmt.Errorf("%w: hosts and a hostfile given; use one", ErrBadCommand)
	}
	if c.RanksPerHost < 0 || c.NP < 0 {
		return fmt.Errorf("%w: negative rank count", ErrBadCommand)
	}
	if err := ValidSrunMPI(c.SrunMPI); c.Launcher == LauncherSrun && err != nil {
		return err
	}
	for _, h := range c.Hosts {
		if h.Name == "" || strings.ContainsAny(h.Name, ", :") {
			return fmt.Errorf("%w: bad host name %q", ErrBadCommand, h.Name)
		}
	}
	for _, v := range c.vars() {
		if !validName(v.Name) {
			return fmt.Errorf("%w: bad variable name %q", ErrBadCommand, v.Name)
		}
	}
	for _, n := range c.Forward {
		if !validName(n) {
			return fmt.Errorf("%w: bad variable name %q", ErrBadCommand, n)
		}
	}
	return nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Argv returns the launcher's argv, argv[0] being the program to exec.
func (c Command) Argv() ([]string, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	switch c.Launcher {
	case LauncherMPIRun, "":
		return c.mpirunArgv()
	case LauncherSrun:
		return c.srunArgv()
	}
	return nil, fmt.Errorf("%w: unknown launcher %q (mpirun or srun)", ErrBadCommand, c.Launcher)
}

func (c Command) program(def string) string {
	if c.Program != "" {
		return c.Program
	}
	return def
}

func (c Command) mpirunArgv() ([]string, error) {
	if len(c.Hosts) == 0 && c.Hostfile == "" {
		return nil, fmt.Errorf("%w: mpirun needs hosts or a hostfile", ErrBadCommand)
	}
	a := []string{c.program("mpirun")}
	if c.AllowRunAsRoot {
		a = append(a, "--allow-run-as-root")
	}
	if n := c.Ranks(); n > 0 {
		a = append(a, "-np", strconv.Itoa(n))
	}
	if c.RanksPerHost > 0 {
		a = append(a, "-npernode", strconv.Itoa(c.RanksPerHost))
	}
	if c.Hostfile != "" {
		a = append(a, "--hostfile", c.Hostfile)
	} else {
		hs := make([]string, len(c.Hosts))
		for i, h := range c.Hosts {
			slots := h.Slots
			if slots == 0 {
				slots = c.RanksPerHost
			}
			hs[i] = h.Name
			if slots > 0 {
				hs[i] += ":" + strconv.Itoa(slots)
			}
		}
		a = append(a, "-H", strings.Join(hs, ","))
	}
	if c.Oversubscribe {
		a = append(a, "--oversubscribe")
	}
	a = append(a, "--bind-to", "none")
	if c.TagOutput {
		a = append(a, "--tag-output")
	}
	if c.SocketIfname != "" {
		// Both of Open MPI's TCP paths on the same interface: the byte
		// transfer layer and the daemons' out-of-band channel (the
		// erdma-controller runbook's line), else ORTE may pick an eRDMA
		// netdev or a container bridge for its control traffic.
		a = append(a, "-mca", "btl_tcp_if_include", c.SocketIfname, "-mca", "oob_tcp_if_include", c.SocketIfname)
	}
	for _, v := range c.vars() {
		a = append(a, "-x", v.Name+"="+v.Value)
	}
	for _, n := range c.Forward {
		a = append(a, "-x", n)
	}
	a = append(a, c.LauncherArgs...)
	a = append(a, c.Binary)
	return append(a, c.TestArgs...), nil
}

func (c Command) srunArgv() ([]string, error) {
	a := []string{c.program("srun")}
	if len(c.Hosts) > 0 {
		a = append(a, "--nodes", strconv.Itoa(len(c.Hosts)))
	}
	if c.RanksPerHost > 0 {
		a = append(a, "--ntasks-per-node", strconv.Itoa(c.RanksPerHost))
	}
	if c.NP > 0 {
		a = append(a, "--ntasks", strconv.Itoa(c.NP))
	} else if c.RanksPerHost == 0 && c.Ranks() > 0 {
		a = append(a, "--ntasks", strconv.Itoa(c.Ranks()))
	}
	mpi := c.SrunMPI
	if mpi == "" {
		mpi = "pmix"
	}
	a = append(a, "--mpi="+mpi)
	if c.Hostfile != "" {
		// srun reads a node list from a file when the argument holds a '/'.
		f := c.Hostfile
		if !strings.Contains(f, "/") {
			f = "./" + f
		}
		a = append(a, "--nodelist", f)
	} else if len(c.Hosts) > 0 {
		hs := make([]string, len(c.Hosts))
		for i, h := range c.Hosts {
			hs[i] = h.Name
		}
		a = append(a, "--nodelist", strings.Join(hs, ","))
	}
	export := []string{"ALL"}
	for _, v := range c.vars() {
		if strings.Contains(v.Value, ",") {
			continue // carried by Environ: --export cannot quote a comma
		}
		export = append(export, v.Name+"="+v.Value)
	}
	a = append(a, "--export="+strings.Join(export, ","))
	a = append(a, c.LauncherArgs...)
	a = append(a, c.Binary)
	return append(a, c.TestArgs...), nil
}

// Environ returns the variables the launcher process itself must have, as
// NAME=VALUE: for srun, every variable the command gives the ranks. With
// --export=ALL,NAME=VAL a variable already in srun's own environment wins
// over the NAME=VAL (srun(1), --export), so a stale NCCL_IB_HCA in the
// caller's shell would silently replace erdmakit's: set in srun's
// environment, erdmakit's values arrive (and a value holding a comma, which
// --export cannot carry, too). Nil for mpirun, whose -x NAME=VALUE wins.
func (c Command) Environ() []string {
	if c.Launcher != LauncherSrun {
		return nil
	}
	var env []string
	for _, v := range c.vars() {
		env = append(env, v.Name+"="+v.Value)
	}
	return env
}

// EnvConflicts warns about each NCCL variable the caller's environment
// (environ, as os.Environ) sets to another value than the one c gives the
// ranks: c's value is the one the ranks get, but the caller's shell says
// otherwise, which is worth knowing (a stale NCCL_IB_HCA, a debug level).
func (c Command) EnvConflicts(environ []string) []string {
	have := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			have[k] = v
		}
	}
	var out []string
	for _, v := range c.vars() {
		old, ok := have[v.Name]
		if !ok || old == v.Value || !strings.HasPrefix(v.Name, "NCCL_") {
			continue
		}
		out = append(out, fmt.Sprintf("%s=%s in the caller's environment: the ranks get %s=%s (erdmakit's); unset it "+
			"or pass -x %s=VALUE to choose", v.Name, old, v.Name, v.Value, v.Name))
	}
	return out
}

// String is the argv joined with spaces, for display (quoting what a shell
// would split); an invalid command shows its error.
func (c Command) String() string {
	argv, err := c.Argv()
	if err != nil {
		return err.Error()
	}
	return ShellJoin(argv)
}

// ShellJoin quotes argv for display as one shell line.
func ShellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, s := range argv {
		q[i] = shellQuote(s)
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
