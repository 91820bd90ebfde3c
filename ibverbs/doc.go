// Package ibverbs is erdmakit's thin, plain binding of libibverbs and
// librdmacm: list and open RDMA devices, query device, port and GID
// attributes, and drive RC queue pairs for RDMA WRITE benchmarks.
//
// The libraries are opened with dlopen on first use (libibverbs.so.1 and
// librdmacm.so.1), never linked: a binary that imports this package starts on
// a host without the RDMA stack and gets ErrNotInstalled from the first call,
// which the doctor reports as a finding. Building needs cgo and a C
// compiler, not the RDMA headers: the shim declares the part of the verbs
// and rdma_cm ABI it uses (rdma_abi.h, from rdma-core's headers); without
// cgo, or off Linux, every call returns ErrNotSupported.
//
// The nouns mirror the verbs API: a Context (an opened device) allocates PDs
// and CQs, a PD registers MRs over Buffers (C memory, page aligned: Go memory
// is never handed to the device) and creates RC QPs. Each is an io.Closer;
// Close is idempotent, and closing a parent that still has live children
// returns an error wrapping syscall.EBUSY instead of freeing them.
//
// Queue pairs are connected either out of band (the caller exchanges
// Endpoint values, as perftest and NCCL do, then QP.Connect moves the QP
// INIT->RTR->RTS with a GRH on Ethernet link layers) or through librdmacm
// (ListenCM/DialCM), which iWARP devices require. The data path posts
// chained lists of RDMA WRITEs built on the C side (QP.PostWrites, one cgo
// call per list) and polls completions in batches into a caller-owned slice
// (CQ.Poll): neither allocates.
package ibverbs
