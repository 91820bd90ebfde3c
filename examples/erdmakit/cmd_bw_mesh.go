package main

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/plot"
	"github.com/erdmakit/erdmakit/report"
	"github.com/spf13/cobra"
)

func newBwMeshCmd(g *globals) *cobra.Command {
	f := &bwFlags{}
	var ff fleetFlags
	var sf meshScheduleFlags
	c := &cobra.Command{
		Use:   "mesh",
		Short: "Pairwise write bandwidth between every pair of hosts of an mpirun/srun job; names a bad host or link",
		Long: `mesh runs one rank per host (under mpirun or srun). Rank 0 schedules a round-robin
tournament: every pair of hosts is tested exactly once (device i to device i, all
devices in parallel), N-1 rounds for N hosts, the pairs of a round in parallel.
Outliers (below 90% of --expect-gbps, or below 80% of the fleet median) get a second
pass against known-good hosts that tells a bad host from a bad link. Rank 0 prints
the matrix and the culprits; --plot draws the matrix as an SVG heat map.
Exit: 0 ok, 1 outliers that did not repeat, 2 a bad or dead host or a bad link, 3 could not run.`,
		Example: `  export ERDMAKIT_FLEET_SECRET=$(head -c 32 /dev/urandom | base64)   # authenticates the ranks
  mpirun --allow-run-as-root -x ERDMAKIT_FLEET_SECRET -np 8 -npernode 1 -H gpu001,...,gpu008 erdmakit bw mesh --rendezvous gpu001 -D 5s -q 16
  srun -N 8 --ntasks-per-node=1 erdmakit bw mesh --plot mesh.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.progress = false // the mesh's own progress goes to rank 0's stderr
			cfg, _, err := f.config(g)
			if err != nil {
				return couldNotRun(err)
			}
			me, addr, opt, err := ff.resolve(cmd.Context(), g)
			if err != nil {
				return couldNotRun(err)
			}
			links, closeAll, err := f.openLinks(cmd.Context(), g)
			if err != nil {
				return couldNotRun(err)
			}
			defer closeAll()
			w := &fleet.BwWorker{Links: links, Config: cfg}
			expect := 0.0
			if me.Rank == 0 {
				expect = f.expectation(cmd.Context(), g, "bw mesh", links, false)
			}
			mopt := fleet.MeshOptions{ExpectGbps: expect, Progress: func(round, rounds int, res []fleet.PairResult) {
				fmt.Fprintf(g.stderr, "bw mesh: round %d/%d done (%d pairs)\n", round, rounds, len(res))
			}}
			sf.apply(&mopt)
			rep, err := fleet.RunMeshJob(cmd.Context(), me, addr, w, f.port, opt, mopt)
			if err != nil {
				return couldNotRun(err)
			}
			if rep == nil { // not rank 0
				return nil
			}
			if f.plot != "" {
				if err := writeSVG(f.plot, func(wr io.Writer) error { return plot.Heatmap(wr, report.MeshOf(rep)) }); err != nil {
					fmt.Fprintln(g.stderr, "erdmakit:", err)
				}
			}
			return emit(g, rep, rep.Status, func() error { return report.WriteMeshTable(g.stdout, rep, g.tableOptions()) })
		},
	}
	f.add(c, true)
	c.Flags().Lookup("plot").Usage = "draw the pairwise Gbit/s matrix as an SVG heat map into this file"
	ff.add(c)
	sf.add(c)
	return c
}

// meshScheduleFlags choose the mesh's schedule (bw mesh, fleet prove).
type meshScheduleFlags struct {
	full      bool
	matchings int
	seed      int64
	timeout   time.Duration
}

func (f *meshScheduleFlags) add(c *cobra.Command) {
	fl := c.Flags()
	fl.BoolVar(&f.full, "full-mesh", false, "test every pair of hosts (n-1 rounds) instead of the screen (a ring and --screen-matchings random matchings, a constant number of rounds, then the suspects against known-good hosts)")
	fl.IntVar(&f.matchings, "screen-matchings", fleet.DefaultScreenMatchings, "the screen's random perfect matchings: each host meets this many partners plus its two ring neighbours")
	fl.DurationVar(&f.timeout, "pair-timeout", 2*time.Minute, "how long a pair test may take before its hosts are judged dead or hung")
	fl.Int64Var(&f.seed, "mesh-seed", -1, "seed of the screen's matchings (the report's \"seed\" repeats a run's pairs; -1: a new one each run)")
}

func (f *meshScheduleFlags) apply(o *fleet.MeshOptions) {
	o.FullMesh, o.ScreenMatchings, o.Seed, o.PairTimeout = f.full, f.matchings, f.seed, f.timeout
	if f.seed < 0 {
		o.Seed = time.Now().UnixNano() & math.MaxInt32
	}
}
