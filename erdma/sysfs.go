package erdma

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/erdmakit/erdmakit/gid"
	"github.com/erdmakit/erdmakit/internal/ctxio"
	"github.com/erdmakit/erdmakit/internal/hostfs"
)

// maxAttrSize bounds one sysfs read: attributes are at most a page; a bigger
// file is garbage, not an attribute.
const maxAttrSize = 64 << 10

// errNoAttr is an attribute the kernel refuses to show (EINVAL on the
// gid_attrs of an unpopulated GID) or an empty file: "no value".
var errNoAttr = errors.New("no value")

// tracer records the paths (relative to the root) that a read touched.
type tracer struct {
	mu    sync.Mutex
	files map[string]bool // read as files
	links map[string]bool // read with readlink
	dirs  map[string]bool // listed
}

func newTracer() *tracer {
	return &tracer{files: map[string]bool{}, links: map[string]bool{}, dirs: map[string]bool{}}
}

func (t *tracer) add(m map[string]bool, rel string) {
	t.mu.Lock()
	m[filepath.Clean(rel)] = true
	t.mu.Unlock()
}

// readFile reads a whole file under the root, at most maxAttrSize bytes.
// A sysfs read is the driver's show(), which a wedged device can hold for
// ever: the read is abandoned when ctx ends (ctxio.Do) and the error names
// the file and wraps ctx's.
func (h Host) readFile(ctx context.Context, rel string) ([]byte, error) {
	if h.tr != nil {
		h.tr.add(h.tr.files, rel)
	}
	b, err := do(ctx, h, rel, func(r *hostfs.Root) ([]byte, error) { return r.ReadFile(rel, maxAttrSize) })
	switch {
	case errors.Is(err, hostfs.ErrTooLarge):
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", h.Path(rel), ErrMalformed, maxAttrSize)
	case errors.Is(err, syscall.EINVAL):
		return nil, fmt.Errorf("%s: %w", h.Path(rel), errNoAttr)
	}
	return b, err
}

// do runs one read of rel through a fresh root under ctx (ctxio.Do): an
// ended ctx is an error that names rel and wraps ctx's.
func do[T any](ctx context.Context, h Host, rel string, fn func(r *hostfs.Root) (T, error)) (T, error) {
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, fmt.Errorf("%s: %w", h.Path(rel), err)
	}
	v, err := ctxio.Do(ctx, func() (T, error) {
		r, err := h.open()
		if err != nil {
			var zero T
			return zero, err
		}
		defer r.Close()
		return fn(r)
	})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return v, fmt.Errorf("%s: %w", h.Path(rel), err)
	}
	return v, err
}

// open is the one way to read under the root: hostfs confines every name
// and link to it (a recording cannot point a read at this machine's files).
func (h Host) open() (*hostfs.Root, error) { return hostfs.Open(h.root) }

// ReadFile reads a file under the host root (at most 64 KiB), giving up
// when ctx ends (the error names the file and wraps ctx's). Other packages
// read the host through it (and ReadLink, ReadDir) so that Record captures
// what they read.
func (h Host) ReadFile(ctx context.Context, rel string) ([]byte, error) { return h.readFile(ctx, rel) }

// ReadLink reads a symlink under the host root, giving up when ctx ends.
func (h Host) ReadLink(ctx context.Context, rel string) (string, error) { return h.readlink(ctx, rel) }

// ReadDir lists a directory under the host root, names sorted, giving up
// when ctx ends.
func (h Host) ReadDir(ctx context.Context, rel string) ([]string, error) { return h.readDir(ctx, rel) }

// readAttr reads a sysfs attribute, trimmed of surrounding white space. A
// missing file wraps fs.ErrNotExist; an empty file or an EINVAL read wraps
// errNoAttr; both name the file.
func (h Host) readAttr(ctx context.Context, rel string) (string, error) {
	b, err := h.readFile(ctx, rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: %w", h.Path(rel), fs.ErrNotExist)
		}
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s: %w", h.Path(rel), errNoAttr)
	}
	if !printable(s) {
		return "", fmt.Errorf("%s: %w: not text", h.Path(rel), ErrMalformed)
	}
	return s, nil
}

// optAttr is readAttr for optional attributes: missing or empty is "", nil.
func (h Host) optAttr(ctx context.Context, rel string) (string, error) {
	s, err := h.readAttr(ctx, rel)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNoAttr) {
		return "", nil
	}
	return s, err
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
			return false
		}
	}
	return true
}

// readlink reads a symlink under the root.
func (h Host) readlink(ctx context.Context, rel string) (string, error) {
	if h.tr != nil {
		h.tr.add(h.tr.links, rel)
	}
	return do(ctx, h, rel, func(r *hostfs.Root) (string, error) { return r.Readlink(rel) })
}

// readDir lists a directory under the root, names sorted.
func (h Host) readDir(ctx context.Context, rel string) ([]string, error) {
	if h.tr != nil {
		h.tr.add(h.tr.dirs, rel)
	}
	return do(ctx, h, rel, func(r *hostfs.Root) ([]string, error) {
		ents, err := r.ReadDir(rel)
		if err != nil {
			return nil, err
		}
		names := make([]string, len(ents))
		for i, e := range ents {
			names[i] = e.Name()
		}
		return names, nil
	})
}

// exists reports whether rel exists under the root (symlinks not followed
// for the last element, so a dangling uverbs stand-in still counts); an
// ended ctx is an error naming rel.
func (h Host) exists(ctx context.Context, rel string) (bool, error) {
	if h.tr != nil {
		h.tr.add(h.tr.files, rel)
	}
	ok, err := do(ctx, h, rel, func(r *hostfs.Root) (bool, error) {
		_, err := r.Lstat(rel)
		return err == nil, nil
	})
	return ok, err
}

// ParseEnumAttr parses the "N: NAME" form of node_type, state and
// phys_state ("4: ACTIVE" -> 4, "ACTIVE").
func ParseEnumAttr(s string) (int, string, error) {
	num, name, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return 0, "", fmt.Errorf("%w: %q is not \"N: NAME\"", ErrMalformed, truncate(s, 32))
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n < 0 || n > 255 {
		return 0, "", fmt.Errorf("%w: %q is not \"N: NAME\"", ErrMalformed, truncate(s, 32))
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return 0, "", fmt.Errorf("%w: %q has no name", ErrMalformed, truncate(s, 32))
	}
	return n, name, nil
}

// parseGUID is gid.ParseGUID (the one GUID parser) with errors wrapping
// ErrMalformed.
func parseGUID(s string) (gid.GUID, error) {
	g, err := gid.ParseGUID(s)
	if err != nil {
		return gid.GUID{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return g, nil
}

// parseGID is gid.Parse (the one GID parser) as the 16 bytes of a net.IP,
// with errors wrapping ErrMalformed.
func parseGID(s string) (net.IP, error) {
	g, err := gid.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return net.IP(g[:]), nil
}

// formatGID is the sysfs form of a 16-byte GID (gid.GID.String).
func formatGID(ip net.IP) string {
	var g gid.GID
	copy(g[:], ip.To16())
	return g.String()
}

// gidIPv4 is the IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d), "".
func gidIPv4(ip net.IP) string {
	for i := 0; i < 10; i++ {
		if ip[i] != 0 {
			return ""
		}
	}
	if ip[10] != 0xff || ip[11] != 0xff {
		return ""
	}
	return net.IP(ip[12:16]).String()
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// ParseCounter parses one hw_counters file: a decimal uint64 and an optional
// newline.
func ParseCounter(b []byte) (uint64, error) {
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: counter %q is not a decimal uint64", ErrMalformed, truncate(s, 32))
	}
	return v, nil
}

// parseCounterBytes is ParseCounter without allocating (the hot path).
func parseCounterBytes(b []byte) (uint64, bool) {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (^uint64(0)-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// ParseNUMANode parses numa_node: an integer, -1 when the platform has none.
func ParseNUMANode(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < -1 || n > 1<<16 {
		return -1, fmt.Errorf("%w: numa_node %q is not an integer >= -1", ErrMalformed, truncate(s, 32))
	}
	return n, nil
}

// ParsePCIID parses a vendor or device file ("0x1ded") into 4 hex digits.
func ParsePCIID(s string) (string, error) {
	s = strings.TrimSpace(s)
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 16)
	if err != nil || !strings.HasPrefix(s, "0x") {
		return "", fmt.Errorf("%w: PCI id %q is not 0xXXXX", ErrMalformed, truncate(s, 32))
	}
	return fmt.Sprintf("%04x", v), nil
}

// isPCIAddress reports whether s looks like "0000:00:05.0".
func isPCIAddress(s string) bool {
	if len(s) != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.' {
		return false
	}
	for i, c := range s {
		if i == 4 || i == 7 || i == 10 {
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
