package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Outside a pod, the kube commands and an Indexed Job's fleet prove say what
// is missing and exit 3 (their success is TestKubeLab's, on a real cluster).
func TestKubeCommandsOutsideAPod(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	t.Setenv("NODE_NAME", "")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"node-agent without a node", []string{"kube", "node-agent", "--once"}, nil, "no node name: pass --node or set NODE_NAME"},
		{"node-agent outside a pod", []string{"kube", "node-agent", "--once", "--node", "n1"}, nil, "not in a Kubernetes pod"},
		{"clear outside a pod", []string{"kube", "clear"}, map[string]string{"NODE_NAME": "n1"}, "not in a Kubernetes pod"},
		{"fleet prove in an Indexed Job outside a pod", []string{"fleet", "prove", "--no-nccl"}, map[string]string{"JOB_COMPLETION_INDEX": "0"}, "not in a Kubernetes pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			code, _, stderr := runCLI(tt.args...)
			assert.Equal(t, 3, code, stderr)
			assert.Contains(t, stderr, tt.want)
		})
	}
}
