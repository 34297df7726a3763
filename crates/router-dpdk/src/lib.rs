//! The DPDK poll-mode SCION/ID-INT border router: a thin I/O shell around `scion-dp`.
//!
//! DPDK itself is reached through the safe [`dpdk`] crate; this crate's only `unsafe` is the
//! final EAL clean-up in [`run`] (see there).
//!
//! * [`config`]: the TOML configuration plus `topology.json` and `keys/`, with clear errors.
//! * [`eal_args`]: checks of the configured EAL arguments before EAL runs.
//! * [`underlay`]: Ethernet/IPv4/IPv6/UDP parsing and in-place rewriting.
//! * [`worker`]: the per-lcore run-to-completion loop and the telemetry source.
//! * [`distribute`]: software flow distribution for ports with fewer queues than workers.
//! * [`export`]: ID-INT reports to the collector over UDP, batched, off the packet path.
//! * [`http`]: the control thread's `/metrics` and `/health` endpoints.
//! * [`ndp`]: IPv6 neighbour discovery (solicitations and advertisements), the ARP of IPv6.
//! * [`neighbor`]: next-hop MACs learned from ARP and NDP, shared lock-free by the workers.
//! * [`stats`]: counters shared between workers and the control thread.
//! * [`run`]: wiring it all up (ports, tables, workers, summary).

pub mod config;
pub mod distribute;
pub mod eal_args;
pub mod export;
pub mod http;
pub mod ndp;
pub mod neighbor;
pub mod run;
pub mod stats;
pub mod underlay;
pub mod worker;
