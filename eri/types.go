package eri

import (
	"fmt"
	"strconv"
)

// Traffic modes of an ENI (NetworkInterfaceTrafficMode).
const (
	ModeStandard        = "Standard"        // TCP only
	ModeHighPerformance = "HighPerformance" // an ERI: eRDMA enabled
)

// ENI statuses the commands act on.
const (
	StatusAvailable = "Available"
	StatusAttaching = "Attaching"
	StatusInUse     = "InUse"
)

// Tags erdmakit puts on the ERIs it creates, so that a rerun finds them.
const (
	TagCreator    = "erdmakit:creator"
	TagCreatorVal = "erdmakit"
	TagInstance   = "erdmakit:instance-id"
)

// Target names the instance the calls are about.
type Target struct {
	Region       string `json:"region"`
	InstanceID   string `json:"instance_id"`
	InstanceType string `json:"instance_type"`
}

// TypeInfo is what DescribeInstanceTypes says about an instance type.
type TypeInfo struct {
	Type                string `json:"type"`
	EriQuantity         int    `json:"eri_quantity"` // 0: no ERI support
	NetworkCardQuantity int    `json:"network_card_quantity"`
	NetworkCardIndexes  []int  `json:"network_card_indexes"`
	GPUAmount           int    `json:"gpu_amount"`
	GPUSpec             string `json:"gpu_spec,omitempty"`
	BandwidthRxKbps     int    `json:"bandwidth_rx_kbps"`
	BandwidthTxKbps     int    `json:"bandwidth_tx_kbps"`
	QueuePairNumber     int    `json:"queue_pair_number"`
	EniQuantity         int    `json:"eni_quantity"`
}

// ENI is one elastic network interface as DescribeNetworkInterfaces shows it.
type ENI struct {
	ID               string            `json:"id"`
	MAC              string            `json:"mac"`          // lower case
	Type             string            `json:"type"`         // "Primary" | "Secondary"
	TrafficMode      string            `json:"traffic_mode"` // ModeStandard | ModeHighPerformance
	NetworkCardIndex *int              `json:"network_card_index,omitempty"`
	DeviceIndex      *int              `json:"device_index,omitempty"`
	IP               string            `json:"ip,omitempty"`
	Status           string            `json:"status"`
	InstanceID       string            `json:"instance_id,omitempty"`
	VSwitchID        string            `json:"vswitch_id,omitempty"`
	SecurityGroupIDs []string          `json:"security_group_ids,omitempty"`
	QueuePairNumber  int               `json:"queue_pair_number,omitempty"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// IsERI reports whether the ENI is an eRDMA interface.
func (e ENI) IsERI() bool { return e.TrafficMode == ModeHighPerformance }

// IsPrimary reports whether the ENI is the instance's primary one.
func (e ENI) IsPrimary() bool { return e.Type == "Primary" }

// View is what the cloud said about one instance: the type's facts and its
// ENIs. It holds no credential, so erdmakit record can store it.
type View struct {
	Target   Target   `json:"target"`
	TypeInfo TypeInfo `json:"type_info"`
	ENIs     []ENI    `json:"enis"`
	// Source is "api" for a live answer, "recorded" for a stored one.
	Source string `json:"source"`
}

// ERIs returns the ENIs attached to the instance in HighPerformance mode.
func (v *View) ERIs() []ENI {
	var out []ENI
	for _, e := range v.ENIs {
		if e.IsERI() && e.InstanceID == v.Target.InstanceID {
			out = append(out, e)
		}
	}
	return out
}

// Primary returns the instance's primary ENI, if the view has it.
func (v *View) Primary() (ENI, bool) {
	for _, e := range v.ENIs {
		if e.IsPrimary() {
			return e, true
		}
	}
	return ENI{}, false
}

// SharedChannels returns, per NetworkCardIndex used by more than one ERI,
// the ids of those ERIs: each such pair halves the total bandwidth.
func (v *View) SharedChannels() map[int][]string {
	by := map[int][]string{}
	for _, e := range v.ERIs() {
		if e.NetworkCardIndex != nil {
			by[*e.NetworkCardIndex] = append(by[*e.NetworkCardIndex], e.ID)
		}
	}
	for k, ids := range by {
		if len(ids) < 2 {
			delete(by, k)
		}
	}
	return by
}

// optInt is an optional number for String: the number, or "?".
func optInt(p *int) string {
	if p == nil {
		return "?"
	}
	return strconv.Itoa(*p)
}

// String is the ENI on one line ("eni-x Secondary HighPerformance InUse
// card 1 device 2 10.0.1.2"), an unknown card or device as "?": %v of an
// ENI printed the optional numbers' addresses.
func (e ENI) String() string {
	s := fmt.Sprintf("%s %s %s %s card %s device %s", e.ID, e.Type, e.TrafficMode, e.Status,
		optInt(e.NetworkCardIndex), optInt(e.DeviceIndex))
	if e.IP != "" {
		s += " " + e.IP
	}
	return s
}
