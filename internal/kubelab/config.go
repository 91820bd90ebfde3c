package kubelab

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// kubeconfig writes a kubeconfig for the client certificate cert (a pki
// name) against the apiserver at server.
func (c *Cluster) kubeconfig(file, cert string) error {
	p := c.pki
	s := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubelab
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: %s
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: kubelab
  context:
    cluster: kubelab
    user: %s
current-context: kubelab
`, c.server(), p.path("ca.crt"), cert, p.path(cert+".crt"), p.path(cert+".key"), cert)
	return os.WriteFile(file, []byte(s), 0o600)
}

func (c *Cluster) server() string { return fmt.Sprintf("https://127.0.0.1:%d", c.ports.apiserver) }

// containerdConfig: containerd 1.6's CRI with its own root, state and
// socket, runc through cgroupfs, the lab's sandbox image and CNI.
// restrict_oom_score_adj: a machine without CAP_SYS_RESOURCE cannot lower
// oom_score_adj, and without it every sandbox fails ("can't get final
// child's PID from pipe: EOF"). The netns mounts live under state, not in
// /run/netns.
func (c *Cluster) containerdConfig() string {
	d := c.dir
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`, filepath.Join(d, "containerd/root"), filepath.Join(d, "containerd/state"), c.containerdSock(),
		filepath.Join(d, "containerd/ttrpc.sock"), filepath.Join(d, "containerd/opt"), PauseImage,
		filepath.Join(d, "cni/bin"), filepath.Join(d, "cni/net.d"))
}

func (c *Cluster) containerdSock() string { return filepath.Join(c.dir, "containerd/containerd.sock") }

// kubeletConfig: cgroupfs (no systemd here), cgroup v1 allowed, swap
// allowed, pod logs under the scratch directory, webhook authentication
// and authorization, loopback ports. makeIPTablesUtilChains false: else
// the kubelet adds KUBE-FIREWALL (jumped to from INPUT and OUTPUT),
// KUBE-IPTABLES-HINT and KUBE-KUBELET-CANARY to this machine's iptables and
// ip6tables and keeps them there.
func (c *Cluster) kubeletConfig() string {
	p := c.pki
	addr := "127.0.0.1"
	if c.nodeIP != "" {
		addr = c.nodeIP
	}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
podLogsDir: %s
containerRuntimeEndpoint: unix://%s
imageServiceEndpoint: unix://%s
registerNode: true
serializeImagePulls: false
imageGCHighThresholdPercent: 100
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  nodefs.inodesFree: "1%%"
syncFrequency: 5s
fileCheckFrequency: 5s
nodeStatusUpdateFrequency: 5s
volumeStatsAggPeriod: 0s
makeIPTablesUtilChains: false
`, addr, c.ports.kubelet, c.ports.kubeletHealthz, p.path("kubelet-serving.crt"), p.path("kubelet-serving.key"),
		p.path("ca.crt"), filepath.Join(c.dir, "pod-logs"), c.containerdSock(), c.containerdSock())
}

// cniConfig: the loopback plugin (containerd's CRI always adds it) and
// kubelab-cni.
const cniConfig = `{
  "cniVersion": "1.0.0",
  "name": "kubelab",
  "plugins": [{"type": "kubelab-cni"}]
}
`

func joinLabels(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}
