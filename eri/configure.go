package eri

import (
	"context"
	"errors"

	"github.com/erdmakit/erdmakit/erdma"
)

// MTUs the guide allows: jumbo frames for NCCL, else 1400.
const (
	MTUJumbo = erdma.MTUJumbo
	MTUSmall = erdma.MTUSmall
)

// ErrConfigure: the OS side of an ERI could not be configured.
var ErrConfigure = errors.New("configuring an ERI netdev failed")

// NetConfig is what the metadata service says one ENI's netdev should carry.
type NetConfig = erdma.NetConfig

// ConfigureOptions tunes Configure.
type ConfigureOptions struct {
	MTU    int // 0 means MTUJumbo
	DryRun bool
	// Metadata is the service the addresses come from; nil means the real one.
	Metadata *erdma.MetadataClient
}

// LinkResult is what Configure did (or would do) to one netdev.
type LinkResult struct {
	MAC     string     `json:"mac"`
	Netdev  string     `json:"netdev,omitempty"`
	Config  *NetConfig `json:"config,omitempty"`
	Actions []string   `json:"actions,omitempty"`
	// LeftAlone says why nothing was touched (already up and addressed).
	LeftAlone string `json:"left_alone,omitempty"`
	Error     string `json:"error,omitempty"`
}

// NetConfigFor reads one ENI's IPv4, prefix (vswitch-cidr-block) and
// gateway from the metadata service (erdma.MetadataClient.NetConfig).
func NetConfigFor(ctx context.Context, md *erdma.MetadataClient, mac string) (NetConfig, error) {
	if md == nil {
		md = &erdma.MetadataClient{}
	}
	return md.NetConfig(ctx, mac)
}
