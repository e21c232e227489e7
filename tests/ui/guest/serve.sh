#!/bin/bash
# Runs inside a test guest (tests/ui/guest/run.sh: scripts/guest --hostfwd
# ... -- tests/ui/guest/serve.sh): the console beside the loaded module,
# listening where QEMU forwards the host's port to, with a master for its
# store page, and dsctl run for the host's browser test, until the host
# says it is done.  Chromium runs on the host: under TCG it took minutes.
# Its output reaches the host's TAP as comments (run.sh prefixes "# ").
#
# Files in $DSMEM_RUN_DIR/ui (shared live with the host):
#   ready        written once the console listens and the master leads:
#                KEY=VALUE lines of what the test needs (run.sh reads them)
#   dsctl/N.req  a dsctl command from the host, its words NUL-separated;
#                answered in dsctl/N.res: the exit status on the first
#                line, then what dsctl printed
#   done         the host's test has ended: stop
#   ended        this script has stopped (the host need wait no longer)
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
dsctl=$top/build/user/user/tools/dsctl
: "${DSMEM_RUN_DIR:?}"
: "${DSMEM_HOSTFWD_ADDR:?no forwarded port (scripts/guest --hostfwd)}" "${DSMEM_HOSTFWD_PORT:?}"
ui=$DSMEM_RUN_DIR/ui
mkdir -p "$ui/dsctl"
dir=$(mktemp -d)
uipid= dsm=
# the console first: its store client leaves the master
trap 'kill $uipid 2>/dev/null; wait $uipid 2>/dev/null; kill $dsm 2>/dev/null; wait $dsm 2>/dev/null; rm -rf "$dir"; touch "$ui/ended"' EXIT
# the nodes the test adds prove the cluster's key, as everywhere
(umask 077; head -c 32 /dev/urandom > "$dir/cluster.key")
"$dsctl" key add name cluster file "$dir/cluster.key" replace
pass=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$pass" | "$dsctl" ui user add guestadmin role admin db "$dir/ui.db"
# the store page's master: plaintext on loopback, as node 9 (never added:
# its control plane is all the page reads); the console lists objects as
# node 7, which the test adds
master=127.0.0.1:17960
mkdir "$dir/master"
"$top/build/user/user/tools/dsmaster/dsmaster" --listen $master --node 9 \
	--addr "${DSMEM_LOCAL_ADDR:-127.0.0.1}" --port 18779 --data-dir "$dir/master" \
	--slow-tier none --insecure --metrics-listen none > "$dir/master.log" 2>&1 &
dsm=$!
# plain HTTP beyond loopback ("insecure"): the only way in is the host's
# loopback port that QEMU forwards (restrict=on)
DSMEM_STORE_INSECURE=1 "$dsctl" ui listen "$DSMEM_HOSTFWD_ADDR:$DSMEM_HOSTFWD_PORT" insecure \
	db "$dir/ui.db" store-masters $master store-node 7 > "$dir/out" 2>&1 &
uipid=$!
# Both are waited for as long as they run: the run's own timeout
# (scripts/guest -t) bounds a hang, a slow guest only takes longer.
until grep -q listening "$dir/out"; do
	kill -0 $uipid 2>/dev/null || { echo "the console stopped:"; cat "$dir/out"; exit 1; }
	sleep 0.1
done
until grep -q 'leader (term' "$dir/master.log"; do
	kill -0 $dsm 2>/dev/null || { echo "dsmaster stopped:"; cat "$dir/master.log"; break; }
	sleep 0.1
done
echo "the console listens on $DSMEM_HOSTFWD_ADDR:$DSMEM_HOSTFWD_PORT; dsmaster at $master"
{
	echo "DSUI_ADMIN_USER=guestadmin"
	echo "DSUI_ADMIN_PASS=$pass"
	echo "DSUI_STORE_MASTER=$master"
	echo "DSMEM_LOCAL_ADDR=${DSMEM_LOCAL_ADDR:-127.0.0.1}"
} > "$ui/ready.tmp"
mv "$ui/ready.tmp" "$ui/ready"

# dsctl for the host, one command at a time, until the host is done
status=0
until [ -e "$ui/done" ]; do
	for req in "$ui"/dsctl/*.req; do
		[ -e "$req" ] || continue
		n=${req%.req}
		mapfile -d '' -t words < "$req"
		rm -f "$req"
		rc=0
		out=$("$dsctl" "${words[@]}" 2>&1) || rc=$?
		printf '%s\n%s' "$rc" "$out" > "$n.tmp"
		mv "$n.tmp" "$n.res"
	done
	if ! kill -0 $uipid 2>/dev/null; then
		echo "the console stopped during the test:"
		cat "$dir/out"
		status=1
		break
	fi
	sleep 0.2
done
exit $status
