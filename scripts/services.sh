#!/usr/bin/env bash
# Starts, stops and reports the collector's backing services on loopback, as plain background
# processes (no systemd): PostgreSQL 15 (throwaway cluster), VictoriaMetrics, InfluxDB 1.x.
#
#   scripts/services.sh start [postgres|victoria|influx]...   (default: all; idempotent)
#   scripts/services.sh stop  [postgres|victoria|influx]...
#   scripts/services.sh env                                    (prints the endpoints)
#
# State lives in $IDINT_SERVICES_DIR (default /tmp/idint-services). Ports can be overridden with
# IDINT_PG_PORT (25432), IDINT_VM_PORT (28428), IDINT_INFLUX_PORT (28086). `start` waits until
# every service answers and prints the endpoints as shell assignments:
#   IDINT_PG_URL=postgresql://collector:collector@127.0.0.1:25432/collector
#   IDINT_VM_URL=http://127.0.0.1:28428
#   IDINT_INFLUX_URL=http://127.0.0.1:28086
# The default ports (and the tests' private ones) sit below Linux's ephemeral range (32768-60999):
# a port in that range can be taken at any moment by some client's outgoing connection.
set -euo pipefail

DIR=${IDINT_SERVICES_DIR:-/tmp/idint-services}
PG_PORT=${IDINT_PG_PORT:-25432}
VM_PORT=${IDINT_VM_PORT:-28428}
IX_PORT=${IDINT_INFLUX_PORT:-28086}
IX_RPC_PORT=$((IX_PORT + 2))
PGBIN=/usr/lib/postgresql/15/bin

say() { echo "services: $*" >&2; }
die() { say "$*"; exit 1; }

# Waits up to $2 seconds for command $1 to succeed.
wait_for() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        if eval "$1" >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    return 1
}

http_ok() { curl -fsS -o /dev/null "$1"; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Fails with the reason when something already listens on 127.0.0.1:$1 (checked before starting
# a service there, so a clash is reported as such instead of as a service that never got ready).
port_free() {
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
        die "127.0.0.1:$1 is already in use by another process (choose another port, see the header)"
    fi
}

# Succeeds when the service whose state is in directory $1 was started on port $2 (a running
# instance on another port is restarted by the callers).
same_port() { [ "$(cat "$1/port" 2>/dev/null)" = "$2" ]; }

start_postgres() {
    [ -x "$PGBIN/initdb" ] || die "PostgreSQL 15 not installed (scripts/setup.sh installs it)"
    local d="$DIR/pg"
    mkdir -p "$d"
    chown postgres: "$d"
    if [ ! -f "$d/data/PG_VERSION" ]; then
        runuser -u postgres -- "$PGBIN/initdb" -D "$d/data" -U postgres -A trust --no-sync \
            -E UTF8 --locale=C.UTF-8 >"$d/initdb.log" 2>&1 || die "initdb failed: $(tail -3 "$d/initdb.log")"
    fi
    if runuser -u postgres -- "$PGBIN/pg_ctl" -D "$d/data" status >/dev/null 2>&1 && ! same_port "$d" "$PG_PORT"; then
        stop_postgres
    fi
    if ! runuser -u postgres -- "$PGBIN/pg_ctl" -D "$d/data" status >/dev/null 2>&1; then
        port_free "$PG_PORT"
        echo "$PG_PORT" >"$d/port"
        runuser -u postgres -- "$PGBIN/pg_ctl" -D "$d/data" -l "$d/pg.log" -w -t 30 \
            -o "-c listen_addresses=127.0.0.1 -c port=$PG_PORT -c unix_socket_directories=$d -c fsync=off -c max_connections=200" \
            start >/dev/null 9>&- || die "postgres did not start: $(tail -5 "$d/pg.log")"
    fi
    wait_for "runuser -u postgres -- $PGBIN/pg_isready -h 127.0.0.1 -p $PG_PORT" 30 || die "postgres not ready"
    local psql=(runuser -u postgres -- psql -h "$d" -p "$PG_PORT" -U postgres -qAt)
    if [ "$("${psql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname='collector'")" != 1 ]; then
        "${psql[@]}" -c "CREATE ROLE collector LOGIN PASSWORD 'collector' CREATEDB" >/dev/null
    fi
    if [ "$("${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname='collector'")" != 1 ]; then
        "${psql[@]}" -c "CREATE DATABASE collector OWNER collector" >/dev/null
    fi
}

stop_postgres() {
    local d="$DIR/pg"
    if [ -f "$d/data/PG_VERSION" ]; then
        runuser -u postgres -- "$PGBIN/pg_ctl" -D "$d/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
}

start_victoria() {
    command -v victoria-metrics >/dev/null || die "victoria-metrics not installed (scripts/setup.sh installs it)"
    local d="$DIR/vm"
    mkdir -p "$d"
    alive "$d/pid" && ! same_port "$d" "$VM_PORT" && stop_pidfile "$d/pid"
    if ! alive "$d/pid"; then
        port_free "$VM_PORT"
        echo "$VM_PORT" >"$d/port"
        victoria-metrics -storageDataPath="$d/data" -httpListenAddr="127.0.0.1:$VM_PORT" \
            -retentionPeriod=100y -loggerLevel=WARN -search.disableCache \
            -search.latencyOffset=0s >"$d/vm.log" 2>&1 9>&- &
        echo $! >"$d/pid"
    fi
    wait_for "http_ok http://127.0.0.1:$VM_PORT/health" 30 || die "victoria-metrics not ready: $(tail -3 "$d/vm.log")"
}

start_influx() {
    command -v influxd >/dev/null || die "influxd not installed (scripts/setup.sh installs influxdb)"
    local d="$DIR/influx"
    mkdir -p "$d"
    alive "$d/pid" && ! same_port "$d" "$IX_PORT" && stop_pidfile "$d/pid"
    if ! alive "$d/pid"; then
        port_free "$IX_PORT"
        port_free "$IX_RPC_PORT"
        echo "$IX_PORT" >"$d/port"
        env INFLUXDB_REPORTING_DISABLED=true INFLUXDB_BIND_ADDRESS="127.0.0.1:$IX_RPC_PORT" \
            INFLUXDB_META_DIR="$d/meta" INFLUXDB_DATA_DIR="$d/data" INFLUXDB_DATA_WAL_DIR="$d/wal" \
            INFLUXDB_HTTP_BIND_ADDRESS="127.0.0.1:$IX_PORT" INFLUXDB_HTTP_LOG_ENABLED=false \
            INFLUXDB_DATA_QUERY_LOG_ENABLED=false \
            influxd -config /etc/influxdb/influxdb.conf >"$d/influxd.log" 2>&1 9>&- &
        echo $! >"$d/pid"
    fi
    wait_for "http_ok http://127.0.0.1:$IX_PORT/ping" 30 || die "influxd not ready: $(tail -3 "$d/influxd.log")"
}

stop_pidfile() {
    local f="$1"
    if alive "$f"; then
        kill "$(cat "$f")"
        wait_for "! kill -0 $(cat "$f")" 20 || kill -9 "$(cat "$f")" 2>/dev/null || true
    fi
    rm -f "$f"
}

print_env() {
    echo "IDINT_PG_URL=postgresql://collector:collector@127.0.0.1:$PG_PORT/collector"
    echo "IDINT_VM_URL=http://127.0.0.1:$VM_PORT"
    echo "IDINT_INFLUX_URL=http://127.0.0.1:$IX_PORT"
}

cmd=${1:-env}
shift || true
which=("$@")
[ ${#which[@]} -eq 0 ] && which=(postgres victoria influx)
mkdir -p "$DIR"
case "$cmd" in
start)
    # One starter at a time (test binaries may call this concurrently); the services started
    # below must not inherit the lock's descriptor (9>&-), or they would hold it forever.
    exec 9>"$DIR/.lock"
    flock 9
    for s in "${which[@]}"; do
        case "$s" in
        postgres) start_postgres ;;
        victoria) start_victoria ;;
        influx) start_influx ;;
        *) die "unknown service '$s' (postgres, victoria, influx)" ;;
        esac
    done
    print_env
    ;;
stop)
    for s in "${which[@]}"; do
        case "$s" in
        postgres) stop_postgres ;;
        victoria) stop_pidfile "$DIR/vm/pid" ;;
        influx) stop_pidfile "$DIR/influx/pid" ;;
        *) die "unknown service '$s' (postgres, victoria, influx)" ;;
        esac
    done
    ;;
env) print_env ;;
*) die "usage: $0 start|stop|env [postgres|victoria|influx]..." ;;
esac
