#!/bin/bash
# Runs inside a test guest (tests/run: scripts/guest -- tests/ui/guest/run.sh):
# the console beside the loaded module, and Chromium (TCG: slow to start,
# hence a guest of its own) watching the module's events arrive in the
# log page.  Prints the TAP of module.guest.mjs.
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
dsctl=$top/build/user/user/tools/dsctl
dir=$(mktemp -d)
export HOME=$dir	# Chromium's profile and caches
export DSUI_TCG=${DSUI_TCG:-1}	# Chromium's flags for TCG (tests/ui/harness.mjs)
# the nodes the test adds prove the cluster's key, as everywhere
(umask 077; head -c 32 /dev/urandom > "$dir/cluster.key")
"$dsctl" key add name cluster file "$dir/cluster.key" replace
pass=$(head -c 12 /dev/urandom | base64)
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
DSMEM_STORE_INSECURE=1 "$dsctl" ui listen 127.0.0.1:0 db "$dir/ui.db" \
	store-masters $master store-node 7 > "$dir/out" &
ui=$!
# the console first: its store client leaves the master
trap 'kill $ui 2>/dev/null; wait $ui 2>/dev/null; kill $dsm 2>/dev/null; wait $dsm 2>/dev/null; rm -rf "$dir"' EXIT
for ((i = 0; i < 300; i++)); do grep -q listening "$dir/out" && break; sleep 0.1; done
for ((i = 0; i < 300; i++)); do grep -q 'leader (term' "$dir/master.log" && break; sleep 0.1; done
grep -q 'leader (term' "$dir/master.log" || { echo "# dsmaster did not lead:"; sed 's/^/# /' "$dir/master.log"; }
export DSUI_STORE_MASTER=$master
# screenshots reach the host through 9p by the end of the run
export DSUI_URL DSUI_ADMIN_USER=guestadmin DSUI_ADMIN_PASS=$pass DSCTL=$dsctl
export DSUI_SHOTS=$top/build/ui-shots
DSUI_URL=$(grep -o 'http://[0-9.:]*' "$dir/out")
node --test --test-reporter=tap "$top/tests/ui/guest/module.guest.mjs"
