//go:build !cgo

package nvml

import "context"

// Library stands for NVML in a build without cgo: go-nvml's types need
// cgo, so nothing outside this package implements it. Live returns a stub
// whose reads fail with ErrNoCgo; ForRoot and Snapshot.Library return a
// recorded NVML, which ReadGPUs and Capture replay as the cgo build does.
type Library interface {
	noNVML()
}

type noLibrary struct{}

func (noLibrary) noNVML() {}

// recorded is a Snapshot's NVML in a build without cgo.
type recorded struct{ s *Snapshot }

func (recorded) noNVML() {}

// Live returns the stub: a build without cgo cannot load NVML.
func Live() Library { return noLibrary{} }

func noCgoError(op string) *InitError {
	return &InitError{Op: op, Code: "ERROR_LIBRARY_NOT_FOUND", Reason: "NVML not in this build",
		Remediation: "use an erdmakit built with cgo (CGO_ENABLED=1, the default with a C compiler)", kind: ErrNoCgo}
}

// Library returns an NVML that answers as the recorded one did. In a
// build without cgo it is read by ReadGPUs and Capture directly, with the
// same results as the replay through go-nvml's types in a cgo build.
func (s *Snapshot) Library() Library { return recorded{s} }

// ReadGPUs replays a recorded NVML (ForRoot of a recorded host,
// Snapshot.Library); the live one fails with an InitError wrapping ErrNoCgo.
func ReadGPUs(ctx context.Context, lib Library, root string) (*GPUs, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r, ok := lib.(recorded); ok {
		return r.s.recordedGPUs(ctx, root)
	}
	return nil, noCgoError("nvmlInit")
}

// Capture records a recorded NVML again; the live one fails with an
// InitError wrapping ErrNoCgo.
func Capture(ctx context.Context, lib Library, note string) (*Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r, ok := lib.(recorded); ok {
		return r.s.recapture(note), nil
	}
	return nil, noCgoError("nvmlInit")
}
