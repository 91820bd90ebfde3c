package nccl_test

import (
	"fmt"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/nccl"
)

func ExampleAdviseEnv() {
	port := func(gid int) []erdma.Port {
		return []erdma.Port{{Number: 1, State: "ACTIVE", StateCode: 4, RecommendedGIDIndex: gid}}
	}
	inv := &erdma.Inventory{
		Devices: []erdma.Device{
			{Name: "erdma_0", ERDMA: true, Transport: erdma.TransportRoCE, Netdev: "eth1", Ports: port(2)},
			{Name: "erdma_1", ERDMA: true, Transport: erdma.TransportRoCE, Netdev: "eth2", Ports: port(1)},
		},
		Netdevs: []erdma.Netdev{
			{Name: "eth0", OperState: "up", IPv4: []string{"172.16.0.10/24"}},
			{Name: "eth1", OperState: "up", IPv4: []string{"172.16.1.10/24"}},
			{Name: "eth2", OperState: "up", IPv4: []string{"172.16.2.10/24"}},
		},
		Memlock: &erdma.Limit{Unlimited: true},
		GPU: &erdma.GPUInfo{Available: true, Count: 8, GDRPath: "nvidia_peermem",
			Nearest: []erdma.GPUNIC{{GPU: 0, Device: "erdma_0", Distance: "SYS"}}},
	}
	a := nccl.AdviseEnv(inv, nccl.EnvOptions{})
	for _, v := range a.Vars {
		fmt.Printf("%s=%s\n", v.Name, v.Value)
	}
	// Output:
	// NCCL_SOCKET_IFNAME=eth0
	// NCCL_IB_HCA==erdma_0:1,erdma_1:1
	// NCCL_IB_GID_INDEX=-1
	// NCCL_IB_ADDR_FAMILY=AF_INET
	// NCCL_IB_ROCE_VERSION_NUM=2
	// NCCL_IB_ADDR_RANGE=172.16.0.0/22
	// NCCL_NET_GDR_LEVEL=SYS
}
