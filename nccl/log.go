package nccl

import (
	"errors"
	"io"
)

// ErrNoNCCLLines is returned by AnalyzeLog when the input has no line NCCL prints.
var ErrNoNCCLLines = errors.New("no NCCL log lines found")

// LogSummary is what an NCCL_DEBUG=INFO log says about the network NCCL
// chose. Its JSON names are a public schema.
type LogSummary struct {
	NCCLVersion string `json:"nccl_version"` // "NCCL version 2.21.5+cuda12.4" -> "2.21.5"
	// Network is what "Using network X" says: "IB", "Socket" or a plugin's
	// name ("AWS Libfabric"); when no such line is present it is inferred
	// from the channel transports ("IB" or "Socket"), else empty.
	Network          string     `json:"network"`
	IBDevices        []IBDevice `json:"ib_devices"`        // "NET/IB : Using [0]erdma_0:1/RoCE ..."
	SocketInterfaces []string   `json:"socket_interfaces"` // "NET/Socket : Using [0]eth0:10.0.0.1<0>"
	GDR              GDR        `json:"gdr"`
	// Channels counts the channel connection lines ("Channel 00/0 : 0[0] ->
	// 1[1] via NET/IB/0/GDRDMA") per transport: "NET/IB", "NET/Socket",
	// "NET/<plugin>", "P2P", "SHM", "CollNet"... The first four are always present.
	Channels       map[string]int `json:"channels"`
	GDRDMAChannels int            `json:"gdrdma_channels"` // channel lines with /GDRDMA
	// Warnings are the NCCL WARN messages, deduplicated (at most 64 distinct).
	Warnings []string `json:"warnings"`

	// Networks lists every distinct "Using network" value when ranks disagree.
	Networks []string `json:"networks,omitempty"`
	// IBNoDevice is true when NCCL printed "NET/IB : No device found.".
	IBNoDevice bool `json:"ib_no_device"`
	// IBRelaxedOrdering is the "[RO]" flag of the NET/IB Using line.
	IBRelaxedOrdering bool `json:"ib_relaxed_ordering,omitempty"`
	// OOBInterface and OOBAddress are the NET/IB line's "OOB eth0:10.0.0.1<0>".
	OOBInterface string `json:"oob_interface,omitempty"`
	OOBAddress   string `json:"oob_address,omitempty"`
	// BootstrapInterface is "Bootstrap : Using eth0:10.0.0.1<0>".
	BootstrapInterface string `json:"bootstrap_interface,omitempty"`
	// Plugins are the net plugins NCCL initialised ("Initialized NET plugin X").
	Plugins []string `json:"plugins,omitempty"`
	// PluginErrors are plugin load or init failures ("NET/Plugin : Plugin
	// load returned 17 : libnccl-net.so: cannot open shared object file...").
	PluginErrors []string `json:"plugin_errors,omitempty"`
	// Env holds the NCCL_* variables NCCL reported ("NCCL_IB_HCA set to X",
	// "NCCL_SOCKET_IFNAME set by environment to eth0").
	Env map[string]string `json:"env,omitempty"`
	// NRanks is the "nranks N" of the "comm 0x... rank 0 nranks 16 ..." line.
	NRanks int `json:"nranks,omitempty"`
	// QPCreateFailures counts "Call to ibv_create_qp failed" warnings.
	QPCreateFailures int `json:"qp_create_failures,omitempty"`
	// MemlockSuspect is true when a verbs call failed with ENOMEM ("Unknown
	// error -12", "Cannot allocate memory"): on eRDMA hosts the cause has been
	// a locked-memory limit too low (LimitMEMLOCK=64K); the fix is ulimit -l unlimited.
	MemlockSuspect bool `json:"memlock_suspect,omitempty"`
	// Lines is how many lines were read, NCCLLines how many were NCCL's.
	Lines     int64 `json:"lines"`
	NCCLLines int64 `json:"nccl_lines"`
}

// IBDevice is one "[0]erdma_0:1/RoCE" entry of the NET/IB Using line.
type IBDevice struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	Port  int    `json:"port"`
	Link  string `json:"link"` // "IB" or "RoCE"
}

// GDR lists the HCAs of "NET/IB : GPU Direct RDMA Enabled|Disabled for HCA n 'name'".
type GDR struct {
	Enabled  []string `json:"enabled"`
	Disabled []string `json:"disabled"`
}

// AnalyzeLog reads an NCCL_DEBUG=INFO log from r in constant memory. It
// returns ErrNoNCCLLines (wrapped) when r has no NCCL line, and a read error
// if r fails.
func AnalyzeLog(r io.Reader) (*LogSummary, error) {
	return nil, errors.New("not implemented yet")
}

// LogAnalyzer analyses NCCL log lines fed one at a time; AnalyzeLog and the
// nccl-tests parser are built on it. The zero value is not ready: use
// NewLogAnalyzer.
type LogAnalyzer struct{}

// NewLogAnalyzer returns an analyser with nothing seen.
func NewLogAnalyzer() *LogAnalyzer { return &LogAnalyzer{} }

// Feed analyses one line (without its newline); it does not keep line.
// It reports whether the line was recognised as an NCCL line.
func (a *LogAnalyzer) Feed(line []byte) bool { return false }

// Summary returns what was seen so far. It may be called more than once.
func (a *LogAnalyzer) Summary() *LogSummary { return nil }
