#!/usr/bin/env bash
# Main job (until the router lands): decode SCION / ID-INT packets and pretty-print every layer.
# With no argument it decodes the golden packets in ../shared/vectors/scion/slayers_golden/ plus
# an ID-INT demo packet built, MACed and encrypted by idint-wire; otherwise each argument is a
# pcap file, a raw SCION packet (.bin) or a directory of them.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
./scripts/setup.sh
cargo build -q --release -p wire-tools --bins
if (($# == 0)); then
    mkdir -p target/demo
    ./target/release/idint-decode --write-demo target/demo/idint-demo.pcap
    set -- ../shared/vectors/scion/slayers_golden target/demo/idint-demo.pcap
fi
exec ./target/release/idint-decode "$@"
