package doctor_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
)

const (
	goodMAC = "00:16:3e:aa:00:01"
	goodIP  = "10.0.1.11/24"
	goodGW  = "10.0.1.253"
)

// TestHostileValuesAreRefused: names the kernel would not allow, MACs that
// are not hex, addresses that are not IPv4 (the IPv4-mapped /120 that
// panicked), prefixes and gateways outside the subnet: ErrInvalidValue
// naming the value, before anything is written.
func TestHostileValuesAreRefused(t *testing.T) {
	for _, tc := range []struct{ name, mac, addr, gw, want string }{
		{"a/b", goodMAC, goodIP, goodGW, `"a/b"`},
		{"../../etc", goodMAC, goodIP, goodGW, `"../../etc"`},
		{"", goodMAC, goodIP, goodGW, `""`},
		{"0123456789abcdef", goodMAC, goodIP, goodGW, "15 bytes"},
		{"..", goodMAC, goodIP, goodGW, `".."`},
		{"a b", goodMAC, goodIP, goodGW, `"a b"`},
		{"a:1", goodMAC, goodIP, goodGW, `"a:1"`},
		{"a\nb", goodMAC, goodIP, goodGW, `"a\nb"`},
		{"eth1", "00:16:3e:aa:00:01$(touch /tmp/pwned)", goodIP, goodGW, "$(touch /tmp/pwned)"},
		{"eth1", "00:16:3e:aa:00:0\"\nX=1", goodIP, goodGW, `X=1`},
		{"eth1", goodMAC, "::ffff:192.168.10.5/120", "192.168.10.1", "::ffff:192.168.10.5/120"},
		{"eth1", goodMAC, "10.0.1.11/0", goodGW, "10.0.1.11/0"},
		{"eth1", goodMAC, "fd00::5/64", "fd00::1", "fd00::5/64"},
		{"eth1", goodMAC, goodIP, "10.0.2.1", "10.0.2.1"},
		{"eth1", goodMAC, goodIP, "::ffff:10.0.1.253", "::ffff:10.0.1.253"},
		{"eth1", goodMAC, goodIP, "10.0.1.11", "10.0.1.11"},
	} {
		for _, stack := range []string{doctor.StackNetplan, doctor.StackNetworkManager, doctor.StackIfcfg, doctor.StackNetworkd} {
			_, err := doctor.NetworkFiles(stack, tc.name, tc.mac, tc.addr, tc.gw, 8500, 200)
			require.ErrorIs(t, err, doctor.ErrInvalidValue, "%s %q %q %q %q", stack, tc.name, tc.mac, tc.addr, tc.gw)
			assert.Contains(t, err.Error(), tc.want)
		}
	}
}

// TestMetadataValuesAreValidated: the metadata service's vswitch-cidr-block
// as an IPv4-mapped IPv6 /120 (which panicked the os stage) is refused by
// the client that reads it.
func TestMetadataValuesAreValidated(t *testing.T) {
	for _, cidr := range []string{"::ffff:192.168.10.0/120", "192.168.10.0/0", "192.168.10.0/33", "fd00::/64"} {
		md := metadataFake(t, map[string]string{"primary-ip-address": "192.168.10.5", "vswitch-cidr-block": cidr, "gateway": "192.168.10.1"})
		_, err := md.NetConfig(context.Background(), goodMAC)
		require.ErrorIs(t, err, erdma.ErrMetadataValue, cidr)
		assert.Contains(t, err.Error(), cidr)
	}
}

// hostile are the seeds of the writers' fuzz tests: names the kernel
// allows that a shell, YAML or a keyfile would read otherwise.
var hostile = []string{"eth1", "e;touch${IFS}Z", "e$(id)", "e`id`", "e'x", `e"x`, `e\x`, "e#x", "e&x|y", "-x", "e=1", "[x]", "e*", "ü", "e%x", "!x"}

// FuzzNetFiles: for any name, MAC, address and gateway, either the value is
// refused (ErrInvalidValue) or each file, read back by its real reader
// (bash sourcing ifcfg in an empty environment, network-scripts' word
// splitting of route-DEV, GLib's GKeyFile for NetworkManager, netplan
// generate), gives back exactly the values written, no other key, and runs
// nothing.
func FuzzNetFiles(f *testing.F) {
	for _, n := range hostile {
		f.Add(n, goodMAC, goodIP, goodGW)
	}
	f.Add("eth1", "00:16:3E:AA:00:01", "192.168.0.7/16", "192.168.255.254")
	f.Add("eth1", "00:16:3e:aa:00:01$(touch Z)", goodIP, goodGW)
	f.Add("eth1", goodMAC, "::ffff:192.168.10.5/120", "192.168.10.1")
	f.Fuzz(func(t *testing.T, name, mac, addr, gw string) {
		for _, stack := range []string{doctor.StackNetplan, doctor.StackNetworkManager, doctor.StackIfcfg, doctor.StackNetworkd} {
			files, err := doctor.NetworkFiles(stack, name, mac, addr, gw, 8500, 200)
			if err != nil {
				require.ErrorIs(t, err, doctor.ErrInvalidValue)
				continue
			}
			readBack(t, stack, name, strings.ToLower(mac), gw != "", files)
		}
	})
}

func readBack(t *testing.T, stack, name, mac string, hasGW bool, files map[string]string) {
	for p := range files {
		require.Equal(t, filepath.Dir(p), filepath.Dir(filepath.Clean(p)), "one directory: %q", p)
		require.NotContains(t, filepath.Base(p), "/")
	}
	switch stack {
	case doctor.StackIfcfg:
		ifcfg := files["/etc/sysconfig/network-scripts/ifcfg-"+name]
		require.NotEmpty(t, ifcfg)
		dir := t.TempDir()
		fn := filepath.Join(dir, "ifcfg")
		require.NoError(t, os.WriteFile(fn, []byte(ifcfg), 0o644))
		out, err := exec.Command("bash", "-n", fn).CombinedOutput()
		require.NoError(t, err, "bash -n: %s", out)
		cmd := exec.Command("/bin/bash", "--norc", "--noprofile", "-c", `set -u; . ./ifcfg; printf '%s\0' "$DEVICE" "$HWADDR" "$IPADDR" "$PREFIX" "$MTU"; compgen -v | grep -vxE 'BASH.*|[A-Z_]*PATH|COMP.*|DIRSTACK|EUID|GROUPS|HISTCMD|HOSTNAME|HOSTTYPE|IFS|LINENO|MACHTYPE|OPT.*|OSTYPE|PIPESTATUS|PPID|PS4|PWD|RANDOM|SECONDS|SHELL.*|SHLVL|SRANDOM|UID|EPOCH.*|_|BASHOPTS|TERM' | tr '\n' ' '`)
		cmd.Dir, cmd.Env = dir, []string{}
		out, err = cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		vals := strings.Split(string(out), "\x00")
		require.Len(t, vals, 6, "%q", out)
		assert.Equal(t, name, vals[0])
		assert.Equal(t, mac, vals[1])
		assert.Equal(t, "32", vals[3])
		assert.ElementsMatch(t, strings.Fields("BOOTPROTO DEFROUTE DEVICE HWADDR IPADDR IPV4_ROUTE_METRIC MTU ONBOOT PREFIX TYPE"), strings.Fields(vals[5]), "no other variable")
		ents, _ := os.ReadDir(dir)
		assert.Len(t, ents, 1, "sourcing created nothing")
		// network-scripts' ifup-routes: `ip -4 route add $line`, unquoted.
		route := files["/etc/sysconfig/network-scripts/route-"+name]
		cmd = exec.Command("/bin/bash", "--norc", "--noprofile", "-c", `while read line; do [[ "$line" =~ ^[[:space:]]*(\#.*)?$ ]] && continue; set -- $line; printf '%s\n' "$*"; for w in "$@"; do printf '%s\0' "$w"; done; printf '\n'; done`)
		cmd.Dir, cmd.Env, cmd.Stdin = dir, []string{}, strings.NewReader(route)
		out, err = cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "\x00dev\x00"+name+"\x00", "the name is one word: %q", out)
	case doctor.StackNetworkManager:
		kf := files["/etc/NetworkManager/system-connections/erdmakit-"+name+".nmconnection"]
		require.NotEmpty(t, kf)
		py := "/usr/bin/python3"
		if _, err := os.Stat(py); err != nil {
			if labtest.InCI() {
				t.Fatal("python3-gi (GLib's GKeyFile) missing (CI=true)")
			}
			return
		}
		cmd := exec.Command(py, "-c", `
import sys
from gi.repository import GLib
k = GLib.KeyFile()
d = sys.stdin.read()
k.load_from_data(d, len(d.encode()), 0)
for g in k.get_groups()[0]:
    for key in k.get_keys(g)[0]:
        sys.stdout.write(g + "." + key + "=" + k.get_string(g, key) + "\0")
`)
		cmd.Stdin = strings.NewReader(kf)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "GKeyFile: %s", out)
		got := map[string]string{}
		for _, kv := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
			k, v, _ := strings.Cut(kv, "=")
			got[k] = v
		}
		assert.Equal(t, name, got["connection.interface-name"])
		assert.Equal(t, "erdmakit-"+name, got["connection.id"])
		assert.Equal(t, strings.ToUpper(mac), got["ethernet.mac-address"])
		keys := make([]string, 0, len(got))
		for k := range got {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		want := []string{"connection.autoconnect", "connection.id", "connection.interface-name", "connection.type", "connection.uuid",
			"ethernet.mac-address", "ethernet.mtu", "ipv4.address1", "ipv4.gateway", "ipv4.method", "ipv4.route-metric", "ipv6.method"}
		if !hasGW {
			want = slices.DeleteFunc(want, func(k string) bool { return k == "ipv4.gateway" })
		}
		assert.Equal(t, want, keys)
	case doctor.StackNetplan:
		y := files["/etc/netplan/60-erdmakit-"+name+".yaml"]
		require.NotEmpty(t, y)
		if _, err := exec.LookPath("netplan"); err != nil {
			if labtest.InCI() {
				t.Fatal("netplan missing (CI=true)")
			}
			return
		}
		root := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/netplan"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "etc/netplan/60-erdmakit.yaml"), []byte(y), 0o600))
		out, err := exec.Command("netplan", "generate", "--root-dir", root).CombinedOutput()
		if err != nil {
			// netplan may refuse an id it does not like: refused is safe,
			// as long as nothing was generated from it.
			_, serr := os.Stat(filepath.Join(root, "run/systemd/network"))
			assert.Error(t, serr, "netplan failed (%s) yet generated files", out)
			return
		}
		var all []string
		_ = filepath.WalkDir(filepath.Join(root, "run"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".network") {
				b, _ := os.ReadFile(p)
				all = append(all, string(b))
			}
			return nil
		})
		require.Len(t, all, 1, "one .network file")
		assert.Contains(t, all[0], "PermanentMACAddress="+mac+"\n")
		assert.Contains(t, all[0], "Metric=200\n")
		if hasGW {
			assert.Contains(t, all[0], "GatewayOnLink=true\n")
		}
	case doctor.StackNetworkd:
		nd := files[doctor.NetworkdFile(name)]
		require.NotEmpty(t, nd)
		assert.Contains(t, nd, "[Match]\nMACAddress="+mac+"\n")
		for _, l := range strings.Split(nd, "\n") {
			if l != "" && !strings.HasPrefix(l, "[") {
				k, _, ok := strings.Cut(l, "=")
				require.True(t, ok, l)
				assert.Contains(t, []string{"MACAddress", "MTUBytes", "LinkLocalAddressing", "IPv6AcceptRA", "Address", "AddPrefixRoute",
					"Destination", "Scope", "PreferredSource", "Metric", "Gateway", "GatewayOnLink"}, k)
			}
		}
	}
}

// metadataFake serves one ENI's metadata items for goodMAC.
func metadataFake(t *testing.T, items map[string]string) *erdma.MetadataClient {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			_, _ = w.Write([]byte("token"))
			return
		}
		v, ok := items[path.Base(r.URL.Path)]
		if !ok || !strings.Contains(r.URL.Path, goodMAC) {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(v))
	}))
	t.Cleanup(srv.Close)
	return &erdma.MetadataClient{BaseURL: srv.URL}
}

// TestNetworkdShadowing: a catch-all .network file that sorts before
// erdmakit's is named; one after it, or one that matches other links, is not.
func TestNetworkdShadowing(t *testing.T) {
	for body, want := range map[string]string{
		"[Match]\nName=eth*\n\n[Network]\nDHCP=yes\n":   "Name=eth*",
		"[Network]\nDHCP=yes\n":                         "no [Match]",
		"[Match]\nName=en* eth0\n[Network]\nDHCP=yes\n": "",
		"[Match]\nMACAddress=00:16:3e:aa:00:09\n":       "",
		"[Match]\nMACAddress=00:16:3E:AA:00:01\n":       "MACAddress=",
		"[Match]\nName=!eth0\n":                         "Name=!eth0",
		"[Match]\nType=ether\n":                         "Type=ether",
	} {
		got := doctor.NetworkdMatches(body, "eth1", goodMAC)
		if want == "" {
			assert.Empty(t, got, body)
		} else {
			assert.Contains(t, got, want, body)
		}
	}
}

// FuzzMetadataToPlan: whatever the metadata service answers for an ERI
// (address, vswitch-cidr-block, gateway), the os stage of a recorded host
// plans without a panic: either it refuses the value (ErrInvalidValue,
// naming it) or every file it plans carries the address as given.
func FuzzMetadataToPlan(f *testing.F) {
	f.Add("10.0.1.11", "10.0.1.0/24", "10.0.1.253")
	f.Add("192.168.10.5", "::ffff:192.168.10.0/120", "192.168.10.1")
	f.Add("192.168.10.5", "192.168.10.0/0", "192.168.10.1")
	f.Add("10.0.1.11", "10.0.1.0/24", "10.0.1.11")
	f.Add("10.0.1.11\nX=1", "10.0.1.0/24", "10.0.1.253")
	f.Add("010.0.1.11", "10.0.1.0/24", "10.0.1.253")
	f.Add("10.0.1.11", "10.0.1.0/31", "10.0.1.10")
	dir := hostDir(f, "ebmgn8is-healthy")
	h := erdma.RecordedHost(dir)
	rep, err := diagnoseRecorded(f, dir)
	require.NoError(f, err)
	var items map[string]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			_, _ = w.Write([]byte("token"))
			return
		}
		if v, ok := items[path.Base(r.URL.Path)]; ok {
			_, _ = w.Write([]byte(v))
			return
		}
		http.NotFound(w, r)
	}))
	f.Cleanup(srv.Close)
	md := &erdma.MetadataClient{BaseURL: srv.URL}
	f.Fuzz(func(t *testing.T, ip, cidr, gw string) {
		items = map[string]string{"primary-ip-address": ip, "vswitch-cidr-block": cidr, "gateway": gw}
		for _, stack := range []string{doctor.StackNetplan, doctor.StackNetworkManager, doctor.StackIfcfg, doctor.StackNetworkd} {
			p, err := doctor.PlanStage(context.Background(), h, rep, doctor.DefaultOptions(), doctor.StageOS,
				&doctor.FixEnv{Root: dir, Metadata: md, NetworkStack: stack})
			if err != nil {
				require.ErrorIs(t, err, doctor.ErrInvalidValue, "%s", stack)
				continue
			}
			for _, c := range p.Changes {
				if c.File != nil && !strings.Contains(c.File.Path, "route-") {
					assert.Contains(t, c.File.Content, ip, "%s: %s", stack, c.File.Path)
				}
			}
		}
	})
}
