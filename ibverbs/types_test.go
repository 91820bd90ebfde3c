package ibverbs

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/connect"
	"github.com/erdmakit/erdmakit/gid"
)

func TestEndpointRoundTrip(t *testing.T) {
	g, err := gid.Parse("0000:0000:0000:0000:0000:ffff:0a00:0901")
	require.NoError(t, err)
	tests := []struct {
		name string
		ep   Endpoint
	}{
		{"roce with buffer", Endpoint{QPN: 0x11, PSN: 0xabcdef, GID: g, MTU: MTU1024, Addr: 0x7f00_1234_5000, RKey: 0xdeadbeef, Len: 1 << 20}},
		{"ib by lid", Endpoint{QPN: 0xffffff, PSN: 1, LID: 0x1234, MTU: MTU4096}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.ep.MarshalBinary()
			require.NoError(t, err)
			require.Len(t, b, EndpointSize)
			var got Endpoint
			// rdma_cm pads private data: trailing bytes are ignored.
			require.NoError(t, got.UnmarshalBinary(append(b, make([]byte, 4)...)))
			assert.Equal(t, tt.ep, got)
		})
	}
}

func TestEndpointUnmarshalRejects(t *testing.T) {
	good, _ := Endpoint{QPN: 1, MTU: MTU1024}.MarshalBinary()
	mut := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"short", good[:10], "10 bytes"},
		{"bad magic", mut(func(b []byte) { b[0] = 0 }), "magic"},
		{"future version", mut(func(b []byte) { b[1] = 9 }), "version 9"},
		{"mtu enum", mut(func(b []byte) { b[2] = 7 }), "MTU"},
		{"qpn beyond 24 bits", mut(func(b []byte) { b[4] = 1 }), "QPN"},
		{"psn beyond 24 bits", mut(func(b []byte) { b[8] = 1 }), "PSN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e Endpoint
			err := e.UnmarshalBinary(tt.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func FuzzEndpointUnmarshal(f *testing.F) {
	g, _ := gid.Parse("0000:0000:0000:0000:0000:ffff:0a00:0901")
	seed, _ := Endpoint{QPN: 17, PSN: 99, GID: g, MTU: MTU1024, Addr: 4096, RKey: 5, Len: 64}.MarshalBinary()
	f.Add(seed)
	f.Add([]byte{})
	f.Add(make([]byte, 56))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Endpoint
		if err := e.UnmarshalBinary(b); err != nil {
			return
		}
		// What decodes re-encodes to the same first EndpointSize bytes
		// (except the two reserved fields).
		again, _ := e.MarshalBinary()
		var e2 Endpoint
		require.NoError(t, e2.UnmarshalBinary(again))
		assert.Equal(t, e, e2)
	})
}

func TestGUID(t *testing.T) {
	g, err := gid.Parse("fe80:0000:0000:0000:5054:00ff:fe12:3456")
	require.NoError(t, err)
	assert.Equal(t, "fe80:0000:0000:0000:5054:00ff:fe12:3456", g.String())
	_, ok := g.IPv4()
	assert.False(t, ok)

	v4, err := gid.Parse("0000:0000:0000:0000:0000:ffff:0a00:0901")
	require.NoError(t, err)
	ip, ok := v4.IPv4()
	require.True(t, ok)
	assert.Equal(t, "10.0.9.1", ip.String())

	guid, err := ParseGUID("0216:3eff:fe2f:3775")
	require.NoError(t, err)
	assert.Equal(t, GUID(0x02163efffe2f3775), guid)
	assert.Equal(t, "0216:3eff:fe2f:3775", guid.String())

	for _, bad := range []string{"", "fe80::1", "fe80:0000:0000:0000:5054:00ff:fe12:345g", "0000:0000:0000:0000:0000:ffff:0a00"} {
		_, err := gid.Parse(bad)
		assert.Error(t, err, bad)
	}
	for _, bad := range []string{"", "0216:3eff:fe2f", "0216:3eff:fe2f:377g", "02163eff:fe2f:3775:0"} {
		_, err := ParseGUID(bad)
		assert.Error(t, err, bad)
	}
}

func FuzzParseGID(f *testing.F) {
	f.Add("fe80:0000:0000:0000:5054:00ff:fe12:3456")
	f.Add("0000:0000:0000:0000:0000:ffff:0a00:0901")
	f.Add("0216:3eff:fe2f:3775")
	f.Fuzz(func(t *testing.T, s string) {
		if g, err := gid.Parse(s); err == nil {
			back, err := gid.Parse(g.String())
			require.NoError(t, err)
			assert.Equal(t, g, back)
		}
		if g, err := ParseGUID(s); err == nil {
			back, err := ParseGUID(g.String())
			require.NoError(t, err)
			assert.Equal(t, g, back)
		}
	})
}

func TestSysfsGIDEntry(t *testing.T) {
	root := "testdata/sysfs-rxe"
	v2 := "0000:0000:0000:0000:0000:ffff:0a00:0901"
	tests := []struct {
		name    string
		index   int
		ok      bool
		gid     string
		typ     GIDType
		wantErr string
	}{
		{"link-local v1", 0, true, "fe80:0000:0000:0000:5054:00ff:fe00:0901", GIDTypeIB, ""},
		{"ipv4 v2", 1, true, v2, GIDTypeRoCEv2, ""},
		{"empty entry", 2, false, "", 0, ""},
		{"garbled", 4, false, "", 0, "gids/4"},
		{"beyond the table", 9, false, "", 0, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ok, err := sysfsGIDEntry(root, "rxe0", 1, tt.index)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.ok, ok)
			if ok {
				assert.Equal(t, tt.gid, e.GID.String())
				assert.Equal(t, tt.typ, e.Type)
				assert.Equal(t, tt.index, e.Index)
			}
		})
	}
}

func TestPickGID(t *testing.T) {
	ll, _ := gid.Parse("fe80:0000:0000:0000:5054:00ff:fe00:0901")
	v4, _ := gid.Parse("0000:0000:0000:0000:0000:ffff:0a00:0901")
	tests := []struct {
		name string
		in   []GIDEntry
		want int
	}{
		{"empty", nil, -1},
		{"ib only", []GIDEntry{{Index: 0, GID: ll, Type: GIDTypeIB}}, 0},
		{"v2 link-local before v2 ipv4", []GIDEntry{{0, ll, GIDTypeIB, 0}, {1, ll, GIDTypeRoCEv2, 0}, {2, v4, GIDTypeRoCEv1, 0}, {3, v4, GIDTypeRoCEv2, 0}}, 3},
		{"v2 without ipv4", []GIDEntry{{0, ll, GIDTypeIB, 0}, {1, ll, GIDTypeRoCEv2, 0}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, pickGID(tt.in)) })
	}
}

func TestErrorWrapsErrnoWithHint(t *testing.T) {
	tests := []struct {
		verb  string
		errno syscall.Errno
		tr    Transport
		hint  string
	}{
		{"ibv_create_qp", syscall.ENOMEM, TransportIB, "ulimit -l unlimited"},
		{"ibv_reg_mr", syscall.ENOMEM, TransportIB, "memlock"},
		{"ibv_modify_qp(RTR)", syscall.EINVAL, TransportIWARP, "connect with rdma_cm"},
		{"ibv_modify_qp(RTS)", syscall.EINVAL, TransportIWARP, "rdma_cm"},
		{"rdma_create_event_channel", syscall.ENODEV, TransportUnknown, "rdma_ucm"},
	}
	for _, tt := range tests {
		t.Run(tt.verb, func(t *testing.T) {
			var err error = &Error{Verb: tt.verb, Device: "erdma_0", Errno: tt.errno, Hint: hintFor(tt.verb, tt.errno, tt.tr)}
			err = fmt.Errorf("setting up: %w", err)
			assert.ErrorIs(t, err, tt.errno)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Contains(t, err.Error(), tt.verb+" on erdma_0")
			assert.Contains(t, err.Error(), tt.hint)
		})
	}
	assert.NotErrorIs(t, &Error{Verb: "x"}, syscall.EINVAL)
}

func TestWCErrorNamesStatus(t *testing.T) {
	err := error(&WCError{Status: WCRetryExcErr, StatusStr: "transport retry counter exceeded", WRID: 7, QPN: 17})
	assert.Contains(t, err.Error(), "IBV_WC_RETRY_EXC_ERR")
	assert.Contains(t, err.Error(), "transport retry counter exceeded")
	assert.Equal(t, "IBV_WC_STATUS_99", WCStatus(99).String())
	var we *WCError
	assert.True(t, errors.As(fmt.Errorf("x: %w", err), &we))
}

func TestEnumsPrintLikeIbvDevinfo(t *testing.T) {
	assert.Equal(t, "4096 (5)", MTU4096.String())
	assert.Equal(t, 1024, MTU1024.Bytes())
	assert.Equal(t, 0, MTU(9).Bytes())
	assert.Equal(t, "PORT_ACTIVE", PortActive.String())
	assert.Equal(t, "Ethernet", LinkLayerEthernet.String())
	assert.Equal(t, "iWARP", TransportIWARP.String())
	assert.Equal(t, "RNIC", NodeRNIC.String())
	assert.Equal(t, "RoCE v2", GIDTypeRoCEv2.String())
	assert.Equal(t, connect.RDMACM, MethodFor(TransportIWARP))
	assert.Equal(t, connect.OOB, MethodFor(TransportIB))
}

func TestWritesSignalled(t *testing.T) {
	for _, tt := range []struct{ count, every, want int }{{1, 1, 1}, {64, 16, 4}, {65, 16, 5}, {16, 0, 16}, {3, 64, 1}} {
		assert.Equal(t, tt.want, Writes{Count: tt.count, SignalEvery: tt.every}.Signalled(), "%+v", tt)
	}
}
