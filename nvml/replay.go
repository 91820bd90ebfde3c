package nvml

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/erdmakit/erdmakit/internal/hostfs"
)

// ForRoot returns the library for a host root: the live NVML for "/", the
// recorded snapshot (<root>/erdmakit/nvml.json) for any other root. A
// recorded host without a snapshot replays as "libnvidia-ml not found", so
// the reason printed names the missing file instead of this host's NVML.
// Reading the snapshot gives up when ctx ends.
//
// A recorded snapshot replays in every build, cgo or not: the GPUs, the
// warnings and the errors ReadGPUs gives for it are the same, so a
// recording's verdict does not depend on how the reader was built. Only the
// live NVML needs cgo.
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

// returnNameList are NVML's return code names (nvml.h's nvmlReturn_t) a
// snapshot may record.
var returnNameList = []string{
	"SUCCESS", "ERROR_UNINITIALIZED", "ERROR_INVALID_ARGUMENT", "ERROR_NOT_SUPPORTED",
	"ERROR_NO_PERMISSION", "ERROR_ALREADY_INITIALIZED", "ERROR_NOT_FOUND", "ERROR_INSUFFICIENT_SIZE",
	"ERROR_INSUFFICIENT_POWER", "ERROR_DRIVER_NOT_LOADED", "ERROR_TIMEOUT", "ERROR_IRQ_ISSUE",
	"ERROR_LIBRARY_NOT_FOUND", "ERROR_FUNCTION_NOT_FOUND", "ERROR_CORRUPTED_INFOROM", "ERROR_GPU_IS_LOST",
	"ERROR_RESET_REQUIRED", "ERROR_OPERATING_SYSTEM", "ERROR_LIB_RM_VERSION_MISMATCH", "ERROR_IN_USE",
	"ERROR_MEMORY", "ERROR_NO_DATA", "ERROR_NOT_READY", "ERROR_GPU_NOT_FOUND", "ERROR_UNKNOWN",
}

// knownReturn reports whether name is one of NVML's return names.
func knownReturn(name string) bool { return slices.Contains(returnNameList, name) }

// initError maps an NVML return name to an InitError; message is NVML's
// own string for it (nvmlErrorString, or a snapshot's note).
func initError(op, code, message string) *InitError {
	e := &InitError{Op: op, Code: code, Message: message}
	// Older libraries report a mismatch as ERROR_UNKNOWN with this string
	// ("Failed to initialize NVML: Driver/library version mismatch").
	switch {
	case code == "ERROR_LIB_RM_VERSION_MISMATCH" || strings.Contains(strings.ToLower(message), "version mismatch"):
		e.kind, e.Reason = ErrVersionMismatch, "driver/library version mismatch"
		e.Remediation = "the loaded kernel driver and libnvidia-ml differ (usually after a driver upgrade): reboot, or unload and reload the nvidia modules"
	case code == "ERROR_DRIVER_NOT_LOADED":
		e.kind, e.Reason = ErrNoDriver, "no NVIDIA driver"
		e.Remediation = "load the NVIDIA kernel driver (modprobe nvidia) or install it; the guide's image option \"Auto-install GPU Driver\" does this"
	case code == "ERROR_LIBRARY_NOT_FOUND":
		e.kind, e.Reason = ErrLibraryNotFound, "libnvidia-ml not found"
		e.Remediation = "install the NVIDIA driver's user-space libraries (" + LibraryName + ") or add their directory to the loader path (ldconfig)"
	case code == "ERROR_NO_PERMISSION":
		e.kind, e.Reason = ErrNoPermission, "insufficient permissions"
		e.Remediation = "run as root or as a user who can open /dev/nvidia*"
	case code == "ERROR_FUNCTION_NOT_FOUND":
		e.kind, e.Reason = ErrNVML, "NVML too old for this call"
		e.Remediation = "upgrade the NVIDIA driver"
	default:
		e.kind, e.Reason = ErrNVML, "NVML failed"
		e.Remediation = "check `nvidia-smi` and dmesg for the NVIDIA driver's messages"
	}
	return e
}

// initReturn is the return the snapshot's nvmlInit replays: its recorded
// name, ERROR_UNKNOWN for a name NVML does not have.
func (s *Snapshot) initReturn() string {
	if !knownReturn(s.Init) {
		return "ERROR_UNKNOWN"
	}
	return s.Init
}

// initMessage is what the replayed nvmlErrorString says of a failed
// nvmlInit: the snapshot's note when it has one.
func (s *Snapshot) initMessage() string {
	if s.Note != "" {
		return s.Note
	}
	return s.initReturn()
}

// optional says which optional entry points the recording has answers
// for (every GPU answered them), as the replayed LookupSymbol does.
func (s *Snapshot) optional() optionalCalls {
	has := optionalCalls{numa: true, nvlink: true}
	for _, g := range s.GPUs {
		if g.NUMANode == nil {
			has.numa = false
		}
		if g.NVLinks == nil {
			has.nvlink = false
		}
	}
	return has
}

// optionalCalls says which calls newer than the oldest supported
// libnvidia-ml this one has.
type optionalCalls struct{ numa, nvlink bool }

// maxNVLinks is NVML's NVML_NVLINK_MAX_LINKS.
const maxNVLinks = 18

// busID is the bus id as NVML's 32-byte PciInfo.BusId carries it: at most
// 31 characters and up to the first NUL.
func busID(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return s[:i]
		}
	}
	if len(s) > 31 {
		return s[:31]
	}
	return s
}

// recordedGPUs is ReadGPUs on a snapshot without go-nvml's types: what
// reading Snapshot.Library through go-nvml gives (gpus_cgo.go), field for
// field, warning for warning, error for error. It is how a build without
// cgo replays a recorded host; TestRecordedGPUsMatchReplay pins it to the
// replay in the cgo build.
func (s *Snapshot) recordedGPUs(ctx context.Context, root string) (*GPUs, error) {
	if code := s.initReturn(); code != "SUCCESS" {
		return nil, initError("nvmlInit", code, s.initMessage())
	}
	out := &GPUs{DriverVersion: s.DriverVersion}
	if s.CUDADriverVersion != 0 {
		out.CUDAVersion = FormatCUDAVersion(s.CUDADriverVersion)
	} else {
		out.Warnings = append(out.Warnings, "CUDA driver version: ERROR_NOT_SUPPORTED")
	}
	has := s.optional()
	for i, sg := range s.GPUs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		g := GPU{Index: i, NUMANode: -1, Name: sg.Name, UUID: sg.UUID, MemoryTotal: sg.MemoryTotal}
		if bdf, err := NormalizeBusID(busID(sg.PCIBusID)); err == nil {
			g.PCIAddress = bdf
		} else {
			out.Warnings = append(out.Warnings, fmt.Sprintf("GPU%d: %v", i, err))
		}
		if has.numa {
			g.NUMANode, g.NUMASource = *sg.NUMANode, "nvml"
		}
		if g.NUMASource == "" && g.PCIAddress != "" {
			if node, ok := sysfsNUMANode(ctx, root, g.PCIAddress); ok {
				g.NUMANode, g.NUMASource = node, "sysfs"
			}
		}
		if has.nvlink {
			n := min(max(*sg.NVLinks, 0), maxNVLinks)
			g.NVLinks = &n
		}
		out.GPUs = append(out.GPUs, g)
	}
	return out, nil
}

// recapture is Capture of a snapshot's replay: the snapshot as a new
// capture records it, with note.
func (s *Snapshot) recapture(note string) *Snapshot {
	out := &Snapshot{Schema: SnapshotSchema, Note: note, GPUs: []SnapshotGPU{}, Init: s.initReturn()}
	if out.Init != "SUCCESS" {
		return out
	}
	out.DriverVersion, out.CUDADriverVersion = s.DriverVersion, s.CUDADriverVersion
	has := s.optional()
	for _, sg := range s.GPUs {
		g := SnapshotGPU{Name: sg.Name, UUID: sg.UUID, PCIBusID: busID(sg.PCIBusID), MemoryTotal: sg.MemoryTotal}
		if has.nvlink {
			n := min(max(*sg.NVLinks, 0), maxNVLinks)
			g.NVLinks = &n
		}
		if has.numa {
			n := *sg.NUMANode
			g.NUMANode = &n
		}
		out.GPUs = append(out.GPUs, g)
	}
	return out
}
