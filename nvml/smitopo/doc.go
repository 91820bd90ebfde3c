// Package smitopo reads and prints `nvidia-smi topo -m` matrices: how each
// GPU and NIC pair is connected (X, NV#, PIX, PXB, PHB, NODE, SYS), each
// GPU's nearest NIC, and what that distance means for NCCL's GPUDirect
// RDMA. It imports only the standard library, so a matrix pasted from a
// cluster parses on any OS without cgo; package nvml computes the same
// matrix from a host's PCI tree.
package smitopo
