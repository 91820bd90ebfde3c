#!/usr/bin/env bash
# make release-image: an OCI image archive of the release binary on a minimal
# Debian (bookworm) that carries rdma-core's libibverbs and its providers (the
# erdma provider among them) and librdmacm, built offline from Debian's mirror
# (mmdebstrap; no registry is asked) and packed by podman; then loaded into an
# empty podman store and run with runc.
#
#   dist/erdmakit_VERSION_linux_amd64.oci.tar     podman load -i ... / docker load (docker 25+) / skopeo
#
# make release-image runs make release first (the binary comes from dist/'s
# tarball). Root.
# Podman runs on a store of its own under bin/release-image (vfs driver), not
# the machine's.
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
fail() {
	echo "release-image: FAIL: $*" >&2
	exit 1
}
tgz=$(ls dist/erdmakit_*_linux_amd64.tar.gz 2>/dev/null) || fail "no dist/erdmakit_*_linux_amd64.tar.gz: make release first"
name=$(basename "$tgz" .tar.gz)
version=${name#erdmakit_}
version=${version%_linux_amd64}
epoch=$(git log -1 --format=%ct HEAD)
export SOURCE_DATE_EPOCH=$epoch
rev=$(git rev-parse HEAD)
work="$top/bin/release-image"
rm -rf "$work"
mkdir -p "$work/ctx"
tar -xzf "$tgz" -C "$work" "$name/erdmakit"
cp "$work/$name/erdmakit" "$work/ctx/erdmakit"

# The base: Essential packages and the RDMA userspace, no apt, no docs
# (tools/release/base.sh; cached under a key of what goes into it).
base=$(tools/release/base.sh)
cp "$base" "$work/ctx/rootfs.tar"
tar -tf "$work/ctx/rootfs.tar" >"$work/rootfs.list"
grep 'libibverbs/liberdma-rdmav.*\.so' "$work/rootfs.list" >&2 || fail "the base lacks the erdma provider (liberdma)"

cat >"$work/ctx/Containerfile" <<CF
FROM scratch
ADD rootfs.tar /
COPY erdmakit /usr/bin/erdmakit
LABEL org.opencontainers.image.title="erdmakit" \\
      org.opencontainers.image.description="Prove an Alibaba Cloud eRDMA GPU host: devices, GPUDirect RDMA, bandwidth, NCCL" \\
      org.opencontainers.image.version="$version" \\
      org.opencontainers.image.revision="$rev" \\
      org.opencontainers.image.source="https://github.com/erdmakit/erdmakit" \\
      org.opencontainers.image.licenses="Apache-2.0" \\
      org.opencontainers.image.base.name="debian:bookworm (mmdebstrap, essential + libibverbs1 ibverbs-providers librdmacm1)"
ENTRYPOINT []
CMD ["erdmakit", "doctor"]
CF
P=(podman --root "$work/store" --runroot "$work/run" --storage-driver vfs --cgroup-manager cgroupfs --events-backend none)
ref="localhost/erdmakit:$version"
"${P[@]}" build --quiet --timestamp "$epoch" --network none -t "$ref" "$work/ctx" >&2
out="dist/${name}.oci.tar"
"${P[@]}" save --format oci-archive -o "$out" "$ref"
ls -l "$out" >&2

# Load it into an empty store, as a user would, and run it.
L=(podman --root "$work/store2" --runroot "$work/run2" --storage-driver vfs --cgroup-manager cgroupfs --events-backend none)
loaded=$("${L[@]}" load -q -i "$out" | sed -n 's/^Loaded image: //p' | head -n1)
[ -n "$loaded" ] || fail "podman load printed no image"
"${L[@]}" image inspect --format '{{index .Labels "org.opencontainers.image.version"}} {{.Size}}' "$loaded" >&2
run=("${L[@]}" --runtime runc run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=4096:4096
	-v "$top/testdata/hosts/ebmgn8is-healthy.tar.gz:/data/healthy.tar.gz:ro")
"${run[@]}" "$loaded" erdmakit version
"${run[@]}" "$loaded" erdmakit doctor --root /data/healthy.tar.gz || fail "doctor in the container: exit $?"
"${run[@]}" "$loaded" sh -c 'ls /usr/lib/x86_64-linux-gnu/libibverbs/ | grep erdma' >&2
# SHA256SUMS covers the image too (the image is not claimed reproducible:
# its base is whatever Debian's mirror serves that day).
(cd dist && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
echo "release-image: ok: $out ($(du -h "$out" | cut -f1)), doctor --root in the container: exit 0" >&2
