package eri

import (
	"context"
	"fmt"
	"strings"

	ecs "github.com/alibabacloud-go/ecs-20140526/v7/client"
	"github.com/alibabacloud-go/tea/dara"
)

// Bounds on what is read from the API.
const (
	maxENIs  = 256 // ENIs per query (an instance has at most a few dozen)
	pageSize = 100
	maxPages = maxENIs / pageSize
)

// DescribeType reads an instance type's facts (DescribeInstanceTypes).
func (c *Client) DescribeType(ctx context.Context, instanceType string) (TypeInfo, error) {
	req := &ecs.DescribeInstanceTypesRequest{InstanceTypes: []*string{dara.String(instanceType)}}
	var resp *ecs.DescribeInstanceTypesResponse
	err := c.call(ctx, "DescribeInstanceTypes", func(ctx context.Context) (err error) {
		resp, err = c.ecs.DescribeInstanceTypesWithContext(ctx, req, c.runtime())
		return err
	})
	if err != nil {
		return TypeInfo{}, err
	}
	if resp == nil || resp.Body == nil || resp.Body.InstanceTypes == nil {
		return TypeInfo{}, fmt.Errorf("DescribeInstanceTypes %s: %w: empty answer", instanceType, ErrAPI)
	}
	for _, t := range resp.Body.InstanceTypes.InstanceType {
		if t == nil || !strings.EqualFold(dara.StringValue(t.InstanceTypeId), instanceType) {
			continue
		}
		ti := TypeInfo{
			Type:                dara.StringValue(t.InstanceTypeId),
			EriQuantity:         int(dara.Int32Value(t.EriQuantity)),
			NetworkCardQuantity: int(dara.Int32Value(t.NetworkCardQuantity)),
			GPUAmount:           int(dara.Int32Value(t.GPUAmount)),
			GPUSpec:             dara.StringValue(t.GPUSpec),
			BandwidthRxKbps:     int(dara.Int32Value(t.InstanceBandwidthRx)),
			BandwidthTxKbps:     int(dara.Int32Value(t.InstanceBandwidthTx)),
			QueuePairNumber:     int(dara.Int32Value(t.QueuePairNumber)),
			EniQuantity:         int(dara.Int32Value(t.EniQuantity)),
		}
		if t.NetworkCards != nil {
			for i, nc := range t.NetworkCards.NetworkCardInfo {
				if i >= 64 {
					break
				}
				if nc != nil && nc.NetworkCardIndex != nil {
					ti.NetworkCardIndexes = append(ti.NetworkCardIndexes, int(*nc.NetworkCardIndex))
				}
			}
		}
		return ti, nil
	}
	return TypeInfo{}, fmt.Errorf("DescribeInstanceTypes: %q not in the answer: %w", instanceType, ErrInvalidParameter)
}

// ENIQuery selects ENIs for DescribeNetworkInterfaces.
type ENIQuery struct {
	InstanceID string
	IDs        []string
	Tags       map[string]string
	Status     string
}

// DescribeENIs lists ENIs (DescribeNetworkInterfaces), following NextToken
// up to a bound.
func (c *Client) DescribeENIs(ctx context.Context, q ENIQuery) ([]ENI, error) {
	req := &ecs.DescribeNetworkInterfacesRequest{
		RegionId:   dara.String(c.cfg.Region),
		MaxResults: dara.Int32(pageSize),
	}
	if q.InstanceID != "" {
		req.InstanceId = dara.String(q.InstanceID)
	}
	if q.Status != "" {
		req.Status = dara.String(q.Status)
	}
	for _, id := range q.IDs {
		req.NetworkInterfaceId = append(req.NetworkInterfaceId, dara.String(id))
	}
	for _, k := range sortedKeys(q.Tags) {
		req.Tag = append(req.Tag, &ecs.DescribeNetworkInterfacesRequestTag{Key: dara.String(k), Value: dara.String(q.Tags[k])})
	}
	var out []ENI
	for page := 0; page < maxPages+1; page++ {
		var resp *ecs.DescribeNetworkInterfacesResponse
		err := c.call(ctx, "DescribeNetworkInterfaces", func(ctx context.Context) (err error) {
			resp, err = c.ecs.DescribeNetworkInterfacesWithContext(ctx, req, c.runtime())
			return err
		})
		if err != nil {
			return nil, err
		}
		if resp == nil || resp.Body == nil {
			return nil, fmt.Errorf("DescribeNetworkInterfaces: %w: empty answer", ErrAPI)
		}
		if sets := resp.Body.NetworkInterfaceSets; sets != nil {
			for _, s := range sets.NetworkInterfaceSet {
				if s == nil {
					continue
				}
				if len(out) >= maxENIs {
					return nil, fmt.Errorf("DescribeNetworkInterfaces: more than %d ENIs: %w", maxENIs, ErrAPI)
				}
				out = append(out, eniFrom(s))
			}
		}
		next := dara.StringValue(resp.Body.NextToken)
		if next == "" {
			return out, nil
		}
		req.NextToken = dara.String(next)
	}
	return nil, fmt.Errorf("DescribeNetworkInterfaces: more than %d pages: %w", maxPages, ErrAPI)
}

func eniFrom(s *ecs.DescribeNetworkInterfacesResponseBodyNetworkInterfaceSetsNetworkInterfaceSet) ENI {
	e := ENI{
		ID:              dara.StringValue(s.NetworkInterfaceId),
		MAC:             strings.ToLower(dara.StringValue(s.MacAddress)),
		Type:            dara.StringValue(s.Type),
		TrafficMode:     dara.StringValue(s.NetworkInterfaceTrafficMode),
		IP:              dara.StringValue(s.PrivateIpAddress),
		Status:          dara.StringValue(s.Status),
		InstanceID:      dara.StringValue(s.InstanceId),
		VSwitchID:       dara.StringValue(s.VSwitchId),
		QueuePairNumber: int(dara.Int32Value(s.QueuePairNumber)),
	}
	if e.TrafficMode == "" {
		e.TrafficMode = ModeStandard
	}
	if a := s.Attachment; a != nil {
		if a.NetworkCardIndex != nil {
			v := int(*a.NetworkCardIndex)
			e.NetworkCardIndex = &v
		}
		if a.DeviceIndex != nil {
			v := int(*a.DeviceIndex)
			e.DeviceIndex = &v
		}
		if e.InstanceID == "" {
			e.InstanceID = dara.StringValue(a.InstanceId)
		}
	}
	if sg := s.SecurityGroupIds; sg != nil {
		for i, id := range sg.SecurityGroupId {
			if i < 16 && id != nil {
				e.SecurityGroupIDs = append(e.SecurityGroupIDs, *id)
			}
		}
	}
	if t := s.Tags; t != nil {
		for i, tag := range t.Tag {
			if i < 32 && tag != nil {
				if e.Tags == nil {
					e.Tags = map[string]string{}
				}
				e.Tags[dara.StringValue(tag.TagKey)] = dara.StringValue(tag.TagValue)
			}
		}
	}
	return e
}

// CreateSpec is what CreateERI needs.
type CreateSpec struct {
	VSwitchID        string
	SecurityGroupIDs []string
	QueuePairNumber  int // 0: the API's default
	Tags             map[string]string
	ClientToken      string // makes a retried create return the same ENI
	Name             string
}

// CreateERI creates an ENI in HighPerformance mode (CreateNetworkInterface).
func (c *Client) CreateERI(ctx context.Context, s CreateSpec) (string, error) {
	req := createRequest(c.cfg.Region, s)
	var resp *ecs.CreateNetworkInterfaceResponse
	err := c.call(ctx, "CreateNetworkInterface", func(ctx context.Context) (err error) {
		resp, err = c.ecs.CreateNetworkInterfaceWithContext(ctx, req, c.runtime())
		return err
	})
	if err != nil {
		return "", err
	}
	if resp == nil || resp.Body == nil || dara.StringValue(resp.Body.NetworkInterfaceId) == "" {
		return "", fmt.Errorf("CreateNetworkInterface: %w: no NetworkInterfaceId in the answer", ErrAPI)
	}
	return *resp.Body.NetworkInterfaceId, nil
}

func createRequest(region string, s CreateSpec) *ecs.CreateNetworkInterfaceRequest {
	req := &ecs.CreateNetworkInterfaceRequest{
		RegionId:                    dara.String(region),
		VSwitchId:                   dara.String(s.VSwitchID),
		NetworkInterfaceTrafficMode: dara.String(ModeHighPerformance),
	}
	for _, g := range s.SecurityGroupIDs {
		req.SecurityGroupIds = append(req.SecurityGroupIds, dara.String(g))
	}
	if s.QueuePairNumber > 0 {
		req.QueuePairNumber = dara.Int32(int32(s.QueuePairNumber))
	}
	if s.ClientToken != "" {
		req.ClientToken = dara.String(s.ClientToken)
	}
	if s.Name != "" {
		req.NetworkInterfaceName = dara.String(s.Name)
	}
	for _, k := range sortedKeys(s.Tags) {
		req.Tag = append(req.Tag, &ecs.CreateNetworkInterfaceRequestTag{Key: dara.String(k), Value: dara.String(s.Tags[k])})
	}
	return req
}

// AttachENI attaches an ENI on a network-card channel (AttachNetworkInterface).
func (c *Client) AttachENI(ctx context.Context, instanceID, eniID string, cardIndex int) error {
	req := &ecs.AttachNetworkInterfaceRequest{
		RegionId:           dara.String(c.cfg.Region),
		InstanceId:         dara.String(instanceID),
		NetworkInterfaceId: dara.String(eniID),
		NetworkCardIndex:   dara.Int32(int32(cardIndex)),
	}
	return c.call(ctx, "AttachNetworkInterface", func(ctx context.Context) error {
		_, err := c.ecs.AttachNetworkInterfaceWithContext(ctx, req, c.runtime())
		return err
	})
}

// DetachENI detaches an ENI from the instance (DetachNetworkInterface). An
// ERI is detached only from a stopped instance; the primary ENI never.
func (c *Client) DetachENI(ctx context.Context, instanceID, eniID string) error {
	req := &ecs.DetachNetworkInterfaceRequest{
		RegionId:           dara.String(c.cfg.Region),
		InstanceId:         dara.String(instanceID),
		NetworkInterfaceId: dara.String(eniID),
	}
	return c.call(ctx, "DetachNetworkInterface", func(ctx context.Context) error {
		_, err := c.ecs.DetachNetworkInterfaceWithContext(ctx, req, c.runtime())
		return err
	})
}

// InstanceState is what DescribeInstanceAttribute says of the instance.
type InstanceState struct {
	Status string `json:"status"` // "Running", "Stopped", ...
	// JumboFrame: the instance has jumbo frames enabled (EnableJumboFrame),
	// so its ERIs take MTU 8500, else 1400.
	JumboFrame bool `json:"jumbo_frame"`
}

// InstanceStatus reads the instance's status and jumbo-frame setting
// (DescribeInstanceAttribute).
func (c *Client) InstanceStatus(ctx context.Context, instanceID string) (InstanceState, error) {
	req := &ecs.DescribeInstanceAttributeRequest{InstanceId: dara.String(instanceID)}
	var resp *ecs.DescribeInstanceAttributeResponse
	err := c.call(ctx, "DescribeInstanceAttribute", func(ctx context.Context) (err error) {
		resp, err = c.ecs.DescribeInstanceAttributeWithContext(ctx, req, c.runtime())
		return err
	})
	if err != nil {
		return InstanceState{}, err
	}
	if resp == nil || resp.Body == nil || dara.StringValue(resp.Body.Status) == "" {
		return InstanceState{}, fmt.Errorf("DescribeInstanceAttribute %s: %w: no Status in the answer", instanceID, ErrAPI)
	}
	return InstanceState{Status: dara.StringValue(resp.Body.Status), JumboFrame: dara.BoolValue(resp.Body.EnableJumboFrame)}, nil
}

// SetHighPerformance converts an ENI to HighPerformance mode
// (ModifyNetworkInterfaceAttribute); the API cannot choose its channel.
func (c *Client) SetHighPerformance(ctx context.Context, eniID string) error {
	req := &ecs.ModifyNetworkInterfaceAttributeRequest{
		RegionId:           dara.String(c.cfg.Region),
		NetworkInterfaceId: dara.String(eniID),
		NetworkInterfaceTrafficConfig: &ecs.ModifyNetworkInterfaceAttributeRequestNetworkInterfaceTrafficConfig{
			NetworkInterfaceTrafficMode: dara.String(ModeHighPerformance),
		},
	}
	return c.call(ctx, "ModifyNetworkInterfaceAttribute", func(ctx context.Context) error {
		_, err := c.ecs.ModifyNetworkInterfaceAttributeWithContext(ctx, req, c.runtime())
		return err
	})
}

// Describe reads the whole View of the target: its type and its ENIs.
func (c *Client) Describe(ctx context.Context, t Target) (*View, error) {
	if t.InstanceID == "" || t.InstanceType == "" {
		return nil, fmt.Errorf("eri: instance id and type needed: %w", ErrNotOnECS)
	}
	ti, err := c.DescribeType(ctx, t.InstanceType)
	if err != nil {
		return nil, err
	}
	enis, err := c.DescribeENIs(ctx, ENIQuery{InstanceID: t.InstanceID})
	if err != nil {
		return nil, err
	}
	return &View{Target: t, TypeInfo: ti, ENIs: enis, Source: "api"}, nil
}
