package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/doctor/verbsprobe"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/kube"
	"github.com/erdmakit/erdmakit/monitor"
)

func newKubeCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "kube",
		Short: "erdmakit on Kubernetes: the node agent (ERDMAReady condition and labels, the exporter), clearing a node",
		Long: `kube runs erdmakit's side of deploy/kubernetes: the node agent the DaemonSet runs on every
eRDMA node, and clear, which takes what it set off a node. fleet prove finds its rank, size and
rank 0 in an Indexed Job by itself (docs/kubernetes.md).`,
	}
	c.AddCommand(newKubeNodeAgentCmd(g), newKubeClearCmd(g))
	return c
}

// kubeNode is the node's name: the flag, else $NODE_NAME (the downward
// API's spec.nodeName).
func kubeNode(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if n := os.Getenv("NODE_NAME"); n != "" {
		return n, nil
	}
	return "", errors.New("no node name: pass --node or set NODE_NAME (the DaemonSet sets it from spec.nodeName)")
}

func newKubeNodeAgentCmd(g *globals) *cobra.Command {
	var (
		node, listen        string
		interval, heartbeat time.Duration
		once, verbs, noMD   bool
		maxConns            int
	)
	c := &cobra.Command{
		Use:   "node-agent",
		Short: "Keep this node's ERDMAReady condition and erdmakit.io labels equal to the doctor's verdict; serve the exporter",
		Long: `node-agent runs the doctor on its node every --interval and patches the node where the verdict
differs: the condition ERDMAReady (True: ok or warn, False: a check failed, Unknown: the doctor could
not run; reason: the deciding check ids in CamelCase; message: each with its summary and, where the
check is ack-erdma-controller's job, the controller's step), and the labels erdmakit.io/erdma-ready
(true/false) and erdmakit.io/erdma-status (ok/warn/fail/unknown). An unchanged condition is patched
again every --heartbeat. With --listen it also serves the Prometheus exporter (erdmakit exporter).
It runs in a pod with the service account of deploy/kubernetes (get, patch nodes and nodes/status).
--once: one round, the verdict printed (--json: the Sync object), exit by the doctor's status.`,
		Example: `  erdmakit kube node-agent                               # in the DaemonSet: NODE_NAME from the downward API
  erdmakit kube node-agent --once --json --root testdata/hosts/no-peermem.tar.gz`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			name, err := kubeNode(node)
			if err != nil {
				return couldNotRun(err)
			}
			cl, err := kube.InCluster()
			if err != nil {
				return couldNotRun(err)
			}
			h, closer, err := erdma.OpenHost(ctx, g.root)
			if err != nil {
				return couldNotRun(err)
			}
			defer closer.Close()
			opt := doctor.DefaultOptions()
			opt.Metadata = exporterMetadata()
			// The container's PATH is its image's: the host's eadm and
			// ofed_info cannot be seen (the eadm check says skip; a
			// recorded host keeps its tools.json).
			opt.SkipTools = filepath.Clean(g.root) == "/"
			if noMD {
				opt.Metadata = nil
			}
			if verbs {
				opt.Verbs = verbsprobe.Live{}
			}
			a := &kube.NodeAgent{Client: cl, Node: name, Interval: interval, Heartbeat: heartbeat,
				Log: slog.New(slog.NewTextHandler(g.stderr, nil)),
				Doctor: func(ctx context.Context) (*erdma.Report, error) {
					return doctor.Run(ctx, h, opt)
				}}
			if once {
				s, err := a.Once(ctx)
				if err != nil {
					return couldNotRun(err)
				}
				if g.json {
					if err := render.JSON(g.stdout, s); err != nil {
						return couldNotRun(err)
					}
				} else {
					fmt.Fprintf(g.stdout, "node %s: %s=%s reason %s (condition patched: %t, labels patched: %t)\n%s\n",
						name, kube.ConditionType, s.Verdict.Ready, s.Verdict.Reason, s.ConditionPatched, s.LabelsPatched, s.Verdict.Message)
				}
				if s.Verdict.Status == "" {
					return exitCode(health.ExitUnknown)
				}
				return exitCode(severityExit(s.Verdict.Status))
			}
			errc := make(chan error, 1)
			if listen != "" {
				l, err := net.Listen("tcp", listen)
				if err != nil {
					return couldNotRun(err)
				}
				fmt.Fprintf(g.stderr, "erdmakit kube node-agent: serving http://%s/metrics\n", l.Addr())
				so := doctor.SnapshotOptions{Doctor: opt, ToolsTTL: 5 * time.Minute}
				col := monitor.NewCollector(doctor.Snapshot(h, so), 10*time.Second)
				go func() { errc <- monitor.ServeLimits(ctx, l, col, monitor.Limits{MaxConns: maxConns}) }()
			}
			fmt.Fprintf(g.stderr, "erdmakit kube node-agent: node %s, every %s\n", name, interval)
			go func() { errc <- a.Run(ctx) }()
			err = <-errc
			if ctx.Err() != nil {
				return nil
			}
			return couldNotRun(err)
		},
	}
	markUntilInterrupted(c)
	f := c.Flags()
	f.StringVar(&node, "node", "", "this node's name (default: $NODE_NAME)")
	f.DurationVar(&interval, "interval", kube.DefaultInterval, "how often the doctor runs")
	f.DurationVar(&heartbeat, "heartbeat", kube.DefaultHeartbeat, "patch an unchanged condition again after this long")
	f.StringVar(&listen, "listen", defaultExporterAddr, "serve the exporter's /metrics here (\"\": no exporter)")
	f.IntVar(&maxConns, "max-conns", monitor.DefaultLimits().MaxConns, "the exporter's connections held at once")
	f.BoolVar(&once, "once", false, "one round: patch, print the verdict, exit by the doctor's status")
	f.BoolVar(&verbs, "verbs", false, "run the verbs check (opens /dev/infiniband/uverbs*: the pod needs the devices, e.g. through aliyun/erdma; off, the check says skip)")
	f.BoolVar(&noMD, "no-metadata", false, "do not ask the ECS metadata service for the instance type")
	return c
}

func newKubeClearCmd(g *globals) *cobra.Command {
	var node string
	c := &cobra.Command{
		Use:   "clear",
		Short: "Remove the node agent's ERDMAReady condition and erdmakit.io labels from a node (uninstalling)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := kubeNode(node)
			if err != nil {
				return couldNotRun(err)
			}
			cl, err := kube.InCluster()
			if err != nil {
				return couldNotRun(err)
			}
			if err := cl.ClearNode(cmd.Context(), name); err != nil {
				return couldNotRun(err)
			}
			fmt.Fprintf(g.stdout, "node %s: %s and the erdmakit.io labels removed\n", name, kube.ConditionType)
			return nil
		},
	}
	c.Flags().StringVar(&node, "node", "", "the node's name (default: $NODE_NAME)")
	return c
}
