#!/usr/bin/env bash
# Writes the pcap of every scenario (scenarios/*.toml) to pcaps/<scenario>.pcap, plus
# pcaps/<scenario>.expect (one line per packet: index, ingress, kind, shape, malformed,
# expected disposition). The captures are not committed: regenerate them, with the router's
# clock, shortly before a run (hop fields expire; the default --now is the current time).
#
#   pktgen-configs/generate.sh                 # every scenario, clock = now
#   pktgen-configs/generate.sh mixed epic      # some scenarios
#   NOW=1763800000 OUT=/tmp/pcaps pktgen-configs/generate.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
out="${OUT:-$here/pcaps}"
now="${NOW:-now}"
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

if [ -n "${PKTGEN:-}" ]; then
    pktgen="$PKTGEN"
else
    cargo build -q --release -p idint-pktgen --manifest-path "$root/Cargo.toml"
    pktgen="${CARGO_TARGET_DIR:-$root/target}/release/idint-pktgen"
fi

mkdir -p "$out"
if (($#)); then
    names=("$@")
else
    names=()
    for f in "$here"/scenarios/*.toml; do names+=("$(basename "$f" .toml)"); done
fi
for n in "${names[@]}"; do
    echo "== $n"
    "$pktgen" --scenario "$here/scenarios/$n.toml" --now "$now" \
        --out "$out/$n.pcap" --expect "$out/$n.expect"
done
