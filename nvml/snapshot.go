package nvml

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/erdmakit/erdmakit/internal/ctxio"
	"github.com/erdmakit/erdmakit/internal/hostfs"
)

// SnapshotSchema is the version of the nvml.json format.
const SnapshotSchema = 1

// Snapshot is a recorded NVML: what a host's NVML answered, so that a
// recorded host replays its GPUs through the same code as a live one
// (Snapshot.Library). It is stored as <root>/erdmakit/nvml.json.
type Snapshot struct {
	Schema int `json:"schema"`
	// Init is nvmlInit's return name: "SUCCESS", or the failure to replay
	// ("ERROR_DRIVER_NOT_LOADED", "ERROR_LIBRARY_NOT_FOUND", ...).
	Init string `json:"init"`
	// Note says where the snapshot came from ("captured by erdmakit record
	// on ...", "hand-made fixture").
	Note          string `json:"note,omitempty"`
	DriverVersion string `json:"driver_version,omitempty"`
	// CUDADriverVersion is nvmlSystemGetCudaDriverVersion's integer (12020).
	CUDADriverVersion int           `json:"cuda_driver_version,omitempty"`
	GPUs              []SnapshotGPU `json:"gpus"`
}

// SnapshotGPU is one GPU of a Snapshot, fields as NVML returns them.
type SnapshotGPU struct {
	Name string `json:"name"`
	UUID string `json:"uuid"`
	// PCIBusID is NVML's form, "00000000:17:00.0".
	PCIBusID string `json:"pci_bus_id"`
	// NUMANode is nvmlDeviceGetNumaNodeId's answer; null when NVML did not
	// support it (old driver), which makes readers fall back to sysfs.
	NUMANode    *int   `json:"numa_node"`
	MemoryTotal uint64 `json:"memory_total_bytes"`
	// NVLinks is the count of active NVLink links (0: NVLink not
	// supported); absent in recordings made before it was captured, which
	// then replay as "not known".
	NVLinks *int `json:"nvlinks,omitempty"`
}

// ReadSnapshot decodes and checks a snapshot. Once ctx is done it returns
// ctx's error, even while r blocks.
func ReadSnapshot(ctx context.Context, r io.Reader) (*Snapshot, error) {
	var s Snapshot
	dec := json.NewDecoder(ctxio.NewReader(ctx, r))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("NVML snapshot: %w", err)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("NVML snapshot: %w", err)
	}
	return &s, nil
}

// maxSnapshot bounds a recorded snapshot: a few KiB per GPU.
const maxSnapshot = 16 << 20

// readSnapshotIn reads SnapshotPath under a host root (confined to it).
func readSnapshotIn(ctx context.Context, r *hostfs.Root) (*Snapshot, error) {
	f, err := r.Open(SnapshotPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := ReadSnapshot(ctx, io.LimitReader(f, maxSnapshot))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return s, nil
}

// ReadSnapshotFile reads a snapshot file; a missing file matches
// os.ErrNotExist.
func ReadSnapshotFile(ctx context.Context, path string) (*Snapshot, error) {
	f, err := ctxio.Open(ctx, path) // a FIFO with no writer: Ctrl-C still ends it
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := ReadSnapshot(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Write encodes the snapshot as indented JSON.
func (s *Snapshot) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

func (s *Snapshot) validate() error {
	if s.Schema != SnapshotSchema {
		return fmt.Errorf("schema %d, want %d", s.Schema, SnapshotSchema)
	}
	if !knownReturn(s.Init) {
		return fmt.Errorf("init %q is not an NVML return name", s.Init)
	}
	for i, g := range s.GPUs {
		if _, err := NormalizeBusID(g.PCIBusID); err != nil {
			return fmt.Errorf("gpus[%d]: %w", i, err)
		}
	}
	return nil
}
