package hostgen_test

import (
	"context"
	"fmt"
	"os"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/hostgen"
)

// Generate a host with four eRDMA devices and read it back.
func ExampleWrite() {
	dir, _ := os.MkdirTemp("", "hostgen")
	defer os.RemoveAll(dir)
	if err := hostgen.Write(dir, hostgen.Host("four", hostgen.ManyNICs(4))); err != nil {
		fmt.Println(err)
		return
	}
	inv, _ := erdma.ReadInventory(context.Background(), erdma.RecordedHost(dir), erdma.InventoryOptions{})
	for _, d := range inv.Devices {
		fmt.Println(d.Name, d.PCIAddress, d.Netdev, d.Ports[0].RecommendedGIDIndex)
	}
	// Output:
	// erdma_0 0000:00:05.0 eth1 1
	// erdma_1 0000:04:05.0 eth2 2
	// erdma_2 0000:08:05.0 eth3 1
	// erdma_3 0000:0c:05.0 eth4 2
}
