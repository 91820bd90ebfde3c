package kube

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/erdmakit/erdmakit/internal/fixture"
)

var updateHelm = flag.Bool("update-helm", false, "write deploy/helm/erdmakit/templates from deploy/kubernetes")

// The Helm chart's values, where the kustomization's rendering has fixed
// values: each sentinel is set in the rendered objects, then replaced by its
// template expression in the YAML text.
var helmExprs = []struct{ sentinel, expr string }{
	{"__IMAGE__", "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"},
	{"__NODES__", "{{ .Values.prove.nodes }}"},
	{"__SECRET__", `{{ required "prove.fleetSecret is required with prove.enabled" .Values.prove.fleetSecret | b64enc }}`},
	{"namespace: erdmakit\n", "namespace: {{ .Release.Namespace }}\n"},
}

// helmTemplates renders deploy/kubernetes and turns it into the chart's
// templates: the node agent's objects (not the Namespace: helm install
// --create-namespace makes it), the ServiceMonitor's and the prove Job's, the
// last two behind their values.
func helmTemplates(t *testing.T) map[string]string {
	dir := deployCopy(t)
	agent := kustomize(t, dir)
	prove := kustomize(t, filepath.Join(dir, "prove"))
	raw, err := os.ReadFile(filepath.Join(dir, "components/servicemonitor/servicemonitor.yaml"))
	require.NoError(t, err)
	var monitor []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var o map[string]any
		if dec.Decode(&o) != nil {
			break
		}
		monitor = append(monitor, o)
	}
	require.Len(t, monitor, 2)

	var secretName string
	for _, o := range prove {
		if o["kind"] == "Secret" {
			secretName = dig(o, "metadata", "name").(string)
			o["metadata"].(map[string]any)["name"] = "erdmakit-fleet"
			o["data"] = map[string]any{"ERDMAKIT_FLEET_SECRET": "__SECRET__"}
		}
		if o["kind"] == "Job" {
			o["spec"].(map[string]any)["completions"] = "__NODES__"
			o["spec"].(map[string]any)["parallelism"] = "__NODES__"
		}
	}
	require.NotEmpty(t, secretName)
	write := func(objs []map[string]any, skip string) string {
		var b bytes.Buffer
		for _, o := range objs {
			if o["kind"] == skip {
				continue
			}
			if spec, ok := dig(o, "spec", "template", "spec").(map[string]any); ok {
				for _, c := range spec["containers"].([]any) {
					c.(map[string]any)["image"] = "__IMAGE__"
				}
			}
			y, err := yaml.Marshal(o)
			require.NoError(t, err)
			b.WriteString("---\n")
			b.Write(y)
		}
		s := strings.ReplaceAll(b.String(), secretName, "erdmakit-fleet")
		for _, e := range helmExprs {
			s = strings.ReplaceAll(s, e.sentinel, e.expr)
		}
		return s
	}
	head := "# Generated from deploy/kubernetes by `go test ./kube -run TestHelmChart -update-helm`: edit the kustomization, not this.\n"
	return map[string]string{
		"node-agent.yaml":     head + write(agent, "Namespace"),
		"servicemonitor.yaml": head + "{{- if .Values.serviceMonitor.enabled }}\n" + write(monitor, "") + "{{- end }}\n",
		"prove.yaml":          head + "{{- if .Values.prove.enabled }}\n" + write(prove, "") + "{{- end }}\n",
	}
}

// The chart's templates are the kustomization's objects: regenerate them
// with -update-helm after changing deploy/kubernetes.
func TestHelmChartMatchesKustomization(t *testing.T) {
	root, err := fixture.ModuleRoot()
	require.NoError(t, err)
	dir := filepath.Join(root, "deploy/helm/erdmakit/templates")
	for name, want := range helmTemplates(t) {
		path := filepath.Join(dir, name)
		if *updateHelm {
			require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
			continue
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, want, string(got), "%s differs from deploy/kubernetes: go test ./kube -run TestHelmChart -update-helm", path)
	}
}
