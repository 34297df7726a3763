#!/usr/bin/env bash
# Worker scaling benchmark (a scripted run, not a timed test): forwarded Mpps of `idint-router`
# with 1 and with 2 workers, for both ways packets reach the workers, each against its 1-worker
# run of the same round:
#   queues    every worker polls its own rx queue (RSS on a real NIC); here net_pcap with one
#             rx queue per worker, each replaying the capture (a multi-queue virtual device)
#   software  one rx queue; the distributor lcore hashes each packet's SCION flow (flow ID,
#             ISD-ASes, hosts) to a worker, as the reference router does: the default on real
#             NICs with 3+ worker lcores, since a SCION link is one underlay 5-tuple that RSS
#             cannot spread
# for transit (172-byte frames) and ID-INT authenticated + encrypted (1000-byte payloads), 256
# flows each.
#
#   scripts/scaling-bench.sh [SECONDS_PER_RUN] [ROUNDS]     (defaults 3 and 3)
#
# Lcores: queues 1 worker `-l 0-1`, 2 workers `--lcores=0@0,1@1,2@0`; software 1 worker
# `--lcores=0@0,1@1,2@0` (distributor + worker), 2 workers `--lcores=0@0,1@1,2@0,3@1`.
# The main lcore's control loop mostly sleeps; on a machine with fewer CPUs than busy lcores
# (software with 2 workers needs 3 busy CPUs) the figures measure the oversubscription too:
# the script prints the CPU count beside them.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
SECS=${1:-3}
ROUNDS=${2:-3}
./scripts/setup.sh >/dev/null
cargo build -q --release -p router-dpdk -p idint-pktgen
BIN=${CARGO_TARGET_DIR:-target}/release
W=$(mktemp -d /tmp/scaling-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
. scripts/lib/bench-router.sh

bench_topology
bench_gen transit --size 172
bench_gen enc --payload 1000 --idint 100 --idint-modes 2 --idint-instructions 0x82,0x83 --idint-encrypt

run() { # TRAFFIC DISTRIBUTION WORKERS -> forwarded Mpps
    local traffic=$1 mode=$2 workers=$3 lcores queues=1
    case "$mode.$workers" in
        queues.1) lcores='"-l", "0-1"' ;;
        queues.2) lcores='"--lcores=0@0,1@1,2@0"' queues=2 ;;
        software.1) lcores='"--lcores=0@0,1@1,2@0"' ;;
        software.2) lcores='"--lcores=0@0,1@1,2@0,3@1"' ;;
    esac
    bench_config "$lcores" "$(bench_pcap_vdev "$traffic" "$queues")" "distribution = \"$mode\""
    bench_run "$SECS" forwarded_mpps
}

declare -A R
for ((round = 1; round <= ROUNDS; round++)); do
    for traffic in transit enc; do
        for mode in queues software; do
            for w in 1 2; do
                v=$(run "$traffic" "$mode" "$w")
                R[$traffic.$mode.$w]=$(python3 -c "print(max($v, ${R[$traffic.$mode.$w]:-0}))")
            done
        done
    done
done
echo "CPUs: $(nproc); best of $ROUNDS rounds of $SECS s"
printf "%-22s %10s %10s %8s\n" "run (Mpps forwarded)" "1 worker" "2 workers" "2w / 1w"
for traffic in transit enc; do
    for mode in queues software; do
        a=${R[$traffic.$mode.1]} b=${R[$traffic.$mode.2]}
        printf "%-22s %10s %10s %8s\n" "$traffic, $mode" "$a" "$b" \
            "$(python3 -c "print(f'{$b / $a:.2f}' if $a else '-')")"
    done
done
