package nvml

import "github.com/erdmakit/erdmakit/nvml/smitopo"

// The comparison of two matrices is package smitopo's (standard library
// only: report prints it without importing nvml).
type (
	// Difference is a pair of endpoints whose link two matrices disagree on.
	Difference = smitopo.Difference
	// Comparison is the result of Compare.
	Comparison = smitopo.Comparison
)

// Compare lists the GPU<->NIC and GPU<->GPU cells where ours (computed
// from sysfs) and theirs (parsed nvidia-smi topo -m) disagree. NVLink
// cells (NV#) in theirs are not compared with PCIe words in ours
// (smitopo.Compare).
func Compare(ours, theirs *Matrix) Comparison { return smitopo.Compare(ours, theirs) }
