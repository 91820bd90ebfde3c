package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Node is what erdmakit reads of a Kubernetes node.
type Node struct {
	Name       string
	Labels     map[string]string
	Conditions []Condition
}

// Condition is one entry of a node's status.conditions.
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"` // ConditionTrue, ConditionFalse, ConditionUnknown
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	LastHeartbeatTime  time.Time `json:"lastHeartbeatTime"`
	LastTransitionTime time.Time `json:"lastTransitionTime"`
}

// The values of Condition.Status.
const (
	ConditionTrue    = "True"
	ConditionFalse   = "False"
	ConditionUnknown = "Unknown"
)

// Condition returns the node's condition of type t, if it has one.
func (n *Node) Condition(t string) (Condition, bool) {
	for _, c := range n.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return Condition{}, false
}

// nodeJSON is the part of a v1 Node decoded.
type nodeJSON struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Status struct {
		Conditions []Condition `json:"conditions"`
	} `json:"status"`
}

// DecodeNode reads a v1 Node as the API server sends it.
func DecodeNode(data []byte) (*Node, error) {
	var nj nodeJSON
	if err := json.Unmarshal(data, &nj); err != nil {
		return nil, fmt.Errorf("kube: a node: %w", err)
	}
	if nj.Kind != "" && nj.Kind != "Node" {
		return nil, fmt.Errorf("kube: a node: kind %q", nj.Kind)
	}
	if err := validName("node", nj.Metadata.Name); err != nil {
		return nil, err
	}
	return &Node{Name: nj.Metadata.Name, Labels: nj.Metadata.Labels, Conditions: nj.Status.Conditions}, nil
}

// GetNode reads a node (RBAC: get nodes).
func (c *Client) GetNode(ctx context.Context, name string) (*Node, error) {
	if err := validName("node", name); err != nil {
		return nil, err
	}
	path := "/api/v1/nodes/" + name
	var raw json.RawMessage
	if err := c.do(ctx, "GET", path, nil, "", nil, &raw); err != nil {
		return nil, err
	}
	n, err := DecodeNode(raw)
	if err != nil {
		return nil, fmt.Errorf("kube: GET %s: %w", path, err)
	}
	return n, nil
}

// SetNodeCondition sets one condition of a node's status, leaving the
// others alone (a strategic merge patch keyed by type; RBAC: patch
// nodes/status).
func (c *Client) SetNodeCondition(ctx context.Context, node string, cond Condition) error {
	if err := validName("node", node); err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []Condition{cond}}})
	if err != nil {
		return err
	}
	return c.do(ctx, "PATCH", "/api/v1/nodes/"+node+"/status", nil, strategicPatch, body, nil)
}

// SetNodeLabels sets (value) or removes (nil) labels of a node, leaving the
// others alone (a JSON merge patch; RBAC: patch nodes).
func (c *Client) SetNodeLabels(ctx context.Context, node string, labels map[string]*string) error {
	if err := validName("node", node); err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return err
	}
	return c.do(ctx, "PATCH", "/api/v1/nodes/"+node, nil, mergePatch, body, nil)
}
