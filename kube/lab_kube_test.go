//go:build kubelab

package kube

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/internal/kubelab"
)

// The manifests of deploy/kubernetes on a real Kubernetes (internal/kubelab):
// server-side validation, RBAC as the API server enforces it, the node agent's
// pod on the real node against recorded hosts, the prove Job over simulated
// ranks on that node, and its scheduling over kwok's fake eRDMA nodes.
func TestKubeLab(t *testing.T) {
	archive := kubelab.ErdmakitArchive(t)
	root, err := fixture.ModuleRoot()
	require.NoError(t, err)
	start := time.Now()
	c := kubelab.NewTest(t, kubelab.Options{
		NodeLabels:   map[string]string{"aliyun.accelerator/erdma": "true"},
		NodeCapacity: map[string]string{"aliyun/erdma": "4"},
		FakeNodes: []kubelab.FakeNode{
			{Name: "erdma-fake-1", Labels: map[string]string{"aliyun.accelerator/erdma": "true"}, Capacity: map[string]string{"aliyun/erdma": "1"}},
			{Name: "erdma-fake-2", Labels: map[string]string{"aliyun.accelerator/erdma": "true"}, Capacity: map[string]string{"aliyun/erdma": "1"}},
			{Name: "cpu-fake", Labels: map[string]string{"node.kubernetes.io/instance-type": "ecs.g7.xlarge"}},
		},
	})
	ctx := t.Context()
	_, err = c.ImportImage(ctx, archive)
	require.NoError(t, err)
	t.Logf("lab up with the image imported in %.1f s", time.Since(start).Seconds())

	dir := deployCopy(t)
	agent := kustomize(t, dir)
	prove := kustomize(t, filepath.Join(dir, "prove"))

	t.Run("server-side validation", func(t *testing.T) {
		// The namespace must exist before a dry run of what goes in it.
		_, err := c.KubectlWithInput(ctx, list(t, find(t, agent, "Namespace", "erdmakit")), "apply", "-f", "-")
		require.NoError(t, err)
		for name, objs := range map[string][]map[string]any{"deploy/kubernetes": agent, "deploy/kubernetes/prove": prove} {
			out, err := c.KubectlWithInput(ctx, list(t, objs...), "apply", "--dry-run=server", "-f", "-")
			require.NoError(t, err, "%s: %s", name, out)
			assert.Contains(t, string(out), "(server dry run)")
		}
	})

	// Apply for real, then hold each service account to its rules.
	hosts := filepath.Join(root, "testdata/hosts")
	ds := labNodeAgent(t, find(t, agent, "DaemonSet", "erdmakit-node-agent"), c, hosts, "ebmgn8is-healthy.tar.gz")
	var objs []map[string]any
	for _, o := range agent {
		if o["kind"] != "DaemonSet" {
			objs = append(objs, o)
		}
	}
	out, err := c.KubectlWithInput(ctx, list(t, append(objs, ds)...), "apply", "-f", "-")
	require.NoError(t, err, "%s", out)

	t.Run("rbac", func(t *testing.T) {
		for _, o := range prove {
			if o["kind"] == "ServiceAccount" || o["kind"] == "Role" || o["kind"] == "RoleBinding" {
				_, err := c.KubectlWithInput(ctx, list(t, o), "apply", "-f", "-")
				require.NoError(t, err)
			}
		}
		// What a service account without bindings may do (discovery,
		// self-reviews) is every account's; beyond it, exactly the rules.
		base := canI(t, c, "nobody")
		extra := func(sa string) []string {
			var out []string
			for _, r := range canI(t, c, sa) {
				if !slices.Contains(base, r) {
					out = append(out, r)
				}
			}
			return out
		}
		assert.ElementsMatch(t, []string{"nodes [] [] [get patch]", "nodes/status [] [] [patch]"}, extra("erdmakit-node-agent"))
		assert.ElementsMatch(t, []string{"pods [] [] [get list]", "jobs.batch [] [erdmakit-prove] [get]"}, extra("erdmakit-prove"))
		for _, tt := range []struct {
			sa, verb, what, ns string
			want               bool
		}{
			{"erdmakit-node-agent", "patch", "nodes/status", "", true},
			{"erdmakit-node-agent", "update", "nodes", "", false},
			{"erdmakit-node-agent", "delete", "nodes", "", false},
			{"erdmakit-node-agent", "list", "pods", "erdmakit", false},
			{"erdmakit-node-agent", "get", "secrets", "erdmakit", false},
			{"erdmakit-prove", "list", "pods", "erdmakit", true},
			{"erdmakit-prove", "list", "pods", "default", false},
			{"erdmakit-prove", "get", "jobs.batch/erdmakit-prove", "erdmakit", true},
			{"erdmakit-prove", "get", "jobs.batch/other", "erdmakit", false},
			{"erdmakit-prove", "get", "secrets", "erdmakit", false},
			{"erdmakit-prove", "patch", "nodes", "", false},
			{"erdmakit-prove", "create", "pods", "erdmakit", false},
		} {
			args := []string{"auth", "can-i", tt.verb, tt.what, "--as=system:serviceaccount:erdmakit:" + tt.sa}
			if tt.ns != "" {
				args = append(args, "-n", tt.ns)
			}
			out, _ := c.Kubectl(ctx, args...) // exit 1 for "no"
			assert.Equal(t, map[bool]string{true: "yes", false: "no"}[tt.want], strings.TrimSpace(string(out)), "%s %s", tt.sa, strings.Join(args[2:4], " "))
		}
	})

	node := c.NodeName()
	t.Run("node agent: healthy", func(t *testing.T) {
		cond := waitCondition(t, c, node, ConditionTrue, 2*time.Minute)
		assert.Equal(t, ReasonPassed, cond.Reason)
		n := getNode(t, c, node)
		assert.Equal(t, "true", n.Labels[LabelReady])
		assert.Equal(t, "ok", n.Labels[LabelStatus])
		// The DaemonSet selects the eRDMA nodes only (kwok's count, in name).
		out, err := c.Kubectl(ctx, "-n", "erdmakit", "get", "pods", "-l", "app.kubernetes.io/component=node-agent", "-o", "jsonpath={.items[*].spec.nodeName}")
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{node, "erdma-fake-1", "erdma-fake-2"}, strings.Fields(string(out)))
		// The exporter, on the node's network (hostNetwork).
		var body string
		require.NoError(t, c.WaitFor(ctx, "the node agent's /metrics", time.Minute, func(ctx context.Context) (bool, error) {
			req, err := http.NewRequestWithContext(ctx, "GET", "http://127.0.0.1:19810/metrics", nil)
			if err != nil {
				return false, err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false, nil
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
			body = string(b)
			return err == nil && resp.StatusCode == 200, nil
		}))
		assert.Contains(t, body, `erdmakit_doctor_check{`)
	})

	t.Run("node agent: no peermem", func(t *testing.T) {
		ds := labNodeAgent(t, find(t, agent, "DaemonSet", "erdmakit-node-agent"), c, hosts, "no-peermem.tar.gz")
		_, err := c.KubectlWithInput(ctx, list(t, ds), "apply", "-f", "-")
		require.NoError(t, err)
		cond := waitCondition(t, c, node, ConditionFalse, 2*time.Minute)
		assert.Contains(t, cond.Reason, "GdrPeermem")
		assert.Contains(t, cond.Message, "gdr-peermem")
		n := getNode(t, c, node)
		assert.Equal(t, "false", n.Labels[LabelReady])
		assert.Equal(t, "fail", n.Labels[LabelStatus])
		t.Logf("ERDMAReady: %s %s: %s", cond.Status, cond.Reason, cond.Message)
	})
	t.Run("node agent: the controller's step", func(t *testing.T) {
		// A port down with no IP on its ERI: on Kubernetes that is
		// ack-erdma-controller's agent's to fix, and the message says so.
		ds := labNodeAgent(t, find(t, agent, "DaemonSet", "erdmakit-node-agent"), c, hosts, "port-down-no-ip.tar.gz")
		_, err := c.KubectlWithInput(ctx, list(t, ds), "apply", "-f", "-")
		require.NoError(t, err)
		var cond Condition
		require.NoError(t, c.WaitFor(ctx, "ERDMAReady names port-active", 2*time.Minute, func(ctx context.Context) (bool, error) {
			cond = waitCondition(t, c, node, ConditionFalse, time.Minute)
			return strings.Contains(cond.Message, "port-active"), nil
		}))
		assert.Contains(t, cond.Message, "ack-erdma-controller's agent")
		t.Logf("ERDMAReady: %s %s: %s", cond.Status, cond.Reason, cond.Message)
	})
	if d := os.Getenv("KUBE_RECORD_TESTDATA"); d != "" {
		// The API server's own answers, as the fuzz tests' seeds.
		for file, path := range map[string]string{
			"real-node.json": "/api/v1/nodes/" + node,
			"real-pods.json": "/api/v1/namespaces/erdmakit/pods?labelSelector=app.kubernetes.io%2Fcomponent%3Dnode-agent",
		} {
			out, err := c.Kubectl(ctx, "get", "--raw", path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(d, file), out, 0o644))
		}
	}
	t.Run("removal", func(t *testing.T) {
		// docs/kubernetes.md's removal: the agents stopped first, then
		// erdmakit kube clear once per node with the agent's account.
		_, err := c.Kubectl(ctx, "-n", "erdmakit", "delete", "ds", "erdmakit-node-agent", "--wait=true")
		require.NoError(t, err)
		require.NoError(t, c.WaitFor(ctx, "the node agents gone", time.Minute, func(ctx context.Context) (bool, error) {
			out, err := c.Kubectl(ctx, "-n", "erdmakit", "get", "pods", "-l", "app.kubernetes.io/component=node-agent", "-o", "name")
			return len(strings.TrimSpace(string(out))) == 0, err
		}))
		args := []string{"-n", "erdmakit", "run", "erdmakit-clear-" + node, "--restart=Never", "--image=" + kubelab.ErdmakitImage,
			"--image-pull-policy=Never", "--env=NODE_NAME=" + node,
			`--overrides={"spec":{"nodeName":"` + node + `","serviceAccountName":"erdmakit-node-agent","hostNetwork":true}}`}
		for k, v := range c.APIServerEnv() { // the lab's (see labEnv)
			args = append(args, "--env="+k+"="+v)
		}
		out, err := c.Kubectl(ctx, append(args, "--", "erdmakit", "kube", "clear")...)
		require.NoError(t, err, "%s", out)
		_, err = c.WaitForPodPhase(ctx, "erdmakit", "erdmakit-clear-"+node, time.Minute, "Succeeded")
		logs, _ := c.PodLogs("erdmakit", "erdmakit-clear-"+node)
		require.NoError(t, err, logs)
		assert.Contains(t, logs, "ERDMAReady and the erdmakit.io labels removed")
		n := getNode(t, c, node)
		_, ok := n.Condition(ConditionType)
		assert.False(t, ok)
		assert.NotContains(t, n.Labels, LabelReady)
		assert.NotContains(t, n.Labels, LabelStatus)
		_, ok = n.Condition("Ready")
		assert.True(t, ok, "the kubelet's conditions stay")
	})

	t.Run("node agent --once --json", func(t *testing.T) {
		// docs/kubernetes.md's JSON, from one round in a pod with the
		// agent's account (exit 0: the recording is healthy).
		env := []any{map[string]any{"name": "NODE_NAME", "value": node}}
		for k, v := range c.APIServerEnv() {
			env = append(env, map[string]any{"name": k, "value": v})
		}
		pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "erdmakit-once", "namespace": "erdmakit"},
			"spec": map[string]any{"nodeName": node, "serviceAccountName": "erdmakit-node-agent", "hostNetwork": true, "restartPolicy": "Never",
				"containers": []any{map[string]any{"name": "once", "image": kubelab.ErdmakitImage, "imagePullPolicy": "Never", "env": env,
					"command":      []any{"erdmakit", "kube", "node-agent", "--once", "--json", "--no-metadata", "--root=/recording/ebmgn8is-healthy.tar.gz"},
					"volumeMounts": []any{map[string]any{"name": "recording", "mountPath": "/recording", "readOnly": true}}}},
				"volumes": []any{map[string]any{"name": "recording", "hostPath": map[string]any{"path": hosts, "type": "Directory"}}}}}
		_, err := c.KubectlWithInput(ctx, list(t, pod), "apply", "-f", "-")
		require.NoError(t, err)
		_, err = c.WaitForPodPhase(ctx, "erdmakit", "erdmakit-once", time.Minute, "Succeeded")
		logs, _ := c.PodLogs("erdmakit", "erdmakit-once")
		require.NoError(t, err, logs)
		var s map[string]any
		// The log has stderr's lines too: the JSON starts at a line "{"
		// and ends at a line "}".
		a, b := strings.Index("\n"+logs, "\n{\n"), strings.LastIndex(logs, "\n}")
		require.True(t, a >= 0 && b > a, logs)
		require.NoError(t, json.Unmarshal([]byte(logs[a:b+2]), &s), logs)
		assert.Equal(t, map[string]any{"status": "ok", "ready": "True", "reason": ReasonPassed, "message": "erdmakit doctor: ok (18 ok, 1 skip)"}, s["verdict"])
		assert.Equal(t, true, s["condition_patched"])
		assert.Equal(t, true, s["labels_patched"])
		assert.Equal(t, true, s["changed"])
		assert.Equal(t, "true", getNode(t, c, node).Labels[LabelReady])
	})

	t.Run("prove job over simulated ranks", func(t *testing.T) {
		results := t.TempDir()
		require.NoError(t, os.Chmod(results, 0o777))
		var objs []map[string]any
		for _, o := range prove {
			if o["kind"] == "Job" {
				o = labProveJob(t, o, c, hosts, results, 2)
			}
			objs = append(objs, o)
		}
		started := time.Now()
		out, err := c.KubectlWithInput(ctx, list(t, objs...), "apply", "-f", "-")
		require.NoError(t, err, "%s", out)
		got, err := c.WaitForJob(ctx, "erdmakit", "erdmakit-prove", 3*time.Minute)
		require.NoError(t, err)
		t.Logf("the prove Job ended %s in %.1f s", got, time.Since(started).Seconds())
		out, err = c.Kubectl(ctx, "-n", "erdmakit", "get", "pods", "-l", "batch.kubernetes.io/job-name=erdmakit-prove,batch.kubernetes.io/job-completion-index=0", "-o", "jsonpath={.items[0].metadata.name}")
		require.NoError(t, err)
		logs, err := c.PodLogs("erdmakit", strings.TrimSpace(string(out)))
		require.NoError(t, err)
		t.Logf("rank 0's log:\n%s", logs)
		assert.Equal(t, "Complete", got)
		assert.Contains(t, logs, "proven")
		raw, err := os.ReadFile(filepath.Join(results, "proof.json"))
		require.NoError(t, err)
		var p struct {
			Verdict string `json:"verdict"`
			Size    int    `json:"size"`
			Hosts   []struct {
				Rank int `json:"rank"`
			} `json:"hosts"`
		}
		require.NoError(t, json.Unmarshal(raw, &p))
		assert.Equal(t, "proven", p.Verdict)
		assert.Equal(t, 2, p.Size)
		assert.Len(t, p.Hosts, 2)
		if d := os.Getenv("KUBE_RECORD_TESTDATA"); d != "" {
			out, err := c.Kubectl(ctx, "get", "--raw", "/apis/batch/v1/namespaces/erdmakit/jobs/erdmakit-prove")
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(d, "real-job.json"), out, 0o644))
		}
		page, err := os.ReadFile(filepath.Join(results, "proof.html"))
		require.NoError(t, err)
		assert.Contains(t, string(page), "proven")
	})

	t.Run("prove job scheduling: one rank per eRDMA node", func(t *testing.T) {
		// The Job as shipped (eRDMA node affinity, anti-affinity,
		// aliyun/erdma), 3 ranks over 3 eRDMA nodes (the real one and
		// kwok's two) and a node without eRDMA: one rank on each eRDMA node.
		// Its pods only sleep: placement is the test.
		j := deepCopy(t, find(t, prove, "Job", "erdmakit-prove"))
		j["metadata"].(map[string]any)["name"] = "erdmakit-prove-sched"
		spec := j["spec"].(map[string]any)
		spec["completions"], spec["parallelism"] = 3, 3
		pod := dig(j, "spec", "template", "spec").(map[string]any)
		ct := dig(pod, "containers", "0").(map[string]any)
		ct["image"], ct["imagePullPolicy"] = kubelab.ErdmakitImage, "Never"
		ct["command"], ct["args"] = []any{"sleep", "20"}, nil
		pod["volumes"], ct["volumeMounts"] = nil, nil
		_, err := c.KubectlWithInput(ctx, list(t, j), "apply", "-f", "-")
		require.NoError(t, err)
		var placed []string
		require.NoError(t, c.WaitFor(ctx, "3 ranks placed", time.Minute, func(ctx context.Context) (bool, error) {
			out, err := c.Kubectl(ctx, "-n", "erdmakit", "get", "pods", "-l", "batch.kubernetes.io/job-name=erdmakit-prove-sched", "-o", "jsonpath={.items[*].spec.nodeName}")
			placed = strings.Fields(string(out))
			return len(placed) == 3, err
		}))
		assert.ElementsMatch(t, []string{node, "erdma-fake-1", "erdma-fake-2"}, placed)
	})
}

// list wraps objects in a v1 List for kubectl apply -f -.
func list(t *testing.T, objs ...map[string]any) []byte {
	items := make([]any, len(objs))
	for i, o := range objs {
		items[i] = o
	}
	b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	require.NoError(t, err)
	return b
}

func deepCopy(t *testing.T, o map[string]any) map[string]any {
	b, err := json.Marshal(o)
	require.NoError(t, err)
	var c map[string]any
	require.NoError(t, json.Unmarshal(b, &c))
	return c
}

// labEnv adds the lab's API server address to a container (no kube-proxy
// routes the kubernetes Service here; see internal/kubelab).
func labEnv(ct map[string]any, c *kubelab.Cluster) {
	env, _ := ct["env"].([]any)
	for k, v := range c.APIServerEnv() {
		env = append(env, map[string]any{"name": k, "value": v})
	}
	ct["env"] = env
}

// labNodeAgent is the DaemonSet as shipped, run against a recorded host:
// the lab's image, --root the recording (hostPath of testdata/hosts, read
// only), a 2 s interval, the exporter on a port of its own, and no
// /dev/infiniband mount (this machine has none).
func labNodeAgent(t *testing.T, ds map[string]any, c *kubelab.Cluster, hosts, recording string) map[string]any {
	ds = deepCopy(t, ds)
	pod := dig(ds, "spec", "template", "spec").(map[string]any)
	ct := dig(pod, "containers", "0").(map[string]any)
	ct["image"], ct["imagePullPolicy"] = kubelab.ErdmakitImage, "Never"
	ct["args"] = []any{"--interval=2s", "--heartbeat=1m", "--listen=:19810", "--no-metadata", "--root=/recording/" + recording}
	ct["ports"] = []any{map[string]any{"name": "metrics", "containerPort": 19810}}
	labEnv(ct, c)
	var mounts []any
	for _, m := range ct["volumeMounts"].([]any) {
		if dig(m, "name") != "dev-infiniband" {
			mounts = append(mounts, m)
		}
	}
	ct["volumeMounts"] = append(mounts, map[string]any{"name": "recording", "mountPath": "/recording", "readOnly": true})
	var vols []any
	for _, v := range pod["volumes"].([]any) {
		if dig(v, "name") != "dev-infiniband" {
			vols = append(vols, v)
		}
	}
	pod["volumes"] = append(vols, map[string]any{"name": "recording", "hostPath": map[string]any{"path": hosts, "type": "Directory"}})
	return ds
}

// labProveJob is the prove Job as shipped, over ranks simulated on the one
// real node: n ranks, no anti-affinity (they share the node), each with
// the healthy recording as its host and an emulated device for the mesh,
// the results under results.
func labProveJob(t *testing.T, j map[string]any, c *kubelab.Cluster, hosts, results string, n int) map[string]any {
	j = deepCopy(t, j)
	spec := j["spec"].(map[string]any)
	spec["completions"], spec["parallelism"] = n, n
	pod := dig(j, "spec", "template", "spec").(map[string]any)
	pod["nodeName"] = c.NodeName()
	delete(pod["affinity"].(map[string]any), "podAntiAffinity")
	ct := dig(pod, "containers", "0").(map[string]any)
	ct["image"], ct["imagePullPolicy"] = kubelab.ErdmakitImage, "Never"
	ct["args"] = append(ct["args"].([]any), "--root=/recording/ebmgn8is-healthy.tar.gz", "--emulate-gbps=10", "-D", "1s", "--join-timeout=2m")
	labEnv(ct, c)
	ct["volumeMounts"] = append(ct["volumeMounts"].([]any), map[string]any{"name": "recording", "mountPath": "/recording", "readOnly": true})
	var vols []any
	for _, v := range pod["volumes"].([]any) {
		if dig(v, "name") == "results" {
			v = map[string]any{"name": "results", "hostPath": map[string]any{"path": results, "type": "Directory"}}
		}
		vols = append(vols, v)
	}
	pod["volumes"] = append(vols, map[string]any{"name": "recording", "hostPath": map[string]any{"path": hosts, "type": "Directory"}})
	return j
}

// canI is `kubectl auth can-i --list` as a service account of erdmakit, one
// rule per line with its columns (RESOURCES NON-RESOURCE-URLS
// RESOURCE-NAMES VERBS) one space apart.
func canI(t *testing.T, c *kubelab.Cluster, sa string) []string {
	out, err := c.Kubectl(t.Context(), "auth", "can-i", "--list", "-n", "erdmakit", "--as=system:serviceaccount:erdmakit:"+sa)
	require.NoError(t, err)
	var rules []string
	for i, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if i > 0 { // the header
			rules = append(rules, strings.Join(strings.Fields(l), " "))
		}
	}
	return rules
}

func getNode(t *testing.T, c *kubelab.Cluster, name string) *Node {
	out, err := c.Kubectl(t.Context(), "get", "node", name, "-o", "json")
	require.NoError(t, err)
	n, err := DecodeNode(out)
	require.NoError(t, err)
	return n
}

// waitCondition waits for the node's ERDMAReady to have status.
func waitCondition(t *testing.T, c *kubelab.Cluster, node, status string, timeout time.Duration) Condition {
	var cond Condition
	err := c.WaitFor(t.Context(), "ERDMAReady "+status+" on "+node, timeout, func(ctx context.Context) (bool, error) {
		out, err := c.Kubectl(ctx, "get", "node", node, "-o", "json")
		if err != nil {
			return false, err
		}
		n, err := DecodeNode(out)
		if err != nil {
			return false, err
		}
		var ok bool
		cond, ok = n.Condition(ConditionType)
		return ok && cond.Status == status, nil
	})
	if err != nil {
		out, _ := c.Kubectl(t.Context(), "-n", "erdmakit", "get", "pods", "-o", "wide")
		t.Logf("pods:\n%s", out)
		if names, _ := c.Kubectl(t.Context(), "-n", "erdmakit", "get", "pods", "--field-selector=spec.nodeName="+node, "-o", "jsonpath={.items[*].metadata.name}"); len(names) > 0 {
			for _, p := range strings.Fields(string(names)) {
				l, _ := c.PodLogs("erdmakit", p)
				t.Logf("%s's log:\n%s", p, l)
			}
		}
	}
	require.NoError(t, err)
	return cond
}
