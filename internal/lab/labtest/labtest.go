// Package labtest is what lab tests (build tag `lab`, see package lab) use to
// find out where they run: Require fails them under CI=true outside the lab,
// the accessors read the environment the lab runner sets, and Listen/Dial
// connect the two sides of a TestLab2Host test. RequireNamespaces is the
// same rule for the tests that run in private namespaces on the host.
package labtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// The environment variables the lab runner sets inside the guest.
const (
	EnvLab      = "ERDMAKIT_LAB"
	EnvRole     = "ERDMAKIT_LAB_ROLE"
	EnvDevice   = "ERDMAKIT_LAB_DEVICE"
	EnvNetdev   = "ERDMAKIT_LAB_NETDEV"
	EnvIP       = "ERDMAKIT_LAB_IP"
	EnvPeer     = "ERDMAKIT_LAB_PEER"
	EnvGIDIndex = "ERDMAKIT_LAB_GID_INDEX"
	EnvOut      = "ERDMAKIT_LAB_OUT"
)

// Roles of a lab VM.
const (
	RoleSingle = "single" // the one-VM run
	RoleA      = "a"      // two-VM run, server side (10.0.9.1)
	RoleB      = "b"      // two-VM run, client side (10.0.9.2)
)

// DefaultDeadline bounds one side of a two-VM exchange (Listen, Dial).
const DefaultDeadline = 60 * time.Second

// InLab reports whether the process runs inside the lab guest.
func InLab() bool { return os.Getenv(EnvLab) == "1" }

// InCI reports whether CI=true (or any non-empty value other than "false").
func InCI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "false" && v != "0"
}

// Require skips t outside the lab, or fails it under CI=true: a lab test that
// does not run in CI is a test that silently stopped being run.
func Require(t testing.TB) {
	t.Helper()
	if InLab() {
		return
	}
	if InCI() {
		t.Fatalf("lab test outside the lab (%s is not 1): run it with `go run ./internal/lab/cmd/labrun`", EnvLab)
	}
	t.Skipf("lab test: needs the RDMA lab (go run ./internal/lab/cmd/labrun -pkg <pkg>)")
}

// RequireNamespaces skips t where it cannot make private namespaces (not
// root, no unshare), or fails it under CI=true.
func RequireNamespaces(t testing.TB) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "needs root"
	} else if _, err := exec.LookPath("unshare"); err != nil {
		why = "needs unshare (util-linux)"
	}
	if why == "" {
		return
	}
	if InCI() {
		t.Fatalf("namespace test %s (CI=true: failing instead of skipping)", why)
	}
	t.Skip(why)
}

// Require2Host is Require for TestLab2Host tests: it also needs a two-VM run
// (role a or b with a peer).
func Require2Host(t testing.TB) {
	t.Helper()
	Require(t)
	if r := Role(); (r != RoleA && r != RoleB) || Peer() == "" {
		t.Fatalf("two-host lab test in a %q run without a peer: name it TestLab2Host... so the runner runs it on two VMs", r)
	}
}

// Role is ERDMAKIT_LAB_ROLE: RoleSingle, RoleA or RoleB.
func Role() string { return os.Getenv(EnvRole) }

// IsServer reports whether this VM is the server side (role a) of a two-VM test.
func IsServer() bool { return Role() == RoleA }

// Device is the verbs device under test (rxe0).
func Device() string { return os.Getenv(EnvDevice) }

// Netdev is the device's network interface (eth0).
func Netdev() string { return os.Getenv(EnvNetdev) }

// IP is this VM's IPv4 address on Netdev.
func IP() string { return os.Getenv(EnvIP) }

// Peer is the other VM's IPv4 address; empty in the single-VM run.
func Peer() string { return os.Getenv(EnvPeer) }

// GIDIndex is the index of port 1's RoCE v2 GID for IP, or -1 if the runner
// could not find it.
func GIDIndex() int {
	n, err := strconv.Atoi(os.Getenv(EnvGIDIndex))
	if err != nil {
		return -1
	}
	return n
}

// OutDir is a writable directory whose contents the runner copies back to the
// host (under its -out directory, per package and role). It fails t when the
// variable is unset.
func OutDir(t testing.TB) string {
	t.Helper()
	d := os.Getenv(EnvOut)
	if d == "" {
		t.Fatalf("%s is not set: not in the lab", EnvOut)
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatalf("lab out dir: %v", err)
	}
	return d
}

// Deadline is a context bounded by DefaultDeadline and the test's own
// deadline, whichever is sooner; cancelled when t ends.
func Deadline(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), DefaultDeadline)
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			ctx, cancel = context.WithDeadline(ctx, dl.Add(-5*time.Second))
		}
	}
	t.Cleanup(cancel)
	return ctx
}

// Listen is the server side (role a) of a two-VM test: it listens on this
// VM's IP and port, waits for the peer's one connection within
// DefaultDeadline, and closes the listener. The connection is closed when t
// ends.
func Listen(t testing.TB, port int) net.Conn {
	t.Helper()
	c, err := Accept(Deadline(t), net.JoinHostPort(IP(), strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Dial is the client side (role b): it connects to the peer's port,
// retrying until the server listens or DefaultDeadline passes. The connection
// is closed when t ends.
func Dial(t testing.TB, port int) net.Conn {
	t.Helper()
	c, err := DialRetry(Deadline(t), net.JoinHostPort(Peer(), strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Accept listens on addr and returns the first connection, or an error when
// ctx ends first.
func Accept(ctx context.Context, addr string) (net.Conn, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	defer ln.Close()
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	c, err := ln.Accept()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("accept on %s: no peer connected: %w", addr, ctx.Err())
		}
		return nil, fmt.Errorf("accept on %s: %w", addr, err)
	}
	return c, nil
}

// DialRetry connects to addr, retrying every 200 ms while the peer is not
// listening yet, until ctx ends.
func DialRetry(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	var last error
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("dial %s: peer never listened (last: %v): %w", addr, last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
