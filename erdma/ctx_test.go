package erdma_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/internal/hostgen"
)

// dev0 is erdma_0's real directory in a generated host (class/infiniband
// links to it, as in sysfs).
const dev0 = "sys/devices/pci0000:00/0000:00:05.0/infiniband/erdma_0"

// fifoHost is a generated one-device host in which the file rel is a FIFO
// with no writer: a read that opened it would wait for ever.
func fifoHost(t *testing.T, rel string) erdma.Host {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, hostgen.Write(dir, hostgen.Host("fifo", hostgen.HealthyNICs()[:1])))
	fixture.FIFO(t, dir, rel)
	return erdma.RecordedHost(dir)
}

// TestHostReadersReturnPromptlyOnAFIFO: issue 26 item 4. Every exported
// reader of a host root, with a FIFO where a file should be and a short
// deadline, returns at once with an error that names the FIFO.
func TestHostReadersReturnPromptlyOnAFIFO(t *testing.T) {
	state := dev0 + "/ports/1/state"
	counter := dev0 + "/ports/1/hw_counters/hw_tx_bytes_cnt"
	for _, tc := range []struct {
		name, fifo string
		read       func(ctx context.Context, h erdma.Host) (errs []string, err error)
	}{
		{"ReadDevices", state, func(ctx context.Context, h erdma.Host) ([]string, error) {
			_, errs, err := erdma.ReadDevices(ctx, h)
			return errs, err
		}},
		{"ReadInventory", state, func(ctx context.Context, h erdma.Host) ([]string, error) {
			inv, err := erdma.ReadInventory(ctx, h, erdma.InventoryOptions{})
			if inv == nil {
				return nil, err
			}
			return inv.Errors, err
		}},
		{"ReadCounters", counter, func(ctx context.Context, h erdma.Host) ([]string, error) {
			_, err := erdma.ReadCounters(ctx, h, "erdma_0", 1)
			return nil, err
		}},
		{"OpenCounters", counter, func(ctx context.Context, h erdma.Host) ([]string, error) {
			c, err := erdma.OpenCounters(ctx, h, "erdma_0", 1)
			if c != nil {
				c.Close()
			}
			return nil, err
		}},
		{"Host.ReadFile", state, func(ctx context.Context, h erdma.Host) ([]string, error) {
			_, err := h.ReadFile(ctx, state)
			return nil, err
		}},
		{"Host.Memlock", erdma.RecordedLimitsFile, func(ctx context.Context, h erdma.Host) ([]string, error) {
			_, err := h.Memlock(ctx)
			return nil, err
		}},
		{"Host.RecordedInstance", erdma.RecordedInstanceFile, func(ctx context.Context, h erdma.Host) ([]string, error) {
			_, err := h.RecordedInstance(ctx)
			return nil, err
		}},
		{"Host.Netdevs", erdma.RecordedNetdevsFile, func(ctx context.Context, h erdma.Host) ([]string, error) {
			_, err := h.Netdevs(ctx)
			return nil, err
		}},
		{"Host.Tools", erdma.RecordedToolsFile, func(ctx context.Context, h erdma.Host) ([]string, error) {
			_, err := h.Tools(ctx)
			return nil, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fifoHost(t, tc.fifo)
			var errs []string
			err := fixture.Promptly(t, func(ctx context.Context) error {
				var err error
				errs, err = tc.read(ctx, h)
				return err
			})
			all := strings.Join(append(errs, errString(err)), "\n")
			assert.Contains(t, all, filepath.Base(tc.fifo), "the error names the FIFO")
			assert.Contains(t, all, "FIFO")
		})
	}
}

// TestHostReadersGiveUpWhenCtxEnds: a context that has ended stops every
// reader before it reads, with ctx's error wrapped and the file named.
func TestHostReadersGiveUpWhenCtxEnds(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, hostgen.Write(dir, hostgen.Host("ended", hostgen.HealthyNICs()[:1])))
	h := erdma.RecordedHost(dir)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for name, read := range map[string]func() error{
		"ReadDevices": func() error { _, _, err := erdma.ReadDevices(ctx, h); return err },
		"ReadInventory": func() error {
			_, err := erdma.ReadInventory(ctx, h, erdma.InventoryOptions{SkipTools: true})
			return err
		},
		"ReadCounters":  func() error { _, err := erdma.ReadCounters(ctx, h, "erdma_0", 1); return err },
		"OpenCounters":  func() error { _, err := erdma.OpenCounters(ctx, h, "erdma_0", 1); return err },
		"Host.ReadFile": func() error { _, err := h.ReadFile(ctx, dev0+"/fw_ver"); return err },
		"Host.ReadDir":  func() error { _, err := h.ReadDir(ctx, erdma.ClassInfiniband); return err },
		"Host.ReadLink": func() error { _, err := h.ReadLink(ctx, erdma.ClassInfiniband+"/erdma_0"); return err },
		"Host.Memlock":  func() error { _, err := h.Memlock(ctx); return err },
		"Host.RecordedInstance": func() error {
			_, err := h.RecordedInstance(ctx)
			return err
		},
	} {
		err := read()
		assert.ErrorIs(t, err, context.Canceled, name)
		assert.Contains(t, errString(err), dir, name+": the error names what it was reading")
	}
}

// TestOpenHostArchiveFIFO: a FIFO named like a recording blocks the open
// of the archive until a writer comes; the deadline ends it.
func TestOpenHostArchiveFIFO(t *testing.T) {
	dir := t.TempDir()
	fixture.FIFO(t, dir, "host.tar.gz")
	p := filepath.Join(dir, "host.tar.gz")
	err := fixture.Promptly(t, func(ctx context.Context) error {
		_, c, err := erdma.OpenHost(ctx, p)
		c.Close()
		return err
	})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, p)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
