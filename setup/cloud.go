package setup

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/eri"
)

// Cloud is the cloud stage: it plans (and, unless dryRun, makes) the
// instance's ERIs, and says whether the instance has jumbo frames (nil:
// unknown), which the os stage and the mtu check then judge by.
type Cloud interface {
	Stage(ctx context.Context, dryRun bool) (plan *doctor.Plan, jumbo *bool, err error)
}

// ERICloud is the cloud stage through package eri's plan and apply: the
// ERIs the instance type allows, each HighPerformance on its own network
// card (eri.Client.Plan, eri.Client.Apply), and EnableJumboFrame
// (eri.Client.InstanceStatus).
type ERICloud struct {
	Client *eri.Client
	Target eri.Target
	Attach eri.AttachOptions
}

// KindAPI is a cloud stage change: one ECS API call.
const KindAPI = "api"

// Stage implements Cloud.
func (e *ERICloud) Stage(ctx context.Context, dryRun bool) (*doctor.Plan, *bool, error) {
	p := doctor.NewPlan(doctor.StageCloud)
	var jp *bool
	st, err := e.Client.InstanceStatus(ctx, e.Target.InstanceID)
	switch {
	case cloudSkips(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return p, nil, err
	case err != nil:
		// Jumbo frames unknown is a warning, not a failure: the ERIs are
		// still attached, and the os stage's MTU rule says what it does
		// without the fact (--jumbo-frames gives it).
		p.Notes = append(p.Notes, "jumbo frames unknown (ecs:DescribeInstanceAttribute: "+err.Error()+"): the os stage keeps one MTU for all ERIs by its rule; --jumbo-frames yes|no gives the fact")
		p.Found = append(p.Found, fmt.Sprintf("instance %s (%s), jumbo frames unknown", e.Target.InstanceID, e.Target.InstanceType))
	default:
		jumbo := st.JumboFrame
		jp = &jumbo
		p.Found = append(p.Found, fmt.Sprintf("instance %s (%s), %s, jumbo frames %s", e.Target.InstanceID, e.Target.InstanceType, st.Status, yesNo(jumbo)))
	}
	plan, err := e.Client.Plan(ctx, e.Target, e.Attach)
	if err != nil {
		return p, jp, err
	}
	p.Found = append(p.Found, fmt.Sprintf("%d ERI(s) attached on distinct network cards, %d wanted", plan.Have, plan.Want))
	p.Notes = append(p.Notes, plan.Notes...)
	if len(plan.Steps) == 0 {
		return p, jp, nil
	}
	if dryRun {
		for _, s := range plan.Steps {
			for _, c := range s.Calls {
				p.Changes = append(p.Changes, doctor.Change{Stage: doctor.StageCloud, Checks: []string{}, Kind: KindAPI,
					Target: stepTarget(s), Command: c.String()})
			}
		}
		return p, jp, nil
	}
	res, err := e.Client.Apply(ctx, plan, e.Attach)
	if res != nil {
		// Only the calls made, with their outcome.
		var created []string
		for _, m := range res.Made {
			c := doctor.Change{Stage: doctor.StageCloud, Checks: []string{}, Kind: KindAPI, Target: m.Call.Action, Command: m.Call.String(), Done: m.Result == "ok"}
			if !c.Done {
				c.Error = m.Result
			}
			id := m.Call.Params["NetworkInterfaceId"]
			switch {
			case !c.Done || id == "":
			case m.Call.Action == "CreateNetworkInterface":
				created = append(created, id)
				c.Revert = eri.DeleteCommand(e.Target.Region, id) + " (once detached)"
			case m.Call.Action == "AttachNetworkInterface":
				c.Revert = eri.DetachCommand(e.Target.Region, e.Target.InstanceID, id) + " (stop the instance first: an ERI is detached only from a stopped instance, the guide)"
			}
			p.Changes = append(p.Changes, c)
		}
		if err != nil && len(created) > 0 {
			made := "this run created " + strings.Join(created, ", ") + " (tagged " + eri.TagInstance + "=" + e.Target.InstanceID + "): a rerun adopts them"
			p.Notes = append(p.Notes, made)
			// An interrupted run ends with its error alone: it names them too.
			err = fmt.Errorf("%w; %s", err, made)
		}
		for _, u := range res.Unattached {
			if u.Delete != "" {
				p.Notes = append(p.Notes, fmt.Sprintf("ENI %s (%s) was created but is not attached: a rerun attaches it; or delete it: %s", u.ID, u.Status, u.Delete))
			} else {
				p.Notes = append(p.Notes, fmt.Sprintf("ENI %s was created by this run; its status is %s: check it before anything else (%s); a rerun adopts it", u.ID, u.Status, u.Check))
			}
		}
		if res.Complete {
			p.Found = append(p.Found, fmt.Sprintf("%d ERI(s) attached now", len(res.ERIs)))
		}
	}
	return p, jp, err
}

func stepTarget(s eri.Step) string {
	if s.ENIID != "" {
		return s.ENIID
	}
	return fmt.Sprintf("a new ERI on network card %d", s.CardIndex)
}

func yesNo(b bool) string {
	if b {
		return "enabled (MTU 8500)"
	}
	return "not enabled (MTU 1400)"
}

// cloudSkips reports whether err means the cloud cannot be asked at all
// (no credentials or RAM role, not on ECS): the stage is skipped with one
// line, not failed.
func cloudSkips(err error) bool {
	return errors.Is(err, eri.ErrNoCredentials) || errors.Is(err, eri.ErrNotOnECS)
}
