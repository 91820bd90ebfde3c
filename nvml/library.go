package nvml

import (
	"errors"
	"fmt"
)

// LibraryName is the NVML shared object the live library dlopens.
const LibraryName = "libnvidia-ml.so.1"

// SnapshotPath is where a recorded host keeps its NVML snapshot, relative
// to the host root.
const SnapshotPath = "erdmakit/nvml.json"

// Sentinel errors an InitError matches with errors.Is.
var (
	// ErrNoDriver: the NVIDIA kernel driver is not loaded.
	ErrNoDriver = errors.New("no NVIDIA driver")
	// ErrLibraryNotFound: libnvidia-ml.so.1 could not be loaded.
	ErrLibraryNotFound = errors.New("libnvidia-ml not found")
	// ErrVersionMismatch: the user-space library and kernel driver differ.
	ErrVersionMismatch = errors.New("driver/library version mismatch")
	// ErrNoPermission: the caller may not open the GPU device files.
	ErrNoPermission = errors.New("insufficient permissions for NVML")
	// ErrNVML is any other NVML failure.
	ErrNVML = errors.New("NVML error")
	// ErrNoCgo: this build has no NVML (go-nvml needs cgo): rebuild with
	// CGO_ENABLED=1 to read GPUs. Only a build without cgo returns it; it
	// wraps ErrLibraryNotFound, so code that handles "no NVML" handles it too.
	// Everything else in the package (sysfs, GPUDirect RDMA files, the
	// topology, nvidia-smi topo parsing) works in every build.
	ErrNoCgo = fmt.Errorf("built without cgo: %w", ErrLibraryNotFound)
)

// InitError is an NVML failure in plain words: Reason is what the doctor
// prints, Remediation the step that fixes it, Code the NVML return name.
type InitError struct {
	Op          string // "nvmlInit", "nvmlDeviceGetCount", ...
	Code        string // "ERROR_DRIVER_NOT_LOADED"
	Message     string // NVML's own string for the code
	Reason      string // "no NVIDIA driver"
	Remediation string
	kind        error
}

func (e *InitError) Error() string {
	if e.Message != "" && e.Message != e.Code {
		return fmt.Sprintf("%s: %s (%s: %s)", e.Reason, e.Op, e.Code, e.Message)
	}
	return fmt.Sprintf("%s: %s (%s)", e.Reason, e.Op, e.Code)
}

// Unwrap makes errors.Is(err, ErrNoDriver) and friends work.
func (e *InitError) Unwrap() error { return e.kind }
