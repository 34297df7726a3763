#!/usr/bin/env bash
# The router alone: the DPDK border router on virtual devices, end to end (the main job
# before the network in a box, scripts/run.sh).
#  1. idint-pktgen writes a pcap of valid SCION traffic for router br1a of the example AS
#     1-ff00:0:1 (testdata/scion/config_examples/router_benchmark): crossover, inbound,
#     outbound, EPIC, sibling hand-overs; 30% with ID-INT requests (modes 0-3, half encrypted),
#     a few malformed packets (truncated, bad MAC, expired);
#  2. idint-router (DPDK, --no-huge --no-pci, net_pcap in and out) forwards it for a few
#     seconds and prints its summary: Mpps, forwarded / delivered / SCMP / dropped by reason,
#     ID-INT counters;
#  3. the router's output is checked as the destination hosts would: every ID-INT stack
#     verified and decrypted, a sample printed.
# Arguments are passed to scripts/decode.sh instead (pretty-print pcaps / raw packets).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
if (($# > 0)); then
    exec ./scripts/decode.sh "$@"
fi
./scripts/setup.sh
cargo build -q --release -p router-dpdk -p idint-pktgen
BIN=${CARGO_TARGET_DIR:-target}/release
EX=$(cd testdata/scion/config_examples/router_benchmark && pwd)
W=target/demo/router
rm -rf "$W" && mkdir -p "$W"
COUNT=${DEMO_PACKETS:-20000}

echo "== 1. traffic for br1a of 1-ff00:0:1 (idint-pktgen)"
"$BIN/idint-pktgen" -t "$EX/topology.json" -r br1a -n "$COUNT" --flows 64 --now now \
    --idint 30 --idint-modes 0,1,2,3 --idint-instructions 0x82,0x83,0x4f,0x8b --malformed 50 \
    -o "$W/in.pcap" --expect "$W/expected.csv"
# Plus encrypted ID-INT requests, appended to the same capture (same pcap header).
"$BIN/idint-pktgen" -t "$EX/topology.json" -r br1a -n $((COUNT / 4)) --flows 16 --now now \
    --kinds crossover,out --idint 100 --idint-encrypt --idint-modes 2 -o "$W/in-enc.pcap"
tail -c +25 "$W/in-enc.pcap" >>"$W/in.pcap" && rm "$W/in-enc.pcap"

# The router's configuration: configs/router.toml (its pcap device reads $W/in.pcap and writes
# $W/out.pcap, paths relative to the repository root).
CONFIG=configs/router.toml

echo
echo "== 2. idint-router on net_pcap (2 s)"
"$BIN/idint-router" --config "$CONFIG" --duration 2 --summary "$W/summary.json" >/dev/null
python3 - "$W/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
def nz(d):
    return {k: v for k, v in (d or {}).items() if v}
for k in ("forwarded", "to_sibling", "delivered", "scmp_replies", "drops", "idint", "idint_keys"):
    if k in s:
        v = s[k]
        print(f"  {k}: {json.dumps(nz(v) if isinstance(v, dict) else v)}")
PY

echo
echo "== 2b. throughput: the same capture replayed for 2 s (infinite_rx), output discarded"
sed -e "s|tx_pcap=$W/out.pcap|tx_pcap=/dev/null,infinite_rx=1|" -e "s|\"\\.\\./testdata/|\"$PWD/testdata/|" \
    -e 's|^\[dataplane\]|[dataplane]\nmbufs = 65535|' "$CONFIG" >"$W/router-replay.toml"
"$BIN/idint-router" --config "$W/router-replay.toml" --duration 2 --summary "$W/summary-replay.json" >/dev/null
python3 - "$W/summary-replay.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"1 worker: {s['rx_mpps']:.2f} Mpps received, {s['forwarded_mpps']:.2f} Mpps forwarded "
      f"(pcap output path to /dev/null; EPIC packets go stale as the capture repeats: "
      f"{s['drops'].get('epic_stale', 0) if isinstance(s.get('drops'), dict) else 0} dropped as such)")
PY

echo
echo "== 3. the destination hosts' view: ID-INT verified and decrypted (host API)"
"$BIN/idint-pktgen" -t "$EX/topology.json" -r br1a --verify "$W/out.pcap" --sample 3
echo
echo "Files: $W (in.pcap, out.pcap: decode with ./scripts/decode.sh FILE; summary.json)"
