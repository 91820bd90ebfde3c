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

// Command is the call as a person would type it with the aliyun CLI
// (values shell-quoted where needed); a placeholder id stays as is.
func (c Call) Command() string {
	var b strings.Builder
	b.WriteString("aliyun ecs " + c.Action)
	for _, k := range sortedKeys(c.Params) {
		b.WriteString(" --" + k + " " + shellQuote(c.Params[k]))
	}
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/=,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Step kinds.
const (
	StepCreate = "create" // create an ERI, then attach it on a free card
	StepAttach = "attach" // attach an unattached ERI an earlier run created (adopted by tag)
	StepMove   = "move"   // detach an ERI that shares a card, re-attach it on a free one
)

// Step is one ERI to bring to InUse on its own card.
type Step struct {
	Kind string `json:"kind"` // StepCreate, StepAttach, StepMove
	// ENIID is the ENI attached or moved; "" when one is created.
	ENIID     string `json:"eni_id,omitempty"`
	Create    bool   `json:"create"`
	CardIndex int    `json:"network_card_index"`
	// FromCardIndex is the card a moved ERI shares with another.
	FromCardIndex *int `json:"from_network_card_index,omitempty"`
	// QueuePairNumber is a new ERI's share of the instance's budget.
	QueuePairNumber int    `json:"queue_pair_number,omitempty"`
	Calls           []Call `json:"calls"`
}

// AttachPlan is what Apply will do to reach Want ERIs, each on its own
// NetworkCardIndex.
type AttachPlan struct {
	Target Target `json:"target"`
	Want   int    `json:"want"`
	Have   int    `json:"have"` // ERIs attached now
	Steps  []Step `json:"steps"`
	// Notes say what was found that the steps fix (two ERIs on one card)
	// and what the steps need (the instance stopped).
	Notes []string `json:"notes"`
	// NeedsStopped: a move step detaches an ERI, which the instance must be
	// stopped for; Apply refuses on a running instance.
	NeedsStopped bool `json:"needs_stopped"`
	// QueuePairBudget is the instance's queue pairs for ERIs, as Alibaba's
	// erdma-controller budgets them: the type's QueuePairNumber, times its
	// ERI cards on a GPU type; QueuePairsUsed is what attached ERIs hold.
	QueuePairBudget int `json:"queue_pair_budget"`
	QueuePairsUsed  int `json:"queue_pairs_used"`
	// TerwayExcluded: new ERIs carry terway.alibabacloud.com/excluded=true.
	TerwayExcluded bool `json:"terway_excluded"`
	// Nonce makes this run's ClientTokens its own (a token reused after its
	// ENI was deleted could return the deleted one).
	Nonce string `json:"nonce"`

	view    *View
	primary ENI
}

// AttachOptions tunes Plan, Apply and Attach.
type AttachOptions struct {
	// Count is the number of ERIs wanted; 0 means what the type allows, at most 2.
	Count  int
	DryRun bool
	// TerwayExclude tags new ERIs terway.alibabacloud.com/excluded=true, so
	// that Terway (the ACK CNI) does not hand their addresses to pods; set
	// it on a Kubernetes node with Terway (DetectTerway; AttachOptionsFor
	// starts from it).
	TerwayExclude bool
	// Nonce is put in this run's ClientTokens; "" means a random one.
	Nonce string
	// Wait bounds the wait for each ENI to reach InUse; 0 means 3 min.
	Wait time.Duration
	// Poll is the interval between status reads; 0 means 3 s.
	Poll time.Duration
	// Progress, when set, receives one line per step and per wait.
	Progress func(string)
}

// MadeCall is a mutating call Apply actually made, with its outcome.
type MadeCall struct {
	Call
	Result string `json:"result"` // "ok" or "error: ..."
}

// Unattached is an ENI erdmakit created (or adopted) that is not attached
// at the end of a run that failed: a rerun attaches it, or it can be
// deleted with the command given.
type Unattached struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	// Delete is the aliyun CLI command that deletes it, only when it was
	// read back Available; "" otherwise, and Check says how to look first.
	Delete string `json:"delete"`
	Check  string `json:"check,omitempty"`
}

// AttachResult is what Attach did (or, dry-run, would do).
type AttachResult struct {
	Plan   AttachPlan `json:"plan"`
	DryRun bool       `json:"dry_run"`
	// Made lists the mutating calls actually made, in order: only these.
	Made []MadeCall `json:"calls_made"`
	// ERIs is the instance's ERIs at the end (after a real run).
	ERIs []ENI `json:"eris"`
	// Unattached lists ENIs of erdmakit's for this instance left
	// unattached, each with how to delete it.
	Unattached []Unattached `json:"unattached"`
	// Complete: every step succeeded (false after a failure or a dry run).
	Complete bool `json:"complete"`
}

// TagTerwayExcluded is the tag that keeps Terway from using an ENI's
// addresses for pods (as Alibaba's erdma-controller sets it).
const (
	TagTerwayExcluded    = "terway.alibabacloud.com/excluded"
	TagTerwayExcludedVal = "true"
)

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

// QueuePairBudget is the queue pairs an instance's ERIs may hold together,
// as Alibaba's erdma-controller budgets them: the type's QueuePairNumber,
// times the cards that carry ERIs (min(NetworkCardQuantity, EriQuantity),
// at least 1) on a GPU type.
func QueuePairBudget(ti TypeInfo) int {
	cards := 1
	if ti.NetworkCardQuantity >= 2 {
		cards = min(ti.NetworkCardQuantity, max(ti.EriQuantity, 1))
	}
	if ti.GPUAmount > 0 {
		return ti.QueuePairNumber * cards
	}
	return ti.QueuePairNumber
}

// PlanAttach decides what is missing to reach want ERIs on distinct
// network-card channels: ERIs that share a card are moved to a free one,
// unattached ERIs of an earlier run (pending) are attached, the rest are
// created, each with its share of the queue-pair budget. It makes no call.
func PlanAttach(v *View, pending []ENI, want int) (AttachPlan, error) {
	return planAttach(v, pending, AttachOptions{Count: want, Nonce: "-"})
}

func planAttach(v *View, pending []ENI, opt AttachOptions) (AttachPlan, error) {
	ti := v.TypeInfo
	want := opt.Count
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
	plan := AttachPlan{Target: v.Target, Want: want, Have: len(eris), Steps: []Step{}, Notes: []string{},
		TerwayExcluded: opt.TerwayExclude, Nonce: opt.Nonce, view: v, QueuePairBudget: QueuePairBudget(ti)}
	for _, e := range eris {
		plan.QueuePairsUsed += e.QueuePairNumber
	}
	cards := ti.NetworkCardIndexes
	if len(cards) == 0 {
		for i := 0; i < max(ti.NetworkCardQuantity, 1); i++ {
			cards = append(cards, i)
		}
	}
	cards = slices.Clone(cards)
	slices.Sort(cards)
	// ERIs by card: the first of each card stays (the primary, if it is
	// one: it cannot be detached), the others are moved.
	byCard := map[int][]ENI{}
	for _, e := range eris {
		if e.NetworkCardIndex != nil {
			byCard[*e.NetworkCardIndex] = append(byCard[*e.NetworkCardIndex], e)
		}
	}
	var movers []ENI
	for _, k := range keysInt(boolKeys(byCard)) {
		group := byCard[k]
		if len(group) < 2 {
			continue
		}
		sort.SliceStable(group, func(i, j int) bool {
			if group[i].IsPrimary() != group[j].IsPrimary() {
				return group[i].IsPrimary()
			}
			return deviceIndex(group[i]) < deviceIndex(group[j])
		})
		var ids []string
		for _, e := range group {
			ids = append(ids, e.ID)
		}
		plan.Notes = append(plan.Notes, fmt.Sprintf("ERIs %s share NetworkCardIndex %d: each gets half the bandwidth; "+
			"%s moves to a free card (the instance must be stopped first; the primary ENI cannot be detached)",
			strings.Join(ids, " and "), k, strings.Join(ids[1:], ", ")))
		movers = append(movers, group[1:]...)
	}
	var free []int
	for _, ci := range cards {
		if len(byCard[ci]) == 0 {
			free = append(free, ci)
		}
	}
	missing := max(want-len(eris), 0)
	if len(movers)+missing > len(free) {
		if len(movers) > 0 {
			return plan, fmt.Errorf("%d ERI(s) to move off a shared card and %d more wanted, free cards %v of %v: %w; "+
				"detach and delete the extra ERI instead", len(movers), missing, free, cards, ErrChannel)
		}
		return plan, fmt.Errorf("%d more ERI(s) wanted, free channels %v of %v (used %v): %w",
			missing, free, cards, keysInt(boolKeys(byCard)), ErrChannel)
	}
	if len(movers)+missing == 0 {
		return plan, nil
	}
	for i, m := range movers {
		from := *m.NetworkCardIndex
		plan.NeedsStopped = true
		plan.Steps = append(plan.Steps, Step{Kind: StepMove, ENIID: m.ID, CardIndex: free[i], FromCardIndex: &from,
			Calls: []Call{
				{Action: "DetachNetworkInterface", Params: map[string]string{"RegionId": v.Target.Region,
					"InstanceId": v.Target.InstanceID, "NetworkInterfaceId": m.ID}},
				attachCall(v.Target, m.ID, free[i]),
			}})
	}
	free = free[len(movers):]
	primary, ok := v.Primary()
	if missing > 0 && (!ok || primary.VSwitchID == "") {
		return plan, fmt.Errorf("the instance's primary ENI (vSwitch, security groups) is not in the answer: %w", ErrAPI)
	}
	plan.primary = primary
	creates := max(missing-len(pending), 0)
	left := plan.QueuePairBudget - plan.QueuePairsUsed
	for i := 0; i < min(missing, len(pending)); i++ {
		left -= pending[i].QueuePairNumber
	}
	share := 0
	if creates > 0 && plan.QueuePairBudget > 0 {
		share = left / creates
		if share <= 0 {
			return plan, fmt.Errorf("no queue pairs left for %d more ERI(s): the instance's budget is %d (%s: QueuePairNumber %d), "+
				"attached ERIs hold %d: %w", creates, plan.QueuePairBudget, ti.Type, ti.QueuePairNumber, plan.QueuePairsUsed, ErrQuota)
		}
	}
	for i := 0; i < missing; i++ {
		st := Step{Kind: StepAttach, CardIndex: free[i]}
		if i < len(pending) {
			st.ENIID = pending[i].ID
		} else {
			st.Kind, st.Create, st.QueuePairNumber = StepCreate, true, share
			spec := createSpec(&plan, len(eris)+i, share)
			st.Calls = append(st.Calls, Call{Action: "CreateNetworkInterface", Params: createParams(v.Target.Region, spec)})
		}
		id := st.ENIID
		if id == "" {
			id = "<created above>"
		}
		st.Calls = append(st.Calls, attachCall(v.Target, id, st.CardIndex))
		plan.Steps = append(plan.Steps, st)
	}
	return plan, nil
}

func attachCall(t Target, id string, card int) Call {
	return Call{Action: "AttachNetworkInterface", Params: map[string]string{
		"RegionId": t.Region, "InstanceId": t.InstanceID,
		"NetworkInterfaceId": id, "NetworkCardIndex": strconv.Itoa(card),
	}}
}

func deviceIndex(e ENI) int {
	if e.DeviceIndex == nil {
		return 1 << 30
	}
	return *e.DeviceIndex
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
// and security groups, tagged (a rerun adopts it), its share of the
// queue pairs, and a client token of this run (a retried create within
// the run returns the same ENI; a later run never gets a deleted one).
func createSpec(p *AttachPlan, slot, queuePairs int) CreateSpec {
	v := p.view
	tags := map[string]string{TagCreator: TagCreatorVal, TagInstance: v.Target.InstanceID}
	if p.TerwayExcluded {
		tags[TagTerwayExcluded] = TagTerwayExcludedVal
	}
	token := "erdmakit-" + v.Target.InstanceID + "-eri-" + strconv.Itoa(slot)
	if p.Nonce != "" && p.Nonce != "-" {
		token += "-" + p.Nonce
	}
	return CreateSpec{
		VSwitchID:        p.primary.VSwitchID,
		SecurityGroupIDs: p.primary.SecurityGroupIDs,
		QueuePairNumber:  queuePairs,
		Tags:             tags,
		ClientToken:      clip(token, 64),
		Name:             clip("erdmakit-eri-"+strconv.Itoa(slot), 128),
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

// String is the step on one line ("move eni-b card 0 -> 1"), for %v.
func (s Step) String() string {
	id := s.ENIID
	if id == "" {
		id = "<new ERI>"
	}
	if s.FromCardIndex != nil {
		return fmt.Sprintf("%s %s card %d -> %d", s.Kind, id, *s.FromCardIndex, s.CardIndex)
	}
	return fmt.Sprintf("%s %s card %d", s.Kind, id, s.CardIndex)
}
