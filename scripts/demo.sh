#!/bin/bash
# make demo: boot a test guest with soft-RoCE and dsmem loaded, and show
# what the module sees: versions, devices (JSON), the event monitor
# catching an RDMA device added and removed at runtime, then two nodes on
# rxe0 exchanging data: a segment granted, a peer connected, memory
# allocated, written and read by message and by one-sided RDMA; then a
# B+tree held by two nodes' segments, loaded and queried by a third; then
# a live std::map migrated from one node to another with Slope; then the
# object store: etcd, dsmaster and two clients lending memory, an object
# put with two replicas and an eager flush, fetched from another node;
# then, in Python, KV-cache tensors stored and fetched by prefix hash
# (examples/kvcache.py).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dsctl=$top/build/user/user/tools/dsctl
store_worker=$top/build/user/kselftest/store_worker
# shellcheck source=scripts/store-up.sh
. "$top/scripts/store-up.sh"

if [ "${1:-}" != --in-guest ]; then
	exec "$top/scripts/guest" -t 600 -- "$0" --in-guest
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
# the login form's CSRF token comes with a cookie, from GET /api/login
csrf=$(curl -sf -c "$uidir/jar" "$url/api/login" | grep -o '"csrf":"[0-9a-f]*"' | cut -d'"' -f4)
curl -sf -b "$uidir/jar" -c "$uidir/jar" -H 'Content-Type: application/json' \
	-H "X-CSRF-Token: $csrf" \
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
echo "$ rdma link add rxe9 type rxe netdev $DSMEM_SPARE_NETDEV"
rdma link add rxe9 type rxe netdev "$DSMEM_SPARE_NETDEV"
echo "$ rdma link delete rxe9"
rdma link delete rxe9
wait "$mon"
echo "$ dsctl monitor count 2    # printed:"
cat "$out"
rm -f "$out"

printf '\n=== two nodes on rxe0 exchange data\n'
# every host of a cluster installs the same key; nodes prove it to each
# other before anything is served (docs/security.md)
keyfile=$(mktemp)
head -c 32 /dev/urandom > "$keyfile"
step "the cluster's key: nodes authenticate each other with it (\"cluster\" is the default)" \
	"$dsctl" key add name cluster file "$keyfile"
rm -f "$keyfile"
"$dsctl" key show
step "node 1 and node 2, each listening on its own port" \
	"$dsctl" node add id 1 dev rxe0 port 7471
"$dsctl" node add id 2 dev rxe0 port 7472
step "node 2 reserves 64 MiB and grants it to node 1" \
	"$dsctl" segment add node 2 size 64M
"$dsctl" segment grant node 2 seg 1 to 1 perm rw
step "node 2 admits node 1 from its address: a node accepts only the peers it was told about" \
	"$dsctl" peer add node 2 addr "$DSMEM_LOCAL_ADDR" remote 1 listen
step "node 1 connects to node 2 (rdma_cm, RC QP), and proves the key" \
	"$dsctl" peer add node 1 addr "$DSMEM_LOCAL_ADDR" port 7472 remote 2
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

printf '\n=== a B+tree across nodes: node 1 computes, nodes 2 and 3 hold the tree\n'
"$dsctl" node add id 3 dev rxe0 port 7473
segs=
for n in 2 3; do
	echo "$ dsctl segment add node $n size 32M; dsctl segment grant node $n seg S to 1 perm rw"
	json=$("$dsctl" -j segment add node $n size 32M)
	seg=$(python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["seg"])' <<<"$json")
	segs=$segs${segs:+,}$(python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["addr"])' <<<"$json")
	"$dsctl" segment grant node $n seg "$seg" to 1 perm rw
done
"$dsctl" peer add node 3 addr "$DSMEM_LOCAL_ADDR" remote 1 listen >/dev/null
step "node 1 connects to node 3 too (which admits it likewise)" \
	"$dsctl" peer add node 1 addr "$DSMEM_LOCAL_ADDR" port 7473 remote 3
for ((i = 0; i < 100; i++)); do
	[ "$("$dsctl" peer show node 1 | grep -c remote_seg)" -ge 3 ] && break
	sleep 0.1
done
# the seed layout puts node i on memory node i mod 2, so that even this
# small tree spans both (the general one fills 256 KiB chunks in turn)
printf '\n=== a tree over segment %s (its superblock) and %s, node i on memory node i mod 2\n$ dsctl btree create node 1 segs %s layout seed\n' \
	"${segs%,*}" "${segs#*,}" "$segs"
out=$("$dsctl" btree create node 1 segs "$segs" layout seed)
echo "$out"
tree=${out#tree }
step "node 1 loads 5000 keys in random order, from two threads (one RDMA CAS lock per leaf changed)" \
	"$dsctl" btree load node 1 tree "$tree" count 5000 threads 2
step "a lookup (a new process: its index cache is cold, one READ per level)" \
	"$dsctl" btree get node 1 tree "$tree" key 42
step "an update: the leaf locked by CAS (with its read), then written and unlocked" \
	"$dsctl" btree put node 1 tree "$tree" key 42 value 4242
step "read back" "$dsctl" btree get node 1 tree "$tree" key 42
step "a delete" "$dsctl" btree del node 1 tree "$tree" key 1001
step "a range scan across it" "$dsctl" btree scan node 1 tree "$tree" start 999 limit 5
step "the tree: its superblock, both memory nodes' segments in use, this handle's counters" \
	"$dsctl" btree show node 1 tree "$tree"
step "YCSB-C for 2 seconds from one thread: with the cache warm, one READ per lookup, against the floor of dependent READs" \
	"$dsctl" btree bench node 1 tree "$tree" workload c keys 5000 load no time 2

printf '\n=== Slope: a live std::map<int, string> moved from node 1 to node 2, no serialization\n'
echo "(node 2 waits for it; node 1 builds 20000 keys with dsmem::slope::Allocator, keeps a"
echo " thread writing to it during the prefill, stops it when the module asks, hands it over;"
echo " node 2 checks it against the checksum taken at the handover and goes on using it)"
worker=$top/build/user/kselftest/slope_worker
sum=$(mktemp -u)
echo "$ slope_worker recv --node 2 --kind map --sum-file $sum &"
"$worker" recv --node 2 --kind map --sum-file "$sum" --timeout-ms 120000 > /tmp/slope-recv.out &
recv=$!
echo "$ slope_worker send --node 1 --dst 2 --kind map --n 20000 --writer --sum-file $sum"
"$worker" send --node 1 --dst 2 --kind map --n 20000 --writer --sum-file "$sum" |
	grep -E '^(kind|n|object_pages|writes|checksum|rounds|sent_units|dirty_units|no_owner_ns|total_ns|left)='
wait "$recv"
echo "# node 2:"
grep -E '^(checksum|expected|verified|modified|pulled_units|fault_waits)=' /tmp/slope-recv.out
rm -f "$sum" /tmp/slope-recv.out
step "the Slope range of each node: its leases, the objects it holds, its migrations" \
	"$dsctl" slope show

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

printf '\n=== the object store: a master, two clients lending memory, objects across nodes\n'
sdir=/tmp/dsmem-demo-store
rm -rf "$sdir"
mkdir -p "$sdir/slow"
masters=127.0.0.1:7790
export STORE_ENV_DIR=$sdir/env
step "a throwaway CA: certificates for the master, a client, an admin and mallory" \
	sh -c "'$top/scripts/store-certs' init '$sdir/tls' $DSMEM_LOCAL_ADDR &&
		'$top/scripts/store-certs' issue '$sdir/tls' mallory && ls '$sdir/tls'"
# dsctl, the clients and etcd's health check find theirs here
export DSMEM_STORE_TLS_DIR=$sdir/tls STORE_ETCD_TLS=$sdir/tls
step "etcd on loopback, over TLS with client certificates: the master's metadata and its leader election live there" \
	"$top/scripts/store-env" etcd-up 1
etcd_eps=$(sed -n 's/^STORE_ETCD=//p' "$sdir/env/env")
for n in 61 62 63 64 65; do "$dsctl" node add id $n dev rxe0 port $((7700 + n)); done
echo "(nodes 61: the master's, 62 and 63: clients with memory, 64 and 65: dsctl's)"
tls=(--tls-ca "$sdir/tls/ca.crt" --tls-cert "$sdir/tls/master.crt" --tls-key "$sdir/tls/master.key"
	--etcd-cacert "$sdir/tls/ca.crt" --etcd-cert "$sdir/tls/master.crt" --etcd-key "$sdir/tls/master.key")
echo "$ dsmaster --listen $masters --node 61 --addr $DSMEM_LOCAL_ADDR --port 7761 --etcd $etcd_eps --slow-tier dir:$sdir/slow ${tls[*]} &"
for n in 62 63; do
	echo "$ store_worker --masters $masters --node $n --segment 64M &    # a client lending 64 MiB"
done
store_up demo "$sdir" "$masters" 64M "62 63" \
	"$top/build/user/user/tools/dsmaster/dsmaster" --listen "$masters" --node 61 \
	--addr "$DSMEM_LOCAL_ADDR" --port 7761 --etcd "$etcd_eps" \
	--slow-tier "dir:$sdir/slow" "${tls[@]}"
head -c 3000000 /dev/urandom >"$sdir/object"
step "an object of 3 MB from node 64: two DRAM replicas (on both clients), flushed before the put ends" \
	"$dsctl" obj put demo/greeting file "$sdir/object" replicas 2 flush eager master "$masters" node 64
step "fetched by another client, node 65 (RDMA READs from the segments)" \
	"$dsctl" obj get demo/greeting file "$sdir/object.back" master "$masters" node 65
cmp "$sdir/object" "$sdir/object.back" && echo "the same 3000000 bytes"
step "a second version, small, one replica, no flush" \
	sh -c "echo 'hello from node 64' | $dsctl obj put demo/hello file - replicas 1 master $masters node 64"
step "read back to stdout" "$dsctl" obj get demo/hello file - master "$masters" node 65
step "its newest version, replicas and flush state" \
	"$dsctl" obj stat demo/greeting master "$masters" node 65
step "every object" "$dsctl" obj list master "$masters" node 65
step "mallory, certified but not the writer, may not delete it (the master reads who from the certificate)" \
	env DSMEM_STORE_CERT="$sdir/tls/mallory.crt" DSMEM_STORE_KEY="$sdir/tls/mallory.key" \
	"$dsctl" obj del demo/greeting master "$masters" node 65 || true
"$top/scripts/store-certs" init "$sdir/other"
step "nor may anyone whose certificate another CA signed, even to look" \
	env DSMEM_STORE_CERT="$sdir/other/client.crt" DSMEM_STORE_KEY="$sdir/other/client.key" \
	"$dsctl" master show master "$masters" || true
step "the master: leader, standbys, metadata in etcd" "$dsctl" master show master "$masters"
step "the pool's segments and their use" "$dsctl" segment show pool master "$masters"
step "the slow tier (a directory tree): the flushed object" \
	find "$sdir/slow" -type f
"$dsctl" node add id 66 dev rxe0 port 7766
step "Python (the dsmem package): KV-cache tensors, numpy float16 per layer and block, stored and fetched by prefix hash" \
	env PYTHONPATH="$top/build/user/python" /usr/bin/python3 "$top/examples/kvcache.py" \
	--masters "$masters" --node 66 --segment 32M
store_close
kill "$store_master" 2>/dev/null || true
wait "$store_master" 2>/dev/null || true
for n in 61 62 63 64 65 66; do "$dsctl" node del id $n 2>/dev/null || true; done
"$top/scripts/store-env" etcd-down
unset DSMEM_STORE_TLS_DIR STORE_ETCD_TLS
rm -rf "$sdir"
