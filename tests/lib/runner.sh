# shellcheck shell=bash
# The test runner's counting, sourced by tests/run and by its own test
# (tests/runner/runner_test): reads TAP, counts passes, failures and
# skips, fails a program that stopped short of its plan and every skip
# that tests/expected-skips does not list, and keeps the seconds each
# phase and each selftest program took for the table above the closing
# line.
#
# The caller sets:
#   fail_log     a file that collects every failing line
#   times_file   a file that collects "KIND<TAB>TIER<TAB>NAME<TAB>SECONDS"
#   skips_file   the expected-skip list (tests/expected-skips)
# and reads passed, failed, skipped and filtered after each run_counted.

passed=0 failed=0 skipped=0 filtered=0
# The skip reason of a case that a program's filter (STORE_TEST_ONLY,
# STORE_TEST_SKIP) left out: tests/run splits store_test's cases between
# its two lanes, so a case filtered out of one runs in the other and is
# counted there, as neither a pass nor a skip here.
lane_filtered="filtered out"
runner_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# The expected-skip list: "TIER PROGRAM CASE REASON...", CASE a glob.
# Loaded once into skip_rules ("TIER PROGRAM CASE" per element).
skip_rules=()
load_skips() {
	local tier prog case_ why
	skip_rules=()
	[ -r "$skips_file" ] || {
		echo "not ok - the expected-skip list $skips_file is missing" | tee -a "$fail_log"
		failed=$((failed + 1))
		return 1
	}
	while read -r tier prog case_ why; do
		[[ -z $tier || $tier == \#* ]] && continue
		if [ -z "$why" ]; then
			echo "not ok - $skips_file: '$tier $prog $case_' gives no reason" | tee -a "$fail_log"
			failed=$((failed + 1))
			continue
		fi
		skip_rules+=("$tier $prog $case_")
	done <"$skips_file"
}

# 0 when the list expects PROGRAM's CASE to skip in TIER
skip_expected() { # $1 tier, $2 program, $3 case
	local rule r_tier r_prog r_case
	for rule in "${skip_rules[@]}"; do
		read -r r_tier r_prog r_case <<<"$rule"
		# shellcheck disable=SC2053 # the list's fields are globs
		[[ $1 == $r_tier && $2 == $r_prog && $3 == $r_case ]] && return 0
	done
	return 1
}

# Count TAP from stdin: one stream, or two interleaved ones tagged "[g0] "
# and "[g1] ".  Each program's plan ("1..N") must be met: results missing
# from a plan count as failures.  $1 labels the run, $2 is its tier
# (host, debian, debug, pair, console): the expected-skip list's first
# field.  A host program's name is its label; in a guest, the program is
# the one guest-suite last announced ("# selftest: NAME").
tally() {
	local label=$1 tier=$2 line tag n p=0 f=0 s=0 x=0 case_ why
	# what the running test said (the harness's "# file:line:test:"
	# lines): repeated with its failure, so that a log's tail explains it
	local -A plan=() seen=() said=() prog=() running=()
	finish_program() {	# $1: stream tag
		local t=$1
		if [ "${plan[$t]:--1}" -ge 0 ] && [ "${seen[$t]:-0}" -lt "${plan[$t]}" ]; then
			echo "not ok - $label ($t): $((plan[$t] - seen[$t])) result(s) missing from the plan" |
				tee -a "$fail_log"
			f=$((f + plan[$t] - seen[$t]))
		fi
		plan[$t]=-1 seen[$t]=0
	}
	# the kselftest harness (6.1) writes "ok N # SKIP why" after the
	# test's "#  RUN  fixture.test ..." line; node and CMocka write
	# "ok N - name # SKIP why"
	skip_line() {	# $1: tag, $2: the TAP line
		local t=$1 rest=${2#* } program=${prog[$1]:-$label}
		rest=${rest#* }			# past "ok N " / "not ok N "
		case_=${rest%%# SKIP*} case_=${case_#- } case_=${case_% }
		[ -n "$case_" ] || case_=${running[$t]:-}
		why=${rest#*# SKIP} why=${why# }
		seen[$t]=$((${seen[$t]:-0} + 1))
		if [ "$why" = "$lane_filtered" ]; then
			# tests/run ran the case in its other lane, where it counts
			x=$((x + 1))
		elif skip_expected "$tier" "$program" "$case_"; then
			s=$((s + 1))
		else
			f=$((f + 1))
			echo "not ok - $label: unexpected skip in the $tier tier: $program ${case_:-(unnamed)}: ${why:-no reason given} (tests/expected-skips does not list it)" |
				tee -a "$fail_log"
		fi
	}
	while IFS= read -r line; do
		printf '%s\n' "$line"
		tag=main
		if [[ $line =~ ^\[(g[01])\]\ (.*)$ ]]; then
			tag=${BASH_REMATCH[1]} line=${BASH_REMATCH[2]}
		fi
		case $line in
		"# selftest: "*" took "*" s")
			n=${line#"# selftest: "}
			# two guests' programs are named with their guest
			printf 'program\t%s\t%s\t%s\n' "$tier" \
				"${n%% took *}${tag/#main/}" "${n##* took }" |
				sed -e 's/ s$//' -e 's/\(\t[^\t]*\)\(g[01]\)\t/\1 (\2)\t/' >>"$times_file" ;;
		"# selftest: "*) prog[$tag]=${line#"# selftest: "} ;;
		"#  RUN "*)
			said[$tag]=
			n=${line#"#  RUN"} n=${n#"${n%%[! ]*}"}
			running[$tag]=${n%" ..."} ;;
		"# "*:[0-9]*:*:*) said[$tag]+="${line:0:300}"$'\n' ;;
		"1.."*)
			n=${line#1..} n=${n%% *}
			if [ "${plan[$tag]:--1}" -lt 0 ] && [ "${seen[$tag]:-0}" -gt 0 ]; then
				# a trailing plan (node --test): it closes the results before it
				plan[$tag]=$n
				finish_program "$tag"
			else
				finish_program "$tag"
				plan[$tag]=$n
			fi ;;
		# the kselftest harness writes "ok N name # SKIP why"; CMocka
		# writes "not ok N # SKIP" for a test whose input is not there
		"ok "*"# SKIP"* | "not ok "*"# SKIP"*) skip_line "$tag" "$line" ;;
		"ok "*) p=$((p + 1)); seen[$tag]=$((${seen[$tag]:-0} + 1)) ;;
		"not ok "*)
			f=$((f + 1)); seen[$tag]=$((${seen[$tag]:-0} + 1))
			printf '%s: %s\n' "$label" "$line" >> "$fail_log"
			# its last ten lines of diagnostics
			if [ -n "${said[$tag]:-}" ]; then
				printf '%s' "${said[$tag]}" | tail -n 10 | sed 's/^/    /' >> "$fail_log"
				said[$tag]=
			fi ;;
		esac
	done
	for tag in "${!plan[@]}"; do finish_program "$tag"; done
	echo "$p $f $s $x" > "$tally_out"
}

# a row of the table: record_phase TIER NAME SECONDS (TIER - for none)
record_phase() {
	printf 'phase\t%s\t%s\t%s\n' "$1" "$2" "$3" >>"$times_file"
}

# run_counted LABEL TIER COMMAND...: runs COMMAND and counts its TAP.
run_counted() {
	local label=$1 tier=$2 st p f s x
	shift 2
	tally_out=$(mktemp)
	"$@" 2>&1 | tally "$label" "$tier"
	st=${PIPESTATUS[0]}
	read -r p f s x < "$tally_out"
	rm -f "$tally_out"
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	filtered=$((filtered + x))
	# a failing run with no failing test is still a failure (crash, timeout)
	if [ "$st" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - $label exited with status $st" | tee -a "$fail_log"
		failed=$((failed + 1))
	fi
}

# timed_phase NAME COMMAND...: a phase that is no test (a build): its
# seconds go into the table (scripts/timed), its failure is counted as one.
timed_phase() {
	local name=$1 st
	shift
	"$runner_top/scripts/timed" "$times_file" "$name" "$@"
	st=$?
	if [ "$st" -ne 0 ]; then
		echo "not ok - $name exited with status $st" | tee -a "$fail_log"
		failed=$((failed + 1))
	fi
	return "$st"
}

# The table of seconds: every phase in the order it ended, and below
# each guest the programs it ran.  Phases recorded before tests/run
# (make check's set-up, build and lint) come from $1, a file in the same
# format.
print_times() { # $1: earlier phases (may be missing)
	local kind tier name secs
	local -A programs=()
	echo "# seconds:"
	while IFS=$'\t' read -r kind tier name secs; do
		case $kind in
		program)
			programs[$tier]+=$(printf '#     %-44s %6s' "$name" "$secs")$'\n' ;;
		phase)
			if [ "$tier" = - ]; then
				printf '#   %-46s %6s\n' "$name" "$secs"
			else
				printf '#   %-46s %6s\n' "$name ($tier)" "$secs"
			fi
			# a guest's programs ended before the guest did
			if [ -n "${programs[$tier]:-}" ]; then
				printf '%s' "${programs[$tier]}"
				programs[$tier]=
			fi ;;
		esac
	done < <({ [ -r "${1:-}" ] && cat "$1"; cat "$times_file"; })
}
