package setup_test

import (
	"context"
	"fmt"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/setup"
)

// A dry run plans the guide's stages on a host and changes nothing: here a
// recorded host whose memlock limit is 64 KiB (every ibv_create_qp fails),
// the limits stage only. Without DryRun the same call writes the change
// atomically, keeps what it replaced and lists how to revert it.
func ExampleRun() {
	ctx := context.Background()
	h, closer, err := erdma.OpenHost(ctx, "../testdata/hosts/memlock-64k.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	res, err := setup.Run(ctx, setup.Options{Root: h.Root(), DryRun: true, Only: []string{doctor.StageLimits}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, st := range res.Stages {
		if st.Status == setup.StatusSkipped {
			continue // not selected
		}
		fmt.Println(st.Name, st.Status, len(st.Changes), "change(s)")
		for _, c := range st.Changes {
			fmt.Println(" ", c.Kind, c.Target)
		}
	}
	fmt.Println("dry run:", res.DryRun, "changed:", res.Changed)
	// Output:
	// limits planned 2 change(s)
	//   file /etc/security/limits.d/90-erdmakit-memlock.conf
	//   file /etc/systemd/system.conf.d/90-erdmakit-memlock.conf
	// dry run: true changed: 2
}
