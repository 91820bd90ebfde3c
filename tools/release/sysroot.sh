#!/usr/bin/env bash
# Prints the path of a glibc 2.31 sysroot made from Debian bullseye's own
# packages, building it first if the cache lacks it. The release binary is
# linked against it so that it starts on glibc >= 2.17 (CentOS 7.9 and up,
# Alibaba Cloud Linux 3, Ubuntu 18.04 and up), and its ld-2.31.so is the
# loader the release checks run the binary under.
#
# Debian's mirror (the one this machine's apt uses, or $DEBIAN_MIRROR: see
# mirror.sh) is asked through apt with a sources list, lists and cache of
# its own (nothing is added to the system's apt sources, nothing installed);
# apt checks each .deb against the suite's signed Release file. The packages
# are pinned: the cache key is the list of name=version, so a new pin builds a
# new sysroot beside the old one.
#
#   tools/release/sysroot.sh [amd64]     (ERDMAKIT_RELEASE_CACHE, default ~/.cache/erdmakit-release)
set -euo pipefail

arch=${1:-amd64}
suite=bullseye
case "$arch" in
amd64) triplet=x86_64-linux-gnu ;;
*)
	echo "sysroot: arch $arch: only amd64 is released (see docs/release.md)" >&2
	exit 2
	;;
esac
pkgs=(
	libc6=2.31-13+deb11u11
	libc6-dev=2.31-13+deb11u11
	linux-libc-dev=5.10.223-1
)
cache=${ERDMAKIT_RELEASE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/erdmakit-release}
key=$(printf '%s\n' "$suite" "$arch" "${pkgs[@]}" | sha256sum | cut -c1-12)
root="$cache/sysroot-$suite-$arch-$key"
if [ -e "$root/.complete" ]; then
	echo "$root"
	exit 0
fi

for t in apt-get dpkg-deb; do
	command -v "$t" >/dev/null || {
		echo "sysroot: $t not found: the release build makes its sysroot from Debian packages (run it on Debian/Ubuntu)" >&2
		exit 1
	}
done
work="$cache/apt-$suite-$arch"
mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/debs"
mirror=$("$(dirname "$0")/mirror.sh")
echo "deb [arch=$arch] $mirror $suite main" >"$work/sources.list"
apt=(
	-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work" -o "Dir::Cache::archives=$work/archives"
	-o Dir::State::status=/dev/null -o "APT::Architecture=$arch" -o "APT::Architectures=$arch"
	-o Acquire::Languages=none -o APT::Sandbox::User=root
)
echo "sysroot: fetching ${pkgs[*]} from Debian $suite ($arch)" >&2
apt-get "${apt[@]}" -qq update >&2
(cd "$work/debs" && rm -f ./*.deb && apt-get "${apt[@]}" -qq download "${pkgs[@]}" >&2)

tmp="$root.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
for d in "$work"/debs/*.deb; do
	dpkg-deb -x "$d" "$tmp"
done
# Absolute links (lib64/ld-linux-x86-64.so.2 -> /lib/...) would leave the
# sysroot: make them relative.
find "$tmp" -type l -lname '/*' | while read -r l; do
	t=$(readlink "$l")
	rm "$l"
	ln -sr "$tmp$t" "$l"
done
test -e "$tmp/lib/$triplet/ld-2.31.so" || {
	echo "sysroot: $tmp lacks lib/$triplet/ld-2.31.so" >&2
	exit 1
}
printf '%s\n' "${pkgs[@]}" >"$tmp/.complete"
rm -rf "$root"
mv "$tmp" "$root"
echo "$root"
