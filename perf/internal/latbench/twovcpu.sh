#!/bin/sh
# Run in the lab's one VM with two vCPUs, after `make build`:
#   go run ./internal/lab/cmd/labrun -smp 2 -timeout 30m -shell "$PWD/perf/internal/latbench/twovcpu.sh"
# R rounds (16), N round trips per run (2000), MODES the tools in each round
# (new: ib_write_lat, ours: bw serve + bw lat, new2: ib_write_lat again as
# the control; ours2: $EK2, another build or a wrapper, served on port 18700;
# ours3: $EK3 the same on port 18800;
# old: ib_write_lat --use_old_post_send; cloop: erdmakit's C ping-pong in a C
# process of its own, cthr: that with one idle thread more (multi-threaded),
# cwake: with four more each waking every 4 ms, gloop: cloop from a Go
# program (one cgo call), cplain: ib_write_lat's loop in that C process,
# cpcheck, cprole, cppost: that loop with one of ours' differences, cpunsig:
# that loop signalling every $UNSIG-th write (16); the C
# ones need
#   gcc -O2 -Iibverbs -o bin/cping perf/internal/latbench/testdata/cping.c \
#       ibverbs/shim.c ibverbs/stream.c ibverbs/pingpong.c -ldl -lpthread
#   go build -a -o bin/gping ./perf/internal/latbench/testdata/gping
# ), SHUFFLE=1 a random order in each round (else rotating: a tool's
# neighbours then stay the same, and they move it by 1-2%). Prints one line per run:
#   round R size S mode M t_typical MICROSECONDS load GUEST_LOAD p99 MICROSECONDS
# (docs/bw.md, "Looking for the 2-4%").
#
# One VM, two vCPUs: each end of a ping-pong on a vCPU of its own (the
# guest's scheduler spreads the two spinners), rxe over the VM's own IP: no
# network between VMs. Paired rounds: ib_write_lat, erdmakit (bw serve + bw
# lat), ib_write_lat again (the control), order rotating.
R=${R:-16}; N=${N:-2000}; MODES=${MODES:-"new ours new2"}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
EK=${EK:-$ROOT/bin/erdmakit}; CPING=${CPING:-$ROOT/bin/cping}; GPING=${GPING:-$ROOT/bin/gping}
D=$ERDMAKIT_LAB_DEVICE; X=$ERDMAKIT_LAB_GID_INDEX; IP=$ERDMAKIT_LAB_IP
nproc; grep -c processor /proc/cpuinfo
$EK bw serve -d $D >/tmp/serve.log 2>&1 &
[ -n "$EK2" ] && $EK2 bw serve -d $D -p 18700 >/tmp/serve2.log 2>&1 &
[ -n "$EK3" ] && $EK3 bw serve -d $D -p 18800 >/tmp/serve3.log 2>&1 &
sleep 3
step=0
perf() { # size port [extra]
  ib_write_lat -d $D -x $X -s $1 -n $N -p $2 -F $3 >/dev/null 2>&1 &
  sp=$!
  v=""
  for t in $(seq 1 100); do
    out=$(ib_write_lat -d $D -x $X -s $1 -n $N -p $2 -F $3 $IP 2>/dev/null)
    v=$(echo "$out" | awk '$1=='$1' && $2=='$N' {print $5, $8}' | head -1)
    [ -n "$v" ] && break; sleep 0.2
  done
  wait $sp
  echo "$v"
}
ours() { # erdmakit server: prints the median and the 99th percentile
  j=$($1 bw lat $2 -d $D -s $s -n $N --warmup 0 --json 2>/dev/null)
  echo "$(echo "$j" | grep -o '"median_us": *[0-9.]*' | head -1 | grep -o '[0-9.]*$') $(echo "$j" | grep -o '"p99_us": *[0-9.]*' | head -1 | grep -o '[0-9.]*$')"
}
cping() { # BINARY [VAR=VALUE...]: one cping run, both ends with that environment, ours' buffer layout;
  # prints the median and the 99th percentile
  b=$1; shift
  env "$@" SEND_OFF=$(( (s + 63) / 64 * 64 )) $b server $port $s $N >/dev/null 2>&1 & cpid=$!
  env "$@" SEND_OFF=$(( (s + 63) / 64 * 64 )) $b client $IP $port $s $N 2>/dev/null | awk '{print $7, $9}'
  wait $cpid
}
r=1
while [ $r -le $R ]; do
  for s in 2 4096; do
    if [ -n "$SHUFFLE" ]; then order=$(echo $MODES | tr ' ' '\n' | shuf | tr '\n' ' ')
    else
    set -- $MODES; n=$#; k=$((r % n)); order=""
    i=0; for m in $MODES; do [ $i -ge $k ] && order="$order $m"; i=$((i+1)); done
    i=0; for m in $MODES; do [ $i -lt $k ] && order="$order $m"; i=$((i+1)); done
    fi
    for m in $order; do
      step=$((step+1)); port=$((20000+step))
      case $m in
      cloop) v=$(cping $CPING);;
      gloop) v=$(cping $GPING);;
      cthr) v=$(cping $CPING THREADS=1);;
      cwake) v=$(cping $CPING THREADS=4 WAKE_US=4000);;
      cplain) v=$(cping $CPING PLAIN=1);;
      cpcheck) v=$(cping $CPING PLAIN=1 PLAIN_CHECK=1);;
      cprole) v=$(cping $CPING PLAIN=1 PLAIN_ROLE=1);;
      cppost) v=$(cping $CPING PLAIN=1 PLAIN_EKPOST=1);;
      cpunsig) v=$(cping $CPING PLAIN=1 PLAIN_UNSIG=${UNSIG:-16});;
      ours2) v=$(ours $EK2 $IP:18700);;
      ours3) v=$(ours $EK3 $IP:18800);;
      ours*) v=$(ours $EK $IP);;
      old*) v=$(perf $s $port --use_old_post_send);;
      *) v=$(perf $s $port);;
      esac
      set -- $v
      echo "round $r size $s mode $m t_typical $1 load $(cut -d' ' -f1 /proc/loadavg) p99 $2"
    done
  done
  r=$((r+1))
done
