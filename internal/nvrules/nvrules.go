// Package nvrules owns the NVIDIA driver rules that the host checks
// (package erdma), NVML's GPUDirect RDMA reading (package nvml) and the
// doctor's gpu fix share: how a driver version's major number is read, from
// which major nvidia_peermem is bundled, and the advice that follows from
// them. erdma and nvml do not import each other, so the rule lives here,
// once. Standard library only.
package nvrules

import (
	"fmt"
	"strconv"
	"strings"
)

// PeermemMin is the first NVIDIA driver major version that bundles
// nvidia_peermem (older drivers need the out-of-tree nv_peer_mem).
const PeermemMin = 470

// Major is the major number of an NVIDIA driver version ("535.161.08" ->
// 535). The error names the version when it is empty or not a positive
// number.
func Major(version string) (int, error) {
	head, _, _ := strings.Cut(strings.TrimSpace(version), ".")
	n, err := strconv.Atoi(head)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("driver version %q not understood", version)
	}
	return n, nil
}

// BundlesPeermem reports whether a driver of this version ships
// nvidia_peermem; known is false when the version does not parse.
func BundlesPeermem(version string) (bundles, known bool) {
	n, err := Major(version)
	if err != nil {
		return false, false
	}
	return n >= PeermemMin, true
}

// AtLeast is the rule as words: ">= 470".
func AtLeast() string { return ">= " + strconv.Itoa(PeermemMin) }

// InstallDriver is the step for a GPU host without an NVIDIA driver.
func InstallDriver() string {
	return "install the NVIDIA GPU driver (" + AtLeast() + ") and CUDA, then `modprobe nvidia`; check with nvidia-smi"
}

// Upgrade is the step for a driver older than PeermemMin.
func Upgrade() string {
	return "install an NVIDIA driver " + AtLeast() + " (it bundles nvidia_peermem)"
}

// TooOld says that a driver predates nvidia_peermem.
func TooOld(version string) string {
	return fmt.Sprintf("driver %s is older than %d", version, PeermemMin)
}

// LoadPeermem is the step that loads the module now, with what older
// drivers need instead.
func LoadPeermem() string {
	return "modprobe nvidia_peermem (bundled with NVIDIA driver " + AtLeast() + "; older drivers: install and load nv_peer_mem)"
}

// PeermemFile is where nvidia_peermem is persisted: the file setup's gpu
// stage writes and the gdr-peermem check's own advice names.
const PeermemFile = "/etc/modules-load.d/erdmakit-nvidia-peermem.conf"

// DMABUFAlternative is GPUDirect RDMA's other way, the one that needs no
// module: what it takes.
const DMABUFAlternative = "or GPUDirect RDMA through DMA-BUF (NVIDIA's recommendation, no module): kernel >= 5.12, " +
	"the NVIDIA open GPU kernel module, rdma-core >= 34, an RDMA provider with reg_dmabuf_mr"
