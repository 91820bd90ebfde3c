#!/bin/bash
# libsize.sh [PKG...]: what importing each erdmakit package costs a program, as
# the README's "Use as a library" table gives it. For each package a fresh
# module (go 1.26.0, requiring this tree through a replace) builds a hello
# program that links the package's entry points, into a fresh module cache fed
# from this machine's (a file:// proxy: nothing is fetched from the network).
# Prints per package: the binary's bytes (go build, default flags, cgo as the
# machine has it), whether cgo is in its graph, whether it builds for macOS
# with CGO_ENABLED=0, the bytes the fresh module cache fetched (zips, .mod,
# .info), and the modules it pulls. Run from anywhere: bash internal/moduletest/libsize.sh
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
w=$(mktemp -d)
trap 'chmod -R u+w "$w"; rm -rf "$w"' EXIT
# Each package (in the order printed) with the entry points its program links.
entries=(
	"hello="
	"version=version.Get"
	"health=health.Status"
	"gid=gid.Parse"
	"connect=connect.ParseMethod"
	"nccl/ncclog=ncclog.ParseTests ncclog.Analyze"
	"nvml/smitopo=smitopo.Parse"
	"perf/perftest=perftest.Parse perftest.RunWriteBW"
	"plot=plot.BusBW plot.Sweep plot.Heatmap plot.LatencyHistogram plot.LatencyPercentiles plot.NCCLUse"
	"ibverbs=ibverbs.Devices ibverbs.Open"
	"nvml=nvml.ReadGPUs"
	"erdma=erdma.OpenHost erdma.ReadDevices"
	"doctor=doctor.Run"
	"perf=perf.OpenVerbsLinks perf.RunLatencyClients"
	"nccl=nccl.Run"
	"fleet=fleet.RunMeshJob fleet.RunDoctor"
	"monitor=monitor.Serve monitor.NewCollector"
	"eri=eri.New eri.DoctorView"
	"setup=setup.Run"
	"report=report.Write report.ReadFile"
	"kube=kube.VerdictOf kube.JobRankOf"
)
declare -A uses=()
all=()
for e in "${entries[@]}"; do
	uses[${e%%=*}]=${e#*=}
	all+=("${e%%=*}")
done
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=("${all[@]}")
cache=$(go env GOMODCACHE)/cache/download
echo "# $(date -u +%F) $(go version | cut -d' ' -f3-) $(git -C "$root" rev-parse --short HEAD 2>/dev/null || true); load $(cut -d' ' -f1 /proc/loadavg)"
printf "%-14s %9s %4s %6s %9s %s\n" package bytes cgo darwin fetched modules
for p in "${pkgs[@]}"; do
	[ -v "uses[$p]" ] || { echo "$p: no entry points listed" >&2; exit 2; }
	d=$w/$(echo "$p" | tr / _)
	mkdir -p "$d"
	{
		printf 'package main\n\nimport (\n\t"fmt"\n'
		[ "$p" = hello ] || printf '\t"github.com/erdmakit/erdmakit/%s"\n' "$p"
		printf ')\n\nfunc main() {\n\tfmt.Println("hello")\n'
		for u in ${uses[$p]}; do printf '\tfmt.Printf("%%p\\n", %s)\n' "$u"; done
		printf '}\n'
	} >"$d/main.go"
	printf 'module example.com/importer\n\ngo 1.26.0\n\nrequire github.com/erdmakit/erdmakit v0.0.0\n\nreplace github.com/erdmakit/erdmakit => %s\n' "$root" >"$d/go.mod"
	mc=$d.modcache
	export GOPROXY=file://$cache GOMODCACHE=$mc GOFLAGS="-modcacherw -mod=mod" GOSUMDB=off GOWORK=off GOTOOLCHAIN=local
	(cd "$d" && go build -o "$d.bin" .)
	cgo=no
	[ -z "$(cd "$d" && go list -deps -f '{{if and .CgoFiles (not .Standard)}}{{.ImportPath}}{{end}}' .)" ] || cgo=yes
	darwin=no
	(cd "$d" && CGO_ENABLED=0 GOOS=darwin go build -o /dev/null . 2>/dev/null) && darwin=yes
	fetched=0
	[ ! -d "$mc/cache/download" ] || fetched=$(find "$mc/cache/download" -type f \( -name '*.zip' -o -name '*.mod' -o -name '*.info' \) -printf '%s\n' | awk '{s+=$1} END {print s+0}')
	mods=$(cd "$d" && go list -deps -f '{{with .Module}}{{if not .Main}}{{if not .Replace}}{{.Path}}{{end}}{{end}}{{end}}' . | sort -u | tr '\n' ' ')
	printf "%-14s %9d %4s %6s %9d %s\n" "$p" "$(stat -c %s "$d.bin")" $cgo $darwin "$fetched" "$mods"
	unset GOPROXY GOMODCACHE GOFLAGS GOSUMDB GOWORK GOTOOLCHAIN
done
