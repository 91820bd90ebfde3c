package eri

import (
	"context"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
)

// cniConfigDir is where a Kubernetes node keeps its CNI configuration.
const cniConfigDir = "etc/cni/net.d"

// DetectTerway reports whether h is a Kubernetes node whose CNI is Terway
// (Alibaba Cloud's, which hands ENI addresses to pods): a Terway
// configuration in /etc/cni/net.d. Where it is, new ERIs get the tag
// terway.alibabacloud.com/excluded=true (AttachOptions.TerwayExclude), as
// Alibaba's erdma-controller sets it. evidence names the file. It gives up
// (not found) when ctx ends.
func DetectTerway(ctx context.Context, h erdma.Host) (found bool, evidence string) {
	names, err := h.ReadDir(ctx, cniConfigDir)
	if err != nil {
		return false, ""
	}
	for i, n := range names {
		if i >= 256 {
			break
		}
		if strings.Contains(strings.ToLower(n), "terway") {
			return true, h.Path(cniConfigDir, n)
		}
	}
	return false, ""
}

// AttachOptionsFor is the AttachOptions `erdmakit eri attach` and `setup`
// start from on host h: TerwayExclude set where h is a Terway node
// (DetectTerway), so that no caller forgets it and Terway hands a new ERI's
// address to a pod. The zero AttachOptions tags nothing.
func AttachOptionsFor(ctx context.Context, h erdma.Host) AttachOptions {
	found, _ := DetectTerway(ctx, h)
	return AttachOptions{TerwayExclude: found}
}
