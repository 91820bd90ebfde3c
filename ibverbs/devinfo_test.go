package ibverbs

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// devinfo is `ibv_devinfo -v` as key/value pairs, what the lab tests compare
// our queries against.
type devinfo struct {
	Devices []*devinfoDevice
}

type devinfoDevice struct {
	Name  string
	Attrs map[string]string
	Ports []*devinfoPort
}

type devinfoPort struct {
	Num   int
	Attrs map[string]string
	GIDs  map[int]devinfoGID
}

type devinfoGID struct {
	GID  string
	Type string // "RoCE v2", "" when ibv_devinfo printed none
}

// parseDevinfo reads ibv_devinfo [-v] output: lines before the first
// hca_id and lines it does not know (flag lists, "not supported" notes) are
// skipped; a malformed port or GID line is an error naming the line.
func parseDevinfo(r io.Reader) (*devinfo, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	out := &devinfo{}
	var dev *devinfoDevice
	var port *devinfoPort
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		key, val, ok := strings.Cut(text, ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch {
		case key == "hca_id":
			if val == "" {
				return nil, fmt.Errorf("line %d: hca_id without a name", line)
			}
			dev = &devinfoDevice{Name: val, Attrs: map[string]string{}}
			out.Devices = append(out.Devices, dev)
			port = nil
		case dev == nil || strings.ContainsAny(key, " \t") && !strings.HasPrefix(key, "GID["):
			continue
		case key == "port":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("line %d: port %q is not a port number", line, val)
			}
			port = &devinfoPort{Num: n, Attrs: map[string]string{}, GIDs: map[int]devinfoGID{}}
			dev.Ports = append(dev.Ports, port)
		case strings.HasPrefix(key, "GID["):
			if port == nil {
				return nil, fmt.Errorf("line %d: GID outside a port", line)
			}
			idx, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(key, "GID["), "]")))
			if err != nil || !strings.HasSuffix(key, "]") || idx < 0 {
				return nil, fmt.Errorf("line %d: GID index in %q", line, key)
			}
			// The GID itself contains ':'; val is everything after "GID[ n]:".
			g, typ, _ := strings.Cut(val, ",")
			port.GIDs[idx] = devinfoGID{GID: strings.TrimSpace(g), Type: strings.TrimSpace(typ)}
		case port != nil:
			port.Attrs[key] = val
		default:
			dev.Attrs[key] = val
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading ibv_devinfo output: %w", err)
	}
	return out, nil
}

// devinfoNumber reads a numeric ibv_devinfo value: "PORT_ACTIVE (4)" -> 4,
// "0x1ded" -> 0x1ded, "4096 (5)" -> 5, "16384" -> 16384.
func devinfoNumber(v string) (uint64, error) {
	if i := strings.LastIndexByte(v, '('); i >= 0 && strings.HasSuffix(v, ")") {
		return strconv.ParseUint(v[i+1:len(v)-1], 10, 64)
	}
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0, fmt.Errorf("empty value")
	}
	return strconv.ParseUint(f[0], 0, 64)
}

func TestParseDevinfo(t *testing.T) {
	tests := []struct {
		file      string
		dev       string
		attrs     map[string]string
		portAttrs map[string]string
		gids      map[int]devinfoGID
	}{
		{
			file:      "D09_ibv_devinfo_verbose_rxe_centos7_with_gids.txt",
			dev:       "rxe0",
			attrs:     map[string]string{"transport": "InfiniBand (0)", "node_guid": "b208:75ff:fe5f:b85e", "max_qp_wr": "16384", "vendor_id": "0x0000", "atomic_cap": "ATOMIC_HCA (1)"},
			portAttrs: map[string]string{"state": "PORT_ACTIVE (4)", "active_mtu": "1024 (3)", "gid_tbl_len": "1024", "link_layer": "Ethernet"},
			gids:      map[int]devinfoGID{0: {GID: "fe80:0000:0000:0000:b208:75ff:fe5f:b85e"}, 1: {GID: "0000:0000:0000:0000:0000:ffff:0a0b:0bfb"}},
		},
		{
			file:      "D01_ibv_devices_and_ibv_devinfo_rxe_softroce.txt",
			dev:       "rxe0",
			attrs:     map[string]string{"vendor_id": "0xffffff", "phys_port_cnt": "1"},
			portAttrs: map[string]string{"state": "PORT_ACTIVE (4)", "max_mtu": "4096 (5)"},
		},
		{
			file:      "erdma-ibv_devinfo-stepmesh-pr32.txt",
			dev:       "erdma_0",
			attrs:     map[string]string{"transport": "eRDMA (0)", "vendor_id": "0x1ded", "vendor_part_id": "4223"},
			portAttrs: map[string]string{"state": "PORT_ACTIVE (4)", "link_layer": "Ethernet"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open("testdata/" + tt.file)
			require.NoError(t, err)
			defer f.Close()
			d, err := parseDevinfo(f)
			require.NoError(t, err)
			require.NotEmpty(t, d.Devices)
			dev := d.Devices[0]
			assert.Equal(t, tt.dev, dev.Name)
			for k, v := range tt.attrs {
				assert.Equal(t, v, dev.Attrs[k], k)
			}
			require.NotEmpty(t, dev.Ports)
			for k, v := range tt.portAttrs {
				assert.Equal(t, v, dev.Ports[0].Attrs[k], k)
			}
			for i, g := range tt.gids {
				assert.Equal(t, g, dev.Ports[0].GIDs[i])
			}
		})
	}
}

func TestParseDevinfoErrors(t *testing.T) {
	for _, in := range []string{
		"hca_id:\n",
		"hca_id: rxe0\n\tport: one\n",
		"hca_id: rxe0\n\tGID[ 0]: fe80::\n",
		"hca_id: rxe0\n\tport: 1\n\tGID[x]: fe80::\n",
	} {
		_, err := parseDevinfo(strings.NewReader(in))
		assert.Error(t, err, "%q", in)
	}
}

func TestDevinfoNumber(t *testing.T) {
	for in, want := range map[string]uint64{"PORT_ACTIVE (4)": 4, "0x1ded": 0x1ded, "4096 (5)": 5, "16384": 16384, "0x00": 0, "2.5 Gbps (1)": 1} {
		got, err := devinfoNumber(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := devinfoNumber("Ethernet")
	assert.Error(t, err)
}

func FuzzParseDevinfo(f *testing.F) {
	for _, name := range []string{"D09_ibv_devinfo_verbose_rxe_centos7_with_gids.txt", "D01_ibv_devices_and_ibv_devinfo_rxe_softroce.txt", "erdma-ibv_devinfo-stepmesh-pr32.txt", "lab-rxe-ib_write_bw-client-then-server.txt"} {
		b, err := os.ReadFile("testdata/" + name)
		require.NoError(f, err)
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDevinfo(strings.NewReader(s))
		if err == nil && d == nil {
			t.Fatal("nil result without error")
		}
	})
}
