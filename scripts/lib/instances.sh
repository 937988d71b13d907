# Sourced by scripts/loadtest and scripts/faults: a private PostgreSQL and
# instances of `scrollback serve` on free loopback ports, sharing a fresh
# signing secret, all stopped when the calling script exits.
#
#   instances_setup BIN KEEP   # a work directory, PostgreSQL, the scripts below
#   instances_start N          # N instances; sets `ports` and `pids`
#
# In the work directory ($work): start-instance I PORT starts instance I (and
# waits until /readyz says ready), restart-instance I PORT stops it with
# SIGTERM and starts it again, postgres/ holds the cluster (postgres/start,
# postgres/stop). An instance uses $work/database-url-I as its DATABASE_URL
# when that file exists (a proxy in between, say), $database_url otherwise.

say() { echo "$(basename "$0"): $*" >&2; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

instances_setup() {
    local bin="$1"
    instances_keep="$2"
    if [ ! -x scripts/start-postgres ]; then say "scripts/start-postgres is missing"; exit 1; fi
    work="$(mktemp -d /var/tmp/scrollback-instances.XXXXXX)"
    chmod 755 "$work"
    trap instances_cleanup EXIT

    say "starting a private PostgreSQL"
    database_url="$(scripts/start-postgres "$work/postgres" "$(free_port)")"
    SCROLLBACK_JWT_SECRET="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
    export SCROLLBACK_JWT_SECRET

    cat >"$work/start-instance" <<SCRIPT
#!/usr/bin/env bash
set -euo pipefail
index="\$1" port="\$2"
url='$database_url'
[ -f '$work/database-url-'"\$index" ] && url="\$(cat '$work/database-url-'"\$index")"
ulimit -n "\$(ulimit -Hn)" 2>/dev/null || true
# A few users send as fast as the run asks: the per-user rate limits (which
# have tests of their own) would measure themselves rather than the service.
DATABASE_URL="\$url" SCROLLBACK_JWT_SECRET='$SCROLLBACK_JWT_SECRET' PORT="\$port" LOG_LEVEL=\${LOG_LEVEL:-warning} \\
    SCROLLBACK_RATE_LIMITS=off \\
    nohup '$bin/scrollback' serve >>'$work/server-'"\$index"'.log' 2>&1 </dev/null &
echo \$! >'$work/pid-'"\$index"
for _ in \$(seq 1 600); do
    if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \\
        "http://127.0.0.1:\$port/readyz" 2>/dev/null; then exit 0; fi
    kill -0 "\$(cat '$work/pid-'"\$index")" 2>/dev/null || { tail -20 '$work/server-'"\$index"'.log' >&2; exit 1; }
    sleep 0.1
done
echo "instance \$index did not become ready on port \$port" >&2
exit 1
SCRIPT
    cat >"$work/restart-instance" <<SCRIPT
#!/usr/bin/env bash
set -euo pipefail
index="\$1" port="\$2"
pid="\$(cat '$work/pid-'"\$index")"
kill "\$pid"
for _ in \$(seq 1 300); do
    case "\$(ps -o stat= -p "\$pid" 2>/dev/null | cut -c1)" in "" | Z) break ;; esac
    sleep 0.1
done
exec '$work/start-instance' "\$index" "\$port"
SCRIPT
    chmod +x "$work/start-instance" "$work/restart-instance"
}

instances_start() {
    local count="$1" index port
    ports=()
    pids=()
    for index in $(seq 1 "$count"); do
        port="$(free_port)"
        # The first instance applies the migrations before the others start.
        say "starting instance $index on 127.0.0.1:$port"
        "$work/start-instance" "$index" "$port"
        ports+=("$port")
        pids+=("$(cat "$work/pid-$index")")
    done
}

instances_cleanup() {
    local pid_file pid
    for pid_file in "$work"/pid-*; do
        [ -f "$pid_file" ] || continue
        pid="$(cat "$pid_file")"
        kill -CONT "$pid" 2>/dev/null || true
        kill "$pid" 2>/dev/null || true
        # A restarted process is nobody's child: once it exits it may stay a zombie.
        for _ in $(seq 1 100); do
            case "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" in "" | Z) break ;; esac
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
    done
    # PostgreSQL, and a standby when the script made one.
    for stop in "$work"/*/stop; do
        [ -x "$stop" ] && "$stop" >/dev/null 2>&1 || true
    done
    if [ "$instances_keep" = true ]; then say "logs kept in $work"; else rm -rf "$work"; fi
}
