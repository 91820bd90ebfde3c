package nvml

import "github.com/erdmakit/erdmakit/nvml/smitopo"

// The matrix types live in package smitopo (standard library only, so an
// nvidia-smi topo -m paste parses anywhere); ComputeTopology builds the
// same Matrix from the PCI tree, so the two compare cell by cell.
type (
	// Link is one cell of the matrix (smitopo.Link: smitopo.LinkSYS, smitopo.LinkPIX, ...).
	Link = smitopo.Link
	// Endpoint is a row (and column) of the matrix.
	Endpoint = smitopo.Endpoint
	// Matrix is an nvidia-smi topo -m style matrix.
	Matrix = smitopo.Matrix
	// Nearest is one GPU's nearest NIC and what the distance means for NCCL.
	Nearest = smitopo.Nearest
)
