#!/usr/bin/env bash
# helm from the Go module proxy, built once per machine into a cache keyed by
# its version (~/.cache/erdmakit-helm/VERSION/helm; ERDMAKIT_HELM_CACHE moves
# it), for kube's chart test (go test -tags helm ./kube; make helm-check).
# Measured: 7m26s cold on the 2-core build machine under load; 0 s warm.
set -euo pipefail
GO=${GO:-go}
version=v3.22.1
cache=${ERDMAKIT_HELM_CACHE:-$HOME/.cache/erdmakit-helm}/$version
if [ -x "$cache/helm" ]; then
	echo "$cache/helm"
	exit 0
fi
mkdir -p "$cache"
GOBIN="$cache" GOFLAGS=-trimpath "$GO" install "helm.sh/helm/v3/cmd/helm@$version" >&2
echo "$cache/helm"
