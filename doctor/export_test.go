package doctor

// The pipeline's pieces, tested one at a time by the external tests; an
// importer gets their findings from Run (or GPUs and the report).
var (
	GPUCountFinding    = gpuCountFinding
	GPUDistanceFinding = gpuDistanceFinding
	GPUInfo            = gpuInfo
	VerbsFinding       = verbsFinding
)

const MaxTopologyDifference = maxTopologyDifference
