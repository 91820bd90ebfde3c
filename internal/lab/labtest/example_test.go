package labtest_test

import (
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/internal/lab/labtest"
)

// A leak check compares `rdma res show` counts before and after.
func ExampleParseRdmaResShow() {
	res, err := labtest.ParseRdmaResShow(strings.NewReader("0: rxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 ctx 0 srq 0 \n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res["rxe0"]["qp"], res["rxe0"]["mr"])
	// Output: 1 0
}

// How a two-host lab test splits its roles (see package lab's doc).
func ExampleIsServer() {
	// func TestLab2HostWrite(t *testing.T) {
	// 	labtest.Require2Host(t)
	// 	if labtest.IsServer() {
	// 		c := labtest.Listen(t, 18700) // role a, 10.0.9.1
	// 		...
	// 	} else {
	// 		c := labtest.Dial(t, 18700) // role b dials ERDMAKIT_LAB_PEER
	// 		...
	// 	}
	// }
	fmt.Println(labtest.RoleA, labtest.RoleB)
	// Output: a b
}
