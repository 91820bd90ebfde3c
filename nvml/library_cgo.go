//go:build cgo

package nvml

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/erdmakit/erdmakit/internal/hostfs"
)

// Library is the part of go-nvml's nvml.Interface that erdmakit calls.
// nvml.New() and *mock.Interface (github.com/NVIDIA/go-nvml/pkg/nvml/mock)
// both satisfy it, so tests replace the live library without touching the
// code that reads it; a recorded host's Snapshot.Library is another.
//
// In a build without cgo, go-nvml's types do not exist: Library is then an
// opaque interface that only Live, ForRoot and Snapshot.Library return, and
// every read through it fails with ErrNoCgo (which is ErrLibraryNotFound).
// The functions and their signatures are otherwise the same in both builds.
type Library interface {
	Init() gonvml.Return
	Shutdown() gonvml.Return
	ErrorString(gonvml.Return) string
	SystemGetDriverVersion() (string, gonvml.Return)
	SystemGetCudaDriverVersion() (int, gonvml.Return)
	DeviceGetCount() (int, gonvml.Return)
	DeviceGetHandleByIndex(int) (gonvml.Device, gonvml.Return)
	// Extensions gives LookupSymbol, used to avoid calling an entry point
	// that an old libnvidia-ml does not export (calling it would crash).
	Extensions() gonvml.ExtendedInterface
}

// Live returns the host's NVML, loaded with dlopen on Init: the binary
// starts on hosts without the NVIDIA driver and reports that as an
// InitError instead of failing to start.
func Live() Library {
	return gonvml.New()
}

// ForRoot returns the library for a host root: the live NVML for "/", the
// recorded snapshot (<root>/erdmakit/nvml.json) for any other root. A
// recorded host without a snapshot replays as "libnvidia-ml not found", so
// the reason printed names the missing file instead of this host's NVML.
// Reading the snapshot gives up when ctx ends.
func ForRoot(ctx context.Context, root string) (Library, error) {
	if root == "" || filepath.Clean(root) == "/" {
		return Live(), nil
	}
	r, err := hostfs.OpenContext(ctx, root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	s, err := readSnapshotIn(ctx, r)
	if errors.Is(err, os.ErrNotExist) {
		return (&Snapshot{Init: "ERROR_LIBRARY_NOT_FOUND",
			Note: "recorded host has no " + SnapshotPath}).Library(), nil
	}
	if err != nil {
		return nil, err
	}
	return s.Library(), nil
}

// nvmlError maps an NVML return code to an InitError.
func nvmlError(lib Library, op string, r gonvml.Return) *InitError {
	e := &InitError{Op: op, Code: returnName(r)}
	if lib != nil {
		e.Message = lib.ErrorString(r)
	}
	// Older libraries report a mismatch as ERROR_UNKNOWN with this string
	// ("Failed to initialize NVML: Driver/library version mismatch").
	mismatch := strings.Contains(strings.ToLower(e.Message), "version mismatch")
	switch {
	case r == gonvml.ERROR_LIB_RM_VERSION_MISMATCH || mismatch:
		e.kind, e.Reason = ErrVersionMismatch, "driver/library version mismatch"
		e.Remediation = "the loaded kernel driver and libnvidia-ml differ (usually after a driver upgrade): reboot, or unload and reload the nvidia modules"
	}
	if e.kind != nil {
		return e
	}
	switch r {
	case gonvml.ERROR_DRIVER_NOT_LOADED:
		e.kind, e.Reason = ErrNoDriver, "no NVIDIA driver"
		e.Remediation = "load the NVIDIA kernel driver (modprobe nvidia) or install it; the guide's image option \"Auto-install GPU Driver\" does this"
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		e.kind, e.Reason = ErrLibraryNotFound, "libnvidia-ml not found"
		e.Remediation = "install the NVIDIA driver's user-space libraries (" + LibraryName + ") or add their directory to the loader path (ldconfig)"
	case gonvml.ERROR_NO_PERMISSION:
		e.kind, e.Reason = ErrNoPermission, "insufficient permissions"
		e.Remediation = "run as root or as a user who can open /dev/nvidia*"
	case gonvml.ERROR_FUNCTION_NOT_FOUND:
		e.kind, e.Reason = ErrNVML, "NVML too old for this call"
		e.Remediation = "upgrade the NVIDIA driver"
	default:
		e.kind, e.Reason = ErrNVML, "NVML failed"
		e.Remediation = "check `nvidia-smi` and dmesg for the NVIDIA driver's messages"
	}
	return e
}

// returnNames are NVML's return code names, for messages and snapshots.
var returnNames = map[gonvml.Return]string{
	gonvml.SUCCESS:                       "SUCCESS",
	gonvml.ERROR_UNINITIALIZED:           "ERROR_UNINITIALIZED",
	gonvml.ERROR_INVALID_ARGUMENT:        "ERROR_INVALID_ARGUMENT",
	gonvml.ERROR_NOT_SUPPORTED:           "ERROR_NOT_SUPPORTED",
	gonvml.ERROR_NO_PERMISSION:           "ERROR_NO_PERMISSION",
	gonvml.ERROR_ALREADY_INITIALIZED:     "ERROR_ALREADY_INITIALIZED",
	gonvml.ERROR_NOT_FOUND:               "ERROR_NOT_FOUND",
	gonvml.ERROR_INSUFFICIENT_SIZE:       "ERROR_INSUFFICIENT_SIZE",
	gonvml.ERROR_INSUFFICIENT_POWER:      "ERROR_INSUFFICIENT_POWER",
	gonvml.ERROR_DRIVER_NOT_LOADED:       "ERROR_DRIVER_NOT_LOADED",
	gonvml.ERROR_TIMEOUT:                 "ERROR_TIMEOUT",
	gonvml.ERROR_IRQ_ISSUE:               "ERROR_IRQ_ISSUE",
	gonvml.ERROR_LIBRARY_NOT_FOUND:       "ERROR_LIBRARY_NOT_FOUND",
	gonvml.ERROR_FUNCTION_NOT_FOUND:      "ERROR_FUNCTION_NOT_FOUND",
	gonvml.ERROR_CORRUPTED_INFOROM:       "ERROR_CORRUPTED_INFOROM",
	gonvml.ERROR_GPU_IS_LOST:             "ERROR_GPU_IS_LOST",
	gonvml.ERROR_RESET_REQUIRED:          "ERROR_RESET_REQUIRED",
	gonvml.ERROR_OPERATING_SYSTEM:        "ERROR_OPERATING_SYSTEM",
	gonvml.ERROR_LIB_RM_VERSION_MISMATCH: "ERROR_LIB_RM_VERSION_MISMATCH",
	gonvml.ERROR_IN_USE:                  "ERROR_IN_USE",
	gonvml.ERROR_MEMORY:                  "ERROR_MEMORY",
	gonvml.ERROR_NO_DATA:                 "ERROR_NO_DATA",
	gonvml.ERROR_NOT_READY:               "ERROR_NOT_READY",
	gonvml.ERROR_GPU_NOT_FOUND:           "ERROR_GPU_NOT_FOUND",
	gonvml.ERROR_UNKNOWN:                 "ERROR_UNKNOWN",
}

func returnName(r gonvml.Return) string {
	if n, ok := returnNames[r]; ok {
		return n
	}
	return fmt.Sprintf("NVML_RETURN_%d", int32(r))
}

// returnByName is the inverse of returnName, for replaying snapshots.
func returnByName(name string) (gonvml.Return, bool) {
	for r, n := range returnNames {
		if n == name {
			return r, true
		}
	}
	return 0, false
}

// knownReturn reports whether name is one of NVML's return names.
func knownReturn(name string) bool {
	_, ok := returnByName(name)
	return ok
}
