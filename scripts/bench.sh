#!/bin/bash
# make bench [B=subset]: benchmarks, each measured against its reference
# tool in the same guest run.  Prints one line per figure:
#   bench: NAME VALUE UNIT
# Timings under TCG emulation mean something only as ratios.
#
# Subsets: ctl (control path: dsctl vs iproute2's rdma over netlink).
# The data-plane subsets (rdm, sim, btree, obj, slope, cache) arrive with
# their capabilities.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dsctl=$top/build/user/user/tools/dsctl
implemented=(ctl)
planned=(rdm sim btree obj slope cache)

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
exec "$top/scripts/guest" -t 600 -- "$0" --in-guest "${subsets[@]}"
