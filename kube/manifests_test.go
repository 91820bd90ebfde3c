package kube

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/internal/kubelab"
)

// needKubectl is kubectl's path (PATH's, else the Kubernetes lab's);
// without one the test skips, or fails under CI=true.
func needKubectl(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kubectl")
	if err != nil {
		// The Kubernetes lab builds one (tools/kubelab/build.sh).
		lab := filepath.Join(kubelab.DefaultCache(), "bin", "kubectl")
		if _, serr := os.Stat(lab); serr == nil {
			return lab
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("kubectl not found (CI=true): %v", err)
		}
		t.Skipf("kubectl not found: %v", err)
	}
	return p
}

// deployCopy copies deploy/kubernetes into a temporary directory with a
// fleet secret (the file prove's secretGenerator reads; never committed).
func deployCopy(t *testing.T) string {
	t.Helper()
	root, err := fixture.ModuleRoot()
	require.NoError(t, err)
	dst := filepath.Join(t.TempDir(), "kubernetes")
	require.NoError(t, os.CopyFS(dst, os.DirFS(filepath.Join(root, "deploy/kubernetes"))))
	require.NoError(t, os.WriteFile(filepath.Join(dst, "prove/fleet-secret"), []byte("test-secret-not-for-use\n"), 0o600))
	return dst
}

// kustomize renders a kustomization with kubectl's built-in kustomize.
func kustomize(t *testing.T, dir string) []map[string]any {
	t.Helper()
	cmd := execx.Command(t.Context(), needKubectl(t), "kustomize", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "kubectl kustomize %s: %s", dir, stderr.String())
	var objs []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		objs = append(objs, o)
	}
	return objs
}

func find(t *testing.T, objs []map[string]any, kind, name string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o["kind"] == kind && dig(o, "metadata", "name") == name {
			return o
		}
	}
	t.Fatalf("no %s %s among the rendered objects", kind, name)
	return nil
}

// dig walks maps by key and lists by index ("0").
func dig(v any, path ...string) any {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i := 0
			for _, c := range p {
				i = i*10 + int(c-'0')
			}
			if i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func TestManifestsRender(t *testing.T) {
	dir := deployCopy(t)
	agent := kustomize(t, dir)
	prove := kustomize(t, filepath.Join(dir, "prove"))

	// Namespace and image in one place.
	ns := find(t, agent, "Namespace", "erdmakit")
	assert.Equal(t, "privileged", dig(ns, "metadata", "labels", "pod-security.kubernetes.io/enforce"))
	for _, o := range append(append([]map[string]any{}, agent...), prove...) {
		switch o["kind"] {
		case "Namespace", "ClusterRole", "ClusterRoleBinding":
		default:
			assert.Equal(t, "erdmakit", dig(o, "metadata", "namespace"), "%s %s", o["kind"], dig(o, "metadata", "name"))
		}
	}
	ds := find(t, agent, "DaemonSet", "erdmakit-node-agent")
	job := find(t, prove, "Job", "erdmakit-prove")
	pod := dig(ds, "spec", "template", "spec").(map[string]any)
	c := dig(pod, "containers", "0").(map[string]any)
	jpod := dig(job, "spec", "template", "spec").(map[string]any)
	jc := dig(jpod, "containers", "0").(map[string]any)
	assert.Equal(t, c["image"], jc["image"], "one version for both")
	assert.True(t, strings.HasPrefix(c["image"].(string), "ghcr.io/erdmakit/erdmakit:"), c["image"])

	// The DaemonSet: on ACK's eRDMA nodes, host network, read-only host, no capability.
	assert.Equal(t, true, pod["hostNetwork"])
	assert.Equal(t, "aliyun.accelerator/erdma", dig(pod, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", "0", "matchExpressions", "0", "key"))
	assert.Equal(t, []any{"erdmakit", "kube", "node-agent"}, c["command"])
	assert.Equal(t, "true", dig(ds, "spec", "template", "metadata", "annotations", "prometheus.io/scrape"))
	assert.Equal(t, "9810", dig(ds, "spec", "template", "metadata", "annotations", "prometheus.io/port"))
	assert.Equal(t, []any{"ALL"}, dig(c, "securityContext", "capabilities", "drop"))
	assert.Nil(t, dig(c, "securityContext", "capabilities", "add"))
	assert.Equal(t, false, dig(c, "securityContext", "allowPrivilegeEscalation"))
	assert.Nil(t, dig(c, "securityContext", "privileged"))
	assert.Equal(t, true, dig(pod, "securityContext", "runAsNonRoot"))
	mounts := map[string]any{}
	for _, m := range c["volumeMounts"].([]any) {
		mounts[dig(m, "mountPath").(string)] = dig(m, "readOnly")
	}
	assert.Equal(t, map[string]any{"/sys": true, "/dev/infiniband": true, "/tmp": nil}, mounts)

	// The Job: Indexed, every rank at once, one per node, the secret generated.
	assert.Equal(t, "Indexed", dig(job, "spec", "completionMode"))
	assert.Equal(t, dig(job, "spec", "completions"), dig(job, "spec", "parallelism"))
	assert.Equal(t, true, jpod["hostNetwork"])
	assert.Equal(t, "kubernetes.io/hostname", dig(jpod, "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "0", "topologyKey"))
	assert.Equal(t, []any{"IPC_LOCK"}, dig(jc, "securityContext", "capabilities", "add"))
	var secretRef string
	for _, e := range jc["env"].([]any) {
		if dig(e, "name") == "ERDMAKIT_FLEET_SECRET" {
			secretRef, _ = dig(e, "valueFrom", "secretKeyRef", "name").(string)
		}
	}
	require.True(t, strings.HasPrefix(secretRef, "erdmakit-fleet-"), "the Job names the generated Secret: %q", secretRef)
	find(t, prove, "Secret", secretRef)

	// RBAC: exactly what each needs.
	assert.Equal(t, []any{
		map[string]any{"apiGroups": []any{""}, "resources": []any{"nodes"}, "verbs": []any{"get", "patch"}},
		map[string]any{"apiGroups": []any{""}, "resources": []any{"nodes/status"}, "verbs": []any{"patch"}},
	}, find(t, agent, "ClusterRole", "erdmakit-node-agent")["rules"])
	assert.Equal(t, []any{
		map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"get", "list"}},
		map[string]any{"apiGroups": []any{"batch"}, "resources": []any{"jobs"}, "resourceNames": []any{"erdmakit-prove"}, "verbs": []any{"get"}},
	}, find(t, prove, "Role", "erdmakit-prove")["rules"])
	assert.Equal(t, "erdmakit-node-agent", pod["serviceAccountName"])
	assert.Equal(t, "erdmakit-prove", jpod["serviceAccountName"])

	// The ServiceMonitor component.
	sm := filepath.Join(filepath.Dir(dir), "with-servicemonitor")
	require.NoError(t, os.MkdirAll(sm, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sm, "kustomization.yaml"), []byte("resources: [../kubernetes]\ncomponents: [../kubernetes/components/servicemonitor]\n"), 0o644))
	withSM := kustomize(t, sm)
	m := find(t, withSM, "ServiceMonitor", "erdmakit-node-agent")
	assert.Equal(t, "erdmakit", dig(m, "metadata", "namespace"))
	assert.Equal(t, "metrics", dig(m, "spec", "endpoints", "0", "port"))
}
