package fleet

import "github.com/erdmakit/erdmakit/health"

// HostState is a host's status in fleet doctor's and fleet prove's
// reports: its doctor's severity (ok, warn, fail; skip) or, when the
// doctor gave none, Missing, Errored or NotReached; a fleet prove stage's
// status is one too (its severity, or StageNotReached). In JSON it is the
// string itself. Order and WorseState rank the states, Severity says how
// one counts for the fleet's status: the one place that decides both.
type HostState string

// The host states.
const (
	HostOK   HostState = HostState(health.OK)
	HostSkip HostState = HostState(health.Skip)
	HostWarn HostState = HostState(health.Warn)
	HostFail HostState = HostState(health.Fail)
	// Missing: the host did not report in time (dead or hung).
	Missing HostState = "missing"
	// Errored: the doctor could not run there.
	Errored HostState = "error"
	// NotReached: the run was interrupted before the host answered; it
	// says nothing about the host's health.
	NotReached HostState = "not reached"
)

// HostStates are the states a fleet doctor counts hosts by
// (FleetReport.ByStatus), in the order its table lists them.
func HostStates() []HostState {
	return []HostState{HostOK, HostWarn, HostFail, Errored, Missing, NotReached}
}

// StateOf is the state of a host whose doctor (or another check) ended
// with s.
func StateOf(s health.Severity) HostState { return HostState(s) }

// Severity is how the state counts for the fleet's status and exit code:
// a doctor's own severity; fail for Missing, Errored and whatever else
// (a host not heard from is not proven); skip for NotReached (an
// interrupted run says nothing about the host).
func (s HostState) Severity() health.Severity {
	switch s {
	case HostOK, HostSkip, HostWarn, HostFail, "":
		return health.Severity(s)
	case NotReached:
		return health.Skip
	}
	return health.Fail
}

// Reported says whether the state is a doctor's own severity (ok, skip,
// warn, fail) rather than why there is none (Missing, Errored,
// NotReached, or a word this version does not know).
func (s HostState) Reported() bool { return health.Severity(s).Valid() }

// Order ranks the states from the best: ok (and none) 0, skip 1, warn 2,
// then a host without a doctor's word (Missing, Errored, NotReached) 3,
// below fail 4, which a host that answered said of itself.
func (s HostState) Order() int {
	switch s {
	case HostOK, "":
		return 0
	case HostSkip:
		return 1
	case HostWarn:
		return 2
	case HostFail:
		return 4
	}
	return 3
}

// WorseState is the worse of a and b by Order; a when they rank alike.
func WorseState(a, b HostState) HostState {
	if b.Order() > a.Order() {
		return b
	}
	return a
}
