//! Delivery to a host or service of the local AS (`scion-dp.md` §2.7): the underlay address
//! comes from the destination host address and the upper layer's port, moved to the end-host
//! port 30041 when outside the AS's dispatched range (the specification's rule, D1).

use core::net::{IpAddr, SocketAddr};

use idint_wire::scmp::{self, msg_type};
use idint_wire::{AddrType, HostAddr};

use crate::config::{DispatchedPorts, Router};
use crate::outcome::{DropReason, ScmpReason};

/// IP protocol number of TCP.
const TCP: u8 = 6;
/// IP protocol number of UDP.
const UDP: u8 = 17;
/// Hop-by-hop and end-to-end extension header protocol numbers.
const HBH: u8 = 200;
const E2E: u8 = 201;

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
    for _ in 0..2 {
        if proto != HBH && proto != E2E {
            break;
        }
        let h = pkt.get(off..off + 2)?;
        proto = h[0];
        off += (usize::from(h[1]) + 1) * 4;
    }
    Some((proto, off))
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
        UDP if l4.len() >= 8 => port_at(l4, 2),
        TCP if l4.len() >= 20 => port_at(l4, 2),
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
        msg_type::ECHO_REPLY | msg_type::TRACEROUTE_REPLY => port_at(m, 4),
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
    let hdr_len = usize::from(*q.get(5)?) * 4;
    let (proto, off) = upper_layer(q, hdr_len, *q.get(4)?)?;
    let l4 = q.get(off..)?;
    match proto {
        UDP => port_at(l4, 0).filter(|&p| p != 0),
        scmp::PROTOCOL => match *l4.first()? {
            msg_type::ECHO_REQUEST | msg_type::TRACEROUTE_REQUEST => port_at(l4, 4),
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
            l4_port(scmp::PROTOCOL, &[129, 0, 0, 0, 0x9c, 0x41]),
            Some(0x9c41)
        );
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
    }

    #[test]
    fn extension_walk_stops_at_truncation() {
        let mut p = [0u8; 16];
        p[8] = UDP; // HBH at 8: next UDP, length (0+1)*4
        assert_eq!(upper_layer(&p, 8, HBH), Some((UDP, 12)));
        assert_eq!(upper_layer(&p[..9], 8, HBH), None);
        assert_eq!(upper_layer(&p, 8, UDP), Some((UDP, 8)));
    }
}
