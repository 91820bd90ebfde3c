package gid_test

import (
	"fmt"
	"net/netip"

	"github.com/erdmakit/erdmakit/gid"
)

func ExampleChoose() {
	link, _ := gid.Parse("fe80:0000:0000:0000:0216:3eff:fe2f:3775")
	v4, _ := gid.Parse("0000:0000:0000:0000:0000:ffff:c0a8:0a0b")
	table := []gid.Entry{{Index: 0, GID: link}, {Index: 1, GID: v4, RoCEv2: true}}
	i, exact := gid.Choose(table, []netip.Addr{netip.MustParseAddr("192.168.10.11")})
	fmt.Println(i, exact)
	// Output: 1 true
}
