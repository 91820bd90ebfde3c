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

// NetworkdMatches is shadowedBy's [Match] judge.
func NetworkdMatches(body, name, mac string) string {
	return networkdMatches(body, eri{name: name, mac: mac})
}
