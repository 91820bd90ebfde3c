// Package nvml reads a host's NVIDIA GPUs through NVML (github.com/NVIDIA/go-nvml),
// decides whether GPUDirect RDMA is ready, and computes the GPU<->NIC PCIe
// distance matrix that NCCL uses to decide whether to use GPUDirect RDMA over
// eRDMA.
//
// Every NVML call goes through Library, the small part of go-nvml's
// nvml.Interface that erdmakit uses: the live library (Live), a go-nvml
// mock configured by a test, or a recorded host's snapshot
// (<root>/erdmakit/nvml.json, see Snapshot.Library) all run the same code.
// PCI topology, module and memory_peers facts are read from a host root
// ("/" or a recorded host's directory), never from fixed absolute paths.
//
// The package does not import the eRDMA inventory reader: callers pass the
// NICs (name and PCI address) whose distances they want, and package doctor
// turns a Report into the inventory's GPU summary and the gpu-count and
// gpu-nic-distance findings. Without cgo it builds on any OS: Live then
// reports that NVML needs cgo, while a recorded host's NVML (ForRoot,
// Snapshot.Library) replays with the same GPUs, warnings and errors as in
// a cgo build, so a recording's verdict does not depend on the build. The
// nvidia-smi topo -m matrix and its parser are in the standard-library-only
// package smitopo.
package nvml
