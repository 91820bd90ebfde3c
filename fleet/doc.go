// Package fleet runs erdmakit across many hosts through the launchers a
// cluster already has (Open MPI's mpirun, Slurm's srun): every rank finds its
// place from the launcher's environment and meets rank 0 over TCP; rank 0
// gathers the doctors' reports, or schedules a pairwise RDMA write-bandwidth
// mesh and names the bad host or link.
//
// No MPI library is linked: the rendezvous is a small length-prefixed protocol
// (wire.go) bounded in size and time at every step, so a dead or hung host is
// reported after a timeout and never hangs the run.
package fleet
