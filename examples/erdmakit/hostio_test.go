package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
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

// TestEveryOutputFileFollowsOneRule: issue 27 items 6 and 26. `nccl env
// --graph-file` replaced a FIFO, a character device and a symlink (exit
// 0); `bw --plot` and `nccl run --log` wrote through a symlink into its
// target; record --out, doctor --output and the graph file were forced to
// 0644 under umask 077 and turned an existing 0600 file into 0644. Every
// output now goes through internal/atomicfile: such targets are refused,
// a new file follows the umask, an existing one keeps its mode.
func TestEveryOutputFileFollowsOneRule(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	host := hostDir("ebmgn8is-healthy")
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep\n"), 0o600))

	writers := map[string]func(out string) (int, string, string){
		"record --out":    func(out string) (int, string, string) { return runCLI("record", "--root", host, "--out", out) },
		"doctor --output": func(out string) (int, string, string) { return runCLI("doctor", "--root", host, "--output", out) },
		"nccl env --graph-file": func(out string) (int, string, string) {
			return runCLI("nccl", "env", "--root", host, "--graph-file", out)
		},
		"bw --plot": func(out string) (int, string, string) {
			return runCLI("bw", "loopback", "--emulate-gbps", "10", "-n", "50", "--plot", out)
		},
		"nccl run --log": func(out string) (int, string, string) {
			return runCLI("nccl", "run", "--hosts", "localhost:1", "--socket-ifname", "", "--binary", filepath.Join(dir, "no-such-binary"), "--log", out)
		},
	}
	for name, write := range writers {
		t.Run(name, func(t *testing.T) {
			d := t.TempDir()
			link := filepath.Join(d, "link")
			require.NoError(t, os.Symlink(victim, link))
			fifo := filepath.Join(d, "fifo")
			require.NoError(t, syscall.Mkfifo(fifo, 0o600))
			targets := map[string]string{link: "a symlink", fifo: "a FIFO"}
			if os.Geteuid() == 0 {
				chr := filepath.Join(d, "null")
				require.NoError(t, syscall.Mknod(chr, syscall.S_IFCHR|0o666, 1<<8|3))
				targets[chr] = "a character device"
			}
			for p, kind := range targets {
				_, out, errs := write(p)
				assert.Contains(t, out+errs, "not a regular file ("+kind+"): refusing to replace it", p)
				fi, err := os.Lstat(p)
				require.NoError(t, err)
				assert.False(t, fi.Mode().IsRegular(), "%s is still %s", p, kind)
			}
			b, _ := os.ReadFile(victim)
			assert.Equal(t, "keep\n", string(b), "nothing written through the link")

			if name == "nccl run --log" {
				if _, err := exec.LookPath("mpirun"); err != nil {
					if os.Getenv("CI") == "true" {
						t.Fatalf("mpirun is required under CI (Debian openmpi-bin): %v", err)
					}
					return
				}
			}
			out := filepath.Join(d, "out")
			write(out)
			fi, err := os.Stat(out)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a new file under umask 077")
			require.NoError(t, os.Chmod(out, 0o640))
			write(out)
			fi, err = os.Stat(out)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "an existing file keeps its mode")
		})
	}
}

// TestExporterScrapesARootWithAFIFO: issue 27 item 1, the exporter's
// scrapes of a recorded root with a FIFO in place of a hw counter blocked
// in open() for ever. Now a scrape answers at once, saying what it could
// not read.
func TestExporterScrapesARootWithAFIFO(t *testing.T) {
	bin := buildCLI(t)
	root := fixture.Host(t, "ebmgn8is-healthy")
	p := filepath.Join(root, "sys/devices/pci0000:00/0000:00:05.0/infiniband/erdma_0/ports/1/hw_counters/accept_total_cnt")
	require.NoError(t, os.Remove(p))
	require.NoError(t, syscall.Mkfifo(p, 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd, addr, waited := startExporter(t, ctx, bin, root)
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-waited
	}()
	client := &http.Client{Timeout: 10 * time.Second}
	for i := 0; i < 2; i++ {
		resp, err := client.Get("http://" + addr + "/metrics")
		require.NoError(t, err, "scrape %d: blocked on the FIFO", i)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Contains(t, string(b), "erdmakit_port_active")
	}
}
