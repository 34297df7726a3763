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
mkdir -p "$W/keys"
cp testdata/scion/config_examples/router_benchmark/keys/master0.key "$W/keys/"
cat >"$W/topology.json" <<'JSON'
{
  "isd_as": "1-ff00:0:110", "mtu": 1472, "attributes": [],
  "border_routers": {
    "br1-ff00_0_110-1": {
      "internal_addr": "10.110.0.1:30042",
      "interfaces": {
        "1": {"underlay": {"local": "10.1.0.1:50000", "remote": "10.1.0.2:50000"},
              "isd_as": "1-ff00:0:100", "link_to": "parent", "mtu": 1472},
        "2": {"underlay": {"local": "10.2.0.1:50000", "remote": "10.2.0.2:50000"},
              "isd_as": "1-ff00:0:111", "link_to": "child", "mtu": 1472}
      }
    }
  }
}
JSON
"$BIN/idint-pktgen" -t "$W/topology.json" -r br1-ff00_0_110-1 -k "$W/keys" --kinds transit \
    -n 4096 --flows 256 --now now --out-dir "$W/transit" --size 172 >/dev/null

config() { # SLEEP_US IN_VDEV
    cat >"$W/router.toml" <<TOML
topology = "topology.json"
keys = "keys"
router_id = "br1-ff00_0_110-1"
eal = ["--no-huge", "-m", "1024", "--no-pci", "--no-shconf", "-l", "0-1", "--log-level=4",
       "--vdev=$2", "--vdev=net_null1,no-rx=1"]
[dataplane]
distribution = "queues"
mbufs = 32767
idle_sleep_us = $1
[[port]]
device = "${2%%,*}"
interfaces = [1]
[[port]]
device = "net_null1"
interfaces = [2]
internal = true
default_next_hop_mac = "02:00:00:00:00:02"
TOML
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
    config "$1" "net_pcap0,rx_pcap=$W/transit/ext-1.pcap,tx_pcap=/dev/null,infinite_rx=1"
    "$BIN/idint-router" --config "$W/router.toml" --duration "$SECS" --summary "$W/s.json" \
        >/dev/null 2>"$W/err.log" || { cat "$W/err.log" >&2; exit 1; }
    python3 -c "import json; print(f\"{json.load(open('$W/s.json'))['forwarded_mpps']:.2f}\")"
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
