package erdma

import (
	"archive/tar"
	"compress/gzip"
	"context"
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
	"time"

	"github.com/erdmakit/erdmakit/internal/ctxio"
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

// ErrNotLinux is wrapped by the reads of a live host that only Linux
// answers (netlink's network interfaces, RLIMIT_MEMLOCK) when the program
// runs elsewhere: on macOS or Windows the package reads recorded hosts.
var ErrNotLinux = errors.New("not supported outside Linux")

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
// idempotent and safe to call on every result. Unpacking gives up when ctx
// ends (checked between entries and within every read; what was unpacked
// is removed before it returns ctx's error) and is bounded in size,
// entries, depth and time (60 s).
func OpenHost(ctx context.Context, path string) (Host, io.Closer, error) {
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
	if err := unpack(ctx, path, dir, defaultUnpackLimits()); err != nil {
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
func (h Host) RecordedInstance(ctx context.Context) (*Instance, error) {
	if h.live {
		return nil, nil
	}
	var in Instance
	ok, err := h.readJSON(ctx, RecordedInstanceFile, &in)
	if err != nil || !ok {
		return nil, err
	}
	return &in, nil
}

// readJSON decodes a recorded file; false without error when it is absent.
func (h Host) readJSON(ctx context.Context, rel string, v any) (bool, error) {
	b, err := h.readFile(ctx, rel)
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
	entryCost = 512
	dirCost   = 4096
)

// unpackLimits bound an archive's unpacking in size and in time.
type unpackLimits struct {
	entries, dirs int
	// bytes bounds what is unpacked (entries and directories charged as
	// above) and, separately, the decompressed tar stream read (headers,
	// skipped data): a gzip bomb is refused after bytes, not after its
	// whole expansion.
	bytes int64
	// header bounds one entry's headers (PAX records, GNU long names):
	// real ones are a few hundred bytes; Go's reader allows 1 MiB each,
	// so 50,000 such entries took 247 s to decompress.
	header int64
	// depth bounds an entry's path in components and name its length:
	// every file of a deep path costs a lookup per component (2,000 files
	// at depth 9,990 still unpacked after 280 s).
	depth, name int
	// time bounds the whole unpacking.
	time time.Duration
}

func defaultUnpackLimits() unpackLimits {
	return unpackLimits{entries: 50000, dirs: 10000, bytes: 256 << 20, header: 64 << 10,
		depth: 64, name: 4096, time: 60 * time.Second}
}

// countingReader counts what was read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// unpack extracts a recording into dir through an os.Root, so that no name
// and no symlink met on the way writes outside dir; absolute names, ".."
// and links (symbolic or hard) that point out are refused outright with a
// clear error. Size, entries, directories, header sizes, path depth and
// time are bounded; ctx is checked between entries and in every read.
func unpack(ctx context.Context, archive, dir string, lim unpackLimits) error {
	ctx, cancel := context.WithTimeoutCause(ctx, lim.time, errUnpackTime)
	defer cancel()
	f, err := ctxio.Open(ctx, archive)
	if err != nil {
		return unpackErr(ctx, lim, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(ctxio.NewReader(ctx, f))
	if err != nil {
		if ctx.Err() != nil {
			return unpackErr(ctx, lim, err)
		}
		return fmt.Errorf("%w: not gzip: %v", ErrMalformed, err)
	}
	defer zr.Close()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	// The stream is bounded as a whole: headers and skipped data count.
	stream := &countingReader{r: io.LimitReader(zr, lim.bytes+1)}
	tr := tar.NewReader(stream)
	var total int64
	charge := func(n int64) error {
		if total += n; total > lim.bytes {
			return fmt.Errorf("%w: more than %d bytes unpacked (each entry counts %d bytes, each directory %d)",
				ErrMalformed, lim.bytes, entryCost, dirCost)
		}
		return nil
	}
	dirs := 0
	chargeDir := func() error {
		if dirs++; dirs > lim.dirs {
			return fmt.Errorf("%w: more than %d directories", ErrMalformed, lim.dirs)
		}
		return charge(dirCost)
	}
	var unread int64 // what Next skips of the previous entry's data and padding
	for n := 0; ; n++ {
		if ctx.Err() != nil {
			return unpackErr(ctx, lim, ctx.Err())
		}
		before := stream.n
		hdr, err := tr.Next()
		switch {
		case err != nil && ctx.Err() != nil:
			return unpackErr(ctx, lim, err)
		case stream.n > lim.bytes: // the limit may end the stream at an entry's end
			return errStream(lim)
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("%w: tar: %v", ErrMalformed, err)
		}
		if h := stream.n - before - unread; h > lim.header {
			return fmt.Errorf("%w: entry %q: %d bytes of headers (PAX records, long names), more than %d",
				ErrMalformed, trimName(hdr.Name), h, lim.header)
		}
		if n >= lim.entries {
			return fmt.Errorf("%w: more than %d entries", ErrMalformed, lim.entries)
		}
		// Every entry's data is charged, whatever its type: Next skips
		// what is not read, and skipping is decompressing.
		size := max(hdr.Size, 0)
		unread = size + (-size & 511)
		if err := charge(entryCost); err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg {
			if err := charge(size); err != nil {
				return err
			}
		}
		if len(hdr.Name) > lim.name || len(hdr.Linkname) > lim.name {
			return fmt.Errorf("%w: entry %q: a name or link longer than %d bytes", ErrMalformed, trimName(hdr.Name), lim.name)
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if name == "." {
			continue
		}
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("%w: entry %q leaves the archive root", ErrMalformed, hdr.Name)
		}
		if d := strings.Count(name, "/") + 1; d > lim.depth {
			return fmt.Errorf("%w: entry %q is %d levels deep, more than %d", ErrMalformed, trimName(hdr.Name), d, lim.depth)
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
			if err := charge(size); err != nil {
				return err
			}
			if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
				return fmt.Errorf("%w: entry %q: %v", ErrMalformed, hdr.Name, err)
			}
			out, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return fmt.Errorf("%w: entry %q: %v", ErrMalformed, hdr.Name, err)
			}
			copied, err := io.Copy(out, io.LimitReader(tr, size))
			unread -= copied
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			switch {
			case err != nil && ctx.Err() != nil:
				return unpackErr(ctx, lim, err)
			case stream.n > lim.bytes:
				return errStream(lim)
			case err != nil:
				return fmt.Errorf("%w: entry %q: %v", ErrMalformed, hdr.Name, err)
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
		case tar.TypeLink:
			// A hard link names another entry from the archive's root
			// (not from the link's directory); os.Root keeps both ends
			// inside.
			t := path.Clean(strings.TrimPrefix(hdr.Linkname, "./"))
			if path.IsAbs(t) || t == ".." || strings.HasPrefix(t, "../") {
				return fmt.Errorf("%w: hard link %q -> %q leaves the archive root", ErrMalformed, hdr.Name, hdr.Linkname)
			}
			if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
				return fmt.Errorf("%w: entry %q: %v", ErrMalformed, hdr.Name, err)
			}
			if err := root.Link(t, name); err != nil {
				return fmt.Errorf("%w: hard link %q -> %q: %v", ErrMalformed, hdr.Name, hdr.Linkname, err)
			}
		default:
			// Devices and FIFOs: a recording has none (record stores char
			// devices as empty files); skip.
		}
	}
}

func errStream(lim unpackLimits) error {
	return fmt.Errorf("%w: more than %d bytes of tar stream (headers and data)", ErrMalformed, lim.bytes)
}

// errUnpackTime is the cause of unpack's deadline.
var errUnpackTime = errors.New("unpacking took too long")

// unpackErr is the error for a read cut short by ctx: the unpacking's own
// time bound is the archive's fault (ErrMalformed); the caller's
// cancellation is its context's error.
func unpackErr(ctx context.Context, lim unpackLimits, err error) error {
	if errors.Is(context.Cause(ctx), errUnpackTime) {
		return fmt.Errorf("%w: %w (more than %v)", ErrMalformed, errUnpackTime, lim.time)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// trimName shortens a hostile entry name for an error message.
func trimName(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
