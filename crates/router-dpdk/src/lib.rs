//! The DPDK poll-mode SCION/ID-INT border router: a thin I/O shell around `scion-dp` and
//! `router-core` (configuration, underlay parsing and rewriting, ARP/NDP and neighbour tables,
//! which need no DPDK; re-exported here under their old paths).
//!
//! DPDK itself is reached through the safe [`dpdk`] crate; this crate's only `unsafe` is the
//! final EAL clean-up in [`run`] (see there).
//!
//! * [`worker`]: the per-lcore run-to-completion loop around `router_core`'s classification,
//!   routing and telemetry source.
//! * [`distribute`]: software flow distribution for ports with fewer queues than workers.
//! * [`export`]: ID-INT reports to the collector over UDP, batched, off the packet path.
//! * [`http`]: the control thread's `/metrics` and `/health` endpoints.
//! * [`stats`]: counters shared between workers and the control thread.
//! * [`check`]: `--check-config`: a configuration checked without DPDK.
//! * [`run`]: wiring it all up (ports, tables, workers, control thread, shutdown, summary).

pub mod bfd;
pub mod check;
pub mod distribute;
pub mod export;
pub mod http;
pub mod run;
pub mod stats;
pub mod worker;

pub use router_core::{
    classify, config, eal_args, forward, ndp, neighbor, resolver, tables, telemetry_source,
    underlay,
};

// The EAL checks of `router-core` assume the lcore limit of the DPDK linked here.
const _: () = assert!(
    eal_args::MAX_LCORE == dpdk::MAX_LCORE,
    "router_core::eal_args::MAX_LCORE differs from this DPDK's RTE_MAX_LCORE"
);
