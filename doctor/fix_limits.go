package doctor

import (
	"context"
	"fmt"

	"github.com/erdmakit/erdmakit/erdma"
)

// Files the limits stage writes.
const (
	LimitsFile        = "/etc/security/limits.d/90-erdmakit-memlock.conf"
	SystemdLimitsFile = "/etc/systemd/system.conf.d/90-erdmakit-memlock.conf"
)

// limitsFix: domain section 5, memlock unlimited for every login (limits.d;
// '*' does not cover root in pam_limits, so root is named) and for every
// service systemd starts (DefaultLimitMEMLOCK), and for this process, so
// that setup's own verify (bw loopback) can register memory.
func limitsFix() *Fix {
	return &Fix{Stage: StageLimits, Title: "memlock unlimited, persisted",
		Plan: func(_ context.Context, in *Input, env *FixEnv) (*Plan, error) {
			p := NewPlan(StageLimits)
			checks := []string{erdma.FindingMemlock}
			files := env.files(in)
			if l := in.Inventory.Memlock; l != nil {
				p.Found = append(p.Found, "this process's RLIMIT_MEMLOCK: "+l.String())
			}
			if err := p.addFile(files, checks, LimitsFile,
				"# eRDMA: every queue pair and memory registration needs locked memory (erdmakit doctor: memlock)\n"+
					"*    soft memlock unlimited\n*    hard memlock unlimited\nroot soft memlock unlimited\nroot hard memlock unlimited\n",
				"memlock", true, 0o644); err != nil {
				return nil, err
			}
			if err := p.addFile(files, checks, SystemdLimitsFile,
				"[Manager]\nDefaultLimitMEMLOCK=infinity\n", "memlock", true, 0o644); err != nil {
				return nil, err
			}
			if len(p.Changes) > 0 {
				p.Notes = append(p.Notes, "running sessions and services keep their old memlock limit: log in again; "+
					"for services run `systemctl daemon-reexec`, then restart them (containerd, docker, slurmd, ...); containers: --ulimit memlock=-1")
			}
			if l := in.Inventory.Memlock; l != nil && in.Host.Live() && !env.Describe {
				planProcessMemlock(p, l, checks)
			}
			return p, nil
		}}
}

// planProcessMemlock raises this process's own memlock limit, so that the
// verify stage (bw loopback) and what it runs can register memory: to
// unlimited where the process may raise its hard limit (CAP_SYS_RESOURCE;
// a container often lacks it), else the soft limit to the hard one.
func planProcessMemlock(p *Plan, l *erdma.Limit, checks []string) {
	const inf = erdma.RLimInfinity
	if l.SoftUnlimited() {
		return
	}
	cur, hard := inf, inf
	if !l.HardUnlimited() && !hasCapSysResource() {
		if l.Soft >= l.Hard {
			p.Found = append(p.Found, "this process cannot raise its memlock limit (no CAP_SYS_RESOURCE): run setup from a root login shell or a service with LimitMEMLOCK=infinity")
			return
		}
		cur, hard = l.Hard, l.Hard
	}
	cmd := "ulimit -l unlimited (erdmakit's own limit, for the verify stage)"
	if cur != inf {
		cmd = fmt.Sprintf("ulimit -S -l %d (erdmakit's own soft limit up to the hard one, for the verify stage)", cur>>10)
	}
	p.add(Change{Checks: checks, Kind: KindProcess, Target: "erdmakit's own RLIMIT_MEMLOCK", Command: cmd,
		apply: func(context.Context) error { return setMemlock(cur, hard) }})
}
