#!/usr/bin/env bash
# Installs what building and testing erdmakit needs on a Debian/Ubuntu machine,
# as root, and says what it installed. Idempotent: installs only what is missing.
set -euo pipefail

pkgs=(
	gcc make pkg-config git # git: the module-zip test lists the checkout
	libibverbs-dev librdmacm-dev ibverbs-utils rdma-core perftest # verbs headers, ibv_devinfo, ib_write_bw
	openmpi-bin                                                   # mpirun for the nccl and fleet tests
	qemu-system-x86 linux-image-amd64 busybox-static cpio kmod    # the RDMA lab (Soft-RoCE under qemu)
	iproute2 util-linux                                           # rdma, ip, unshare for namespace tests
)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all present (${#pkgs[@]} packages)"
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
