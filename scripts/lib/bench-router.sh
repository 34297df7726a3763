# Shared by the router's scripted benchmarks (router-bench.sh, idle-bench.sh, scaling-bench.sh):
# the benchmark AS, its traffic and the router configuration. Source it after setting
#   W    a scratch directory
#   BIN  the directory of the release binaries (idint-router, idint-pktgen)
#
# Topology: a non-core AS 1-ff00:0:110 whose router has a parent link (interface 1) and a
# child link (interface 2); frames of parent->child transit arrive on interface 1's port and
# leave by interface 2's.

# Writes the AS's keys and topology.json into $W.
bench_topology() {
    mkdir -p "$W/keys"
    cp testdata/scion/config_examples/router_benchmark/keys/master0.key "$W/keys/"
    cat >"$W/topology.json" <<'JSON'
{
  "isd_as": "1-ff00:0:110",
  "mtu": 1472,
  "attributes": [],
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
}

# bench_gen NAME PKTGEN_ARGS...: 4096 parent->child transit frames of $FLOWS flows (default
# 256) into $W/NAME/ext-1.pcap.
bench_gen() {
    local name=$1
    shift
    mkdir -p "$W/$name"
    "$BIN/idint-pktgen" -t "$W/topology.json" -r br1-ff00_0_110-1 -k "$W/keys" --kinds transit \
        -n 4096 --flows "${FLOWS:-256}" --now now --out-dir "$W/$name" "$@" >/dev/null
    [ -f "$W/$name/ext-1.pcap" ] || { echo "bench: pktgen wrote no ext-1.pcap" >&2; exit 1; }
}

# bench_config LCORES IN_VDEV [DATAPLANE_LINES]: writes $W/router.toml. LCORES is the EAL lcore
# argument list as TOML strings (e.g. '"-l", "0-1"'); IN_VDEV is interface 1's device
# (net_null1, interface 2's, is added); DATAPLANE_LINES go into [dataplane] (default: RSS
# queues).
bench_config() {
    local lcores=$1 in_vdev=$2 dataplane=${3:-'distribution = "queues"'}
    cat >"$W/router.toml" <<TOML
topology = "topology.json"
keys = "keys"
router_id = "br1-ff00_0_110-1"
eal = ["--no-huge", "-m", "1024", "--no-pci", "--no-shconf", $lcores, "--log-level=4",
       "--vdev=$in_vdev", "--vdev=net_null1,no-rx=1"]
[dataplane]
mbufs = 32767
$dataplane
[bfd]
disable = true
[[port]]
device = "${in_vdev%%,*}"
interfaces = [1]
[[port]]
device = "net_null1"
interfaces = [2]
internal = true
default_next_hop_mac = "02:00:00:00:00:02"
TOML
}

# bench_pcap_vdev NAME QUEUES: net_pcap0 replaying $W/NAME/ext-1.pcap forever on QUEUES rx
# queues (each queue replays the whole file).
bench_pcap_vdev() {
    local pcap="$W/$1/ext-1.pcap" rx="" q
    for ((q = 0; q < $2; q++)); do rx+=",rx_pcap=$pcap,tx_pcap=/dev/null"; done
    echo "net_pcap0${rx},infinite_rx=1"
}

# bench_run SECS KEY: runs the router on $W/router.toml for SECS seconds and prints KEY of its
# summary (forwarded_mpps, rx_mpps) with two decimals; drops are reported on stderr.
bench_run() {
    "$BIN/idint-router" --config "$W/router.toml" --duration "$1" --summary "$W/summary.json" \
        >/dev/null 2>"$W/err.log" \
        || { echo "bench: router failed:" >&2; cat "$W/err.log" >&2; exit 1; }
    python3 - "$W/summary.json" "$2" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
key = sys.argv[2]
print(f"{s[key]:.2f}")
drops = {k: v for k, v in (s.get("drops") or {}).items() if v}
if drops and key != "rx_mpps":
    print("bench: drops " + json.dumps(drops), file=sys.stderr)
PY
}
