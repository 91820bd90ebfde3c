package eri

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Call is one mutating API call as erdmakit makes it; --dry-run prints these.
type Call struct {
	Action string            `json:"action"`
	Params map[string]string `json:"params"`
}

func (c Call) String() string {
	var b strings.Builder
	b.WriteString(c.Action)
	for _, k := range sortedKeys(c.Params) {
		fmt.Fprintf(&b, " %s=%s", k, c.Params[k])
	}
	return b.String()
}

// Step is one ERI to bring to InUse: reuse or create an ENI, then attach it.
type Step struct {
	// ENIID is the existing tagged ENI to attach; "" when one is created.
	ENIID     string `json:"eni_id,omitempty"`
	Create    bool   `json:"create"`
	CardIndex int    `json:"network_card_index"`
	Calls     []Call `json:"calls"`
}

// AttachPlan is what Attach will do to reach Want ERIs.
type AttachPlan struct {
	Want    int    `json:"want"`
	Have    int    `json:"have"` // ERIs attached now
	Steps   []Step `json:"steps"`
	Reasons []string
}

// AttachOptions tunes Attach.
type AttachOptions struct {
	// Count is the number of ERIs wanted; 0 means what the type allows, at most 2.
	Count  int
	DryRun bool
	// Wait bounds the wait for each ENI to reach InUse; 0 means 3 min.
	Wait time.Duration
	// Poll is the interval between status reads; 0 means 3 s.
	Poll time.Duration
	// Progress, when set, receives one line per step and per wait.
	Progress func(string)
}

// AttachResult is what Attach did (or, dry-run, would do).
type AttachResult struct {
	Plan   AttachPlan `json:"plan"`
	DryRun bool       `json:"dry_run"`
	// ERIs is the instance's ERIs at the end (after a real run).
	ERIs []ENI `json:"eris,omitempty"`
}

// pendingENIs returns ENIs erdmakit created for this instance that are not
// attached (a create whose attach failed).
func pendingENIs(v *View, tagged []ENI) []ENI {
	var out []ENI
	for _, e := range tagged {
		if e.IsERI() && e.Status == StatusAvailable && e.Tags[TagInstance] == v.Target.InstanceID {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// PlanAttach decides what is missing to reach want ERIs on distinct
// network-card channels. pending are tagged, unattached ERIs to reuse.
func PlanAttach(v *View, pending []ENI, want int) (AttachPlan, error) {
	ti := v.TypeInfo
	if ti.EriQuantity <= 0 {
		return AttachPlan{}, fmt.Errorf("%s: %w", ti.Type, ErrNotSupported)
	}
	if want <= 0 {
		want = min(ti.EriQuantity, 2)
	}
	if want > ti.EriQuantity {
		return AttachPlan{}, fmt.Errorf("%d ERIs wanted, %s allows %d (EriQuantity): %w", want, ti.Type, ti.EriQuantity, ErrQuota)
	}
	eris := v.ERIs()
	plan := AttachPlan{Want: want, Have: len(eris)}
	if len(eris) >= want {
		return plan, nil
	}
	used := map[int]bool{}
	for _, e := range eris {
		if e.NetworkCardIndex != nil {
			used[*e.NetworkCardIndex] = true
		}
	}
	cards := ti.NetworkCardIndexes
	if len(cards) == 0 {
		for i := 0; i < max(ti.NetworkCardQuantity, 1); i++ {
			cards = append(cards, i)
		}
	}
	cards = slices.Clone(cards)
	slices.Sort(cards)
	var free []int
	for _, ci := range cards {
		if !used[ci] {
			free = append(free, ci)
		}
	}
	missing := want - len(eris)
	if missing > len(free) {
		return AttachPlan{}, fmt.Errorf("%d more ERI(s) wanted, free channels %v of %v (used %v): %w",
			missing, free, cards, keysInt(used), ErrChannel)
	}
	primary, ok := v.Primary()
	if !ok || primary.VSwitchID == "" {
		return AttachPlan{}, fmt.Errorf("the instance's primary ENI (vSwitch, security groups) is not in the answer: %w", ErrAPI)
	}
	for i := 0; i < missing; i++ {
		st := Step{CardIndex: free[i]}
		if i < len(pending) {
			st.ENIID = pending[i].ID
		} else {
			st.Create = true
			spec := createSpec(v, primary, len(eris)+i)
			st.Calls = append(st.Calls, Call{Action: "CreateNetworkInterface", Params: createParams(v.Target.Region, spec)})
		}
		id := st.ENIID
		if id == "" {
			id = "<created above>"
		}
		st.Calls = append(st.Calls, Call{Action: "AttachNetworkInterface", Params: map[string]string{
			"RegionId": v.Target.Region, "InstanceId": v.Target.InstanceID,
			"NetworkInterfaceId": id, "NetworkCardIndex": strconv.Itoa(st.CardIndex),
		}})
		plan.Steps = append(plan.Steps, st)
	}
	return plan, nil
}

func keysInt(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// createSpec is the ENI erdmakit creates for slot n: the primary's vSwitch
// and security groups, tagged, with a client token that makes a retried
// create idempotent.
func createSpec(v *View, primary ENI, slot int) CreateSpec {
	return CreateSpec{
		VSwitchID:        primary.VSwitchID,
		SecurityGroupIDs: primary.SecurityGroupIDs,
		QueuePairNumber:  v.TypeInfo.QueuePairNumber,
		Tags:             map[string]string{TagCreator: TagCreatorVal, TagInstance: v.Target.InstanceID},
		ClientToken:      clip("erdmakit-"+v.Target.InstanceID+"-eri-"+strconv.Itoa(slot), 64),
		Name:             clip("erdmakit-eri-"+strconv.Itoa(slot), 128),
	}
}

func createParams(region string, s CreateSpec) map[string]string {
	p := map[string]string{
		"RegionId": region, "VSwitchId": s.VSwitchID,
		"NetworkInterfaceTrafficMode": ModeHighPerformance, "ClientToken": s.ClientToken,
		"NetworkInterfaceName": s.Name,
	}
	for i, g := range s.SecurityGroupIDs {
		p["SecurityGroupIds."+strconv.Itoa(i+1)] = g
	}
	if s.QueuePairNumber > 0 {
		p["QueuePairNumber"] = strconv.Itoa(s.QueuePairNumber)
	}
	for i, k := range sortedKeys(s.Tags) {
		p["Tag."+strconv.Itoa(i+1)+".Key"] = k
		p["Tag."+strconv.Itoa(i+1)+".Value"] = s.Tags[k]
	}
	return p
}

// Attach brings the instance to opt.Count ERIs, each on its own
// NetworkCardIndex. It is idempotent: ERIs already attached count, and
// ENIs it created earlier but did not attach (tagged) are attached instead
// of creating more. With DryRun it reads (Describe*) and plans, and makes
// no mutating call.
func (c *Client) Attach(ctx context.Context, t Target, opt AttachOptions) (*AttachResult, error) {
	progress := opt.Progress
	if progress == nil {
		progress = func(string) {}
	}
	v, err := c.Describe(ctx, t)
	if err != nil {
		return nil, err
	}
	tagged, err := c.DescribeENIs(ctx, ENIQuery{Tags: map[string]string{TagInstance: t.InstanceID}, Status: StatusAvailable})
	if err != nil {
		return nil, err
	}
	plan, err := PlanAttach(v, pendingENIs(v, tagged), opt.Count)
	if err != nil {
		return nil, err
	}
	res := &AttachResult{Plan: plan, DryRun: opt.DryRun}
	if opt.DryRun {
		return res, nil
	}
	primary, _ := v.Primary()
	for i, st := range plan.Steps {
		id := st.ENIID
		if st.Create {
			progress(fmt.Sprintf("creating ERI %d/%d (HighPerformance, vSwitch %s)", i+1, len(plan.Steps), primary.VSwitchID))
			id, err = c.CreateERI(ctx, createSpec(v, primary, plan.Have+i))
			if err != nil {
				return res, err
			}
		}
		progress(fmt.Sprintf("attaching %s on NetworkCardIndex %d", id, st.CardIndex))
		if err := c.AttachENI(ctx, t.InstanceID, id, st.CardIndex); err != nil {
			return res, err
		}
		if err := c.waitInUse(ctx, id, opt, progress); err != nil {
			return res, err
		}
	}
	v, err = c.Describe(ctx, t)
	if err != nil {
		return res, err
	}
	res.ERIs = v.ERIs()
	return res, nil
}

func (c *Client) waitInUse(ctx context.Context, id string, opt AttachOptions, progress func(string)) error {
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
		if status == StatusInUse {
			progress(fmt.Sprintf("%s InUse", id))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still %s after %s: %w", id, status, wait, ErrAttachTimeout)
		}
		progress(fmt.Sprintf("%s %s, waiting (up to %s)", id, status, time.Until(deadline).Round(time.Second)))
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", id, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// ConvertResult is what Convert did or would do.
type ConvertResult struct {
	Call   Call   `json:"call"`
	DryRun bool   `json:"dry_run"`
	Warn   string `json:"warning,omitempty"`
}

// ChannelWarning is the guide's caution about ModifyNetworkInterfaceAttribute.
const ChannelWarning = "ModifyNetworkInterfaceAttribute cannot choose the network-card channel " +
	"(NetworkCardIndex): if this ENI shares a channel with another ERI, the two share its bandwidth " +
	"(half each). Prefer 'erdmakit eri attach', which creates ERIs on distinct channels."

// Convert switches an ENI of the instance to HighPerformance mode. It
// refuses an ENI not attached to the instance and says when its channel is
// already used by another ERI.
func (c *Client) Convert(ctx context.Context, t Target, eniID string, dryRun bool) (*ConvertResult, error) {
	if eniID == "" {
		return nil, fmt.Errorf("convert: no ENI id: %w", ErrInvalidParameter)
	}
	res := &ConvertResult{DryRun: dryRun, Warn: ChannelWarning, Call: Call{Action: "ModifyNetworkInterfaceAttribute",
		Params: map[string]string{"RegionId": t.Region, "NetworkInterfaceId": eniID,
			"NetworkInterfaceTrafficConfig.NetworkInterfaceTrafficMode": ModeHighPerformance}}}
	enis, err := c.DescribeENIs(ctx, ENIQuery{InstanceID: t.InstanceID})
	if err != nil {
		return nil, err
	}
	var target *ENI
	for i := range enis {
		if enis[i].ID == eniID {
			target = &enis[i]
		}
	}
	if target == nil {
		return nil, fmt.Errorf("convert: %s is not attached to %s: %w", eniID, t.InstanceID, ErrInvalidParameter)
	}
	if target.IsERI() {
		res.Warn = eniID + " is already HighPerformance: nothing to do"
		res.Call = Call{}
		return res, nil
	}
	if target.NetworkCardIndex != nil {
		for _, e := range enis {
			if e.IsERI() && e.NetworkCardIndex != nil && *e.NetworkCardIndex == *target.NetworkCardIndex {
				res.Warn = fmt.Sprintf("%s is on NetworkCardIndex %d, already used by ERI %s: the two would share "+
					"its bandwidth (half each). ", eniID, *target.NetworkCardIndex, e.ID) + ChannelWarning
			}
		}
	}
	if dryRun {
		return res, nil
	}
	if err := c.SetHighPerformance(ctx, eniID); err != nil {
		return nil, err
	}
	return res, nil
}

// IsRetryable reports whether running the command again may succeed.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrThrottled) || errors.Is(err, ErrAttachTimeout)
}
