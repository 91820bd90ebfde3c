package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/fixture"
)

// runWithin runs the CLI in process and fails the test when it has not
// returned after d (a command blocked in open() never returns).
func runWithin(t *testing.T, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errb := runCLI(args...)
		done <- result{code, out, errb}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(d):
		t.Fatalf("%v: still running after %v", args, d)
	}
	return 0, "", ""
}

// TestRecordedHostFIFOsAndDevicesAreRefused: issue 27 items 1 and 23. A
// FIFO in place of a sysfs or procfs file of a recorded host blocked
// devices, doctor, gpus, topo and record in open() for ever (SIGINT and
// SIGTERM ignored); a device node's bytes were printed as fw_ver. Now each
// command returns at once and names the file and what it is.
func TestRecordedHostFIFOsAndDevicesAreRefused(t *testing.T) {
	const dev = "sys/devices/pci0000:00/0000:00:05.0/infiniband/erdma_0/"
	places := []string{dev + "fw_ver", dev + "node_guid", dev + "ports/1/state",
		dev + "ports/1/hw_counters/accept_total_cnt", "proc/sys/kernel/osrelease", "erdmakit/nvml.json"}
	kinds := []string{"FIFO"}
	if os.Geteuid() == 0 {
		kinds = append(kinds, "character device", "block device")
	} else if os.Getenv("CI") == "true" {
		t.Fatal("device nodes need root (mknod): run the tests as root under CI")
	}
	for _, kind := range kinds {
		for _, place := range places {
			root := fixture.Host(t, "ebmgn8is-healthy")
			p := filepath.Join(root, place)
			require.NoError(t, os.Remove(p))
			switch kind {
			case "FIFO":
				require.NoError(t, syscall.Mkfifo(p, 0o644))
			case "character device": // /dev/urandom: its bytes were read as the attribute
				require.NoError(t, syscall.Mknod(p, syscall.S_IFCHR|0o644, 1<<8|9))
			case "block device": // loop2
				require.NoError(t, syscall.Mknod(p, syscall.S_IFBLK|0o644, 7<<8|2))
			}
			for _, args := range [][]string{{"devices"}, {"doctor"}, {"gpus"}, {"topo"},
				{"record", "--out", filepath.Join(t.TempDir(), "r.tar.gz")}} {
				_, out, errs := runWithin(t, 20*time.Second, append(args, "--root", root)...)
				if filepath.Base(place) == "fw_ver" && args[0] == "devices" {
					assert.Contains(t, out+errs, "fw_ver: neither a regular file nor a directory (a "+kind+")", "%s %v", kind, args)
				}
			}
		}
	}
}
