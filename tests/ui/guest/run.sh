#!/bin/bash
# Runs on the host (tests/run): the console's browser test against the
# module in a guest.  The guest (scripts/guest --hostfwd, running
# tests/ui/guest/serve.sh) holds dsmem, the console and a master; QEMU
# forwards a free port of the host's loopback to the console, and the
# host's Chromium runs module.guest.mjs against it, the dsctl commands of
# the test running in the guest (through the run directory, shared live).
# Chromium under TCG took minutes; here it takes seconds.
#
#   tests/ui/guest/run.sh [scripts/guest options, e.g. --kernel debug]
#
# Prints the test's TAP, the guest's lines as TAP comments.  Waits for the
# console as long as the guest runs: the guest's timeout (-t) bounds it.
set -uo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$top"
# the console's port in the guest, which has nothing else listening
guest_port=8080
tmp=$(mktemp -d)
info=$tmp/hostfwd
gpid= ui= npid=
# the guest stops once it sees "done"; a guest that does not is stopped
# (scripts/guest stops its QEMU on TERM)
cleanup() {
	if [ -n "$npid" ]; then
		kill "$npid" 2>/dev/null
		wait "$npid" 2>/dev/null
	fi
	# (gone once the guest ended well: scripts/guest removes it)
	[ -z "$ui" ] || touch "$ui/done" 2>/dev/null
	if [ -n "$gpid" ]; then
		for ((n = 0; n < 600; n++)); do
			kill -0 "$gpid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$gpid" 2>/dev/null
		wait "$gpid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

scripts/guest -t 900 "$@" --hostfwd "$guest_port:$info" -- tests/ui/guest/serve.sh \
	> >(sed -u 's/^/# /') 2>&1 &
gpid=$!

# not ok, with why (the guest's lines are above)
give_up() {
	echo "not ok 1 - the console in the guest, reached from the host's Chromium: $1"
	echo "1..1"
	exit 1
}

until [ -e "$info" ]; do
	kill -0 "$gpid" 2>/dev/null || give_up "the guest ended before its port was forwarded"
	sleep 0.2
done
port= run=
while IFS= read -r line; do
	case $line in
	DSMEM_HOSTFWD_PORT=*) port=${line#*=} ;;
	DSMEM_RUN_DIR=*) run=${line#*=} ;;
	esac
done < "$info"
[ -n "$port" ] && [ -n "$run" ] || give_up "scripts/guest wrote no port or run directory into $info"
ui=$run/ui
echo "# the host's 127.0.0.1:$port is the guest's port $guest_port (run directory $run)"

until [ -e "$ui/ready" ]; do
	kill -0 "$gpid" 2>/dev/null || give_up "the guest ended before its console was ready"
	[ ! -e "$ui/ended" ] || give_up "the guest's console stopped before it was ready"
	sleep 0.5
done
declare -A have=()
while IFS= read -r line; do
	have[${line%%=*}]=${line#*=}
done < "$ui/ready"
url=http://127.0.0.1:$port
# the console listens in the guest: through the forward too?  (QEMU
# accepts on the host's port whatever the guest does, and closes what the
# guest refuses, so only a page read proves it.)
until curl -sf -o /dev/null --max-time 30 "$url/"; do
	kill -0 "$gpid" 2>/dev/null || give_up "the guest ended before its console answered on $url"
	[ ! -e "$ui/ended" ] || give_up "the guest's console stopped before it answered on $url"
	sleep 0.5
done
echo "# the console answers on $url, $SECONDS s after the start"

mkdir -p "$top/build/ui-shots"
st=0
DSUI_URL=$url DSUI_ADMIN_USER=${have[DSUI_ADMIN_USER]} DSUI_ADMIN_PASS=${have[DSUI_ADMIN_PASS]} \
	DSUI_STORE_MASTER=${have[DSUI_STORE_MASTER]} DSMEM_LOCAL_ADDR=${have[DSMEM_LOCAL_ADDR]} \
	DSUI_DSCTL_RELAY=$ui DSUI_SHOTS=$top/build/ui-shots \
	node --test --test-reporter=tap tests/ui/guest/module.guest.mjs &
# in the background: a signal to this script is handled at once (the
# trap), not once the test has ended
npid=$!
wait "$npid" || st=$?
npid=

touch "$ui/done"
gst=0
wait "$gpid" || gst=$?
gpid=
echo "# the guest ended with status $gst, $SECONDS s after the start"
[ "$st" -ne 0 ] || st=$gst
exit "$st"
