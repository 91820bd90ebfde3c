package erdma

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/internal/atomicfile"
	"github.com/erdmakit/erdmakit/internal/hostfs"
)

// RecordOptions tunes Record.
type RecordOptions struct {
	// Redact replaces MACs, IPv4 addresses, GUIDs, GIDs, the host name and
	// the instance id consistently (see Redact in the README).
	Redact bool
	// Instance, when set, is written to erdmakit/instance.json; otherwise a
	// recorded host's own instance.json is carried over.
	Instance *Instance
	// Files are extra files for the recording, relative to its root (e.g.
	// "erdmakit/nvml.json" from the nvml package's snapshot).
	Files map[string][]byte
	// FileRedactors redact extra files the package that made them knows
	// the shape of (the eri package's cloud view), with the recording's one
	// Redactor, so that a MAC maps to the same value in every file. Files
	// without one get the generic treatment (GPU UUIDs).
	FileRedactors map[string]func(r *Redactor, data []byte) ([]byte, error)
	// Inventory is passed to ReadInventory (SkipTools: no tools.json).
	Inventory InventoryOptions
	// Readers run after ReadInventory on the same recording host: whatever
	// they read through Host.ReadFile, ReadLink and ReadDir is captured too
	// (e.g. the nvml package's PCI topology walk). An error stops Record.
	Readers []func(ctx context.Context, h Host) error
	// Paths are further paths under the root to capture: a file, or a
	// directory with the regular files directly in it (symlinks on the way
	// are kept as symlinks).
	Paths []string
}

// RecordingFile describes the recording itself: erdmakit/recording.json.
const RecordingFile = "erdmakit/recording.json"

// Recording is the content of erdmakit/recording.json.
type Recording struct {
	Format   int    `json:"format"` // 1
	Redacted bool   `json:"redacted"`
	Source   string `json:"source"` // "live" or "recorded"
}

// entry is one file, directory or symlink of a recording.
type entry struct {
	kind   byte // tar.TypeReg, tar.TypeDir, tar.TypeSymlink
	data   []byte
	target string
}

// Record reads h with ReadInventory and writes, as a gzip'd tar to w, exactly
// the files that read touched (symlinks kept as symlinks, char devices as
// empty regular files) plus the erdmakit/*.json files holding what the host
// said through netlink, getrlimit and PATH. Replaying the archive with
// OpenHost gives the same inventory. It works from any Host, live or
// recorded, and returns the inventory it read.
func Record(ctx context.Context, h Host, w io.Writer, opt RecordOptions) (*Inventory, error) {
	th := h
	th.tr = newTracer()
	inv, err := ReadInventory(ctx, th, opt.Inventory)
	if err != nil {
		return nil, err
	}
	for _, read := range opt.Readers {
		if err := read(ctx, th); err != nil {
			return nil, fmt.Errorf("record: %w", err)
		}
	}
	root, err := h.open()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	for _, p := range opt.Paths {
		rel := strings.TrimPrefix(path.Clean("/"+p), "/")
		names, err := th.readDir(ctx, rel)
		if err != nil {
			th.tr.add(th.tr.files, rel)
			continue
		}
		th.tr.add(th.tr.dirs, rel)
		for _, n := range names {
			if fi, err := root.Stat(path.Join(rel, n)); err == nil && fi.Mode().IsRegular() {
				th.tr.add(th.tr.files, path.Join(rel, n))
			}
		}
	}
	r := &recorder{h: h, root: root, entries: map[string]*entry{}}
	for _, rel := range sortedKeys(th.tr.dirs) {
		r.capture(ctx, rel, true)
	}
	for _, rel := range sortedKeys(th.tr.files) {
		r.capture(ctx, rel, true)
	}
	for _, rel := range sortedKeys(th.tr.links) {
		r.capture(ctx, rel, false)
	}

	nds := inv.Netdevs
	if err := r.putJSON(RecordedNetdevsFile, nds); err != nil {
		return nil, err
	}
	if inv.Memlock != nil {
		if err := r.putJSON(RecordedLimitsFile, map[string]*Limit{"memlock": inv.Memlock}); err != nil {
			return nil, err
		}
	}
	if !opt.Inventory.SkipTools {
		if err := r.putJSON(RecordedToolsFile, inv.Tools); err != nil {
			return nil, err
		}
	}
	in := opt.Instance
	if in == nil {
		if in, err = h.RecordedInstance(ctx); err != nil {
			return nil, err
		}
	}
	if in != nil {
		if err := r.putJSON(RecordedInstanceFile, in); err != nil {
			return nil, err
		}
	}
	if !h.live && !opt.Redact {
		r.carryRecorded(ctx)
	}
	// A read cut short by ctx is left out like an unreadable one: the
	// recording would be incomplete, so none is written.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	for name, b := range opt.Files {
		clean := path.Clean(name)
		if path.IsAbs(clean) || strings.HasPrefix(clean, "..") {
			return nil, fmt.Errorf("record: extra file %q is not relative to the root", name)
		}
		r.entries[clean] = &entry{kind: tar.TypeReg, data: b}
	}
	src := "recorded"
	if h.live {
		src = "live"
	}
	if err := r.putJSON(RecordingFile, Recording{Format: 1, Redacted: opt.Redact, Source: src}); err != nil {
		return nil, err
	}
	if opt.Redact {
		if err := redactEntries(r.entries, opt.FileRedactors); err != nil {
			return nil, err
		}
	}
	if err := writeArchive(w, r.entries); err != nil {
		return nil, err
	}
	return inv, nil
}

// RecordFile is Record into the file out, atomically (the rule of every
// file erdmakit writes): the recording goes to a
// temporary file in out's directory, synced, then renamed over out. A
// failure (a full disk, a cancelled context) removes only the temporary
// file: whatever out was stays as it was; temporary files of out left by a
// killed run are removed. out must be a regular file or absent (a symlink,
// a device node or a directory is refused, never replaced); a new file's
// mode follows the umask (a recording can hold what a host says about
// itself: umask 077 keeps it private), an existing one keeps its own.
func RecordFile(ctx context.Context, h Host, out string, opt RecordOptions) (*Inventory, error) {
	var inv *Inventory
	err := atomicfile.Write(out, 0o644, func(w io.Writer) error {
		var err error
		inv, err = Record(ctx, h, w, opt)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return inv, nil
}

type recorder struct {
	h       Host
	root    *hostfs.Root
	entries map[string]*entry
}

func (r *recorder) putJSON(rel string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("record %s: %w", rel, err)
	}
	r.entries[rel] = &entry{kind: tar.TypeReg, data: append(b, '\n')}
	return nil
}

// carryRecorded copies a recorded host's other erdmakit/ files (e.g.
// nvml.json) into the new recording; generators' manifests (*-files.txt)
// stay behind.
func (r *recorder) carryRecorded(ctx context.Context) {
	names, err := r.root.ReadDir("erdmakit")
	if err != nil {
		return
	}
	for _, e := range names {
		rel := "erdmakit/" + e.Name()
		if _, taken := r.entries[rel]; taken || !e.Type().IsRegular() || strings.HasSuffix(e.Name(), "-files.txt") {
			continue
		}
		if b, err := r.h.readFile(ctx, rel); err == nil {
			r.entries[rel] = &entry{kind: tar.TypeReg, data: b}
		}
	}
}

// capture adds rel to the recording: every symlink met on the way (resolved
// inside the root), then the object itself. followLast=false records a final
// symlink as a link (readlink); true follows it to what a read would open.
// What cannot be read (EINVAL on unpopulated GID attributes, missing files)
// is left out, as the README describes.
func (r *recorder) capture(ctx context.Context, rel string, followLast bool) {
	cur, fi, err := r.root.Walk(rel, followLast, func(name, target string) {
		// An absolute link names a path of the recorded host: store it
		// relative to the link, as a replay (confined to its root)
		// refuses absolute links.
		if path.IsAbs(target) {
			target = relLink(path.Dir(name), target)
		}
		r.entries[name] = &entry{kind: tar.TypeSymlink, target: target}
	})
	if err != nil || fi == nil || fi.Mode()&fs.ModeSymlink != 0 {
		return // unreadable, a name ending in "..", or a final link kept as a link
	}
	switch {
	case fi.IsDir():
		if _, ok := r.entries[cur]; !ok {
			r.entries[cur] = &entry{kind: tar.TypeDir}
		}
	case fi.Mode().IsRegular():
		b, err := r.h.readFile(ctx, cur)
		if err != nil {
			return
		}
		r.entries[cur] = &entry{kind: tar.TypeReg, data: b}
	default:
		// Char devices (dev/infiniband/uverbsN): an empty stand-in.
		r.entries[cur] = &entry{kind: tar.TypeReg}
	}
}

// relLink is the relative form of the absolute target abs for a link in
// directory dir (both relative to the root): /sys/devices/x seen from
// sys/class/infiniband is ../../devices/x.
func relLink(dir, abs string) string {
	target := path.Clean(abs)[1:]
	if dir == "." {
		dir = ""
	}
	up := 0
	if dir != "" {
		up = strings.Count(dir, "/") + 1
	}
	if target == "" {
		target = "."
	}
	return path.Clean(strings.Repeat("../", up) + target)
}

func parentRel(p string) string {
	d := path.Dir(p)
	if d == "." || d == "/" {
		return ""
	}
	return d
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// writeArchive writes entries sorted by path (parents before children),
// with fixed times and owners so that equal recordings are equal bytes.
func writeArchive(w io.Writer, entries map[string]*entry) error {
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	epoch := time.Unix(0, 0).UTC()
	dirs := map[string]bool{}
	var writeDir func(d string) error
	writeDir = func(d string) error {
		if d == "" || dirs[d] {
			return nil
		}
		if err := writeDir(parentRel(d)); err != nil {
			return err
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX})
	}
	for _, n := range names {
		e := entries[n]
		if err := writeDir(parentRel(n)); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		var err error
		switch e.kind {
		case tar.TypeDir:
			err = writeDir(n)
		case tar.TypeSymlink:
			err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: n, Linkname: e.target, Mode: 0o777, ModTime: epoch, Format: tar.FormatPAX})
		default:
			if err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Size: int64(len(e.data)), Mode: 0o644, ModTime: epoch, Format: tar.FormatPAX}); err == nil {
				_, err = tw.Write(e.data)
			}
		}
		if err != nil {
			return fmt.Errorf("record %s: %w", n, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}
