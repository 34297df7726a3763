//! Delivery to a host or service of the local AS (`scion-dp.md` §2.7): the underlay address
//! comes from the destination host address and the upper layer's port, moved to the end-host
//! port 30041 when outside the AS's dispatched range (the specification's rule, D1).

use core::net::{IpAddr, SocketAddr};

use idint_wire::ext::{E2E, HBH};
use idint_wire::scmp::{self, msg_type};
use idint_wire::udp::{self, PROTOCOL as UDP};
use idint_wire::{AddrType, HostAddr};

use crate::config::{DispatchedPorts, Router};
use crate::header::{
    EXT_FIXED_LEN, EXT_LEN_AT, EXT_NEXT_HDR_AT, HDR_LEN_AT, LEN_UNIT, NEXT_HDR_AT, ext_header_len,
};
use crate::outcome::{DropReason, ScmpReason};

/// IP protocol number of TCP.
const TCP: u8 = 6;
/// Length of a TCP header without options.
const TCP_HEADER_LEN: usize = 20;
/// UDP and TCP: offset of the source port.
const SRC_PORT_AT: usize = 0;
/// UDP and TCP: offset of the destination port.
const DST_PORT_AT: usize = 2;
/// SCMP echo and traceroute messages: offset of the identifier (after the SCMP header).
const SCMP_IDENTIFIER_AT: usize = scmp::HEADER_LEN;
/// Bytes of an SCMP echo message up to its data: header, identifier and sequence.
const ECHO_LEN: usize = scmp::HEADER_LEN + scmp::block_len(msg_type::ECHO_REQUEST);
/// Bytes of an SCMP traceroute message: header, identifier and sequence, IA, interface.
pub(crate) const TRACEROUTE_LEN: usize =
    scmp::HEADER_LEN + scmp::block_len(msg_type::TRACEROUTE_REQUEST);
/// SCION allows at most two extension headers: hop-by-hop, then end-to-end.
const MAX_EXT_HEADERS: usize = 2;

const _: () = assert!(ECHO_LEN == 8 && TRACEROUTE_LEN == 24);

/// Why local delivery failed: an SCMP answer or a silent drop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LocalError {
    Scmp(ScmpReason),
    Drop(DropReason),
}

/// The upper-layer protocol after the extension headers and its offset, reading at most the
/// two extension headers SCION allows. `None` if an extension header is cut short.
pub(crate) fn upper_layer(pkt: &[u8], hdr_len: usize, next: u8) -> Option<(u8, usize)> {
    let mut proto = next;
    let mut off = hdr_len;
    for _ in 0..MAX_EXT_HEADERS {
        if proto != HBH && proto != E2E {
            break;
        }
        let h = pkt.get(off..off + EXT_FIXED_LEN)?;
        proto = h[EXT_NEXT_HDR_AT];
        off += ext_header_len(h[EXT_LEN_AT]);
    }
    Some((proto, off))
}

/// Whether the extension headers after the SCION header decode as the reference router decodes
/// them (`scion-dp.md` §1.5): at most a hop-by-hop header, then at most an end-to-end header,
/// each within the packet. An HBH header after an HBH or E2E header, an E2E header after an
/// E2E header, or a header whose length runs past `pkt` is a decode error (the packet is
/// dropped).
#[inline(always)]
pub(crate) fn extensions_ok(pkt: &[u8], hdr_len: usize, next: u8) -> bool {
    if next != HBH && next != E2E {
        return true;
    }
    // The end of the extension header at `at` and the header after it, if it is whole.
    let header = |at: usize| -> Option<(usize, u8)> {
        let h = pkt.get(at..at + EXT_FIXED_LEN)?;
        let end = at + ext_header_len(h[EXT_LEN_AT]);
        (end <= pkt.len()).then_some((end, h[EXT_NEXT_HDR_AT]))
    };
    let Some((end, after)) = header(hdr_len) else {
        return false;
    };
    match (next, after) {
        (_, HBH) | (E2E, E2E) => false,
        (HBH, E2E) => header(end).is_some_and(|(_, n)| n != HBH && n != E2E),
        _ => true,
    }
}

/// Resolves the underlay destination of a packet for a local host. `pkt` is the whole packet,
/// `hdr` facts are passed in to avoid parsing twice.
pub(crate) fn resolve(
    router: &Router,
    pkt: &[u8],
    dst_type: AddrType,
    dst_host: &[u8],
    hdr_len: usize,
    next: u8,
) -> Result<SocketAddr, LocalError> {
    let bad_dst = LocalError::Scmp(ScmpReason::InvalidDestinationAddress);
    let ports = router.config().dispatched_ports;
    let host = HostAddr::parse(dst_type, dst_host).map_err(|_| bad_dst)?;
    let ip = match host {
        HostAddr::Svc(svc) => {
            let a = router
                .service(svc)
                .ok_or(LocalError::Scmp(ScmpReason::NoRoute))?;
            return Ok(SocketAddr::new(a.ip(), ports.underlay_port(a.port())));
        }
        HostAddr::V4(a) if !a.is_unspecified() => IpAddr::V4(a),
        HostAddr::V6(a) if !a.is_unspecified() && a.to_ipv4_mapped().is_none() => IpAddr::V6(a),
        _ => return Err(bad_dst),
    };
    let (proto, off) =
        upper_layer(pkt, hdr_len, next).ok_or(LocalError::Drop(DropReason::NoLocalPort))?;
    let l4 = pkt.get(off..).unwrap_or(&[]);
    let port = l4_port(proto, l4).ok_or(LocalError::Drop(DropReason::NoLocalPort))?;
    Ok(SocketAddr::new(ip, ports.underlay_port(port)))
}

fn port_at(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at + 2).map(|p| u16::from_be_bytes([p[0], p[1]]))
}

/// The destination port of an upper layer, as the reference router picks it.
fn l4_port(proto: u8, l4: &[u8]) -> Option<u16> {
    match proto {
        UDP if l4.len() >= udp::HEADER_LEN => port_at(l4, DST_PORT_AT),
        TCP if l4.len() >= TCP_HEADER_LEN => port_at(l4, DST_PORT_AT),
        UDP | TCP => None,
        scmp::PROTOCOL => scmp_port(l4),
        _ => Some(DispatchedPorts::ENDHOST_PORT),
    }
}

/// SCMP: informational requests go to the end-host port, replies to their identifier, errors
/// to the port of the quoted packet's sender.
fn scmp_port(m: &[u8]) -> Option<u16> {
    let t = *m.first()?;
    match t {
        msg_type::ECHO_REQUEST | msg_type::TRACEROUTE_REQUEST => {
            Some(DispatchedPorts::ENDHOST_PORT)
        }
        // The identifier of a whole reply (a cut one is dropped, as the reference router
        // does when it cannot decode it).
        msg_type::ECHO_REPLY if m.len() >= ECHO_LEN => port_at(m, SCMP_IDENTIFIER_AT),
        msg_type::TRACEROUTE_REPLY if m.len() >= TRACEROUTE_LEN => port_at(m, SCMP_IDENTIFIER_AT),
        msg_type::ECHO_REPLY | msg_type::TRACEROUTE_REPLY => None,
        msg_type::DEST_UNREACHABLE
        | msg_type::PACKET_TOO_BIG
        | msg_type::PARAMETER_PROBLEM
        | msg_type::EXTERNAL_INTERFACE_DOWN
        | msg_type::INTERNAL_CONNECTIVITY_DOWN => {
            let quote = m.get(scmp::HEADER_LEN + scmp::block_len(t)..)?;
            quoted_port(quote)
        }
        _ => None,
    }
}

/// The port the sender of a quoted packet listens on: its UDP source port, or the identifier
/// of a quoted echo/traceroute request.
fn quoted_port(q: &[u8]) -> Option<u16> {
    let hdr_len = usize::from(*q.get(HDR_LEN_AT)?) * LEN_UNIT;
    let (proto, off) = upper_layer(q, hdr_len, *q.get(NEXT_HDR_AT)?)?;
    let l4 = q.get(off..)?;
    // Only whole headers count: a quote cut inside them names no port.
    match proto {
        UDP if l4.len() >= udp::HEADER_LEN => port_at(l4, SRC_PORT_AT).filter(|&p| p != 0),
        scmp::PROTOCOL => match *l4.first()? {
            msg_type::ECHO_REQUEST if l4.len() >= ECHO_LEN => port_at(l4, SCMP_IDENTIFIER_AT),
            msg_type::TRACEROUTE_REQUEST if l4.len() >= TRACEROUTE_LEN => {
                port_at(l4, SCMP_IDENTIFIER_AT)
            }
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_by_upper_layer() {
        let udp = [0x12, 0x34, 0x9c, 0x40, 0, 8, 0, 0];
        assert_eq!(l4_port(UDP, &udp), Some(0x9c40));
        assert_eq!(l4_port(UDP, &udp[..7]), None);
        assert_eq!(l4_port(TCP, &udp), None, "TCP needs 20 bytes");
        assert_eq!(l4_port(99, &[]), Some(30041));
        assert_eq!(l4_port(scmp::PROTOCOL, &[128, 0, 0, 0, 0, 7]), Some(30041));
        assert_eq!(
            l4_port(scmp::PROTOCOL, &[129, 0, 0, 0, 0x9c, 0x41, 0, 1]),
            Some(0x9c41)
        );
        // Cut replies name no port: an echo reply needs its sequence number, a traceroute
        // reply its IA and interface (24 bytes).
        assert_eq!(l4_port(scmp::PROTOCOL, &[129, 0, 0, 0, 0x9c, 0x41]), None);
        let mut tr = [0u8; 24];
        tr[0] = 131;
        tr[4..6].copy_from_slice(&[0x9c, 0x42]);
        assert_eq!(l4_port(scmp::PROTOCOL, &tr), Some(0x9c42));
        assert_eq!(l4_port(scmp::PROTOCOL, &tr[..23]), None);
        assert_eq!(l4_port(scmp::PROTOCOL, &[129, 0, 0, 0, 0x9c]), None);
        assert_eq!(l4_port(scmp::PROTOCOL, &[200, 0, 0, 0]), None);
        assert_eq!(l4_port(scmp::PROTOCOL, &[]), None);
    }

    #[test]
    fn quoted_udp_source_port() {
        // Minimal quoted SCION header: NextHdr UDP, HdrLen 9 (36 bytes), then UDP.
        let mut q = [0u8; 36 + 8];
        q[4] = UDP;
        q[5] = 9;
        q[36] = 0x75;
        q[37] = 0x30;
        assert_eq!(quoted_port(&q), Some(0x7530));
        q[36] = 0;
        q[37] = 0;
        assert_eq!(quoted_port(&q), None, "source port 0 is not deliverable");
        assert_eq!(quoted_port(&q[..37]), None);
        // A UDP header cut after its source port is not a UDP header.
        q[36] = 0x75;
        assert_eq!(quoted_port(&q[..40]), None);
        assert_eq!(quoted_port(&q[..44]), Some(0x7500));
    }

    #[test]
    fn extension_walk_stops_at_truncation() {
        let mut p = [0u8; 16];
        p[8] = UDP; // HBH at 8: next UDP, length (0+1)*4
        assert_eq!(upper_layer(&p, 8, HBH), Some((UDP, 12)));
        assert_eq!(upper_layer(&p[..9], 8, HBH), None);
        assert_eq!(upper_layer(&p, 8, UDP), Some((UDP, 8)));
    }

    #[test]
    fn extension_headers_in_order_and_within_the_packet() {
        use alloc::vec;
        use alloc::vec::Vec;
        // `ext(next, len_words)` : a 4-byte-word extension header.
        let ext = |next: u8, words: u8| {
            let mut h = vec![0u8; (usize::from(words) + 1) * 4];
            h[0] = next;
            h[1] = words;
            h
        };
        let pkt = |parts: &[Vec<u8>]| {
            let mut p = vec![0u8; 8];
            for x in parts {
                p.extend_from_slice(x);
            }
            p
        };
        let ok = |p: &[u8], first: u8| extensions_ok(p, 8, first);
        assert!(ok(&pkt(&[]), UDP));
        assert!(ok(&pkt(&[ext(UDP, 0)]), HBH));
        assert!(ok(&pkt(&[ext(UDP, 2)]), E2E));
        assert!(ok(&pkt(&[ext(E2E, 1), ext(UDP, 0)]), HBH));
        // Out of order or repeated.
        assert!(!ok(&pkt(&[ext(HBH, 0), ext(UDP, 0)]), HBH));
        assert!(!ok(&pkt(&[ext(E2E, 0), ext(UDP, 0)]), E2E));
        assert!(!ok(&pkt(&[ext(HBH, 0), ext(UDP, 0)]), E2E));
        assert!(!ok(&pkt(&[ext(E2E, 0), ext(E2E, 0), ext(UDP, 0)]), HBH));
        // Cut short: the header itself, or its declared length.
        assert!(!ok(&pkt(&[]), HBH));
        let mut long = pkt(&[ext(UDP, 0)]);
        long[9] = 255;
        assert!(!ok(&long, HBH));
        let exact = pkt(&[ext(UDP, 3)]);
        assert!(ok(&exact, HBH));
        assert!(!ok(&exact[..exact.len() - 1], HBH));
    }
}
