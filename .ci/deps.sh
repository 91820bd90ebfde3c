#!/usr/bin/env bash
# Installs what erdmakit needs on a Debian/Ubuntu machine, as root, and says
# what it installed. Idempotent: installs only what is missing; when nothing
# is missing it needs no root.
#
#   .ci/deps.sh build   what `make build` needs: a C compiler (cgo; not the RDMA headers: ibverbs/rdma_abi.h)
#   .ci/deps.sh test    build, plus what the tests run: perftest, mpirun, srun (Slurm, munge), promtool, node_exporter,
#                       namespaces, the RDMA lab (qemu, a kernel image), and chromium (the report page)
#   .ci/deps.sh         the same as test
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
)

case "${1:-test}" in
build) pkgs=("${build[@]}") ;;
test) pkgs=("${build[@]}" "${test[@]}") ;;
*)
	echo "usage: $0 [build|test]" >&2
	exit 2
	;;
esac

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
