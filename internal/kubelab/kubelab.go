package kubelab

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/erdmakit/erdmakit/internal/execx"
)

// Version is the Kubernetes release the lab runs (tools/kubelab/build.sh).
const Version = "v1.37.2"

// PauseImage is the sandbox image the lab builds (kubelab-pause) and
// imports before the kubelet starts.
const PauseImage = "localhost/kubelab/pause:1"

// ErdmakitImage is the name under which ErdmakitArchive's image is
// imported: a pod's `image:` says this (imagePullPolicy IfNotPresent or
// Never; nothing can be pulled here).
const ErdmakitImage = "localhost/erdmakit:kubelab"

// Options say what Start builds.
type Options struct {
	// Dir is the scratch directory everything is written under (required;
	// a test passes t.TempDir()). The containerd socket lives there, so
	// the path must be short (a unix socket path has 108 bytes).
	Dir string
	// Cache is the directory tools/kubelab/build.sh filled (default:
	// $KUBELAB_CACHE, else ~/.cache/erdmakit-kubelab/<Version>).
	Cache string
	// NodeName is the real node's name (default "kubelab").
	NodeName string
	// NodeLabels are set on the real node at registration (kubelet
	// --node-labels; the kubernetes.io/ and k8s.io/ prefixes are limited
	// to the kubelet's own set).
	NodeLabels map[string]string
	// NodeCapacity adds extended resources to the real node's capacity and
	// allocatable once it is Ready, e.g. {"aliyun/erdma": "1"} as ACK's
	// erdma device plugin advertises (patched on the node's status).
	NodeCapacity map[string]string
	// NodeIP is the real node's InternalIP: the address hostNetwork pods
	// get as their pod IP and that the kubelet listens on. "" (default):
	// this machine's default-route IPv4 address, when it has one; "none":
	// no address (the kubelet rejects loopback addresses), pods then have
	// no IP and the apiserver cannot reach the kubelet (no logs, no exec).
	NodeIP string
	// FakeNodes are added by kwok (which starts only when there are any,
	// or with AddFakeNode). They turn Ready and run pods in name only.
	FakeNodes []FakeNode
	// Logger receives progress (default: discard).
	Logger *slog.Logger
}

// FakeNode is a node kwok keeps alive: it is Ready and its pods turn
// Running (and Succeeded, where a Job's pod would end) without running
// anything, so scheduling, anti-affinity, DaemonSet and Job placement can
// be tested over more nodes than the one real node.
type FakeNode struct {
	Name   string
	Labels map[string]string
	// Capacity is the node's capacity and allocatable; cpu, memory and
	// pods default to 32, 256Gi and 110, and extended resources (e.g.
	// "aliyun/erdma": "1") are added as given.
	Capacity map[string]string
	// Taints in kubectl's form, e.g. "kwok.x-k8s.io/node=fake:NoSchedule".
	Taints []string
}

// Cluster is a running lab: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, containerd, kubelet (one real node) and, with fake
// nodes, kwok. Close ends them and undoes what they changed on the host.
type Cluster struct {
	dir    string
	bin    string
	stages string
	node   string
	nodeIP string
	log    *slog.Logger
	pki    *pki
	ports  struct {
		etcd, etcdPeer, apiserver, controllerManager, scheduler, kubelet, kubeletHealthz, kwok int
	}
	procs     []*proc
	lock      *os.File
	mu        sync.Mutex
	kwok      *proc
	hostState *hostState
	closeOnce sync.Once
	closeErr  error
	// Timings are the seconds each step of Start took (etcd, apiserver,
	// containerd, node ready, ...), for the tests to report.
	Timings []Timing
}

// Timing is one step of Start and how long it took.
type Timing struct {
	Step     string
	Duration time.Duration
}

// DefaultCache is where tools/kubelab/build.sh puts the binaries:
// $KUBELAB_CACHE, else ~/.cache/erdmakit-kubelab/<Version>.
func DefaultCache() string {
	if d := os.Getenv("KUBELAB_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/root"
	}
	return filepath.Join(home, ".cache", "erdmakit-kubelab", Version)
}

// Binaries are the programs Start runs from the cache's bin directory.
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl", "kwok"}

// HostPrograms are the programs Start runs from this machine's PATH
// (Debian: containerd, runc, containernetworking-plugins for loopback).
var HostPrograms = []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc"}

// loopbackPlugin is the CNI loopback plugin of containernetworking-plugins.
var loopbackPlugins = []string{"/usr/lib/cni/loopback", "/opt/cni/bin/loopback"}

// Start builds the lab under o.Dir and returns it once the real node is
// Ready (and the fake nodes, if any). On error everything started is
// ended again. ctx bounds the start; the processes live until Close.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Dir == "" {
		return nil, errors.New("kubelab: Options.Dir is required")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if n := len(filepath.Join(dir, "containerd/containerd.sock")); n > 100 {
		return nil, fmt.Errorf("kubelab: Options.Dir %s is too long for a unix socket path (%d bytes under it; at most 100)", dir, n)
	}
	if o.Cache == "" {
		o.Cache = DefaultCache()
	}
	if o.NodeName == "" {
		o.NodeName = "kubelab"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := Missing(o.Cache); err != nil {
		return nil, err
	}
	var nodeIP string
	switch o.NodeIP {
	case "":
		nodeIP = HostAddress()
	case "none":
	default:
		if ip := net.ParseIP(o.NodeIP); ip == nil || ip.IsLoopback() {
			return nil, fmt.Errorf("kubelab: Options.NodeIP %q: want an address of this machine that is not loopback, or \"none\"", o.NodeIP)
		}
		nodeIP = o.NodeIP
	}
	c := &Cluster{dir: dir, bin: filepath.Join(o.Cache, "bin"), stages: filepath.Join(o.Cache, "kwok-stages"), node: o.NodeName, nodeIP: nodeIP, log: o.Logger}
	// One lab at a time on a machine: two kubelets would share the
	// kubepods cgroups, the sysctls and /run/containerd.
	if c.lock, err = hostLock(ctx, c.log); err != nil {
		return nil, fmt.Errorf("kubelab: %w", err)
	}
	if err := c.start(ctx, o); err != nil {
		if cerr := c.Close(); cerr != nil {
			err = fmt.Errorf("%w (and closing: %v)", err, cerr)
		}
		return nil, fmt.Errorf("kubelab: %w", err)
	}
	return c, nil
}

func (c *Cluster) step(name string, since time.Time) {
	d := time.Since(since)
	c.Timings = append(c.Timings, Timing{name, d})
	c.log.Info("kubelab", "step", name, "took", d.Round(time.Millisecond))
}

func (c *Cluster) start(ctx context.Context, o Options) error {
	t0 := time.Now()
	for _, d := range []string{"logs", "etcd", "pod-logs", "kubelet", "cni/bin", "cni/net.d", "containerd", "images", "manifests", "flexvolume", "certs"} {
		if err := os.MkdirAll(filepath.Join(c.dir, d), 0o755); err != nil {
			return err
		}
	}
	for _, p := range []*int{&c.ports.etcd, &c.ports.etcdPeer, &c.ports.apiserver, &c.ports.controllerManager, &c.ports.scheduler, &c.ports.kubelet, &c.ports.kubeletHealthz, &c.ports.kwok} {
		n, err := freePort()
		if err != nil {
			return err
		}
		*p = n
	}
	var err error
	if c.pki, err = newPKI(filepath.Join(c.dir, "pki")); err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	p := c.pki
	hosts := []string{"127.0.0.1", "localhost", "10.0.0.1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	nodeHosts := []string{"127.0.0.1", "localhost", c.node}
	if c.nodeIP != "" {
		nodeHosts = append(nodeHosts, c.nodeIP)
	}
	for _, cert := range []struct {
		name, cn string
		orgs     []string
		hosts    []string
	}{
		{"apiserver", "kube-apiserver", nil, hosts},
		{"admin", "kubelab-admin", []string{"system:masters"}, nil},
		{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}, nil},
		{"controller-manager", "system:kube-controller-manager", nil, []string{"127.0.0.1"}},
		{"scheduler", "system:kube-scheduler", nil, []string{"127.0.0.1"}},
		{"kubelet", "system:node:" + c.node, []string{"system:nodes"}, nil},
		{"kubelet-serving", "system:node:" + c.node, []string{"system:nodes"}, nodeHosts},
	} {
		if err := p.issue(cert.name, cert.cn, cert.orgs, cert.hosts...); err != nil {
			return err
		}
	}
	for _, k := range []string{"admin", "controller-manager", "scheduler", "kubelet"} {
		if err := c.kubeconfig(c.path(k+".kubeconfig"), k); err != nil {
			return err
		}
	}
	c.step("certificates", t0)

	// The host state the kubelet and containerd change, saved before they run.
	if c.hostState, err = saveHostState(); err != nil {
		return err
	}

	t := time.Now()
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcd)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdPeer)
	if err := c.run("etcd", c.binary("etcd"), "--name=kubelab", "--data-dir="+c.path("etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kubelab="+peerURL, "--unsafe-no-fsync", "--log-level=warn"); err != nil {
		return err
	}
	if err := c.run("kube-apiserver", c.binary("kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", c.ports.apiserver),
		"--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
		"--cert-dir="+c.path("certs"),
		"--tls-cert-file="+p.path("apiserver.crt"), "--tls-private-key-file="+p.path("apiserver.key"),
		"--client-ca-file="+p.path("ca.crt"),
		"--kubelet-client-certificate="+p.path("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+p.path("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority="+p.path("ca.crt"),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--service-account-key-file="+p.path("sa.pub"),
		"--service-account-signing-key-file="+p.path("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--profiling=false"); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, "kube-apiserver", c.server()+"/readyz", 60*time.Second); err != nil {
		return err
	}
	c.step("etcd and kube-apiserver ready", t)

	t = time.Now()
	cm := c.path("controller-manager.kubeconfig")
	if err := c.run("kube-controller-manager", c.binary("kube-controller-manager"),
		"--kubeconfig="+cm, "--authentication-kubeconfig="+cm, "--authorization-kubeconfig="+cm,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", c.ports.controllerManager),
		"--cert-dir="+c.path("certs"), "--leader-elect=false", "--use-service-account-credentials",
		"--service-account-private-key-file="+p.path("sa.key"), "--root-ca-file="+p.path("ca.crt"),
		"--cluster-signing-cert-file="+p.path("ca.crt"), "--cluster-signing-key-file="+p.path("ca.key"),
		"--flex-volume-plugin-dir="+c.path("flexvolume"), "--profiling=false"); err != nil {
		return err
	}
	sch := c.path("scheduler.kubeconfig")
	if err := c.run("kube-scheduler", c.binary("kube-scheduler"),
		"--kubeconfig="+sch, "--authentication-kubeconfig="+sch, "--authorization-kubeconfig="+sch,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", c.ports.scheduler),
		"--cert-dir="+c.path("certs"), "--leader-elect=false", "--profiling=false"); err != nil {
		return err
	}

	// The sandbox image and the CNI plugin, built from this module.
	if err := c.buildHelpers(ctx); err != nil {
		return err
	}
	if err := os.WriteFile(c.path("containerd/config.toml"), []byte(c.containerdConfig()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(c.path("cni/net.d/10-kubelab.conflist"), []byte(cniConfig), 0o644); err != nil {
		return err
	}
	if err := c.run("containerd", "containerd", "--config="+c.path("containerd/config.toml"), "--log-level=warn"); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "containerd", 30*time.Second, func(ctx context.Context) (bool, error) {
		_, err := execx.Output(ctx, "ctr", "--address", c.containerdSock(), "version")
		return err == nil, nil
	}); err != nil {
		return err
	}
	if _, err := c.ImportImage(ctx, c.path("images/pause.tar")); err != nil {
		return err
	}
	c.step("controller-manager, scheduler, containerd, pause image", t)

	t = time.Now()
	args := []string{"--config=" + c.path("kubelet/config.yaml"), "--kubeconfig=" + c.path("kubelet.kubeconfig"),
		"--root-dir=" + c.path("kubelet/root"), "--cert-dir=" + c.path("kubelet/pki"),
		"--hostname-override=" + c.node, "--v=1"}
	if c.nodeIP != "" {
		args = append(args, "--node-ip="+c.nodeIP)
	}
	if len(o.NodeLabels) > 0 {
		args = append(args, "--node-labels="+joinLabels(o.NodeLabels))
	}
	if err := os.WriteFile(c.path("kubelet/config.yaml"), []byte(c.kubeletConfig()), 0o644); err != nil {
		return err
	}
	if err := c.run("kubelet", c.binary("kubelet"), args...); err != nil {
		return err
	}
	if err := c.WaitForNodeReady(ctx, c.node, 90*time.Second); err != nil {
		return err
	}
	c.step("node Ready", t)
	if len(o.NodeCapacity) > 0 {
		if err := c.PatchNodeCapacity(ctx, c.node, o.NodeCapacity); err != nil {
			return err
		}
	}
	for _, n := range o.FakeNodes {
		if err := c.AddFakeNode(ctx, n); err != nil {
			return err
		}
	}
	c.step("total", t0)
	return nil
}

func (c *Cluster) path(name string) string   { return filepath.Join(c.dir, name) }
func (c *Cluster) binary(name string) string { return filepath.Join(c.bin, name) }

// Dir is the scratch directory (the processes' logs are under logs/).
func (c *Cluster) Dir() string { return c.dir }

// Kubeconfig is the path of a kubeconfig with cluster-admin rights
// (system:masters), for kubectl --kubeconfig or KUBECONFIG.
func (c *Cluster) Kubeconfig() string { return c.path("admin.kubeconfig") }

// Server is the apiserver's URL, https://127.0.0.1:PORT.
func (c *Cluster) Server() string { return c.server() }

// CACert is the path of the cluster's CA certificate (PEM).
func (c *Cluster) CACert() string { return c.pki.path("ca.crt") }

// NodeName is the real node's name.
func (c *Cluster) NodeName() string { return c.node }

// NodeIP is the real node's InternalIP ("" when it has none).
func (c *Cluster) NodeIP() string { return c.nodeIP }

// APIServerEnv is the environment a hostNetwork pod needs for in-cluster
// configuration here: KUBERNETES_SERVICE_HOST=127.0.0.1 and
// KUBERNETES_SERVICE_PORT=<the apiserver's port>. The kubelet sets them to
// the kubernetes Service's ClusterIP and 443, which nothing routes in the
// lab (no kube-proxy); a container's own env entries take precedence over
// the kubelet's, so a lab overlay adds these to the pod spec. The
// service-account token and CA the kubelet mounts are valid as they are.
func (c *Cluster) APIServerEnv() map[string]string {
	return map[string]string{"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": fmt.Sprint(c.ports.apiserver)}
}

// Kubectl runs the cluster's kubectl (the same version as the cluster)
// as cluster-admin and returns its standard output; the error carries its
// standard error.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	return c.KubectlWithInput(ctx, nil, args...)
}

// KubectlWithInput is Kubectl with input on its standard input (for
// `apply -f -`).
func (c *Cluster) KubectlWithInput(ctx context.Context, input []byte, args ...string) ([]byte, error) {
	cmd := execx.Command(ctx, c.binary("kubectl"), append([]string{"--kubeconfig=" + c.Kubeconfig()}, args...)...)
	if input != nil {
		cmd.Stdin = bytes.NewReader(input)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2048 {
			msg = msg[len(msg)-2048:]
		}
		return stdout.Bytes(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, msg)
	}
	return stdout.Bytes(), nil
}

// KubectlPath is the path of the cluster's kubectl binary (e.g. to mount
// into a pod).
func (c *Cluster) KubectlPath() string { return c.binary("kubectl") }

// ImportImage imports an image archive into the node's containerd (ctr
// images import), where pods find it by name, and returns the names it
// imported. The lab's archives are Docker's format (WriteImage; `podman
// save --format docker-archive` writes the same); an OCI archive imports
// under the names its index annotates, if any.
func (c *Cluster) ImportImage(ctx context.Context, archive string) ([]string, error) {
	out, err := execx.Output(ctx, "ctr", "--address", c.containerdSock(), "-n", "k8s.io", "images", "import", "--no-unpack=false", archive)
	if err != nil {
		return nil, fmt.Errorf("importing %s: %w", archive, err)
	}
	var refs []string
	for _, l := range strings.Split(string(out), "\n") {
		// "unpacking localhost/erdmakit:kubelab (sha256:...)...done"
		if rest, ok := strings.CutPrefix(l, "unpacking "); ok {
			if ref, _, ok := strings.Cut(rest, " "); ok {
				refs = append(refs, ref)
			}
		}
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("importing %s: ctr named no image: %s", archive, strings.TrimSpace(string(out)))
	}
	c.log.Info("kubelab: imported", "archive", archive, "images", refs)
	return refs, nil
}

// Images lists the images in the node's containerd (ctr images ls -q).
func (c *Cluster) Images(ctx context.Context) ([]string, error) {
	out, err := execx.Output(ctx, "ctr", "--address", c.containerdSock(), "-n", "k8s.io", "images", "ls", "-q")
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// buildHelpers builds kubelab-pause (into the sandbox image's archive) and
// kubelab-cni from this module, and links the loopback CNI plugin.
func (c *Cluster) buildHelpers(ctx context.Context) error {
	gobin := c.path("helpers")
	cmd := execx.Command(ctx, "go", "build", "-trimpath", "-o", gobin+"/",
		"github.com/erdmakit/erdmakit/internal/kubelab/cmd/kubelab-pause",
		"github.com/erdmakit/erdmakit/internal/kubelab/cmd/kubelab-cni")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building kubelab-pause and kubelab-cni: %w: %s", err, out)
	}
	if err := WriteImage(c.path("images/pause.tar"), Image{Ref: PauseImage, Files: map[string]string{"pause": filepath.Join(gobin, "kubelab-pause")}, Entrypoint: []string{"/pause"}}); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(gobin, "kubelab-cni"), c.path("cni/bin/kubelab-cni")); err != nil {
		return err
	}
	for _, lo := range loopbackPlugins {
		if _, err := os.Stat(lo); err == nil {
			return os.Symlink(lo, c.path("cni/bin/loopback"))
		}
	}
	return fmt.Errorf("no CNI loopback plugin (%s): apt-get install containernetworking-plugins", strings.Join(loopbackPlugins, ", "))
}

// proc is one process of the lab, in its own process group.
type proc struct {
	name   string
	cmd    *exec.Cmd
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	logf   string
}

// run starts name as a process of the lab, its output in logs/NAME.log.
// Its context is the lab's, not the caller's: it lives until Close.
func (c *Cluster) run(name, bin string, args ...string) error {
	logf := c.path("logs/" + name + ".log")
	f, err := os.Create(logf)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := execx.Command(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = c.dir
	p := &proc{name: name, cmd: cmd, cancel: cancel, done: make(chan struct{}), logf: logf}
	if err := cmd.Start(); err != nil {
		cancel()
		_ = f.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	c.log.Info("kubelab: started", "process", name, "pid", cmd.Process.Pid)
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	if name == "kwok" {
		c.kwok = p
	}
	c.mu.Unlock()
	return nil
}

// stop ends p's process group (SIGTERM, SIGKILL after execx.Grace) and
// waits for it.
func (p *proc) stop() {
	p.cancel()
	<-p.done
}

// exited says why p ended, with the tail of its log, or "" while it runs.
func (p *proc) exited() string {
	select {
	case <-p.done:
	default:
		return ""
	}
	return fmt.Sprintf("%s exited (%v); the end of %s:\n%s", p.name, p.err, p.logf, tail(p.logf, 30))
}

// dead is the first lab process that has exited, described, or "".
func (c *Cluster) dead() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		if s := p.exited(); s != "" {
			return s
		}
	}
	return ""
}

// LogTail is the last n lines of the log of a lab process (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, containerd,
// kubelet, kwok).
func (c *Cluster) LogTail(process string, n int) string {
	return tail(c.path("logs/"+process+".log"), n)
}

func tail(file string, n int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls cond every 200 ms until it holds, the timeout passes, ctx
// ends or a lab process dies (then the error says which, with its log).
func (c *Cluster) waitFor(ctx context.Context, what string, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if d := c.dead(); d != "" {
			return fmt.Errorf("waiting for %s: %s", what, d)
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last: %v)", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Cluster) waitHTTP(ctx context.Context, what, url string, timeout time.Duration) error {
	pool := x509.NewCertPool()
	pool.AddCert(c.pki.caCert)
	cert, err := tls.LoadX509KeyPair(c.pki.path("admin.crt"), c.pki.path("admin.key"))
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
	defer client.CloseIdleConnections()
	return c.waitFor(ctx, what, timeout, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("%s: %s: %s", url, resp.Status, body)
		}
		return true, nil
	})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// HostAddress is this machine's IPv4 address on the interface of its
// default route ("" when there is none): the lab's default node IP. Packets
// to it stay on this machine.
func HostAddress() string {
	// A UDP "connection" sends nothing; it only asks the kernel for the
	// source address of the default route.
	conn, err := net.Dial("udp4", "203.0.113.1:9")
	if err != nil {
		return ""
	}
	defer conn.Close()
	ip := conn.LocalAddr().(*net.UDPAddr).IP
	if ip.IsLoopback() || ip.IsUnspecified() {
		return ""
	}
	return ip.String()
}
