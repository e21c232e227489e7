#!/bin/bash
# make demo: boot a test guest with soft-RoCE and dsmem loaded, and show
# what the module sees: versions, devices (JSON), the event monitor
# catching an RDMA device added and removed at runtime, then two nodes on
# rxe0 exchanging data: a segment granted, a peer connected, memory
# allocated, written and read by message and by one-sided RDMA.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dsctl=$top/build/user/user/tools/dsctl

if [ "${1:-}" != --in-guest ]; then
	exec "$top/scripts/guest" -t 300 -- "$0" --in-guest
fi

step() { printf '\n=== %s\n$ %s\n' "$1" "${*:2}"; "${@:2}"; }

step "versions of the tool, library, module and netlink family" "$dsctl" version
printf '\n=== the web console starts beside the module (dsctl ui, loopback only)\n'
uidir=$(mktemp -d)
printf 'demo-password\n' | "$dsctl" ui user add demo role admin db "$uidir/ui.db"
"$dsctl" ui listen 127.0.0.1:0 db "$uidir/ui.db" > "$uidir/out" &
ui=$!
for ((i = 0; i < 100; i++)); do grep -q listening "$uidir/out" && break; sleep 0.1; done
cat "$uidir/out"
url=$(grep -o 'http://[0-9.:]*' "$uidir/out")
curl -sf -c "$uidir/jar" -H 'Content-Type: application/json' \
	-d '{"user":"demo","password":"demo-password"}' "$url/api/login" > /dev/null
echo "logged in as demo (admin); it records every module event from now on"

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

printf '\n=== two nodes on rxe0 exchange data\n'
step "node 1 and node 2, each listening on its own port" \
	"$dsctl" node add id 1 dev rxe0 port 7471
"$dsctl" node add id 2 dev rxe0 port 7472
step "node 2 reserves 64 MiB and grants it to node 1" \
	"$dsctl" segment add node 2 size 64M
"$dsctl" segment grant node 2 seg 1 to 1 perm rw
step "node 1 connects to node 2 (rdma_cm, RC QP)" \
	"$dsctl" peer add node 1 addr "$DSMEM_LOCAL_ADDR" port 7472
for ((i = 0; i < 100; i++)); do
	"$dsctl" peer show node 1 | grep -q remote_seg && break
	sleep 0.1
done
step "both ends up; node 1 holds node 2's grant (one rkey per peer)" \
	"$dsctl" peer show
step "record every token lookup from here on" \
	"$dsctl" cache trace start /tmp/dsmem-demo.trace
step "ALLOC on node 2, by message" \
	"$dsctl" rdm alloc node 1 remote 2 size 8K
step "WRITE, by message" \
	"$dsctl" rdm write node 1 addr 0x2001000000000 data 68656c6c6f2066726f6d206e6f64652031
step "READ, by message" \
	"$dsctl" rdm read node 1 addr 0x2001000000000 len 32
step "one-sided RDMA from node 1: 64 KiB READs in batches of 16" \
	"$top/build/user/bench/rdm_bench" bw read 1 0x2001000000000 65536 256 16
echo "(MB/s)"
step "stop recording" "$dsctl" cache trace stop
step "the segment, with its grant" "$dsctl" segment show

step "the QPs' tokens: every work request above resolved its QP through the cache" \
	"$dsctl" token show type qp
step "the token cache: tiers, modelled cost, counters" "$dsctl" cache
step "a synthetic sweep on a private cache: 1024 QPs, one lookup each of QP, CQ, MR per op" \
	"$dsctl" cache bench qps 1024 ops 50000
step "the recorded lookups replayed offline: the seed policy and LRU, L1 of 2 and 8 tokens" \
	"$dsctl" sim run trace /tmp/dsmem-demo.trace policy lru,seed size 2,8 threads 1
step "module counters" "$dsctl" statistic
printf '\n=== the console'"'"'s log page: the module'"'"'s events it heard, newest first\n'
echo "$ curl -b COOKIE '$url/api/logs?limit=14'"
curl -sf -b "$uidir/jar" "$url/api/logs?limit=14" | python3 -c '
import json, sys, time
for e in json.load(sys.stdin)["events"]:
    t = time.strftime("%H:%M:%S", time.gmtime(e["ts"]))
    print("%s  %-7s %-8s %s" % (t, e["level"], e["component"], e["message"]))'
echo "$ curl -b COOKIE '$url/api/cluster'    # nodes, peers, segments"
curl -sf -b "$uidir/jar" "$url/api/cluster" | python3 -c '
import json, sys
c = json.load(sys.stdin)
print("nodes", [n["node"] for n in c["nodes"]], "peers", len(c["peers"]), "segments", len(c["segments"]))'
kill "$ui"
wait "$ui" || true
rm -rf "$uidir"
step "a mutating command without CAP_NET_ADMIN is refused" \
	setpriv --bounding-set -net_admin "$dsctl" statistic reset || true
