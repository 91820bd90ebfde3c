# erdmakit: `make run` checks this host, `make test` runs every test.
# Both install what they need first (Debian/Ubuntu, as root): see .ci/deps.sh.

GO      ?= go
BIN     := bin/erdmakit
GOFLAGS ?=
# go-nvml's cgo preamble calls NVML functions its own header marks deprecated:
# without this a fresh build prints ~190 lines of warnings before our output.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
# staticcheck at a pinned version, built by go run from the Go module proxy
# (then from the module cache): it is not one of the module's requirements.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all deps deps-build build run test unit lab vet api api-accept libsize bench bench-lat fuzz clean report-fixtures release release-check glibc-floor release-tool-test release-image kube-lab kube-lab-deps

all: build

# Test and lab dependencies (.ci/deps.sh test); building needs only deps-build.
deps:
	@./.ci/deps.sh test

deps-build:
	@./.ci/deps.sh build

build: deps-build
	@$(GO) build $(GOFLAGS) -o $(BIN) ./examples/erdmakit

# The main job: the doctor on this host. Its exit code (0 ok, 1 warn, 2 fail,
# 3 could not run) is printed, not passed to make: see `erdmakit doctor` for
# scripting.
run: build
	@./$(BIN) doctor; rc=$$?; echo; echo "erdmakit doctor exit code $$rc (0 ok, 1 warn, 2 fail, 3 could not run)"

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(STATICCHECK) ./...

# Package report's JSON fixtures (report/testdata), made by the code: the
# CLI's --json in process and fleet prove over four in-process ranks (no
# mpirun; examples/erdmakit TestReportFixturesAreCurrent, which fails when a
# committed one differs); the text tables of them; then the pictures of
# docs/report.md, drawn by headless chromium (report TestDocScreenshots).
report-fixtures: deps
	ERDMAKIT_UPDATE_FIXTURES=1 $(GO) test -count=1 -run '^TestReportFixturesAreCurrent$$' ./examples/erdmakit
	$(GO) test -count=1 -run '^TestTablesMatchGolden$$' ./report -update-text
	ERDMAKIT_DOCS=$(CURDIR)/docs $(GO) test -count=1 -run '^TestDocScreenshots$$' ./report

# The exported Go API against api/base (apidiff, pinned, fetched by go run
# like staticcheck): an incompatible change not listed in
# api/incompatible.txt fails. api-accept lists the changes found (a break
# is a decision: review the file's diff). See README, "Compatibility".
api:
	@bash api/apidiff.sh

api-accept:
	@bash api/apidiff.sh --accept

# README's table of what importing each package costs: measured again and
# rewritten (TestLibrarySizes checks it in every make test).
libsize:
	$(GO) test -count=1 -run TestLibrarySizes ./internal/moduletest -args -update-readme

# The API check, unit, fixture, namespace (as root) and mpirun tests, the
# release binary's glibc floor, the Kubernetes lab, then the RDMA lab.
test: deps vet api kube-lab-deps unit glibc-floor kube-lab lab

unit:
	$(GO) test $(GOFLAGS) -count=1 -timeout 25m ./...

# The RDMA lab: every lab test (build tag `lab`) in Soft-RoCE under qemu; see internal/lab.
# LAB_FLAGS, e.g. LAB_FLAGS='-pkg ./ibverbs -run TestLabQP -v'.
LAB_FLAGS ?=
lab: deps
	$(GO) run ./internal/lab/cmd/labrun $(LAB_FLAGS)

# The Kubernetes lab (internal/kubelab, docs/kubernetes-lab.md): a real
# cluster on this machine, as root: etcd, kube-apiserver, controller-manager,
# scheduler, kubelet, kubectl 1.37.2 and kwok built from the Go module proxy
# once into ~/.cache/erdmakit-kubelab/v1.37.2 (tools/kubelab/build.sh; cold
# ~8 min, then reused), the erdmakit image (tools/kubelab/image.sh: the
# release binary on the release image's cached Debian base), Debian's
# containerd + runc; then every test with the build tag `kubelab` in
# KUBELAB_PKGS, one package at a time (one lab per machine: Start waits for
# the lock of another); they fail, not skip, under CI=true when the lab cannot run.
# KUBELAB_FLAGS, e.g. KUBELAB_FLAGS='-run TestCluster -v'.
KUBELAB_PKGS ?= ./internal/kubelab/...
KUBELAB_FLAGS ?=
kube-lab: kube-lab-deps
	$(GO) test -tags kubelab -p 1 -count=1 -timeout 20m $(KUBELAB_FLAGS) $(KUBELAB_PKGS)

# What the lab's tests need, built or installed: the binaries and the image.
kube-lab-deps: deps
	@./.ci/deps.sh release
	@./tools/kubelab/build.sh >/dev/null
	@./tools/kubelab/image.sh

# Go benchmarks, one package at a time (-p 1: otherwise two packages'
# benchmarks share the CPUs); the NCCL log analyser against grep -c and wc -l
# on a 1 GiB log of two layouts (nccl/internal/logbench); then the side-by-side figure in
# the lab: erdmakit's write loop against ib_write_bw and ib_write_bw -l on
# the lab's rxe0, with ib_write_bw -l run a second time per round as the
# control scored like ours (perf/internal/bwbench; it keeps only rounds in
# which a calibration shows the guest at its usual speed), every run also
# measured by one ruler, the device's packet counters; first on a guest whose
# clock counts instructions (qemu -icount: the host's load cannot move it;
# its 16 rounds, about 20 minutes, are the goal's figure), then on the
# real-time guest; and bw lat against
# ib_write_lat (bench-lat). Each prints per-round ratios (median and
# quartiles), the context switches per run, the date and the load average.
bench: deps
	$(GO) test -p 1 -run '^$$' -bench . -benchmem ./...
	$(GO) build $(GOFLAGS) -o $(BIN) ./examples/erdmakit
	$(GO) run ./nccl/internal/logbench -runs 10 -cli $(BIN)
	$(GO) run ./nccl/internal/logbench -runs 10 -layout mpirun -cli $(BIN)
	$(GO) build -o bin/bwbench ./perf/internal/bwbench
	$(GO) run ./internal/lab/cmd/labrun -icount shift=2,sleep=on -timeout 60m -shell "$(CURDIR)/bin/bwbench -reps 16 -steady 0 -qps 1,16 -duration 2s -margin 1s"
	$(GO) run ./internal/lab/cmd/labrun -timeout 80m -shell "$(CURDIR)/bin/bwbench -reps 16 -qps 1,16 -duration 2s -margin 1s"
	$(MAKE) bench-lat

# Write latency alone: erdmakit's ping-pong (in C, and in loopback also in
# Go: -go-loop) against ib_write_lat on the lab's rxe0, 2 B and 4 KiB
# (perf/internal/latbench). First the goal's figure: one VM with two vCPUs,
# each end spinning on its own, 80 rounds in a shuffled order, ib_write_lat
# twice in each (the control); then in loopback on one vCPU and across the
# two VMs, rounds kept only where calibrations show the guest at its usual
# speed.
bench-lat: deps
	$(GO) build -o bin/latbench ./perf/internal/latbench
	$(GO) run ./internal/lab/cmd/labrun -smp 2 -timeout 45m -shell "$(CURDIR)/bin/latbench -reps 80 -iters 2000 -sizes 2,4096 -steady 0 -shuffle -control"
	$(GO) run ./internal/lab/cmd/labrun -timeout 30m -shell "$(CURDIR)/bin/latbench -reps 6 -sizes 2,4096 -go-loop"
	$(GO) run ./internal/lab/cmd/labrun -timeout 30m -shell2 "$(CURDIR)/bin/latbench -reps 16 -iters 1000 -sizes 2,4096"

# The release (docs/release.md): dist/ holds the tarball, the .deb, the .rpm
# and SHA256SUMS, built from the commit (SOURCE_DATE_EPOCH) with the binary
# linked against glibc 2.31 from Debian bullseye's packages (cached in
# ~/.cache/erdmakit-release) so that it needs no glibc newer than 2.17.
release:
	@./.ci/deps.sh release
	@./tools/release/release.sh

# What make test runs of the release: the release binary alone, its glibc
# floor (no symbol newer than GLIBC_2.17) and a run of version and doctor
# under glibc 2.31's loader; and the release tool's own tests.
glibc-floor: release-tool-test
	@./.ci/deps.sh release
	@./tools/release/release.sh binary

release-tool-test:
	cd tools/release && test -z "$$(gofmt -l .)" && $(GO) vet . && $(STATICCHECK) . && $(GO) test -count=1 .

# The whole release proven: two builds byte-identical, the binary under glibc
# 2.31, the .deb (lintian, dpkg -i/-r, man, bash completion, systemd-analyze),
# the .rpm (rpm -qpi/-qlp, rpm --root, rpmlint).
release-check: release-tool-test
	@./.ci/deps.sh release-check
	@./tools/release/check.sh

# The OCI image archive (dist/erdmakit_VERSION_linux_amd64.oci.tar): the
# release binary on Debian bookworm with libibverbs and its providers,
# loaded into an empty podman store and run with runc; SHA256SUMS gains it.
release-image: release
	@./.ci/deps.sh release-check
	@./tools/release/image.sh

clean:
	rm -rf bin dist
