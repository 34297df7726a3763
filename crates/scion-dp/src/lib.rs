//! Sans-IO SCION border-router data plane (work in progress).
//!
//! No I/O and no clock: packets, configuration, time and keys are passed in, so the same code
//! runs in the DPDK router, tests, benchmarks and fuzzers.
//!
//! * [`hop_mac`]: the forwarding key and the hop-field AES-CMAC, one packet or a batch.
//! * [`epic`]: EPIC-HP hop validation fields and timestamp freshness.
#![no_std]
#![forbid(unsafe_code)]

pub mod epic;
pub mod hop_mac;
