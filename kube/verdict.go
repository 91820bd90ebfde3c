package kube

import (
	"fmt"
	"slices"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/safetext"
)

// ConditionType is the node condition the node agent sets.
const ConditionType = "ERDMAReady"

// The labels the node agent sets on its node. LabelReady is the one a
// training job's node affinity requires ("true"); LabelStatus says the
// doctor's status (ok, warn, fail, unknown) for the ones that accept a
// degraded node.
const (
	LabelReady  = "erdmakit.io/erdma-ready"
	LabelStatus = "erdmakit.io/erdma-status"
)

// The reasons of the condition besides the check ids: every check passed,
// or the doctor could not run.
const (
	ReasonPassed      = "AllChecksPassed"
	ReasonCouldNotRun = "DoctorCouldNotRun"
)

// maxMessage bounds the condition's message (kubectl describe shows it whole).
const maxMessage = 1024

// Verdict is the doctor's report as a node shows it: the ERDMAReady
// condition's status, reason and message, and the labels.
type Verdict struct {
	// Status is the doctor's: ok, warn or fail; "" when it could not run.
	Status health.Severity `json:"status"`
	// Ready is the condition's status: True for ok and warn (a degraded
	// node still runs RDMA), False for fail, Unknown when the doctor could
	// not run.
	Ready string `json:"ready"`
	// Reason: ReasonPassed, ReasonCouldNotRun, or the ids of the checks
	// that decided the status in CamelCase joined by ',' ("GdrPeermem,Mtu").
	Reason string `json:"reason"`
	// Message: the failing then warning check ids, each with its summary
	// (and the ack-erdma-controller's step where it owns the fix).
	Message string `json:"message"`
	// Failing and Warning are the check ids by severity.
	Failing []string `json:"failing,omitempty"`
	Warning []string `json:"warning,omitempty"`
}

// VerdictOf turns a doctor's report (or the error that kept it from running)
// into the node's verdict.
func VerdictOf(rep *erdma.Report, err error) Verdict {
	if err != nil || rep == nil {
		msg := "the doctor did not run"
		if err != nil {
			msg = "the doctor could not run: " + err.Error()
		}
		return Verdict{Ready: ConditionUnknown, Reason: ReasonCouldNotRun, Message: clip(safetext.Line(msg), maxMessage)}
	}
	v := Verdict{Status: health.Status(rep.Findings)}
	var parts []string
	for _, sev := range []health.Severity{health.Fail, health.Warn} {
		for _, f := range rep.Findings {
			if f.Severity != sev {
				continue
			}
			if sev == health.Fail {
				v.Failing = append(v.Failing, f.ID)
			} else {
				v.Warning = append(v.Warning, f.ID)
			}
			p := string(sev) + " " + f.ID + ": " + f.Summary
			if step := ControllerStep(f.ID); step != "" {
				p += " [" + step + "]"
			}
			parts = append(parts, p)
		}
	}
	switch v.Status {
	case health.Fail:
		v.Ready, v.Reason = ConditionFalse, reasonOf(v.Failing)
	case health.Warn:
		v.Ready, v.Reason = ConditionTrue, reasonOf(v.Warning)
	default:
		v.Ready, v.Reason = ConditionTrue, ReasonPassed
	}
	if len(parts) == 0 {
		ok, skip := 0, 0
		for _, f := range rep.Findings {
			if f.Severity == health.Skip {
				skip++
			} else {
				ok++
			}
		}
		v.Message = fmt.Sprintf("erdmakit doctor: ok (%d ok, %d skip)", ok, skip)
	} else {
		v.Message = "erdmakit doctor: " + string(v.Status) + ": " + strings.Join(parts, "; ")
	}
	v.Message = clip(safetext.Line(v.Message), maxMessage)
	return v
}

// reasonOf is the condition's reason for the ids that decided it: each in
// CamelCase (gdr-peermem -> GdrPeermem), joined by ',', at most 4 then
// "And<N>More" (a reason stays a short word a selector or alert can match).
func reasonOf(ids []string) string {
	var words []string
	for i, id := range ids {
		if i == 4 {
			words = append(words, fmt.Sprintf("And%dMore", len(ids)-4))
			break
		}
		words = append(words, camel(id))
	}
	return strings.Join(words, ",")
}

func camel(id string) string {
	var b strings.Builder
	up := true
	for _, r := range id {
		switch {
		case r == '-' || r == '_' || r == '.':
			up = true
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			if up && r >= 'a' && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteRune(r)
			up = false
		}
	}
	if b.Len() == 0 {
		return "Check"
	}
	return b.String()
}

// Labels are the node labels of the verdict.
func (v Verdict) Labels() map[string]string {
	ready, status := "false", "unknown"
	if v.Ready == ConditionTrue {
		ready = "true"
	}
	if v.Status != "" {
		status = string(v.Status)
	}
	return map[string]string{LabelReady: ready, LabelStatus: status}
}

// controllerSteps are the checks whose fix on Kubernetes is the
// ack-erdma-controller's (github.com/AliyunContainerService/alibabacloud-erdma-controller):
// its controller attaches the ERIs of each node (the cluster-scoped
// ERdmaDevice named after the node lists them, status.devices says whether
// each is Ready) and its agent (the DaemonSet alibabacloud-erdma-agent in
// kube-system) installs the driver (--prefer-driver default, compat or
// ofed), brings the ERIs up with the MTU (--jumbo-frame-mtu) and advertises
// aliyun/erdma through its device plugin.
var controllerSteps = map[string]string{
	erdma.FindingERDMADevices:       "on Kubernetes: ack-erdma-controller attaches the ERIs (kubectl get erdmadevices NODE -o yaml: spec.devices, status.devices)",
	erdma.FindingNetworkCardChannel: "on Kubernetes: ack-erdma-controller attaches the ERIs and picks their network card (kubectl get erdmadevices NODE -o yaml: networkCardIndex)",
	erdma.FindingERDMADriver:        "on Kubernetes: ack-erdma-controller's agent installs the driver (kubectl -n kube-system logs ds/alibabacloud-erdma-agent; its --prefer-driver)",
	erdma.FindingEadm:               "on Kubernetes: ack-erdma-controller's agent installs the driver and eadm (kubectl -n kube-system logs ds/alibabacloud-erdma-agent)",
	erdma.FindingNetdevIP:           "on Kubernetes: ack-erdma-controller's agent configures the ERIs' netdevs (kubectl -n kube-system logs ds/alibabacloud-erdma-agent)",
	erdma.FindingPortActive:         "on Kubernetes: ack-erdma-controller's agent brings the ERIs up (kubectl -n kube-system logs ds/alibabacloud-erdma-agent)",
	erdma.FindingTransportMode:      "on Kubernetes: ack-erdma-controller's agent loads the driver in the mode its --prefer-driver names (compat on GPU nodes)",
	erdma.FindingMTU:                "on Kubernetes: ack-erdma-controller's agent sets the MTU (its --jumbo-frame-mtu; kubectl get erdmadevices NODE -o yaml: spec.jumboFrame)",
}

// ControllerStep names the ack-erdma-controller's step that fixes a check
// on Kubernetes, "" for checks it does not own (the GPU driver,
// nvidia_peermem, memlock: the node image's or the GPU operator's).
func ControllerStep(checkID string) string { return controllerSteps[checkID] }

// ControllerChecks are the ids of the checks the controller owns, sorted.
func ControllerChecks() []string {
	ids := make([]string, 0, len(controllerSteps))
	for id := range controllerSteps {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// WithControllerSteps returns a copy of rep in which each failing or warning
// finding the ack-erdma-controller owns names the controller's step first
// and the host's own remediation after it: what the doctor says in a pod on
// Kubernetes (InPod), where setting the node up is the controller's job.
func WithControllerSteps(rep *erdma.Report, node string) *erdma.Report {
	if rep == nil {
		return nil
	}
	out := *rep
	out.Findings = slices.Clone(rep.Findings)
	if node == "" {
		node = "NODE"
	}
	for i, f := range out.Findings {
		step := ControllerStep(f.ID)
		if step == "" || (f.Severity != health.Fail && f.Severity != health.Warn) {
			continue
		}
		step = strings.ReplaceAll(step, "NODE", node)
		if host := f.Step(); host != "" {
			step += "; on the host itself: " + host
		}
		// On Kubernetes the controller's step comes first; erdmakit's own
		// fix is part of the host's step, not a step of its own.
		out.Findings[i].Remediation, out.Findings[i].Fix = step, ""
	}
	return &out
}
