#!/bin/bash
# make bench [B=subset]: benchmarks, each measured against its reference
# tool in the same run.  Prints one line per figure:
#   bench: NAME VALUE UNIT
# Timings under TCG emulation (the guest subsets) mean something only as
# ratios.
#
# Subsets: ctl (control path: dsctl vs iproute2's rdma over netlink);
# rdm (the data path vs perftest's ib_{read,write}_{lat,bw} on the same
# rxe, loopback in one guest); cache (the token cache's connection sweep,
# 16..16384 QPs, fixed and adaptive, against uncached access, and the
# measured cost of one resolve); sim (the cache simulator on a 20M-request
# Zipf trace: lru, s3fifo and seed, speed, memory and miss ratio, and LRU
# against Python's cachetools on the same requests); ui (the web console:
# a simulation run through it against the same dsctl sim run, a page of
# logs out of 100k events against the same query in Python's sqlite3, the
# CSV export, a login's Argon2id cost, an upload, its memory).  btree, obj
# and slope arrive with their capabilities.
#
# sim and ui run on the host, needing neither the module nor a guest; the
# other subsets run in one guest after them.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dsctl=$top/build/user/user/tools/dsctl
rdm_bench=$top/build/user/bench/rdm_bench
cache_bench=$top/build/user/bench/cache_bench
implemented=(ctl rdm cache sim ui)
planned=(btree obj slope)
host=(sim ui)

# Mean wall time of one invocation, in ms, over N runs.
mean_ms() {
	local n=$1; shift
	local t0 t1
	"$@" >/dev/null	# warm the page cache and the dentry cache over 9p
	t0=$(date +%s%N)
	for ((i = 0; i < n; i++)); do "$@" >/dev/null; done
	t1=$(date +%s%N)
	awk -v d=$((t1 - t0)) -v n="$n" 'BEGIN { printf "%.3f", d / n / 1e6 }'
}

bench_ctl() {
	local ours ref
	ours=$(mean_ms 40 "$dsctl" -j dev show)
	ref=$(mean_ms 40 rdma -j dev show)
	echo "bench: ctl.dev_show_ms $ours ms"
	echo "bench: ctl.rdma_dev_show_ms $ref ms"
	echo "bench: ctl.dev_show.ratio_vs_rdma_dev_show $(awk -v a="$ours" -v b="$ref" 'BEGIN { printf "%.2f", a / b }') x"
	# the same tools doing no netlink at all: what process start costs
	ours=$(mean_ms 40 "$dsctl" -V)
	ref=$(mean_ms 40 rdma -V)
	echo "bench: ctl.startup_ms $ours ms"
	echo "bench: ctl.rdma_startup_ms $ref ms"
	echo "bench: ctl.startup.ratio_vs_rdma $(awk -v a="$ours" -v b="$ref" 'BEGIN { printf "%.2f", a / b }') x"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# perftest over loopback on rxe0: the server in the background, the client
# prints a table whose last numeric line carries the figures.
perftest() {
	local tool=$1 size=$2 col=$3; shift 3
	"$tool" -d rxe0 -s "$size" "$@" >/dev/null 2>&1 &
	local srv=$!
	sleep 1
	"$tool" -d rxe0 -s "$size" "$@" "$DSMEM_LOCAL_ADDR" 2>/dev/null |
		awk -v c="$col" '$1 ~ /^[0-9]+$/ && NF >= c { v = $c } END { print v }'
	wait "$srv" 2>/dev/null || true
}

bench_rdm() {
	local ctl=$dsctl seg ours ref op
	"$ctl" node add id 1 dev rxe0 port 7471
	"$ctl" node add id 2 dev rxe0 port 7472
	seg=$("$ctl" -j segment add node 2 size 64M |
	      python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["addr"])')
	"$ctl" segment grant node 2 seg 1 to 1 perm rw
	"$ctl" peer add node 1 addr "$DSMEM_LOCAL_ADDR" port 7472 >/dev/null
	for ((i = 0; i < 100; i++)); do
		"$ctl" peer show node 1 | grep -q remote_seg && break
		sleep 0.1
	done
	for op in read write; do
		# latency: t_typical (column 5) of ib_*_lat, the median here
		ref=$(perftest ib_${op}_lat 8 5 -n 1000)
		ours=$("$rdm_bench" lat $op 1 "$seg" 8 1000)
		echo "bench: rdm.${op}_lat_8B $ours us"
		echo "bench: rdm.ib_${op}_lat_8B $ref us"
		echo "bench: rdm.${op}_lat_8B.ratio_vs_ib_${op}_lat $(ratio "$ours" "$ref") x"
		# bandwidth: BW average (column 4, MB/s) of ib_*_bw, 64 KiB
		ref=$(perftest ib_${op}_bw 65536 4 -n 2000)
		ours=$("$rdm_bench" bw $op 1 "$seg" 65536 2000 128)
		echo "bench: rdm.${op}_bw_64K $ours MB/s"
		echo "bench: rdm.ib_${op}_bw_64K $ref MB/s"
		echo "bench: rdm.${op}_bw_64K.ratio_vs_ib_${op}_bw $(ratio "$ours" "$ref") x"
	done
	"$ctl" node del id 1
	"$ctl" node del id 2
}

bench_cache() {
	"$cache_bench" "${DSMEM_CACHE_BENCH_OPS:-100000}"
}

# A field of dsctl's JSON: json_get EXPR reads stdin, EXPR in terms of d.
json_get() {
	python3 -c 'import json, sys; d = json.load(sys.stdin); print('"$1"')'
}

# The simulator on the host: one trace generated once, each policy in a
# process of its own (so that peak_rss_mib is its own), one thread each.
# The reference is Debian's python3-cachetools (hence /usr/bin/python3,
# where that package installs) on the trace's first $ref_n requests, and
# dsctl's LRU on the same requests: the misses must agree exactly.
bench_sim() {
	local dir=$top/build/bench trace json p ref_n ref ours
	local ref_misses ref_speed our_misses our_speed
	local spec=zipf:alpha=1.0,objects=1m,requests=20m,seed=1
	local -A speed
	trace=$dir/zipf20m.oracleGeneral
	ref_n=${DSMEM_SIM_REF_REQUESTS:-2000000}
	mkdir -p "$dir"
	"$dsctl" sim gen "$spec" file "$trace"
	for p in lru s3fifo seed; do
		# one window: the run's miss ratio over time is not wanted here
		json=$("$dsctl" -j sim run trace "$trace" policy $p size 16384 \
		       tiers L1:16384,L2:131072 threads 1 window 20000000)
		speed[$p]=$(json_get 'd["runs"][0]["mreqs_per_s"]' <<<"$json")
		echo "bench: sim.${p}_mreqs_per_s ${speed[$p]} Mreq/s"
		echo "bench: sim.${p}_peak_mib $(json_get 'd["peak_rss_mib"]' <<<"$json") MiB"
		echo "bench: sim.${p}_miss_ratio $(json_get 'd["runs"][0]["miss_ratio"]' <<<"$json") ratio"
	done
	for p in s3fifo seed; do
		echo "bench: sim.$p.ratio_vs_lru $(ratio "${speed[$p]}" "${speed[lru]}") x"
	done
	ref=$(/usr/bin/python3 "$top/tests/bench/sim_ref.py" "$trace" "$ref_n" 16384)
	ours=$("$dsctl" -j sim run trace "$trace" limit "$ref_n" policy lru size 16384 \
	       threads 1 window "$ref_n")
	ref_misses=$(json_get 'd["misses"]' <<<"$ref")
	ref_speed=$(json_get 'd["mreqs_per_s"]' <<<"$ref")
	our_misses=$(json_get 'd["runs"][0]["misses"]' <<<"$ours")
	our_speed=$(json_get 'd["runs"][0]["mreqs_per_s"]' <<<"$ours")
	echo "bench: sim.ref_requests $ref_n requests"
	echo "bench: sim.lru_ref_misses $our_misses misses"
	echo "bench: sim.cachetools_lru_misses $ref_misses misses"
	echo "bench: sim.lru_misses.ratio_vs_cachetools $(awk -v a="$our_misses" -v b="$ref_misses" 'BEGIN { printf "%.3f", a / b }') x"
	echo "bench: sim.lru_ref_mreqs_per_s $our_speed Mreq/s"
	echo "bench: sim.cachetools_lru_mreqs_per_s $ref_speed Mreq/s"
	echo "bench: sim.lru_speed.ratio_vs_cachetools $(ratio "$our_speed" "$ref_speed") x"
}

# Wall time of a command, in ms.
time_ms() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null
	t1=$(date +%s%N)
	awk -v d=$((t1 - t0)) 'BEGIN { printf "%.1f", d / 1e6 }'
}

bench_ui() {
	local dir url jar csrf pid spec=zipf:alpha=0.99,objects=1m,requests=20m,seed=3
	local ours ref id t0 t1 n=20
	dir=$(mktemp -d)
	jar=$dir/jar
	printf 'bench-password\n' | "$dsctl" ui user add bench role admin db "$dir/ui.db"
	# 100k log events, as a month of a busy cluster's would be
	/usr/bin/python3 - "$dir/ui.db" <<'PY'
import random, sqlite3, sys, time
db = sqlite3.connect(sys.argv[1])
comps = ["device", "node", "peer", "segment", "cache", "audit"]
now = time.time()
rows = [(now - 100000 + i, "warning" if i % 50 == 0 else "info", i % 4,
         comps[i % 6], "peer_state node %d peer %d state %s" % (i % 4, i % 64,
         "error" if i % 50 == 0 else "up"), None) for i in range(100000)]
db.executemany("INSERT INTO events (ts, level, node, component, message, data) VALUES (?,?,?,?,?,?)", rows)
db.commit()
PY
	"$dsctl" ui listen 127.0.0.1:0 db "$dir/ui.db" > "$dir/out" &
	pid=$!
	for ((i = 0; i < 100; i++)); do grep -q listening "$dir/out" && break; sleep 0.1; done
	url=$(grep -o 'http://[0-9.:]*' "$dir/out")
	# a 32 MiB text trace to upload (parsed and kept by the console)
	seq 1 4000000 | awk '{ print ($1 * 7919) % 500000 }' > "$dir/trace.txt"
	ref=$("$dsctl" -j sim run gen "$spec" policy lru,s3fifo size 1%,10%)
	# one keep-alive client (Python's http.client), so that the client's
	# own cost (a process per request) is not what is measured
	/usr/bin/python3 - "$url" "$dir/ui.db" "$spec" "$dir/trace.txt" "$pid" 3<<<"$ref" <<'PY'
import http.client, json, os, sqlite3, sys, time, urllib.parse
url, dbpath, spec, trace, pid = sys.argv[1:6]
ref = json.load(os.fdopen(3))
host, port = urllib.parse.urlparse(url).hostname, urllib.parse.urlparse(url).port
c = http.client.HTTPConnection(host, port)
def call(method, path, body=None, headers={}):
    c.request(method, path, body, headers)
    r = c.getresponse()
    return r.status, r.getheaders(), r.read()
def ms(t0): return (time.perf_counter() - t0) * 1000
def ratio(a, b): return "%.2f" % (a / b)

t0 = time.perf_counter()
st, hdrs, body = call("POST", "/api/login", json.dumps({"user": "bench", "password": "bench-password"}),
                      {"Content-Type": "application/json"})
print("bench: ui.login_ms %.1f ms" % ms(t0))
cookie = dict(hdrs)["Set-Cookie"].split(";")[0]
csrf = json.loads(body)["csrf"]
H = {"Cookie": cookie}
HW = {"Cookie": cookie, "X-CSRF-Token": csrf, "Content-Type": "application/json"}

n = 50
call("GET", "/api/session", None, H)
t0 = time.perf_counter()
for _ in range(n): call("GET", "/api/session", None, H)
floor = ms(t0) / n
q = "/api/logs?component=peer&level=warning&q=state%20error&limit=100"
call("GET", q, None, H)
t0 = time.perf_counter()
for _ in range(n): st, _, body = call("GET", q, None, H)
page = ms(t0) / n
assert st == 200 and len(json.loads(body)["events"]) == 100
db = sqlite3.connect(dbpath)
sql = ("SELECT id, ts, level, node, component, message, data FROM events WHERE level IN "
       "('warning','error') AND component = ? AND instr(lower(message), lower(?)) > 0 "
       "ORDER BY id DESC LIMIT 101")
db.execute(sql, ("peer", "state error")).fetchall()
t0 = time.perf_counter()
for _ in range(n): db.execute(sql, ("peer", "state error")).fetchall()
raw = ms(t0) / n
print("bench: ui.session_get_ms %.3f ms" % floor)
print("bench: ui.logs_page_ms_100k %.3f ms" % page)
print("bench: ui.sqlite_query_ms_100k %.3f ms" % raw)
print("bench: ui.logs_page.ratio_vs_sqlite %s x" % ratio(page, raw))
t0 = time.perf_counter()
st, _, body = call("GET", "/api/logs?format=csv", None, H)
csv_ms = ms(t0)
assert st == 200 and body.count(b"\n") > 100000
t0 = time.perf_counter()
rows = db.execute("SELECT id, ts, level, node, component, message FROM events ORDER BY id DESC").fetchall()
import csv, io
out = io.StringIO(); csv.writer(out).writerows(rows)
py_csv = ms(t0)
print("bench: ui.logs_csv_export_ms_100k %.1f ms" % csv_ms)
print("bench: ui.python_csv_export_ms_100k %.1f ms" % py_csv)
print("bench: ui.logs_csv_export.ratio_vs_python %s x" % ratio(csv_ms, py_csv))

def vm(key):
    line = [l for l in open("/proc/%s/status" % pid) if l.startswith(key)][0]
    return int(line.split()[1]) / 1024
# the console's own memory with 100k events served, before the big upload
print("bench: ui.rss_mib_after_logs %.1f MiB" % vm("VmHWM"))

data = open(trace, "rb").read()
b = "----dsmembench"
mp = (("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"trace.txt\"\r\n"
       "Content-Type: text/plain\r\n\r\n" % b).encode() + data + ("\r\n--%s--\r\n" % b).encode())
t0 = time.perf_counter()
st, _, body = call("POST", "/api/data/files", mp, {"Cookie": cookie, "X-CSRF-Token": csrf,
                   "Content-Type": "multipart/form-data; boundary=" + b})
up = ms(t0)
assert st == 201, body
print("bench: ui.upload_mib_per_s %.1f MiB/s" % (len(data) / 1048576 / (up / 1000)))

run = {"trace": {"gen": spec}, "policies": ["lru", "s3fifo"], "sizes": ["1%", "10%"]}
t0 = time.perf_counter()
st, _, body = call("POST", "/api/sim/runs", json.dumps(run), HW)
rid = json.loads(body)["id"]
while True:
    st, _, body = call("GET", "/api/sim/runs/%d" % rid, None, H)
    d = json.loads(body)
    if d["state"] not in ("queued", "running"): break
    time.sleep(0.05)
ours = ms(t0)
assert d["state"] == "done"
# the simulator's own time in both: the console's record against dsctl's
print("bench: ui.sim_run_wall_ms %.1f ms" % ours)
print("bench: ui.sim_run_s %.3f s" % d["result"]["seconds"])
print("bench: ui.dsctl_sim_run_s %.3f s" % ref["seconds"])
print("bench: ui.sim_run.ratio_vs_dsctl %s x" % ratio(d["result"]["seconds"], ref["seconds"]))
same = all(a["misses"] == b["misses"] for a, b in zip(d["result"]["runs"], ref["runs"]))
print("bench: ui.sim_misses_equal_dsctl %d bool" % same)
# the peak: the 32 MiB upload and the 20M-request runs held at once
print("bench: ui.peak_rss_mib %.1f MiB" % vm("VmHWM"))
print("bench: ui.dsctl_sim_peak_rss_mib %.1f MiB" % ref["peak_rss_mib"])
PY
	kill "$pid"
	wait "$pid" || true
	rm -rf "$dir"
}

if [ "${1:-}" = --in-guest ]; then
	shift
	for b in "$@"; do "bench_$b"; done
	exit 0
fi

subsets=("${@:-${implemented[@]}}")
[ -n "${subsets[*]}" ] || subsets=("${implemented[@]}")
for b in "${subsets[@]}"; do
	if [[ " ${planned[*]} " == *" $b "* ]]; then
		echo "Error: bench subset \"$b\" is not implemented yet" >&2
		exit 1
	elif [[ " ${implemented[*]} " != *" $b "* ]]; then
		echo "Error: unknown bench subset \"$b\" (have: ${implemented[*]})" >&2
		exit 1
	fi
done
guest_subsets=()
for b in "${subsets[@]}"; do
	if [[ " ${host[*]} " == *" $b "* ]]; then
		"bench_$b"
	else
		guest_subsets+=("$b")
	fi
done
[ ${#guest_subsets[@]} -gt 0 ] || exit 0
# a memory-only NUMA node: where the token cache puts L2, as CXL would be
exec "$top/scripts/guest" --numa-memnode 128 -t 1200 -- "$0" --in-guest "${guest_subsets[@]}"
