#!/usr/bin/env bash
# Replays a scenario's capture at line rate with DPDK's testpmd, no Pktgen-DPDK needed: the
# capture is read by a net_pcap port (looped with infinite_rx) and testpmd's io forwarding
# sends it out of the real NIC cabled to the router under test.
#
#   pktgen-configs/generate.sh mixed
#   NIC=0000:3b:00.0 SCENARIO=mixed pktgen-configs/testpmd/replay.sh
#
# NIC       PCI address of the port facing the router (bound to vfio-pci)
# SCENARIO  scenario name, its capture is pcaps/${SCENARIO}.pcap (default: mixed, mixed.pcap)
# CORES     lcores for testpmd (default 0-2: one main, two forwarding)
# PEER_MAC  destination MAC to write into every frame (the router port's MAC); default: keep
#           the capture's MACs
# SECONDS_TO_RUN  how long to replay (default 60)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
: "${NIC:?set NIC to the PCI address of the port facing the router}"
scenario="${SCENARIO:-mixed}"
pcap="$here/pcaps/${scenario}.pcap"
[ -f "$pcap" ] || { echo "no $pcap: run pktgen-configs/generate.sh $scenario" >&2; exit 1; }
cores="${CORES:-0-2}"
run_for="${SECONDS_TO_RUN:-60}"
testpmd="$(command -v dpdk-testpmd || command -v testpmd)"

# Port 0: the capture (looped); port 1: the NIC. io forwarding pairs them 0 -> 1 (and drops
# what the NIC receives back into the pcap port's tx, which goes nowhere).
args=(-l "$cores" -n 4
    --vdev "net_pcap0,rx_pcap=$pcap,infinite_rx=1"
    -a "$NIC"
    --
    --forward-mode=io
    --nb-cores=2
    --rxq=1 --txq=1
    --burst=32
    --stats-period=1)
if [ -n "${PEER_MAC:-}" ]; then
    # mac forwarding rewrites the destination MAC to the peer of the sending port.
    args=("${args[@]/--forward-mode=io/--forward-mode=mac}" --eth-peer="1,$PEER_MAC")
fi
# Without -i, testpmd forwards at once, prints port statistics every second and stops (with
# its totals) when a line arrives on its input.
(sleep "$run_for"; echo) | "$testpmd" "${args[@]}"
