//! Sans-IO SCION border-router data plane.
//!
//! No I/O and no clock: packets, configuration, time and keys are passed in, so the same code
//! runs in the DPDK router, tests, benchmarks and fuzzers.
//!
//! * [`config`]: the router model (interfaces, owners, services, port range, keys).
//! * [`hop_mac`]: the forwarding key and the hop-field AES-CMAC, one packet or a batch.
//! * [`epic`]: EPIC-HP hop validation fields and timestamp freshness.
//! * [`idint`]: ID-INT telemetry written after the forwarding decision (push, aggregate, MAC
//!   chain, encryption) and the infrastructure-mode sink; [`telemetry`]: what a router
//!   measures ([`telemetry::TelemetrySource`]).
//! * `lower_bound` (cargo feature `measurement-aids`, never in production builds): the least
//!   work an ID-INT entry can cost (template entries), to compare the real stage with.
//! * [`probe`]: infrastructure-mode ID-INT probes for configured paths and rates.
//! * [`process`]: the packet processor (single packets and bursts) and its decisions
//!   ([`outcome`]: dispositions, drop and SCMP reasons, counters).
#![no_std]
#![forbid(unsafe_code)]

// Configuration is built once with the heap; the per-packet path never allocates.
extern crate alloc;
#[cfg(feature = "drkey")]
extern crate std;

mod burst;
mod bytes;
pub mod config;
pub mod epic;
mod header;
mod hook;
pub mod hop_mac;
pub mod idint;
mod local;
#[cfg(feature = "measurement-aids")]
pub mod lower_bound;
pub mod outcome;
pub mod probe;
pub mod process;
mod reply;
pub mod telemetry;

pub use outcome::{Counters, Disposition, DropReason, Ingress, ScmpReason};
pub use process::{BurstPacket, PacketSlot, Processor};
