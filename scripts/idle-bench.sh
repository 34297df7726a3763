#!/usr/bin/env bash
# Idle back-off benchmark (a scripted run, not a timed test): CPU use of an idle
# `idint-router` and its forwarding rate under load, with the back-off on
# (`[dataplane] idle_sleep_us`, default 100) and off (0 = busy polling), alternating.
#
#   scripts/idle-bench.sh [SECONDS_PER_RUN] [ROUNDS]     (defaults 5 and 3)
#
# Idle: both ports are net_null with no-rx=1 (nothing ever arrives); CPU = (utime + stime)
# of the process over the run after a 1 s warm-up, from /proc/PID/stat, as % of one CPU
# (the main lcore's control loop sleeps; the worker polls or backs off).
# Load: 172-byte transit frames replayed forever from net_pcap (infinite_rx=1) to net_null,
# 1 worker, forwarded Mpps from the summary (as scripts/router-bench.sh's transit run).
# Pause length: the longest pause `std::thread::sleep` actually gives for idle_sleep_us on
# this machine (the latency bound of the first packet after an idle spell).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
SECS=${1:-5}
ROUNDS=${2:-3}
./scripts/setup.sh >/dev/null
cargo build -q --release -p router-dpdk -p idint-pktgen
BIN=${CARGO_TARGET_DIR:-target}/release
W=$(mktemp -d /tmp/idle-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
. scripts/lib/bench-router.sh
bench_topology
bench_gen transit --size 172

config() { # SLEEP_US IN_VDEV
    bench_config '"-l", "0-1"' "$2" "distribution = \"queues\"
idle_sleep_us = $1"
}

idle_cpu() { # SLEEP_US -> % of one CPU
    config "$1" "net_null0,no-rx=1"
    "$BIN/idint-router" --config "$W/router.toml" --duration $((SECS + 2)) >/dev/null 2>"$W/err.log" &
    local pid=$! hz a b
    hz=$(getconf CLK_TCK)
    sleep 1
    a=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    sleep "$SECS"
    b=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    wait "$pid" || { cat "$W/err.log" >&2; exit 1; }
    python3 -c "print(f'{($b - $a) / $hz / $SECS * 100:.1f}')"
}

load_mpps() { # SLEEP_US -> forwarded Mpps
    config "$1" "$(bench_pcap_vdev transit 1)"
    bench_run "$SECS" forwarded_mpps
}

for ((r = 1; r <= ROUNDS; r++)); do
    for us in 100 0; do
        echo "round $r idle_sleep_us=$us: idle CPU $(idle_cpu $us)%, load $(load_mpps $us) Mpps"
    done
done
python3 - <<'PY'
import time
for us in (1, 10, 100):
    t = []
    for _ in range(200):
        a = time.perf_counter_ns(); time.sleep(us / 1e6); t.append(time.perf_counter_ns() - a)
    t.sort()
    print(f"sleep({us} us) takes: median {t[100] / 1000:.0f} us, p99 {t[198] / 1000:.0f} us")
PY
