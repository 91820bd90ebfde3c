package lab

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

func TestParseShowDepends(t *testing.T) {
	paths, err := ParseShowDepends(strings.NewReader(readTestdata(t, "show-depends-rdma_ucm.txt")))
	require.NoError(t, err)
	var names []string
	for _, p := range paths {
		names = append(names, moduleName(p))
	}
	assert.Equal(t, []string{"configfs", "ib_core", "ib_cm", "iw_cm", "rdma_cm", "ib_uverbs", "rdma_ucm"}, names)

	_, err = ParseShowDepends(strings.NewReader("insmod /x/y.ko\nmodprobe: FATAL: Module nope not found\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "line 2")
	paths, err = ParseShowDepends(strings.NewReader("builtin unix\ninsmod /a/b.ko opt=1\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"/a/b.ko"}, paths)
}

func TestModuleOrderDependenciesFirst(t *testing.T) {
	// What ModuleOrder does with modprobe's answers: concatenate, keep the
	// first occurrence. Each module must come after everything it needs.
	var all []string
	for _, f := range []string{"show-depends-9p.txt", "show-depends-rdma_ucm.txt"} {
		p, err := ParseShowDepends(strings.NewReader(readTestdata(t, f)))
		require.NoError(t, err)
		all = append(all, p...)
	}
	order := dedupe(all)
	pos := map[string]int{}
	for i, p := range order {
		_, dup := pos[moduleName(p)]
		require.False(t, dup, "module %s listed twice", p)
		pos[moduleName(p)] = i
	}
	for _, dep := range [][2]string{{"9pnet", "9p"}, {"netfs", "fscache"}, {"ib_core", "rdma_ucm"}, {"iw_cm", "rdma_cm"}, {"rdma_cm", "rdma_ucm"}} {
		require.Contains(t, pos, dep[0])
		require.Contains(t, pos, dep[1])
		assert.Less(t, pos[dep[0]], pos[dep[1]], "%s before %s", dep[0], dep[1])
	}
}

func TestModuleOrderLive(t *testing.T) {
	k, err := FindKernel("/", "")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI: %v", err)
		}
		t.Skip(err)
	}
	order, err := ModuleOrder(t.Context(), k.Version, RootModules)
	require.NoError(t, err)
	pos := map[string]int{}
	for i, p := range order {
		pos[moduleName(p)] = i
	}
	for _, m := range RootModules {
		assert.Contains(t, pos, m)
	}
	assert.Equal(t, 0, pos["crc32_generic"], "crc32_generic first: rdma link add needs it")
	assert.Less(t, pos["ib_core"], pos["rdma_rxe"])
	assert.Less(t, pos["virtio"], pos["virtio_net"])
}

func TestFindKernel(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"6.1.0-9-amd64", "6.1.0-57-amd64", "6.9.0-1-amd64"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, "boot"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "boot", "vmlinuz-"+v), []byte("k"), 0o644))
		if v != "6.9.0-1-amd64" { // an image without modules is not bootable for the lab
			require.NoError(t, os.MkdirAll(filepath.Join(root, "lib/modules", v), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, "lib/modules", v, "modules.dep"), nil, 0o644))
		}
	}
	k, err := FindKernel(root, "")
	require.NoError(t, err)
	assert.Equal(t, "6.1.0-57-amd64", k.Version)
	assert.Equal(t, filepath.Join(root, "boot/vmlinuz-6.1.0-57-amd64"), k.Image)
	k, err = FindKernel(root, "6.1.0-9-amd64")
	require.NoError(t, err)
	assert.Equal(t, "6.1.0-9-amd64", k.Version)
	_, err = FindKernel(root, "6.9.0-1-amd64")
	require.ErrorIs(t, err, ErrUnavailable)
	_, err = FindKernel(t.TempDir(), "")
	require.ErrorIs(t, err, ErrUnavailable)
	assert.Contains(t, err.Error(), "linux-image-amd64")
}

func TestInitScript(t *testing.T) {
	s := InitScript([]string{"/lib/modules/v/kernel/crypto/crc32_generic.ko", "/lib/modules/v/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko"})
	assert.True(t, strings.HasPrefix(s, "#!/bin/busybox sh\n"))
	i1 := strings.Index(s, "insmod /modules/crc32_generic.ko")
	i2 := strings.Index(s, "insmod /modules/rdma_rxe.ko")
	require.True(t, i1 > 0 && i2 > i1, "modules insmod'ed in the given order")
	for _, want := range []string{
		"mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose host /host",
		"mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 lab /host/tmp/lab",
		"mount -t tmpfs -o mode=1777 tmpfs /host$d",
		"chroot /host /bin/sh /tmp/lab/\"$script\"",
		"erdmakit.script=",
		"reboot -f",
	} {
		assert.Contains(t, s, want)
	}
	assert.Less(t, strings.Index(s, "mount -t tmpfs"), strings.Index(s, "mkdir -p /host/tmp/lab"), "the lab share is mounted on the tmpfs /tmp")
}

func TestInitramfsWrite(t *testing.T) {
	dir := t.TempDir()
	bb := filepath.Join(dir, "busybox")
	mod := filepath.Join(dir, "rdma_rxe.ko")
	require.NoError(t, os.WriteFile(bb, []byte("BUSYBOX"), 0o755))
	require.NoError(t, os.WriteFile(mod, []byte("MOD12"), 0o644))
	var buf bytes.Buffer
	require.NoError(t, Initramfs{Busybox: bb, Modules: []string{mod}}.Write(&buf))
	names := cpioNames(t, buf.Bytes())
	assert.Equal(t, []string{"bin", "dev", "proc", "sys", "modules", "host", "tmp", "dev/console", "bin/busybox", "init", "modules/rdma_rxe.ko", "TRAILER!!!"}, names)
	assert.Equal(t, 0, buf.Len()%4)

	err := Initramfs{Busybox: bb, Modules: []string{filepath.Join(dir, "x.ko.xz")}}.Write(&bytes.Buffer{})
	require.ErrorIs(t, err, ErrUnavailable)
	assert.Contains(t, err.Error(), "compressed")
}

// cpioNames lists the entry names of a newc archive, checking the layout.
func cpioNames(t *testing.T, b []byte) []string {
	t.Helper()
	var names []string
	for len(b) > 0 {
		require.GreaterOrEqual(t, len(b), 110)
		require.Equal(t, "070701", string(b[:6]))
		var size, nameLen int
		_, err := fmtSscanHex(string(b[54:62]), &size)
		require.NoError(t, err)
		_, err = fmtSscanHex(string(b[94:102]), &nameLen)
		require.NoError(t, err)
		name := string(b[110 : 110+nameLen-1])
		names = append(names, name)
		off := (110 + nameLen + 3) &^ 3
		off += (size + 3) &^ 3
		b = b[off:]
		if name == "TRAILER!!!" {
			break
		}
	}
	return names
}

func TestVMArgs(t *testing.T) {
	vm := VM{Name: "a", Kernel: Kernel{Image: "/boot/vmlinuz-x"}, Initramfs: "/w/initramfs.cpio", WorkDir: "/w", Script: "run-a.sh",
		Net: Net{Local: "127.0.0.1:4321", Remote: "127.0.0.1:4322", MAC: MACA}}
	args := strings.Join(vm.Args(), " ")
	for _, want := range []string{
		"-machine pc,accel=tcg", "-m 1024", "-smp 1", "-no-reboot", "-nodefaults",
		"-kernel /boot/vmlinuz-x -initrd /w/initramfs.cpio",
		"-virtfs local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap",
		"-virtfs local,path=/w,mount_tag=lab,security_model=none,multidevs=remap",
		"-netdev socket,id=n0,udp=127.0.0.1:4322,localaddr=127.0.0.1:4321",
		"-device virtio-net-pci,netdev=n0,mac=52:54:00:00:09:01",
		"-serial stdio",
	} {
		assert.Contains(t, args, want)
	}
	assert.Contains(t, vm.Args()[indexOf(vm.Args(), "-append")+1], "erdmakit.script=run-a.sh")

	vm.Net = Net{Local: "127.0.0.1:4322", Remote: "127.0.0.1:4321", MAC: MACB}
	assert.Contains(t, strings.Join(vm.Args(), " "), "-netdev socket,id=n0,udp=127.0.0.1:4321,localaddr=127.0.0.1:4322 -device virtio-net-pci,netdev=n0,mac=52:54:00:00:09:02")
	vm.Net = Net{}
	assert.Contains(t, strings.Join(vm.Args(), " "), "-netdev user,id=n0,restrict=on")
	assert.NotContains(t, vm.Args(), "-icount")
	vm.ICount = "shift=2,sleep=on"
	assert.Contains(t, strings.Join(vm.Args(), " "), "-icount shift=2,sleep=on")
	vm.CPUs = 2
	assert.Contains(t, strings.Join(vm.Args(), " "), "-smp 2 ")
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestParseMarker(t *testing.T) {
	m, ok := ParseMarker("@@ERDMAKIT-LAB END ibverbs 0\r\n")
	require.True(t, ok)
	assert.Equal(t, Marker{Word: "END", Args: []string{"ibverbs", "0"}}, m)
	m, ok = ParseMarker("[   12.3] junk @@ERDMAKIT-LAB READY 16.90")
	require.True(t, ok)
	assert.Equal(t, "READY", m.Word)
	_, ok = ParseMarker("@@ERDMAKIT-LAB ")
	assert.False(t, ok)
	_, ok = ParseMarker("plain console line")
	assert.False(t, ok)
}

func TestFreeLoopbackUDPPortsAreDistinct(t *testing.T) {
	ports, err := FreeLoopbackUDPPorts(2)
	require.NoError(t, err)
	require.Len(t, ports, 2)
	assert.NotEqual(t, ports[0], ports[1])
	for _, p := range ports {
		c, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", p))
		require.NoError(t, err, "free again once returned")
		c.Close()
	}
}

func TestScript(t *testing.T) {
	g := Guest{Role: "b", IP: IPB, Peer: IPA, Device: Device, Netdev: Netdev, CI: "true"}
	s := Script(g, []Step{{ID: "ibverbs", Dir: "/src/it's", Argv: []string{"/tmp/lab/bin/ibverbs.test", "-test.run", "^TestLab"},
		Log: "/tmp/lab/out/b/ibverbs.log", OutDir: "/tmp/lab/out/b/ibverbs", Timeout: 100 * time.Second}})
	for _, want := range []string{
		"ip addr add 10.0.9.2/24 dev eth0",
		"rdma link add rxe0 type rxe netdev eth0",
		"printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' 10 0 9 2",
		"ulimit -l unlimited",
		"export CI=true",
		"ERDMAKIT_LAB_ROLE=b", "ERDMAKIT_LAB_PEER=10.0.9.1", "ERDMAKIT_LAB_GID_INDEX=$gidx",
		"mark BEGIN ibverbs",
		`(cd '/src/it'\''s' && ERDMAKIT_LAB_OUT=/tmp/lab/out/b/ibverbs timeout -k 5 100 /tmp/lab/bin/ibverbs.test -test.run '^TestLab') > /tmp/lab/out/b/ibverbs.log 2>&1`,
		"mark END ibverbs $rc",
		"exit $status",
		"until busybox ping -c 1 -W 1 10.0.9.1 >/dev/null 2>&1; do",
		"mark NOLINK peer=10.0.9.1 tries=$i; exit 4;",
	} {
		assert.Contains(t, s, want)
	}
	assert.Less(t, strings.Index(s, "mark LINK"), strings.Index(s, "mark BEGIN"), "the link is proven before any step")
	single := Script(Guest{Role: "single", IP: IPA, Device: Device, Netdev: Netdev}, nil)
	assert.NotContains(t, single, "ping", "the one-VM run has no peer")
}

func TestShQuote(t *testing.T) {
	for in, want := range map[string]string{"": "''", "abc": "abc", "a b": "'a b'", "it's": `'it'\''s'`, "^TestLab$": "'^TestLab$'"} {
		assert.Equal(t, want, shQuote(in), in)
	}
}

func TestParseTestOutput(t *testing.T) {
	out, err := ParseTestOutput(strings.NewReader(readTestdata(t, "test-v-mixed.txt")))
	require.NoError(t, err)
	got := map[string]Outcome{}
	for _, tr := range out.Tests {
		got[tr.Name] = tr.Outcome
	}
	assert.Equal(t, map[string]Outcome{
		"TestLabDeviceActive": Pass, "TestLabIbWriteBwRDMACM": Fail, "TestLabQP": Pass,
		"TestLabQP/oob": Pass, "TestLabQP/cm": Skip, "TestLabHang": Unfinished,
	}, got)
	assert.Equal(t, "FAIL", out.Final)
	assert.Equal(t, "panic: test timed out after 3m50s", out.Panic)
	require.Len(t, out.Benchmarks, 1)
	assert.Equal(t, "BenchmarkLabPost/batch=16-1", out.Benchmarks[0].Name)
	assert.Equal(t, 195.2, out.Benchmarks[0].Metrics["ns/msg"])
	assert.Equal(t, 0.0, out.Benchmarks[0].Metrics["allocs/op"])
	assert.Equal(t, 90330*time.Millisecond, out.Tests[1].Elapsed)
	assert.Contains(t, strings.Join(out.Tests[1].Output, "\n"), "never listened")
	assert.True(t, out.Failed(false))

	pass, err := ParseTestOutput(strings.NewReader("=== RUN   TestLabA\n--- PASS: TestLabA (0.01s)\nPASS\n"))
	require.NoError(t, err)
	assert.False(t, pass.Failed(true))
	skip, err := ParseTestOutput(strings.NewReader("=== RUN   TestLabA\n--- SKIP: TestLabA (0.00s)\nPASS\n"))
	require.NoError(t, err)
	assert.False(t, skip.Failed(false))
	assert.True(t, skip.Failed(true), "under CI a skipped lab test is a failure")
	crash, err := ParseTestOutput(strings.NewReader("=== RUN   TestLabA\nSIGSEGV\n"))
	require.NoError(t, err)
	assert.True(t, crash.Failed(false), "a test that never ended")
}

func FuzzParseTestOutput(f *testing.F) {
	f.Add(readTestdata(f, "test-v-mixed.txt"))
	f.Add("=== RUN   TestLabA\n--- PASS: TestLabA (0.01s)\nPASS\n")
	f.Add("--- FAIL:  (x)\n=== CONT\nBenchmark 1 2 3\n")
	f.Fuzz(func(t *testing.T, in string) {
		out, err := ParseTestOutput(strings.NewReader(in))
		require.NoError(t, err)
		for _, tr := range out.Tests {
			switch tr.Outcome {
			case Pass, Fail, Skip, Unfinished:
			default:
				t.Fatalf("outcome %q", tr.Outcome)
			}
			require.LessOrEqual(t, len(tr.Output), maxOutput)
		}
	})
}

func FuzzParseShowDepends(f *testing.F) {
	f.Add(readTestdata(f, "show-depends-rdma_ucm.txt"))
	f.Add("builtin unix\n")
	f.Fuzz(func(t *testing.T, in string) {
		paths, err := ParseShowDepends(strings.NewReader(in))
		if err == nil {
			for _, p := range paths {
				require.Contains(t, p, ".ko")
			}
		}
	})
}

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, rel), []byte(body), 0o644))
	}
	write("go.mod", "module x\n")
	write("ibverbs/qp_lab_test.go", "//go:build lab\n\npackage ibverbs\n\nfunc TestLabQP(t *testing.T) {}\nfunc TestLab2HostWrite(t *testing.T) {}\n")
	write("ibverbs/qp_test.go", "package ibverbs\n\nfunc TestLabNotTagged(t *testing.T) {}\n")
	write("perf/bw_lab_test.go", "//go:build lab && linux\n\npackage perf\n\nfunc TestLab2HostBW(t *testing.T) {}\nfunc BenchmarkLabPost(b *testing.B) {}\n")
	write("nccl/x_test.go", "//go:build !lab\n\npackage nccl\n\nfunc TestLabNo(t *testing.T) {}\n")
	write("perf/testdata/y_lab_test.go", "//go:build lab\n\npackage y\n\nfunc TestLabY(t *testing.T) {}\n")
	suites, err := Discover(root)
	require.NoError(t, err)
	assert.Equal(t, []Suite{
		{Dir: "ibverbs", Single: true, Pair: true, Tests: []string{"TestLabQP", "TestLab2HostWrite"}},
		{Dir: "perf", Pair: true, Bench: true, Tests: []string{"TestLab2HostBW"}},
	}, suites)
	st, pt, err := suites[0].Matching("QP/oob")
	require.NoError(t, err)
	assert.Equal(t, []string{"TestLabQP"}, st)
	assert.Empty(t, pt)
	st, pt, err = suites[0].Matching("")
	require.NoError(t, err)
	assert.Equal(t, []string{"TestLabQP"}, st)
	assert.Equal(t, []string{"TestLab2HostWrite"}, pt)
	assert.Equal(t, "^(TestLab2HostWrite)$", pairRun(suites[0], ""))
	assert.Equal(t, "^(TestLab2HostWrite)$/big", pairRun(suites[0], "Write/big"))
	_, _, err = suites[0].Matching("(")
	require.Error(t, err)
	assert.Equal(t, "internal_lab", Suite{Dir: "internal/lab"}.ID())

	sel, err := SelectSuites(suites, []string{"./perf/"})
	require.NoError(t, err)
	assert.Equal(t, "perf", sel[0].Dir)
	_, err = SelectSuites(suites, []string{"./nccl"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no lab tests")
}

func TestWriteSummary(t *testing.T) {
	out, err := ParseTestOutput(strings.NewReader(readTestdata(t, "test-v-mixed.txt")))
	require.NoError(t, err)
	s := &Summary{Runs: []SuiteRun{
		{Suite: "ibverbs", Role: "single", ExitCode: 2, Output: out, Log: "/w/x.log"},
		{Suite: "perf", Role: "a", ExitCode: -1, Err: "never finished: the VM stopped before the binary ended"},
	}, Boots: map[string]time.Duration{"single": 10 * time.Second}, VMTime: map[string]time.Duration{"single": 60 * time.Second}}
	var b bytes.Buffer
	WriteSummary(&b, s, true, false)
	text := b.String()
	assert.Contains(t, text, "TestLabIbWriteBwRDMACM")
	assert.Contains(t, text, "never listened")
	assert.Contains(t, text, "(never finished")
	assert.Contains(t, text, "single boot 10s vm 1m0s")
	assert.Contains(t, text, "lab: FAIL")
	assert.Regexp(t, `\nlab: \d+ passed, \d+ failed, \d+ skipped\n$`, text, "the counts alone on the last line")
	assert.NotContains(t, text, "TestLabQP/oob", "passing subtests fold into their parent")
	assert.True(t, s.Failed(false))

	bench, err := ParseTestOutput(strings.NewReader("BenchmarkLabPostPoll/batch=16-1   \t 1000\t 900 ns/op\t 56.2 ns/msg\nPASS\n"))
	require.NoError(t, err)
	s = &Summary{Runs: []SuiteRun{{Suite: "ibverbs", Role: "single", Output: bench}}}
	b.Reset()
	WriteSummary(&b, s, true, false)
	assert.Contains(t, b.String(), "BenchmarkLabPostPoll/batch=16-1")
	assert.Contains(t, b.String(), "56.2 ns/msg")
	assert.False(t, s.Failed(true), "a benchmark-only run with no tests is not a failure")
}

func fmtSscanHex(s string, v *int) (int, error) { return fmt.Sscanf(s, "%x", v) }

func TestFindBusyboxIsStatic(t *testing.T) {
	p, err := FindBusybox()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI: %v", err)
		}
		t.Skip(err)
	}
	assert.True(t, isStatic(p))
	assert.False(t, isStatic("/bin/sh"), "a dynamically linked program")
	assert.False(t, isStatic(filepath.Join(t.TempDir(), "missing")))
}

// A checkout under /tmp (which the guest covers with a tmpfs) is bound back
// in place: its path goes on the kernel command line and init binds it.
func TestKeepCheckoutUnderTmp(t *testing.T) {
	assert.Equal(t, []string{"/tmp/ci/erdmakit"}, keepDirs("/tmp/ci/erdmakit"))
	assert.Nil(t, keepDirs("/work/erdmakit"))
	assert.Nil(t, keepDirs("/tmpfoo/erdmakit"))
	vm := VM{Name: "a", Kernel: Kernel{Image: "/boot/vmlinuz-x"}, Initramfs: "/w/i.cpio", WorkDir: "/w", Script: "s.sh",
		Keep: keepDirs("/tmp/ci/erdmakit")}
	assert.Contains(t, vm.Args()[indexOf(vm.Args(), "-append")+1], " erdmakit.keep=/tmp/ci/erdmakit")
	s := InitScript(nil)
	bind := strings.Index(s, "mount -o bind /host$k /keep$n")
	tmpfs := strings.Index(s, "tmpfs on $d")
	back := strings.Index(s, "mount -o bind /keep$n /host$k")
	require.True(t, bind >= 0 && tmpfs >= 0 && back >= 0, s)
	assert.Less(t, bind, tmpfs, "bind before the tmpfs hides it")
	assert.Less(t, tmpfs, back, "bind back after")
}
