package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/monitor"
	"github.com/erdmakit/erdmakit/report/live"
	"github.com/spf13/cobra"
)

// statFlags are stat's flags.
type statFlags struct {
	devices  []string
	interval time.Duration
	loop     bool
	count    int
}

func newStatCmd(g *globals) *cobra.Command {
	var sf statFlags
	c := &cobra.Command{
		Use:   "stat",
		Short: "Live RDMA traffic per device from hw_counters (like eadm stat -l)",
		Long: `stat samples every RDMA port's hw_counters each interval and prints the traffic
(Gbit/s and Mpps each way) and any error or drop counter that moved (bandwidth/PPS
meter drops, CM connect failures, verbs failures), plus port state changes, counter
resets and ports that appeared or disappeared.
Without -l it prints one interval (-c N: N) and exits 1 when one had a problem,
naming each on stderr: a problem counter moved, a port changed state, counters
were reset (driver reload or device reset) or a port disappeared; 0 otherwise.
--json prints one JSON object per interval (the monitor.Interval schema).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runStat(cmd, g, sf) },
	}
	f := c.Flags()
	f.StringArrayVarP(&sf.devices, "device", "d", nil, "device to show (repeatable); default all")
	f.DurationVarP(&sf.interval, "interval", "i", time.Second, "sampling interval")
	f.BoolVarP(&sf.loop, "loop", "l", false, "keep printing until interrupted")
	f.IntVarP(&sf.count, "count", "c", 0, "print this many intervals and stop (without -l the default is 1)")
	return c
}

// runStat is `erdmakit stat`: the ports' counters sampled every interval,
// printed per interval; the worst interval's status is the exit code.
func runStat(cmd *cobra.Command, g *globals, f statFlags) error {
	if f.count < 0 {
		return couldNotRun(fmt.Errorf("stat: --count %d: want 0 (no limit, with -l) or more", f.count))
	}
	if f.interval <= 0 {
		return couldNotRun(fmt.Errorf("stat: --interval %v: want a positive duration", f.interval))
	}
	if f.loop && f.count == 0 {
		markUntilInterrupted(cmd)
	}
	h, closer, err := erdma.OpenHost(cmd.Context(), g.root)
	if err != nil {
		return couldNotRun(err)
	}
	defer closer.Close()
	n := f.count
	if !f.loop && n == 0 {
		n = 1
	}
	status := health.OK
	s := monitor.HostSampler{Host: h, Devices: f.devices}
	if err := s.CheckDevices(cmd.Context()); err != nil {
		return couldNotRun(err)
	}
	err = monitor.Watch(cmd.Context(), s, f.interval, n, func(iv monitor.Interval) error {
		status = health.Worst(status, iv.Severity())
		var err error
		if g.json {
			err = json.NewEncoder(g.stdout).Encode(iv)
		} else {
			err = live.WriteStatInterval(g.stdout, iv)
		}
		if !f.loop {
			// The health check says why it exits 1; with -l the
			// lines themselves are the record.
			for _, p := range iv.Problems() {
				fmt.Fprintln(g.stderr, "problem:", p)
			}
		}
		return err
	})
	if err != nil {
		return couldNotRun(err)
	}
	return exitCode(severityExit(status))
}
