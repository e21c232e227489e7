#!/bin/bash
# make demo: boot a test guest with soft-RoCE and dsmem loaded, and show
# what the module sees: versions, devices (JSON), counters, and the event
# monitor catching an RDMA device added and removed at runtime.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dsctl=$top/build/user/user/tools/dsctl

if [ "${1:-}" != --in-guest ]; then
	exec "$top/scripts/guest" -t 300 -- "$0" --in-guest
fi

step() { printf '\n=== %s\n$ %s\n' "$1" "${*:2}"; "${@:2}"; }

step "versions of the tool, library, module and netlink family" "$dsctl" version
step "RDMA devices as dsmem sees them" "$dsctl" -j -p dev show
step "the same, as text" "$dsctl" dev

printf '\n=== events: a device added and removed while "dsctl monitor" listens\n'
out=$(mktemp)
timeout 120 "$dsctl" monitor count 2 > "$out" &
mon=$!
# the monitor subscribes within milliseconds; give it a moment on TCG
# (and a bound, so the demo cannot hang if an event were lost)
sleep 2
echo "$ rdma link add rxe1 type rxe netdev $DSMEM_SPARE_NETDEV"
rdma link add rxe1 type rxe netdev "$DSMEM_SPARE_NETDEV"
echo "$ rdma link delete rxe1"
rdma link delete rxe1
wait "$mon"
echo "$ dsctl monitor count 2    # printed:"
cat "$out"
rm -f "$out"

step "module counters" "$dsctl" statistic
step "a mutating command without CAP_NET_ADMIN is refused" \
	setpriv --bounding-set -net_admin "$dsctl" statistic reset || true
