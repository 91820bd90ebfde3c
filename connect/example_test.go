package connect_test

import (
	"fmt"

	"github.com/erdmakit/erdmakit/connect"
)

// A device in iWARP mode (node_type "4: RNIC") connects through rdma_cm
// unless the caller asked for a method.
func ExampleMethod_Resolve() {
	t := connect.TransportOf(4, "")
	fmt.Println(t, connect.Auto.Resolve(t), connect.OOB.Resolve(t))
	// Output: iwarp rdma_cm oob
}

func ExampleParseMethod() {
	m, err := connect.ParseMethod("rdma_cm")
	fmt.Println(m, err)
	// Output: rdma_cm <nil>
}
