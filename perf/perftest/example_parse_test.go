package perftest_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/perf/perftest"
)

func ExampleParse() {
	log := `                    RDMA_Write BW Test
 Dual-port       : OFF          Device         : erdma_0
 Number of qps   : 16           Transport type : IB
 Link type       : Ethernet
 rdma_cm QPs     : OFF
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 65536      5000             11920.93           11920.93             0.190735
---------------------------------------------------------------------------------------
`
	r, err := perftest.Parse(context.Background(), strings.NewReader(log))
	if err != nil {
		fmt.Println(err)
		return
	}
	res := r.Results[0]
	fmt.Printf("%s on %s, %d QPs: %d B at %.2f Gbit/s, ok=%v\n", r.Test, r.Device, r.QPs, res.Bytes, res.BWAvgGbps, r.OK())
	// Output: RDMA_Write BW Test on erdma_0, 16 QPs: 65536 B at 100.00 Gbit/s, ok=true
}
