#!/usr/bin/env bash
# Installs what building and testing the workspace needs on a fresh Debian 12 machine (root).
# Idempotent and quiet when everything is already there.
set -euo pipefail

# libdpdk-dev: DPDK 22.11 headers, libraries and the net_null/net_ring/net_pcap drivers;
# libclang-dev: libclang for bindgen (crates/dpdk-sys); postgresql, victoria-metrics, influxdb:
# the collector's stores, started on loopback by scripts/services.sh for the demo and the tests;
# tshark: runs the Wireshark dissector (tools/wireshark) in crates/wire-tools/tests/dissector.rs;
# lua5.4: `luac -p` checks the Pktgen-DPDK scripts of pktgen-configs/ (crates/idint-pktgen/tests);
# chromium: headless browser for the collector dashboard's test and scripts/dashboard-shot.sh.
# nginx-light: fronts single-node VictoriaMetrics with a cluster's /insert and /select URL layout
# (crates/collector-store/tests/timeseries.rs; Debian packages no vminsert/vmselect).
APT_PACKAGES=(build-essential pkg-config ca-certificates curl libdpdk-dev libclang-dev
    postgresql victoria-metrics influxdb tshark lua5.4 chromium nginx-light)

missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v rustup >/dev/null 2>&1; then
    echo "setup: rustup is required (the machine image provides it; see https://rustup.rs)" >&2
    exit 1
fi
# The wire and DRKey crates must build without std: check them against a bare-metal target.
rustup target list --installed | grep -qx x86_64-unknown-none \
    || rustup target add x86_64-unknown-none >/dev/null
