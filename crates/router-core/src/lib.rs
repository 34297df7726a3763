//! What the SCION/ID-INT border router does without DPDK, as plain code with unit tests: the
//! I/O shell (`router-dpdk`) keeps `main`, setup, the worker loop and the control thread.
//!
//! * [`clock`]: wall-clock time from the TSC, corrected against the system clock.
//! * [`config`]: the TOML configuration plus `topology.json` and `keys/`, with clear errors.
//! * [`eal_args`]: checks of the configured EAL arguments before EAL runs.
//! * [`underlay`]: Ethernet/IPv4/IPv6/UDP parsing and in-place rewriting, ARP answers.
//! * [`ndp`]: IPv6 neighbour discovery (solicitations and advertisements), the ARP of IPv6.
//! * [`neighbor`]: next-hop MACs learned from ARP and NDP, shared lock-free by the workers.
//! * [`telemetry`]: configured telemetry figures, port readings shared with the workers, and
//!   the averages and fractions the telemetry source reports.
//! * [`telemetry_source`]: the router's ID-INT telemetry source over those readings.
//! * [`counters`]: a worker's I/O-level counters.
//! * [`tables`]: the forwarding tables (ports, interfaces, neighbours).
//! * [`classify`]: what a received frame is (SCION for us, ARP/NDP answered, to drop).
//! * [`forward`]: where a processed packet goes and its underlay rewrite.
//! * [`burst`]: the per-burst glue (classify, route, rewrite, egress batches) over any buffer.
//! * [`resolver`]: the rate limit and frames of ARP/NDP requests for next hops.
//! * [`export`]: ID-INT sink records and report batching for the collector.
//! * [`ratelimit`]: the per-worker token bucket of SCMP error replies.
//! * [`pool`]: what the configuration pins of the mbuf pool, the check and the default size.
//!
//! Nothing here does I/O or needs `unsafe`: the shell hands in frame bytes and readings.

pub mod bfd;
pub mod burst;
pub mod classify;
pub mod clock;
pub mod config;
pub mod counters;
pub mod eal_args;
pub mod export;
pub mod forward;
pub mod idle;
pub mod ndp;
pub mod neighbor;
pub mod pool;
pub mod probes;
pub mod ratelimit;
pub mod resolver;
pub mod tables;
pub mod telemetry;
pub mod telemetry_source;
pub mod underlay;
