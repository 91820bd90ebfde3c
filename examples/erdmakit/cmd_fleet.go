package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/render"
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

// resolve finds this rank and the rendezvous address.
func (f *fleetFlags) resolve() (fleet.Rank, string, fleet.Options, error) {
	me, err := fleet.ResolveRank(f.rank, f.size, os.Getenv)
	if err != nil {
		return me, "", fleet.Options{}, err
	}
	addr, err := fleet.RendezvousAddr(f.rendezvous, os.Getenv)
	if err != nil {
		return me, "", fleet.Options{}, err
	}
	host, _ := os.Hostname()
	secret, _ := fleet.JobSecret(os.Getenv)
	return me, addr, fleet.Options{Join: f.join, Message: f.msg, Hostname: host, Secret: secret}, nil
}

func newFleetCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "fleet",
		Short: "Run erdmakit on every host of an mpirun or srun job and gather one report",
	}
	c.AddCommand(newFleetDoctorCmd(g))
	return c
}

func newFleetDoctorCmd(g *globals) *cobra.Command {
	var ff fleetFlags
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Every rank runs the doctor on its host; rank 0 prints hosts by status and the checks that differ",
		Example: `  mpirun --allow-run-as-root -np 16 -npernode 1 -H gpu001,gpu002,... erdmakit fleet doctor --rendezvous gpu001
  srun -N 16 --ntasks-per-node=1 erdmakit fleet doctor`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			me, addr, opt, err := ff.resolve()
			if err != nil {
				return &exitError{code: ExitUnknown, err: err}
			}
			rep, err := fleet.RunDoctor(cmd.Context(), me, addr, func(ctx context.Context) (*erdma.Report, error) {
				return runDoctorOn(ctx, g.root, defaultDoctorFlags().options(), nil)
			}, opt)
			if err != nil {
				return &exitError{code: ExitUnknown, err: err}
			}
			if rep == nil { // not rank 0: rank 0 reports
				return nil
			}
			if g.json {
				if err := render.JSON(g.stdout, rep); err != nil {
					return err
				}
			} else if err := writeFleetReport(g, rep); err != nil {
				return err
			}
			return exitCode(severityExit(rep.Status))
		},
	}
	ff.add(c)
	return c
}

func writeFleetReport(g *globals, rep *fleet.FleetReport) error {
	t := render.NewTable("RANK", "HOST", "STATUS", "PROBLEMS")
	t.Color, t.SeverityColumn = g.colorOn(g.stdout), 2
	for _, h := range rep.Hosts {
		probs := strings.Join(h.Problems, ",")
		if h.Error != "" {
			probs = h.Error
		}
		t.Add(fmt.Sprint(h.Rank), h.Host, string(h.Status), probs)
	}
	if err := t.Write(g.stdout); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "\n%d hosts:", rep.Size)
	for _, s := range []health.Severity{health.OK, health.Warn, health.Fail, fleet.Errored, fleet.Missing, fleet.NotReached} {
		if n := len(rep.ByStatus[s]); n > 0 {
			fmt.Fprintf(g.stdout, " %d %s", n, s)
		}
	}
	fmt.Fprintln(g.stdout)
	if len(rep.Differences) > 0 {
		fmt.Fprintln(g.stdout, "\nChecks that differ between hosts (the rarest result first):")
		d := render.NewTable("CHECK", "SEVERITY", "HOSTS", "SUMMARY")
		d.Color, d.SeverityColumn = g.colorOn(g.stdout), 1
		for _, diff := range rep.Differences {
			for _, gr := range diff.Groups {
				d.Add(diff.ID, string(gr.Severity), hostList(gr.Hosts, 6), gr.Summary)
			}
		}
		if err := d.Write(g.stdout); err != nil {
			return err
		}
	}
	for _, e := range rep.Errors {
		fmt.Fprintln(g.stdout, "rendezvous:", e)
	}
	return nil
}

// hostList shortens a long host list: "a, b, c and 12 more".
func hostList(hosts []string, max int) string {
	if len(hosts) <= max {
		return strings.Join(hosts, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(hosts[:max], ", "), len(hosts)-max)
}
