package labtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/internal/execx"
)

// Resources are one device's counts from `rdma res show`
// ("0: rxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 ctx 0 srq 0"), by kind: "pd",
// "cq", "qp", "cm_id", "mr", "ctx", "srq". An idle rxe device shows qp 1
// (the kernel's GSI QP) and pd 1, cq 1 of its own.
type Resources map[string]int

// ParseRdmaResShow reads `rdma res show` output into counts per device.
// A line that is not "<index>: <dev>: <kind> <n> ..." is an error naming it.
func ParseRdmaResShow(r io.Reader) (map[string]Resources, error) {
	out := map[string]Resources{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasSuffix(f[0], ":") || !strings.HasSuffix(f[1], ":") || len(f)%2 != 0 {
			return nil, fmt.Errorf("rdma res show line %d: unexpected %q", n, line)
		}
		if _, err := strconv.Atoi(strings.TrimSuffix(f[0], ":")); err != nil {
			return nil, fmt.Errorf("rdma res show line %d: index %q: %w", n, f[0], err)
		}
		dev := strings.TrimSuffix(f[1], ":")
		if dev == "" {
			return nil, fmt.Errorf("rdma res show line %d: empty device name", n)
		}
		res := Resources{}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.Atoi(f[i+1])
			if err != nil {
				return nil, fmt.Errorf("rdma res show line %d: %s count %q: %w", n, f[i], f[i+1], err)
			}
			res[f[i]] = v
		}
		out[dev] = res
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("rdma res show: %w", err)
	}
	return out, nil
}

// ResourcesOf runs `rdma res show` and returns dev's counts (for leak checks:
// take them before and after, compare).
func ResourcesOf(ctx context.Context, dev string) (Resources, error) {
	b, err := execx.Output(ctx, "rdma", "res", "show")
	if err != nil {
		return nil, fmt.Errorf("rdma res show: %w", err)
	}
	all, err := ParseRdmaResShow(strings.NewReader(string(b)))
	if err != nil {
		return nil, err
	}
	res, ok := all[dev]
	if !ok {
		return nil, fmt.Errorf("rdma res show: no line for %s in %q", dev, strings.TrimSpace(string(b)))
	}
	return res, nil
}

// WaitTCPListen waits until something in this VM listens on TCP port (any
// address; read from /proc/net/tcp{,6}, so no connection is made), e.g. a
// perftest server before its client starts.
func WaitTCPListen(ctx context.Context, port int) error {
	want := fmt.Sprintf(":%04X", port)
	for {
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			b, _ := os.ReadFile(f)
			for _, line := range strings.Split(string(b), "\n") {
				fs := strings.Fields(line)
				if len(fs) > 3 && strings.HasSuffix(fs[1], want) && fs[3] == "0A" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nothing listens on TCP port %d: %w", port, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WaitCMListen waits until an rdma_cm listener is bound to port: `rdma res
// show cm_id` shows "state LISTEN ... src-addr <ip>:<port>" (an rdma_cm
// server, e.g. perftest -R, listens on a cm_id, not a TCP socket).
func WaitCMListen(ctx context.Context, port int) error {
	want := fmt.Sprintf(":%d", port)
	for {
		out, _ := execx.Output(ctx, "rdma", "res", "show", "cm_id")
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "state LISTEN") && strings.Contains(line, "src-addr ") && strings.HasSuffix(strings.TrimSpace(line), want) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no rdma_cm listener on port %d: %w", port, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
