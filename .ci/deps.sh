#!/usr/bin/env bash
# Installs what erdmakit needs on a Debian/Ubuntu machine, as root, and says
# what it installed. Idempotent: installs only what is missing; when nothing
# is missing it needs no root.
#
#   .ci/deps.sh build   what `make build` needs: a C compiler (cgo; not the RDMA headers: ibverbs/rdma_abi.h)
#   .ci/deps.sh test    build, plus what the tests run: perftest, mpirun, srun (Slurm, munge), promtool, node_exporter,
#                       namespaces, the RDMA lab (qemu, a kernel image), chromium (the report page), and the
#                       Kubernetes lab's containerd, runc, CNI plugins and mmdebstrap (its binaries come from the Go proxy)
#   .ci/deps.sh         the same as test
#   .ci/deps.sh release what `make release` needs: build, plus git (the version) and apt-get/dpkg-deb (the
#                       bullseye sysroot, fetched into a cache of its own: nothing is added to this machine's apt)
#   .ci/deps.sh release-check  release, plus what `make release-check` runs on the packages: lintian,
#                       rpm (rpm, rpmlint), man, bash-completion, systemd-analyze
#
# On a machine without apt (Alibaba Cloud Linux 3, CentOS, ...) it says what to install with dnf/yum
# instead: erdmakit itself runs there (use the release packages, see the README's Install section);
# the test suite and the release build are Debian/Ubuntu tools.
set -euo pipefail

build=(
	gcc libc6-dev make # cgo (ibverbs, go-nvml)
)
test=(
	git                                                        # the module-zip test lists the checkout
	libibverbs-dev librdmacm-dev                               # verbs.h, rdma_cma.h: TestShimABIMatchesTheHeaders compares ibverbs/rdma_abi.h with them
	ibverbs-utils rdma-core perftest                           # ibv_devinfo, ib_write_bw
	openmpi-bin                                                # mpirun for the nccl and fleet tests
	slurmctld slurmd slurm-client munge                        # a single-node Slurm for the srun test (nccl)
	prometheus prometheus-node-exporter                        # promtool and node_exporter for the textfile recipe test
	qemu-system-x86 linux-image-amd64 busybox-static cpio kmod # the RDMA lab (Soft-RoCE under qemu)
	iproute2 util-linux                                        # rdma, ip, unshare for namespace tests
	netplan.io network-manager systemd python3-gi gir1.2-glib-2.0 dbus-daemon # setup: netplan generate, systemd-networkd and NetworkManager in a namespace (the reboot, a private system bus), GLib GKeyFile (NM keyfile parser) via /usr/bin/python3, systemd-analyze
	chromium fonts-liberation                                  # headless Chromium for the report page tests (report/chromium_test.go)
	containerd runc containernetworking-plugins mmdebstrap     # the Kubernetes lab (internal/kubelab): a real node's runtime, the CNI loopback plugin, the erdmakit image's Debian base
)

release=(
	git ca-certificates apt dpkg # version from the commit; apt-get download + dpkg-deb -x make the glibc 2.31 sysroot
)
release_check=(
	lintian                           # the .deb's policy check
	rpm rpmlint                       # rpm -qpi/-qlp, rpm --root DIR -i, rpmlint
	man-db bash-completion systemd    # man erdmakit, the completion loaded in bash, systemd-analyze verify/security
	mmdebstrap podman runc uidmap     # the OCI image: a Debian base built offline, loaded and run
)

case "${1:-test}" in
build) pkgs=("${build[@]}") ;;
test) pkgs=("${build[@]}" "${test[@]}") ;;
release) pkgs=("${build[@]}" "${release[@]}") ;;
release-check) pkgs=("${build[@]}" "${release[@]}" "${release_check[@]}") ;;
*)
	echo "usage: $0 [build|test|release|release-check]" >&2
	exit 2
	;;
esac

if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
	# Not Debian/Ubuntu. Say what to install rather than fail inside apt.
	if [ "${1:-test}" = build ] && command -v gcc >/dev/null && command -v make >/dev/null && [ -e /usr/include/stdlib.h ]; then
		exit 0 # what the build needs is here
	fi
	if command -v dnf >/dev/null || command -v yum >/dev/null; then
		pm=$(command -v dnf >/dev/null && echo dnf || echo yum)
		cat >&2 <<MSG
deps: this machine has $pm, not apt: .ci/deps.sh installs Debian/Ubuntu packages only.
  To build erdmakit here (make build, make run), as root:
    $pm install -y gcc make glibc-devel git
  and Go 1.26 or newer (https://go.dev/dl/; a distribution's older golang fetches the toolchain go.mod names).
  At run time erdmakit loads rdma-core's userspace when present:
    $pm install -y libibverbs librdmacm rdma-core libibverbs-utils perftest
  (Alibaba Cloud Linux 3 and CentOS 8 names; the eRDMA driver and its provider come from Alibaba's
  erdma installer, see the guide.) Simpler: install the release package, no Go needed:
    $pm install ./erdmakit-*.x86_64.rpm        (README, "Install")
  make test and make release need a Debian/Ubuntu machine (qemu lab, lintian, the bullseye sysroot).
MSG
	else
		echo "deps: no apt-get here: install a C compiler (gcc), make, git and Go 1.26+; see the README's Install section" >&2
	fi
	exit 1
fi

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all present (${1:-test}: ${#pkgs[@]} packages)"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: installed ${missing[*]}"
