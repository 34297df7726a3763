//! IPv6 Neighbor Discovery (RFC 4861) for next-hop MAC resolution, the IPv6 counterpart of
//! the ARP functions in [`crate::underlay`]: Neighbor Solicitations (ICMPv6 type 135) and
//! Neighbor Advertisements (type 136) over Ethernet, parsed and validated (hop limit 255,
//! ICMPv6 checksum over the pseudo header, code 0, options), answered in place and emitted.
//! Allocation-free; malformed frames are typed errors, never panics.

use std::net::Ipv6Addr;

use crate::underlay::{ETH_LEN, fold, sum16};

const ETHERTYPE_IPV6: u16 = 0x86dd;
const PROTO_ICMPV6: u8 = 58;
/// ICMPv6 type of a Neighbor Solicitation.
pub const TYPE_NS: u8 = 135;
/// ICMPv6 type of a Neighbor Advertisement.
pub const TYPE_NA: u8 = 136;
const OPT_SOURCE_LL: u8 = 1;
const OPT_TARGET_LL: u8 = 2;
/// Offset of the ICMPv6 message in the frame (no extension headers).
const ICMP: usize = ETH_LEN + 40;
/// NS/NA message without options: type, code, checksum, flags/reserved, target address.
const MSG_LEN: usize = 24;
/// A link-layer address option for Ethernet: type, length (1 = 8 bytes), MAC.
const LL_OPT_LEN: usize = 8;
/// Length of a solicitation with a source link-layer option (what the router sends), and of
/// an advertisement with a target link-layer option.
pub const NS_FRAME_LEN: usize = ICMP + MSG_LEN + LL_OPT_LEN;
/// The hop limit every Neighbor Discovery message carries (proof that it is from on-link).
pub const HOP_LIMIT: u8 = 255;

/// NA flag: the sender is a router.
pub const FLAG_ROUTER: u8 = 0x80;
/// NA flag: sent in response to a solicitation.
pub const FLAG_SOLICITED: u8 = 0x40;
/// NA flag: override an existing cache entry.
pub const FLAG_OVERRIDE: u8 = 0x20;

/// Which Neighbor Discovery message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Neighbor Solicitation (type 135).
    Solicitation,
    /// Neighbor Advertisement (type 136).
    Advertisement,
}

/// A validated NS or NA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// NS or NA.
    pub kind: Kind,
    /// IPv6 source.
    pub src: Ipv6Addr,
    /// IPv6 destination.
    pub dst: Ipv6Addr,
    /// The target address of the message.
    pub target: Ipv6Addr,
    /// NA flags ([`FLAG_ROUTER`], [`FLAG_SOLICITED`], [`FLAG_OVERRIDE`]); 0 for an NS.
    pub flags: u8,
    /// The source (NS) or target (NA) link-layer address option, if present.
    pub link_layer: Option<[u8; 6]>,
    /// Length of the ICMPv6 message (the IPv6 payload length).
    pub len: usize,
    /// Ethernet source MAC.
    pub eth_src: [u8; 6],
}

/// Why a frame is not a valid NS/NA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotNdp {
    /// Not IPv6 directly carrying ICMPv6 (other EtherType, next header or version).
    NotIcmpv6,
    /// ICMPv6, but neither an NS nor an NA.
    OtherType,
    /// Shorter than its headers, or lengths that do not fit the frame.
    Truncated,
    /// IPv6 hop limit is not 255 (RFC 4861 7.1: the message may have been forwarded).
    HopLimit,
    /// The ICMPv6 checksum does not verify.
    Checksum,
    /// Nonzero code, multicast target, a zero-length or overlong option, a multicast source,
    /// or an address combination RFC 4861 7.1 forbids.
    Invalid,
}

#[inline]
fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

fn addr(b: &[u8]) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a.copy_from_slice(&b[..16]);
    Ipv6Addr::from(a)
}

/// The solicited-node multicast address of `ip`: `ff02::1:ff00:0` plus its low 24 bits
/// (RFC 4291 2.7.1).
pub fn solicited_node(ip: Ipv6Addr) -> Ipv6Addr {
    let o = ip.octets();
    Ipv6Addr::from([
        0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, o[13], o[14], o[15],
    ])
}

/// The Ethernet multicast MAC of an IPv6 multicast address: `33:33` plus its low 32 bits
/// (RFC 2464 7).
pub fn multicast_mac(ip: Ipv6Addr) -> [u8; 6] {
    let o = ip.octets();
    [0x33, 0x33, o[12], o[13], o[14], o[15]]
}

/// The ICMPv6 checksum of `msg` (its checksum field included as it stands) from `src` to
/// `dst`: 0 when a received message verifies.
fn checksum(src: &Ipv6Addr, dst: &Ipv6Addr, msg: &[u8]) -> u16 {
    let mut sum = sum16(sum16(0, &src.octets()), &dst.octets());
    sum += msg.len() as u32 + u32::from(PROTO_ICMPV6);
    fold(sum16(sum, msg))
}

/// Parses and validates an NS or NA in `frame` (Ethernet, IPv6 without extension headers,
/// ICMPv6) as RFC 4861 7.1.1 and 7.1.2 require of a receiver.
pub fn parse(frame: &[u8]) -> Result<Message, NotNdp> {
    if frame.len() < ETH_LEN {
        return Err(NotNdp::Truncated);
    }
    if be16(frame, 12) != ETHERTYPE_IPV6 {
        return Err(NotNdp::NotIcmpv6);
    }
    if frame.len() < ICMP {
        return Err(NotNdp::Truncated);
    }
    let ip = &frame[ETH_LEN..ICMP];
    if ip[0] >> 4 != 6 || ip[6] != PROTO_ICMPV6 {
        return Err(NotNdp::NotIcmpv6);
    }
    let len = usize::from(be16(ip, 4));
    if len == 0 || ICMP + len > frame.len() {
        return Err(NotNdp::Truncated);
    }
    let msg = &frame[ICMP..ICMP + len];
    let kind = match msg[0] {
        TYPE_NS => Kind::Solicitation,
        TYPE_NA => Kind::Advertisement,
        _ => return Err(NotNdp::OtherType),
    };
    if len < MSG_LEN {
        return Err(NotNdp::Truncated);
    }
    if ip[7] != HOP_LIMIT {
        return Err(NotNdp::HopLimit);
    }
    let (src, dst) = (addr(&ip[8..24]), addr(&ip[24..40]));
    if checksum(&src, &dst, msg) != 0 {
        return Err(NotNdp::Checksum);
    }
    let target = addr(&msg[8..24]);
    if msg[1] != 0 || target.is_multicast() || src.is_multicast() {
        return Err(NotNdp::Invalid);
    }
    let want = match kind {
        Kind::Solicitation => OPT_SOURCE_LL,
        Kind::Advertisement => OPT_TARGET_LL,
    };
    let mut link_layer = None;
    let mut off = MSG_LEN;
    while off < len {
        if len - off < 2 {
            return Err(NotNdp::Invalid);
        }
        let olen = usize::from(msg[off + 1]) * 8;
        if olen == 0 || off + olen > len {
            return Err(NotNdp::Invalid);
        }
        if msg[off] == want && link_layer.is_none() {
            let mut m = [0u8; 6];
            m.copy_from_slice(&msg[off + 2..off + 8]);
            link_layer = Some(m);
        }
        off += olen;
    }
    let flags = match kind {
        Kind::Solicitation => {
            // Duplicate address detection: to the solicited-node group, no source option.
            if src.is_unspecified() && (dst != solicited_node(target) || link_layer.is_some()) {
                return Err(NotNdp::Invalid);
            }
            0
        }
        Kind::Advertisement => {
            let flags = msg[4] & (FLAG_ROUTER | FLAG_SOLICITED | FLAG_OVERRIDE);
            if dst.is_multicast() && flags & FLAG_SOLICITED != 0 {
                return Err(NotNdp::Invalid);
            }
            flags
        }
    };
    let mut eth_src = [0u8; 6];
    eth_src.copy_from_slice(&frame[6..12]);
    Ok(Message {
        kind,
        src,
        dst,
        target,
        flags,
        link_layer,
        len,
        eth_src,
    })
}

impl Message {
    /// The neighbour (IPv6 address, MAC) this message teaches a router whose addresses
    /// `is_mine` accepts: the sender of an NS for one of them that carries a source
    /// link-layer option, or the target of an NA sent to one of them that carries a target
    /// link-layer option. Multicast MACs are never next hops.
    pub fn neighbor_for(&self, is_mine: impl Fn(Ipv6Addr) -> bool) -> Option<(Ipv6Addr, [u8; 6])> {
        let mac = self.link_layer.filter(|m| m[0] & 1 == 0)?;
        match self.kind {
            Kind::Solicitation if !self.src.is_unspecified() && is_mine(self.target) => {
                Some((self.src, mac))
            }
            Kind::Advertisement if is_mine(self.dst) => Some((self.target, mac)),
            _ => None,
        }
    }
}

impl Message {
    /// The (target, MAC) of an advertisement with the Override flag and a target link-layer
    /// option for a neighbour `is_known` accepts, whoever it was sent to (an unsolicited one
    /// goes to all nodes): RFC 4861 7.2.5 replaces the cached MAC with it.
    pub fn update_for(&self, is_known: impl Fn(Ipv6Addr) -> bool) -> Option<(Ipv6Addr, [u8; 6])> {
        let mac = self.link_layer.filter(|m| m[0] & 1 == 0)?;
        (self.kind == Kind::Advertisement
            && self.flags & FLAG_OVERRIDE != 0
            && is_known(self.target))
        .then_some((self.target, mac))
    }
}

/// Turns an NS for an IPv6 address `is_mine` accepts, sent to that address or to its
/// solicited-node group, into the NA from `my_mac`, in place (same frame length): Solicited
/// and Override set, a target link-layer option, back to the soliciting host (or to all
/// nodes, `ff02::1`, for duplicate address detection). An NS without options is answered
/// only when unicast (RFC 4861 7.2.4 lets that NA omit the option; there is no room for it).
/// Returns `false` (frame untouched) for anything else.
pub fn reply_in_place(
    frame: &mut [u8],
    my_mac: [u8; 6],
    is_mine: impl Fn(Ipv6Addr) -> bool,
) -> bool {
    let Ok(m) = parse(frame) else {
        return false;
    };
    if m.kind != Kind::Solicitation
        || !is_mine(m.target)
        || (m.dst != m.target && m.dst != solicited_node(m.target))
        || m.eth_src[0] & 1 == 1
    {
        return false;
    }
    let with_option = m.len >= MSG_LEN + LL_OPT_LEN;
    if !with_option && m.dst.is_multicast() {
        return false;
    }
    let dad = m.src.is_unspecified();
    let (dst, dst_mac, flags) = if dad {
        let all_nodes = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
        (all_nodes, multicast_mac(all_nodes), FLAG_OVERRIDE)
    } else {
        (m.src, m.eth_src, FLAG_SOLICITED | FLAG_OVERRIDE)
    };
    let len = if with_option {
        MSG_LEN + LL_OPT_LEN
    } else {
        MSG_LEN
    };
    frame[0..6].copy_from_slice(&dst_mac);
    frame[6..12].copy_from_slice(&my_mac);
    let ip = &mut frame[ETH_LEN..ICMP];
    ip[0..4].copy_from_slice(&[0x60, 0, 0, 0]);
    ip[4..6].copy_from_slice(&(len as u16).to_be_bytes());
    ip[7] = HOP_LIMIT;
    ip[8..24].copy_from_slice(&m.target.octets());
    ip[24..40].copy_from_slice(&dst.octets());
    // Whatever the NS had beyond the NA becomes zero padding after the IPv6 packet.
    frame[ICMP + len..].fill(0);
    let msg = &mut frame[ICMP..ICMP + len];
    msg[0..8].copy_from_slice(&[TYPE_NA, 0, 0, 0, flags, 0, 0, 0]);
    // The target (msg[8..24]) stays.
    if with_option {
        msg[24] = OPT_TARGET_LL;
        msg[25] = 1;
        msg[26..32].copy_from_slice(&my_mac);
    }
    let c = checksum(&m.target, &dst, msg);
    msg[2..4].copy_from_slice(&c.to_be_bytes());
    true
}

/// Writes an NS "who has `target`" from `my_ip`/`my_mac` to the target's solicited-node
/// group, with a source link-layer option, into `frame[..NS_FRAME_LEN]`.
pub fn write_solicitation(
    frame: &mut [u8],
    my_mac: [u8; 6],
    my_ip: Ipv6Addr,
    target: Ipv6Addr,
) -> bool {
    if frame.len() < NS_FRAME_LEN {
        return false;
    }
    let group = solicited_node(target);
    let frame = &mut frame[..NS_FRAME_LEN];
    frame.fill(0);
    frame[0..6].copy_from_slice(&multicast_mac(group));
    frame[6..12].copy_from_slice(&my_mac);
    frame[12..14].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
    let ip = &mut frame[ETH_LEN..ICMP];
    ip[0] = 0x60;
    ip[4..6].copy_from_slice(&((MSG_LEN + LL_OPT_LEN) as u16).to_be_bytes());
    ip[6] = PROTO_ICMPV6;
    ip[7] = HOP_LIMIT;
    ip[8..24].copy_from_slice(&my_ip.octets());
    ip[24..40].copy_from_slice(&group.octets());
    let msg = &mut frame[ICMP..];
    msg[0] = TYPE_NS;
    msg[8..24].copy_from_slice(&target.octets());
    msg[24] = OPT_SOURCE_LL;
    msg[25] = 1;
    msg[26..32].copy_from_slice(&my_mac);
    let c = checksum(&my_ip, &group, msg);
    msg[2..4].copy_from_slice(&c.to_be_bytes());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const PEER: [u8; 6] = [2, 0, 0, 0, 0, 9];

    fn v6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    /// The Internet checksum over the RFC 8200 8.1 pseudo header and `msg`, computed
    /// independently of the code under test (owned buffer, 64-bit sum).
    fn reference_checksum(src: Ipv6Addr, dst: Ipv6Addr, msg: &[u8]) -> u16 {
        let mut b = Vec::new();
        b.extend_from_slice(&src.octets());
        b.extend_from_slice(&dst.octets());
        b.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        b.extend_from_slice(&[0, 0, 0, 58]);
        b.extend_from_slice(msg);
        if b.len() % 2 == 1 {
            b.push(0);
        }
        let mut s: u64 = b
            .chunks(2)
            .map(|c| u64::from(u16::from_be_bytes([c[0], c[1]])))
            .sum();
        while s >> 16 != 0 {
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }

    /// An Ethernet/IPv6/ICMPv6 frame from PEER, checksum from [`reference_checksum`].
    #[allow(clippy::too_many_arguments)]
    fn nd_frame(
        ty: u8,
        code: u8,
        flags: u8,
        src: Ipv6Addr,
        dst: Ipv6Addr,
        target: Ipv6Addr,
        opts: &[u8],
        hop: u8,
    ) -> Vec<u8> {
        let mut f = Vec::new();
        let dmac = if dst.is_multicast() {
            multicast_mac(dst)
        } else {
            ME
        };
        f.extend_from_slice(&dmac);
        f.extend_from_slice(&PEER);
        f.extend_from_slice(&[0x86, 0xdd]);
        let mut msg = vec![ty, code, 0, 0, flags, 0, 0, 0];
        msg.extend_from_slice(&target.octets());
        msg.extend_from_slice(opts);
        let c = reference_checksum(src, dst, &msg);
        msg[2..4].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&[0x60, 0, 0, 0]);
        f.extend_from_slice(&(msg.len() as u16).to_be_bytes());
        f.extend_from_slice(&[58, hop]);
        f.extend_from_slice(&src.octets());
        f.extend_from_slice(&dst.octets());
        f.extend_from_slice(&msg);
        f
    }

    fn sll(mac: [u8; 6]) -> Vec<u8> {
        let mut o = vec![1, 1];
        o.extend_from_slice(&mac);
        o
    }

    fn tll(mac: [u8; 6]) -> Vec<u8> {
        let mut o = vec![2, 1];
        o.extend_from_slice(&mac);
        o
    }

    /// The ICMPv6 message of a frame and whether its checksum verifies independently.
    fn verifies(f: &[u8]) -> bool {
        let len = usize::from(u16::from_be_bytes([f[18], f[19]]));
        let (src, dst) = (addr(&f[22..38]), addr(&f[38..54]));
        reference_checksum(src, dst, &f[54..54 + len]) == 0
    }

    #[test]
    fn unsolicited_override_advertisements_update_known_neighbours_only() {
        let (peer, all) = (v6("fd00:3::3"), v6("ff02::1"));
        let new_mac = [2, 0, 0, 0, 0, 0x33];
        let na = |flags, opts: &[u8]| {
            parse(&nd_frame(136, 0, flags, peer, all, peer, opts, 255)).unwrap()
        };
        let known = |ip: Ipv6Addr| ip == peer;
        let m = na(FLAG_OVERRIDE, &tll(new_mac));
        // Not addressed to us: nothing learned from it as such...
        assert_eq!(m.neighbor_for(|_| false), None);
        // ...but a known neighbour's MAC is replaced.
        assert_eq!(m.update_for(known), Some((peer, new_mac)));
        assert_eq!(m.update_for(|_| false), None, "unknown neighbour");
        assert_eq!(
            na(0, &tll(new_mac)).update_for(known),
            None,
            "no Override flag"
        );
        assert_eq!(
            na(FLAG_OVERRIDE, &[]).update_for(known),
            None,
            "no link-layer option"
        );
        let multicast = [0x33, 0x33, 0, 0, 0, 1];
        assert_eq!(na(FLAG_OVERRIDE, &tll(multicast)).update_for(known), None);
    }

    #[test]
    fn solicited_node_address_and_mac() {
        let ip = v6("2001:db8::1:2:3:4567:89ab");
        assert_eq!(solicited_node(ip), v6("ff02::1:ff67:89ab"));
        assert_eq!(
            multicast_mac(solicited_node(ip)),
            [0x33, 0x33, 0xff, 0x67, 0x89, 0xab]
        );
        assert_eq!(solicited_node(v6("fd00:3::3")), v6("ff02::1:ff00:3"));
        assert_eq!(multicast_mac(v6("ff02::1")), [0x33, 0x33, 0, 0, 0, 1]);
    }

    #[test]
    fn multicast_solicitation_for_own_address_becomes_advertisement_in_place() {
        let (mine, peer) = (v6("fd00:3::1"), v6("fd00:3::3"));
        let mut f = nd_frame(135, 0, 0, peer, solicited_node(mine), mine, &sll(PEER), 255);
        assert_eq!(f.len(), NS_FRAME_LEN);
        assert!(verifies(&f), "test frame is sound");
        let ns = parse(&f).unwrap();
        assert_eq!(ns.kind, Kind::Solicitation);
        assert_eq!((ns.src, ns.target, ns.link_layer), (peer, mine, Some(PEER)));
        let before = f.clone();
        assert!(!reply_in_place(&mut f, ME, |ip| ip == v6("fd00:3::2")));
        assert_eq!(f, before, "not ours: untouched");
        assert!(reply_in_place(&mut f, ME, |ip| ip == mine));
        assert_eq!(f.len(), before.len(), "same length");
        assert_eq!(&f[0..6], &PEER, "back to the soliciting host");
        assert_eq!(&f[6..12], &ME);
        assert_eq!(&f[12..14], &[0x86, 0xdd]);
        assert_eq!(
            &f[18..20],
            &[0, 32],
            "payload: NA + target link-layer option"
        );
        assert_eq!((f[20], f[21]), (58, 255));
        assert_eq!(addr(&f[22..38]), mine, "from the target address");
        assert_eq!(addr(&f[38..54]), peer);
        assert_eq!(&f[54..56], &[136, 0], "NA, code 0");
        assert_eq!(f[58], FLAG_SOLICITED | FLAG_OVERRIDE);
        assert_eq!(&f[59..62], &[0, 0, 0]);
        assert_eq!(addr(&f[62..78]), mine);
        assert_eq!(&f[78..80], &[2, 1], "target link-layer option");
        assert_eq!(&f[80..86], &ME);
        assert!(verifies(&f), "NA checksum verifies independently");
        // The NA, seen by the soliciting host, teaches it our MAC; it is not answered again.
        let na = parse(&f).unwrap();
        assert_eq!(na.kind, Kind::Advertisement);
        assert_eq!(na.neighbor_for(|ip| ip == peer), Some((mine, ME)));
        assert_eq!(
            na.neighbor_for(|ip| ip == mine),
            None,
            "not addressed to us"
        );
        let answered = f.clone();
        assert!(!reply_in_place(&mut f, PEER, |_| true));
        assert_eq!(f, answered);
    }

    #[test]
    fn unicast_and_duplicate_address_detection_solicitations() {
        let (mine, peer) = (v6("fd00:3::1"), v6("fd00:3::3"));
        // Unicast with a source option: answered like the multicast one.
        let mut f = nd_frame(135, 0, 0, peer, mine, mine, &sll(PEER), 255);
        assert!(reply_in_place(&mut f, ME, |ip| ip == mine));
        assert_eq!(addr(&f[38..54]), peer);
        assert!(verifies(&f));
        // Unicast without options (neighbour unreachability detection): NA without option.
        let mut f = nd_frame(135, 0, 0, peer, mine, mine, &[], 255);
        let n = f.len();
        assert!(reply_in_place(&mut f, ME, |ip| ip == mine));
        assert_eq!((f.len(), &f[18..20]), (n, &[0u8, 24][..]));
        assert_eq!(f[54], 136);
        assert!(verifies(&f));
        assert_eq!(parse(&f).unwrap().link_layer, None);
        // Multicast without options: no room for the required option, not answered.
        let mut f = nd_frame(135, 0, 0, peer, solicited_node(mine), mine, &[], 255);
        let before = f.clone();
        assert!(!reply_in_place(&mut f, ME, |ip| ip == mine));
        assert_eq!(f, before);
        // To another host's solicited-node group: not for us.
        let mut f = nd_frame(135, 0, 0, peer, solicited_node(peer), mine, &sll(PEER), 255);
        assert!(!reply_in_place(&mut f, ME, |ip| ip == mine));
        // DAD (unspecified source, nonce option): NA to all nodes, Solicited clear.
        let nonce = [14, 1, 1, 2, 3, 4, 5, 6];
        let mut f = nd_frame(
            135,
            0,
            0,
            Ipv6Addr::UNSPECIFIED,
            solicited_node(mine),
            mine,
            &nonce,
            255,
        );
        assert_eq!(
            parse(&f).unwrap().neighbor_for(|_| true),
            None,
            "nothing to learn"
        );
        assert!(reply_in_place(&mut f, ME, |ip| ip == mine));
        assert_eq!(&f[0..6], &[0x33, 0x33, 0, 0, 0, 1]);
        assert_eq!(addr(&f[38..54]), v6("ff02::1"));
        assert_eq!(f[58], FLAG_OVERRIDE);
        assert!(verifies(&f));
        assert_eq!(parse(&f).unwrap().flags, FLAG_OVERRIDE);
    }

    #[test]
    fn invalid_messages_are_rejected_and_never_answered() {
        let (mine, peer) = (v6("fd00:3::1"), v6("fd00:3::3"));
        let group = solicited_node(mine);
        let ok = nd_frame(135, 0, 0, peer, group, mine, &sll(PEER), 255);
        let cases: Vec<(Vec<u8>, NotNdp)> = vec![
            (
                nd_frame(135, 0, 0, peer, group, mine, &sll(PEER), 254),
                NotNdp::HopLimit,
            ),
            (
                nd_frame(135, 0, 0, peer, group, mine, &sll(PEER), 64),
                NotNdp::HopLimit,
            ),
            (
                {
                    let mut f = ok.clone();
                    f[57] ^= 1;
                    f
                },
                NotNdp::Checksum,
            ),
            (
                {
                    let mut f = ok.clone();
                    f[85] ^= 0x10; // option byte: covered by the checksum
                    f
                },
                NotNdp::Checksum,
            ),
            (
                nd_frame(135, 1, 0, peer, group, mine, &sll(PEER), 255),
                NotNdp::Invalid,
            ),
            (
                nd_frame(135, 0, 0, peer, group, group, &sll(PEER), 255),
                NotNdp::Invalid,
            ),
            (
                nd_frame(135, 0, 0, peer, group, mine, &[1, 0, 0, 0, 0, 0, 0, 0], 255),
                NotNdp::Invalid,
            ),
            (
                nd_frame(135, 0, 0, peer, group, mine, &[1, 2, 0, 0, 0, 0, 0, 0], 255),
                NotNdp::Invalid,
            ),
            (
                // DAD must not carry a source link-layer option.
                nd_frame(
                    135,
                    0,
                    0,
                    Ipv6Addr::UNSPECIFIED,
                    group,
                    mine,
                    &sll(PEER),
                    255,
                ),
                NotNdp::Invalid,
            ),
            (
                // Solicited NA to a multicast group.
                nd_frame(
                    136,
                    0,
                    FLAG_SOLICITED,
                    peer,
                    v6("ff02::1"),
                    peer,
                    &tll(PEER),
                    255,
                ),
                NotNdp::Invalid,
            ),
            (
                nd_frame(128, 0, 0, peer, mine, mine, &[], 255),
                NotNdp::OtherType,
            ),
        ];
        for (i, (mut f, why)) in cases.into_iter().enumerate() {
            assert_eq!(parse(&f), Err(why), "case {i}");
            let before = f.clone();
            assert!(!reply_in_place(&mut f, ME, |_| true), "case {i}");
            assert_eq!(f, before, "case {i}");
        }
        // Truncated anywhere: an error, never a panic, never an answer.
        for cut in 0..ok.len() {
            let mut f = ok[..cut].to_vec();
            assert!(parse(&f).is_err(), "cut at {cut}");
            assert!(!reply_in_place(&mut f, ME, |_| true));
        }
        assert_eq!(parse(&ok[..60]), Err(NotNdp::Truncated));
        // A frame longer than the IPv6 packet (Ethernet padding) is fine.
        let mut padded = ok.clone();
        padded.extend_from_slice(&[0; 10]);
        assert!(parse(&padded).is_ok());
        // Not IPv6, or IPv6 but UDP.
        let mut v4 = ok.clone();
        v4[12..14].copy_from_slice(&[0x08, 0x00]);
        assert_eq!(parse(&v4), Err(NotNdp::NotIcmpv6));
        let mut udp = ok.clone();
        udp[20] = 17;
        assert_eq!(parse(&udp), Err(NotNdp::NotIcmpv6));
    }

    #[test]
    fn neighbours_are_learned_from_messages_addressed_to_us() {
        let (mine, peer) = (v6("fd00:3::1"), v6("fd00:3::3"));
        let is_mine = |ip: Ipv6Addr| ip == mine;
        let ns = nd_frame(135, 0, 0, peer, solicited_node(mine), mine, &sll(PEER), 255);
        assert_eq!(
            parse(&ns).unwrap().neighbor_for(is_mine),
            Some((peer, PEER))
        );
        let other = v6("fd00:3::7");
        let ns = nd_frame(
            135,
            0,
            0,
            peer,
            solicited_node(other),
            other,
            &sll(PEER),
            255,
        );
        assert_eq!(
            parse(&ns).unwrap().neighbor_for(is_mine),
            None,
            "not for us"
        );
        let ns = nd_frame(135, 0, 0, peer, mine, mine, &[], 255);
        assert_eq!(parse(&ns).unwrap().neighbor_for(is_mine), None, "no option");
        let flags = FLAG_SOLICITED | FLAG_OVERRIDE;
        let na = nd_frame(136, 0, flags, peer, mine, peer, &tll(PEER), 255);
        let m = parse(&na).unwrap();
        assert_eq!((m.kind, m.flags), (Kind::Advertisement, flags));
        assert_eq!(m.neighbor_for(is_mine), Some((peer, PEER)));
        let na = nd_frame(136, 0, flags, peer, other, peer, &tll(PEER), 255);
        assert_eq!(
            parse(&na).unwrap().neighbor_for(is_mine),
            None,
            "to another host"
        );
        let na = nd_frame(
            136,
            0,
            flags,
            peer,
            mine,
            peer,
            &tll([3, 0, 0, 0, 0, 1]),
            255,
        );
        assert_eq!(
            parse(&na).unwrap().neighbor_for(is_mine),
            None,
            "multicast MAC"
        );
        // A source option in an NA is not the target's address.
        let na = nd_frame(136, 0, flags, peer, mine, peer, &sll(PEER), 255);
        assert_eq!(parse(&na).unwrap().neighbor_for(is_mine), None);
        // Unknown options are skipped.
        let mut opts = vec![14, 1, 0, 0, 0, 0, 0, 0];
        opts.extend_from_slice(&tll(PEER));
        let na = nd_frame(136, 0, flags, peer, mine, peer, &opts, 255);
        assert_eq!(
            parse(&na).unwrap().neighbor_for(is_mine),
            Some((peer, PEER))
        );
    }

    #[test]
    fn emitted_solicitation_parses_back_and_is_answered() {
        let (mine, peer) = (v6("fd00:3::1"), v6("fd00:3::3"));
        let mut f = [0u8; NS_FRAME_LEN + 4];
        f[NS_FRAME_LEN..].fill(0xee);
        assert!(write_solicitation(&mut f, ME, mine, peer));
        assert!(!write_solicitation(
            &mut [0u8; NS_FRAME_LEN - 1],
            ME,
            mine,
            peer
        ));
        assert_eq!(
            &f[NS_FRAME_LEN..],
            &[0xee; 4],
            "nothing written past the frame"
        );
        let f = &mut f[..NS_FRAME_LEN];
        assert_eq!(&f[0..6], &[0x33, 0x33, 0xff, 0, 0, 3]);
        assert_eq!(&f[6..12], &ME);
        assert!(verifies(f));
        let m = parse(f).unwrap();
        assert_eq!(m.kind, Kind::Solicitation);
        assert_eq!((m.src, m.dst, m.target), (mine, v6("ff02::1:ff00:3"), peer));
        assert_eq!(m.link_layer, Some(ME));
        // The peer learns us from it and answers; we learn the peer from the answer.
        assert_eq!(m.neighbor_for(|ip| ip == peer), Some((mine, ME)));
        assert!(reply_in_place(f, PEER, |ip| ip == peer));
        assert_eq!(&f[0..6], &ME);
        let na = parse(f).unwrap();
        assert_eq!(na.neighbor_for(|ip| ip == mine), Some((peer, PEER)));
    }
}
