package doctor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nccl"
	"github.com/erdmakit/erdmakit/nvml/smitopo"
)

// The doctor on a recorded host: exactly `erdmakit doctor --root DIR --json`.
func ExampleRun() {
	ctx := context.Background()
	h, closer, err := erdma.OpenHost(context.Background(), "../testdata/hosts/port-down-no-ip.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	rep, err := doctor.Run(ctx, h, doctor.DefaultOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("status:", rep.Status)
	for _, f := range rep.Findings {
		if f.Severity == health.Fail {
			fmt.Printf("%s: %s\n", f.ID, f.Summary)
		}
	}
	// Output:
	// status: fail
	// netdev-ip: eth2 (erdma_1) is down; eth2 (erdma_1) has no IPv4 address: the secondary NIC is not configured in the OS
	// port-active: erdma_1 port 1 is DOWN (ibv_devinfo: not PORT_ACTIVE / "invalid state": the secondary NIC is not configured, check its IP)
	// gid-index: erdma_1 port 1 has no RoCE v2 GID ::ffff:<IPv4>: NCCL_IB_GID_INDEX has nothing to point at
}

// Another package contributes a check: it runs in the pipeline, in its
// place, with the inventory, the GPUs and the findings before it; its Run
// closes over what the pipeline does not read (here a stand-in for a cloud
// API answer).
func ExampleCheck() {
	attached := 2 // what a cloud API would say
	cloud := doctor.Check{
		ID: "eri-attached", Step: "guide step 1", Title: "the ERIs the cloud shows are the ones the host sees",
		After: erdma.FindingERDMADevices,
		Run: func(_ context.Context, in *doctor.Input) health.Finding {
			seen := 0
			for _, d := range in.Inventory.Devices {
				if d.ERDMA {
					seen++
				}
			}
			if seen != attached {
				return health.Finding{Severity: health.Warn, Summary: fmt.Sprintf("%d ERIs attached, %d seen", attached, seen),
					Remediation: "wait for the driver to probe the new ERI, or reboot"}
			}
			return health.Finding{Severity: health.OK, Summary: fmt.Sprintf("%d ERIs attached and seen", seen)}
		},
	}
	opt := doctor.DefaultOptions()
	opt.Checks = []doctor.Check{cloud}
	h, closer, err := erdma.OpenHost(context.Background(), "../testdata/hosts/gn8is-single.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	rep, err := doctor.Run(context.Background(), h, opt)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range rep.Findings[2:4] {
		fmt.Println(f.ID, f.Severity, f.Summary)
	}
	fmt.Println("status:", rep.Status)
	// Output:
	// erdma-devices ok 1 eRDMA device(s): erdma_0 (as gn8is-2x has)
	// eri-attached warn 2 ERIs attached, 1 seen
	// status: warn
}

// A package below the doctor contributes a check decided from the
// inventory alone (erdma.HostCheck, as eri.DoctorChecks does) without
// importing the doctor; HostChecks adapts it.
func ExampleHostChecks() {
	seen := erdma.HostCheck{
		Check: erdma.Check{ID: "eri-seen", Step: "guide step 1", Title: "the host sees an eRDMA device"},
		After: erdma.FindingERDMADevices,
		Run: func(_ context.Context, inv *erdma.Inventory, _ erdma.DoctorOptions) health.Finding {
			for _, d := range inv.Devices {
				if d.ERDMA {
					return health.Finding{Severity: health.OK, Summary: d.Name + " is an eRDMA device"}
				}
			}
			return health.Finding{Severity: health.Fail, Summary: "no eRDMA device"}
		},
	}
	opt := doctor.DefaultOptions()
	opt.Checks = doctor.HostChecks(seen)
	h, closer, err := erdma.OpenHost(context.Background(), "../testdata/hosts/gn8is-single.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	rep, err := doctor.Run(context.Background(), h, opt)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range rep.Findings[2:4] {
		fmt.Println(f.ID, f.Severity, f.Summary)
	}
	// Output:
	// erdma-devices ok 1 eRDMA device(s): erdma_0 (as gn8is-2x has)
	// eri-seen ok erdma_0 is an eRDMA device
}

// The NCCL environment for a recorded host, as `erdmakit nccl env --root
// DIR` prints it; the GDR level is the doctor's (erdma.DecideGDRLevel), in NCCL's
// words: nvidia-smi's NODE is NCCL's PHB.
func ExampleNCCLEnv() {
	h, closer, err := erdma.OpenHost(context.Background(), "../testdata/hosts/ebmgn8is-healthy.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	a, _, err := doctor.NCCLEnv(context.Background(), h, nil, doctor.Options{}, nccl.EnvOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range []string{"NCCL_IB_HCA", "NCCL_NET_GDR_LEVEL"} {
		v, _ := a.Get(name)
		fmt.Printf("%s=%s\n", name, v)
	}
	// Output:
	// NCCL_IB_HCA==erdma_0:1,erdma_1:1
	// NCCL_NET_GDR_LEVEL=PHB
}

// The host's instance type decides what its links should carry: bw judges
// its total by the profile's RDMA write rate, nccl run its bus bandwidth by
// half of it (in GB/s) at 64 MiB and above across hosts.
func ExampleInstanceProfile() {
	ctx := context.Background()
	h, closer, err := erdma.OpenHost(ctx, "../testdata/hosts/gn8is-single.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	p, inst := doctor.InstanceProfile(ctx, h, doctor.DefaultOptions())
	if p == nil {
		fmt.Println("no profile for this instance")
		return
	}
	fmt.Printf("%s: %d ERI, %.0f Gbit/s of RDMA write\n", inst.Type, p.ERIs, p.WriteGbps)

	// A two-host all_reduce's largest row, judged as nccl run judges it
	// when --expect-busbw is not given.
	res := &nccl.TestResult{Hosts: 2, OK: true, Rows: []nccl.Row{{Size: 1 << 30,
		OutOfPlace: nccl.Measurement{BusBWGB: 1.21}, InPlace: nccl.Measurement{BusBWGB: 1.19}}}}
	for _, f := range nccl.Diagnose(res, nccl.Expectation{Profile: p}) {
		if f.ID == "nccl-busbw" {
			fmt.Println(f.Severity, f.Summary)
		}
	}
	// Output:
	// ecs.gn8is-2x.8xlarge: 1 ERI, 25 Gbit/s of RDMA write
	// warn bus bandwidth 1.21 GB/s at 1 GiB is below the expected 1.56 GB/s (77%)
}

// Record a host (here a recorded one; "/" on a live host) so that
// `erdmakit doctor --root FILE` replays every check: `erdmakit record`.
func ExampleRecord() {
	ctx := context.Background()
	h, closer, err := erdma.OpenHost(ctx, "../testdata/hosts/no-peermem.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	dir, err := os.MkdirTemp("", "record")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "host.tar.gz")
	opt := doctor.RecordOptions{RecordOptions: erdma.RecordOptions{Redact: true}} // Verbs: verbsprobe.Live{} on a live host
	inv, err := doctor.Record(ctx, h, out, opt)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(inv.Devices), "devices recorded")

	again, closer2, err := erdma.OpenHost(ctx, out)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer2.Close()
	rep, err := doctor.Run(ctx, again, doctor.DefaultOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range rep.Findings {
		if f.ID == "gdr-peermem" {
			fmt.Println(f.ID, f.Severity)
		}
	}
	// Output:
	// 2 devices recorded
	// gdr-peermem fail
}

// The doctor's GPU checks alone, as `erdmakit gpus` runs them: the same
// findings `erdmakit doctor` prints for them.
func ExampleCheckGPUs() {
	ctx := context.Background()
	h, closer, err := erdma.OpenHost(ctx, "../testdata/hosts/no-peermem.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	rep, gpus, err := doctor.CheckGPUs(ctx, h, doctor.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("GPUs:", len(gpus.GPUs.GPUs), "status:", rep.Status)
	for _, f := range rep.Findings {
		fmt.Printf("%-4s %s\n", f.Severity, f.ID)
	}
	// Output:
	// GPUs: 8 status: fail
	// ok   gpu-driver
	// fail gdr-peermem
	// ok   gpu-count
	// ok   gpu-nic-distance
}

// Topology is `erdmakit topo --compare FILE` in one call: the GPU<->NIC
// matrix from the PCI tree, nvidia-smi's compared with it, and the verdict
// (TopologyFindings) the CLI exits by.
func ExampleTopology() {
	ctx := context.Background()
	h, closer, err := erdma.OpenHost(ctx, "../testdata/hosts/ebmgn8is-healthy.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	theirs, err := smitopo.Parse(ctx, strings.NewReader("\tGPU0\tNIC0\tNIC1\n"+
		"GPU0\t X \tSYS\tSYS\nNIC0\tSYS\t X \tSYS\nNIC1\tSYS\tSYS\t X \n\nNIC Legend:\n\n  NIC0: erdma_0\n  NIC1: erdma_1\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	t, err := doctor.Topology(ctx, h, theirs)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("GPU0's nearest:", t.GPUs.Topology.Nearest[0].NIC, t.GPUs.Topology.Nearest[0].Distance)
	for _, f := range t.Findings {
		fmt.Printf("%-4s %s\n", f.Severity, f.ID)
	}
	fmt.Println("exit:", t.Status.Exit())
	// Output:
	// GPU0's nearest: erdma_0 NODE
	// ok   gpu-nic-distance
	// warn topo-nvidia-smi
	// exit: 1
}
