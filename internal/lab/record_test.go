package lab

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/fixture"
)

func TestNetdevsFromIPJSON(t *testing.T) {
	b, err := os.ReadFile("testdata/ip-j-addr-lab.json")
	require.NoError(t, err)
	nds, err := NetdevsFromIPJSON(b)
	require.NoError(t, err)
	assert.Equal(t, []erdma.Netdev{{Name: "eth0", MAC: "52:54:00:00:09:01", OperState: "up", MTU: 1500, IPv4: []string{"10.0.9.1/24"}}}, nds)
	_, err = NetdevsFromIPJSON([]byte(`{"not":"an array"}`))
	require.Error(t, err)
	_, err = NetdevsFromIPJSON([]byte(`[{"mtu":1}]`))
	require.Error(t, err)
}

// Recording the committed lab-rxe fixture (as if it were a live root) gives
// back its kernel files: symlinks with the same targets, the same contents.
func TestRecordReproducesFixture(t *testing.T) {
	src := fixture.Host(t, "lab-rxe")
	dst := t.TempDir()
	require.NoError(t, Record(t.Context(), src, dst, RecordOptions{}))
	for _, rel := range []string{"sys/class/infiniband/rxe0", "sys/class/infiniband_verbs/uverbs0", "sys/class/net/eth0"} {
		want, err := os.Readlink(filepath.Join(src, rel))
		require.NoError(t, err)
		got, err := os.Readlink(filepath.Join(dst, rel))
		require.NoError(t, err, rel)
		assert.Equal(t, want, got, rel)
	}
	for _, rel := range []string{
		"sys/class/infiniband/rxe0/ports/1/state", "sys/class/infiniband/rxe0/ports/1/gids/1",
		"sys/class/infiniband/rxe0/ports/1/gid_attrs/types/1", "sys/class/net/eth0/mtu",
		"sys/module/ib_core/parameters/netns_mode", "proc/sys/kernel/osrelease",
	} {
		want, err := os.ReadFile(filepath.Join(src, rel))
		require.NoError(t, err, rel)
		got, err := os.ReadFile(filepath.Join(dst, rel))
		require.NoError(t, err, rel)
		assert.Equal(t, string(want), string(got), rel)
	}
	_, err := os.Stat(filepath.Join(dst, "dev/infiniband/uverbs0"))
	assert.NoError(t, err)
	err = Record(t.Context(), src, t.TempDir(), RecordOptions{Modules: []string{"erdma"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "module erdma is not loaded")
}

func TestTreeTarRoundTrip(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "sys/devices/x"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "sys/devices/x/state"), []byte("4: ACTIVE\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(src, "sys/class/infiniband"), 0o755))
	require.NoError(t, os.Symlink("../../devices/x", filepath.Join(src, "sys/class/infiniband/rxe0")))
	var buf bytes.Buffer
	require.NoError(t, WriteTreeTar(&buf, src))
	dst := t.TempDir()
	require.NoError(t, ExtractTreeTar(bytes.NewReader(buf.Bytes()), dst))
	b, err := os.ReadFile(filepath.Join(dst, "sys/class/infiniband/rxe0/state"))
	require.NoError(t, err)
	assert.Equal(t, "4: ACTIVE\n", string(b))
	l, err := os.Readlink(filepath.Join(dst, "sys/class/infiniband/rxe0"))
	require.NoError(t, err)
	assert.Equal(t, "../../devices/x", l)

	// A link out of the tree, then a file through it.
	evil := t.TempDir()
	var eb bytes.Buffer
	tw := tar.NewWriter(&eb)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "x", Typeflag: tar.TypeSymlink, Linkname: evil}))
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "x/pwned", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}))
	_, _ = tw.Write([]byte("!"))
	require.NoError(t, tw.Close())
	err = ExtractTreeTar(bytes.NewReader(eb.Bytes()), t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "outside")
	_, err = os.Stat(filepath.Join(evil, "pwned"))
	assert.True(t, os.IsNotExist(err))

	err = ExtractTreeTar(strings.NewReader("garbage that is not a tar archive at all, long enough to be read as a header block?"), t.TempDir())
	require.Error(t, err)
}

func FuzzExtractTreeTar(f *testing.F) {
	src := f.TempDir()
	_ = os.WriteFile(filepath.Join(src, "a"), []byte("x"), 0o644)
	_ = os.Symlink("a", filepath.Join(src, "b"))
	var buf bytes.Buffer
	if err := WriteTreeTar(&buf, src); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		dst := t.TempDir()
		if err := ExtractTreeTar(bytes.NewReader(b), dst); err != nil {
			return
		}
		// Whatever was accepted stayed inside dst.
		_ = filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
			if err == nil && !strings.HasPrefix(p, dst) {
				t.Fatalf("%s outside %s", p, dst)
			}
			return nil
		})
	})
}
