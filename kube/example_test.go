package kube_test

import (
	"fmt"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/kube"
)

// A doctor's report as its node shows it: the ERDMAReady condition and the
// labels a training job's node affinity requires.
func ExampleVerdictOf() {
	rep := &erdma.Report{Findings: []health.Finding{
		{ID: "erdma-devices", Severity: health.OK, Summary: "2 eRDMA device(s)"},
		{ID: "gdr-peermem", Severity: health.Fail, Summary: "nvidia_peermem is not loaded"},
	}}
	v := kube.VerdictOf(rep, nil)
	fmt.Println(kube.ConditionType, v.Ready, v.Reason)
	fmt.Println(v.Message)
	fmt.Println(v.Labels())
	// Output:
	// ERDMAReady False GdrPeermem
	// erdmakit doctor: fail: fail gdr-peermem: nvidia_peermem is not loaded
	// map[erdmakit.io/erdma-ready:false erdmakit.io/erdma-status:fail]
}

// On Kubernetes the ack-erdma-controller sets the node up: the checks it
// owns name its step.
func ExampleControllerStep() {
	fmt.Println(kube.ControllerStep("port-active"))
	fmt.Printf("%q\n", kube.ControllerStep("gdr-peermem"))
	// Output:
	// on Kubernetes: ack-erdma-controller's agent brings the ERIs up (kubectl -n kube-system logs ds/alibabacloud-erdma-agent)
	// ""
}
