package lab_test

import (
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/internal/lab"
)

// The qemu command line of the server side of the two-VM lab.
func ExampleVM_Args() {
	vm := lab.VM{
		Kernel:    lab.Kernel{Image: "/boot/vmlinuz-6.1.0-57-amd64"},
		Initramfs: "/tmp/w/initramfs.cpio", WorkDir: "/tmp/w", Script: "run-a.sh",
		Net: lab.Net{Local: "127.0.0.1:40000", Remote: "127.0.0.1:40001", MAC: lab.MACA},
	}
	args := vm.Args()
	for i := 0; i < len(args); i++ {
		if args[i] == "-netdev" || args[i] == "-device" {
			fmt.Println(args[i], args[i+1])
		}
	}
	// Output:
	// -netdev socket,id=n0,udp=127.0.0.1:40001,localaddr=127.0.0.1:40000
	// -device virtio-net-pci,netdev=n0,mac=52:54:00:00:09:01
}

// Reading a test binary's -test.v output.
func ExampleParseTestOutput() {
	out, _ := lab.ParseTestOutput(strings.NewReader(`=== RUN   TestLabDeviceActive
--- PASS: TestLabDeviceActive (0.06s)
=== RUN   TestLabIbWriteBwOOB
    lab_lab_test.go:175: ib_write_bw: 65536 bytes x 200: BW average 0.150 Gb/s
--- PASS: TestLabIbWriteBwOOB (12.23s)
PASS
`))
	for _, t := range out.Tests {
		fmt.Println(t.Name, t.Outcome, t.Elapsed)
	}
	fmt.Println("failed:", out.Failed(true))
	// Output:
	// TestLabDeviceActive PASS 60ms
	// TestLabIbWriteBwOOB PASS 12.23s
	// failed: false
}
