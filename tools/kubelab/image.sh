#!/usr/bin/env bash
# The Kubernetes lab's erdmakit image (internal/kubelab.ErdmakitImage,
# localhost/erdmakit:kubelab): the release binary (tools/release/release.sh
# binary, what make glibc-floor builds) on the release image's Debian base
# (tools/release/base.sh, cached by what goes into it), the same two layers
# and labels as make release-image's, written as a Docker archive by
# internal/kubelab/cmd/kubelab-image (no podman, no vfs copy) to
#
#   bin/kubelab/erdmakit-image.tar
#
# The binary is rebuilt when it is missing or was built from another commit
# (or a dirty tree); the base only when its inputs change. Root (mmdebstrap).
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
start=$(date +%s)
base=$(tools/release/base.sh)
bin=bin/release-binary/erdmakit
rev=$(git rev-parse HEAD)
dirty=$(git status --porcelain --untracked-files=no)
if [ -n "$dirty" ] || [ ! -x "$bin" ] || ! "$bin" version --json 2>/dev/null | grep -q "\"revision\": \"$rev\""; then
	tools/release/release.sh binary
fi
version=$("$bin" version --json | sed -n 's/^[[:space:]]*"version": "\(.*\)",\{0,1\}$/\1/p' | head -n1)
mkdir -p bin/kubelab
out=bin/kubelab/erdmakit-image.tar
"$GO" run ./internal/kubelab/cmd/kubelab-image -base "$base" -binary "$bin" -o "$out.tmp" \
	-epoch "$(git log -1 --format=%ct HEAD)" \
	-label org.opencontainers.image.title=erdmakit \
	-label "org.opencontainers.image.version=$version" \
	-label "org.opencontainers.image.revision=$rev" \
	-label org.opencontainers.image.source=https://github.com/erdmakit/erdmakit \
	-label org.opencontainers.image.licenses=Apache-2.0 \
	-label "org.opencontainers.image.base.name=debian:bookworm (mmdebstrap, essential + libibverbs1 ibverbs-providers librdmacm1)"
mv -f "$out.tmp" "$out"
echo "kubelab-image: $out ($(du -h "$out" | cut -f1), erdmakit $version, $(($(date +%s) - start)) s)" >&2
