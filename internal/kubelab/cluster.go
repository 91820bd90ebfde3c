package kubelab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Close ends the lab and undoes what it changed on this machine: kwok and
// the kubelet first, then every container (the shims' process trees, which
// outlive containerd), containerd, the control plane; then it detaches the
// mounts under the scratch directory, writes back the sysctls the kubelet
// changed and removes what appeared in /var/log/containers, /var/lib/cni,
// /run/containerd and the like. Idempotent; the scratch directory itself is
// left to its owner (t.TempDir removes it).
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		var errs []error
		byName := map[string]*proc{}
		c.mu.Lock()
		procs := append([]*proc(nil), c.procs...)
		c.mu.Unlock()
		for _, p := range procs {
			byName[p.name] = p
		}
		stop := func(names ...string) {
			for _, n := range names {
				if p := byName[n]; p != nil {
					p.stop()
				}
			}
		}
		stop("kwok", "kubelet")
		if err := killAll(shimTree(c.containerdSock()), 10*time.Second); err != nil {
			errs = append(errs, fmt.Errorf("ending the containers: %w", err))
		}
		stop("containerd", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd")
		if err := unmountUnder(c.dir, nil); err != nil {
			errs = append(errs, err)
		}
		if c.hostState != nil {
			if err := c.hostState.restore(); err != nil {
				errs = append(errs, err)
			}
		}
		if c.lock != nil {
			_ = c.lock.Close() // releases the flock
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// WaitFor polls cond every 200 ms until it is true, timeout passes or ctx
// ends; it also stops, naming the process and quoting its log, when a lab
// process has died. what names the wait in the error.
func (c *Cluster) WaitFor(ctx context.Context, what string, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	return c.waitFor(ctx, what, timeout, cond)
}

// WaitForNodeReady waits until node's Ready condition is True.
func (c *Cluster) WaitForNodeReady(ctx context.Context, node string, timeout time.Duration) error {
	return c.waitFor(ctx, "node "+node+" Ready", timeout, func(ctx context.Context) (bool, error) {
		v, err := c.jsonpath(ctx, "node/"+node, "", `{.status.conditions[?(@.type=="Ready")].status}`)
		return v == "True", err
	})
}

// WaitForPodPhase waits until the pod is in one of phases (e.g. "Running",
// "Succeeded") and returns the phase it reached. A pod that reaches
// Succeeded or Failed when neither was asked for ends the wait with an
// error.
func (c *Cluster) WaitForPodPhase(ctx context.Context, ns, pod string, timeout time.Duration, phases ...string) (string, error) {
	var got string
	err := c.waitFor(ctx, fmt.Sprintf("pod %s/%s %s", ns, pod, strings.Join(phases, " or ")), timeout, func(ctx context.Context) (bool, error) {
		v, err := c.jsonpath(ctx, "pod/"+pod, ns, `{.status.phase}`)
		if err != nil {
			return false, err
		}
		got = v
		for _, p := range phases {
			if v == p {
				return true, nil
			}
		}
		if v == "Succeeded" || v == "Failed" {
			return false, fmt.Errorf("pod %s/%s ended %s", ns, pod, v)
		}
		return false, nil
	})
	if err != nil && (got == "Succeeded" || got == "Failed") {
		return got, fmt.Errorf("pod %s/%s ended %s, not %s", ns, pod, got, strings.Join(phases, " or "))
	}
	return got, err
}

// WaitForJob waits until the Job has the condition Complete or Failed and
// returns which.
func (c *Cluster) WaitForJob(ctx context.Context, ns, job string, timeout time.Duration) (string, error) {
	var got string
	err := c.waitFor(ctx, "job "+ns+"/"+job, timeout, func(ctx context.Context) (bool, error) {
		for _, cond := range []string{"Complete", "Failed"} {
			v, err := c.jsonpath(ctx, "job/"+job, ns, `{.status.conditions[?(@.type=="`+cond+`")].status}`)
			if err != nil {
				return false, err
			}
			if v == "True" {
				got = cond
				return true, nil
			}
		}
		return false, nil
	})
	return got, err
}

// jsonpath is kubectl get OBJ -o jsonpath=EXPR.
func (c *Cluster) jsonpath(ctx context.Context, obj, ns, expr string) (string, error) {
	args := []string{"get", obj, "-o", "jsonpath=" + expr}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	out, err := c.Kubectl(ctx, args...)
	return strings.TrimSpace(string(out)), err
}

// PodLogs is what the pod's containers wrote (all of them, in container
// name order, each restart in turn), read from the kubelet's log files
// under the scratch directory: `kubectl logs` needs the apiserver to reach
// the kubelet, which a node without an address does not allow.
func (c *Cluster) PodLogs(ns, pod string) (string, error) {
	dirs, err := filepath.Glob(filepath.Join(c.dir, "pod-logs", ns+"_"+pod+"_*"))
	if err != nil {
		return "", err
	}
	if len(dirs) == 0 {
		return "", fmt.Errorf("pod %s/%s: no logs under %s", ns, pod, filepath.Join(c.dir, "pod-logs"))
	}
	var b strings.Builder
	for _, d := range dirs {
		files, err := filepath.Glob(filepath.Join(d, "*", "*.log"))
		if err != nil {
			return "", err
		}
		sort.Strings(files)
		for _, f := range files {
			s, err := ReadCRILog(f)
			if err != nil {
				return b.String(), err
			}
			b.WriteString(s)
		}
	}
	return b.String(), nil
}

// ContainerLogs is PodLogs of one container.
func (c *Cluster) ContainerLogs(ns, pod, container string) (string, error) {
	files, err := filepath.Glob(filepath.Join(c.dir, "pod-logs", ns+"_"+pod+"_*", container, "*.log"))
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "", fmt.Errorf("container %s of pod %s/%s: no logs", container, ns, pod)
	}
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		s, err := ReadCRILog(f)
		if err != nil {
			return b.String(), err
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// ReadCRILog reads a container log file in the CRI format the kubelet and
// containerd write ("TIME STREAM TAG MESSAGE", TAG P for a partial line, F
// for the end of one) and returns the messages, stdout and stderr
// interleaved as written.
func ReadCRILog(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		parts := strings.SplitN(sc.Text(), " ", 4)
		if len(parts) < 3 {
			return b.String(), fmt.Errorf("%s:%d: not a CRI log line (TIME STREAM TAG MESSAGE)", file, n)
		}
		msg := ""
		if len(parts) == 4 {
			msg = parts[3]
		}
		b.WriteString(msg)
		if parts[2] != "P" {
			b.WriteByte('\n')
		}
	}
	return b.String(), sc.Err()
}

// PatchNodeCapacity adds resources (e.g. "aliyun/erdma": "1") to the
// node's status capacity and allocatable, as a device plugin would.
func (c *Cluster) PatchNodeCapacity(ctx context.Context, node string, res map[string]string) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"capacity": res, "allocatable": res}})
	if err != nil {
		return err
	}
	_, err = c.Kubectl(ctx, "patch", "node", node, "--subresource=status", "--type=merge", "-p", string(patch))
	return err
}

// AddFakeNode creates a node that kwok keeps Ready (starting kwok the first
// time) and waits until it is Ready.
func (c *Cluster) AddFakeNode(ctx context.Context, n FakeNode) error {
	if n.Name == "" {
		return errors.New("fake node: Name is required")
	}
	if err := c.startKwok(); err != nil {
		return err
	}
	capacity := map[string]string{"cpu": "32", "memory": "256Gi", "pods": "110"}
	for k, v := range n.Capacity {
		capacity[k] = v
	}
	labels := map[string]string{"type": "kwok", "kubernetes.io/hostname": n.Name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
	for k, v := range n.Labels {
		labels[k] = v
	}
	var taints []map[string]string
	for _, t := range n.Taints {
		kv, effect, ok := strings.Cut(t, ":")
		if !ok {
			return fmt.Errorf("fake node %s: taint %q: want key[=value]:Effect", n.Name, t)
		}
		k, v, _ := strings.Cut(kv, "=")
		taints = append(taints, map[string]string{"key": k, "value": v, "effect": effect})
	}
	spec := map[string]any{}
	if len(taints) > 0 {
		spec["taints"] = taints
	}
	obj := map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": n.Name, "labels": labels, "annotations": map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
		"spec":     spec,
		"status":   map[string]any{"capacity": capacity, "allocatable": capacity},
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if _, err := c.KubectlWithInput(ctx, b, "apply", "-f", "-"); err != nil {
		return fmt.Errorf("fake node %s: %w", n.Name, err)
	}
	// The status of a create is kept, but make sure of the resources.
	if err := c.PatchNodeCapacity(ctx, n.Name, capacity); err != nil {
		return fmt.Errorf("fake node %s: %w", n.Name, err)
	}
	return c.WaitForNodeReady(ctx, n.Name, 60*time.Second)
}

func (c *Cluster) startKwok() error {
	c.mu.Lock()
	running := c.kwok != nil
	c.mu.Unlock()
	if running {
		return nil
	}
	args := []string{"--kubeconfig=" + c.Kubeconfig(),
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		fmt.Sprintf("--server-address=127.0.0.1:%d", c.ports.kwok)}
	stages, err := filepath.Glob(filepath.Join(c.stages, "*.yaml"))
	if err != nil {
		return err
	}
	if len(stages) == 0 {
		return fmt.Errorf("kwok: no stage files in %s (tools/kubelab/build.sh copies them)", c.stages)
	}
	for _, s := range stages {
		args = append(args, "-c", s)
	}
	return c.run("kwok", c.binary("kwok"), args...)
}
