package lab

import (
	"fmt"
	"strings"
	"time"
)

// Guest describes one VM's role in a run: the values its tests see in the
// ERDMAKIT_LAB_* environment (see the package documentation).
type Guest struct {
	Role   string // "single", "a" or "b"
	IP     string // "10.0.9.1"
	Peer   string // "" in the single-VM run
	Device string // "rxe0"
	Netdev string // "eth0"
	CI     string // the host's CI variable, passed through
}

// Step is one thing the guest script runs, bounded by Timeout.
type Step struct {
	ID      string        // for markers and log names: "ibverbs", "shell"
	Dir     string        // working directory (a package's source dir); "" for /tmp
	Argv    []string      // the program and its arguments
	Log     string        // guest path for its output; "" sends it to the console
	OutDir  string        // ERDMAKIT_LAB_OUT for this step; "" for none
	Timeout time.Duration // `timeout` bound; 0 means 240 s
}

// MarkerNoLink is the marker a two-VM guest prints when its peer never
// answered on the lab link; linkTries bounds how often it asks (about 2 s
// each: a 1 s ping wait and a 1 s pause).
const (
	MarkerNoLink = "NOLINK"
	linkTries    = 30
)

// Script is the guest's run script (POSIX sh, run by the host's /bin/sh after
// the chroot): it brings eth0 up with g.IP, adds the rxe device, waits for
// its port to be ACTIVE and its RoCE v2 GID for g.IP to appear, in a two-VM
// run pings g.Peer until it answers (else the NOLINK marker), exports the
// lab environment and runs the steps, each under `timeout`, each framed by
// BEGIN/END markers carrying its exit status.
func Script(g Guest, steps []Step) string {
	var b strings.Builder
	ip4 := strings.Split(g.IP, ".")
	if len(ip4) != 4 {
		ip4 = []string{"0", "0", "0", "0"}
	}
	fmt.Fprintf(&b, `#!/bin/sh
# erdmakit lab: guest script for role %[1]s (generated; see internal/lab)
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TMPDIR=/tmp LANG=C.UTF-8
mark() { echo "@@ERDMAKIT-LAB $*"; }
fatal() { mark FATAL "$*"; exit 3; }
ulimit -l unlimited || fatal 'ulimit -l unlimited'
ip link set lo up
ip link set %[2]s up || fatal 'ip link set %[2]s up'
ip addr add %[3]s/24 dev %[2]s || fatal 'ip addr add %[3]s/24 dev %[2]s'
timeout 20 rdma link add %[4]s type rxe netdev %[2]s || fatal 'rdma link add %[4]s type rxe netdev %[2]s'
port=/sys/class/infiniband/%[4]s/ports/1
want=$(printf '0000:0000:0000:0000:0000:ffff:%%02x%%02x:%%02x%%02x' %[5]s %[6]s %[7]s %[8]s)
gidx=
i=0
while [ -z "$gidx" ]; do
	if [ "$(cat $port/state 2>/dev/null)" = "4: ACTIVE" ]; then
		for f in $(grep -l -x "$want" $port/gids/* 2>/dev/null); do
			n=${f##*/}
			if [ "$(cat $port/gid_attrs/types/$n 2>/dev/null)" = "RoCE v2" ]; then
				gidx=$n
				break
			fi
		done
	fi
	i=$((i+1))
	[ $i -gt 100 ] && fatal "%[4]s port 1 not ACTIVE with a RoCE v2 GID for %[3]s after 20 s: state $(cat $port/state 2>/dev/null)"
	[ -z "$gidx" ] && sleep 0.2
done
export CI=%[9]s
export ERDMAKIT_LAB=1 ERDMAKIT_LAB_ROLE=%[1]s ERDMAKIT_LAB_DEVICE=%[4]s ERDMAKIT_LAB_NETDEV=%[2]s
export ERDMAKIT_LAB_IP=%[3]s ERDMAKIT_LAB_PEER=%[10]s ERDMAKIT_LAB_GID_INDEX=$gidx
mark SETUP role=%[1]s ip=%[3]s gid_index=$gidx uptime=$(cut -d' ' -f1 /proc/uptime)
`, g.Role, g.Netdev, g.IP, g.Device, ip4[0], ip4[1], ip4[2], ip4[3], shQuote(g.CI), shQuote(g.Peer))
	if g.Peer != "" {
		// The two-VM link has once carried nothing although both VMs booted:
		// prove it before any test runs, so that the runner can boot the
		// pair again instead of every two-host test timing out.
		fmt.Fprintf(&b, `i=0
until busybox ping -c 1 -W 1 %[1]s >/dev/null 2>&1; do
	i=$((i+1))
	[ $i -ge %[2]d ] && { mark %[3]s peer=%[1]s tries=$i; exit 4; }
	sleep 1
done
mark LINK peer=%[1]s tries=$((i+1))
`, shQuote(g.Peer), linkTries, MarkerNoLink)
	}
	b.WriteString("status=0\n")
	for _, s := range steps {
		t := s.Timeout
		if t <= 0 {
			t = 240 * time.Second
		}
		dir := s.Dir
		if dir == "" {
			dir = "/tmp"
		}
		fmt.Fprintf(&b, "mark BEGIN %s\n", s.ID)
		out := ""
		if s.OutDir != "" {
			fmt.Fprintf(&b, "mkdir -p %s\n", shQuote(s.OutDir))
			out = "ERDMAKIT_LAB_OUT=" + shQuote(s.OutDir) + " "
		}
		redir := ""
		if s.Log != "" {
			redir = " > " + shQuote(s.Log) + " 2>&1"
		}
		fmt.Fprintf(&b, "(cd %s && %stimeout -k 5 %d %s)%s\n", shQuote(dir), out, int(t.Seconds()), shJoin(s.Argv), redir)
		fmt.Fprintf(&b, "rc=$?\n[ $rc -ne 0 ] && status=1\nmark END %s $rc\n", s.ID)
	}
	b.WriteString("exit $status\n")
	return b.String()
}

// shQuote quotes s for POSIX sh.
func shQuote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shQuote(a)
	}
	return strings.Join(q, " ")
}
