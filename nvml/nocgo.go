//go:build !cgo

package nvml

import (
	"context"
	"strings"
)

// Library stands for NVML in a build without cgo; nothing implements it
// but the stub Live and ForRoot return, whose reads fail with ErrNoCgo.
type Library interface {
	noNVML()
}

type noLibrary struct{}

func (noLibrary) noNVML() {}

// Live returns the stub: a build without cgo cannot load NVML.
func Live() Library { return noLibrary{} }

// ForRoot returns the stub for any root (a recorded snapshot is replayed
// through go-nvml's mock, which needs cgo too).
func ForRoot(ctx context.Context, root string) (Library, error) { return noLibrary{}, nil }

func noCgoError(op string) *InitError {
	return &InitError{Op: op, Code: "ERROR_LIBRARY_NOT_FOUND", Reason: "NVML not in this build",
		Remediation: "use an erdmakit built with cgo (CGO_ENABLED=1, the default with a C compiler)", kind: ErrNoCgo}
}

// Library returns the stub in a build without cgo (the snapshot is
// replayed through go-nvml's types, which need cgo): reads through it fail
// with ErrNoCgo.
func (s *Snapshot) Library() Library { return noLibrary{} }

// ReadGPUs fails with an InitError wrapping ErrNoCgo.
func ReadGPUs(ctx context.Context, lib Library, root string) (*GPUs, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, noCgoError("nvmlInit")
}

// Capture fails with an InitError wrapping ErrNoCgo.
func Capture(ctx context.Context, lib Library, note string) (*Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, noCgoError("nvmlInit")
}

// knownReturn accepts NVML's return names by their shape.
func knownReturn(name string) bool {
	return name == "SUCCESS" || strings.HasPrefix(name, "ERROR_")
}
