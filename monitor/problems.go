package monitor

import (
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/health"
)

// resetNamesShown is how many reset counters a reason names; a driver
// reload resets every counter of the port (about 55 on eRDMA).
const resetNamesShown = 3

// Problems returns why the interval is unhealthy, one short reason each
// naming the port, in a stable order (ports as listed, then the ports that
// disappeared); none when it is healthy. It is the rule `erdmakit stat`
// exits 1 by. A problem is:
//
//   - a problem counter (IsProblemCounter) that grew:
//     "erdma_0/1: hw_bps_limit_drop_cnt +12";
//   - a port whose state changed, either way (one that came up was not up
//     for the whole interval): "erdma_0/1: state ACTIVE -> DOWN";
//   - counters that went backwards other than by a 32-bit wrap, that is a
//     driver reload or device reset (the port's connections were torn down,
//     and what its problem counters counted before it is lost):
//     "erdma_0/1: counters reset (driver reload or device reset): a, b, c and 52 more";
//   - a port that disappeared: "erdma_1/1: gone".
//
// A port that appeared is not a problem (a device added, or back after a
// reload the previous interval reported as gone). Neither is a port that
// stayed DOWN: an interval judges what changed in it; the doctor's
// port-active check judges the state.
func (iv Interval) Problems() []string {
	var out []string
	for _, p := range iv.Ports {
		name := portName(PortKey{p.Device, p.Port})
		if p.StateBefore != "" {
			out = append(out, name+": state "+p.StateBefore+" -> "+p.State)
		}
		for _, m := range p.Moved {
			out = append(out, name+": "+m.Name+" +"+strconv.FormatUint(m.Delta, 10))
		}
		if len(p.Resets) > 0 {
			out = append(out, name+": counters reset (driver reload or device reset): "+nameSome(p.Resets, resetNamesShown))
		}
	}
	for _, g := range iv.Gone {
		out = append(out, g+": gone")
	}
	return out
}

// Severity is the interval as a health status: warn when it has Problems,
// ok otherwise (`erdmakit stat`'s exit code, health.Severity.Exit).
func (iv Interval) Severity() health.Severity {
	if len(iv.Problems()) > 0 {
		return health.Warn
	}
	return health.OK
}

// nameSome joins the first n names and says how many more there are.
func nameSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + " and " + strconv.Itoa(len(names)-n) + " more"
}
