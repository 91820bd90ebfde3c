package version_test

import (
	"fmt"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/erdmakit/erdmakit/version"
)

func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want version.Info
		ok   bool
		line string
	}{
		{"the erdmakit binary built in a checkout",
			debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: version.Module, Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123"},
					{Key: "vcs.time", Value: "2026-12-03T08:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			version.Info{Module: version.Module, Version: "(devel)", Revision: "0123456789abcdef0123", Time: "2026-12-03T08:00:00Z",
				Modified: true, Main: true, GoVersion: "go1.26.8"},
			true, "github.com/erdmakit/erdmakit (devel) (revision 0123456789ab, modified) go1.26.8"},
		{"go install of a tag",
			debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: version.Module, Version: "v0.3.0"}},
			version.Info{Module: version.Module, Version: "v0.3.0", Main: true, GoVersion: "go1.26.0"},
			true, "github.com/erdmakit/erdmakit v0.3.0 go1.26.0"},
		{"a program importing erdmakit",
			debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "example.com/tool"},
				Deps: []*debug.Module{{Path: "golang.org/x/sys", Version: "v0.50.0"}, {Path: version.Module, Version: "v0.3.0"}}},
			version.Info{Module: version.Module, Version: "v0.3.0", GoVersion: "go1.26.0"},
			true, "github.com/erdmakit/erdmakit v0.3.0 go1.26.0"},
		{"replaced by a local clone",
			debug.BuildInfo{Main: debug.Module{Path: "example.com/tool"},
				Deps: []*debug.Module{{Path: version.Module, Version: "v0.0.0", Replace: &debug.Module{Path: "../erdmakit"}}}},
			version.Info{Module: version.Module, Version: "(replaced by ../erdmakit)"},
			true, "github.com/erdmakit/erdmakit (replaced by ../erdmakit)"},
		{"a program without erdmakit",
			debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "example.com/other"}},
			version.Info{Module: version.Module, GoVersion: "go1.26.0"},
			false, "github.com/erdmakit/erdmakit (devel) go1.26.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := version.FromBuildInfo(&tc.bi)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.line, got.String())
		})
	}
}

// In a test binary erdmakit is the main module.
func TestGet(t *testing.T) {
	in, ok := version.Get()
	assert.True(t, ok)
	assert.True(t, in.Main)
	assert.NotEmpty(t, in.GoVersion)
}

func ExampleGet() {
	in, _ := version.Get()
	fmt.Println(in.Module)
	// Output: github.com/erdmakit/erdmakit
}
