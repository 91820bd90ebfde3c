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

// An eRDMA device's node_guid is the EUI-64 of its ERI's MAC: GUID.MAC and
// GUIDFromMAC go between the two.
func ExampleGUIDFromMAC() {
	g, err := gid.ParseGUID("0216:3eff:fe2f:3775")
	if err != nil {
		fmt.Println(err)
		return
	}
	mac, ok := g.MAC()
	fmt.Println(mac, ok)
	back, _ := gid.GUIDFromMAC(mac)
	fmt.Println(back, back == g)
	// Output:
	// 00:16:3e:2f:37:75 true
	// 0216:3eff:fe2f:3775 true
}
