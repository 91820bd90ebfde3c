#!/usr/bin/env bash
# The release image's base (tools/release/image.sh; the Kubernetes lab's
# image, tools/kubelab/image.sh): Debian bookworm's Essential packages and the
# RDMA userspace (libibverbs1, ibverbs-providers with the erdma provider,
# librdmacm1, ca-certificates), no apt, no docs, as a root filesystem tar made
# offline by mmdebstrap from Debian's mirror.
#
# Cached in ~/.cache/erdmakit-release/base/ (ERDMAKIT_BASE_CACHE) under a key
# of what goes into it: the suite, the packages, the dpkg filters, the hook,
# the mirror and mmdebstrap's version. A cached base is reused as is (what
# the mirror served the day it was made); a new key builds a new one (about
# two minutes). Prints the tar's path. Root.
#
#   tools/release/base.sh        the cached base, built if missing
#   tools/release/base.sh -f     build it again
set -euo pipefail
cd "$(dirname "$0")/../.."
suite=bookworm
include=libibverbs1,ibverbs-providers,librdmacm1,ca-certificates
opts=(--variant=essential "--include=$include"
	--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
	--dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*'
	--dpkgopt='path-exclude=/usr/share/info/*'
	--customize-hook='rm -rf "$1"/var/cache/* "$1"/var/lib/apt/lists/* "$1"/var/log/*')
mirror=$(tools/release/mirror.sh)
command -v mmdebstrap >/dev/null || { echo "base: mmdebstrap is needed (.ci/deps.sh release-check)" >&2; exit 1; }
key=$(printf '%s\n' "$suite" "${opts[@]}" "$mirror" "$(dpkg-query -W -f='${Version}' mmdebstrap 2>/dev/null)" | sha256sum | cut -c1-16)
cache=${ERDMAKIT_BASE_CACHE:-$HOME/.cache/erdmakit-release/base}
out=$cache/$suite-$key.tar
if [ "${1:-}" != -f ] && [ -s "$out" ]; then
	echo "$out"
	exit 0
fi
mkdir -p "$cache"
tmp=$cache/.$suite-$key.$$.tar # mmdebstrap takes its format from the name: .tar
trap 'rm -f "$tmp"' EXIT
start=$(date +%s)
echo "base: mmdebstrap $suite ($include) from $mirror" >&2
mmdebstrap "${opts[@]}" --quiet "$suite" "$tmp" "$mirror" >&2
tar -tf "$tmp" | grep 'libibverbs/liberdma-rdmav.*\.so' >&2 || {
	echo "base: FAIL: the base lacks the erdma provider (liberdma)" >&2
	exit 1
}
mv -f "$tmp" "$out"
echo "base: $out ($(du -h "$out" | cut -f1), $(($(date +%s) - start)) s)" >&2
echo "$out"
