#!/usr/bin/env bash
# make release-check: the release proven end to end on this (Debian) machine.
#
#  1. reproducible: make release here (dist/), then again in a fresh clone of
#     the commit in another directory; the two SHA256SUMS must be identical.
#     RELEASE_CHECK_FRESH_GOCACHE=1 also gives the second build an empty Go
#     build cache (every package compiled again: minutes).
#  2. the binary of the tarball runs `version` and `doctor --root` (exit 0)
#     under Debian bullseye's glibc 2.31 loader.
#  3. the .deb: lintian (no error), dpkg -i, erdmakit version, man erdmakit,
#     the bash completion loads, systemd-analyze verify and security of the
#     unit, the unit not enabled, dpkg -r leaves none of its files.
#  4. the .rpm: rpm -qpi/-qpl, rpm --root DIR --nodeps -i and the installed
#     binary run under the 2.31 loader, rpmlint (no error).
# Root is needed for dpkg -i (it installs the .deb on this machine and removes it).
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
fail() {
	echo "release-check: FAIL: $*" >&2
	exit 1
}
say() { echo "== $*" >&2; }

[ -z "$(git status --porcelain --untracked-files=no)" ] || fail "the tree has uncommitted changes: commit them (the check compares two builds of the commit)"
[ "$(id -u)" -eq 0 ] || fail "run as root (dpkg -i)"
work="$top/bin/release-check"
rm -rf "$work"
mkdir -p "$work"

say "1. two builds of $(git rev-parse --short=12 HEAD)"
./tools/release/release.sh
git clone -q --no-local "$top" "$work/src"
(
	cd "$work/src"
	if [ "${RELEASE_CHECK_FRESH_GOCACHE:-}" = 1 ]; then
		export GOCACHE="$work/gocache"
	fi
	DIST="$work/dist2" ./tools/release/release.sh
)
echo "build 1 ($top/dist):" >&2
cat dist/SHA256SUMS >&2
echo "build 2 ($work/dist2, a fresh clone):" >&2
cat "$work/dist2/SHA256SUMS" >&2
cmp dist/SHA256SUMS "$work/dist2/SHA256SUMS" || fail "the two builds differ (see above; diffoscope dist/X $work/dist2/X says where)"
(cd dist && sha256sum -c --quiet SHA256SUMS) || fail "dist/SHA256SUMS does not match the files"
echo "reproducible: SHA256SUMS of both builds sha256 $(sha256sum <dist/SHA256SUMS | cut -c1-64)" >&2

sysroot=$(tools/release/sysroot.sh amd64)
old=("$sysroot/lib/x86_64-linux-gnu/ld-2.31.so" --library-path "$sysroot/lib/x86_64-linux-gnu")
healthy=$top/testdata/hosts/ebmgn8is-healthy.tar.gz

say "2. the tarball's binary under glibc 2.31"
tgz=$(ls dist/erdmakit_*_linux_amd64.tar.gz)
mkdir "$work/tar"
tar -xzf "$tgz" -C "$work/tar"
bin=$(ls "$work"/tar/*/erdmakit)
"${old[@]}" "$bin" version
"${old[@]}" "$bin" doctor --root "$healthy" >/dev/null || fail "doctor --root under the 2.31 loader: exit $?"
echo "doctor --root $healthy: exit 0 under ${old[0]}" >&2
ls -l "$bin" "$tgz" >&2

say "3. the .deb"
deb=$(ls dist/erdmakit_*_amd64.deb)
dpkg-deb --info "$deb" | sed -n '/Package:/,$p'
lintian --info --no-tag-display-limit "$deb" | tee "$work/lintian.txt" || true
! grep -q '^E: ' "$work/lintian.txt" || fail "lintian reports errors"
# dpkg waits for nobody: retry while another apt/dpkg holds the lock.
dpkg_() {
	local i
	for i in $(seq 1 180); do
		if dpkg "$@" 2>"$work/dpkg.err"; then
			return 0
		fi
		grep -q 'lock' "$work/dpkg.err" || {
			cat "$work/dpkg.err" >&2
			return 1
		}
		sleep 5
	done
	return 1
}
if dpkg-query -W erdmakit >/dev/null 2>&1; then fail "erdmakit is already installed here (dpkg -r erdmakit first)"; fi
dpkg_ -i "$deb"
dpkg -L erdmakit | sort >"$work/deb-files.txt"
trap 'dpkg -r erdmakit >/dev/null 2>&1 || true' EXIT
[ "$(command -v erdmakit)" = /usr/bin/erdmakit ] || fail "erdmakit is not /usr/bin/erdmakit on PATH"
erdmakit version
erdmakit doctor --root "$healthy" >/dev/null || fail "the installed erdmakit: doctor --root exit $?"
man -P cat erdmakit 2>/dev/null | head -n 12
man -w erdmakit-doctor >/dev/null || fail "man erdmakit-doctor: no page"
# _completion_loader returns 124 when it loaded a completion ("try again").
spec=$(bash -c 'source /usr/share/bash-completion/bash_completion; _completion_loader erdmakit; complete -p erdmakit' 2>&1) || true
echo "$spec" >&2
grep -q __start_erdmakit <<<"$spec" || fail "the bash completion does not load"
bash -c 'source /usr/share/bash-completion/bash_completion; _completion_loader erdmakit;
	COMP_WORDS=(erdmakit doc) COMP_CWORD=1 COMP_LINE="erdmakit doc" COMP_POINT=12 && __start_erdmakit erdmakit doc erdmakit &&
	printf "%s\n" "${COMPREPLY[@]}"' | grep -qx doctor || fail "bash completion of 'erdmakit doc' does not offer doctor"
echo "bash completion: 'erdmakit doc<TAB>' -> doctor" >&2
unit=/lib/systemd/system/erdmakit-exporter.service
systemd-analyze verify "$unit" || fail "systemd-analyze verify $unit"
systemd-analyze security --offline=true "$unit" | tee "$work/security.txt" | tail -n 3
[ ! -e /etc/systemd/system/multi-user.target.wants/erdmakit-exporter.service ] || fail "the unit was enabled on install"
dpkg_ -r erdmakit
trap - EXIT
left=0
while read -r f; do
	[ -d "$f" ] && continue
	if [ -e "$f" ] || [ -L "$f" ]; then
		echo "left behind: $f" >&2
		left=1
	fi
done <"$work/deb-files.txt"
[ $left = 0 ] || fail "dpkg -r left files behind"
echo "dpkg -r: none of the $(wc -l <"$work/deb-files.txt") paths dpkg -L listed is left (directories aside)" >&2

say "4. the .rpm"
rpmf=$(ls dist/erdmakit-*.x86_64.rpm)
rpm -qpi "$rpmf"
rpm -qpl "$rpmf"
echo "recommends: $(rpm -qp --recommends "$rpmf" | tr '\n' ' ')" >&2
rroot="$work/rpmroot"
mkdir -p "$rroot"
rpm --root "$rroot" --initdb
rpm --root "$rroot" --nodeps -i "$rpmf"
rpm --root "$rroot" -qa
"${old[@]}" "$rroot/usr/bin/erdmakit" version
"${old[@]}" "$rroot/usr/bin/erdmakit" doctor --root "$healthy" >/dev/null || fail "the rpm's binary under the 2.31 loader: doctor exit $?"
echo "the rpm's /usr/bin/erdmakit (in $rroot) runs doctor --root under ${old[0]}: exit 0" >&2
rpmlint -c packaging/rpmlint.toml "$rpmf" | tee "$work/rpmlint.txt" || true
! grep -q ': E: ' "$work/rpmlint.txt" || fail "rpmlint reports errors"

say "release-check: ok"
