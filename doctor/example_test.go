package doctor_test

import (
	"context"
	"fmt"
	"os"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
)

// The doctor on a recorded host: exactly `erdmakit doctor --root DIR --json`.
func ExampleRun() {
	ctx := context.Background()
	h, closer, err := erdma.OpenHost("../testdata/hosts/port-down-no-ip")
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
	rep, err := doctor.Run(context.Background(), erdma.RecordedHost("../testdata/hosts/gn8is-single"), opt)
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

func ExampleWriteTable() {
	rep, err := doctor.Run(context.Background(), erdma.RecordedHost("../testdata/hosts/memlock-64k"), doctor.DefaultOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	rep.Findings = rep.Findings[len(rep.Findings)-2:] // memlock, rate-limit-drops
	rep.Status = health.Status(rep.Findings)
	_ = doctor.WriteTable(os.Stdout, rep, doctor.TableOptions{})
	// Output:
	// erdmakit doctor: host ../testdata/hosts/memlock-64k, instance type ecs.ebmgn8is.32xlarge (recorded)
	//
	// RESULT  CHECK             SUMMARY
	// fail    memlock           memlock 64 KiB: every ibv_create_qp fails with ENOMEM (NCCL WARN Call to ibv_create_qp failed with error Unknown error -12)
	// ok      rate-limit-drops  no rate-limit drops counted since the driver loaded (one reading)
	//
	// fail memlock: memlock 64 KiB: every ibv_create_qp fails with ENOMEM (NCCL WARN Call to ibv_create_qp failed with error Unknown error -12)
	//     read: RLIMIT_MEMLOCK soft 64 KiB, hard 64 KiB (../testdata/hosts/memlock-64k/erdmakit/limits.json)
	//     fix:  ulimit -l unlimited (this shell); persistent: add '* soft memlock unlimited' and '* hard memlock unlimited' to /etc/security/limits.conf; systemd services (containerd, docker): LimitMEMLOCK=infinity; containers: --ulimit memlock=-1
	//
	// status: fail (1 ok, 0 warn, 1 fail, 0 skip)
	// first step: memlock: ulimit -l unlimited (this shell); persistent: add '* soft memlock unlimited' and '* hard memlock unlimited' to /etc/security/limits.conf; systemd services (containerd, docker): LimitMEMLOCK=infinity; containers: --ulimit memlock=-1
}
