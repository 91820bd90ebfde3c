package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/report"
)

// fixtureHosts lists every recorded host under testdata/hosts, by name.
func fixtureHosts(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Dir(hostDir("x")))
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".tar.gz"); ok {
			names = append(names, name)
		}
	}
	require.NotEmpty(t, names)
	return names
}

// TestDoctorLibraryEqualsCLI: for every fixture host, what the library
// recipe of docs/doctor.md prints is byte for byte `erdmakit doctor --json`,
// and its table (report.WriteDoctorTable) is `erdmakit doctor`'s but for
// the CLI's own hint lines (they name its flags).
func TestDoctorLibraryEqualsCLI(t *testing.T) {
	for _, name := range fixtureHosts(t) {
		t.Run(name, func(t *testing.T) {
			root := hostDir(name)
			_, cli, stderr := runCLI("doctor", "--json", "--root", root)
			require.NotEmpty(t, cli, stderr)

			h, closer, err := erdma.OpenHost(t.Context(), root)
			require.NoError(t, err)
			defer closer.Close()
			rep, err := doctor.Run(t.Context(), h, doctor.DefaultOptions())
			require.NoError(t, err)
			var lib bytes.Buffer
			require.NoError(t, render.JSON(&lib, rep))
			assert.Equal(t, lib.String(), cli)

			_, cliTable, _ := runCLI("doctor", "--root", root)
			var hintless []string
			for _, l := range strings.SplitAfter(cliTable, "\n") {
				if !strings.HasPrefix(l, "    hint: ") {
					hintless = append(hintless, l)
				}
			}
			lib.Reset()
			require.NoError(t, report.WriteDoctorTable(&lib, rep, report.TableOptions{}))
			assert.Equal(t, lib.String(), strings.Join(hintless, ""))
		})
	}
}
