package erdma

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// Recorded-host files: what a live host learns from netlink, getrlimit, PATH
// and the metadata service, stored under <root>/erdmakit/ (the format is
// documented in testdata/hosts/README.md).
const (
	RecordedNetdevsFile  = "erdmakit/netdevs.json"
	RecordedLimitsFile   = "erdmakit/limits.json"
	RecordedToolsFile    = "erdmakit/tools.json"
	RecordedInstanceFile = "erdmakit/instance.json"
)

// ErrMalformed is wrapped by every error about a file whose content could not
// be parsed; the error text names the file.
var ErrMalformed = errors.New("malformed")

// Host is a file-system root plus the few sources the kernel does not keep in
// files: network interfaces and their addresses, RLIMIT_MEMLOCK and the
// programs on PATH. A live host takes those from netlink, getrlimit and PATH;
// a recorded host from the JSON files under <root>/erdmakit/. Everything else
// (sysfs, procfs, dev) is read from the root by the same code for both.
//
// The zero Host is not usable; use LiveHost, RecordedHost or OpenHost.
type Host struct {
	root string
	// source is what the user named (an archive's path), when not root.
	source string
	live   bool
	// tr, when set, sees every path read under root (Record uses it to
	// capture exactly what ReadInventory reads).
	tr *tracer
}

// LiveHost is this machine: root "/", netlink, getrlimit and PATH.
func LiveHost() Host { return Host{root: "/", live: true} }

// RecordedHost is a recorded host unpacked in dir (see
// testdata/hosts/README.md for the layout).
func RecordedHost(dir string) Host { return Host{root: filepath.Clean(dir)} }

// OpenHost opens what --root names: "/" (or "") is the live host, a
// directory is a recorded host, a .tar.gz or .tgz file is a recording
// unpacked into a temporary directory that Close removes. Close is
// idempotent and safe to call on every result.
func OpenHost(path string) (Host, io.Closer, error) {
	if path == "" || filepath.Clean(path) == "/" {
		return LiveHost(), nopCloser{}, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Host{}, nopCloser{}, fmt.Errorf("host root %s: %w", path, err)
	}
	if fi.IsDir() {
		return RecordedHost(path), nopCloser{}, nil
	}
	if !strings.HasSuffix(path, ".tar.gz") && !strings.HasSuffix(path, ".tgz") {
		return Host{}, nopCloser{}, fmt.Errorf("host root %s: neither a directory nor a .tar.gz recording", path)
	}
	dir, err := os.MkdirTemp("", "erdmakit-host-")
	if err != nil {
		return Host{}, nopCloser{}, fmt.Errorf("host root %s: %w", path, err)
	}
	c := &dirCloser{dir: dir}
	if err := unpack(path, dir); err != nil {
		_ = c.Close()
		return Host{}, nopCloser{}, fmt.Errorf("host root %s: %w", path, err)
	}
	h := RecordedHost(dir)
	h.source = path
	return h, c, nil
}

// Root is the host's root directory ("/" for the live host).
func (h Host) Root() string { return h.root }

// Source is what the host was opened from: the root, or the archive's path
// for an unpacked recording (Inventory.Root shows it).
func (h Host) Source() string {
	if h.source != "" {
		return h.source
	}
	return h.root
}

// Live reports whether h is this machine (netlink, getrlimit, PATH).
func (h Host) Live() bool { return h.live }

// Path joins elem under the host root: h.Path("sys/class/infiniband").
func (h Host) Path(elem ...string) string {
	return filepath.Join(append([]string{h.root}, elem...)...)
}

// RecordedInstance is the instance a recording carries
// (erdmakit/instance.json); nil without error when there is none or the host
// is live (the doctor asks the metadata service then).
func (h Host) RecordedInstance() (*Instance, error) {
	if h.live {
		return nil, nil
	}
	var in Instance
	ok, err := h.readJSON(RecordedInstanceFile, &in)
	if err != nil || !ok {
		return nil, err
	}
	return &in, nil
}

// readJSON decodes a recorded file; false without error when it is absent.
func (h Host) readJSON(rel string, v any) (bool, error) {
	b, err := h.readFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%s: %w: %v", h.Path(rel), ErrMalformed, err)
	}
	return true, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

type dirCloser struct {
	once sync.Once
	dir  string
	err  error
}

func (c *dirCloser) Close() error {
	c.once.Do(func() { c.err = os.RemoveAll(c.dir) })
	return c.err
}

// Limits on what an archive may unpack to: recordings are small (a host
// with 8 devices is a few thousand entries). Every entry costs at least
// entryCost bytes of the budget and a directory dirCost (the file system
// spends a block on each), so an archive of empty directories is bounded
// like one of files.
const (
	maxArchiveEntries = 50000
	maxArchiveDirs    = 10000
	maxArchiveBytes   = 256 << 20
	entryCost         = 512
	dirCost           = 4096
)

// unpack extracts a recording into dir through an os.Root, so that no name
// and no symlink met on the way writes outside dir; absolute names, ".."
// and links that point out are refused outright with a clear error. Size,
// entries and directories are bounded.
func unpack(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%w: not gzip: %v", ErrMalformed, err)
	}
	defer zr.Close()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(zr)
	var total int64
	charge := func(n int64) error {
		if total += n; total > maxArchiveBytes {
			return fmt.Errorf("%w: more than %d bytes unpacked (each entry counts %d bytes, each directory %d)",
				ErrMalformed, maxArchiveBytes, entryCost, dirCost)
		}
		return nil
	}
	dirs := 0
	chargeDir := func() error {
		if dirs++; dirs > maxArchiveDirs {
			return fmt.Errorf("%w: more than %d directories", ErrMalformed, maxArchiveDirs)
		}
		return charge(dirCost)
	}
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: tar: %v", ErrMalformed, err)
		}
		if n >= maxArchiveEntries {
			return fmt.Errorf("%w: more than %d entries", ErrMalformed, maxArchiveEntries)
		}
		if err := charge(entryCost); err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if name == "." {
			continue
		}
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("%w: entry %q leaves the archive root", ErrMalformed, hdr.Name)
		}
		// Parent directories the entry creates count as directories.
		for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
			if _, err := root.Lstat(d); err == nil {
				break
			}
			if err := chargeDir(); err != nil {
				return err
			}
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := chargeDir(); err != nil {
				return err
			}
			if err := root.MkdirAll(name, 0o755); err != nil {
				return fmt.Errorf("%w: entry %q: %v", ErrMalformed, hdr.Name, err)
			}
		case tar.TypeReg:
			if err := charge(hdr.Size); err != nil {
				return err
			}
			if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
				return fmt.Errorf("%w: entry %q: %v", ErrMalformed, hdr.Name, err)
			}
			out, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return fmt.Errorf("%w: entry %q: %v", ErrMalformed, hdr.Name, err)
			}
			_, err = io.Copy(out, io.LimitReader(tr, hdr.Size))
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			// Reads are confined to the root whatever the links say
			// (hostfs); a link that plainly points out is refused here so
			// the user learns it at once.
			t := hdr.Linkname
			if path.IsAbs(t) || strings.HasPrefix(path.Join(path.Dir(name), t), "..") {
				return fmt.Errorf("%w: symlink %q -> %q leaves the archive root", ErrMalformed, hdr.Name, t)
			}
			if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
				return fmt.Errorf("%w: entry %q: %v", ErrMalformed, hdr.Name, err)
			}
			if err := root.Symlink(t, name); err != nil {
				return fmt.Errorf("%w: entry %q: %v", ErrMalformed, hdr.Name, err)
			}
		default:
			// Devices, fifos, hard links: a recording has none; skip.
		}
	}
}
