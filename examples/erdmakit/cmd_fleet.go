package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/kube"
	"github.com/erdmakit/erdmakit/report"
	"github.com/spf13/cobra"
)

// fleetFlags are the flags every fleet-wide command shares.
type fleetFlags struct {
	rendezvous string
	rank, size int
	join, msg  time.Duration
}

func (f *fleetFlags) add(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.rendezvous, "rendezvous", "", "HOST[:PORT] where rank 0 listens (default: $ERDMAKIT_RENDEZVOUS, $MASTER_ADDR, the first host of $SLURM_JOB_NODELIST)")
	fl.IntVar(&f.rank, "rank", -1, "this process's rank (default: from mpirun/srun's environment)")
	fl.IntVar(&f.size, "ranks", 0, "number of ranks (default: from mpirun/srun's environment)")
	fl.DurationVar(&f.join, "join-timeout", 60*time.Second, "how long ranks wait to meet; a host not there by then is reported missing")
	fl.DurationVar(&f.msg, "timeout", 2*time.Minute, "how long rank 0 waits for any one host's answer; a silent host is reported hung")
}

// resolve finds this rank, the rendezvous address and the job key; rank 0
// says on stderr when the ranks will not be authenticated.
func (f *fleetFlags) resolve(ctx context.Context, g *globals) (fleet.Rank, string, fleet.Options, error) {
	var me fleet.Rank
	var addr string
	var err error
	if f.rank < 0 && f.size <= 0 && kube.InIndexedJob(os.Getenv) && !hasLauncher() {
		me, addr, err = f.kubeRank(ctx)
	} else {
		me, err = fleet.ResolveRank(f.rank, f.size, os.Getenv)
		if err == nil {
			addr, err = fleet.RendezvousAddr(f.rendezvous, os.Getenv)
		}
	}
	if err != nil {
		return me, "", fleet.Options{}, err
	}
	host, _ := os.Hostname()
	secret, source := fleet.JobSecret(os.Getenv)
	auth := source == fleet.SecretEnv
	if !auth && me.Rank == 0 && me.Size > 1 {
		fmt.Fprintf(g.stderr, "erdmakit: %s is not set: the ranks are not authenticated, and anyone who can reach %s could pose as one (see docs/fleet.md, Reliability and security)\n", fleet.SecretEnv, addr)
	}
	return me, addr, fleet.Options{Join: f.join, Message: f.msg, Hostname: host, Secret: secret, Authenticated: auth}, nil
}

func newFleetCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "fleet",
		Short: "Run erdmakit on every host of an mpirun or srun job and gather one report",
	}
	c.AddCommand(newFleetDoctorCmd(g), newFleetProveCmd(g))
	return c
}

func newFleetDoctorCmd(g *globals) *cobra.Command {
	var ff fleetFlags
	var cloud eri.CloudOptions
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Every rank runs the doctor on its host; rank 0 prints hosts by status and the checks that differ",
		Example: `  export ERDMAKIT_FLEET_SECRET=$(head -c 32 /dev/urandom | base64)   # authenticates the ranks
  mpirun --allow-run-as-root -x ERDMAKIT_FLEET_SECRET -np 16 -npernode 1 -H gpu001,gpu002,... erdmakit fleet doctor --rendezvous gpu001
  srun -N 16 --ntasks-per-node=1 erdmakit fleet doctor`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			me, addr, opt, err := ff.resolve(cmd.Context(), g)
			if err != nil {
				return couldNotRun(err)
			}
			cl, err := fleetCloud(&cloud)
			if err != nil {
				return couldNotRun(err)
			}
			rep, err := fleet.RunDoctor(cmd.Context(), me, addr, func(ctx context.Context) (*erdma.Report, error) {
				return runDoctorOn(ctx, g.root, defaultDoctorFlags().options(), cl)
			}, opt)
			if err != nil {
				return couldNotRun(err)
			}
			if rep == nil { // not rank 0: rank 0 reports
				return nil
			}
			return emit(g, rep, rep.Status, func() error { return report.WriteFleetTable(g.stdout, rep, g.tableOptions()) })
		},
	}
	ff.add(c)
	addFleetCloudFlags(c, &cloud)
	return c
}

// addFleetCloudFlags adds --cloud and --endpoint, the doctor's cloud checks
// on every rank (fleet doctor, fleet prove).
func addFleetCloudFlags(c *cobra.Command, cloud *eri.CloudOptions) {
	c.Flags().StringVar(&cloud.Mode, "cloud", eri.CloudOff, "the doctor's cloud checks on every rank (network-card-channel from the ECS API, eri-mode): off, auto or on; one API lookup per host per run")
	c.Flags().StringVar(&cloud.Endpoint, "endpoint", "", "with --cloud: ECS endpoint (default: $"+eri.EndpointEnv+", else the region's)")
	completeValues(c, "cloud", eri.CloudOff, eri.CloudAuto, eri.CloudOn)
}

// fleetCloud is the doctor's cloud options of a fleet rank: nil for off;
// each rank asks the API once for its own host.
func fleetCloud(cloud *eri.CloudOptions) (*eri.CloudOptions, error) {
	switch cloud.Mode {
	case eri.CloudOff:
		return nil, nil
	case eri.CloudAuto, eri.CloudOn:
		return cloud, nil
	}
	return nil, fmt.Errorf("--cloud %q: want auto, on or off", cloud.Mode)
}

// hasLauncher reports whether mpirun or srun launched this process.
func hasLauncher() bool {
	_, err := fleet.DiscoverRank(os.Getenv)
	return err == nil
}

// kubeRank is this pod's rank in an Indexed Job (docs/kubernetes.md): the
// rank from JOB_COMPLETION_INDEX, the size from the Job, rank 0's address
// from its pod through the API (no cluster DNS), waiting for it as long as
// --join-timeout; --rendezvous, when given, is used instead (its port
// always).
func (f *fleetFlags) kubeRank(ctx context.Context) (fleet.Rank, string, error) {
	cl, err := kube.InCluster()
	if err != nil {
		return fleet.Rank{}, "", err
	}
	jr, err := kube.JobRankOf(ctx, cl, os.Getenv, kube.ServiceAccountDir)
	if err != nil {
		return fleet.Rank{}, "", err
	}
	me, err := fleet.NewRank(jr.Rank, jr.Size, "kubernetes")
	if err != nil {
		return me, "", err
	}
	port := strconv.Itoa(fleet.DefaultPort)
	if f.rendezvous != "" {
		addr, err := fleet.RendezvousAddr(f.rendezvous, os.Getenv)
		return me, addr, err
	}
	wctx, cancel := context.WithTimeout(ctx, f.join)
	defer cancel()
	ip, err := kube.Rank0Addr(wctx, cl, jr, 2*time.Second)
	if err != nil {
		return me, "", err
	}
	return me, net.JoinHostPort(ip, port), nil
}
