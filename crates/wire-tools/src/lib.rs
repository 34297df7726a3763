//! Tools around `idint-wire`: classic pcap reading and writing, and finding the SCION packet
//! inside a captured underlay frame, and every field of a packet named as the Wireshark dissector
//! names it ([`fields`]). The `idint-decode` binary builds on them.

pub mod demo;
pub mod fields;
pub mod pcap;
