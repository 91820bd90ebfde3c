#!/usr/bin/env bash
# Prints the Debian archive URI the release tooling fetches from: $DEBIAN_MIRROR
# when set, else the first Debian archive this machine's own apt already uses
# (deb822 .sources files, then one-line sources lists). The release asks the
# same mirror as apt-get does here, so a machine behind a local mirror or a
# proxy needs no extra setting.
set -eu # no pipefail: grep finds no file or no line in most of these sources, and that is fine

if [ -n "${DEBIAN_MIRROR:-}" ]; then
	echo "$DEBIAN_MIRROR"
	exit 0
fi
uri=$(
	{
		grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{for (i = 2; i <= NF; i++) print $i}'
		grep -hsE '^deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
			sed -E 's/\[[^]]*\]//' | awk '{print $2}'
	} | grep -E '/debian/?$' | head -n1
)
if [ -z "$uri" ]; then
	echo "mirror: no Debian archive in this machine's apt sources; set DEBIAN_MIRROR to one (its URI ends in /debian)" >&2
	exit 1
fi
echo "${uri%/}"
