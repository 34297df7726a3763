//! Ethernet / IPv4 or IPv6 / UDP underlay around a SCION packet, written into a reused buffer.

use std::net::{IpAddr, SocketAddr};

/// Destination MAC of generated frames (locally administered).
pub const DST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
/// Source MAC of generated frames (locally administered).
pub const SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

/// Bytes the underlay adds in front of the SCION packet for this address family.
pub const fn overhead(v6: bool) -> usize {
    14 + if v6 { 40 } else { 20 } + 8
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

fn sum16(b: &[u8]) -> u32 {
    let mut s = 0u32;
    let mut chunks = b.chunks_exact(2);
    for c in &mut chunks {
        s += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        s += u32::from(*last) << 8;
    }
    s
}

/// Appends to `out` (cleared first) an Ethernet frame carrying `scion` in UDP from `src` to
/// `dst`. Both addresses must be of the same family (else `false`, nothing written). IPv4 has
/// a valid header checksum and UDP checksum 0; IPv6 a valid UDP checksum.
pub fn write_frame(out: &mut Vec<u8>, src: SocketAddr, dst: SocketAddr, scion: &[u8]) -> bool {
    out.clear();
    let udp_len = (8 + scion.len()) as u16;
    out.extend_from_slice(&DST_MAC);
    out.extend_from_slice(&SRC_MAC);
    let udp_at;
    match (src.ip(), dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            out.extend_from_slice(&[0x08, 0x00]);
            let mut ip = [0u8; 20];
            ip[0] = 0x45;
            ip[2..4].copy_from_slice(&(20 + udp_len).to_be_bytes());
            ip[6] = 0x40; // DF
            ip[8] = 64;
            ip[9] = 17;
            ip[12..16].copy_from_slice(&s.octets());
            ip[16..20].copy_from_slice(&d.octets());
            let c = !fold(sum16(&ip));
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            out.extend_from_slice(&ip);
            udp_at = out.len();
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            out.extend_from_slice(&[0x86, 0xdd]);
            let mut ip = [0u8; 40];
            ip[0] = 0x60;
            ip[4..6].copy_from_slice(&udp_len.to_be_bytes());
            ip[6] = 17;
            ip[7] = 64;
            ip[8..24].copy_from_slice(&s.octets());
            ip[24..40].copy_from_slice(&d.octets());
            out.extend_from_slice(&ip);
            udp_at = out.len();
        }
        _ => return false,
    }
    out.extend_from_slice(&src.port().to_be_bytes());
    out.extend_from_slice(&dst.port().to_be_bytes());
    out.extend_from_slice(&udp_len.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(scion);
    if let (IpAddr::V6(s), IpAddr::V6(d)) = (src.ip(), dst.ip()) {
        let mut sum = sum16(&s.octets()) + sum16(&d.octets()) + u32::from(udp_len) + 17;
        sum += sum16(&out[udp_at..]);
        let mut c = !fold(sum);
        if c == 0 {
            c = 0xffff;
        }
        out[udp_at + 6..udp_at + 8].copy_from_slice(&c.to_be_bytes());
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire_tools::pcap::{LINKTYPE_ETHERNET, ethernet_ipv4_udp, scion_payload};

    #[test]
    fn ipv4_matches_wire_tools_apart_from_df() {
        let mut out = Vec::new();
        let payload = [7u8; 33];
        assert!(write_frame(
            &mut out,
            "10.0.0.1:50000".parse().unwrap(),
            "10.0.0.2:30042".parse().unwrap(),
            &payload
        ));
        let reference = ethernet_ipv4_udp(
            "10.0.0.1:50000".parse().unwrap(),
            "10.0.0.2:30042".parse().unwrap(),
            &payload,
        );
        assert_eq!(out.len(), reference.len());
        assert_eq!(out.len(), overhead(false) + payload.len());
        // Same bytes except the DF flag and the header checksum it changes.
        let diff: Vec<usize> = (0..out.len()).filter(|&i| out[i] != reference[i]).collect();
        assert!(
            diff.iter().all(|&i| i == 20 || i == 24 || i == 25),
            "{diff:?}"
        );
        // The IPv4 header checksum verifies.
        assert_eq!(fold(sum16(&out[14..34])), 0xffff);
        let (u, p) = scion_payload(LINKTYPE_ETHERNET, &out).unwrap();
        assert_eq!(p, &payload);
        assert_eq!(u.src.unwrap().to_string(), "10.0.0.1:50000");
    }

    #[test]
    fn ipv6_checksum_verifies() {
        let mut out = Vec::new();
        let payload = [1u8, 2, 3, 4, 5];
        let (s, d): (SocketAddr, SocketAddr) = (
            "[2001:db8::1]:50000".parse().unwrap(),
            "[2001:db8::2]:50001".parse().unwrap(),
        );
        assert!(write_frame(&mut out, s, d, &payload));
        assert_eq!(out.len(), overhead(true) + payload.len());
        let (u, p) = scion_payload(LINKTYPE_ETHERNET, &out).unwrap();
        assert_eq!((u.src, u.dst, p), (Some(s), Some(d), &payload[..]));
        let (IpAddr::V6(si), IpAddr::V6(di)) = (s.ip(), d.ip()) else {
            unreachable!()
        };
        let udp = &out[54..];
        let sum = sum16(&si.octets()) + sum16(&di.octets()) + udp.len() as u32 + 17 + sum16(udp);
        assert_eq!(fold(sum), 0xffff);
        assert!(!write_frame(
            &mut out,
            s,
            "10.0.0.1:1".parse().unwrap(),
            &payload
        ));
    }
}
