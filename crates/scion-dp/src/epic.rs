//! EPIC-HP hop validation fields and packet-timestamp freshness (`scion-dp.md` §3).
//!
//! HVF = first 4 bytes of AES-CBC-MAC(key = full 16-byte hop-field CMAC, input =
//! `SL | info-field-0 Timestamp | PktID | SrcIA | SrcHostAddr | PayloadLen`, zero padded). The
//! SL code sits in the low two bits of the first byte, as in the reference router (D4).

use idint_wire::crypto::{CbcMac, aes128, ct_eq};
use idint_wire::{HostAddr, IsdAsn};

/// Length of a hop validation field.
pub const HVF_LEN: usize = 4;
/// Granularity of the EPIC packet timestamp, in nanoseconds (21 µs).
pub const EPIC_TS_UNIT_NS: u64 = 21_000;
/// Largest accepted clock skew (sender ahead of the router), in nanoseconds.
pub const MAX_CLOCK_SKEW_NS: u64 = 1_000_000_000;
/// Packet lifetime, in nanoseconds.
pub const PACKET_LIFETIME_NS: u64 = 2_000_000_000;

/// The inputs of an HVF computation, as read from the packet.
#[derive(Debug, Clone, Copy)]
pub struct HvfInput<'a> {
    /// Timestamp of info field 0 (Unix seconds).
    pub info0_timestamp: u32,
    /// PktID: EpicTS (high 32 bits) and Counter (low 32 bits).
    pub pkt_id: u64,
    /// SCION source ISD-AS.
    pub src_ia: IsdAsn,
    /// SCION source host address.
    pub src_host: &'a HostAddr,
    /// SCION PayloadLen.
    pub payload_len: u16,
}

/// Computes the HVF for `input` with the hop authenticator `auth` (the full 16-byte CMAC of the
/// validating hop field).
pub fn hvf(auth: &[u8; 16], input: &HvfInput<'_>) -> [u8; HVF_LEN] {
    let cipher = aes128(auth);
    let mut mac = CbcMac::new(&cipher);
    mac.update(&[input.src_host.addr_type().len_code()]);
    mac.update(&input.info0_timestamp.to_be_bytes());
    mac.update(&input.pkt_id.to_be_bytes());
    mac.update(&input.src_ia.to_bytes());
    let (host, n) = input.src_host.to_bytes();
    mac.update(&host[..n]);
    mac.update(&input.payload_len.to_be_bytes());
    let full = mac.finalize();
    [full[0], full[1], full[2], full[3]]
}

/// Constant-time check of a PHVF/LHVF against the computed value.
pub fn verify_hvf(auth: &[u8; 16], input: &HvfInput<'_>, hvf_on_wire: &[u8; HVF_LEN]) -> bool {
    ct_eq(&hvf(auth, input), hvf_on_wire)
}

/// Sender time of an EPIC packet in Unix nanoseconds: `Timestamp + (EpicTS + 1) * 21 µs`.
pub const fn sender_time_ns(info0_timestamp: u32, epic_ts: u32) -> u64 {
    info0_timestamp as u64 * 1_000_000_000 + (epic_ts as u64 + 1) * EPIC_TS_UNIT_NS
}

/// Whether a packet with this timestamp is fresh at `now_ns` (Unix ns): not more than 1 s in
/// the future, not older than the 2 s lifetime plus 1 s of skew.
pub const fn timestamp_fresh(info0_timestamp: u32, epic_ts: u32, now_ns: u64) -> bool {
    let sent = sender_time_ns(info0_timestamp, epic_ts);
    sent <= now_ns.saturating_add(MAX_CLOCK_SKEW_NS)
        && now_ns <= sent + PACKET_LIFETIME_NS + MAX_CLOCK_SKEW_NS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freshness_window_edges() {
        let ts = 1_704_067_200u32;
        let sent = sender_time_ns(ts, 0);
        assert!(timestamp_fresh(ts, 0, sent));
        assert!(timestamp_fresh(ts, 0, sent + 3_000_000_000));
        assert!(!timestamp_fresh(ts, 0, sent + 3_000_000_001));
        assert!(timestamp_fresh(ts, 0, sent - 1_000_000_000));
        assert!(!timestamp_fresh(ts, 0, sent - 1_000_000_001));
    }
}
