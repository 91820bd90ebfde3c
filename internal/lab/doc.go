// Package lab is erdmakit's RDMA lab: real verbs without RDMA hardware. It boots
// the installed Debian kernel under qemu (software emulation, no KVM) with
// Soft-RoCE (rdma_rxe), runs the project's lab tests inside, and brings their
// results back. `make lab` (and so `make test` and CI) runs it through
//
//	go run ./internal/lab/cmd/labrun            # every lab test of every package
//	go run ./internal/lab/cmd/labrun -pkg ./ibverbs -run 'TestLabQP'
//	go run ./internal/lab/cmd/labrun -shell 'ibv_devinfo -v; rdma res show'
//	go run ./internal/lab/cmd/labrun -shell2 'hostname; ip -4 addr'   # on both VMs
//	go run ./internal/lab/cmd/labrun -record testdata/hosts/lab-rxe.tar.gz   # re-record the fixture
//	make lab LAB_FLAGS='-pkg ./perf -bench BenchmarkLab -v'
//
// Other flags: -v echoes the consoles and every test's output, -json prints
// the summary as JSON, -work DIR keeps binaries, scripts and logs there,
// -timeout bounds each test binary (default 240s), -seq boots the two-VM
// pair after the one-VM run instead of alongside it, -bench PATTERN also
// runs benchmarks (one-VM run only).
//
// # The guest
//
// A busybox initramfs insmods the kernel's modules in `modprobe --show-depends`
// order (crc32_generic, virtio_pci, virtio_net, 9p, 9pnet_virtio, ib_core,
// ib_uverbs, rdma_rxe, ib_cm, iw_cm, rdma_cm, rdma_ucm and what they need),
// mounts the host's whole file tree read-only over 9p and chroots into it: the
// guest runs the host's own binaries and libraries (libibverbs, the rxe
// provider, perftest, iproute2, coreutils) and sees the source tree at the
// same path as on the host. Writable: /tmp, /run, /var/tmp (tmpfs, empty at
// boot) and $ERDMAKIT_LAB_OUT. Each guest runs as root with 1 vCPU (labrun
// -smp N for experiments: Options.CPUs) and 1 GiB,
// RLIMIT_MEMLOCK unlimited, eth0 up with a static IPv4 and
// `rdma link add rxe0 type rxe netdev eth0` done and its port ACTIVE before any
// test starts.
//
// # Writing a lab test (the contract)
//
//   - Put lab tests in files with the build tag `lab` (`//go:build lab`), so
//     `go test ./...` on the host never compiles them. Test functions are named
//     TestLab... (one VM) or TestLab2Host... (two VMs, see below). Benchmarks
//     named BenchmarkLab... are run too when the runner is given -bench.
//   - Start every lab test with labtest.Require(t) (or labtest.Require2Host(t)):
//     outside the lab it skips, and under CI=true it fails.
//   - The runner builds each package with `go test -c -tags lab` on the host
//     and runs the binary in the guest with the package's source directory as
//     the working directory (testdata/ works as in `go test`; it is read-only).
//     Write only to t.TempDir() (TMPDIR=/tmp, a tmpfs) or to labtest.OutDir(t).
//   - Bound everything: each binary runs under `timeout` (default 240 s, the
//     runner's -timeout) and with -test.timeout; a test that can hang (a peer
//     that never answers) must use its own shorter deadline.
//   - Helpers in labtest: ResourcesOf (`rdma res show` counts for leak
//     checks), WaitTCPListen (a perftest/TCP server is listening: from
//     /proc/net/tcp, no connection made), WaitCMListen (an rdma_cm listener:
//     `rdma res show cm_id`), Listen/Dial/Deadline for two-VM tests.
//   - Tests run as root in the guest; do not unload modules or delete rxe0.
//     `rdma res show` counts resources per device: to check for leaks compare
//     counts before/after within one test (other tests of the same binary run
//     sequentially, never in parallel with yours unless you call t.Parallel).
//
// Environment inside the guest (labtest has accessors for each):
//
//	ERDMAKIT_LAB=1                 set only inside the lab
//	ERDMAKIT_LAB_ROLE=single|a|b   single: the one-VM run; a, b: the two VMs
//	ERDMAKIT_LAB_DEVICE=rxe0       the verbs device (Soft-RoCE over eth0)
//	ERDMAKIT_LAB_NETDEV=eth0       its netdev
//	ERDMAKIT_LAB_IP=10.0.9.1       this VM's IPv4 on eth0 (/24); b has 10.0.9.2
//	ERDMAKIT_LAB_PEER=10.0.9.2     the other VM's IPv4 (two-VM runs only)
//	ERDMAKIT_LAB_GID_INDEX=1       index of rxe0 port 1's RoCE v2 GID for ERDMAKIT_LAB_IP
//	ERDMAKIT_LAB_OUT=/tmp/lab/out/<role>/<pkg>  writable; on the host: <work>/out/<role>/<pkg>
//	CI                             passed through from the host
//
// The work dir is the host side of /tmp/lab: labrun -work DIR keeps it (test
// logs in DIR/out/<role>/<pkg>.log, files tests wrote to ERDMAKIT_LAB_OUT in
// DIR/out/<role>/<pkg>/); without -work a temp dir is used, kept only when
// something failed.
//
// In the single-VM run ERDMAKIT_LAB_IP is 10.0.9.1 and ERDMAKIT_LAB_PEER is
// empty: a server and a client on one device talk to 10.0.9.1 (rxe loops back
// locally).
//
// # Two-VM tests
//
// The runner boots two VMs joined by a qemu UDP socket netdev over 127.0.0.1
// (one Ethernet segment, 10.0.9.0/24, MACs 52:54:00:00:09:01 and :02), each
// with its own rxe0: two real hosts. (Not the TCP socket netdev: without
// TCP_NODELAY every frame waited about 22 ms on Nagle and delayed ACKs.) It runs the same binaries on both with
// `-test.run ^TestLab2Host`, at the same time; the single-VM run skips those
// tests (-test.skip ^TestLab2Host). Before any test, each VM pings the other
// (for up to about a minute); if the link carries nothing, both VMs are
// stopped and the pair is booted once more (this happened once in CI).
// A TestLab2Host test runs on both VMs:
//
//   - role a (10.0.9.1) is the server side: it listens (labtest.Listen(t, port))
//   - role b (10.0.9.2) is the client side: it dials a's IP (labtest.Dial(t, port)),
//     retrying until a listens or the deadline passes.
//   - They meet over TCP on the lab network for the out-of-band exchange;
//     pick a fixed port per test in 18000-18999 (distinct across your tests).
//   - A test passes only when it passes on both VMs; the summary lists it
//     once per role. Tests run in the same order on both, in step: keep each
//     side's work bounded (labtest.Deadline) so one failing side cannot hang
//     the other beyond that deadline.
//
// # Results
//
// Each binary's `-test.v` output is written to the out share and echoed to the
// console. The runner parses `=== RUN`, `--- PASS/FAIL/SKIP` lines and the
// binary's exit status, prints a per-test summary (package, test, role,
// result, seconds) and exits non-zero on any failure, on a binary that exited
// non-zero or timed out, or on a test that started and never finished. A
// skipped lab test inside the lab is reported as SKIP and, under CI=true,
// counts as a failure (the lab exists so that these tests do run).
//
// Exit status of labrun: 0 all passed; 1 a test failed; 2 the lab could not
// build or boot. With CI=true the runner fails (exit 2, with the reason) when
// qemu, the kernel, its modules or busybox are missing or the guest does not
// come up; outside CI it says why ("labrun: SKIP: ...") and exits 0 without
// running anything. The one-VM run and the two-VM pair boot at the same time
// by default (three VMs, 1 vCPU and 1 GiB each).
package lab
