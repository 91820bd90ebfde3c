package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
)

// Defaults of NodeAgent.
const (
	DefaultInterval  = time.Minute
	DefaultHeartbeat = 5 * time.Minute
)

// NodeAgent keeps one node's ERDMAReady condition and labels equal to the
// doctor's verdict on it: every Interval it runs the doctor, reads the node
// and patches what differs; an unchanged condition is patched again only
// when its heartbeat is Heartbeat old (node-problem-detector's habit, so a
// stale condition shows its age).
type NodeAgent struct {
	Client *Client
	// Node is the node's name (the pod's spec.nodeName).
	Node string
	// Doctor runs the doctor on the node's host.
	Doctor func(ctx context.Context) (*erdma.Report, error)
	// Interval between two verdicts (0: DefaultInterval), Heartbeat the
	// longest an unchanged condition goes unpatched (0: DefaultHeartbeat).
	Interval, Heartbeat time.Duration
	// Log, when set, says what was patched and why a round failed.
	Log *slog.Logger
	// Now is time.Now in production.
	Now func() time.Time
}

// Sync is what one round did.
type Sync struct {
	Verdict Verdict `json:"verdict"`
	// ConditionPatched and LabelsPatched say whether the node was written.
	ConditionPatched bool `json:"condition_patched"`
	LabelsPatched    bool `json:"labels_patched"`
	// Changed: the condition's status, reason or message differ from what
	// the node had.
	Changed bool `json:"changed"`
}

// Once runs the doctor and brings the node in line with its verdict.
func (a *NodeAgent) Once(ctx context.Context) (Sync, error) {
	if a.Client == nil || a.Doctor == nil {
		return Sync{}, errors.New("kube: NodeAgent needs a Client and a Doctor")
	}
	rep, derr := a.Doctor(ctx)
	if ctx.Err() != nil {
		return Sync{}, ctx.Err()
	}
	v := VerdictOf(rep, derr)
	node, err := a.Client.GetNode(ctx, a.Node)
	if err != nil {
		return Sync{Verdict: v}, err
	}
	return a.apply(ctx, node, v)
}

func (a *NodeAgent) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// apply patches node where it differs from v.
func (a *NodeAgent) apply(ctx context.Context, node *Node, v Verdict) (Sync, error) {
	s := Sync{Verdict: v}
	now := a.now().UTC().Truncate(time.Second)
	cond, changed := NextCondition(node, v, now)
	s.Changed = changed
	old, had := node.Condition(ConditionType)
	hb := a.Heartbeat
	if hb <= 0 {
		hb = DefaultHeartbeat
	}
	if changed || !had || now.Sub(old.LastHeartbeatTime) >= hb {
		if err := a.Client.SetNodeCondition(ctx, node.Name, cond); err != nil {
			return s, err
		}
		s.ConditionPatched = true
	}
	if diff := LabelChanges(node.Labels, v.Labels()); len(diff) > 0 {
		if err := a.Client.SetNodeLabels(ctx, node.Name, diff); err != nil {
			return s, err
		}
		s.LabelsPatched = true
	}
	if a.Log != nil && (s.Changed || s.LabelsPatched) {
		a.Log.Info("node verdict", "node", node.Name, "ready", v.Ready, "reason", v.Reason, "message", v.Message)
	}
	return s, nil
}

// NextCondition is the ERDMAReady condition node should carry for v at now:
// its transition time kept unless the status changes. changed says whether
// status, reason or message differ from the node's.
func NextCondition(node *Node, v Verdict, now time.Time) (c Condition, changed bool) {
	c = Condition{Type: ConditionType, Status: v.Ready, Reason: v.Reason, Message: v.Message,
		LastHeartbeatTime: now, LastTransitionTime: now}
	old, had := node.Condition(ConditionType)
	if !had {
		return c, true
	}
	if old.Status == c.Status && !old.LastTransitionTime.IsZero() {
		c.LastTransitionTime = old.LastTransitionTime
	}
	return c, old.Status != c.Status || old.Reason != c.Reason || old.Message != c.Message
}

// LabelChanges is the merge patch's labels that turn have into have plus
// want: the keys of want whose value differs, nothing when none does.
func LabelChanges(have, want map[string]string) map[string]*string {
	diff := map[string]*string{}
	for k, v := range want {
		if cur, ok := have[k]; !ok || cur != v {
			diff[k] = &v
		}
	}
	return diff
}

// Run calls Once every Interval until ctx ends; a failed round is logged
// and the next one tries again. It returns ctx's error.
func (a *NodeAgent) Run(ctx context.Context) error {
	iv := a.Interval
	if iv <= 0 {
		iv = DefaultInterval
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		if _, err := a.Once(ctx); err != nil && ctx.Err() == nil && a.Log != nil {
			a.Log.Error("node verdict not set", "node", a.Node, "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// ClearNode takes what the node agent set off a node: its labels and the
// ERDMAReady condition (uninstalling; RBAC: patch nodes and nodes/status).
func (c *Client) ClearNode(ctx context.Context, node string) error {
	if err := c.SetNodeLabels(ctx, node, map[string]*string{LabelReady: nil, LabelStatus: nil}); err != nil {
		return err
	}
	body := []byte(`{"status":{"conditions":[{"type":"` + ConditionType + `","$patch":"delete"}]}}`)
	if err := c.do(ctx, "PATCH", "/api/v1/nodes/"+node+"/status", nil, strategicPatch, body, nil); err != nil {
		return fmt.Errorf("kube: removing %s from node %s: %w", ConditionType, node, err)
	}
	return nil
}
