package monitor

import "strings"

// lookup returns the value of the first name present in c.
func lookup(c map[string]uint64, names []string) (uint64, string, bool) {
	for _, n := range names {
		if v, ok := c[n]; ok {
			return v, n, true
		}
	}
	return 0, "", false
}

// IsProblemCounter reports whether a counter counts something going wrong:
// drops by the instance's bandwidth/PPS meter, CM connect failures and
// timeouts, verbs failures. A problem counter that moves is worth a line.
func IsProblemCounter(name string) bool {
	for _, s := range []string{"drop", "fail", "timeout", "reject", "reset", "err", "retry", "discard"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}
