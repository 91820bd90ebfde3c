package verbsprobe_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/doctor/verbsprobe"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/ibverbs"
)

// The doctor as `erdmakit doctor` runs it on this host: with the live
// verbs probe, the verbs check asks libibverbs (without it, the check says
// skip).
func ExampleLive() {
	opt := doctor.DefaultOptions()
	opt.Verbs = verbsprobe.Live{}
	rep, err := doctor.Run(context.Background(), erdma.LiveHost(), opt)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range rep.Findings {
		if f.ID == doctor.FindingVerbs {
			fmt.Println(f.Severity, f.Summary)
		}
	}
}

// A libibverbs that does not load is the probe's LoadErr, which the verbs
// check reports as a failure naming the install step.
func ExampleLive_Probe() {
	p := verbsprobe.Live{Loader: ibverbs.Loader{Verbs: "/nonexistent/libibverbs.so.1"}}.Probe(context.Background(), []string{"erdma_0"}, nil)
	fmt.Println(p.LoadErr != nil, len(p.Devices))
	fmt.Println(errors.Is(p.LoadErr, ibverbs.ErrNotInstalled) || errors.Is(p.LoadErr, ibverbs.ErrNotSupported))
	// Output:
	// true 0
	// true
}
