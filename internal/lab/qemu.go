package lab

import (
	"bufio"
	"context"

	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/internal/execx"
)

// Net is how a VM's eth0 is connected.
type Net struct {
	// Local and Remote: a qemu UDP socket netdev joining two VMs over
	// loopback, this VM's end and its peer's ("127.0.0.1:PORT"). Both
	// empty: a user-mode (slirp) NIC of its own. UDP, not the TCP socket
	// netdev: qemu does not set TCP_NODELAY on that one, and Nagle's
	// algorithm against delayed ACKs held every frame about 22 ms (two
	// VMs' RDMA write latency was 22 ms one way; over UDP it is 0.2 ms).
	Local  string
	Remote string
	MAC    string // "52:54:00:00:09:01"
}

// VM is one guest: the kernel and initramfs to boot, the work dir shared
// read-write and the script in it that init runs.
type VM struct {
	Name      string // for messages: "single", "a", "b"
	Qemu      string // qemu-system-x86_64
	Kernel    Kernel
	Initramfs string
	WorkDir   string // host dir shared as TagLab, appearing as GuestLab
	Script    string // file name in WorkDir that init runs after the chroot
	MemoryMiB int    // 1024 when 0
	// CPUs is the guest's vCPU count, 1 when 0. With more than one, qemu
	// runs each vCPU on a host thread of its own (multi-threaded TCG).
	CPUs int
	// ICount is qemu's -icount option ("shift=2,sleep=on"), or "" for
	// none: with it the guest's clock counts instructions, not the host's
	// time, so a benchmark inside sees a machine the host's load cannot
	// slow down (each instruction costs the same: memory stalls are free).
	ICount string
	Net    Net
	// Keep are host directories under /tmp, /run or /var/tmp (which the
	// guest covers with tmpfs) that must stay visible at the same path: a
	// checkout under /tmp, as CI may use.
	Keep []string
}

// Args is the qemu command line (without the program name): software
// emulation (no KVM on these machines), no default devices, the serial
// console on stdio, the host's / read-only and the work dir read-write
// over 9p, one virtio NIC.
func (vm VM) Args() []string {
	mem := vm.MemoryMiB
	if mem == 0 {
		mem = 1024
	}
	cpus := vm.CPUs
	if cpus <= 0 {
		cpus = 1
	}
	netdev := "user,id=n0,restrict=on"
	if vm.Net.Local != "" || vm.Net.Remote != "" {
		netdev = "socket,id=n0,udp=" + vm.Net.Remote + ",localaddr=" + vm.Net.Local
	}
	mac := vm.Net.MAC
	if mac == "" {
		mac = "52:54:00:00:09:01"
	}
	appendLine := strings.Join([]string{
		"console=ttyS0", "quiet", "loglevel=3", "panic=-1", "rdinit=/init",
		"mitigations=off", "tsc=reliable", "no_timer_check", "nokaslr",
		"erdmakit.script=" + vm.Script,
	}, " ")
	for _, k := range vm.Keep {
		appendLine += " erdmakit.keep=" + k
	}
	args := []string{
		"-nodefaults", "-no-user-config", "-display", "none",
		"-machine", "pc,accel=tcg", "-cpu", "max", "-smp", strconv.Itoa(cpus), "-m", strconv.Itoa(mem),
		"-no-reboot",
		"-kernel", vm.Kernel.Image, "-initrd", vm.Initramfs, "-append", appendLine,
		"-serial", "stdio", "-monitor", "none",
		"-virtfs", "local,path=/,mount_tag=" + TagHost + ",security_model=none,readonly=on,multidevs=remap",
		"-virtfs", "local,path=" + vm.WorkDir + ",mount_tag=" + TagLab + ",security_model=none,multidevs=remap",
		"-netdev", netdev,
		"-device", "virtio-net-pci,netdev=n0,mac=" + mac,
	}
	if vm.ICount != "" {
		args = append(args, "-icount", vm.ICount)
	}
	return args
}

// Marker is one "@@ERDMAKIT-LAB <word> <args...>" line from a guest console.
type Marker struct {
	Word string   // BOOTED, READY, BEGIN, END, EXIT, FATAL, ...
	Args []string // the rest of the line, split on spaces
	At   time.Duration
}

// MarkerPrefix starts every line the guest writes for the runner.
const MarkerPrefix = "@@ERDMAKIT-LAB "

// ParseMarker recognises a marker line; ok is false for any other line.
func ParseMarker(line string) (m Marker, ok bool) {
	line = strings.TrimRight(line, "\r\n")
	i := strings.Index(line, MarkerPrefix)
	if i < 0 {
		return Marker{}, false
	}
	f := strings.Fields(line[i+len(MarkerPrefix):])
	if len(f) == 0 {
		return Marker{}, false
	}
	return Marker{Word: f[0], Args: f[1:]}, true
}

// Boot is what one VM run produced.
type Boot struct {
	Name     string
	Markers  []Marker
	ExitCode int           // the guest script's exit status (EXIT marker), -1 if none came
	Elapsed  time.Duration // qemu start to qemu exit
	BootTime time.Duration // qemu start to the READY marker
	Console  []string      // the last console lines (at most 400)
}

// Marker returns the first marker with word w.
func (b *Boot) Marker(w string) (Marker, bool) {
	for _, m := range b.Markers {
		if m.Word == w {
			return m, true
		}
	}
	return Marker{}, false
}

// Run boots vm and waits until it powers off or ctx ends (then the qemu
// process group is killed). Every console line goes to console (may be nil);
// markers are also sent to onMarker (may be nil). An error means the VM did
// not run its script to the end: qemu failed, the guest hit a FATAL marker,
// or ctx ended.
func (vm VM) Run(ctx context.Context, console io.Writer, onMarker func(Marker)) (*Boot, error) {
	qemu := vm.Qemu
	if qemu == "" {
		qemu = "qemu-system-x86_64"
	}
	if _, err := exec.LookPath(qemu); err != nil {
		return nil, fmt.Errorf("%w: %s not found (install qemu-system-x86): %v", ErrUnavailable, qemu, err)
	}
	cmd := execx.Command(ctx, qemu, vm.Args()...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("vm %s: %w", vm.Name, err)
	}
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{b: &stderr, n: 4096}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: vm %s: start %s: %v", ErrUnavailable, vm.Name, qemu, err)
	}
	boot := &Boot{Name: vm.Name, ExitCode: -1}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if len(boot.Console) >= 400 {
			boot.Console = boot.Console[1:]
		}
		boot.Console = append(boot.Console, line)
		if console != nil {
			fmt.Fprintln(console, line)
		}
		m, ok := ParseMarker(line)
		if !ok {
			continue
		}
		m.At = time.Since(start)
		boot.Markers = append(boot.Markers, m)
		switch m.Word {
		case "READY":
			boot.BootTime = m.At
		case "EXIT":
			if len(m.Args) > 0 {
				if n, err := strconv.Atoi(m.Args[0]); err == nil {
					boot.ExitCode = n
				}
			}
		}
		if onMarker != nil {
			onMarker(m)
		}
	}
	werr := cmd.Wait()
	boot.Elapsed = time.Since(start)
	if ctx.Err() != nil {
		return boot, fmt.Errorf("vm %s: stopped after %s: %w", vm.Name, boot.Elapsed.Round(time.Second), ctx.Err())
	}
	if m, ok := boot.Marker("FATAL"); ok {
		return boot, fmt.Errorf("%w: vm %s: guest init failed: %s", ErrUnavailable, vm.Name, strings.Join(m.Args, " "))
	}
	if werr != nil {
		return boot, fmt.Errorf("%w: vm %s: %s: %v: %s", ErrUnavailable, vm.Name, qemu, werr, strings.TrimSpace(stderr.String()))
	}
	if _, ok := boot.Marker("READY"); !ok {
		return boot, fmt.Errorf("%w: vm %s: the guest powered off before it was ready (console tail: %s)",
			ErrUnavailable, vm.Name, tail(boot.Console, 5))
	}
	if _, ok := boot.Marker("EXIT"); !ok {
		return boot, fmt.Errorf("vm %s: the guest script never finished (console tail: %s)", vm.Name, tail(boot.Console, 5))
	}
	return boot, nil
}

func tail(lines []string, n int) string {
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

type limitedWriter struct {
	b *strings.Builder
	n int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if room := w.n - w.b.Len(); room > 0 {
		if len(p) > room {
			w.b.Write(p[:room])
		} else {
			w.b.Write(p)
		}
	}
	return len(p), nil
}

// FreeLoopbackUDPPorts returns n distinct UDP ports on 127.0.0.1 that
// nothing was bound to a moment ago.
func FreeLoopbackUDPPorts(n int) ([]int, error) {
	var ports []int
	for range n {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free loopback UDP port: %w", err)
		}
		defer c.Close() // held until all are picked: distinct
		ports = append(ports, c.LocalAddr().(*net.UDPAddr).Port)
	}
	return ports, nil
}
