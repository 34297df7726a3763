//! Underlay classification of a received frame: a SCION packet for one of the router's
//! addresses (where it is in the frame, by which ingress it came), an ARP request or NDP
//! solicitation answered in place, or something to free. Learns next-hop MACs from ARP and
//! NDP on the way. Works on the frame bytes; the I/O shell keeps the buffers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use scion_dp::Ingress;

use crate::counters::IoCounters;
use crate::tables::{PortView, Tables};
use crate::{ndp, underlay};

/// Where a SCION packet is in a received frame and by which ingress it came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classified {
    /// Offset of the SCION packet (the UDP payload) in the frame.
    pub offset: usize,
    /// Length of the SCION packet.
    pub len: usize,
    /// The link it came by.
    pub ingress: Ingress,
}

/// What to do with a received frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// A SCION packet for this router: hand it to scion-dp.
    Scion(Classified),
    /// An ARP request or NDP solicitation for one of the router's addresses, turned into its
    /// answer in place (counted): send the frame back out by the port it came in on.
    Answer,
    /// Nothing for the router's data path (counted): free it.
    Drop,
}

/// Whether a frame received on a port of VLAN `vid` is of that VLAN; if so, its MACs are moved
/// over the tag, so that the frame without its first [`underlay::VLAN_TAG_LEN`] bytes is the
/// untagged frame (the caller drops them). `false`: untagged, another VLAN or too short (to
/// drop, counted as `wrong_vlan` by the caller).
#[inline]
pub fn untag(frame: &mut [u8], vid: u16) -> bool {
    underlay::vlan_id(frame) == Some(vid) && underlay::untag_in_place(frame)
}

/// Classifies `frame` (untagged) received on `port` at `now_s` (Unix seconds), counting what
/// is not a SCION packet for the router in `io`. ARP and NDP frames teach the neighbour
/// tables; a request for one of the router's addresses becomes its answer in place.
#[inline]
pub fn classify(
    tables: &Tables,
    port: &PortView<'_>,
    now_s: u32,
    frame: &mut [u8],
    io: &mut IoCounters,
) -> Frame {
    // The common case first: IPv4 to the port's address (the same answer as below; callers
    // on the packet path check it before, see `crate::burst::classify_burst`).
    if let Some(k) = &port.v4
        && let Some((offset, len)) = k.payload(frame)
    {
        return Frame::Scion(Classified {
            offset,
            len,
            ingress: k.what,
        });
    }
    let r = match underlay::parse(frame) {
        Ok(r) => r,
        Err(underlay::NotScion::OtherEtherType) => {
            return arp_frame(tables, port.index, now_s, frame, io);
        }
        Err(underlay::NotScion::NotUdp) => return ndp_frame(tables, port.index, now_s, frame, io),
        Err(underlay::NotScion::Truncated) => {
            io.not_scion += 1;
            return Frame::Drop;
        }
    };
    let Some(mut ingress) = port
        .local
        .iter()
        .find(|(a, _)| *a == r.dst)
        .map(|(_, i)| *i)
    else {
        io.not_for_us += 1;
        return Frame::Drop;
    };
    if ingress == Ingress::Internal
        && let Some((_, ifid)) = tables.siblings.iter().find(|(a, _)| *a == r.src)
    {
        ingress = Ingress::Sibling(*ifid);
    }
    Frame::Scion(Classified {
        offset: r.offset,
        len: r.len,
        ingress,
    })
}

/// A frame that is not IP: learns from an ARP packet and answers a request for one of the
/// router's addresses in place; anything else is counted as `not_scion`.
#[cold]
#[inline(never)]
fn arp_frame(
    tables: &Tables,
    port: usize,
    now_s: u32,
    frame: &mut [u8],
    io: &mut IoCounters,
) -> Frame {
    let mine = |ip: Ipv4Addr| tables.is_mine(port, ip);
    // An ARP packet to one of our addresses teaches its sender; any other one (a gratuitous
    // ARP after a failover, say) updates a sender already known on this port (RFC 826's
    // merge), so a neighbour's new MAC is used at once. Only into this port's table, and
    // only for an address the port may learn (see `Tables::learner`).
    if let Some((ip, mac, target)) = underlay::arp_sender(frame)
        && let Some(learned) = tables.learner(port, IpAddr::V4(ip))
        && (mine(target) || learned.v4.lookup(ip, now_s).is_some())
        && learned.v4.learn(ip, mac, now_s)
    {
        io.arp_learned += 1;
    }
    if let Some(&mac) = tables.ports.get(port)
        && underlay::arp_reply_in_place(frame, mac, mine)
    {
        io.arp_replies += 1;
        return Frame::Answer;
    }
    io.not_scion += 1;
    Frame::Drop
}

/// An IP frame that is not UDP: learns from an NDP message addressed to the router and
/// answers a solicitation for one of its addresses in place; anything else is counted as
/// `not_scion`.
#[cold]
#[inline(never)]
fn ndp_frame(
    tables: &Tables,
    port: usize,
    now_s: u32,
    frame: &mut [u8],
    io: &mut IoCounters,
) -> Frame {
    let mine = |ip: Ipv6Addr| tables.is_mine6(port, ip);
    if let Ok(msg) = ndp::parse(frame) {
        // What a message to us teaches; or an unsolicited advertisement with the Override flag
        // for a neighbour already known (RFC 4861 7.2.5: its new MAC replaces the old).
        // Only into this port's table, for an address the port may learn.
        let known = |ip: Ipv6Addr| {
            tables
                .learned
                .get(port)
                .is_some_and(|l| l.v6.lookup(ip, now_s).is_some())
        };
        let learned = msg.neighbor_for(mine).or_else(|| msg.update_for(known));
        if let Some((ip, mac)) = learned
            && let Some(table) = tables.learner(port, IpAddr::V6(ip))
            && table.v6.learn(ip, mac, now_s)
        {
            io.ndp_learned += 1;
        }
        if msg.kind == ndp::Kind::Solicitation
            && let Some(&mac) = tables.ports.get(port)
            && ndp::reply_in_place(frame, mac, mine)
        {
            io.ndp_replies += 1;
            return Frame::Answer;
        }
    }
    io.not_scion += 1;
    Frame::Drop
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;
    use crate::tables::test_tables::*;
    use crate::underlay::{V4_HDR_LEN, V6_HDR_LEN, VLAN_TAG_LEN};

    const NOW: u32 = 1_000;
    const PAYLOAD: usize = 48;
    const NEIGHBOUR_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x99];

    /// A UDP frame from `src` to `dst` with a payload of [`PAYLOAD`] bytes.
    fn udp(src: SocketAddr, dst: SocketAddr) -> Vec<u8> {
        let mut f = vec![0u8; underlay::header_len(&dst) + PAYLOAD];
        assert!(underlay::write(
            &mut f,
            NEIGHBOUR_MAC,
            port_mac(1),
            &src,
            &dst,
            PAYLOAD
        ));
        f
    }

    fn run(t: &Tables, port: usize, frame: &mut [u8]) -> (Frame, IoCounters) {
        let mut io = IoCounters::default();
        let f = classify(t, &t.port(port), NOW, frame, &mut io);
        (f, io)
    }

    #[test]
    fn ipv4_and_ipv6_udp_to_the_router_are_scion() {
        let t = tables(None);
        let (l1, r1) = link1();
        let (f, io) = run(&t, 1, &mut udp(r1, l1));
        let want = Classified {
            offset: V4_HDR_LEN,
            len: PAYLOAD,
            ingress: Ingress::External(1),
        };
        assert_eq!((f, io), (Frame::Scion(want), IoCounters::default()));
        let (l2, r2) = link2();
        let (f, _) = run(&t, 2, &mut udp(r2, l2));
        let want = Classified {
            offset: V6_HDR_LEN,
            len: PAYLOAD,
            ingress: Ingress::External(2),
        };
        assert_eq!(f, Frame::Scion(want));
    }

    #[test]
    fn internal_packets_from_a_sibling_come_by_its_link() {
        let t = tables(None);
        let other: SocketAddr = "10.0.0.7:30042".parse().unwrap();
        let (f, _) = run(&t, 0, &mut udp(other, internal()));
        assert!(matches!(f, Frame::Scion(c) if c.ingress == Ingress::Internal));
        let (f, _) = run(&t, 0, &mut udp(sibling(), internal()));
        assert!(matches!(f, Frame::Scion(c) if c.ingress == Ingress::Sibling(9)));
    }

    #[test]
    fn udp_not_for_the_router_is_counted_and_dropped() {
        let t = tables(None);
        let (l1, r1) = link1();
        // Another address, another port of ours, and our address on the wrong port.
        let elsewhere: SocketAddr = "192.0.2.77:50000".parse().unwrap();
        let other_port = SocketAddr::new(l1.ip(), 50001);
        for (port, dst) in [(1, elsewhere), (1, other_port), (0, l1)] {
            let (f, io) = run(&t, port, &mut udp(r1, dst));
            assert_eq!(f, Frame::Drop, "{dst} on port {port}");
            assert_eq!(io.not_for_us, 1);
        }
    }

    #[test]
    fn broken_and_foreign_frames_are_not_scion() {
        let t = tables(None);
        let (l1, r1) = link1();
        let mut short = udp(r1, l1);
        short.truncate(V4_HDR_LEN - 1);
        // IPv6, not UDP, not NDP (TCP).
        let (l2, r2) = link2();
        let mut tcp = udp(r2, l2);
        tcp[underlay::ETH_LEN + 6] = 6;
        // An Ethernet type that is neither IP nor ARP.
        let mut lldp = udp(r1, l1);
        lldp[12..14].copy_from_slice(&[0x88, 0xcc]);
        for (port, mut f) in [(1, short), (2, tcp), (1, lldp)] {
            let (got, io) = run(&t, port, &mut f);
            assert_eq!(got, Frame::Drop);
            assert_eq!(io.not_scion, 1);
        }
    }

    #[test]
    fn arp_requests_for_the_router_are_answered_and_teach_the_sender() {
        let t = tables(None);
        let me = Ipv4Addr::new(192, 0, 2, 1);
        let them = Ipv4Addr::new(192, 0, 2, 2);
        let mut f = vec![0u8; underlay::ARP_FRAME_LEN];
        assert!(underlay::write_arp_request(&mut f, NEIGHBOUR_MAC, them, me));
        let (got, io) = run(&t, 1, &mut f);
        assert_eq!(got, Frame::Answer);
        assert_eq!((io.arp_replies, io.arp_learned, io.not_scion), (1, 1, 0));
        assert_eq!(&f[0..6], &NEIGHBOUR_MAC, "back to the asker");
        assert_eq!(&f[6..12], &port_mac(1));
        assert_eq!(
            t.learned[1].v4.lookup(them, NOW).map(|l| l.mac),
            Some(NEIGHBOUR_MAC)
        );
        // A request for someone else: not answered, not learned from.
        let stranger = Ipv4Addr::new(192, 0, 2, 3);
        let mut f = vec![0u8; underlay::ARP_FRAME_LEN];
        assert!(underlay::write_arp_request(
            &mut f,
            [2, 0, 0, 0, 0, 3],
            stranger,
            them
        ));
        let (got, io) = run(&t, 1, &mut f);
        assert_eq!(got, Frame::Drop);
        assert_eq!((io.arp_replies, io.arp_learned, io.not_scion), (0, 0, 1));
        assert_eq!(t.learned[1].v4.lookup(stranger, NOW), None);
    }

    #[test]
    fn neighbour_solicitations_for_the_router_are_answered_and_teach_the_sender() {
        let t = tables(None);
        let me: Ipv6Addr = "fd00::1".parse().unwrap();
        let them: Ipv6Addr = "fd00::5".parse().unwrap();
        let mut f = vec![0u8; ndp::NS_FRAME_LEN];
        assert!(ndp::write_solicitation(&mut f, NEIGHBOUR_MAC, them, me));
        let (got, io) = run(&t, 0, &mut f);
        assert_eq!(got, Frame::Answer);
        assert_eq!((io.ndp_replies, io.ndp_learned), (1, 1));
        assert_eq!(ndp::parse(&f).map(|m| m.kind), Ok(ndp::Kind::Advertisement));
        assert_eq!(
            t.learned[0].v6.lookup(them, NOW).map(|l| l.mac),
            Some(NEIGHBOUR_MAC)
        );
        // The same solicitation on a port where the address is not the router's.
        let mut f = vec![0u8; ndp::NS_FRAME_LEN];
        assert!(ndp::write_solicitation(&mut f, NEIGHBOUR_MAC, them, me));
        let (got, io) = run(&t, 1, &mut f);
        assert_eq!(got, Frame::Drop);
        assert_eq!((io.ndp_replies, io.not_scion), (0, 1));
    }

    /// An ARP request from `sender` (`mac`) for `target`.
    fn arp_request(mac: [u8; 6], sender: Ipv4Addr, target: Ipv4Addr) -> Vec<u8> {
        let mut f = vec![0u8; underlay::ARP_FRAME_LEN];
        assert!(underlay::write_arp_request(&mut f, mac, sender, target));
        f
    }

    const ATTACKER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xee];

    #[test]
    fn a_frame_on_one_port_never_changes_another_ports_neighbour() {
        let t = tables(None);
        let peer = Ipv4Addr::new(192, 0, 2, 2);
        // Interface 1's peer answers on port 1: learned there.
        let (got, _) = run(
            &t,
            1,
            &mut arp_request(NEIGHBOUR_MAC, peer, Ipv4Addr::new(192, 0, 2, 1)),
        );
        assert_eq!(got, Frame::Answer);
        assert_eq!(
            t.neighbor(1, &IpAddr::V4(peer), NOW).map(|l| l.mac),
            Some(NEIGHBOUR_MAC)
        );
        // Someone on the internal port claims the peer's address, addressed to the router
        // and as a gratuitous ARP: the MAC used on port 1 stays the peer's.
        let internal_ip = Ipv4Addr::new(10, 0, 0, 1);
        run(&t, 0, &mut arp_request(ATTACKER_MAC, peer, internal_ip));
        run(&t, 0, &mut arp_request(ATTACKER_MAC, peer, peer));
        assert_eq!(
            t.neighbor(1, &IpAddr::V4(peer), NOW).map(|l| l.mac),
            Some(NEIGHBOUR_MAC)
        );
        // The same for NDP: interface 2's peer is on port 2 only.
        let peer6: Ipv6Addr = "2001:db8::2".parse().unwrap();
        let mut f = vec![0u8; ndp::NS_FRAME_LEN];
        assert!(ndp::write_solicitation(
            &mut f,
            ATTACKER_MAC,
            peer6,
            "fd00::1".parse().unwrap()
        ));
        run(&t, 0, &mut f);
        assert_eq!(t.neighbor(2, &IpAddr::V6(peer6), NOW), None);
    }

    #[test]
    fn only_next_hops_and_addresses_on_the_ports_subnet_are_learned() {
        let t = tables(None);
        let me1 = Ipv4Addr::new(192, 0, 2, 1);
        // On interface 1's port only its peer is a next hop.
        let stranger = Ipv4Addr::new(198, 51, 100, 7);
        run(&t, 1, &mut arp_request(ATTACKER_MAC, stranger, me1));
        assert_eq!(
            t.neighbor(1, &IpAddr::V4(stranger), NOW),
            None,
            "stranger on a link port"
        );
        // On the internal port: hosts of the internal subnet, nothing from elsewhere.
        let me0 = Ipv4Addr::new(10, 0, 0, 1);
        let host = Ipv4Addr::new(10, 0, 0, 5);
        let far = Ipv4Addr::new(203, 0, 113, 5);
        run(&t, 0, &mut arp_request(NEIGHBOUR_MAC, host, me0));
        run(&t, 0, &mut arp_request(ATTACKER_MAC, far, me0));
        assert_eq!(
            t.neighbor(0, &IpAddr::V4(host), NOW).map(|l| l.mac),
            Some(NEIGHBOUR_MAC)
        );
        assert_eq!(
            t.neighbor(0, &IpAddr::V4(far), NOW),
            None,
            "off-subnet on the internal port"
        );
        let me6: Ipv6Addr = "fd00::1".parse().unwrap();
        let far6: Ipv6Addr = "fd00:1:2:3::5".parse().unwrap();
        let mut f = vec![0u8; ndp::NS_FRAME_LEN];
        assert!(ndp::write_solicitation(&mut f, ATTACKER_MAC, far6, me6));
        run(&t, 0, &mut f);
        assert_eq!(
            t.neighbor(0, &IpAddr::V6(far6), NOW),
            None,
            "off-subnet IPv6"
        );
    }

    #[test]
    fn static_neighbours_win_and_take_no_learned_slot() {
        let mut t = tables(None);
        let peer = Ipv4Addr::new(192, 0, 2, 2);
        let configured = [2, 0, 0, 0, 0, 0x55];
        t.neighbors.push((IpAddr::V4(peer), configured));
        run(
            &t,
            1,
            &mut arp_request(ATTACKER_MAC, peer, Ipv4Addr::new(192, 0, 2, 1)),
        );
        assert_eq!(
            t.neighbor(1, &IpAddr::V4(peer), NOW).map(|l| l.mac),
            Some(configured)
        );
        assert_eq!(
            t.learned[1].v4.lookup(peer, NOW),
            None,
            "a configured address is not learned"
        );
    }

    #[test]
    fn vlan_frames_are_untagged_only_for_their_vlan() {
        let (l2, r2) = link2();
        let plain = udp(r2, l2);
        let tagged = |vid| {
            let mut f = vec![0u8; VLAN_TAG_LEN];
            f.extend_from_slice(&plain);
            assert!(underlay::tag_in_place(&mut f, vid));
            f
        };
        let mut f = tagged(VLAN);
        assert!(untag(&mut f, VLAN));
        assert_eq!(&f[VLAN_TAG_LEN..], &plain[..]);
        let t = tables(None);
        let (got, _) = run(&t, 2, &mut f[VLAN_TAG_LEN..]);
        assert!(matches!(got, Frame::Scion(c) if c.ingress == Ingress::External(2)));
        assert!(!untag(&mut tagged(VLAN + 1), VLAN));
        assert!(!untag(&mut plain.clone(), VLAN));
        assert!(!untag(&mut [0u8; 10], VLAN));
    }
}
