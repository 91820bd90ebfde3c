// Package moduletest holds tests of the module as a whole, as an importer
// gets it: the zip `go get` downloads is valid (no ':' in paths, no symlinks,
// nothing silently dropped), a fresh module outside the repository fetches
// and builds our packages through a module proxy, go.mod's go line is the
// lowest the code and the dependencies allow, and the portable packages
// (log parsers) build with CGO_ENABLED=0 for linux, darwin and windows
// without heavy dependencies, and the tests that run stand-in scripts pass
// in a copy without exec bits (as a module zip delivers it). It has no code.
package moduletest
