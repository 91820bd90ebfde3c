//go:build kubelab

package kubelab

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCluster is the lab's smoke test: a cluster with one real node and one
// kwok node; the erdmakit image imported; a hostNetwork pod of it runs
// `erdmakit version` and `erdmakit doctor --root` on a recorded host mounted
// by hostPath, and a second container reaches the apiserver with the pod's
// service-account token (allowed to list pods, refused secrets); a pod
// without hostNetwork gets an address from kubelab-cni; a pod lands on the
// fake node and kwok makes it Running. Needs root and make kube-lab's
// binaries and image (fails under CI=true without them).
func TestCluster(t *testing.T) {
	Need(t)
	archive := ErdmakitArchive(t)
	root, err := moduleRoot()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	start := time.Now()
	c := NewTest(t, Options{
		NodeLabels:   map[string]string{"kubelab.erdmakit.io/real": "true"},
		NodeCapacity: map[string]string{"aliyun/erdma": "1"},
		FakeNodes:    []FakeNode{{Name: "fake-0", Labels: map[string]string{"kubelab.erdmakit.io/real": "false"}, Capacity: map[string]string{"aliyun/erdma": "1"}}},
		Logger:       slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	})
	t.Logf("cluster up in %s (real node Ready and fake node Ready); steps:", time.Since(start).Round(time.Millisecond))
	for _, s := range c.Timings {
		t.Logf("  %-55s %s", s.Step, s.Duration.Round(time.Millisecond))
	}
	erdma, err := c.jsonpath(ctx, "node/"+c.NodeName(), "", `{.status.allocatable.aliyun/erdma}`)
	require.NoError(t, err)
	assert.Equal(t, "1", erdma, "NodeCapacity on the real node")

	t0 := time.Now()
	refs, err := c.ImportImage(ctx, archive)
	require.NoError(t, err)
	require.Contains(t, refs, ErdmakitImage)
	t.Logf("imported %s in %s", archive, time.Since(t0).Round(time.Millisecond))

	const ns = "kubelab-smoke"
	env := c.APIServerEnv()
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: reader, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-reader, namespace: %[1]s}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}
subjects:
- {kind: ServiceAccount, name: reader, namespace: %[1]s}
---
apiVersion: v1
kind: Pod
metadata: {name: doctor, namespace: %[1]s}
spec:
  serviceAccountName: reader
  hostNetwork: true
  restartPolicy: Never
  nodeSelector: {kubelab.erdmakit.io/real: "true"}
  containers:
  - name: doctor
    image: %[2]s
    imagePullPolicy: Never
    command: [sh, -c, 'erdmakit version && erdmakit doctor --root /data/healthy.tar.gz; echo doctor-exit=$?']
    volumeMounts:
    - {name: host, mountPath: /data/healthy.tar.gz, readOnly: true}
  - name: api
    image: %[2]s
    imagePullPolicy: Never
    env:
    - {name: KUBERNETES_SERVICE_HOST, value: "%[3]s"}
    - {name: KUBERNETES_SERVICE_PORT, value: "%[4]s"}
    command: [sh, -c, '/kubelab/kubectl get pods -n %[1]s -o name; /kubelab/kubectl get secrets -n %[1]s 2>&1 | grep -q Forbidden && echo secrets-forbidden']
    volumeMounts:
    - {name: kubectl, mountPath: /kubelab/kubectl, readOnly: true}
  volumes:
  - {name: host, hostPath: {path: %[5]s, type: File}}
  - {name: kubectl, hostPath: {path: %[6]s, type: File}}
---
apiVersion: v1
kind: Pod
metadata: {name: podnet, namespace: %[1]s}
spec:
  restartPolicy: Never
  nodeSelector: {kubelab.erdmakit.io/real: "true"}
  containers:
  - name: podnet
    image: %[2]s
    imagePullPolicy: Never
    command: [sh, -c, 'ls /sys/class/net']
---
apiVersion: v1
kind: Pod
metadata: {name: on-fake, namespace: %[1]s}
spec:
  restartPolicy: Never
  nodeSelector: {kubelab.erdmakit.io/real: "false"}
  containers:
  - name: c
    image: %[2]s
    resources: {limits: {aliyun/erdma: "1"}}
`, ns, ErdmakitImage, env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"],
		filepath.Join(root, "testdata/hosts/ebmgn8is-healthy.tar.gz"), c.KubectlPath())
	t0 = time.Now()
	_, err = c.KubectlWithInput(ctx, []byte(manifest), "apply", "-f", "-")
	require.NoError(t, err)

	phase, err := c.WaitForPodPhase(ctx, ns, "doctor", 2*time.Minute, "Succeeded")
	require.NoError(t, err, "phase %s", phase)
	t.Logf("the doctor pod Succeeded %s after apply", time.Since(t0).Round(time.Millisecond))
	logs, err := c.ContainerLogs(ns, "doctor", "doctor")
	require.NoError(t, err)
	t.Logf("doctor container's log:\n%s", logs)
	assert.Contains(t, logs, "erdmakit ")
	assert.Contains(t, logs, "doctor-exit=0", "doctor --root on the healthy recording in the pod")
	api, err := c.ContainerLogs(ns, "doctor", "api")
	require.NoError(t, err)
	assert.Contains(t, api, "pod/doctor", "the service-account token lists pods through KUBERNETES_SERVICE_HOST/PORT")
	assert.Contains(t, api, "secrets-forbidden", "RBAC refuses what the Role does not grant")
	all, err := c.PodLogs(ns, "doctor")
	require.NoError(t, err)
	assert.Contains(t, all, "doctor-exit=0")
	assert.Contains(t, all, "secrets-forbidden")
	hostIP, err := c.jsonpath(ctx, "pod/doctor", ns, "{.status.podIP}")
	require.NoError(t, err)
	assert.Equal(t, c.NodeIP(), hostIP, "a hostNetwork pod's IP is the node's")
	if c.NodeIP() != "" {
		out, err := c.Kubectl(ctx, "logs", "-n", ns, "doctor", "-c", "doctor")
		require.NoError(t, err, "kubectl logs through the kubelet on the node's address")
		assert.Contains(t, string(out), "doctor-exit=0")
	}

	_, err = c.WaitForPodPhase(ctx, ns, "podnet", time.Minute, "Succeeded")
	require.NoError(t, err)
	ip, err := c.jsonpath(ctx, "pod/podnet", ns, "{.status.podIP}")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(ip, "127.1."), "pod IP %q from kubelab-cni", ip)
	nets, err := c.PodLogs(ns, "podnet")
	require.NoError(t, err)
	assert.Equal(t, "lo\n", nets, "a pod's own network namespace has loopback only")

	_, err = c.WaitForPodPhase(ctx, ns, "on-fake", time.Minute, "Running")
	require.NoError(t, err, "kwok runs the fake node's pod")
	node, err := c.jsonpath(ctx, "pod/on-fake", ns, "{.spec.nodeName}")
	require.NoError(t, err)
	assert.Equal(t, "fake-0", node)
	job := fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: on-fake, namespace: %s}
spec:
  completions: 1
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {kubelab.erdmakit.io/real: "false"}
      containers: [{name: c, image: %s}]
`, ns, ErdmakitImage)
	_, err = c.KubectlWithInput(ctx, []byte(job), "apply", "-f", "-")
	require.NoError(t, err)
	cond, err := c.WaitForJob(ctx, ns, "on-fake", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, "Complete", cond, "kwok completes a Job's pod on a fake node")

	out, err := c.Kubectl(ctx, "get", "nodes", "-o", "json")
	require.NoError(t, err)
	var nodes struct {
		Items []struct {
			Metadata struct{ Name string }
		}
	}
	require.NoError(t, json.Unmarshal(out, &nodes))
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Metadata.Name)
	}
	assert.ElementsMatch(t, []string{"kubelab", "fake-0"}, names)
	t.Logf("smoke test body took %s", time.Since(start).Round(time.Millisecond))
}

// TestClusterCloseCleansUp starts and closes a lab and checks that nothing
// of it is left: no process of its containerd, the sysctls as they were.
func TestClusterCloseCleansUp(t *testing.T) {
	Need(t)
	before := map[string]string{}
	for _, s := range sysctls {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil {
			before[s] = string(b)
		}
	}
	chains := iptablesChains(t)
	dirsBefore := hostDirEntries()
	hostMounts, err := mounts()
	require.NoError(t, err)
	var newCgroups []string
	for _, m := range hostMounts {
		if (m.fstype == "cgroup" || m.fstype == "cgroup2") && !exists(filepath.Join(m.point, "kubepods")) {
			newCgroups = append(newCgroups, filepath.Join(m.point, "kubepods"))
		}
	}
	dir, err := os.MkdirTemp("", "kubelab")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	t0 := time.Now()
	c, err := Start(context.Background(), Options{Dir: dir})
	require.NoError(t, err)
	t.Logf("warm start to node Ready: %s", time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	require.NoError(t, c.Close())
	t.Logf("close: %s", time.Since(t0).Round(time.Millisecond))
	require.NoError(t, c.Close(), "Close is idempotent")
	assert.Empty(t, shimTree(c.containerdSock()), "containers outlived Close")
	for s, v := range before {
		b, err := os.ReadFile("/proc/sys/" + s)
		require.NoError(t, err)
		assert.Equal(t, v, string(b), "sysctl %s", s)
	}
	ms, err := mounts()
	require.NoError(t, err)
	for _, m := range ms {
		assert.False(t, strings.HasPrefix(m.point, dir+"/"), "mount %s left", m.point)
	}
	assert.Equal(t, chains, iptablesChains(t), "the kubelet left iptables chains")
	assert.Equal(t, dirsBefore, hostDirEntries(), "the lab left files in %v", hostDirs)
	for _, cg := range newCgroups {
		assert.NoDirExists(t, cg, "the kubelet's cgroup outlived Close")
	}
	require.NoError(t, os.RemoveAll(dir), "the scratch directory can be removed")
}

// hostDirEntries lists what is under hostDirs.
func hostDirEntries() []string {
	var out []string
	for _, d := range hostDirs {
		_ = filepath.WalkDir(d, func(p string, _ fs.DirEntry, err error) error {
			if err == nil {
				out = append(out, p)
			}
			return nil
		})
	}
	return out
}

// iptablesChains lists the chains of iptables-save and ip6tables-save
// ("" where the program is missing).
func iptablesChains(t *testing.T) string {
	var b strings.Builder
	for _, prog := range []string{"iptables-save", "ip6tables-save"} {
		if _, err := exec.LookPath(prog); err != nil {
			continue
		}
		out, err := exec.Command(prog).Output()
		require.NoError(t, err, prog)
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "*") || strings.HasPrefix(l, ":") {
				name, _, _ := strings.Cut(l, " ")
				b.WriteString(prog + " " + name + "\n")
			}
		}
	}
	return b.String()
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestStartFailsCleanly: a kubelet that cannot start (its node IP is not
// this machine's) ends Start with an error quoting its log, and nothing of
// the lab is left running.
func TestStartFailsCleanly(t *testing.T) {
	Need(t)
	dir, err := os.MkdirTemp("", "kubelab")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	_, err = Start(context.Background(), Options{Dir: dir, NodeIP: "203.0.113.77"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kubelet exited")
	t.Log(err)
	ms, err := mounts()
	require.NoError(t, err)
	for _, m := range ms {
		assert.False(t, strings.HasPrefix(m.point, dir+"/"), "mount %s left", m.point)
	}
	assert.Empty(t, shimTree(filepath.Join(dir, "containerd/containerd.sock")))
	// The lock was given back: another lab can take it at once.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	f, err := hostLock(ctx, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestStartWaitsForAnotherLab: while another lab holds the machine's lock,
// Start waits, and gives up when its context ends.
func TestStartWaitsForAnotherLab(t *testing.T) {
	Need(t)
	f, err := hostLock(context.Background(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = Start(ctx, Options{Dir: t.TempDir()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "another lab")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}
