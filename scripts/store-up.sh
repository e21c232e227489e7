# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# A small object store for scripts/bench.sh and scripts/demo.sh to
# measure or show: a dsmaster and store_worker clients lending memory.
# Sourced; needs $store_worker (the store_worker binary).
# (store_worker is the caller's, store_master is for it)
# shellcheck disable=SC2034,SC2154

# store_up LABEL DIR MASTERS SEGMENT CLIENTS DSMASTER [ARGS...]: the
# dsmaster command in the background (its stderr in DIR/master.log),
# then, once MASTERS answers with a leader, a client of SEGMENT bytes for
# each node id of CLIENTS ("62 63").  A client lives while its stdin, the
# fifo DIR/wN.in held open here, does (its output DIR/wN.out and
# DIR/wN.log).  Sets store_master (the dsmaster's pid), store_clients
# (the clients') and store_fds (the fifos' ends: store_close).  0 when
# every client said ready; else 1, LABEL naming the caller in what it
# says.  The caller stops the processes: each wants its own order.
store_up() {
	local label=$1 dir=$2 masters=$3 segment=$4 clients=$5 n i fd rc=0
	shift 5
	"$@" 2>"$dir/master.log" &
	store_master=$!
	store_clients=() store_fds=()
	for ((i = 0; i < 300; i++)); do
		"$store_worker" --masters "$masters" info 2>/dev/null | grep -q 'ret=0 leader=[^ ]' && break
		sleep 0.2
	done
	for n in $clients; do
		mkfifo "$dir/w$n.in"
		"$store_worker" --masters "$masters" --node "$n" --segment "$segment" \
			<"$dir/w$n.in" >"$dir/w$n.out" 2>"$dir/w$n.log" &
		store_clients+=($!)
	done
	# (an open for writing waits for the client's open for reading)
	for n in $clients; do
		exec {fd}>"$dir/w$n.in"
		store_fds+=("$fd")
	done
	for n in $clients; do
		for ((i = 0; i < 600; i++)); do
			grep -q '^ready\|^error' "$dir/w$n.out" 2>/dev/null && break
			sleep 0.2
		done
		grep -q '^ready' "$dir/w$n.out" || {
			echo "$label: client $n did not join: $(cat "$dir/w$n.out")" >&2
			rc=1
		}
	done
	return $rc
}

# The clients' fifos closed: each leaves the store and exits.
store_close() {
	local fd
	for fd in "${store_fds[@]}"; do
		exec {fd}>&-
	done
	store_fds=()
}
