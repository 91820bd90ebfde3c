#!/usr/bin/env bash
# The Kubernetes lab's binaries (internal/kubelab), built from the Go module
# proxy alone, once per machine, into a cache keyed by version:
#
#   $KUBELAB_CACHE (default ~/.cache/erdmakit-kubelab/v1.37.2)/bin/
#     kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl   k8s.io/kubernetes v1.37.2
#     etcd                                                                     go.etcd.io/etcd/server/v3 v3.7.0 (what 1.37.2 requires)
#     kwok                                                                     sigs.k8s.io/kwok v0.8.0
#   .../kwok-stages/*.yaml   kwok's "fast" node and pod stages (kwok needs them passed with -c)
#   .../src/                 the throwaway module they are built from
#
# k8s.io/kubernetes cannot be required as it is (its go.mod points every
# k8s.io/* staging module at ./staging/...): the module here requires it and
# replaces each staging module by its published v0.37.2, the list generated
# from k8s.io/kubernetes's own go.mod. -trimpath and the same -ldflags as any
# other build of this module keep Go's build cache shared. The version stamp
# (-X ...gitVersion) matters: without it the binaries say v0.0.0-master and
# kubectl cannot parse it. kubectl is built here too (the same version as the
# cluster: no skew, nothing from apt).
#
# A complete cache (bin/.complete names the versions) is reused as is: a warm
# run takes well under a second. Cold: about 8 minutes and 3 GB of RAM on 2 cores.
#
#   tools/kubelab/build.sh          build what is missing, print the cache directory
#   tools/kubelab/build.sh -f       rebuild
set -euo pipefail
K8S=v1.37.2
KWOK=v0.8.0
GO=${GO:-go}
cache=${KUBELAB_CACHE:-$HOME/.cache/erdmakit-kubelab/$K8S}
bin=$cache/bin
stamp="kubernetes $K8S kwok $KWOK"
if [ "${1:-}" != -f ] && [ -f "$bin/.complete" ] && [ "$(cat "$bin/.complete")" = "$stamp" ]; then
	echo "$cache"
	exit 0
fi
log() { echo "kubelab-build: $*" >&2; }
start=$(date +%s)
mkdir -p "$cache/src" "$bin"
rm -f "$bin/.complete"
src=$cache/src

# The module: k8s.io/kubernetes plus one replace per staging module.
kmod=$(cd "$src" && "$GO" mod download -json "k8s.io/kubernetes@$K8S" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
[ -f "$kmod" ] || { log "FAIL: go mod download k8s.io/kubernetes@$K8S gave no go.mod"; exit 1; }
staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/src/k8s\.io/.*#\1#p' "$kmod" | sort -u)
[ -n "$staging" ] || { log "FAIL: no ./staging replace lines in $kmod"; exit 1; }
minor=${K8S#v1.}
etcd=$(awk '$1 == "go.etcd.io/etcd/server/v3" {print $2; exit}' "$kmod")
[ -n "$etcd" ] || { log "FAIL: $kmod does not require go.etcd.io/etcd/server/v3"; exit 1; }
{
	echo "module kubelab.local/build"
	echo
	echo "go 1.26.0"
	echo
	echo "require ("
	echo "	go.etcd.io/etcd/server/v3 $etcd"
	echo "	k8s.io/kubernetes $K8S"
	echo ")"
	for m in $staging; do
		echo
		echo "replace $m => $m v0.$minor"
	done
} >"$src/go.mod.new"
cat >"$src/tools.go" <<'GO'
//go:build tools

package build

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
if ! cmp -s "$src/go.mod.new" "$src/go.mod.in" 2>/dev/null || [ ! -f "$src/go.sum" ]; then
	cp "$src/go.mod.new" "$src/go.mod"
	cp "$src/go.mod.new" "$src/go.mod.in"
	log "go mod tidy (k8s.io/kubernetes $K8S, etcd $etcd, $(echo "$staging" | wc -l) staging modules replaced)"
	(cd "$src" && "$GO" mod tidy)
fi
rm -f "$src/go.mod.new"

ver=k8s.io/component-base/version
ldflags="-s -w -X $ver.gitVersion=$K8S -X $ver.gitMajor=1 -X $ver.gitMinor=$minor"
log "go build kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl etcd (cold: ~8 min)"
(cd "$src" && "$GO" build -trimpath -o "$bin/" -ldflags "$ldflags" go.etcd.io/etcd/server/v3 \
	k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
	k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl)
mv -f "$bin/server" "$bin/etcd" # go names etcd's main package after its directory

log "go install sigs.k8s.io/kwok/cmd/kwok@$KWOK"
GOBIN=$bin "$GO" install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK"
kdir=$("$GO" env GOMODCACHE)/sigs.k8s.io/kwok@$KWOK/kustomize/stage
rm -rf "$cache/kwok-stages"
mkdir -p "$cache/kwok-stages"
cp "$kdir"/node/fast/node-*.yaml "$kdir"/pod/fast/pod-*.yaml "$cache/kwok-stages/"
chmod u+w "$cache/kwok-stages"/*

for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl etcd kwok; do
	[ -x "$bin/$b" ] || { log "FAIL: $bin/$b was not built"; exit 1; }
done
"$bin/kubectl" version --client -o json | grep -q "\"gitVersion\": \"$K8S\"" || { log "FAIL: kubectl does not say $K8S"; exit 1; }
echo "$stamp" >"$bin/.complete"
log "done in $(($(date +%s) - start)) s: $bin"
echo "$cache"
