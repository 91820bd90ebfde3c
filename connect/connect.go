// Package connect names how RDMA queue pairs get connected: a device's
// Transport (RoCE, iWARP, InfiniBand) and the Method a test uses for it (the
// out-of-band exchange or rdma_cm). The bw engine, the perftest runner, the
// inventory and the CLI flags share these types and the one rule, Resolve,
// that picks the method for a transport. It imports only the standard
// library.
package connect

import "fmt"

// Transport is a device's personality: how its queue pairs can be connected.
type Transport string

const (
	// RoCE is eRDMA compat mode (and any IB CA with an Ethernet link
	// layer): out-of-band QPN/PSN/GID exchange and modify_qp work.
	RoCE Transport = "roce"
	// IWARP is eRDMA's iWARP personality (node_type 4: RNIC): queue pairs
	// reach RTS only through rdma_cm.
	IWARP Transport = "iwarp"
	// IB is native InfiniBand (link layer InfiniBand).
	IB Transport = "ib"
	// UnknownTransport: node_type or link layer could not be read.
	UnknownTransport Transport = "unknown"
)

// TransportOf decides the personality from sysfs's node_type code and a
// port's link_layer: node_type 4 (RNIC) is iWARP; a CA (1) with an Ethernet
// port is RoCE, with an InfiniBand port native IB; anything else unknown.
func TransportOf(nodeType int, linkLayer string) Transport {
	switch nodeType {
	case 4:
		return IWARP
	case 1:
		switch linkLayer {
		case "Ethernet":
			return RoCE
		case "InfiniBand":
			return IB
		}
	}
	return UnknownTransport
}

// Method is how a test connects its queue pairs. Its JSON and flag form is
// its name: "auto", "oob" or "rdma_cm".
type Method uint8

const (
	// Auto picks by the device's transport (see Resolve).
	Auto Method = 0
	// OOB exchanges QPN/PSN/GID over a TCP connection and moves the QPs to
	// RTS with modify_qp (eRDMA compat mode, RoCE, IB; perftest without -R).
	OOB Method = 1
	// RDMACM connects through librdmacm (eRDMA iWARP mode; perftest -R).
	RDMACM Method = 2
)

// Resolve is the method to use on a device of transport t: m itself unless
// it is Auto, then rdma_cm for iWARP (the only way its QPs reach RTS) and
// the out-of-band exchange for everything else.
func (m Method) Resolve(t Transport) Method {
	if m != Auto {
		return m
	}
	if t == IWARP {
		return RDMACM
	}
	return OOB
}

func (m Method) String() string {
	switch m {
	case Auto:
		return "auto"
	case OOB:
		return "oob"
	case RDMACM:
		return "rdma_cm"
	}
	return fmt.Sprintf("method %d", uint8(m))
}

// Valid reports whether m is one of the three methods.
func (m Method) Valid() bool { return m <= RDMACM }

// ParseMethod reads "auto" (or ""), "oob" or "rdma_cm" (also "rdmacm",
// "cm").
func ParseMethod(s string) (Method, error) {
	switch s {
	case "", "auto":
		return Auto, nil
	case "oob":
		return OOB, nil
	case "rdma_cm", "rdmacm", "cm":
		return RDMACM, nil
	}
	return 0, fmt.Errorf("connection method %q: want auto, oob or rdma_cm", s)
}

// MarshalText makes a Method print as its name in JSON.
func (m Method) MarshalText() ([]byte, error) {
	if !m.Valid() {
		return nil, fmt.Errorf("connection method %d: want 0 (auto), 1 (oob) or 2 (rdma_cm)", uint8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText reads a Method's name (see ParseMethod).
func (m *Method) UnmarshalText(b []byte) error {
	v, err := ParseMethod(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Set and Type make *Method a command-line flag value (pflag.Value,
// flag.Value): `--conn rdma_cm`.
func (m *Method) Set(s string) error { return m.UnmarshalText([]byte(s)) }

// Type names the flag's value in help text.
func (m *Method) Type() string { return "auto|oob|rdma_cm" }
