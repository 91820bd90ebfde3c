// Package version says which erdmakit a program runs: the module version
// and the VCS revision the Go toolchain stamped into the binary
// (runtime/debug.ReadBuildInfo). It works in the erdmakit binary and in any
// program that imports erdmakit's packages. Standard library only.
package version

import (
	"runtime/debug"
)

// Module is erdmakit's module path.
const Module = "github.com/erdmakit/erdmakit"

// Info is one build of erdmakit.
type Info struct {
	Module string `json:"module"`
	// Version is the module version: a tag (v0.3.0), a pseudo-version,
	// or "(devel)" for a build inside a checkout without a tag.
	Version string `json:"version"`
	// Revision, Time and Modified come from the VCS when the binary was
	// built inside a checkout (go build -buildvcs=true, the default
	// there): the commit, its time, and whether the tree had changes.
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// Main is true when erdmakit is the main module (its own binary),
	// false when it is a dependency of the program.
	Main bool `json:"main"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"go"`
	// Release is true in a release build (make release): Version,
	// Revision and Time were stamped by the linker (-ldflags -X) from
	// git describe, as a -trimpath build outside a checkout has no VCS
	// settings to read them from.
	Release bool `json:"release,omitempty"`
}

// Set by the linker in a release build (make release: -ldflags
// "-X github.com/erdmakit/erdmakit/version.stampVersion=v0.3.0 ..."), empty
// in every other build. They are written only by the linker, never at run
// time: constants the toolchain cannot express as such.
var (
	stampVersion  string
	stampRevision string
	stampTime     string
)

// Get reads the running binary's build information. ok is false when the
// binary carries none (built without module support) or does not contain
// erdmakit.
func Get() (Info, bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return stamped(Info{Module: Module}, stampVersion, stampRevision, stampTime), false
	}
	in, ok := FromBuildInfo(bi)
	if in.Main {
		in = stamped(in, stampVersion, stampRevision, stampTime)
	}
	return in, ok
}

// stamped overrides in with a release build's stamped version, revision
// and time; without a stamped version in is returned as it is.
func stamped(in Info, ver, rev, time string) Info {
	if ver == "" {
		return in
	}
	in.Version, in.Release = ver, true
	if rev != "" {
		in.Revision, in.Time, in.Modified = rev, time, false
	}
	return in
}

// FromBuildInfo finds erdmakit in bi: the main module, or a dependency
// (following a replace to what replaced it).
func FromBuildInfo(bi *debug.BuildInfo) (Info, bool) {
	in := Info{Module: Module, GoVersion: bi.GoVersion}
	if bi.Main.Path == Module {
		in.Main = true
		in.Version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.time":
				in.Time = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
		return in, true
	}
	for _, d := range bi.Deps {
		if d.Path != Module {
			continue
		}
		in.Version = d.Version
		if d.Replace != nil {
			in.Version = d.Replace.Version
			if in.Version == "" {
				in.Version = "(replaced by " + d.Replace.Path + ")"
			}
		}
		return in, true
	}
	return in, false
}

// String is one line: "github.com/erdmakit/erdmakit v0.3.0 (revision
// 1a2b3c4d5e6f, modified) go1.26.0".
func (in Info) String() string {
	s := in.Module + " " + orDevel(in.Version)
	if in.Revision != "" {
		r := in.Revision
		if len(r) > 12 {
			r = r[:12]
		}
		s += " (revision " + r
		if in.Modified {
			s += ", modified"
		}
		s += ")"
	}
	if in.GoVersion != "" {
		s += " " + in.GoVersion
	}
	return s
}

func orDevel(v string) string {
	if v == "" {
		return "(devel)"
	}
	return v
}
