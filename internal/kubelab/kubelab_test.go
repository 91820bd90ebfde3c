package kubelab

import (
	"archive/tar"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readArchive returns the files of a tar archive by name.
func readArchive(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[h.Name] = b
	}
}

func TestWriteImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "erdmakit")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\necho hi\n"), 0o755))
	base := filepath.Join(dir, "base.tar")
	f, err := os.Create(base)
	require.NoError(t, err)
	tw := tar.NewWriter(f)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "etc/os-release", Mode: 0o644, Size: 5}))
	_, err = tw.Write([]byte("deb\n\n"))
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	require.NoError(t, f.Close())

	img := Image{Ref: "localhost/erdmakit:kubelab", Layers: []string{base}, Files: map[string]string{"usr/bin/erdmakit": bin},
		Cmd: []string{"erdmakit", "doctor"}, Labels: map[string]string{"org.opencontainers.image.version": "v1"}}
	out := filepath.Join(dir, "img.tar")
	require.NoError(t, WriteImage(out, img))
	out2 := filepath.Join(dir, "img2.tar")
	require.NoError(t, WriteImage(out2, img))
	a, err := os.ReadFile(out)
	require.NoError(t, err)
	b, err := os.ReadFile(out2)
	require.NoError(t, err)
	assert.Equal(t, a, b, "the same inputs give the same bytes")

	files := readArchive(t, strings.NewReader(string(a)))
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	require.NoError(t, json.Unmarshal(files["manifest.json"], &manifest))
	require.Len(t, manifest, 1)
	assert.Equal(t, []string{"localhost/erdmakit:kubelab"}, manifest[0].RepoTags)
	require.Len(t, manifest[0].Layers, 2)
	var config struct {
		Config struct {
			Cmd    []string
			Env    []string
			Labels map[string]string
		}
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	require.NoError(t, json.Unmarshal(files[manifest[0].Config], &config))
	assert.Equal(t, []string{"erdmakit", "doctor"}, config.Config.Cmd)
	assert.Equal(t, "v1", config.Config.Labels["org.opencontainers.image.version"])
	require.Len(t, config.RootFS.DiffIDs, 2)
	for i, l := range manifest[0].Layers {
		assert.Equal(t, "sha256:"+strings.TrimSuffix(l, "/layer.tar"), config.RootFS.DiffIDs[i], "a layer's name is its digest")
	}
	top := readArchive(t, strings.NewReader(string(files[manifest[0].Layers[1]])))
	assert.Equal(t, "#!/bin/sh\necho hi\n", string(top["usr/bin/erdmakit"]))
	assert.Contains(t, top, "usr/")
	assert.Contains(t, top, "usr/bin/")
	bottom := readArchive(t, strings.NewReader(string(files[manifest[0].Layers[0]])))
	assert.Equal(t, "deb\n\n", string(bottom["etc/os-release"]))
}

func TestWriteImageRejects(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		img  Image
		want string
	}{
		{"no tag", Image{Ref: "localhost/x", Files: map[string]string{"a": "/etc/hostname"}}, "name and a tag"},
		{"nothing", Image{Ref: "localhost/x:1"}, "no layers"},
		{"upper case", Image{Ref: "localhost/X:1", Files: map[string]string{"a": "/etc/hostname"}}, "name and a tag"},
		{"bad tag", Image{Ref: "localhost/x:-1", Files: map[string]string{"a": "/etc/hostname"}}, "name and a tag"},
		{"escape", Image{Ref: "localhost/x:1", Files: map[string]string{"../a": "/etc/hostname"}}, "not a path inside"},
		{"missing file", Image{Ref: "localhost/x:1", Files: map[string]string{"a": filepath.Join(dir, "nope")}}, "no such file"},
		{"missing layer", Image{Ref: "localhost/x:1", Layers: []string{filepath.Join(dir, "nope.tar")}}, "no such file"},
		{"directory as file", Image{Ref: "localhost/x:1", Files: map[string]string{"a": dir}}, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "out.tar")
			err := WriteImage(out, tc.img)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			_, serr := os.Stat(out)
			assert.True(t, os.IsNotExist(serr), "a failed write leaves no archive")
		})
	}
}

func TestReadCRILog(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{"full lines", "2026-12-07T21:00:00.1Z stdout F hello\n2026-12-07T21:00:00.2Z stderr F world\n", "hello\nworld\n", ""},
		{"partial joined", "2026-12-07T21:00:00.1Z stdout P hel\n2026-12-07T21:00:00.1Z stdout F lo\n", "hello\n", ""},
		{"empty message", "2026-12-07T21:00:00.1Z stdout F\n", "\n", ""},
		{"message with spaces", "2026-12-07T21:00:00.1Z stdout F a  b c\n", "a  b c\n", ""},
		{"not CRI", "hello\n", "", "not a CRI log line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "0.log")
			require.NoError(t, os.WriteFile(f, []byte(tc.in), 0o644))
			got, err := ReadCRILog(f)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func FuzzReadCRILog(f *testing.F) {
	f.Add("2026-12-07T21:00:00.1Z stdout F hello\n2026-12-07T21:00:00.2Z stderr P par\n2026-12-07T21:00:00.2Z stderr F tial\n")
	f.Add("x y\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		p := filepath.Join(t.TempDir(), "0.log")
		require.NoError(t, os.WriteFile(p, []byte(in), 0o644))
		got, err := ReadCRILog(p)
		if err == nil {
			assert.LessOrEqual(t, len(got), len(in)+strings.Count(in, "\n")+1)
		}
	})
}

func TestPKI(t *testing.T) {
	p, err := newPKI(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, p.issue("kubelet", "system:node:n1", []string{"system:nodes"}, "127.0.0.1", "n1"))
	b, err := os.ReadFile(p.path("kubelet.crt"))
	require.NoError(t, err)
	blk, _ := pem.Decode(b)
	require.NotNil(t, blk)
	cert, err := x509.ParseCertificate(blk.Bytes)
	require.NoError(t, err)
	assert.Equal(t, "system:node:n1", cert.Subject.CommonName)
	assert.Equal(t, []string{"system:nodes"}, cert.Subject.Organization)
	roots := x509.NewCertPool()
	roots.AddCert(p.caCert)
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "n1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	require.NoError(t, err)
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
	for _, f := range []string{"ca.crt", "ca.key", "sa.key", "sa.pub", "kubelet.key"} {
		assert.FileExists(t, p.path(f))
	}
}

func TestStartRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no dir", Options{}, "Dir is required"},
		{"long dir", Options{Dir: "/tmp/" + strings.Repeat("d", 100)}, "too long"},
		{"missing binaries", Options{Dir: t.TempDir(), Cache: t.TempDir()}, "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Start(t.Context(), tc.o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestRefPattern(t *testing.T) {
	for _, ok := range []string{"localhost/erdmakit:kubelab", "localhost/kubelab/pause:1", "registry.example:5000/a/b-c__d:v1.2_3", "erdmakit:x"} {
		assert.True(t, refPattern.MatchString(ok), ok)
	}
	for _, bad := range []string{"", "erdmakit", "localhost/erdmakit", "Erdmakit:1", "a:", "a:.x", "/a:1", "a//b:1", "\xa2:"} {
		assert.False(t, refPattern.MatchString(bad), bad)
	}
}

func TestJoinLabels(t *testing.T) {
	assert.Equal(t, "a=1,b/c=2", joinLabels(map[string]string{"b/c": "2", "a": "1"}))
	assert.Equal(t, "", joinLabels(nil))
}

func TestUnescapeMount(t *testing.T) {
	assert.Equal(t, "/a b", unescapeMount(`/a\040b`))
	assert.Equal(t, "/plain", unescapeMount("/plain"))
	assert.Equal(t, `/x\`, unescapeMount(`/x\`))
}

// FuzzWriteImage: any ref and file name either is refused with an error or
// gives an archive whose manifest names the ref and whose top layer holds
// the file under its cleaned name.
func FuzzWriteImage(f *testing.F) {
	f.Add("localhost/erdmakit:kubelab", "usr/bin/erdmakit")
	f.Add("localhost/kubelab/pause:1", "pause")
	f.Add("x:1", "/a/../b")
	f.Add("nametag", "../escape")
	f.Fuzz(func(t *testing.T, ref, name string) {
		dir := t.TempDir()
		src := filepath.Join(dir, "src")
		require.NoError(t, os.WriteFile(src, []byte("payload"), 0o644))
		out := filepath.Join(dir, "img.tar")
		if err := WriteImage(out, Image{Ref: ref, Files: map[string]string{name: src}}); err != nil {
			_, serr := os.Stat(out)
			assert.True(t, os.IsNotExist(serr), "a refused image leaves no archive")
			return
		}
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		files := readArchive(t, strings.NewReader(string(b)))
		var manifest []struct {
			RepoTags []string
			Layers   []string
		}
		require.NoError(t, json.Unmarshal(files["manifest.json"], &manifest))
		require.Len(t, manifest, 1)
		assert.Equal(t, []string{ref}, manifest[0].RepoTags)
		require.Len(t, manifest[0].Layers, 1)
		layer := readArchive(t, strings.NewReader(string(files[manifest[0].Layers[0]])))
		found := false
		for n, content := range layer {
			if string(content) == "payload" {
				found = true
				assert.False(t, strings.HasPrefix(n, "/") || strings.HasPrefix(n, "../"), "file %q escapes the image", n)
			}
		}
		assert.True(t, found, "the file is in the layer")
	})
}
