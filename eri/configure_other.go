//go:build !linux

package eri

import (
	"context"
	"fmt"

	"github.com/erdmakit/erdmakit/erdma"
)

// Configure configures netdevs through netlink, which only Linux has: here
// it answers ErrConfigure and erdma.ErrNotLinux. The cloud side (View,
// Attach, the plans) works on any OS.
func Configure(ctx context.Context, macs []string, opt ConfigureOptions) ([]LinkResult, error) {
	return nil, fmt.Errorf("%w: %w", ErrConfigure, erdma.ErrNotLinux)
}
