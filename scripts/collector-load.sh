#!/usr/bin/env bash
# Load test of the collector over loopback UDP: starts idint-collector (release build) with the
# scion-dp chain's keys and topology, sends genuine reports at rising rates, prints per rate
# sent/accepted/queue-full/kernel drops and p50/p99 report-to-queryable latency, and the
# highest rate sustained with zero loss. The collector runs with its stores: PostgreSQL
# (topology, quarantine) and VictoriaMetrics (metrics), started on loopback by
# scripts/services.sh (left running); IDINT_LOAD_STORES=0 runs it on in-memory defaults instead.
# Stops the collector afterwards.
#
#   scripts/collector-load.sh [--rates 5000,10000,...] [--secs 2] [--batch 32]
set -euo pipefail
cd "$(dirname "$0")/.."
STORAGE=()
if [ "${IDINT_LOAD_STORES:-1}" != 0 ]; then
  eval "$(scripts/services.sh start postgres victoria)"
  STORAGE=(--postgres "$IDINT_PG_URL" --victoria "$IDINT_VM_URL")
  echo "stores: PostgreSQL $IDINT_PG_URL, VictoriaMetrics $IDINT_VM_URL"
fi
UDP=127.0.0.1:${COLLECTOR_UDP_PORT:-30255}
API=127.0.0.1:${COLLECTOR_API_PORT:-8480}
cargo build --release -q -p collector --bin idint-collector --example loadgen
TARGET=${CARGO_TARGET_DIR:-target}
DIR=$(mktemp -d /tmp/collector-load.XXXXXX)
"$TARGET/release/examples/loadgen" --write-config "$DIR" --udp "$UDP" --api "$API" "${STORAGE[@]}"
"$TARGET/release/idint-collector" run --config "$DIR/collector.toml" &
PID=$!
cleanup() { kill -TERM "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/${API%:*}/${API#*:}") 2>/dev/null; then break; fi
  sleep 0.1
done
"$TARGET/release/examples/loadgen" --udp "$UDP" --api "$API" "$@"
