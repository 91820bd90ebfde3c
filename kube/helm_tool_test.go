//go:build helm

package kube

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/fixture"
)

// helmVersion is the helm tools/helm/build.sh builds from the Go proxy.
const helmVersion = "v3.22.1"

// needHelm is helm's path: $HELM, PATH's, or tools/helm/build.sh's cache;
// without one the test skips, or fails under CI=true.
func needHelm(t *testing.T) string {
	if p := os.Getenv("HELM"); p != "" {
		return p
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	home, _ := os.UserHomeDir()
	p := filepath.Join(home, ".cache", "erdmakit-helm", helmVersion, "helm")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("helm not found (CI=true; tools/helm/build.sh builds it)")
	}
	t.Skip("helm not found (tools/helm/build.sh builds it)")
	return ""
}

func helmRun(t *testing.T, args ...string) ([]byte, error) {
	cmd := execx.Command(t.Context(), needHelm(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, errors.New(err.Error() + ": " + stderr.String())
	}
	return out, nil
}

func decodeAll(t *testing.T, b []byte) []map[string]any {
	var objs []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if o != nil {
			objs = append(objs, o)
		}
	}
	return objs
}

// The chart, rendered by helm, is the kustomization's objects with the
// chart's values in place.
func TestHelmChartRenders(t *testing.T) {
	root, err := fixture.ModuleRoot()
	require.NoError(t, err)
	chart := filepath.Join(root, "deploy/helm/erdmakit")
	out, err := helmRun(t, "lint", chart, "--set", "prove.enabled=true", "--set", "prove.fleetSecret=s", "--set", "serviceMonitor.enabled=true")
	require.NoError(t, err, "%s", out)

	_, err = helmRun(t, "template", "erdmakit", chart, "-n", "erdmakit", "--set", "prove.enabled=true")
	assert.ErrorContains(t, err, "prove.fleetSecret is required")

	out, err = helmRun(t, "template", "erdmakit", chart, "-n", "erdmakit", "--set", "image.repository=registry.example.com/erdmakit",
		"--set", "image.tag=9.9.9", "--set", "prove.enabled=true", "--set", "prove.nodes=5", "--set", "prove.fleetSecret=test-secret-not-for-use\n",
		"--set", "serviceMonitor.enabled=true")
	require.NoError(t, err)
	got := decodeAll(t, out)

	dir := deployCopy(t)
	want := kustomize(t, dir)
	want = want[1:] // not the Namespace
	require.Equal(t, "Namespace", kustomize(t, dir)[0]["kind"])
	raw, err := os.ReadFile(filepath.Join(dir, "components/servicemonitor/servicemonitor.yaml"))
	require.NoError(t, err)
	want = append(want, decodeAll(t, raw)...)
	want = append(want, kustomize(t, filepath.Join(dir, "prove"))...)
	for _, o := range want {
		if spec, ok := dig(o, "spec", "template", "spec").(map[string]any); ok {
			for _, c := range spec["containers"].([]any) {
				c.(map[string]any)["image"] = "registry.example.com/erdmakit:9.9.9"
			}
		}
		switch o["kind"] {
		case "Secret":
			o["metadata"].(map[string]any)["name"] = "erdmakit-fleet"
			o["data"] = map[string]any{"ERDMAKIT_FLEET_SECRET": base64.StdEncoding.EncodeToString([]byte("test-secret-not-for-use\n"))}
		case "Job":
			o["spec"].(map[string]any)["completions"], o["spec"].(map[string]any)["parallelism"] = 5, 5
			for _, e := range dig(o, "spec", "template", "spec", "containers", "0", "env").([]any) {
				if ref, ok := dig(e, "valueFrom", "secretKeyRef").(map[string]any); ok {
					ref["name"] = "erdmakit-fleet"
				}
			}
		}
	}
	require.Len(t, got, len(want))
	for _, w := range want {
		g := find(t, got, w["kind"].(string), dig(w, "metadata", "name").(string))
		assert.Equal(t, w, g, "%s %s", w["kind"], dig(w, "metadata", "name"))
	}
}
