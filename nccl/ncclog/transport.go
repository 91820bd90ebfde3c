package ncclog

import "slices"

// NetTransport is the answer to "did NCCL run over RDMA or over TCP
// sockets?" for one log: Summary.Transport, decided once when the summary
// is made; the diagnosis, `parse nccl-log` and `nccl run` all show that one
// answer.
type NetTransport string

const (
	// NetRDMA: NCCL's NET/IB (eRDMA through verbs) on every rank.
	NetRDMA NetTransport = "rdma"
	// NetSocket: NET/Socket, NCCL's silent TCP fallback.
	NetSocket NetTransport = "socket"
	// NetMixed: some ranks on NET/IB, some on sockets.
	NetMixed NetTransport = "mixed"
	// NetPlugin: an external net plugin (e.g. "AWS Libfabric"), not NET/IB.
	NetPlugin NetTransport = "plugin"
	// NetUnknown: the log does not say (no "Using network" line, no
	// channel over the network, no NET/IB device).
	NetUnknown NetTransport = "unknown"
)

// netTransport decides RDMA or sockets from what the log said: "Using
// network X" first (every distinct value when ranks disagree), else the
// channel lines' transports, else the NET/IB device line.
func (l *Summary) netTransport() NetTransport {
	if l == nil {
		return NetUnknown
	}
	ib, sock := l.Channels["NET/IB"], l.Channels["NET/Socket"]
	switch {
	case l.Network == "Socket" && slices.Contains(l.Networks, "IB"), ib > 0 && sock > 0:
		// One communicator uses one network: both in one log means
		// ranks (or communicators) that differ.
		return NetMixed
	case l.Network == "Socket" || (l.Network == "" && sock > 0 && ib == 0):
		return NetSocket
	case slices.Contains(l.Networks, "Socket"):
		return NetMixed
	case l.Network == "IB" || (l.Network == "" && len(l.IBDevices) > 0 && sock == 0):
		return NetRDMA
	case l.Network != "":
		return NetPlugin
	}
	return NetUnknown
}
