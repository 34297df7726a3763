#!/usr/bin/env bash
# Main job: a SCION network with ID-INT on one machine (crates/netbox, docs/netbox.md).
# Five ASes in two ISDs, six idint-router processes (DPDK net_af_packet on veth pairs in network
# namespaces), an end host per AS running idint-ping, the collector on PostgreSQL and
# VictoriaMetrics. It brings the network up, pings over every path, takes a link down and up,
# restarts a router and the collector, asks the collector's API, reads the link captures,
# prints a summary and "N passed, M failed", writes target/demo/ (summary.json, captures/,
# logs/, dashboard.png), and tears everything down, also when interrupted.
#
#   ./scripts/run.sh [idint-netbox run options, e.g. --no-faults --pings 10]
#   ./scripts/run.sh FILE|DIR...      pretty-prints pcaps or raw SCION packets instead
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
if (($# > 0)) && [[ $1 != -* ]]; then
    exec ./scripts/decode.sh "$@"
fi
./scripts/setup.sh
cargo build -q --release -p router-dpdk -p collector -p idint-host -p netbox
BIN=${CARGO_TARGET_DIR:-target}/release

# The box's own PostgreSQL and VictoriaMetrics, fresh each run (ports apart from the tests').
export IDINT_SERVICES_DIR=/tmp/idint-netbox-services IDINT_PG_PORT=25532 IDINT_VM_PORT=28528
cleanup() {
    "$BIN/idint-netbox" down >/dev/null 2>&1 || true
    ./scripts/services.sh stop postgres victoria >/dev/null 2>&1 || true
}
trap cleanup EXIT
cleanup
rm -rf "$IDINT_SERVICES_DIR"
eval "$(./scripts/services.sh start postgres victoria)"
export IDINT_PG_URL IDINT_VM_URL

"$BIN/idint-netbox" run --bin "$BIN" --repo . --out target/demo \
    --screenshot scripts/dashboard-shot.sh "$@"
