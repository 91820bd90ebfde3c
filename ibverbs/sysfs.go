package ibverbs

import (
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/gid"
	"github.com/erdmakit/erdmakit/internal/hostfs"
)

// maxSysfsAttr bounds one attribute read: a page at most.
const maxSysfsAttr = 64 << 10

// sysfsGIDEntry reads one GID table entry and its type from
// <root>/sys/class/infiniband/<dev>/ports/<port>/{gids,gid_attrs/types}/<index>,
// the fallback where libibverbs lacks ibv_query_gid_ex (rdma-core < 32). An
// unpopulated entry (all zeros) returns ok == false. A missing types file
// means an IB port (type IB).
func sysfsGIDEntry(root, dev string, port, index int) (e GIDEntry, ok bool, err error) {
	r, err := hostfs.Open(root)
	if err != nil {
		return GIDEntry{}, false, err
	}
	defer r.Close()
	dir := path.Join("sys/class/infiniband", dev, "ports", strconv.Itoa(port))
	name := path.Join(dir, "gids", strconv.Itoa(index))
	b, err := r.ReadFile(name, maxSysfsAttr)
	if err != nil {
		return GIDEntry{}, false, fmt.Errorf("gid %s/%d/%d: %w", dev, port, index, err)
	}
	g, err := gid.Parse(string(b))
	if err != nil {
		return GIDEntry{}, false, fmt.Errorf("%s: %w", r.Path(name), err)
	}
	if g.IsZero() {
		return GIDEntry{}, false, nil
	}
	e = GIDEntry{Index: index, GID: g, Type: GIDTypeIB}
	tname := path.Join(dir, "gid_attrs/types", strconv.Itoa(index))
	t, err := r.ReadFile(tname, maxSysfsAttr)
	switch {
	case err == nil:
		e.Type, err = parseSysfsGIDType(string(t))
		if err != nil {
			return GIDEntry{}, false, fmt.Errorf("%s: %w", r.Path(tname), err)
		}
	case os.IsNotExist(err):
	default:
		// The kernel answers EINVAL for types of an entry being
		// replaced; treat the type as unknown IB rather than fail.
	}
	return e, true, nil
}

// parseSysfsGIDType maps gid_attrs/types text to a GIDType.
func parseSysfsGIDType(s string) (GIDType, error) {
	switch strings.TrimSpace(s) {
	case "IB/RoCE v1", "IB", "RoCE v1":
		if strings.Contains(s, "RoCE") && !strings.Contains(s, "IB") {
			return GIDTypeRoCEv1, nil
		}
		return GIDTypeIB, nil
	case "RoCE v2":
		return GIDTypeRoCEv2, nil
	}
	return 0, fmt.Errorf("unknown gid type %q", strings.TrimSpace(s))
}

// pickGID chooses a source GID index by gid.Choose, the rule the doctor's
// recommendation uses too: the RoCE v2 entry holding an IPv4-mapped
// address, else the first RoCE v2 entry, else the first populated entry;
// -1 when the table is empty.
func pickGID(entries []GIDEntry) int {
	es := make([]gid.Entry, len(entries))
	for i, e := range entries {
		es[i] = gid.Entry{Index: e.Index, GID: e.GID, RoCEv2: e.Type == GIDTypeRoCEv2}
	}
	i, _ := gid.Choose(es, nil)
	return i
}
