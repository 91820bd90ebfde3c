package kubelab

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Image is a container image to write as an archive (WriteImage) and
// import into the lab's containerd (Cluster.ImportImage): layers stacked
// in order, then Files as one more layer on top.
type Image struct {
	// Ref is the name and tag the image is imported as, e.g.
	// "localhost/erdmakit:kubelab" (a pod's image: field names it so).
	Ref string
	// Layers are uncompressed tar files of root filesystems, bottom first
	// (e.g. an mmdebstrap base).
	Layers []string
	// Files are added in one layer on top: the path in the image (e.g.
	// "usr/bin/erdmakit") to the file on this machine; each keeps its mode.
	Files map[string]string
	// Entrypoint and Cmd as in an image's configuration; Env adds to PATH.
	Entrypoint []string
	Cmd        []string
	Env        []string
	// Labels are the image's labels (org.opencontainers.image.*).
	Labels map[string]string
	// Created is the time recorded in the configuration and on the files
	// of the Files layer (zero: the Unix epoch, so that two writes of the
	// same inputs give the same bytes).
	Created time.Time
}

// refPattern is an image reference with a tag, as the distribution
// project's grammar has it: an optional domain (with a port), lower-case
// path components, a tag of word characters, dots and dashes.
var refPattern = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?/)?` +
	`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// WriteImage writes img as a Docker image archive (manifest.json, the
// configuration, one layer.tar per layer): the format `ctr images import`,
// `podman load` and `docker load` all read. No registry and no container
// engine is involved, so the lab builds its sandbox image and the erdmakit
// image itself.
func WriteImage(file string, img Image) error {
	if !refPattern.MatchString(img.Ref) {
		return fmt.Errorf("image %q: the ref needs a name and a tag (name:tag, e.g. localhost/erdmakit:kubelab)", img.Ref)
	}
	if len(img.Layers) == 0 && len(img.Files) == 0 {
		return fmt.Errorf("image %s: no layers and no files", img.Ref)
	}
	created := img.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	created = created.UTC()
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("image %s: %w", img.Ref, err)
	}
	tw := tar.NewWriter(f)
	fail := func(err error) error {
		_ = f.Close()
		_ = os.Remove(file)
		return fmt.Errorf("image %s: %w", img.Ref, err)
	}
	var diffIDs, layerPaths []string
	var history []map[string]any
	addLayer := func(open func() (io.ReadCloser, error), size int64, what string) error {
		sum, err := digest(open)
		if err != nil {
			return err
		}
		name := sum + "/layer.tar"
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: created, Format: tar.FormatPAX}); err != nil {
			return err
		}
		r, err := open()
		if err != nil {
			return err
		}
		defer r.Close()
		if n, err := io.Copy(tw, r); err != nil {
			return err
		} else if n != size {
			return fmt.Errorf("layer %s changed while it was written (%d bytes, then %d)", what, size, n)
		}
		diffIDs = append(diffIDs, "sha256:"+sum)
		layerPaths = append(layerPaths, name)
		history = append(history, map[string]any{"created": created.Format(time.RFC3339), "created_by": what})
		return nil
	}
	for _, l := range img.Layers {
		st, err := os.Stat(l)
		if err != nil {
			return fail(fmt.Errorf("layer: %w", err))
		}
		if err := addLayer(func() (io.ReadCloser, error) { return os.Open(l) }, st.Size(), "layer "+path.Base(l)); err != nil {
			return fail(fmt.Errorf("layer %s: %w", l, err))
		}
	}
	if len(img.Files) > 0 {
		b, err := filesLayer(img.Files, created)
		if err != nil {
			return fail(err)
		}
		names := make([]string, 0, len(img.Files))
		for n := range img.Files {
			names = append(names, n)
		}
		sort.Strings(names)
		open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		if err := addLayer(open, int64(len(b)), "files "+strings.Join(names, " ")); err != nil {
			return fail(fmt.Errorf("files layer: %w", err))
		}
	}
	env := append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, img.Env...)
	config, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      created.Format(time.RFC3339),
		"config":       map[string]any{"Entrypoint": img.Entrypoint, "Cmd": img.Cmd, "Env": env, "Labels": img.Labels},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": diffIDs},
		"history":      history,
	})
	if err != nil {
		return fail(err)
	}
	cs := sha256.Sum256(config)
	configName := hex.EncodeToString(cs[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": []string{img.Ref}, "Layers": layerPaths}})
	if err != nil {
		return fail(err)
	}
	for _, e := range []struct {
		name string
		b    []byte
	}{{configName, config}, {"manifest.json", manifest}} {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.b)), ModTime: created}); err != nil {
			return fail(err)
		}
		if _, err := tw.Write(e.b); err != nil {
			return fail(err)
		}
	}
	if err := tw.Close(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(file)
		return fmt.Errorf("image %s: %w", img.Ref, err)
	}
	return nil
}

func digest(open func() (io.ReadCloser, error)) (string, error) {
	r, err := open()
	if err != nil {
		return "", err
	}
	defer r.Close()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// imagePath is n relative to the image's root, cleaned ("/usr//bin/x" ->
// "usr/bin/x").
func imagePath(n string) string {
	return path.Clean(strings.TrimLeft(path.Clean("/"+n), "/"))
}

// filesLayer is a tar of files (path in the image -> file here) with their
// parent directories, in a stable order.
func filesLayer(files map[string]string, mtime time.Time) ([]byte, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		clean := imagePath(n)
		if clean == "." || slices.Contains(strings.Split(n, "/"), "..") || !utf8.ValidString(n) || strings.ContainsRune(n, 0) {
			return nil, fmt.Errorf("file %q: not a path inside the image", n)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, n := range names {
		clean := imagePath(n)
		var parents []string
		for d := path.Dir(clean); d != "." && d != "/"; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if dirs[d] {
				continue
			}
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: mtime}); err != nil {
				return nil, err
			}
		}
		src := files[n]
		st, err := os.Stat(src)
		if err != nil {
			return nil, fmt.Errorf("file %s: %w", n, err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("file %s: %s is not a regular file", n, src)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("file %s: %w", n, err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: clean, Mode: int64(st.Mode().Perm()), Size: int64(len(b)), ModTime: mtime}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
