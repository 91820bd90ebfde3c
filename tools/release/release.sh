#!/usr/bin/env bash
# make release: dist/ from this checkout's commit, reproducibly.
#
#   dist/erdmakit_VERSION_linux_amd64.tar.gz  binary, completions, man pages, unit, LICENSE, README, third-party licenses
#   dist/erdmakit_DEBVERSION_amd64.deb        (nfpm)
#   dist/erdmakit-RPMVERSION.x86_64.rpm       (nfpm)
#   dist/SHA256SUMS
#
# VERSION follows Go's module versions: the tag (v1.2.3) on a tagged commit,
# v1.2.4-0.DATE-SHA after tag v1.2.3, v0.0.0-DATE-SHA without a tag (DATE the
# commit's time, UTC). A tree with uncommitted changes gets "+dirty".
# Every file's time is the commit's (SOURCE_DATE_EPOCH), so two runs of one
# commit give the same bytes (make release-check proves it).
#
#   tools/release/release.sh          everything, into dist/ (DIST=...)
#   tools/release/release.sh binary   the release binary alone (bin/release-binary/erdmakit) and its
#                                     glibc floor checks: what `make test` runs (make glibc-floor)
set -euo pipefail
mode=${1:-all}
cd "$(dirname "$0")/../.."
top=$PWD
dist=${DIST:-$top/dist}
arch=amd64
GO=${GO:-go}

command -v git >/dev/null || { echo "release: git is needed (the version and SOURCE_DATE_EPOCH come from the commit)" >&2; exit 1; }
rev=$(git rev-parse HEAD)
epoch=$(git log -1 --format=%ct HEAD)
export SOURCE_DATE_EPOCH=$epoch
stamp=$(TZ=UTC git log -1 --date=format-local:%Y%m%d%H%M%S --format=%cd HEAD)
if tag=$(git describe --tags --exact-match --match 'v[0-9]*' HEAD 2>/dev/null); then
	version=$tag
elif last=$(git describe --tags --abbrev=0 --match 'v[0-9]*' HEAD 2>/dev/null) && [[ $last =~ ^v([0-9]+)\.([0-9]+)\.([0-9]+)$ ]]; then
	version="v${BASH_REMATCH[1]}.${BASH_REMATCH[2]}.$((BASH_REMATCH[3] + 1))-0.$stamp-${rev:0:12}"
else
	version="v0.0.0-$stamp-${rev:0:12}"
fi
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
	version+="+dirty"
	echo "release: the tree has uncommitted changes: version $version (not reproducible from the commit)" >&2
fi
commit_time=$(TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd HEAD)
echo "release: erdmakit $version (commit $rev, $commit_time)" >&2

sysroot=$(tools/release/sysroot.sh "$arch")
lib="$sysroot/usr/lib/x86_64-linux-gnu"
loader="$sysroot/lib/x86_64-linux-gnu/ld-2.31.so"

# The release tool (tools/release, its own module).
mkdir -p bin
(cd tools/release && "$GO" build -trimpath -o "$top/bin/release-tool" .)
tool=$top/bin/release-tool

name="erdmakit_${version}_linux_${arch}"
stage="$top/bin/release-stage/root" # packed as $name/ in the tarball
if [ "$mode" = binary ]; then
	stage="$top/bin/release-binary"
	rm -rf "$stage"
	mkdir -p "$stage"
else
	rm -rf "$top/bin/release-stage" "$dist"
	mkdir -p "$stage"/{completions,man/man1,systemd} "$dist"
fi

# The binary: cgo against the bullseye sysroot with the system gcc (Debian's
# gcc looks for crt*.o and libc outside --sysroot unless -B and -L say
# where); the Go parts are static (netgo, osusergo: no libc resolver or user
# lookups), symbols and DWARF stripped, no build id, no paths; a PIE, as
# distributions build executables (ASLR).
pkg=github.com/erdmakit/erdmakit/version
CGO_ENABLED=1 GOOS=linux GOARCH=$arch \
	CGO_CFLAGS="-O2 -Wno-deprecated-declarations --sysroot=$sysroot" \
	CGO_LDFLAGS="--sysroot=$sysroot -B$lib -L$lib -L$sysroot/lib/x86_64-linux-gnu" \
	"$GO" build -trimpath -buildvcs=false -buildmode=pie -tags netgo,osusergo \
	-ldflags "-s -w -buildid= -X $pkg.stampVersion=$version -X $pkg.stampRevision=$rev -X $pkg.stampTime=$commit_time" \
	-o "$stage/erdmakit" ./examples/erdmakit
# The floor: no symbol newer than GLIBC_2.17 (CentOS 7.9), and the binary
# really starts under glibc 2.31's loader and libraries (Ubuntu 20.04's).
"$tool" glibc -max "${GLIBC_MAX:-2.17}" "$stage/erdmakit"
old=("$loader" --library-path "$sysroot/lib/x86_64-linux-gnu")
"${old[@]}" "$stage/erdmakit" version >&2
"${old[@]}" "$stage/erdmakit" version --json | grep -q '"release": true' || {
	echo "release: the binary does not say it is a release build" >&2
	exit 1
}
"${old[@]}" "$stage/erdmakit" doctor --root testdata/hosts/ebmgn8is-healthy.tar.gz >/dev/null || {
	echo "release: doctor --root testdata/hosts/ebmgn8is-healthy.tar.gz under glibc 2.31's loader: exit $?" >&2
	exit 1
}
echo "release: the binary runs version and doctor (exit 0) under $loader" >&2
if [ "$mode" = binary ]; then
	ls -l "$stage/erdmakit" >&2
	exit 0
fi

"$stage/erdmakit" completion bash >"$stage/completions/erdmakit.bash"
"$stage/erdmakit" completion zsh >"$stage/completions/_erdmakit"
"$stage/erdmakit" completion fish >"$stage/completions/erdmakit.fish"
(cd tools/release && "$tool" man -version "$version" -epoch "$epoch" "$stage/man/man1")
"$tool" licenses -o "$stage/THIRD_PARTY_LICENSES" "$stage/erdmakit"
cp LICENSE README.md "$stage/"
cp packaging/erdmakit-exporter.service "$stage/systemd/"
chmod 0644 "$stage"/LICENSE "$stage"/README.md "$stage"/systemd/* "$stage"/completions/*

# The .deb's version as nfpm writes it (semver: 0.0.0~PRERELEASE-1), for
# its changelog.
v=${version#v}
v=${v%%+*}
debver=$v
[[ $v == *-* ]] && debver="${v%%-*}~${v#*-}"
[[ $version == *+* ]] && debver+="+${version#*+}"
debver+="-1"
debian="$top/bin/release-stage/debian"
"$tool" debian -version "$debver" -revision "$rev" -epoch "$epoch" "$debian"

# nfpm takes the file times of a `tree` from the disk: every staged file
# gets the commit's time.
find "$stage" "$debian" -exec touch -h -d "@$epoch" {} +

"$tool" tar -epoch "$epoch" -prefix "$name" -o "$dist/$name.tar.gz" "$stage"
# nfpm expands ${VAR} in some fields only (not in contents' src): the
# config is written out with every variable in place.
(cd tools/release && "$GO" build -o "$top/bin/nfpm" github.com/goreleaser/nfpm/v2/cmd/nfpm)
sed -e "s|\${VERSION}|$version|g" -e "s|\${ARCH}|$arch|g" -e "s|\${STAGE}|$stage|g" -e "s|\${DEBIAN}|$debian|g" \
	packaging/nfpm.yaml >"$top/bin/release-stage/nfpm.yaml.in"
for m in "$stage"/man/man1/*.1.gz; do
	printf '  - src: %s\n    dst: /usr/share/man/man1/%s\n    type: doc\n    file_info: {mode: 0644}\n    packager: rpm\n' "$m" "${m##*/}"
done >"$top/bin/release-stage/rpm-man.yaml"
awk -v f="$top/bin/release-stage/rpm-man.yaml" '/#@rpm-man-pages@/ { while ((getline l < f) > 0) print l; next } { print }' \
	"$top/bin/release-stage/nfpm.yaml.in" >"$top/bin/release-stage/nfpm.yaml"
# The rpm's version-release as nfpm writes it (0.0.0~PRERELEASE_WITH_UNDERSCORES-1).
rpmver=${v%%-*}
[[ $v == *-* ]] && rpmver+="~$(tr - _ <<<"${v#*-}")"
[[ $version == *+* ]] && rpmver+="+${version#*+}"
rpmver+="-1"
# The rpm's %changelog (chglog's format); the .deb has its own
# changelog.Debian.gz (above), so only the rpm's config names it.
cat >"$top/bin/release-stage/changelog.yml" <<CL
- semver: $rpmver
  date: $commit_time
  packager: erdmakit maintainers <erdmakit@users.noreply.github.com>
  changes:
    - commit: $rev
      note: Release $version
CL
cp "$top/bin/release-stage/nfpm.yaml" "$top/bin/release-stage/nfpm-rpm.yaml"
echo "changelog: $top/bin/release-stage/changelog.yml" >>"$top/bin/release-stage/nfpm-rpm.yaml"
"$top/bin/nfpm" package --config "$top/bin/release-stage/nfpm.yaml" --packager deb --target "$dist/" >&2
"$top/bin/nfpm" package --config "$top/bin/release-stage/nfpm-rpm.yaml" --packager rpm --target "$dist/" >&2
(cd "$dist" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
echo "release: $dist" >&2
(cd "$dist" && ls -l && cat SHA256SUMS) >&2
