package labtest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// captured in the lab: `rdma res show` on an idle rxe0 and with a perftest pair running
const resIdle = "0: rxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 ctx 0 srq 0 \n"

func TestParseRdmaResShow(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]Resources
		wantErr string
	}{
		{"idle rxe0", resIdle, map[string]Resources{"rxe0": {"pd": 1, "cq": 1, "qp": 1, "cm_id": 0, "mr": 0, "ctx": 0, "srq": 0}}, ""},
		{"two devices", "0: rxe0: pd 3 qp 2 \n1: rxe1: pd 1 qp 1\n", map[string]Resources{"rxe0": {"pd": 3, "qp": 2}, "rxe1": {"pd": 1, "qp": 1}}, ""},
		{"empty", "", map[string]Resources{}, ""},
		{"garbage", "hello world\n", nil, `unexpected "hello world"`},
		{"bad count", "0: rxe0: pd x\n", nil, `pd count "x"`},
		{"odd fields", "0: rxe0: pd 1 cq\n", nil, "unexpected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRdmaResShow(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func FuzzParseRdmaResShow(f *testing.F) {
	f.Add(resIdle)
	f.Add("0: rxe0: pd 3 qp 2 \n1: rxe1: pd 1 qp 1\n")
	f.Add("0: : pd\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseRdmaResShow(strings.NewReader(in))
		if err == nil && got == nil {
			t.Fatal("nil map without error")
		}
	})
}

func TestRequireOutsideLab(t *testing.T) {
	t.Setenv(EnvLab, "")
	t.Setenv("CI", "")
	ok := t.Run("skips", func(t *testing.T) {
		Require(t)
		t.Fatal("Require did not skip outside the lab")
	})
	assert.True(t, ok, "a skip is not a failure")
	assert.False(t, InLab())
	t.Setenv("CI", "true")
	assert.True(t, InCI())
	t.Setenv("CI", "false")
	assert.False(t, InCI())
}

func TestEnvAccessors(t *testing.T) {
	t.Setenv(EnvLab, "1")
	t.Setenv(EnvRole, RoleA)
	t.Setenv(EnvDevice, "rxe0")
	t.Setenv(EnvNetdev, "eth0")
	t.Setenv(EnvIP, "10.0.9.1")
	t.Setenv(EnvPeer, "10.0.9.2")
	t.Setenv(EnvGIDIndex, "1")
	assert.True(t, InLab())
	assert.True(t, IsServer())
	assert.Equal(t, "rxe0", Device())
	assert.Equal(t, "eth0", Netdev())
	assert.Equal(t, "10.0.9.1", IP())
	assert.Equal(t, "10.0.9.2", Peer())
	assert.Equal(t, 1, GIDIndex())
	t.Setenv(EnvGIDIndex, "")
	assert.Equal(t, -1, GIDIndex())
	Require2Host(t) // must not fail: role a with a peer
}

func TestListenDialLoopback(t *testing.T) {
	ctx := Deadline(t)
	type res struct {
		msg string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := Accept(ctx, "127.0.0.1:18997")
		if err != nil {
			ch <- res{err: err}
			return
		}
		defer c.Close()
		b := make([]byte, 2)
		_, err = c.Read(b)
		ch <- res{string(b), err}
	}()
	c, err := DialRetry(ctx, "127.0.0.1:18997")
	require.NoError(t, err)
	_, err = c.Write([]byte("go"))
	require.NoError(t, err)
	c.Close()
	r := <-ch
	require.NoError(t, r.err)
	assert.Equal(t, "go", r.msg)
}
