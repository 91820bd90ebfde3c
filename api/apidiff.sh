#!/bin/bash
# api/apidiff.sh [--accept]: the exported Go API of this tree against the
# recorded base (api/base: a tag, or while the module has none a commit),
# with golang.org/x/exp/cmd/apidiff at a pinned version (fetched by go run,
# not one of the module's requirements). Every incompatible change since the
# base must be listed in api/incompatible.txt, in apidiff's words: an API
# break is then a decision taken in review (the list changes in the same
# commit as the code), never an accident. Compatible additions are printed,
# not checked. --accept rewrites api/incompatible.txt with the changes found
# (review its diff). When a version is tagged, api/base becomes that tag and
# the list is emptied (README, "Compatibility").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
APIDIFF=${APIDIFF:-go run golang.org/x/exp/cmd/apidiff@v0.0.0-20261121134650-e1094eeca1b5}
mod=github.com/erdmakit/erdmakit
base=$(grep -v '^#' "$root/api/base" | head -n1 | tr -d '[:space:]')
[ -n "$base" ] || { echo "api/base names no tag or commit" >&2; exit 2; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
git -C "$root" rev-parse --verify -q "$base^{commit}" >/dev/null ||
	{ echo "api/base: $base is not a commit of this repository (a shallow clone? fetch it)" >&2; exit 2; }
mkdir "$w/base"
git -C "$root" archive "$base" | tar -x -C "$w/base"
# apidiff names every internal package it leaves out ("Ignoring internal
# package ..."): the output of -w is kept for a failure only.
(cd "$w/base" && $APIDIFF -m -w "$w/base.api" "$mod" >"$w/log" 2>&1) || { cat "$w/log" >&2; exit 2; }
(cd "$root" && $APIDIFF -m -w "$w/head.api" "$mod" >"$w/log" 2>&1) || { cat "$w/log" >&2; exit 2; }
$APIDIFF -m "$w/base.api" "$w/head.api" 2>&1 | grep -v '^Ignoring internal package' >"$w/all.txt" || true
$APIDIFF -m -incompatible "$w/base.api" "$w/head.api" 2>&1 | grep -v '^Ignoring internal package' >"$w/incompatible.txt" || true
# One change a line, "./pkg.Ident: what changed", as apidiff -m says it.
flatten() { sed -n 's/^- //p' "$1" | sort -u; }
flatten "$w/incompatible.txt" >"$w/found.txt"
if [ "${1:-}" = --accept ]; then
	{ echo "# Incompatible API changes since api/base, accepted in review (api/apidiff.sh --accept)."; cat "$w/found.txt"; } >"$root/api/incompatible.txt"
	echo "api/incompatible.txt: $(wc -l <"$w/found.txt") change(s) since $base"
	exit 0
fi
grep -v '^#' "$root/api/incompatible.txt" 2>/dev/null | sort -u >"$w/accepted.txt" || true
new=$(comm -23 "$w/found.txt" "$w/accepted.txt")
cat "$w/all.txt"
echo "exported API against $base: $(flatten "$w/all.txt" | wc -l) change(s), $(wc -l <"$w/found.txt") incompatible (accepted in api/incompatible.txt: $(wc -l <"$w/accepted.txt"))"
if [ -n "$new" ]; then
	echo "incompatible API changes not in api/incompatible.txt (a break must be decided: list it, or keep the old API):" >&2
	echo "$new" >&2
	exit 1
fi
