// Package ncclver compares NCCL versions as NCCL's rules are written against
// them ("from 2.29.7 on"): the one comparison for package nccl's advice and
// diagnosis and nvml/smitopo's default GDR level. Standard library only, so
// the portable parsers may import it.
package ncclver

import (
	"strconv"
	"strings"
)

// Less reports whether version a is older than b, both dotted ("2.21.5" <
// "2.29.2"; "2.27" is "2.27.0"). A "+cuda12.4" suffix is ignored, and a
// part that is not a number counts as 0.
func Less(a, b string) bool {
	a, _, _ = strings.Cut(a, "+")
	b, _, _ = strings.Cut(b, "+")
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		x, y := 0, 0
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}
