// Command ldd is built by TestBinaryDoesNotLinkVerbs and
// TestNoCgoBuildReturnsErrNotSupported: it lists the RDMA devices and says
// whether the call returned ErrNotSupported.
package main

import (
	"errors"
	"fmt"

	"github.com/erdmakit/erdmakit/ibverbs"
)

func main() {
	devs, err := ibverbs.Devices()
	fmt.Printf("devices=%d not_supported=%v err=%v\n", len(devs), errors.Is(err, ibverbs.ErrNotSupported), err)
}
