//! Tools around `idint-wire`: classic pcap reading and writing, and finding the SCION packet
//! inside a captured underlay frame. The `idint-decode` binary builds on them.

pub mod demo;
pub mod pcap;
