package gid

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// From the real samples: ibv_devinfo -v on eRDMA and rxe (D06, D01).
var sampleGIDs = []string{
	"0000:0000:0000:0000:0000:ffff:0a0b:0bfb",
	"fe80:0000:0000:0000:b208:75ff:fe5f:b85e",
	"fe80:0000:0000:0000:0216:3eff:fe2f:3775",
}

func TestParseRoundTrip(t *testing.T) {
	for _, s := range sampleGIDs {
		g, err := Parse(s + "\n")
		require.NoError(t, err)
		assert.Equal(t, s, g.String())
	}
	g, _ := Parse(sampleGIDs[0])
	ip, ok := g.IPv4()
	assert.True(t, ok)
	assert.Equal(t, "10.11.11.251", ip.String())
	_, ok = MustParse(t, sampleGIDs[1]).IPv4()
	assert.False(t, ok)
}

func MustParse(t *testing.T, s string) GID {
	g, err := Parse(s)
	require.NoError(t, err)
	return g
}

func TestParseRejects(t *testing.T) {
	for _, s := range []string{"", "fe80::1", "fe80:0000:0000:0000:0216:3eff:fe2f:377", "fe80-0000:0000:0000:0216:3eff:fe2f:3775",
		"fe80:0000:0000:0000:0216:3eff:fe2f:37zz", "fe80:0000:0000:0000:0216:3eff:fe2f:3775:0000"} {
		_, err := Parse(s)
		assert.ErrorIs(t, err, ErrMalformed, s)
	}
}

func TestGUIDMAC(t *testing.T) {
	g, err := ParseGUID("0216:3eff:fe2f:3775")
	require.NoError(t, err)
	mac, ok := g.MAC()
	require.True(t, ok)
	assert.Equal(t, "00:16:3e:2f:37:75", mac.String())
	g, _ = ParseGUID("0216:3e00:002f:3775")
	_, ok = g.MAC()
	assert.False(t, ok, "not EUI-64")
	_, err = ParseGUID("0216:3eff:fe2f")
	assert.ErrorIs(t, err, ErrMalformed)
}

func TestChoose(t *testing.T) {
	link := MustParse(t, "fe80:0000:0000:0000:0216:3eff:fe2f:3775")
	v4 := MustParse(t, "0000:0000:0000:0000:0000:ffff:c0a8:0a0b") // 192.168.10.11
	other := MustParse(t, "0000:0000:0000:0000:0000:ffff:0a00:0001")
	local := []netip.Addr{netip.MustParseAddr("192.168.10.11")}
	for _, tc := range []struct {
		name    string
		entries []Entry
		local   []netip.Addr
		index   int
		exact   bool
	}{
		{"the netdev's RoCE v2 IPv4 entry", []Entry{{0, link, false}, {1, link, true}, {2, other, true}, {3, v4, true}}, local, 3, true},
		{"any RoCE v2 IPv4 entry without a netdev", []Entry{{0, link, false}, {1, link, true}, {2, other, true}}, nil, 2, true},
		{"another address's entry is only a fallback", []Entry{{1, link, true}, {2, other, true}}, local, 2, false},
		{"RoCE v1 IPv4 is not chosen", []Entry{{0, link, false}, {1, v4, false}}, local, 0, false},
		{"first RoCE v2", []Entry{{0, link, false}, {1, link, true}}, nil, 1, false},
		{"empty table", nil, nil, -1, false},
		{"zero entries are unpopulated", []Entry{{0, GID{}, true}}, nil, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i, exact := Choose(tc.entries, tc.local)
			assert.Equal(t, tc.index, i)
			assert.Equal(t, tc.exact, exact)
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range sampleGIDs {
		f.Add(s)
	}
	f.Add("0216:3eff:fe2f:3775") // eRDMA node_guid
	f.Add("5054:00ff:fe95:c80e") // rxe node_guid (D01)
	f.Add("248a:0703:00b3:d113") // mlx5 node_guid (D03)
	f.Fuzz(func(t *testing.T, s string) {
		if g, err := Parse(s); err == nil {
			if h, err := Parse(g.String()); err != nil || h != g {
				t.Fatalf("%q: round trip %v %v", s, h, err)
			}
		}
		if g, err := ParseGUID(s); err == nil {
			if h, err := ParseGUID(g.String()); err != nil || h != g {
				t.Fatalf("%q: GUID round trip", s)
			}
		}
	})
}
