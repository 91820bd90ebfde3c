// Package erdma reads an Alibaba Cloud eRDMA host, live or recorded, into a
// typed Inventory and checks it against the steps of the eRDMA guide (the
// doctor).
//
// Every read goes through a Host: a file-system root ("/" for the live host,
// a directory for a recorded one) plus the few facts the kernel does not keep
// in files (network addresses, resource limits, programs on PATH). A live host
// and a recorded host differ only in where those facts come from, never in the
// parsing code.
//
// The package builds on any OS (CGO_ENABLED=0 too): a recorded host reads
// the same everywhere, so results and recordings are read on a laptop. The
// live host's network interfaces (netlink) and RLIMIT_MEMLOCK are Linux's:
// elsewhere they fail with ErrNotLinux.
package erdma
