package health

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFindingsTableThenProblemsWithEvidenceFixAndHint(t *testing.T) {
	fs := []Finding{
		{ID: "port-active", Severity: OK, Summary: "all ports ACTIVE", Evidence: []string{"state: 4: ACTIVE"}},
		{ID: "memlock", Severity: Fail, Summary: "memlock 64 KiB", Evidence: []string{"RLIMIT_MEMLOCK soft 64 KiB"}, Remediation: "ulimit -l unlimited"},
	}
	var b strings.Builder
	hint := func(f Finding) string {
		if f.ID == "memlock" {
			return "rerun with --root"
		}
		return ""
	}
	require.NoError(t, WriteTable(&b, fs, TableOptions{Hint: hint}))
	assert.Equal(t, `RESULT  CHECK        SUMMARY
ok      port-active  all ports ACTIVE
fail    memlock      memlock 64 KiB

fail memlock: memlock 64 KiB
    read: RLIMIT_MEMLOCK soft 64 KiB
    fix:  ulimit -l unlimited
    hint: rerun with --root
`, b.String())

	b.Reset()
	require.NoError(t, WriteTable(&b, fs[:1], TableOptions{Verbose: true}))
	assert.Contains(t, b.String(), "\nok port-active: all ports ACTIVE\n    read: state: 4: ACTIVE\n", "verbose shows every finding")
}
