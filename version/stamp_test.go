package version

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStamped(t *testing.T) {
	devel := Info{Module: Module, Version: "(devel)", Main: true, GoVersion: "go1.26.8"}
	for _, tc := range []struct {
		name          string
		ver, rev, tim string
		want          Info
	}{
		{"a plain go build: nothing stamped", "", "", "", devel},
		{"make release of an untagged commit", "v0.0.0-20261207190000-f54ac80abcde", "f54ac80abcde0123456789", "2026-12-07T19:00:00Z",
			Info{Module: Module, Version: "v0.0.0-20261207190000-f54ac80abcde", Revision: "f54ac80abcde0123456789",
				Time: "2026-12-07T19:00:00Z", Main: true, GoVersion: "go1.26.8", Release: true}},
		{"a version without a revision", "v0.3.0", "", "",
			Info{Module: Module, Version: "v0.3.0", Main: true, GoVersion: "go1.26.8", Release: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, stamped(devel, tc.ver, tc.rev, tc.tim))
		})
	}
	assert.Equal(t, "github.com/erdmakit/erdmakit v0.3.0 (revision f54ac80abcde) go1.26.8",
		stamped(devel, "v0.3.0", "f54ac80abcde0123456789", "").String())
}
