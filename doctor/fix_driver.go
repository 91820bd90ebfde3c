package doctor

import (
	"context"
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
)

// InstallerURL is the guide's installer (domain section 1, step 2).
const (
	InstallerURL = erdma.InstallerURL
	// CompatFile is where the driver stage sets compat (RoCE) mode.
	CompatFile = "/etc/modprobe.d/erdmakit-erdma.conf"
)

// InstallerCommand is the argv that runs the guide's installer for a host
// whose /etc/os-release says ID=osID, VERSION_ID=version
// (erdma.InstallerCommand: Ubuntu 24.04 has its own), in a fresh temporary
// directory, since the guide's command downloads into the working one.
func InstallerCommand(osID, version string) []string {
	return []string{"sh", "-c", `cd "$(mktemp -d)" && ` + erdma.InstallerCommand(osID, version)}
}

// driverFix: guide step 2, the eRDMA driver, rdma-core's erdma provider
// and eadm; and, on a GPU instance, compat (RoCE v2) mode.
func driverFix() *Fix {
	return &Fix{Stage: StageDriver, Title: "eRDMA driver, rdma-core and eadm present; compat (RoCE) mode on GPU instances", Plan: planDriver}
}

func planDriver(_ context.Context, in *Input, env *FixEnv) (*Plan, error) {
	p := NewPlan(StageDriver)
	inv := in.Inventory
	var erdmaDevs []erdma.Device
	for _, d := range inv.Devices {
		if d.ERDMA {
			erdmaDevs = append(erdmaDevs, d)
		}
	}
	if !planDriverInstall(p, in, env, len(erdmaDevs)) {
		return p, nil
	}
	var iwarp []string
	for _, d := range erdmaDevs {
		if d.CompatMode == "N" {
			iwarp = append(iwarp, d.Name)
		}
	}
	if len(iwarp) == 0 || inv.Profile == nil {
		if len(erdmaDevs) > 0 {
			p.Found = append(p.Found, "transport mode as a GPU instance needs it (or no compat_mode parameter)")
		}
		return p, nil
	}
	if err := planCompat(p, in, env, iwarp); err != nil {
		return nil, err
	}
	return p, nil
}

// planDriverInstall says what of the driver and eadm is there and plans
// the guide's installer where they are missing and --install-driver allows
// it; ok is false when the stage is blocked on them.
func planDriverInstall(p *Plan, in *Input, env *FixEnv, devices int) (ok bool) {
	inv := in.Inventory
	osID, version := osRelease(env, in)
	install := InstallerCommand(osID, version)
	installText := erdma.InstallerCommand(osID, version)
	if version != "" {
		osID += " " + version
	}
	mod := moduleOf(inv, "erdma")
	loaded := (mod != nil && mod.Loaded) || devices > 0
	eadm, toolsLooked := toolOf(inv, "eadm")
	if loaded {
		p.Found = append(p.Found, fmt.Sprintf("erdma driver loaded, %d eRDMA device(s)", devices))
	} else {
		p.Found = append(p.Found, "erdma driver not loaded")
	}
	haveEadm := eadm != nil && eadm.Path != ""
	switch {
	case haveEadm:
		p.Found = append(p.Found, "eadm "+orUnknownVersion(eadm.Version))
	case toolsLooked:
		p.Found = append(p.Found, "eadm not found on PATH")
	}
	switch {
	case loaded && (haveEadm || !toolsLooked):
		return true
	case env.InstallDriver && env.commands(in):
		p.add(Change{Checks: []string{erdma.FindingERDMADriver, erdma.FindingEadm}, Kind: KindCommand,
			Target: "eRDMA driver (" + osID + ")", Command: installText,
			apply: func(ctx context.Context) error { return env.run(ctx, install) }})
		if !loaded {
			p.add(Change{Checks: []string{erdma.FindingERDMADriver}, Kind: KindCommand, Target: "erdma", Command: "modprobe erdma",
				apply: func(ctx context.Context) error { return env.run(ctx, []string{"modprobe", "erdma"}) }})
		}
		return true
	case env.InstallDriver:
		p.Notes = append(p.Notes, NoLiveChanges+": --install-driver is not run")
	}
	p.Blocked, p.blockedFor = "eadm (the eRDMA software package) is not installed", []string{erdma.FindingERDMADriver, erdma.FindingEadm}
	p.Next = "install it with the guide's installer (" + osID + "): " + installText + "; or rerun erdmakit setup --install-driver"
	if !loaded {
		p.Blocked = "the eRDMA driver is not loaded"
		p.Next = "modprobe erdma; if the module is not installed, the guide's installer (" + osID + "): " + installText + " (or rerun erdmakit setup --install-driver)"
	}
	return false
}

// planCompat plans compat (RoCE v2) mode for the iWARP devices of a GPU
// instance: modprobe.d now, the module reloaded only with ReloadDriver.
func planCompat(p *Plan, in *Input, env *FixEnv, iwarp []string) error {
	checks := []string{erdma.FindingTransportMode}
	p.Found = append(p.Found, strings.Join(iwarp, ", ")+": iWARP mode (compat_mode=N) on a GPU instance")
	if err := p.addFile(env.files(in), checks, CompatFile,
		"# GPU instances run eRDMA in compat (RoCE v2) mode: NCCL and perftest connect that way (erdmakit doctor: transport-mode)\noptions erdma compat_mode=Y\n",
		"compat", true, 0o644); err != nil {
		return err
	}
	if !env.ReloadDriver || !env.commands(in) {
		p.Notes = append(p.Notes, "compat mode applies when the erdma module is next loaded: at the next boot, or now with "+
			"erdmakit setup --reload-driver (modprobe -r erdma && modprobe erdma: the eRDMA devices go down for a moment)")
		return nil
	}
	p.add(Change{Checks: checks, Kind: KindCommand, Target: "erdma", Command: "modprobe -r erdma && modprobe erdma",
		apply: func(ctx context.Context) error {
			if err := env.run(ctx, []string{"modprobe", "-r", "erdma"}); err != nil {
				return err
			}
			return env.run(ctx, []string{"modprobe", "erdma"})
		}})
	return nil
}

func toolOf(inv *erdma.Inventory, name string) (*erdma.Tool, bool) {
	for i := range inv.Tools {
		if inv.Tools[i].Name == name {
			return &inv.Tools[i], true
		}
	}
	return nil, len(inv.Tools) > 0
}

// osRelease is the ID and VERSION_ID of the host's /etc/os-release
// ("unknown OS" and "" when unreadable).
func osRelease(env *FixEnv, in *Input) (id, version string) {
	s, ok, err := env.files(in).Read("/etc/os-release")
	if !ok || err != nil {
		if s, ok, err = env.files(in).Read("/usr/lib/os-release"); !ok || err != nil {
			return "unknown OS", ""
		}
	}
	id = "unknown OS"
	for _, l := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(l, "ID="); ok {
			id = strings.Trim(v, `"'`)
		}
		if v, ok := strings.CutPrefix(l, "VERSION_ID="); ok {
			version = strings.Trim(v, `"'`)
		}
	}
	return id, version
}
