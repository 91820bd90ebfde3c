package health

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWorstSkipNeverWorsens(t *testing.T) {
	assert.Equal(t, OK, Worst(OK, Skip))
	assert.Equal(t, OK, Worst(Skip, Skip))
	assert.Equal(t, OK, Worst("", OK))
	assert.Equal(t, Warn, Worst(OK, Warn))
	assert.Equal(t, Fail, Worst(Warn, Fail))
	assert.Equal(t, Fail, Worst(Fail, Warn))
	assert.Equal(t, Warn, Worst(Warn, Skip))
}

func TestUnknownSeverityRanksAsFail(t *testing.T) {
	assert.Equal(t, Fail, Worst(OK, Severity("fial")))
	assert.False(t, Severity("fial").Valid())
	_, err := ParseSeverity("fial")
	assert.ErrorContains(t, err, `"fial"`)
}

func TestExitCodes(t *testing.T) {
	for s, want := range map[Severity]int{OK: 0, Skip: 0, Warn: 1, Fail: 2} {
		assert.Equal(t, want, s.Exit(), s)
	}
}

func TestExitCode(t *testing.T) {
	failed := errors.New("no such device")
	for _, c := range []struct {
		status Severity
		err    error
		want   int
	}{
		{OK, nil, ExitOK}, {Skip, nil, ExitOK}, {Warn, nil, ExitWarn}, {Fail, nil, ExitFail},
		{"fial", nil, ExitFail}, {OK, failed, ExitUnknown}, {Fail, failed, ExitUnknown},
		{Warn, context.Canceled, ExitUnknown},
	} {
		assert.Equal(t, c.want, ExitCode(c.status, c.err), "%s %v", c.status, c.err)
	}
}
