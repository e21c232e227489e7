#!/bin/bash
# make bench [B=subset]: benchmarks, each measured against its reference
# tool in the same run.  Prints one line per figure:
#   bench: NAME VALUE UNIT
# Timings under TCG emulation (the guest subsets) mean something only as
# ratios.
#
# Subsets: ctl (control path: dsctl vs iproute2's rdma over netlink);
# rdm (the data path vs perftest's ib_{read,write}_{lat,bw} on the same
# rxe, loopback in one guest, then across two guests, rdm.pair.*); cache (the token cache's connection sweep,
# 16..16384 QPs, fixed and adaptive, against uncached access, and the
# measured cost of one resolve); sim (the cache simulator on a 20M-request
# Zipf trace: lru, s3fifo and seed, speed, memory and miss ratio, and LRU
# against Python's cachetools on the same requests); ui (the web console:
# a simulation run through it against the same dsctl sim run, a page of
# logs out of 100k events against the same query in Python's sqlite3, the
# CSV export, a login's Argon2id cost, an upload, its memory); btree (the
# B+tree on disaggregated memory: YCSB A-F on rxe, round trips per
# operation, the rate of lookups against the floor of dependent READs
# measured in the same run, scaling from 1 to 4 threads and from 1 to 2
# memory nodes, lock retries between two compute nodes); slope (the cost
# of tracking a page's first write, against mprotect + SIGSEGV and
# userfaultfd write-protect; live migrations between two nodes of the
# guest, 40 and 400 MiB, clean and with a writer, their prefill bandwidth
# against perftest's ib_write_bw on the same rxe); obj (the object store:
# dsmaster and two clients with segments, a third client putting and
# getting 1 MiB and 16 MiB objects against perftest's ib_write_bw and
# ib_read_bw of the same message size on the same rxe, 16 KiB ops/s and
# p99, the master's metadata operations/s); chaos (the object store under
# faults, Jepsen-style: two masters, three etcd members, three clients
# for CHAOS_SECONDS, default 600, with the nemesis killing and pausing
# masters, etcd members and clients and delaying traffic; the checker's
# operations, faults, linearizability violations and lost acknowledged
# puts, which must be 0); master (dsmaster's metadata path on the host,
# no module: rates of its calls, memory per object, and its longest lock
# hold and p99 during a snapshot, with 1 and 10 million objects).
#
# DSMEM_RING_THREADS=N sets the module's ring_threads in the guest: how
# many handles get the shared rings (none by default on its 2 CPUs; rdm
# takes one for its ring figures whatever it says).
#
# sim, ui and master run on the host, needing neither the module nor a
# guest; the other subsets run in one guest after them.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dsctl=$top/build/user/user/tools/dsctl
rdm_bench=$top/build/user/bench/rdm_bench
cache_bench=$top/build/user/bench/cache_bench
slope_bench=$top/build/user/bench/slope_bench
obj_bench=$top/build/user/bench/obj_bench
master_bench=$top/build/user/bench/master_bench
store_worker=$top/build/user/kselftest/store_worker
dsmaster=$top/build/user/user/tools/dsmaster/dsmaster
# shellcheck source=scripts/store-up.sh
. "$top/scripts/store-up.sh"
implemented=(ctl rdm cache sim ui btree slope obj chaos master)
planned=()
host=(sim ui master)

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

# System calls a command makes (its threads' too), as strace counts them.
syscalls() {
	local out
	out=$(mktemp)
	strace -f -c -o "$out" "$@" >/dev/null
	awk '$NF == "total" { print $4 }' "$out"
	rm -f "$out"
}

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

# ib_write_bw of 64 KiB on rxe0 and rxe1 at once, each to its own
# device's address; their BW averages (MiB/s) summed.
perftest_2nic() {
	local out0 out1 srv0 srv1
	out0=$(mktemp) out1=$(mktemp)
	ib_write_bw -d rxe0 -p 18515 -s 65536 -n 2000 >/dev/null 2>&1 &
	srv0=$!
	ib_write_bw -d rxe1 -p 18516 -s 65536 -n 2000 >/dev/null 2>&1 &
	srv1=$!
	sleep 1
	ib_write_bw -d rxe0 -p 18515 -s 65536 -n 2000 "$DSMEM_LOCAL_ADDR" >"$out0" 2>/dev/null &
	ib_write_bw -d rxe1 -p 18516 -s 65536 -n 2000 "$DSMEM_LOCAL_ADDR2" >"$out1" 2>/dev/null
	wait "$srv0" "$srv1" 2>/dev/null || true
	wait
	cat "$out0" "$out1" |
		awk '$1 ~ /^[0-9]+$/ && NF >= 4 { s += $4 } END { printf "%.2f", s }'
	rm -f "$out0" "$out1"
}

# Nodes A and B on DEVS (ports 747A, 747B), B's 64 MiB segment granted
# to A, A connected to B and holding the grant; prints its address.
bench_pair() {
	local a=$1 b=$2 devs=$3 ctl=$dsctl seg i
	"$ctl" node add id "$a" dev "$devs" port "747$a"
	"$ctl" node add id "$b" dev "$devs" port "747$b"
	seg=$("$ctl" -j segment add node "$b" size 64M |
	      python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["addr"])')
	"$ctl" segment grant node "$b" seg 1 to "$a" perm rw
	"$ctl" peer add node "$b" addr "$DSMEM_LOCAL_ADDR" remote "$a" listen >/dev/null
	"$ctl" peer add node "$a" addr "$DSMEM_LOCAL_ADDR" port "747$b" remote "$b" >/dev/null
	for ((i = 0; i < 100; i++)); do
		"$ctl" peer show node "$a" | grep -q remote_seg && break
		sleep 0.1
	done
	echo "$seg"
}

# Two devices: nodes 3 and 4 on rxe0 and rxe1 each, so node 3's peer has
# a path through each; an unordered handle spreads its WRITEs over both.
bench_rdm_2nic() {
	local ctl=$dsctl seg ours ref one single i
	seg=$(bench_pair 3 4 rxe0,rxe1)
	for ((i = 0; i < 100; i++)); do
		"$ctl" -j peer show node 3 | grep -q '"paths":2' && break
		sleep 0.1
	done
	echo "bench: rdm.paths_2nic $("$ctl" -j peer show node 3 |
		python3 -c 'import json,sys; print(json.load(sys.stdin)[0].get("paths", 1))') paths"
	# rxe is the CPU: the reference's two processes post from two CPUs,
	# so two handles, each from its own thread, 64 in flight each; the
	# same ordered (one path), and one unordered handle from one thread
	# with the module's rings as set (none on the 2-CPU guest by
	# default), and with one ring forced, whose polling thread takes a
	# CPU from rxe here
	local threads ring
	threads=$(cat /sys/module/dsmem/parameters/ring_threads)
	ref=$(perftest_2nic)
	ours=$("$rdm_bench" -u -t 2 bw write 3 "$seg" 65536 4000 64)
	one=$("$rdm_bench" -t 2 bw write 3 "$seg" 65536 4000 64)
	single=$("$rdm_bench" -u bw write 3 "$seg" 65536 4000 128)
	echo 1 > /sys/module/dsmem/parameters/ring_threads
	ring=$("$rdm_bench" -u -t 2 bw write 3 "$seg" 65536 4000 64)
	echo "$threads" > /sys/module/dsmem/parameters/ring_threads
	echo "bench: rdm.bw_64K_2nic $ours MiB/s"
	echo "bench: rdm.bw_64K_2nic_one_path $one MiB/s"
	echo "bench: rdm.bw_64K_2nic_one_thread $single MiB/s"
	echo "bench: rdm.bw_64K_2nic_one_ring $ring MiB/s"
	echo "bench: rdm.bw_64K_2nic_one_ring.ratio_vs_sum_ib_write_bw $(ratio "$ring" "$ref") x"
	echo "bench: rdm.sum_ib_write_bw_64K_2nic $ref MiB/s"
	echo "bench: rdm.bw_64K_2nic.ratio_vs_sum_ib_write_bw $(ratio "$ours" "$ref") x"
	echo "bench: rdm.bw_64K_2nic.ratio_vs_one_path $(ratio "$ours" "$one") x"
	"$ctl" node del id 3
	"$ctl" node del id 4
}

bench_rdm() {
	local ctl=$dsctl seg ours ref op remote
	# set-up cost of authentication: the handshake adds one round trip
	ours=$("$rdm_bench" connect keyed "$DSMEM_LOCAL_ADDR" 20)
	ref=$("$rdm_bench" connect insecure "$DSMEM_LOCAL_ADDR" 20)
	echo "bench: rdm.connect_ms $ours ms"
	echo "bench: rdm.connect_ms_unauthenticated $ref ms"
	echo "bench: rdm.connect_ms.ratio_vs_unauthenticated $(ratio "$ours" "$ref") x"
	seg=$(bench_pair 1 2 rxe0)
	# The shared rings are the default path where the module gives one;
	# -i is the ioctl path, which old programs and plain buffers beyond 64
	# KiB take.  One ring for the runs below, whatever the CPUs.
	local threads
	threads=$(cat /sys/module/dsmem/parameters/ring_threads)
	echo 1 > /sys/module/dsmem/parameters/ring_threads
	for op in read write; do
		# latency: t_typical (column 5) of ib_*_lat, the median here
		ref=$(perftest ib_${op}_lat 8 5 -n 1000)
		ours=$("$rdm_bench" lat $op 1 "$seg" 8 1000)
		old=$("$rdm_bench" -i lat $op 1 "$seg" 8 1000)
		echo "bench: rdm.${op}_lat_8B $ours us"
		echo "bench: rdm.${op}_lat_8B_ioctl $old us"
		echo "bench: rdm.ib_${op}_lat_8B $ref us"
		echo "bench: rdm.${op}_lat_8B.ratio_vs_ib_${op}_lat $(ratio "$ours" "$ref") x"
		echo "bench: rdm.${op}_lat_8B_ioctl.ratio_vs_ib_${op}_lat $(ratio "$old" "$ref") x"
		if [ $op = write ]; then
			# ib_write_lat times a ping-pong of two WRITEs and reports
			# half of it; a dsmem WRITE waits for its completion, a
			# whole round trip, so that is the fair reference
			ref=$(awk -v v="$ref" 'BEGIN { printf "%.2f", 2 * v }')
			echo "bench: rdm.ib_write_rtt_8B $ref us"
			echo "bench: rdm.write_lat_8B.ratio_vs_ib_write_rtt $(ratio "$ours" "$ref") x"
			echo "bench: rdm.write_lat_8B_ioctl.ratio_vs_ib_write_rtt $(ratio "$old" "$ref") x"
		fi
		# bandwidth: BW average (column 4) of ib_*_bw, 64 KiB; perftest's
		# "MB/sec" is MiB/s (2^20 bytes), and so is rdm_bench's figure
		ref=$(perftest ib_${op}_bw 65536 4 -n 2000)
		ours=$("$rdm_bench" bw $op 1 "$seg" 65536 2000 128)
		old=$("$rdm_bench" -i bw $op 1 "$seg" 65536 2000 128)
		echo "bench: rdm.${op}_bw_64K $ours MiB/s"
		echo "bench: rdm.${op}_bw_64K_ioctl $old MiB/s"
		echo "bench: rdm.ib_${op}_bw_64K $ref MiB/s"
		echo "bench: rdm.${op}_bw_64K.ratio_vs_ib_${op}_bw $(ratio "$ours" "$ref") x"
		echo "bench: rdm.${op}_bw_64K_ioctl.ratio_vs_ib_${op}_bw $(ratio "$old" "$ref") x"
	done
	# message rate: 8-byte READs, 128 in flight; ib_read_bw's MsgRate
	# (column 5, Mpps) with its default queue depth is the reference
	ref=$(perftest ib_read_bw 8 5 -n 20000)
	ref=$(awk -v v="$ref" 'BEGIN { printf "%.0f", v * 1e6 }')
	ours=$("$rdm_bench" ops read 1 "$seg" 8 20000 128)
	old=$("$rdm_bench" -i ops read 1 "$seg" 8 20000 128)
	echo "bench: rdm.ops_8B_per_s $ours ops/s"
	echo "bench: rdm.ops_8B_per_s_ioctl $old ops/s"
	echo "bench: rdm.ib_read_bw_8B_per_s $ref ops/s"
	echo "bench: rdm.ops_8B_per_s.ratio_vs_ib_read_bw_8B $(ratio "$ours" "$ref") x"
	echo "bench: rdm.ops_8B_per_s_ioctl.ratio_vs_ib_read_bw_8B $(ratio "$old" "$ref") x"
	# system calls an operation costs: strace counts those of a run of
	# one batch and of a long run, so set-up and exit cancel out (two
	# long runs would leave their waits' noise in the difference)
	local n1 n2 path
	for path in "" -i; do
		n1=$(syscalls "$rdm_bench" $path ops read 1 "$seg" 8 128 128)
		n2=$(syscalls "$rdm_bench" $path ops read 1 "$seg" 8 20096 128)
		echo "bench: rdm.syscalls_per_op${path:+_ioctl} $(awk -v a="$n1" -v b="$n2" 'BEGIN { printf "%.4f", (b - a) / 19968 }') syscalls"
		n1=$(syscalls "$rdm_bench" $path sync read 1 "$seg" 8 10)
		n2=$(syscalls "$rdm_bench" $path sync read 1 "$seg" 8 2010)
		echo "bench: rdm.syscalls_per_sync_op${path:+_ioctl} $(awk -v a="$n1" -v b="$n2" 'BEGIN { printf "%.4f", (b - a) / 2000 }') syscalls"
	done
	# the local path: node 2 reads 4 KiB of its own segment, a copy in
	# the module; the references are memcpy() and node 1's read of the
	# same bytes through the device
	"$ctl" segment grant node 2 seg 1 to 2 perm rw
	ours=$("$rdm_bench" sync read 2 "$seg" 4096 20000)
	old=$("$rdm_bench" -i sync read 2 "$seg" 4096 20000)
	ref=$("$rdm_bench" memcpy 4096 200000)
	remote=$("$rdm_bench" sync read 1 "$seg" 4096 5000)
	echo "bench: rdm.local_get_4K $ours us"
	echo "bench: rdm.local_get_4K_ioctl $old us"
	echo "bench: rdm.memcpy_4K $ref us"
	echo "bench: rdm.remote_get_4K $remote us"
	echo "bench: rdm.local_get_4K.ratio_vs_memcpy $(ratio "$ours" "$ref") x"
	echo "bench: rdm.local_get_4K_ioctl.ratio_vs_memcpy $(ratio "$old" "$ref") x"
	echo "bench: rdm.local_get_4K.ratio_vs_remote_get_4K $(ratio "$ours" "$remote") x"
	"$ctl" node del id 1
	"$ctl" node del id 2
	echo "$threads" > /sys/module/dsmem/parameters/ring_threads
	bench_rdm_2nic
}

# ---- rdm across two guests: each its own CPUs and rxe, a link between ----
# Guest 1 serves: perftest's servers one step at a time, then node 2 on
# rxe0,rxe1 with a 64 MiB segment granted to node 1.  Guest 0 measures:
# perftest's clients, then node 1, connected to node 2, with rdm_bench.
# They meet through files in DSMEM_RUN_DIR (coherent between them).
pair_say() { # $1: name, $2: content
	printf '%s\n' "${2:-1}" > "$DSMEM_RUN_DIR/$1.tmp"
	mv "$DSMEM_RUN_DIR/$1.tmp" "$DSMEM_RUN_DIR/$1"
}

pair_wait() { # $1: name; prints its content
	local i
	for ((i = 0; i < 1800; i++)); do
		[ -e "$DSMEM_RUN_DIR/$1" ] && { cat "$DSMEM_RUN_DIR/$1"; return 0; }
		sleep 0.1
	done
	echo "Error: the other guest did not write $1" >&2
	return 1
}

listening() { [ -n "$(ss -Htln "( sport = :$1 )")" ]; }

# perftest's steps, the same list in both guests: tool, size, column of
# its last numeric line, iterations (see bench_rdm for the columns)
pair_steps=("ib_read_lat 8 5 1000" "ib_write_lat 8 5 1000"
	    "ib_read_bw 65536 4 2000" "ib_write_bw 65536 4 2000")

# Guest 1's side of a step: its server(s), ready once listening.
pair_serve() { # $1: step number, $2...: tool size col iters; $6: 2nic
	local k=$1 tool=$2 size=$3 iters=$5 two=${6:-} srv=() i
	timeout 120 "$tool" -d rxe0 -p 18515 -s "$size" -n "$iters" >/dev/null 2>&1 &
	srv+=($!)
	if [ -n "$two" ]; then
		timeout 120 "$tool" -d rxe1 -p 18516 -s "$size" -n "$iters" >/dev/null 2>&1 &
		srv+=($!)
	fi
	for ((i = 0; i < 100; i++)); do
		listening 18515 && { [ -z "$two" ] || listening 18516; } && break
		sleep 0.1
	done
	pair_say "ready.$k"
	wait "${srv[@]}" || true
}

# Guest 0's side: the figure of one client run.
pair_client() { # $1: device, $2: port, $3: address, $4...: tool size col iters
	local dev=$1 port=$2 addr=$3 tool=$4 size=$5 col=$6 iters=$7
	timeout 120 "$tool" -d "$dev" -p "$port" -s "$size" -n "$iters" "$addr" 2>/dev/null |
		awk -v c="$col" '$1 ~ /^[0-9]+$/ && NF >= c { v = $c } END { print v }'
}

bench_pair_server() {
	local k seg keyfile
	keyfile=$(mktemp)
	pair_wait key | base64 -d > "$keyfile"
	"$dsctl" key add name cluster file "$keyfile"
	rm -f "$keyfile"
	for k in "${!pair_steps[@]}"; do
		# shellcheck disable=SC2086 # the step's words are its arguments
		pair_serve "$k" ${pair_steps[k]}
	done
	pair_serve 2nic ib_write_bw 65536 4 2000 2nic
	"$dsctl" node add id 2 dev rxe0,rxe1 port 7472
	seg=$("$dsctl" -j segment add node 2 size 64M | json_get 'd[0]["addr"]')
	"$dsctl" segment grant node 2 seg 1 to 1 perm rw
	"$dsctl" peer add node 2 addr "$DSMEM_PEER_ADDR" remote 1 listen >/dev/null
	pair_say seg "$seg"
	pair_wait finished >/dev/null
	"$dsctl" node del id 2
}

bench_pair_client() {
	local k tool size col iters ref ours old seg i a b keyfile
	local -A refs=()
	keyfile=$(mktemp)
	head -c 32 /dev/urandom > "$keyfile"
	pair_say key "$(base64 -w0 "$keyfile")"
	"$dsctl" key add name cluster file "$keyfile"
	rm -f "$keyfile"
	for k in "${!pair_steps[@]}"; do
		read -r tool size col iters <<<"${pair_steps[k]}"
		pair_wait "ready.$k" >/dev/null
		sleep 0.5
		refs[$tool]=$(pair_client rxe0 18515 "$DSMEM_PEER_ADDR" "$tool" "$size" "$col" "$iters")
	done
	pair_wait ready.2nic >/dev/null
	sleep 0.5
	a=$(mktemp) b=$(mktemp)
	pair_client rxe0 18515 "$DSMEM_PEER_ADDR" ib_write_bw 65536 4 2000 >"$a" &
	pair_client rxe1 18516 "$DSMEM_PEER_ADDR2" ib_write_bw 65536 4 2000 >"$b"
	wait
	refs[2nic]=$(awk '{ s += $1 } END { printf "%.2f", s }' "$a" "$b")
	rm -f "$a" "$b"

	"$dsctl" node add id 1 dev rxe0,rxe1 port 7471
	seg=$(pair_wait seg)
	"$dsctl" peer add node 1 addr "$DSMEM_PEER_ADDR" port 7472 remote 2 >/dev/null
	for ((i = 0; i < 200; i++)); do
		"$dsctl" -j peer show node 1 | grep -q '"paths":2' &&
			"$dsctl" peer show node 1 | grep -q remote_seg && break
		sleep 0.1
	done
	if ! "$dsctl" peer show node 1 | grep -q remote_seg; then
		echo "Error: bench pair: node 1 holds no grant of node 2 after 20 s" >&2
		"$dsctl" peer show node 1 >&2
	fi
	echo 1 > /sys/module/dsmem/parameters/ring_threads
	for op in read write; do
		ours=$("$rdm_bench" lat $op 1 "$seg" 8 1000)
		ref=${refs[ib_${op}_lat]}
		echo "bench: rdm.pair.${op}_lat_8B $ours us"
		echo "bench: rdm.pair.ib_${op}_lat_8B $ref us"
		if [ $op = write ]; then
			# a round trip, as in bench_rdm
			ref=$(awk -v v="$ref" 'BEGIN { printf "%.2f", 2 * v }')
			echo "bench: rdm.pair.ib_write_rtt_8B $ref us"
			echo "bench: rdm.pair.write_lat_8B.ratio_vs_ib_write_rtt $(ratio "$ours" "$ref") x"
			# both ends of ib_write_lat spin: across the guests, on 2
			# host cores, that starves rxe; a READ is a round trip too
			echo "bench: rdm.pair.write_lat_8B.ratio_vs_ib_read_lat $(ratio "$ours" "${refs[ib_read_lat]}") x"
		else
			echo "bench: rdm.pair.read_lat_8B.ratio_vs_ib_read_lat $(ratio "$ours" "$ref") x"
		fi
		ours=$("$rdm_bench" bw $op 1 "$seg" 65536 2000 128)
		ref=${refs[ib_${op}_bw]}
		echo "bench: rdm.pair.${op}_bw_64K $ours MiB/s"
		echo "bench: rdm.pair.ib_${op}_bw_64K $ref MiB/s"
		echo "bench: rdm.pair.${op}_bw_64K.ratio_vs_ib_${op}_bw $(ratio "$ours" "$ref") x"
	done
	echo "bench: rdm.pair.paths_2nic $("$dsctl" -j peer show node 1 | json_get 'd[0].get("paths", 1)') paths"
	ours=$("$rdm_bench" -u -t 2 bw write 1 "$seg" 65536 4000 64)
	old=$("$rdm_bench" -t 2 bw write 1 "$seg" 65536 4000 64)
	echo "bench: rdm.pair.bw_64K_2nic $ours MiB/s"
	echo "bench: rdm.pair.bw_64K_2nic_one_path $old MiB/s"
	echo "bench: rdm.pair.sum_ib_write_bw_64K_2nic ${refs[2nic]} MiB/s"
	echo "bench: rdm.pair.bw_64K_2nic.ratio_vs_sum_ib_write_bw $(ratio "$ours" "${refs[2nic]}") x"
	echo "bench: rdm.pair.bw_64K_2nic.ratio_vs_one_path $(ratio "$ours" "$old") x"
	pair_say finished
	"$dsctl" node del id 1
}

# Nodes 1 and 2 on rxe0, node 1 connected to node 2 (which admits it, a
# listen peer): slope_bench migrates from 1 to 2.  Its prefill pushes 4
# KiB pages to the destination, so its bandwidth is set against
# ib_write_bw of 4 KiB messages; both in MiB/s (perftest's "MB/sec" is
# 2^20 bytes).
bench_slope() {
	local ctl=$dsctl out ours ref i
	"$ctl" node add id 1 dev rxe0 port 7471
	"$ctl" node add id 2 dev rxe0 port 7472
	"$ctl" peer add node 2 addr "$DSMEM_LOCAL_ADDR" remote 1 listen >/dev/null
	"$ctl" peer add node 1 addr "$DSMEM_LOCAL_ADDR" port 7472 remote 2 >/dev/null
	for ((i = 0; i < 100; i++)); do
		[ "$("$ctl" -j peer show | json_get 'sum(p["state"] == "up" for p in d)')" -ge 2 ] && break
		sleep 0.1
	done
	"$slope_bench" dirty
	"$slope_bench" constread
	"$slope_bench" first
	out=$(mktemp)
	"$slope_bench" migrate | tee "$out"
	ours=$(awk '$2 == "slope.prefill_bw_4K" { print $3 }' "$out")
	rm -f "$out"
	ref=$(perftest ib_write_bw 4096 4 -n 5000)
	echo "bench: slope.ib_write_bw_4K $ref MiB/s"
	echo "bench: slope.prefill_bw_4K.ratio_vs_ib_write_bw $(ratio "$ours" "$ref") x"
	"$ctl" node del id 1
	"$ctl" node del id 2
}

# Local nodes on rxe0: 1 and 4 are compute nodes, 2, 3 and 5 memory
# nodes.  Segment 1 of node 2 holds a tree on one memory node; segment 2
# of node 2 and segment 1 of node 3 a tree on two; then a tree of byte-
# string keys on node 2, a tree of two replicas on nodes 2 and 3 and one
# of three on nodes 2, 3 and 5.  Every segment is granted to both compute
# nodes, and both connect to every memory node.
bench_btree() {
	local ctl=$dsctl n seg json keys=${DSMEM_BTREE_KEYS:-40000} secs=${DSMEM_BTREE_SECS:-3}
	local t1 t2 t3 tr2 tr3 c1 cu c4 c2mn a1 a2 j w i m su ss
	local -a addr=() ratios=()
	local -A mem_port=([2]=7472 [3]=7473 [5]=7475)
	for n in 1 2 3 4 5; do "$ctl" node add id $n dev rxe0 port $((7470 + n)); done
	for n in 2 2 3 2 2 3 2 3 5; do
		json=$("$ctl" -j segment add node $n size 32M)
		seg=$(json_get 'd[0]["seg"]' <<<"$json")
		addr+=("$(json_get 'd[0]["addr"]' <<<"$json")")
		"$ctl" segment grant node $n seg "$seg" to 1 perm rw
		"$ctl" segment grant node $n seg "$seg" to 4 perm rw
	done
	for n in 1 4; do
		for m in "${!mem_port[@]}"; do
			"$ctl" peer add node "$m" addr "$DSMEM_LOCAL_ADDR" remote $n listen >/dev/null
			"$ctl" peer add node $n addr "$DSMEM_LOCAL_ADDR" port "${mem_port[$m]}" \
				remote "$m" >/dev/null
		done
	done
	# both compute nodes hold every grant before any tree is made
	for ((i = 0; i < 200; i++)); do
		[ "$("$ctl" peer show | grep -c remote_seg)" -ge $((2 * ${#addr[@]})) ] && break
		sleep 0.1
	done
	t1=$("$ctl" -j btree create node 1 segs "${addr[0]}" | json_get 'd[0]["tree"]')
	t2=$("$ctl" -j btree create node 1 segs "${addr[1]},${addr[2]}" | json_get 'd[0]["tree"]')
	# byte-string keys of 32 bytes ("user" and 28 digits), the same node
	# and value size and the same memory node as t1
	t3=$("$ctl" -j btree create node 1 segs "${addr[3]}" key-max 32 | json_get 'd[0]["tree"]')
	# replicas: one group each, its primary on node 2 like t1
	tr2=$("$ctl" -j btree create node 1 segs "${addr[4]},${addr[5]}" replicas 2 |
		json_get 'd[0]["tree"]')
	tr3=$("$ctl" -j btree create node 1 segs "${addr[6]},${addr[7]},${addr[8]}" replicas 3 |
		json_get 'd[0]["tree"]')
	bt() { "$ctl" -j btree bench keys "$keys" time "$secs" "$@"; }
	f() { json_get "d[0]$1" <<<"$2"; }
	# the kind's figure (rtt_per_op of "update", ...) in a bench's record
	kf() { json_get "[k for k in d[0][\"kinds\"] if k[\"kind\"] == \"$1\"][0][\"$2\"]" <<<"$3"; }

	# both trees loaded first, so that the runs compared come back to back
	j=$("$ctl" -j btree load node 1 tree "$t1" count "$keys" threads 4)
	"$ctl" btree load node 1 tree "$t2" count "$keys" threads 4 >/dev/null
	echo "bench: btree.keys $keys keys"
	echo "bench: btree.load_4t_ops_per_s $(f '["ops_per_sec"]' "$j") ops/s"
	echo "bench: btree.load_rtt_per_insert $(f '["rtt_per_op"]' "$j") rtt"
	# memory comes in 256 KiB chunks round-robin: with enough keys (40000
	# in 1 KiB nodes fill four chunks) the second tree spans both nodes
	j=$("$ctl" -j btree show node 1 tree "$t2")
	echo "bench: btree.tree_2mn.mn1_used_kib $(f '["segs"][0]["used"] // 1024' "$j") KiB"
	echo "bench: btree.tree_2mn.mn2_used_kib $(f '["segs"][1]["used"] // 1024' "$j") KiB"

	c1=$(bt node 1 tree "$t1" workload c threads 1 load no)
	echo "bench: btree.dependent_read_per_s $(f '["floor_reads_per_sec"]' "$c1") reads/s"
	echo "bench: btree.dependent_read_us $(f '["floor_read_us"]' "$c1") us"
	echo "bench: btree.ycsb_c.tput_1t $(f '["ops_per_sec"]' "$c1") ops/s"
	echo "bench: btree.ycsb_c.rtt_per_lookup $(f '["rtt_per_op"]' "$c1") rtt"
	# the floor reads leaves spread evenly over the tree: its like is a
	# uniform key stream (Zipf's hot leaves stay warmer in every cache)
	cu=$(bt node 1 tree "$t1" workload c threads 1 dist uniform load no)
	echo "bench: btree.ycsb_c.tput.ratio_vs_dependent_read $(f '["ratio_vs_floor"]' "$cu") x"
	echo "bench: btree.ycsb_c_uniform.tput_1t $(f '["ops_per_sec"]' "$cu") ops/s"
	echo "bench: btree.ycsb_c_zipf.tput.ratio_vs_dependent_read $(f '["ratio_vs_floor"]' "$c1") x"
	echo "bench: btree.ycsb_c.p50_us $(f '["p50_us"]' "$c1") us"
	echo "bench: btree.ycsb_c.p99_us $(f '["p99_us"]' "$c1") us"
	echo "bench: btree.ycsb_c.bytes_read_per_lookup $(f '["bytes_read_per_op"]' "$c1") B"
	echo "bench: btree.ycsb_c.cache_hit_rate $(f '["cache_hit_rate"]' "$c1") ratio"

	c4=$(bt node 1 tree "$t1" workload c threads 4 load no)
	echo "bench: btree.ycsb_c.tput_4t $(f '["ops_per_sec"]' "$c4") ops/s"
	echo "bench: btree.ycsb_c.tput_4t.ratio_vs_1t $(ratio "$(f '["ops_per_sec"]' "$c4")" "$(f '["ops_per_sec"]' "$c1")") x"
	echo "bench: btree.ycsb_c.rtt_per_lookup_4t $(f '["rtt_per_op"]' "$c4") rtt"
	# two memory nodes against one, at four threads (one thread's rate is
	# one READ's latency wherever the leaf is)
	c2mn=$(bt node 1 tree "$t2" workload c threads 4 load no)
	echo "bench: btree.ycsb_c.tput_4t_2mn $(f '["ops_per_sec"]' "$c2mn") ops/s"
	echo "bench: btree.ycsb_c.tput_2mn.ratio_vs_1mn $(ratio "$(f '["ops_per_sec"]' "$c2mn")" "$(f '["ops_per_sec"]' "$c4")") x"
	echo "bench: btree.ycsb_c.rtt_per_lookup_2mn $(f '["rtt_per_op"]' "$c2mn") rtt"

	# one thread: each update's round trips are its own (see dsctl-btree(8))
	a1=$(bt node 1 tree "$t1" workload a threads 1 load no)
	echo "bench: btree.ycsb_a.tput_1t $(f '["ops_per_sec"]' "$a1") ops/s"
	echo "bench: btree.ycsb_a.rtt_per_update $(kf update rtt_per_op "$a1") rtt"
	echo "bench: btree.ycsb_a.rtt_per_read $(kf read rtt_per_op "$a1") rtt"
	echo "bench: btree.ycsb_a.p99_us $(f '["p99_us"]' "$a1") us"
	echo "bench: btree.ycsb_a.update_p99_us $(kf update p99_us "$a1") us"
	# contention at Zipf 0.99: two compute nodes, two threads each
	a2=$(bt node 1,4 tree "$t1" workload a threads 2 load no)
	echo "bench: btree.ycsb_a.tput_2cn_2t $(f '["ops_per_sec"]' "$a2") ops/s"
	echo "bench: btree.ycsb_a.lock_retries_per_op $(f '["lock_retries_per_op"]' "$a2") retries"
	echo "bench: btree.ycsb_a.rtt_per_op_2cn_2t $(f '["rtt_per_op"]' "$a2") rtt"
	echo "bench: btree.ycsb_a.lock_retries_per_op_1t $(f '["lock_retries_per_op"]' "$a1") retries"

	bench_btree_replicas

	# the rest of YCSB, one thread; d and e insert, so they come last
	for w in b f d e; do
		j=$(bt node 1 tree "$t1" workload $w threads 1 load no)
		echo "bench: btree.ycsb_$w.tput_1t $(f '["ops_per_sec"]' "$j") ops/s"
		echo "bench: btree.ycsb_$w.rtt_per_op $(f '["rtt_per_op"]' "$j") rtt"
		echo "bench: btree.ycsb_$w.p99_us $(f '["p99_us"]' "$j") us"
	done

	# 32-byte keys against integer keys: the same key ids and operations,
	# runs interleaved three times (TCG's speed drifts), the median ratio
	"$ctl" btree load node 1 tree "$t3" count "$keys" threads 4 >/dev/null
	for i in 1 2 3; do
		su=$(bt node 1 tree "$t1" workload c threads 1 load no)
		ss=$(bt node 1 tree "$t3" workload c threads 1 load no)
		ratios+=("$(ratio "$(f '["ops_per_sec"]' "$ss")" "$(f '["ops_per_sec"]' "$su")")")
	done
	echo "bench: btree.str32.ycsb_c.rtt_per_lookup $(f '["rtt_per_op"]' "$ss") rtt"
	echo "bench: btree.str32.ycsb_c.tput_1t $(f '["ops_per_sec"]' "$ss") ops/s"
	echo "bench: btree.str32.ycsb_c.bytes_read_per_lookup $(f '["bytes_read_per_op"]' "$ss") B"
	echo "bench: btree.str32.ycsb_c.tput.ratio_vs_u64 $(printf '%s\n' "${ratios[@]}" | sort -g | sed -n 2p) x"
	j=$("$ctl" -j btree show node 1 tree "$t3")
	echo "bench: btree.str32.height $(f '["height"]' "$j") levels"
	j=$(bt node 1 tree "$t3" workload a threads 1 load no)
	echo "bench: btree.str32.ycsb_a.rtt_per_update $(kf update rtt_per_op "$j") rtt"
	echo "bench: btree.str32.ycsb_a.tput_1t $(f '["ops_per_sec"]' "$j") ops/s"

	bench_btree_failure
	for n in 1 3 4 5; do "$ctl" node del id $n; done
}

# Part of bench_btree (its trees and helpers): updates on trees of two
# and three replicas, and lookups on two replicas against t1 (one copy on
# the memory node of tr2's primary; both loaded with the same keys and
# only updated since), runs interleaved three times, the ratio of the
# medians.
bench_btree_replicas() {
	local r1=() r2=() m1 m2
	"$ctl" btree load node 1 tree "$tr2" count "$keys" threads 4 >/dev/null
	j=$(bt node 1 tree "$tr2" workload a threads 1 load no)
	echo "bench: btree.r2.ycsb_a.rtt_per_update $(kf update rtt_per_op "$j") rtt"
	echo "bench: btree.r2.ycsb_a.tput_1t $(f '["ops_per_sec"]' "$j") ops/s"
	# an update's round trips do not depend on the tree's size: a smaller
	# load keeps the time down
	"$ctl" btree load node 1 tree "$tr3" count $((keys / 4)) threads 4 >/dev/null
	j=$("$ctl" -j btree bench node 1 tree "$tr3" keys $((keys / 4)) time "$secs" \
		workload a threads 1 load no)
	echo "bench: btree.r3.ycsb_a.rtt_per_update $(kf update rtt_per_op "$j") rtt"
	echo "bench: btree.r3.ycsb_a.tput_1t $(f '["ops_per_sec"]' "$j") ops/s"
	for i in 1 2 3; do
		r1+=("$(f '["ops_per_sec"]' "$(bt node 1 tree "$t1" workload c threads 1 load no)")")
		j=$(bt node 1 tree "$tr2" workload c threads 1 load no)
		r2+=("$(f '["ops_per_sec"]' "$j")")
	done
	m1=$(printf '%s\n' "${r1[@]}" | sort -g | sed -n 2p)
	m2=$(printf '%s\n' "${r2[@]}" | sort -g | sed -n 2p)
	echo "bench: btree.r2.ycsb_c.rtt_per_lookup $(f '["rtt_per_op"]' "$j") rtt"
	echo "bench: btree.r2.ycsb_c.tput_1t $m2 ops/s"
	echo "bench: btree.r2.ycsb_c.tput.ratio_vs_r1 $(ratio "$m2" "$m1") x"
}

# Part of bench_btree, last: YCSB-A on tr2 from both compute nodes, two
# threads each, going on through failures, while memory node 2 (tr2's
# primary) is deleted about 3 s in.  Updates go to keys of their own
# thread, so that each key's last acknowledged value is known and read
# back at the end (dsctl-btree(8), verify yes).
bench_btree_failure() {
	local pid out
	out=$(mktemp)
	timeout 300 "$ctl" -j btree bench node 1,4 tree "$tr2" keys "$keys" time 10 load no \
		workload a threads 2 tolerate yes verify yes warmup 50 probe 200 >"$out" &
	pid=$!
	sleep 3
	"$ctl" node del id 2
	wait "$pid"
	j=$(<"$out")
	rm -f "$out"
	echo "bench: btree.fail.lost_acked $(f '["lost_acked"]' "$j") keys"
	echo "bench: btree.fail.unavailable_ms $(f '["max_lookup_gap_ms"]' "$j") ms"
	echo "bench: btree.fail.failed_ops $(f '["failed"]' "$j") ops"
	echo "bench: btree.fail.verified_keys $(f '["verified_keys"]' "$j") keys"
	# the tree's name is its first segment, on the dead node: open finds
	# the superblock's copy on the other member of group 0
	j=$("$ctl" -j btree show node 1 tree "$tr2")
	echo "bench: btree.fail.members_dead $(f '["members_dead"]' "$j") members"
}

# ---- the B+tree across two guests ----
# Compute node 11 and memory node 22 in guest 0, memory node 12 and
# compute node 21 in guest 1.  Guest 0 runs first: trees on node 12 (all
# memory across the link) and on 12 and 22 (one memory node in each
# guest); then guest 1 runs on node 22 (the reverse).  One guest benches
# at a time, so the other's CPU serves only its side of the verbs.
pair_btree_keys=${DSMEM_BTREE_PAIR_KEYS:-20000}
pair_btree_secs=${DSMEM_BTREE_SECS:-3}

# $1: prefix; $2: compute node; $3: tree.  Loads it, then YCSB C (1 and
# 4 threads) and A (1 thread); prints the figures, and the 4-thread C
# record's rate on fd 3.
pair_btree_run() {
	local pfx=$1 node=$2 tree=$3 c1 c4 a1
	bt() { "$dsctl" -j btree bench node "$node" tree "$tree" keys "$pair_btree_keys" \
		time "$pair_btree_secs" load no "$@"; }
	f() { json_get "d[0]$1" <<<"$2"; }
	"$dsctl" btree load node "$node" tree "$tree" count "$pair_btree_keys" threads 4 >/dev/null
	c1=$(bt workload c threads 1)
	c4=$(bt workload c threads 4)
	a1=$(bt workload a threads 1)
	echo "bench: btree.pair.$pfx.ycsb_c.tput_1t $(f '["ops_per_sec"]' "$c1") ops/s"
	echo "bench: btree.pair.$pfx.ycsb_c.rtt_per_op $(f '["rtt_per_op"]' "$c1") rtt"
	# against back-to-back 1-leaf READs over the same link, same harness
	echo "bench: btree.pair.$pfx.dependent_read_us $(f '["floor_read_us"]' "$c1") us"
	echo "bench: btree.pair.$pfx.ycsb_c.tput.ratio_vs_dependent_read $(f '["ratio_vs_floor"]' "$c1") x"
	echo "bench: btree.pair.$pfx.ycsb_c.tput_4t $(f '["ops_per_sec"]' "$c4") ops/s"
	echo "bench: btree.pair.$pfx.ycsb_a.tput_1t $(f '["ops_per_sec"]' "$a1") ops/s"
	echo "bench: btree.pair.$pfx.ycsb_a.rtt_per_op $(f '["rtt_per_op"]' "$a1") rtt"
	f '["ops_per_sec"]' "$c4" >&3
}

# $1: node; $2: how many remote segments it must hold
await_grants() {
	local i
	for ((i = 0; i < 200; i++)); do
		[ "$("$dsctl" peer show node "$1" | grep -c remote_seg)" -ge "$2" ] && return 0
		sleep 0.1
	done
	echo "Error: bench pair btree: node $1 holds fewer than $2 grants after 20 s" >&2
	"$dsctl" peer show node "$1" >&2
	return 1
}

# A 32 MiB segment of node $1, granted read-write to node $2: its address.
lend_seg() {
	local json
	json=$("$dsctl" -j segment add node "$1" size 32M)
	"$dsctl" segment grant node "$1" seg "$(json_get 'd[0]["seg"]' <<<"$json")" to "$2" perm rw
	json_get 'd[0]["addr"]' <<<"$json"
}

bench_pair_btree_g0() {
	local keyfile seg_b seg_d seg_a seg_c ta tc one two
	keyfile=$(mktemp)
	head -c 32 /dev/urandom > "$keyfile"
	pair_say bkey "$(base64 -w0 "$keyfile")"
	"$dsctl" key add name cluster file "$keyfile"
	rm -f "$keyfile"
	"$dsctl" node add id 11 dev rxe0 port 7481
	"$dsctl" node add id 22 dev rxe0 port 7492
	seg_b=$(lend_seg 22 21)
	seg_d=$(lend_seg 22 11)
	"$dsctl" peer add node 22 addr "$DSMEM_PEER_ADDR" remote 21 listen >/dev/null
	"$dsctl" peer add node 22 addr "$DSMEM_LOCAL_ADDR" remote 11 listen >/dev/null
	read -r seg_a seg_c <<<"$(pair_wait bsegs)"
	"$dsctl" peer add node 11 addr "$DSMEM_PEER_ADDR" port 7482 remote 12 >/dev/null
	"$dsctl" peer add node 11 addr "$DSMEM_LOCAL_ADDR" port 7492 remote 22 >/dev/null
	await_grants 11 3
	ta=$("$dsctl" -j btree create node 11 segs "$seg_a" | json_get 'd[0]["tree"]')
	tc=$("$dsctl" -j btree create node 11 segs "$seg_c,$seg_d" | json_get 'd[0]["tree"]')
	exec 4>&1
	one=$(pair_btree_run cn_g0_mn_g1 11 "$ta" 3>&1 >&4)
	two=$(pair_btree_run mn_split 11 "$tc" 3>&1 >&4)
	exec 4>&-
	echo "bench: btree.pair.mn_split.ycsb_c.tput_4t.ratio_vs_1mn $(ratio "$two" "$one") x"
	pair_say breverse "$seg_b"
	pair_wait bdone >/dev/null
	"$dsctl" node del id 11
	"$dsctl" node del id 22
}

bench_pair_btree_g1() {
	local keyfile seg_a seg_c seg_b tb
	keyfile=$(mktemp)
	pair_wait bkey | base64 -d > "$keyfile"
	"$dsctl" key add name cluster file "$keyfile"
	rm -f "$keyfile"
	"$dsctl" node add id 12 dev rxe0 port 7482
	"$dsctl" node add id 21 dev rxe0 port 7491
	seg_a=$(lend_seg 12 11)
	seg_c=$(lend_seg 12 11)
	"$dsctl" peer add node 12 addr "$DSMEM_PEER_ADDR" remote 11 listen >/dev/null
	pair_say bsegs "$seg_a $seg_c"
	seg_b=$(pair_wait breverse)
	"$dsctl" peer add node 21 addr "$DSMEM_PEER_ADDR" port 7492 remote 22 >/dev/null
	await_grants 21 1
	tb=$("$dsctl" -j btree create node 21 segs "$seg_b" | json_get 'd[0]["tree"]')
	pair_btree_run cn_g1_mn_g0 21 "$tb" 3>/dev/null
	pair_say bdone
	"$dsctl" node del id 12
	"$dsctl" node del id 21
}

# The store as a cache (docs/store.md "Eviction"), on a store of its own
# with a small pool (two 16 MiB segments) that the workload fills many
# times over in a minute: a Zipf(0.99) get workload, a miss put, over
# three times the pool's worth of 256 KiB keys -- the store's hit ratio
# beside dsctl sim's LRU and Belady's bound on the same trace at the
# pool's size in objects; then puts into a full pool (evicting) against
# puts into an empty one.
bench_obj_cache() {
	local dir=/tmp/dsmem-obj-cache masters=127.0.0.1:7791 n rc=0
	local out pool keys json lru opt ours
	rm -rf "$dir"
	mkdir -p "$dir/m"
	"$top/scripts/store-certs" init "$dir/tls"
	export DSMEM_STORE_TLS_DIR=$dir/tls
	for n in 61 62 63 64; do "$dsctl" node add id $n dev rxe0 port $((7700 + n)); done
	store_up "bench: obj cache" "$dir" "$masters" 16M "62 63" \
		"$dsmaster" --listen "$masters" --node 61 --addr "$DSMEM_LOCAL_ADDR" --port 7761 \
		--data-dir "$dir/m" --slow-tier none --metrics-listen none \
		--tls-ca "$dir/tls/ca.crt" --tls-cert "$dir/tls/master.crt" \
		--tls-key "$dir/tls/master.key" || rc=1
	out=$dir/out
	: >"$out"
	if [ $rc -eq 0 ]; then
		pool=$(( $("$store_worker" --masters "$masters" segments |
			awk '/^segment/ { for (i = 1; i <= NF; i++) if ($i ~ /^size=/) s += substr($i, 6) }
			     END { print s }') / 262144 ))
		keys=$((3 * pool))
		"$obj_bench" --masters "$masters" --node 64 --depth 1 zipf "$keys" $((8 * pool)) 256K 0.99 \
			"$dir/zipf.trace" | tee -a "$out" || rc=1
	fi
	if [ $rc -eq 0 ]; then
		json=$("$dsctl" -j sim run trace "$dir/zipf.trace" format text policy lru,belady size "$pool")
		lru=$(json_get '[r["hit_ratio"] for r in d["runs"] if r["policy"] == "lru"][0]' <<<"$json")
		opt=$(json_get '[r["hit_ratio"] for r in d["runs"] if r["policy"] == "belady"][0]' <<<"$json")
		ours=$(awk '$2 == "obj.zipf_0.99_256K_hit_ratio" { print $3 }' "$out")
		echo "bench: obj.zipf_0.99_256K_sim_lru_hit_ratio $lru ratio"
		echo "bench: obj.zipf_0.99_256K_belady_hit_ratio $opt ratio"
		echo "bench: obj.zipf_0.99_256K_hit_ratio.ratio_vs_sim_lru $(ratio "$ours" "$lru") x"
		echo "bench: obj.zipf_0.99_256K_hit_ratio.ratio_vs_belady $(ratio "$ours" "$opt") x"
		"$obj_bench" --masters "$masters" --node 64 --depth 4 fill 256K || rc=1
	fi
	[ $rc -eq 0 ] || tail -n 20 "$dir/master.log" "$dir"/w*.log >&2 || true
	store_close
	kill "$store_master" "${store_clients[@]}" 2>/dev/null || true
	wait "$store_master" "${store_clients[@]}" 2>/dev/null || true
	for n in 61 62 63 64; do "$dsctl" node del id $n 2>/dev/null || true; done
	rm -rf "$dir"
	return $rc
}

# The object store: dsmaster (node 51) and two clients (nodes 52, 53)
# contributing 160 MiB each, held by store_worker processes; obj_bench
# joins as node 54 with no memory of its own, so every byte crosses rxe.
# One replica: a put is RDMA WRITEs to one segment, a get READs.  perftest
# runs on the same rxe in the same guest at the same message size (16 MiB
# objects move as 1 MiB shards, so ib_*_bw of 1 MiB is their reference
# too), both in MiB/s.
bench_obj() {
	local ctl=$dsctl dir=/tmp/dsmem-obj-bench out ours ref val n op sz bytes rc=0
	local masters=127.0.0.1:7790
	rm -rf "$dir"
	mkdir -p "$dir/m" "$dir/slow"
	# TLS as deployed: the clients and obj_bench find theirs in the dir
	"$top/scripts/store-certs" init "$dir/tls"
	export DSMEM_STORE_TLS_DIR=$dir/tls
	for n in 51 52 53 54 55 56; do "$ctl" node add id $n dev rxe0 port $((7700 + n)); done
	store_up "bench: obj" "$dir" "$masters" 160M "52 53" \
		"$dsmaster" --listen "$masters" --node 51 --addr "$DSMEM_LOCAL_ADDR" --port 7751 \
		--data-dir "$dir/m" --slow-tier "dir:$dir/slow" --tls-ca "$dir/tls/ca.crt" \
		--tls-cert "$dir/tls/master.crt" --tls-key "$dir/tls/master.key" || rc=1
	out=$dir/out
	: >"$out"
	if [ $rc -eq 0 ]; then
		"$store_worker" --masters "$masters" segments | sed 's/^/# /'
		{
			"$obj_bench" --masters "$masters" --node 54 --depth 4 bw 1M 48 &&
			"$obj_bench" --masters "$masters" --node 54 --depth 2 bw 16M 6 &&
			"$obj_bench" --masters "$masters" --node 54 --depth 4 ops 16K 400 &&
			"$obj_bench" --masters "$masters" --node 54 --depth 4 meta 2000 &&
			# 640 keys in batches of 64 against the same single calls, 4 in flight
			"$obj_bench" --masters "$masters" --node 54 --depth 4 batch 16K 640 64 &&
			# node 55 keeps its objects on its own segment: copies in
			# the module (the local path), then with local_path off,
			# through the device to itself
			"$obj_bench" --masters "$masters" --node 55 --depth 4 --local 64M ops 16K 400 &&
			echo 0 > /sys/module/dsmem/parameters/local_path &&
			"$obj_bench" --masters "$masters" --node 55 --depth 4 --local 64M ops 16K 400 |
				sed 's/obj\.local_/obj.loopback_/'
		} | tee -a "$out" || rc=1
		echo 1 > /sys/module/dsmem/parameters/local_path
		# the Python client (node 56), 4 in flight as obj_bench's bw
		PYTHONPATH=$top/build/user/python /usr/bin/python3 "$top/tests/bench/py_bench.py" \
			"$masters" 56 48 | tee -a "$out" || rc=1
		ours=$(awk '$2 == "obj.py_get_bw_1M" { print $3 }' "$out")
		ref=$(awk '$2 == "obj.get_bw_1M" { print $3 }' "$out")
		[ -z "$ours" ] || echo "bench: obj.py_get_bw_1M.ratio_vs_c $(ratio "$ours" "$ref") x"
		for op in put get; do
			ours=$(awk -v k="obj.local_${op}_16K_p50_us" '$2 == k { print $3 }' "$out")
			ref=$(awk -v k="obj.loopback_${op}_16K_p50_us" '$2 == k { print $3 }' "$out")
			val=$(awk -v k="obj.${op}_16K_p50_us" '$2 == k { print $3 }' "$out")
			[ -n "$ours" ] && [ -n "$ref" ] && [ -n "$val" ] || continue
			echo "bench: obj.local_${op}_16K_p50.ratio_vs_loopback $(ratio "$ours" "$ref") x"
			echo "bench: obj.local_${op}_16K_p50.ratio_vs_remote $(ratio "$ours" "$val") x"
		done
		"$ctl" -j master show master "$masters" 2>/dev/null | sed 's/^/# master: /' || true
	fi
	# perftest last, our clients' QPs idle by then: the same message size
	# where perftest takes it, else 1 MiB (a 16 MiB object moves as 1 MiB
	# shards anyway)
	for op in write read; do
		[ $rc -eq 0 ] || break
		ours=put
		[ $op = read ] && ours=get
		for sz in 1M 16M; do
			bytes=$((${sz%M} << 20))
			ref=$(perftest ib_${op}_bw "$bytes" 4 -n $((64 / ${sz%M} + 2)))
			[ -n "$ref" ] || ref=$(perftest ib_${op}_bw 1048576 4 -n 64)
			echo "bench: obj.ib_${op}_bw_$sz $ref MiB/s"
			val=$(awk -v k="obj.${ours}_bw_$sz" '$2 == k { print $3 }' "$out")
			echo "bench: obj.${ours}_bw_$sz.ratio_vs_ib_${op}_bw $(ratio "$val" "$ref") x"
		done
	done
	if [ $rc -ne 0 ]; then
		echo "bench: obj: failed; the master's and the clients' last words:" >&2
		tail -n 20 "$dir/master.log" "$dir"/w*.log "$dir"/w*.out >&2 || true
	fi
	store_close
	kill "$store_master" 2>/dev/null || true
	wait "$store_master" 2>/dev/null || true
	kill "${store_clients[@]}" 2>/dev/null || true
	wait "${store_clients[@]}" 2>/dev/null || true
	for n in 51 52 53 54 55 56; do "$ctl" node del id $n 2>/dev/null || true; done
	rm -rf "$dir"
	bench_obj_cache || rc=1
	return $rc
}

# The Jepsen-style run of store_test, longer: its checker's figures.
bench_chaos() {
	local out rc=0 seed=${CHAOS_SEED:-$((RANDOM + 1))}
	out=$(mktemp)
	# the seed, so that a failed run can be run again (CHAOS_SEED=...)
	echo "# chaos: seed $seed" >&2
	STORE_TEST_ONLY=linearizable_under_faults STORE_CHAOS_SECONDS=${CHAOS_SECONDS:-600} \
		STORE_CHAOS_SEED=$seed \
		"$top/build/user/kselftest/store_test" >"$out" 2>&1 || rc=1
	grep -o 'bench: chaos\..*' "$out" || true
	if [ $rc -ne 0 ]; then
		echo "bench: chaos: the run failed (whole output: build/chaos-failed.log):" >&2
		# what the test asserted, then the end of the masters' logs
		grep -E 'store_test\.c:[0-9]+:' "$out" | grep -v 'bench: ' | tail -n 20 >&2
		grep -E '^#|^not ok' "$out" | tail -n 40 >&2
		cp "$out" "$top/build/chaos-failed.log"
	fi
	rm -f "$out"
	return $rc
}

# dsmaster's metadata path on the host (tests/bench/master_bench.cpp): a
# Leader over a real file log holding 1 and 10 million objects; targets
# (issue 50): no hold of the state mutex over 100 ms and a p99 under
# 10 ms while a snapshot and a compaction run, at 10 million.  With
# malloc's heap in transparent huge pages, as docs/store.md tells a
# master of millions of objects to run: the snapshot's fork then copies
# one page table entry per 2 MiB of heap where it would copy 512.
bench_master() {
	local dir=$top/build/bench
	mkdir -p "$dir"
	# shellcheck disable=SC2086 # the sizes are words
	GLIBC_TUNABLES=glibc.malloc.hugetlb=1 \
		"$master_bench" --dir "$dir" ${DSMEM_MASTER_BENCH_SIZES:-1000000 10000000} |
		grep '^bench: '
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
	for p in lru s3fifo seed seed-adaptive; do
		# one window: the run's miss ratio over time is not wanted here
		json=$("$dsctl" -j sim run trace "$trace" policy $p size 16384 \
		       tiers L1:16384,L2:131072 threads 1 window 20000000)
		speed[$p]=$(json_get 'd["runs"][0]["mreqs_per_s"]' <<<"$json")
		echo "bench: sim.${p//-/_}_mreqs_per_s ${speed[$p]} Mreq/s"
		echo "bench: sim.${p//-/_}_peak_mib $(json_get 'd["peak_rss_mib"]' <<<"$json") MiB"
		echo "bench: sim.${p//-/_}_miss_ratio $(json_get 'd["runs"][0]["miss_ratio"]' <<<"$json") ratio"
	done
	for p in s3fifo seed seed-adaptive; do
		echo "bench: sim.${p//-/_}.ratio_vs_lru $(ratio "${speed[$p]}" "${speed[lru]}") x"
	done
	# the seed policies against the best of S3-FIFO, SIEVE, W-TinyLFU,
	# ARC and LIRS, alone and over an LRU L2, and Belady, on this trace,
	# a mix and the sample traces; the connection sweep's knees
	PYTHONPATH=$top/build/user/python /usr/bin/python3 "$top/tests/bench/sim_compare.py" \
		"$trace" "$top/../shared/traces"
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

st, hdrs, body = call("GET", "/api/login")
login_cookie = dict(hdrs)["Set-Cookie"].split(";")[0]
t0 = time.perf_counter()
st, hdrs, body = call("POST", "/api/login", json.dumps({"user": "bench", "password": "bench-password"}),
                      {"Content-Type": "application/json", "Cookie": login_cookie,
                       "X-CSRF-Token": json.loads(body)["csrf"]})
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

if [ "${1:-}" = --in-pair ]; then
	# set -e ends a guest's side silently: say what failed
	trap 'echo "Error: bench pair, guest $DSMEM_GUEST_ID: \"$BASH_COMMAND\" failed" >&2' ERR
	if [ "$DSMEM_GUEST_ID" = 0 ]; then bench_pair_client; else bench_pair_server; fi
	exit 0
fi

if [ "${1:-}" = --in-pair-btree ]; then
	trap 'echo "Error: bench pair btree, guest $DSMEM_GUEST_ID: \"$BASH_COMMAND\" failed" >&2' ERR
	if [ "$DSMEM_GUEST_ID" = 0 ]; then bench_pair_btree_g0; else bench_pair_btree_g1; fi
	exit 0
fi

if [ "${1:-}" = --in-guest ]; then
	# DSMEM_RING_THREADS: how many shared rings the module gives (its
	# default, a quarter of the CPUs, is none on the 2-CPU guest)
	if [ -n "${DSMEM_RING_THREADS:-}" ]; then
		echo "$DSMEM_RING_THREADS" > /sys/module/dsmem/parameters/ring_threads
		echo "bench: ring_threads $DSMEM_RING_THREADS rings"
	fi
	# nodes prove the cluster's key to each other, as in production
	keyfile=$(mktemp)
	head -c 32 /dev/urandom > "$keyfile"
	"$dsctl" key add name cluster file "$keyfile"
	rm -f "$keyfile"
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
# a memory-only NUMA node: where the token cache puts L2, as CXL would be;
# the chaos run's length on top of the rest
timeout=1500
[[ " ${guest_subsets[*]} " != *" chaos "* ]] || timeout=$((timeout + ${CHAOS_SECONDS:-600} + 600))
"$top/scripts/guest" --numa-memnode 128 -t "$timeout" -- \
	env CHAOS_SECONDS="${CHAOS_SECONDS:-600}" CHAOS_SEED="${CHAOS_SEED:-$((RANDOM + 1))}" \
	DSMEM_RING_THREADS="${DSMEM_RING_THREADS:-}" \
	"$0" --in-guest "${guest_subsets[@]}"
# rdm across two guests, guest 0's figures without its "[g0] " tag
if [[ " ${guest_subsets[*]} " == *" rdm "* ]]; then
	"$top/scripts/guest" -n 2 -t 900 -- "$0" --in-pair | sed -u 's/^\[g[01]\] //'
fi
# the B+tree across two guests, both guests' figures untagged
if [[ " ${guest_subsets[*]} " == *" btree "* ]]; then
	"$top/scripts/guest" -n 2 -t 900 -- "$0" --in-pair-btree | sed -u 's/^\[g[01]\] //'
fi
