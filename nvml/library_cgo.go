//go:build cgo

package nvml

import (
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
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

// nvmlError maps an NVML return code to an InitError.
func nvmlError(lib Library, op string, r gonvml.Return) *InitError {
	msg := ""
	if lib != nil {
		msg = lib.ErrorString(r)
	}
	return initError(op, returnName(r), msg)
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
