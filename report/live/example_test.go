package live_test

import (
	"os"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/monitor"
	"github.com/erdmakit/erdmakit/nvml"
	"github.com/erdmakit/erdmakit/report"
	"github.com/erdmakit/erdmakit/report/live"
)

// The GPUs as `erdmakit gpus` prints them: NVML's view, GPUDirect RDMA and
// the doctor's GPU checks (doctor.CheckGPUs gives both reports).
func ExampleWriteGPUsTable() {
	rep := &nvml.Report{Available: true,
		GPUs: &nvml.GPUs{DriverVersion: "535.161.08", CUDAVersion: "12.2", GPUs: []nvml.GPU{
			{Index: 0, Name: "NVIDIA H20", PCIAddress: "0000:17:00.0", NUMANode: 0, MemoryTotal: 96 << 30, UUID: "GPU-0"}}},
		GDR: nvml.GDR{Ready: true, Path: "nvidia_peermem", Version: "535.161.08"}}
	checks := &erdma.Report{Status: health.OK, Findings: []health.Finding{
		{ID: "gdr-peermem", Severity: health.OK, Summary: "nvidia_peermem loaded"}}}
	_ = live.WriteGPUsTable(os.Stdout, rep, checks, report.TableOptions{})
	// Output:
	// Driver 535.161.08, CUDA 12.2, 1 GPUs
	//
	// GPU  NAME        PCI           NUMA  MEMORY     UUID
	// 0    NVIDIA H20  0000:17:00.0  0     98304 MiB  GPU-0
	//
	// GPUDirect RDMA: ready (nvidia_peermem 535.161.08)
	//
	// RESULT  CHECK        SUMMARY
	// ok      gdr-peermem  nvidia_peermem loaded
	//
	// status: ok
}

// An instance's ERIs as `erdmakit eri status` prints them, with the finding
// that two share a network card.
func ExampleWriteERIStatusTable() {
	card, dev := 0, 1
	st := &eri.Status{
		View: &eri.View{Target: eri.Target{InstanceID: "i-1", InstanceType: "ecs.ebmgn8is.32xlarge", Region: "cn-beijing"},
			TypeInfo: eri.TypeInfo{EriQuantity: 2, NetworkCardIndexes: []int{0, 1}, BandwidthRxKbps: 160000000}},
		ENIs: []eri.ENIStatus{{ENI: eri.ENI{ID: "eni-1", MAC: "00:16:3e:00:00:01", Type: "Secondary", TrafficMode: "HighPerformance",
			NetworkCardIndex: &card, DeviceIndex: &dev, IP: "192.168.10.2", Status: "InUse"}, Netdev: "eth1", RDMADevice: "erdma_0"}},
	}
	findings := []health.Finding{{ID: "network-card-channel", Severity: health.Fail, Summary: "two ERIs on card 0",
		Remediation: "erdmakit eri attach"}}
	_ = live.WriteERIStatusTable(os.Stdout, st, findings)
	// Output:
	// instance i-1 (ecs.ebmgn8is.32xlarge, cn-beijing): EriQuantity 2, network cards [0 1], 0 x -, bandwidth 160 Gbit/s, 0 QPs per ERI
	//
	// ENI    MAC                TYPE       MODE             CARD  DEVICE  IP            STATUS  NETDEV  RDMA
	// eni-1  00:16:3e:00:00:01  Secondary  HighPerformance  0     1       192.168.10.2  InUse   eth1    erdma_0
	// fail: network-card-channel: two ERIs on card 0
	//   fix: erdmakit eri attach
}

// What `erdmakit eri configure --dry-run` would do to each ERI netdev.
func ExampleWriteConfigureResult() {
	res := []eri.LinkResult{
		{Netdev: "eth1", MAC: "00:16:3e:00:00:01", Actions: []string{"ip link set eth1 mtu 8500", "ip link set eth1 up"}},
		{Netdev: "eth2", MAC: "00:16:3e:00:00:02", LeftAlone: "up with 192.168.10.3/24: left alone"},
	}
	_ = live.WriteConfigureResult(os.Stdout, res, true)
	// Output:
	// eth1 (00:16:3e:00:00:01): would do (dry run): ip link set eth1 mtu 8500; ip link set eth1 up
	// eth2 (00:16:3e:00:00:02): up with 192.168.10.3/24: left alone
}

// One interval of `erdmakit stat`: a port's rates and a counter that grew.
func ExampleWriteStatInterval() {
	tx, rx := 12.5e9/8, 1e9/8
	iv := monitor.Interval{End: time.Date(2026, 12, 7, 10, 0, 5, 0, time.UTC), Seconds: 1,
		Ports: []monitor.PortRates{{Device: "erdma_0", Port: 1, State: "ACTIVE", TxBytesPerS: &tx, RxBytesPerS: &rx,
			Moved: []monitor.CounterMove{{Name: "retrans_cnt", Delta: 3}}}}}
	_ = live.WriteStatInterval(os.Stdout, iv)
	// Output:
	// 10:00:05  erdma_0/1  ACTIVE  tx    12.50 Gb/s  rx     1.00 Gb/s  tx    n/a Mpps  rx    n/a Mpps  retrans_cnt +3
}
