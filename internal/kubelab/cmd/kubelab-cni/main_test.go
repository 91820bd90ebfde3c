package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name, cmd, conf string
		env             map[string]string
		want, err       string
	}{
		{name: "version", cmd: "VERSION", want: `"supportedVersions"`},
		{name: "add", cmd: "ADD", conf: `{"cniVersion":"1.0.0","name":"kubelab","type":"kubelab-cni"}`,
			env: map[string]string{"CNI_CONTAINERID": "abc", "CNI_NETNS": "/run/netns/x", "CNI_IFNAME": "eth0"}, want: `"address":"` + Address("abc") + `/16"`},
		{name: "add 0.3.1 says the IP version", cmd: "ADD", conf: `{"cniVersion":"0.3.1"}`,
			env: map[string]string{"CNI_CONTAINERID": "abc", "CNI_IFNAME": "eth0"}, want: `"version":"4"`},
		{name: "add without id", cmd: "ADD", conf: `{"cniVersion":"1.0.0"}`, err: "needs CNI_CONTAINERID"},
		{name: "del", cmd: "DEL", conf: `{"cniVersion":"1.0.0"}`},
		{name: "check", cmd: "CHECK", conf: `{}`},
		{name: "bad json", cmd: "ADD", conf: `{`, err: "network configuration"},
		{name: "unknown command", cmd: "FROB", conf: `{}`, err: `"FROB"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"CNI_COMMAND": tc.cmd}
			for k, v := range tc.env {
				env[k] = v
			}
			var out bytes.Buffer
			err := run(func(k string) string { return env[k] }, strings.NewReader(tc.conf), &out)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Contains(t, out.String(), tc.want)
			if out.Len() > 0 {
				assert.True(t, json.Valid(out.Bytes()), out.String())
			}
		})
	}
}

func TestAddress(t *testing.T) {
	seen := map[string]bool{}
	for _, id := range []string{"a", "b", "c", strings.Repeat("f", 64)} {
		a := Address(id)
		assert.True(t, strings.HasPrefix(a, "127.1."), a)
		assert.NotEqual(t, "127.1.0.0", a)
		assert.NotEqual(t, "127.1.255.255", a)
		seen[a] = true
	}
	assert.Len(t, seen, 4)
	assert.Equal(t, Address("a"), Address("a"))
}

func FuzzRun(f *testing.F) {
	f.Add("ADD", `{"cniVersion":"1.0.0","name":"kubelab","plugins":[{"type":"kubelab-cni"}]}`, "id")
	f.Add("DEL", `{}`, "")
	f.Add("VERSION", ``, "")
	f.Fuzz(func(t *testing.T, cmd, conf, id string) {
		env := map[string]string{"CNI_COMMAND": cmd, "CNI_CONTAINERID": id, "CNI_IFNAME": "eth0"}
		var out bytes.Buffer
		if err := run(func(k string) string { return env[k] }, strings.NewReader(conf), &out); err == nil && out.Len() > 0 {
			assert.True(t, json.Valid(out.Bytes()), out.String())
		}
	})
}
