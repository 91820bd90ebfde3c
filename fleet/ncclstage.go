package fleet

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/nccl"
)

// NCCLStageOptions tune NCCLStage.
type NCCLStageOptions struct {
	// Expect is the bus bandwidth expectation of the diagnosis.
	Expect nccl.Expectation
	// Timeout ends the run (every rank) after this long; 0 for 10 minutes.
	Timeout time.Duration
	// OnRow is called with each result row as it arrives (progress).
	OnRow func(nccl.Row)
	// Log receives the launcher's output (nccl.RunOptions.Log).
	Log io.Writer
	// Environ is the environment the job's rank 0 runs in (os.Environ()
	// when nil); LaunchEnviron removes the job's per-rank variables.
	Environ []string
	// Getenv reads the launcher's variables (os.Getenv when nil).
	Getenv func(string) string
}

// DefaultNCCLBinaries are the places fleet prove looks for nccl-tests'
// all_reduce_perf when none is given: PATH first. The slice is the
// caller's.
func DefaultNCCLBinaries() []string {
	return []string{"all_reduce_perf", "./build/all_reduce_perf", "./nccl-tests/build/all_reduce_perf", "/root/nccl-tests/build/all_reduce_perf"}
}

// FindNCCLBinary returns the first of candidates that exists (a name
// without '/' is looked up on PATH), or an error wrapping ErrSkipped that
// names where it looked.
func FindNCCLBinary(candidates []string) (string, error) {
	for _, c := range candidates {
		if !strings.Contains(c, "/") {
			if p, err := exec.LookPath(c); err == nil {
				return p, nil
			}
			continue
		}
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c, nil
		}
	}
	return "", fmt.Errorf("nccl-tests all_reduce_perf not found on rank 0 (%s; give --nccl-binary, the same path on every host): %w",
		strings.Join(candidates, ", "), ErrSkipped)
}

// JobLauncher is the launcher that started this job, for a run across
// its hosts: srun in a Slurm job, else mpirun.
func JobLauncher(me Rank, getenv func(string) string) nccl.Launcher {
	switch {
	case strings.HasPrefix(me.Launcher, "slurm"):
		return nccl.LauncherSrun
	case strings.HasPrefix(me.Launcher, "openmpi"):
		return nccl.LauncherMPIRun
	case getenv("SLURM_JOB_ID") != "":
		return nccl.LauncherSrun
	}
	return nccl.LauncherMPIRun
}

// slurmStepVars are the variables srun sets for a step's tasks: a second
// srun started from a task would take them as its own options (the step's
// task count, its CPU binding). The job's (SLURM_JOB_ID, its node list)
// stay, so that the new step runs in the same allocation.
var slurmStepVars = []string{"SLURM_STEP", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_TASK_PID",
	"SLURM_NTASKS", "SLURM_NPROCS", "SLURM_TASKS_PER_NODE", "SLURM_SRUN_COMM", "SLURM_CPU_BIND", "SLURM_DISTRIBUTION",
	"SLURM_LAUNCH_NODE_IPADDR", "SLURM_GTIDS", "SLURM_PRIO_PROCESS", "SLURM_UMASK", "SLURM_CPUS_PER_TASK", "SLURM_MPI_TYPE",
	"SLURM_TOPOLOGY_ADDR", "SLURM_STEPID", "SLURM_NNODES", "SLURM_NODELIST"}

// LaunchEnviron is environ without the per-rank variables of the job
// this process is a rank of, so that a launcher started from it begins a
// job of its own: Open MPI's (OMPI_*, PMIX_*, PMI_*, ORTE_*, OPAL_*; mpirun
// refuses to run in an mpirun rank: "mpirun does not support recursive
// calls") and a Slurm step's (SLURM_PROCID, SLURM_NTASKS, ...).
func LaunchEnviron(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if dropVar(name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func dropVar(name string) bool {
	for _, p := range []string{"OMPI_", "PMIX_", "PMI_", "ORTE_", "OPAL_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	for _, v := range slurmStepVars {
		if name == v || strings.HasPrefix(name, v+"_") {
			return true
		}
	}
	return false
}

// defaultRanksPerHost is nccl run's: the 8 GPUs of the eRDMA GPU types.
const defaultRanksPerHost = 8

// NCCLStage is fleet prove's NCCL run: c (launcher, binary, test flags,
// variables, ranks per host) run from rank 0 over the job's hosts, each
// named once in rank order with c.RanksPerHost ranks (0: one per GPU its
// doctor saw, else 8; c.Hosts, when set, wins), in an environment without
// the job's per-rank variables (LaunchEnviron). In a Slurm job srun starts
// a step of that job on as many of its nodes (--nodes, no --nodelist:
// Slurm's node names need not be host names), sharing the CPUs the fleet's
// step holds (--overlap). c.Binary not found, or the launcher not
// installed, skips the stage (ErrSkipped).
func NCCLStage(c nccl.Command, o NCCLStageOptions) NCCLFunc {
	return func(ctx context.Context, hosts []JobHost) (*nccl.RunReport, error) {
		getenv := o.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		bin, err := FindNCCLBinary([]string{c.Binary})
		if err != nil {
			return nil, err
		}
		c.Binary = bin
		prog := c.Program
		if prog == "" {
			prog = string(c.Launcher)
			if prog == "" {
				prog = string(nccl.LauncherMPIRun)
			}
		}
		if _, err := exec.LookPath(prog); err != nil {
			return nil, fmt.Errorf("the launcher %s is not installed on rank 0: %w", prog, ErrSkipped)
		}
		if len(c.Hosts) == 0 && c.Hostfile == "" {
			seen := map[string]bool{}
			for _, h := range hosts {
				if h.Host == "" || seen[h.Host] {
					continue
				}
				seen[h.Host] = true
				slots := c.RanksPerHost
				if slots <= 0 {
					slots = h.GPUs // one rank per GPU
				}
				if slots <= 0 {
					slots = defaultRanksPerHost
				}
				c.Hosts = append(c.Hosts, nccl.Host{Name: h.Host, Slots: slots})
			}
			c.UseHostSlots()
		}
		if c.Launcher == nccl.LauncherSrun && getenv("SLURM_JOB_ID") != "" {
			// A step of the job this rank belongs to, on as many of its
			// nodes as the job has hosts: Slurm's node names need not be
			// the host names the ranks gave, so no --nodelist. The new step
			// shares the CPUs the fleet's step holds (--overlap).
			if c.RanksPerHost <= 0 && len(c.Hosts) > 0 {
				c.RanksPerHost = c.Hosts[0].Slots
			}
			extra := []string{"--nodes", fmt.Sprint(max(1, len(c.Hosts)))}
			if !contains(c.LauncherArgs, "--overlap") {
				extra = append(extra, "--overlap")
			}
			c.Hosts, c.NP = nil, 0
			c.LauncherArgs = append(extra, c.LauncherArgs...)
		}
		timeout := o.Timeout
		if timeout <= 0 {
			timeout = 10 * time.Minute
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		environ := o.Environ
		if environ == nil {
			environ = os.Environ()
		}
		run, err := nccl.Run(ctx, c, nccl.RunOptions{Environ: LaunchEnviron(environ), OnRow: o.OnRow, Log: o.Log})
		if err != nil && run == nil {
			return nil, err
		}
		rep := nccl.NewRunReport(run, o.Expect)
		return rep, nil
	}
}
