#!/usr/bin/env bash
# Decoding and data-plane replay (the main job before the DPDK router landed):
#  1. decode SCION / ID-INT packets and pretty-print every layer. With no argument: the golden
#     packets in testdata/scion/slayers_golden/ plus an ID-INT demo packet built, MACed
#     and encrypted by idint-wire; otherwise each argument is a pcap file, a raw SCION packet
#     (.bin) or a directory of them;
#  2. with no argument, replay the reference router cases through the scion-dp data plane
#     (ROUTER_CASES=FILE to use another case file).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
./scripts/setup.sh
cargo build -q --release -p wire-tools --bins
if (($# > 0)); then
    exec ./target/release/idint-decode "$@"
fi
mkdir -p target/demo
./target/release/idint-decode --write-demo target/demo/idint-demo.pcap
./target/release/idint-decode testdata/scion/slayers_golden target/demo/idint-demo.pcap
echo
echo "== router cases through the data plane"
exec cargo run -q --release -p scion-dp-replay -- \
    "${ROUTER_CASES:-testdata/scion/router_cases.json}"
