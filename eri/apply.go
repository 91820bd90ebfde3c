package eri

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNeedsStopped: a step detaches an ERI, which the instance must be
// stopped for (the guide), and the instance is running.
var ErrNeedsStopped = errors.New("moving an ERI to another network card detaches it, and an ERI is detached only " +
	"from a stopped instance (the primary ENI cannot be detached at all): stop the instance (ECS console, or " +
	"aliyun ecs StopInstance), then run this again from another machine with --instance-id, --region and " +
	"--instance-type, and start the instance")

// newNonce is a run's ClientToken nonce.
func newNonce() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Plan reads the instance (DescribeInstanceTypes, DescribeNetworkInterfaces,
// and the ENIs an earlier run created but did not attach) and decides the
// steps to opt.Count ERIs, each on its own NetworkCardIndex. It makes no
// mutating call; Apply carries the plan out.
func (c *Client) Plan(ctx context.Context, t Target, opt AttachOptions) (*AttachPlan, error) {
	v, err := c.Describe(ctx, t)
	if err != nil {
		return nil, err
	}
	tagged, err := c.DescribeENIs(ctx, ENIQuery{Tags: map[string]string{TagInstance: t.InstanceID}, Status: StatusAvailable})
	if err != nil {
		return nil, err
	}
	if opt.Nonce == "" {
		opt.Nonce = newNonce()
	}
	plan, err := planAttach(v, pendingENIs(v, tagged), opt)
	if err != nil {
		return nil, err
	}
	return &plan, nil
}

// Attach is Plan then, unless opt.DryRun, Apply. It is idempotent: ERIs
// already attached on distinct cards count, and ENIs it created earlier but
// did not attach (tagged) are attached instead of creating more.
func (c *Client) Attach(ctx context.Context, t Target, opt AttachOptions) (*AttachResult, error) {
	plan, err := c.Plan(ctx, t, opt)
	if err != nil {
		return nil, err
	}
	if opt.DryRun {
		return &AttachResult{Plan: *plan, DryRun: true, Made: []MadeCall{}, ERIs: []ENI{}, Unattached: []Unattached{}}, nil
	}
	return c.Apply(ctx, plan, opt)
}

// Apply carries out a plan of Plan. The result lists only the calls made;
// on a failure it says what exists now: the instance's ERIs and any ENI
// of erdmakit's left unattached, with how to delete it (a rerun attaches
// it). Transient errors are retried (Client.call); an attach that failed
// but took effect anyway is recognised by reading the ENI back.
func (c *Client) Apply(ctx context.Context, plan *AttachPlan, opt AttachOptions) (*AttachResult, error) {
	res := &AttachResult{Plan: *plan, Made: []MadeCall{}, ERIs: []ENI{}, Unattached: []Unattached{}}
	if plan.view == nil {
		return res, fmt.Errorf("eri: Apply needs a plan from Plan: %w", ErrInvalidParameter)
	}
	progress := opt.Progress
	if progress == nil {
		progress = func(string) {}
	}
	t := plan.Target
	if len(plan.Steps) == 0 {
		res.ERIs = nonNil(plan.view.ERIs())
		res.Complete = true
		return res, nil
	}
	if plan.NeedsStopped {
		st, err := c.InstanceStatus(ctx, t.InstanceID)
		if err != nil {
			return c.finish(ctx, res, nil, err)
		}
		if st.Status != "Stopped" {
			return c.finish(ctx, res, nil, fmt.Errorf("%s is %s: %w", t.InstanceID, st.Status, ErrNeedsStopped))
		}
	}
	var ours []string // ENIs this run created or adopted and has not yet seen attached
	record := func(call Call, err error) {
		r := "ok"
		if err != nil {
			r = "error: " + briefError(err)
		}
		res.Made = append(res.Made, MadeCall{Call: call, Result: r})
	}
	for i, st := range plan.Steps {
		id := st.ENIID
		switch st.Kind {
		case StepCreate:
			progress(fmt.Sprintf("creating ERI %d/%d (HighPerformance, vSwitch %s, %d queue pairs)", i+1, len(plan.Steps),
				plan.primary.VSwitchID, st.QueuePairNumber))
			spec := createSpec(plan, plan.Have+i, st.QueuePairNumber)
			call := Call{Action: "CreateNetworkInterface", Params: createParams(t.Region, spec)}
			var err error
			id, err = c.CreateERI(ctx, spec)
			record(call, err)
			if err != nil {
				return c.finish(ctx, res, ours, err)
			}
			res.Made[len(res.Made)-1].Params["NetworkInterfaceId"] = id
			ours = append(ours, id)
		case StepAttach:
			ours = append(ours, id)
		case StepMove:
			progress(fmt.Sprintf("detaching %s from NetworkCardIndex %d (it shares the card)", id, *st.FromCardIndex))
			err := c.DetachENI(ctx, t.InstanceID, id)
			record(st.Calls[0], err)
			if err != nil {
				return c.finish(ctx, res, ours, err)
			}
			ours = append(ours, id)
			if err := c.waitStatus(ctx, id, StatusAvailable, opt, progress); err != nil {
				return c.finish(ctx, res, ours, err)
			}
		}
		progress(fmt.Sprintf("attaching %s on NetworkCardIndex %d", id, st.CardIndex))
		err := c.AttachENI(ctx, t.InstanceID, id, st.CardIndex)
		record(attachCall(t, id, st.CardIndex), err)
		if err != nil && !c.attachedAnyway(ctx, t, id, st.CardIndex) {
			return c.finish(ctx, res, ours, err)
		}
		if err := c.waitStatus(ctx, id, StatusInUse, opt, progress); err != nil {
			return c.finish(ctx, res, ours, err)
		}
		ours = removeString(ours, id)
	}
	res.Complete = true
	return c.finish(ctx, res, ours, nil)
}

// attachedAnyway reads an ENI back after a failed attach: an answer lost
// (a 5xx after the attach took effect) must not leave it counted as
// unattached, nor be attached twice.
func (c *Client) attachedAnyway(ctx context.Context, t Target, id string, card int) bool {
	enis, err := c.DescribeENIs(ctx, ENIQuery{IDs: []string{id}})
	if err != nil || len(enis) != 1 {
		return false
	}
	e := enis[0]
	return e.InstanceID == t.InstanceID && (e.Status == StatusAttaching || e.Status == StatusInUse) &&
		e.NetworkCardIndex != nil && *e.NetworkCardIndex == card
}

// finish reads what exists now (best effort, briefly, even after the
// caller's context ended: then within half a second) and returns the
// result with err.
func (c *Client) finish(ctx context.Context, res *AttachResult, ours []string, err error) (*AttachResult, error) {
	bound := min(c.cfg.Timeout, 5*time.Second)
	if ctx.Err() != nil {
		bound = min(bound, 500*time.Millisecond) // interrupted: the README's one second
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer cancel()
	t := res.Plan.Target
	if v, derr := c.Describe(rctx, t); derr == nil {
		res.ERIs = nonNil(v.ERIs())
		if err == nil && len(v.SharedChannels()) > 0 {
			err = fmt.Errorf("ERIs still share a card after the run: %w", ErrChannel)
			res.Complete = false
		}
	}
	left, derr := c.DescribeENIs(rctx, ENIQuery{Tags: map[string]string{TagInstance: t.InstanceID}, Status: StatusAvailable})
	seen := map[string]bool{}
	if derr == nil {
		for _, e := range left {
			if e.Tags[TagInstance] != t.InstanceID {
				continue
			}
			seen[e.ID] = true
			// The server's Status filter is not trusted: only an ENI this
			// answer itself says is Available is called unattached.
			if e.Status == StatusAvailable {
				res.Unattached = append(res.Unattached, unattached(t, e.ID, e.Status))
			}
		}
	}
	if err != nil {
		// What the run touched and did not see attached, even when the
		// read above failed: never silently left.
		attached := map[string]bool{}
		for _, e := range res.ERIs {
			attached[e.ID] = true
		}
		for _, id := range ours {
			if !seen[id] && !attached[id] {
				res.Unattached = append(res.Unattached, unattached(t, id, "unknown"))
			}
		}
	}
	return res, err
}

// unattached is an ENI of erdmakit's left unattached; the delete command
// is given only for one read back as Available (an ENI in use, or one
// whose status could not be read, is never advised deleted).
func unattached(t Target, id, status string) Unattached {
	u := Unattached{ID: id, Status: status}
	if status == StatusAvailable {
		u.Delete = DeleteCommand(t.Region, id)
	} else {
		u.Check = "aliyun ecs DescribeNetworkInterfaces --RegionId " + shellQuote(t.Region) + " --NetworkInterfaceId.1 " + shellQuote(id)
	}
	return u
}

// DeleteCommand is the aliyun CLI command that deletes an ENI.
func DeleteCommand(region, id string) string {
	return "aliyun ecs DeleteNetworkInterface --RegionId " + shellQuote(region) + " --NetworkInterfaceId " + shellQuote(id)
}

// DetachCommand is the aliyun CLI command that detaches an ENI (an ERI
// only from a stopped instance: the guide).
func DetachCommand(region, instance, id string) string {
	return "aliyun ecs DetachNetworkInterface --RegionId " + shellQuote(region) + " --InstanceId " + shellQuote(instance) +
		" --NetworkInterfaceId " + shellQuote(id)
}

func removeString(l []string, s string) []string {
	out := l[:0]
	for _, x := range l {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

func nonNil[T any](l []T) []T {
	if l == nil {
		return []T{}
	}
	return l
}

func (c *Client) waitStatus(ctx context.Context, id, want string, opt AttachOptions, progress func(string)) error {
	wait, poll := opt.Wait, opt.Poll
	if wait <= 0 {
		wait = 3 * time.Minute
	}
	if poll <= 0 {
		poll = 3 * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		enis, err := c.DescribeENIs(ctx, ENIQuery{IDs: []string{id}})
		if err != nil {
			return err
		}
		status := "absent"
		if len(enis) == 1 {
			status = enis[0].Status
		}
		if status == want {
			progress(fmt.Sprintf("%s %s", id, want))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still %s after %s (want %s): %w", id, status, wait, want, ErrAttachTimeout)
		}
		progress(fmt.Sprintf("%s %s, waiting for %s (up to %s)", id, status, want, time.Until(deadline).Round(time.Second)))
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", id, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// Summary is one line on what a result means: what exists now, never
// what was only planned.
func (r *AttachResult) Summary() string {
	if r.DryRun {
		return fmt.Sprintf("%d ERI(s) attached, %d wanted; dry run: no call made", r.Plan.Have, r.Plan.Want)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "now %d ERI(s) attached, %d wanted", len(r.ERIs), r.Plan.Want)
	if len(r.Unattached) > 0 {
		fmt.Fprintf(&b, "; %d ENI(s) of erdmakit's not attached", len(r.Unattached))
	}
	return b.String()
}

// briefError is an error on one short line (the API's code and message,
// not the policy or the advice the full error carries).
func briefError(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		if ae.Code == "" {
			return clip(ae.Message, 200)
		}
		return clip(fmt.Sprintf("%s (HTTP %d): %s", ae.Code, ae.HTTPStatus, ae.Message), 200)
	}
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return clip(s, 200)
}
