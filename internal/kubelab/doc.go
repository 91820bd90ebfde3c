// Package kubelab is a real Kubernetes cluster on this machine, for tests
// (internal: test-only use). One real node runs pods with Debian's
// containerd and runc; kwok adds fake nodes for scheduling. Everything is
// built from the Go module proxy and Debian's mirror: no registry, no
// network beyond loopback.
//
//	c := kubelab.NewTest(t, kubelab.Options{NodeCapacity: map[string]string{"aliyun/erdma": "1"}})
//	_, err := c.ImportImage(ctx, kubelab.ErdmakitArchive(t)) // localhost/erdmakit:kubelab
//	_, err = c.KubectlWithInput(ctx, manifest, "apply", "-f", "-")
//	_, err = c.WaitForPodPhase(ctx, ns, pod, time.Minute, "Succeeded")
//	logs, err := c.PodLogs(ns, pod)
//
// # What runs
//
// etcd (v3.7.0, what Kubernetes 1.37.2 requires), kube-apiserver,
// kube-controller-manager, kube-scheduler, kubelet and kubectl (all
// v1.37.2) and kwok (v0.8.0), built by tools/kubelab/build.sh into
// ~/.cache/erdmakit-kubelab/v1.37.2/bin (DefaultCache; KUBELAB_CACHE moves
// it); containerd and runc from PATH. Start writes everything under
// Options.Dir: certificates (one CA; clients by CN/O), kubeconfigs,
// etcd's data, containerd's root, state and socket, the kubelet's root and
// pod logs, the processes' logs (logs/NAME.log). Each process runs as argv
// in its own process group (internal/execx); Close ends them, and the
// containers too: containerd's shims run in process groups of their own
// and outlive containerd, so Close kills every process descended from a
// shim of this lab's containerd.
//
// # What the lab changes on the host, and undoes
//
// The kubelet sets vm.overcommit_memory, vm.panic_on_oom, kernel.panic,
// kernel.panic_on_oops and kernel.keys.root_max{keys,bytes}: saved before
// and written back by Close. Whatever appears during the lab under
// /var/log/containers, /var/log/pods, /var/lib/cni, /run/containerd,
// /var/run/netns, /var/lib/kubelet and /etc/cni is removed by Close (mounts
// there detached first), as are the mounts under Options.Dir.
//
// # Findings that shape a test
//
//   - The apiserver listens on 127.0.0.1 only; hostNetwork pods reach it
//     there. The kubernetes Service's ClusterIP (10.0.0.1:443, what the
//     kubelet puts in KUBERNETES_SERVICE_HOST/PORT) routes nowhere: there is
//     no kube-proxy. A container's own env entries win over the kubelet's,
//     so a lab overlay sets KUBERNETES_SERVICE_HOST=127.0.0.1 and
//     KUBERNETES_SERVICE_PORT to the apiserver's port (APIServerEnv) on the
//     containers that talk to the API; the service-account token and CA the
//     kubelet projects into the pod then work as they are (TestCluster lists
//     pods with them and is refused secrets by RBAC). The apiserver is
//     started with --advertise-address=127.0.0.1 and
//     --endpoint-reconciler-type=none (the kubernetes Service has no
//     endpoints). On ACK nothing of this is needed.
//   - The kubelet rejects a loopback node IP. By default the node's
//     InternalIP is this machine's default-route address (HostAddress; the
//     kubelet listens there, with client-certificate authentication):
//     hostNetwork pods then have that pod IP, as on a real node, which a
//     Job's rank 0 can be found by through the API; traffic to it stays on
//     this machine. Options.NodeIP "none" leaves the node without an
//     address (pods get no IP).
//   - Pods that are not hostNetwork get a network namespace with loopback
//     only and an address in 127.1.0.0/16 that kubelab-cni reports but
//     nothing routes: a node is Ready only with a CNI network, and no real
//     pod network may exist here. There is no cluster DNS.
//   - Images are imported from archives (ImportImage: ctr images import);
//     pods say imagePullPolicy: Never or IfNotPresent. ErdmakitArchive is the
//     erdmakit image (tools/kubelab/image.sh: the release binary on the
//     release image's Debian base, the layers of make release-image's image,
//     packed by WriteImage), imported as ErdmakitImage. The sandbox image is
//     kubelab-pause, built by Start.
//   - Read logs with PodLogs/ContainerLogs (the kubelet's files under
//     Options.Dir): kubectl logs works only when the node has an address.
//   - kwok manages only nodes annotated kwok.x-k8s.io/node=fake (AddFakeNode):
//     they are Ready, and pods bound to them turn Running without running.
//     A DaemonSet lands on them too unless its affinity or a taint
//     (FakeNode.Taints) says otherwise.
//
// Tests of the lab carry the build tag kubelab and run by make kube-lab
// (part of make test), which builds the binaries and the image first; Need
// fails them under CI=true, and skips them otherwise, when this machine
// cannot run the lab. The lab needs root.
package kubelab
