package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/internal/safetext"
)

// The environment of an Indexed Job's pod: the Job controller sets
// JOB_COMPLETION_INDEX; the manifest passes the Job's name and namespace
// through the downward API (deploy/kubernetes/prove/job.yaml).
const (
	EnvCompletionIndex = "JOB_COMPLETION_INDEX"
	EnvJobName         = "ERDMAKIT_KUBE_JOB"
	EnvNamespace       = "ERDMAKIT_KUBE_NAMESPACE"
)

// The pod labels the Job controller sets (Kubernetes 1.28 and later).
const (
	labelJobName         = "batch.kubernetes.io/job-name"
	labelCompletionIndex = "batch.kubernetes.io/job-completion-index"
)

// InIndexedJob reports whether this process is a pod of an Indexed Job.
func InIndexedJob(getenv func(string) string) bool {
	return getenv(EnvCompletionIndex) != ""
}

// Job is what erdmakit reads of a batch/v1 Job.
type Job struct {
	Name, Namespace string
	// CompletionMode is "Indexed" or "NonIndexed".
	CompletionMode string
	Completions    int
	Parallelism    int
}

// DecodeJob reads a batch/v1 Job as the API server sends it.
func DecodeJob(data []byte) (*Job, error) {
	var j struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Spec struct {
			CompletionMode string `json:"completionMode"`
			Completions    *int   `json:"completions"`
			Parallelism    *int   `json:"parallelism"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("kube: a job: %w", err)
	}
	if j.Kind != "" && j.Kind != "Job" {
		return nil, fmt.Errorf("kube: a job: kind %q", safetext.Line(j.Kind))
	}
	if err := validName("job", j.Metadata.Name); err != nil {
		return nil, err
	}
	out := &Job{Name: j.Metadata.Name, Namespace: j.Metadata.Namespace, CompletionMode: j.Spec.CompletionMode, Completions: 1, Parallelism: 1}
	if j.Spec.Completions != nil {
		out.Completions = *j.Spec.Completions
	}
	if j.Spec.Parallelism != nil {
		out.Parallelism = *j.Spec.Parallelism
	}
	return out, nil
}

// GetJob reads a Job (RBAC: get jobs, which deploy/kubernetes grants for
// the prove Job's name only).
func (c *Client) GetJob(ctx context.Context, namespace, name string) (*Job, error) {
	if err := validName("namespace", namespace); err != nil {
		return nil, err
	}
	if err := validName("job", name); err != nil {
		return nil, err
	}
	path := "/apis/batch/v1/namespaces/" + namespace + "/jobs/" + name
	var raw json.RawMessage
	if err := c.do(ctx, "GET", path, nil, "", nil, &raw); err != nil {
		return nil, err
	}
	j, err := DecodeJob(raw)
	if err != nil {
		return nil, fmt.Errorf("kube: GET %s: %w", path, err)
	}
	return j, nil
}

// Pod is what erdmakit reads of a pod.
type Pod struct {
	Name    string
	Labels  map[string]string
	Phase   string // Pending, Running, Succeeded, Failed, Unknown
	PodIP   string
	HostIP  string
	Node    string
	Created time.Time
	// Deleting: the pod has a deletion timestamp.
	Deleting bool
}

type podJSON struct {
	Metadata struct {
		Name              string            `json:"name"`
		Labels            map[string]string `json:"labels"`
		CreationTimestamp time.Time         `json:"creationTimestamp"`
		DeletionTimestamp *time.Time        `json:"deletionTimestamp"`
	} `json:"metadata"`
	Spec struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
	Status struct {
		Phase  string `json:"phase"`
		PodIP  string `json:"podIP"`
		HostIP string `json:"hostIP"`
	} `json:"status"`
}

// DecodePodList reads a v1 PodList as the API server sends it.
func DecodePodList(data []byte) ([]Pod, error) {
	var l struct {
		Kind  string    `json:"kind"`
		Items []podJSON `json:"items"`
	}
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("kube: a pod list: %w", err)
	}
	if l.Kind != "" && l.Kind != "PodList" {
		return nil, fmt.Errorf("kube: a pod list: kind %q", safetext.Line(l.Kind))
	}
	pods := make([]Pod, 0, len(l.Items))
	for _, p := range l.Items {
		if err := validName("pod", p.Metadata.Name); err != nil {
			return nil, err
		}
		pods = append(pods, Pod{Name: p.Metadata.Name, Labels: p.Metadata.Labels, Phase: p.Status.Phase,
			PodIP: p.Status.PodIP, HostIP: p.Status.HostIP, Node: p.Spec.NodeName,
			Created: p.Metadata.CreationTimestamp, Deleting: p.Metadata.DeletionTimestamp != nil})
	}
	return pods, nil
}

// ListPods lists a namespace's pods that match a label selector (RBAC: list
// pods).
func (c *Client) ListPods(ctx context.Context, namespace, selector string) ([]Pod, error) {
	if err := validName("namespace", namespace); err != nil {
		return nil, err
	}
	path := "/api/v1/namespaces/" + namespace + "/pods"
	var raw json.RawMessage
	if err := c.do(ctx, "GET", path, url.Values{"labelSelector": {selector}}, "", nil, &raw); err != nil {
		return nil, err
	}
	pods, err := DecodePodList(raw)
	if err != nil {
		return nil, fmt.Errorf("kube: GET %s: %w", path, err)
	}
	return pods, nil
}

// JobRank is an Indexed Job's pod's place in the job.
type JobRank struct {
	Rank      int    `json:"rank"` // JOB_COMPLETION_INDEX
	Size      int    `json:"size"` // the Job's completions
	Job       string `json:"job"`
	Namespace string `json:"namespace"`
}

// ErrNotIndexedJob: no JOB_COMPLETION_INDEX in the environment.
var ErrNotIndexedJob = errors.New("kube: not a pod of an Indexed Job (no " + EnvCompletionIndex + ")")

// JobRankOf is this pod's rank and the job's size: the rank from
// JOB_COMPLETION_INDEX, the job from EnvJobName and EnvNamespace (the
// namespace falls back to the service account's, read from dir), the size
// from the Job itself. The Job must be Indexed and run every index at once
// (parallelism at least completions): ranks that wait for each other could
// otherwise never meet.
func JobRankOf(ctx context.Context, c *Client, getenv func(string) string, dir string) (JobRank, error) {
	is := strings.TrimSpace(getenv(EnvCompletionIndex))
	if is == "" {
		return JobRank{}, ErrNotIndexedJob
	}
	idx, err := strconv.Atoi(is)
	if err != nil || idx < 0 {
		return JobRank{}, fmt.Errorf("kube: %s=%q is not a completion index", EnvCompletionIndex, safetext.Line(is))
	}
	name := getenv(EnvJobName)
	if name == "" {
		return JobRank{}, fmt.Errorf("kube: %s is not set: the pod must name its Job (the downward API: metadata.labels['%s'])", EnvJobName, labelJobName)
	}
	ns := getenv(EnvNamespace)
	if ns == "" {
		if ns, err = PodNamespace(dir); err != nil {
			return JobRank{}, err
		}
	}
	j, err := c.GetJob(ctx, ns, name)
	if err != nil {
		return JobRank{}, err
	}
	if j.CompletionMode != "Indexed" {
		return JobRank{}, fmt.Errorf("kube: job %s/%s has completionMode %q: fleet prove needs an Indexed Job", ns, name, safetext.Line(j.CompletionMode))
	}
	if j.Completions < 1 {
		return JobRank{}, fmt.Errorf("kube: job %s/%s has %d completions", ns, name, j.Completions)
	}
	if j.Parallelism < j.Completions {
		return JobRank{}, fmt.Errorf("kube: job %s/%s runs %d pods at once for %d completions: every rank must run at the same time (set parallelism to completions)", ns, name, j.Parallelism, j.Completions)
	}
	if idx >= j.Completions {
		return JobRank{}, fmt.Errorf("kube: %s=%d outside job %s/%s's %d completions", EnvCompletionIndex, idx, ns, name, j.Completions)
	}
	return JobRank{Rank: idx, Size: j.Completions, Job: name, Namespace: ns}, nil
}

// Rank0Pod picks rank 0's pod among pods: the newest that is neither
// finished nor being deleted and has an IP ("", false when none yet).
func Rank0Pod(pods []Pod) (Pod, bool) {
	var best Pod
	found := false
	for _, p := range pods {
		if p.Deleting || p.Phase == "Succeeded" || p.Phase == "Failed" || p.PodIP == "" {
			continue
		}
		if p.Labels[labelCompletionIndex] != "0" {
			continue
		}
		if net.ParseIP(p.PodIP) == nil {
			continue
		}
		if !found || p.Created.After(best.Created) {
			best, found = p, true
		}
	}
	return best, found
}

// Rank0Addr waits until rank 0's pod of the job has an IP and returns it
// (with a hostNetwork pod, its node's address): the rendezvous without
// cluster DNS. It asks every poll until ctx ends.
func Rank0Addr(ctx context.Context, c *Client, r JobRank, poll time.Duration) (string, error) {
	if poll <= 0 {
		poll = 2 * time.Second
	}
	sel := labelJobName + "=" + r.Job + "," + labelCompletionIndex + "=0"
	var last error
	for {
		pods, err := c.ListPods(ctx, r.Namespace, sel)
		if err == nil {
			if p, ok := Rank0Pod(pods); ok {
				return p.PodIP, nil
			}
			last = fmt.Errorf("kube: rank 0's pod of job %s/%s has no IP yet (%d pod(s) of index 0)", r.Namespace, r.Job, len(pods))
		} else {
			if code := apiCode(err); code >= 400 && code < 500 && code != http.StatusTooManyRequests {
				return "", err // denied or wrong: asking again will not help
			}
			if ctx.Err() == nil || last == nil {
				last = err
			}
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("%w (gave up: %w)", last, ctx.Err())
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%w (gave up: %w)", last, ctx.Err())
		case <-time.After(poll):
		}
	}
}
