# Sourced by .ci/run: the run's phases, one after another or side by side
# in lanes, each timed, and a table of them printed when the run ends,
# however it ends (a phase that failed, a signal, an error of the script).
#
#   phases_begin                    call first: the clock starts, the table is printed on exit
#   phase NAME COMMAND [ARGS...]    runs COMMAND (a program or a shell function, with errexit);
#                                   a failure ends the calling shell with its status
#   lane NAME FUNCTION              runs FUNCTION (which calls `phase`) beside what follows,
#                                   its output kept in a log of its own
#   lanes_wait NAME...              waits for those lanes, prints each one's output as a block,
#                                   and ends the run if any failed (once all of them have ended)
#
# The table gives each phase's lane (- for none), its start (seconds into
# the run), its seconds, the cores the whole machine kept busy meanwhile
# (from /proc/stat: what a phase leaves free is room for another beside
# it), and its result.
# Lanes say when each of their phases starts and ends as it happens.

phases_dir=""
phases_t0=0
phases_lanes=()
phases_running=""

phases_begin() {
    phases_dir="$(mktemp -d "${TMPDIR:-/tmp}/ci-phases.XXXXXX")"
    phases_t0=$(date +%s)
    # The shell's own output, for the lanes' progress lines.
    exec 3>&1
    trap phases_end EXIT
    trap 'exit 130' INT TERM
}

# Busy and total jiffies of all cores so far.
phases_cpu() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }

phase() {
    local name="$1" record status=0 started ended result
    shift
    record="$phases_dir/$(date +%s%N)-$$-${name//[^A-Za-z0-9_.-]/_}"
    started=$(date +%s)
    printf '%s\t%s\t%s\t%s\n' "$name" "$started" "$(phases_cpu)" "${phases_lane:-}" >"$record"
    [ -z "${phases_lane:-}" ] || echo "ci: [$phases_lane] $name started at $((started - phases_t0)) s" >&3
    # In a subshell started as a job of its own, so that errexit holds in a
    # shell function as it would in a script: the commands of a function
    # called as the operand of an `if` or a `||` would not stop it.
    ("$@") &
    phases_running=$!
    wait "$phases_running" || status=$?
    phases_running=""
    ended=$(date +%s)
    if [ "$status" = 0 ]; then result=passed; else result="FAILED ($status)"; fi
    printf '%s\t%s\t%s\n' "$ended" "$(phases_cpu)" "$result" >>"$record"
    echo "ci: ${phases_lane:+[$phases_lane] }$name $result in $((ended - started)) s" >&3
    [ "$status" = 0 ] || exit "$status"
}

lane() {
    local name="$1" function="$2"
    phases_lane="$name" "$function" >"$phases_dir/lane-$name.log" 2>&1 &
    echo "$!" >"$phases_dir/lane-$name.pid"
    phases_lanes+=("$name")
    echo "ci: lane $name started: $function" >&3
}

lanes_wait() {
    local name pid status failed=0
    for name in "$@"; do
        pid=$(cat "$phases_dir/lane-$name.pid")
        status=0
        wait "$pid" || status=$?
        rm -f "$phases_dir/lane-$name.pid"
        echo "::::::::::::::::: lane $name: $([ "$status" = 0 ] && echo passed || echo "FAILED ($status)")"
        cat "$phases_dir/lane-$name.log"
        echo "::::::::::::::::: end of lane $name"
        [ "$status" = 0 ] || failed=$status
    done
    [ "$failed" = 0 ] || exit "$failed"
}

phases_table() {
    python3 - "$phases_dir" "$phases_t0" "$(date +%s)" "$(nproc)" "$(phases_cpu)" <<'PY'
import os, sys

folder = sys.argv[1]
t0, now, cores = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rows = []
for entry in os.listdir(folder):
    if entry.startswith("lane-"):
        continue
    with open(os.path.join(folder, entry), encoding="utf-8") as record:
        lines = record.read().splitlines()
    name, start, cpu, lane = lines[0].split("\t")
    end, cpu_end, result = lines[1].split("\t") if len(lines) > 1 else (now, sys.argv[5], "did not end")
    busy0, total0 = map(int, cpu.split())
    busy1, total1 = map(int, cpu_end.split())
    busy = f"{cores * (busy1 - busy0) / (total1 - total0):.2f}" if total1 > total0 else "-"
    rows.append((int(start) - t0, name, lane or "-", int(end) - int(start), busy, result))
print()
print(f"{'phase':<26} {'lane':<7} {'start':>6} {'seconds':>8} {'cores busy':>11}  result")
for start, name, lane, seconds, busy, result in sorted(rows):
    print(f"{name:<26} {lane:<7} {start:>6} {seconds:>8} {busy:>11}  {result}")
print(f"{'the whole run':<26} {'':<7} {0:>6} {now - t0:>8}")
PY
}

# Stops a process and everything it started, deepest first: a lane's
# scripts clean up what they started (servers, clusters) on SIGTERM.
phases_stop_tree() {
    local child
    for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do phases_stop_tree "$child"; done
    kill -TERM "$1" 2>/dev/null || true
}

phases_end() {
    local status=$? name pid
    trap - EXIT INT TERM
    # A phase interrupted by a signal, and lanes still running (the run
    # failed elsewhere), are stopped.
    [ -z "$phases_running" ] || phases_stop_tree "$phases_running"
    for name in "${phases_lanes[@]}"; do
        [ -f "$phases_dir/lane-$name.pid" ] || continue
        pid=$(cat "$phases_dir/lane-$name.pid")
        phases_stop_tree "$pid"
        wait "$pid" 2>/dev/null || true
        echo "::::::::::::::::: lane $name: stopped"
        cat "$phases_dir/lane-$name.log"
    done
    phases_table
    rm -rf "$phases_dir"
    if [ "$status" = 0 ]; then echo "ci: passed"; else echo "ci: FAILED ($status)"; fi
    exit "$status"
}
