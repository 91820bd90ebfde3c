package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/report"
	"github.com/erdmakit/erdmakit/setup"
	"github.com/spf13/cobra"
)

// setupFlags are `erdmakit setup`'s flags (and doctor --fix's share).
type setupFlags struct {
	dryRun, yes           bool
	only, skip            []string
	installDriver, reload bool
	networkStack          string
	netdevs               []string
	metadataURL           string
	instanceType          string
	jumbo                 string
	noCloud               bool
	endpoint              string
	eriCount              int
	verify                setup.VerifyOptions
}

// addHost adds the host stages' flags (setup's and doctor --fix's).
func (f *setupFlags) addHost(c *cobra.Command) {
	fl := c.Flags()
	fl.BoolVarP(&f.yes, "yes", "y", false, "apply without asking (scripts)")
	fl.BoolVar(&f.installDriver, "install-driver", false, "driver stage: run the guide's eRDMA installer when the driver or eadm is missing")
	fl.BoolVar(&f.reload, "reload-driver", false, "driver stage: reload the erdma module to apply compat (RoCE) mode now (the eRDMA devices go down for a moment)")
	fl.StringVar(&f.networkStack, "network-stack", "", "os stage: persist through networkmanager, netplan, ifcfg or networkd (default: detected)")
	fl.StringSliceVar(&f.netdevs, "netdev", nil, "os stage: the ERI netdevs to configure (default: the eRDMA devices' netdevs)")
	fl.StringVar(&f.jumbo, "jumbo-frames", "auto", "whether the instance has jumbo frames (EnableJumboFrame): yes (MTU 8500), no (MTU 1400), auto (the cloud's answer, else keep 8500/1400)")
}

func (f *setupFlags) options(g *globals) (setup.Options, error) {
	opt := setup.Options{Root: g.root, DryRun: f.dryRun, Only: f.only, Skip: f.skip, VerifyOptions: f.verify}
	opt.Doctor = doctorDefaults()
	opt.Doctor.Metadata = &erdma.MetadataClient{BaseURL: f.metadataURL}
	opt.Doctor.InstanceType = f.instanceType
	if f.instanceType != "" {
		if _, err := erdma.ParseInstanceType(f.instanceType); err != nil {
			return opt, fmt.Errorf("--instance-type: %w", err)
		}
	}
	if err := f.hostOptions(&opt); err != nil {
		return opt, err
	}
	_, err := setup.Selected(f.only, f.skip)
	return opt, err
}

// hostOptions sets the host stages' options from the flags addHost adds.
func (f *setupFlags) hostOptions(opt *setup.Options) error {
	jumbo, err := jumboFlag(f.jumbo)
	if err != nil {
		return err
	}
	opt.Doctor.JumboFrames = jumbo
	switch f.networkStack {
	case "", doctor.StackNetworkManager, doctor.StackNetplan, doctor.StackIfcfg, doctor.StackNetworkd:
	default:
		return fmt.Errorf("--network-stack %q: want networkmanager, netplan, ifcfg or networkd", f.networkStack)
	}
	opt.Fix = doctor.FixEnv{Metadata: opt.Doctor.Metadata, Netdevs: f.netdevs, NetworkStack: f.networkStack,
		InstallDriver: f.installDriver, ReloadDriver: f.reload}
	return nil
}

// jumboFlag reads --jumbo-frames: nil for auto.
func jumboFlag(v string) (*bool, error) {
	switch v {
	case "auto", "":
		return nil, nil
	case "yes", "no":
		b := v == "yes"
		return &b, nil
	}
	return nil, fmt.Errorf("--jumbo-frames %q: want yes, no or auto", v)
}

// newSetupCmd: `erdmakit setup`.
func newSetupCmd(g *globals) *cobra.Command {
	var f setupFlags
	c := &cobra.Command{
		Use:   "setup",
		Short: "Apply the eRDMA guide to this host: cloud, driver, os, gpu, limits, verify (plan with --dry-run)",
		Long: "Walks Alibaba's eRDMA guide in order, each stage planned from what the host has now: cloud (the ERIs),\n" +
			"driver (erdma, rdma-core, eadm; compat mode), os (ERI netdevs up with address, routes and MTU, persisted in\n" +
			"NetworkManager, netplan, ifcfg or systemd-networkd), gpu (nvidia_peermem unless DMA-BUF), limits (memlock\n" +
			"unlimited, persisted) and verify (the doctor, bw loopback, the NCCL environment).\n\n" +
			"--dry-run prints the plan and changes nothing (no root needed). Applying needs root and asks once on a\n" +
			"terminal; --yes for scripts. Every file is written atomically, the previous version kept; the output lists\n" +
			"how to revert each change. A rerun on a set-up host changes nothing.\n\n" +
			"Exit: 0 proven, 1 proven with warnings, 2 a stage could not complete (a rerun continues there), 3 could not run.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSetup(cmd.Context(), g, &f, os.Stdin) },
	}
	fl := c.Flags()
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the plan (every file and netlink change) and change nothing")
	fl.StringSliceVar(&f.only, "only", nil, "run only these stages (cloud, driver, os, gpu, limits, verify)")
	fl.StringSliceVar(&f.skip, "skip", nil, "skip these stages")
	fl.BoolVar(&f.noCloud, "no-cloud", false, "skip the cloud stage (no credentials or RAM role)")
	fl.StringVar(&f.endpoint, "endpoint", "", "cloud stage: ECS endpoint (default: $"+eri.EndpointEnv+", else the region's)")
	fl.IntVar(&f.eriCount, "eri-count", 0, "cloud stage: ERIs wanted (default: what the instance type allows, at most 2)")
	fl.StringVar(&f.verify.Peer, "peer", "", "verify stage: also run bw to an `erdmakit bw serve` at HOST:PORT")
	fl.BoolVar(&f.verify.NoBandwidth, "no-bw", false, "verify stage: do not run bw loopback")
	fl.StringSliceVar(&f.verify.Devices, "device", nil, "verify stage: the devices bw loopback tests (default: every eRDMA device)")
	fl.StringVar(&f.verify.EnvFile, "nccl-env-file", setup.DefaultEnvFile, "verify stage: write the NCCL environment (nccl env) here for jobs to source; - for none")
	fl.StringVar(&f.verify.GraphFile, "graph-file", setup.DefaultGraphFile, "verify stage: with two eRDMA NICs, the NCCL graph file the environment names")
	fl.StringVar(&f.metadataURL, "metadata-url", erdma.DefaultMetadataURL, "ECS metadata service address (instance type, ERI addresses)")
	fl.StringVar(&f.instanceType, "instance-type", "", "instance type (ecs.<family>.<size>), instead of the metadata service's")
	f.addHost(c)
	return c
}

func runSetup(ctx context.Context, g *globals, f *setupFlags, stdin io.Reader) error {
	opt, err := f.options(g)
	if err != nil {
		return couldNotRun(err)
	}
	if f.noCloud {
		opt.Skip = append(opt.Skip, doctor.StageCloud)
	}
	if sel, _ := setup.Selected(opt.Only, opt.Skip); slices.Contains(sel, doctor.StageCloud) {
		cloud, closer, why := f.cloud(ctx, g, opt.Doctor.Metadata)
		if closer != nil {
			defer closer.Close()
		}
		opt.Cloud, opt.CloudSkipped = cloud, why
	}
	return applySetup(ctx, g, f, opt, stdin)
}

// cloud is the cloud stage through package eri, or why there is none.
func (f *setupFlags) cloud(ctx context.Context, g *globals, md *erdma.MetadataClient) (setup.Cloud, io.Closer, string) {
	if g.root != "" && g.root != "/" {
		return nil, nil, "a recorded host: no cloud to ask"
	}
	t, err := eri.ResolveTarget(ctx, md, eri.Target{})
	if err != nil {
		return nil, nil, err.Error()
	}
	c, err := eri.New(eri.Config{Region: t.Region, Endpoint: f.endpoint, Logger: slog.Default()})
	if err != nil {
		return nil, nil, err.Error()
	}
	var att eri.AttachOptions
	if h, closer, herr := erdma.OpenHost(ctx, "/"); herr == nil {
		att = eri.AttachOptionsFor(ctx, h)
		closer.Close()
	}
	att.Count = f.eriCount
	if !g.json {
		att.Progress = func(s string) { fmt.Fprintln(g.stderr, "erdmakit setup: cloud:", s) }
	}
	return &setup.ERICloud{Client: c, Target: t, Attach: att}, c, ""
}

// applySetup plans, asks (on a terminal, unless --yes) and runs: setup's
// and doctor --fix's one path.
func applySetup(ctx context.Context, g *globals, f *setupFlags, opt setup.Options, stdin io.Reader) error {
	if !f.dryRun {
		if os.Geteuid() != 0 && (g.root == "" || g.root == "/") {
			return couldNotRun(errors.New("setup changes the host: run it as root (or plan with --dry-run)"))
		}
		if !f.yes {
			tty, ok := stdin.(*os.File)
			if !ok || !render.IsTerminal(tty) {
				return couldNotRun(errors.New("no terminal to ask on and no --yes: run with --yes to apply, or --dry-run to plan"))
			}
			plan := opt
			plan.DryRun = true
			res, err := setup.Run(ctx, plan)
			if err != nil {
				return couldNotRun(err)
			}
			if err := report.WriteSetupTable(g.stdout, res, g.tableOptions()); err != nil {
				return err
			}
			if res.Changed == 0 {
				fmt.Fprintln(g.stdout, "nothing to change; verifying")
			} else {
				fmt.Fprintf(g.stdout, "\napply these %d change(s)? [y/N] ", res.Changed)
				line, _ := bufio.NewReader(stdin).ReadString('\n')
				if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
					return couldNotRun(errors.New("not applied: the answer was not yes"))
				}
			}
		}
	}
	res, err := setup.Run(ctx, opt)
	if err != nil {
		return couldNotRun(err)
	}
	return emit(g, res, res.Status, func() error { return report.WriteSetupTable(g.stdout, res, g.tableOptions()) })
}
