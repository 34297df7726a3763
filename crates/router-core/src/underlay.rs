//! The underlay headers around a SCION packet: Ethernet, IPv4 or IPv6, UDP. Parsed on rx and
//! written in place on tx, allocation-free.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Ethernet header length (no VLAN tag).
pub const ETH_LEN: usize = 14;
/// Ethernet + IPv4 (no options) + UDP.
pub const V4_HDR_LEN: usize = ETH_LEN + field::ipv4::HEADER_LEN + field::udp::HEADER_LEN;
/// Ethernet + IPv6 (no extension headers) + UDP.
pub const V6_HDR_LEN: usize = ETH_LEN + field::ipv6::HEADER_LEN + field::udp::HEADER_LEN;

/// 802.1Q VLAN tag: TPID, then priority, DEI and the 12-bit VLAN ID.
pub const ETHERTYPE_VLAN: u16 = 0x8100;
/// Length of an 802.1Q tag.
pub const VLAN_TAG_LEN: usize = 4;

/// Byte ranges of the header fields this module reads and writes, each relative to its own
/// header (smoltcp's `field` tables).
mod field {
    use std::ops::Range;

    /// Ethernet II.
    pub mod eth {
        use super::Range;
        pub const DST: Range<usize> = 0..6;
        pub const SRC: Range<usize> = 6..12;
        /// The EtherType, or the TPID of an 802.1Q tag.
        pub const ETHERTYPE: Range<usize> = 12..14;
        /// Both MAC addresses (what moves over a removed tag).
        pub const MACS: Range<usize> = 0..12;
    }

    /// 802.1Q tag control information (after the TPID at [`eth::ETHERTYPE`]).
    pub mod vlan {
        use super::Range;
        pub const TCI: Range<usize> = 14..16;
        /// The VLAN ID bits of the TCI.
        pub const VID_MASK: u16 = 0x0fff;
    }

    /// IPv4 (RFC 791).
    pub mod ipv4 {
        use super::Range;
        pub const VER_IHL: usize = 0;
        pub const TOS: usize = 1;
        pub const TOTAL_LEN: Range<usize> = 2..4;
        pub const IDENT: Range<usize> = 4..6;
        pub const FLAGS_FRAG: Range<usize> = 6..8;
        pub const TTL: usize = 8;
        pub const PROTOCOL: usize = 9;
        pub const CHECKSUM: Range<usize> = 10..12;
        pub const SRC: Range<usize> = 12..16;
        pub const DST: Range<usize> = 16..20;
        /// Header length without options.
        pub const HEADER_LEN: usize = 20;
        /// More-fragments flag and fragment offset.
        pub const FRAGMENT_MASK: u16 = 0x3fff;
        /// Don't fragment.
        pub const DONT_FRAGMENT: u16 = 0x4000;
    }

    /// IPv6 (RFC 8200).
    pub mod ipv6 {
        use super::Range;
        pub const VER_TC_FLOW: Range<usize> = 0..4;
        pub const PAYLOAD_LEN: Range<usize> = 4..6;
        pub const NEXT_HEADER: usize = 6;
        pub const HOP_LIMIT: usize = 7;
        pub const SRC: Range<usize> = 8..24;
        pub const DST: Range<usize> = 24..40;
        /// Header length (no extension headers).
        pub const HEADER_LEN: usize = 40;
    }

    /// UDP (RFC 768).
    pub mod udp {
        use super::Range;
        pub const SRC_PORT: Range<usize> = 0..2;
        pub const DST_PORT: Range<usize> = 2..4;
        pub const LEN: Range<usize> = 4..6;
        pub const CHECKSUM: Range<usize> = 6..8;
        pub const HEADER_LEN: usize = 8;
    }

    /// ARP for Ethernet and IPv4 (RFC 826).
    pub mod arp {
        use super::Range;
        pub const HTYPE: Range<usize> = 0..2;
        pub const PTYPE: Range<usize> = 2..4;
        pub const HLEN: usize = 4;
        pub const PLEN: usize = 5;
        pub const OPER: Range<usize> = 6..8;
        /// Sender hardware and protocol address.
        pub const SHA: Range<usize> = 8..14;
        pub const SPA: Range<usize> = 14..18;
        /// Target hardware and protocol address.
        pub const THA: Range<usize> = 18..24;
        pub const TPA: Range<usize> = 24..28;
        /// Packet length for Ethernet/IPv4.
        pub const LEN: usize = 28;
        /// Hardware type Ethernet, operations request and reply.
        pub const HTYPE_ETHERNET: u16 = 1;
        pub const OPER_REQUEST: u16 = 1;
        pub const OPER_REPLY: u16 = 2;
    }
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const PROTO_UDP: u8 = 17;
/// IPv4 version and header length of a header without options.
const IPV4_NO_OPTIONS: u8 = 0x45;
/// TTL / hop limit of the packets the router sends.
const DEFAULT_TTL: u8 = 64;

/// What the underlay of a received frame says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Offset of the UDP payload (the SCION packet).
    pub offset: usize,
    /// Length of the UDP payload.
    pub len: usize,
    /// Underlay source.
    pub src: SocketAddr,
    /// Underlay destination.
    pub dst: SocketAddr,
    /// Ethernet source MAC.
    pub eth_src: [u8; 6],
}

/// Why a frame is not a SCION-over-UDP packet for us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotScion {
    /// Not IPv4/IPv6 (ARP, LLDP, ...).
    OtherEtherType,
    /// IP but not UDP, a fragment, or IPv6 with extension headers.
    NotUdp,
    /// Truncated or inconsistent lengths.
    Truncated,
}

#[inline]
fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

/// The IPv4 address in `b[i..i + 4]`.
#[inline]
fn ipv4_at(b: &[u8], i: usize) -> Ipv4Addr {
    Ipv4Addr::new(b[i], b[i + 1], b[i + 2], b[i + 3])
}

/// Parses the headers of an untagged `frame`. Inlined into its caller so that the result
/// (addresses and all) stays in registers instead of going through memory.
#[inline(always)]
pub fn parse(frame: &[u8]) -> Result<Received, NotScion> {
    parse_l2(frame, ETH_LEN)
}

/// Parses the headers of `frame` whether or not it carries one 802.1Q tag (offsets relative to
/// the frame as it is): for hashing flows before the tag is removed.
pub fn parse_tagged(frame: &[u8]) -> Result<Received, NotScion> {
    if vlan_id(frame).is_some() {
        parse_l2(frame, ETH_LEN + VLAN_TAG_LEN)
    } else {
        parse(frame)
    }
}

/// The VLAN ID of a frame with an 802.1Q tag, `None` for an untagged (or too short) frame.
#[inline]
pub fn vlan_id(frame: &[u8]) -> Option<u16> {
    (frame.len() >= ETH_LEN + VLAN_TAG_LEN
        && be16(frame, field::eth::ETHERTYPE.start) == ETHERTYPE_VLAN)
        .then(|| be16(frame, field::vlan::TCI.start) & field::vlan::VID_MASK)
}

/// Moves the MAC addresses of a tagged frame over its 802.1Q tag (bytes 4.. then hold an
/// untagged frame: the caller drops the first 4 bytes). `false` if `frame` is too short.
#[inline]
pub fn untag_in_place(frame: &mut [u8]) -> bool {
    if frame.len() < ETH_LEN + VLAN_TAG_LEN {
        return false;
    }
    frame.copy_within(field::eth::MACS, VLAN_TAG_LEN);
    true
}

/// Turns `frame`, an untagged frame after 4 free bytes (the caller prepended them), into the
/// same frame with an 802.1Q tag for `vid` (priority 0). `false` if `frame` is too short.
#[inline]
pub fn tag_in_place(frame: &mut [u8], vid: u16) -> bool {
    if frame.len() < ETH_LEN + VLAN_TAG_LEN {
        return false;
    }
    let macs = field::eth::MACS;
    frame.copy_within(macs.start + VLAN_TAG_LEN..macs.end + VLAN_TAG_LEN, 0);
    frame[field::eth::ETHERTYPE].copy_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
    frame[field::vlan::TCI].copy_from_slice(&(vid & field::vlan::VID_MASK).to_be_bytes());
    true
}

/// Parses a frame whose Ethernet header (with any tag) is `l2` bytes long.
#[inline(always)]
fn parse_l2(frame: &[u8], l2: usize) -> Result<Received, NotScion> {
    if frame.len() < l2 {
        return Err(NotScion::Truncated);
    }
    let mut eth_src = [0u8; 6];
    eth_src.copy_from_slice(&frame[field::eth::SRC]);
    let (src_ip, dst_ip, l4, l4_end) = match be16(frame, l2 - 2) {
        ETHERTYPE_IPV4 => {
            let ip = &frame[l2..];
            if ip.len() < field::ipv4::HEADER_LEN || ip[field::ipv4::VER_IHL] >> 4 != 4 {
                return Err(NotScion::Truncated);
            }
            let ihl = usize::from(ip[field::ipv4::VER_IHL] & 0x0f) * 4;
            let total = usize::from(be16(ip, field::ipv4::TOTAL_LEN.start));
            if ihl < field::ipv4::HEADER_LEN || total < ihl || total > ip.len() {
                return Err(NotScion::Truncated);
            }
            // More fragments or a fragment offset: not handled (SCION avoids fragmentation).
            if ip[field::ipv4::PROTOCOL] != PROTO_UDP
                || be16(ip, field::ipv4::FLAGS_FRAG.start) & field::ipv4::FRAGMENT_MASK != 0
            {
                return Err(NotScion::NotUdp);
            }
            let s = ipv4_at(ip, field::ipv4::SRC.start);
            let d = ipv4_at(ip, field::ipv4::DST.start);
            (IpAddr::V4(s), IpAddr::V4(d), l2 + ihl, l2 + total)
        }
        ETHERTYPE_IPV6 => {
            let ip = &frame[l2..];
            const HDR: usize = field::ipv6::HEADER_LEN;
            if ip.len() < HDR || ip[field::ipv6::VER_TC_FLOW.start] >> 4 != 6 {
                return Err(NotScion::Truncated);
            }
            if ip[field::ipv6::NEXT_HEADER] != PROTO_UDP {
                return Err(NotScion::NotUdp);
            }
            let payload = usize::from(be16(ip, field::ipv6::PAYLOAD_LEN.start));
            if HDR + payload > ip.len() {
                return Err(NotScion::Truncated);
            }
            let mut s = [0u8; 16];
            s.copy_from_slice(&ip[field::ipv6::SRC]);
            let mut d = [0u8; 16];
            d.copy_from_slice(&ip[field::ipv6::DST]);
            (
                IpAddr::V6(Ipv6Addr::from(s)),
                IpAddr::V6(Ipv6Addr::from(d)),
                l2 + HDR,
                l2 + HDR + payload,
            )
        }
        _ => return Err(NotScion::OtherEtherType),
    };
    const UDP: usize = field::udp::HEADER_LEN;
    if l4 + UDP > l4_end {
        return Err(NotScion::Truncated);
    }
    let udp_len = usize::from(be16(frame, l4 + field::udp::LEN.start));
    if udp_len < UDP || l4 + udp_len > l4_end {
        return Err(NotScion::Truncated);
    }
    Ok(Received {
        offset: l4 + UDP,
        len: udp_len - UDP,
        src: SocketAddr::new(src_ip, be16(frame, l4 + field::udp::SRC_PORT.start)),
        dst: SocketAddr::new(dst_ip, be16(frame, l4 + field::udp::DST_PORT.start)),
        eth_src,
    })
}

/// An IPv4 underlay address of the router as the fast path compares it, with what a packet
/// to it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V4Key<T = scion_dp::Ingress> {
    /// The frame's bytes [`V4Key::DST_AT`].. of a packet to the address (its IPv4 destination,
    /// a UDP source port of 0, its UDP destination port), read as one word.
    dst: u64,
    /// What a packet to the address means.
    pub what: T,
}

/// The 4 bytes of `h` from `at` as a word, the bytes not under `mask` cleared (in the byte
/// order of the machine: only compared with words built the same way).
#[inline(always)]
fn word32(h: &[u8; V4_HDR_LEN], at: usize, mask: [u8; 4]) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&h[at..at + 4]);
    u32::from_ne_bytes(b) & u32::from_ne_bytes(mask)
}

/// The 8 bytes of `h` from `at` as a word, as [`word32`].
#[inline(always)]
fn word64(h: &[u8; V4_HDR_LEN], at: usize, mask: [u8; 8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&h[at..at + 8]);
    u64::from_ne_bytes(b) & u64::from_ne_bytes(mask)
}

impl<T: Copy> V4Key<T> {
    /// Where the compared destination word starts in the frame (the IPv4 destination).
    const DST_AT: usize = ETH_LEN + field::ipv4::DST.start;
    /// Which bytes of the destination word are compared: all but the UDP source port.
    const DST_MASK: [u8; 8] = [0xff, 0xff, 0xff, 0xff, 0, 0, 0xff, 0xff];
    /// Where the EtherType, IPv4 version and header length start (one word with the TOS).
    const TYPE_AT: usize = field::eth::ETHERTYPE.start;
    /// The EtherType IPv4 and an IPv4 header without options (the TOS byte not compared).
    const TYPE: [u8; 4] = [
        (ETHERTYPE_IPV4 >> 8) as u8,
        ETHERTYPE_IPV4 as u8,
        IPV4_NO_OPTIONS,
        0,
    ];
    const TYPE_MASK: [u8; 4] = [0xff, 0xff, 0xff, 0];
    /// Where the IPv4 flags and fragment offset start (one word with TTL and protocol).
    const FRAG_AT: usize = ETH_LEN + field::ipv4::FLAGS_FRAG.start;
    /// Not a fragment (more-fragments flag and offset zero, other flags and the TTL not
    /// compared), protocol UDP.
    const FRAG: [u8; 4] = [0, 0, 0, PROTO_UDP];
    const FRAG_MASK: [u8; 4] = [
        (field::ipv4::FRAGMENT_MASK >> 8) as u8,
        field::ipv4::FRAGMENT_MASK as u8,
        0,
        0xff,
    ];

    /// The key of `addr`.
    pub fn new(addr: std::net::SocketAddrV4, what: T) -> Self {
        let [a, b, c, d] = addr.ip().octets();
        let [p, q] = addr.port().to_be_bytes();
        let dst = u64::from_ne_bytes([a, b, c, d, 0, 0, p, q]);
        V4Key { dst, what }
    }

    /// (offset, length) of the UDP payload of an untagged Ethernet/IPv4 (no options)/UDP
    /// frame to this address, unfragmented and with consistent lengths; `None` for any other
    /// frame (whatever [`parse`] says of it). For such a frame exactly what [`parse`] gives.
    #[inline(always)]
    pub fn payload(&self, frame: &[u8]) -> Option<(usize, usize)> {
        const IP: usize = field::ipv4::HEADER_LEN;
        const UDP: usize = field::udp::HEADER_LEN;
        const TOTAL_LEN: usize = ETH_LEN + field::ipv4::TOTAL_LEN.start;
        const UDP_LEN: usize = ETH_LEN + IP + field::udp::LEN.start;
        let h: &[u8; V4_HDR_LEN] = frame.first_chunk()?;
        let total = usize::from(be16(h, TOTAL_LEN));
        let udp_len = usize::from(be16(h, UDP_LEN));
        let ok = word32(h, Self::TYPE_AT, Self::TYPE_MASK) == u32::from_ne_bytes(Self::TYPE)
            && word32(h, Self::FRAG_AT, Self::FRAG_MASK) == u32::from_ne_bytes(Self::FRAG)
            && word64(h, Self::DST_AT, Self::DST_MASK) == self.dst
            && total <= frame.len() - ETH_LEN
            && udp_len >= UDP
            && udp_len + IP <= total;
        ok.then(|| (V4_HDR_LEN, udp_len - UDP))
    }
}

const ETHERTYPE_ARP: u16 = 0x0806;

/// Turns an ARP request for an IPv4 address `is_mine` accepts into the reply from `my_mac`,
/// in place (same length). Returns `false` (frame untouched) for anything else.
pub fn arp_reply_in_place(
    frame: &mut [u8],
    my_mac: [u8; 6],
    is_mine: impl Fn(Ipv4Addr) -> bool,
) -> bool {
    use field::arp;
    let Some(a) = arp_packet(frame) else {
        return false;
    };
    if be16(a, arp::OPER.start) != arp::OPER_REQUEST {
        return false;
    }
    let target = ipv4_at(a, arp::TPA.start);
    if !is_mine(target) {
        return false;
    }
    let mut sha = [0u8; 6];
    sha.copy_from_slice(&a[arp::SHA]);
    let mut spa = [0u8; 4];
    spa.copy_from_slice(&a[arp::SPA]);
    let a = &mut frame[ETH_LEN..ETH_LEN + arp::LEN];
    a[arp::OPER].copy_from_slice(&arp::OPER_REPLY.to_be_bytes());
    a[arp::SHA].copy_from_slice(&my_mac);
    a[arp::SPA].copy_from_slice(&target.octets());
    a[arp::THA].copy_from_slice(&sha);
    a[arp::TPA].copy_from_slice(&spa);
    frame[field::eth::DST].copy_from_slice(&sha);
    frame[field::eth::SRC].copy_from_slice(&my_mac);
    true
}

/// The sender (IP, MAC) of an ARP request or reply whose target IP `is_mine` accepts (RFC 826:
/// a host addressed by an ARP packet records its sender).
pub fn arp_sender_to_me(
    frame: &[u8],
    is_mine: impl Fn(Ipv4Addr) -> bool,
) -> Option<(Ipv4Addr, [u8; 6])> {
    arp_sender(frame).and_then(|(ip, mac, target)| is_mine(target).then_some((ip, mac)))
}

/// The sender (IP, MAC) of an Ethernet/IPv4 ARP request or reply, and its target IP (a
/// gratuitous ARP has target = sender). Senders with a multicast MAC are refused.
pub fn arp_sender(frame: &[u8]) -> Option<(Ipv4Addr, [u8; 6], Ipv4Addr)> {
    use field::arp;
    let a = arp_packet(frame)?;
    let op = be16(a, arp::OPER.start);
    if !(op == arp::OPER_REQUEST || op == arp::OPER_REPLY) {
        return None;
    }
    let mut sha = [0u8; 6];
    sha.copy_from_slice(&a[arp::SHA]);
    if sha[0] & 1 == 1 {
        return None; // multicast/broadcast sender MAC: never a next hop
    }
    Some((ipv4_at(a, arp::SPA.start), sha, ipv4_at(a, arp::TPA.start)))
}

/// The ARP packet of an Ethernet/IPv4 ARP frame (any operation), `None` for anything else.
fn arp_packet(frame: &[u8]) -> Option<&[u8]> {
    use field::arp;
    if frame.len() < ETH_LEN + arp::LEN || be16(frame, field::eth::ETHERTYPE.start) != ETHERTYPE_ARP
    {
        return None;
    }
    let a = &frame[ETH_LEN..ETH_LEN + arp::LEN];
    let ethernet_ipv4 = be16(a, arp::HTYPE.start) == arp::HTYPE_ETHERNET
        && be16(a, arp::PTYPE.start) == ETHERTYPE_IPV4
        && usize::from(a[arp::HLEN]) == arp::SHA.len()
        && usize::from(a[arp::PLEN]) == arp::SPA.len();
    ethernet_ipv4.then_some(a)
}

/// Length of an ARP request frame (minimum Ethernet frame without FCS).
pub const ARP_FRAME_LEN: usize = 60;

/// Writes a broadcast ARP request "who has `target`, tell `my_ip`" into `frame[..60]`.
pub fn write_arp_request(
    frame: &mut [u8],
    my_mac: [u8; 6],
    my_ip: Ipv4Addr,
    target: Ipv4Addr,
) -> bool {
    if frame.len() < ARP_FRAME_LEN {
        return false;
    }
    use field::arp;
    frame[..ARP_FRAME_LEN].fill(0);
    frame[field::eth::DST].copy_from_slice(&[0xff; 6]);
    frame[field::eth::SRC].copy_from_slice(&my_mac);
    frame[field::eth::ETHERTYPE].copy_from_slice(&ETHERTYPE_ARP.to_be_bytes());
    let a = &mut frame[ETH_LEN..ETH_LEN + arp::LEN];
    a[arp::HTYPE].copy_from_slice(&arp::HTYPE_ETHERNET.to_be_bytes());
    a[arp::PTYPE].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    a[arp::HLEN] = arp::SHA.len() as u8;
    a[arp::PLEN] = arp::SPA.len() as u8;
    a[arp::OPER].copy_from_slice(&arp::OPER_REQUEST.to_be_bytes());
    a[arp::SHA].copy_from_slice(&my_mac);
    a[arp::SPA].copy_from_slice(&my_ip.octets());
    a[arp::TPA].copy_from_slice(&target.octets());
    true
}

/// Header length for a packet sent to `dst`.
#[inline]
pub fn header_len(dst: &SocketAddr) -> usize {
    if dst.is_ipv4() {
        V4_HDR_LEN
    } else {
        V6_HDR_LEN
    }
}

/// Ones'-complement sum of `data` added to `sum`.
#[inline]
pub(crate) fn sum16(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in chunks.by_ref() {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

/// Folds a ones'-complement sum to 16 bits and complements it (the Internet checksum).
#[inline]
pub(crate) fn fold(sum: u32) -> u16 {
    // Two folds carry any `u32` into 16 bits: the first leaves at most 0x1fffe.
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    !(sum as u16)
}

/// The Ethernet/IPv4/UDP headers of one IPv4 link, built once: everything but the next hop's
/// MAC and the lengths (and the checksum they change) is the same for every packet sent on the
/// link, so a packet costs a copy of the template and three small writes instead of building
/// and summing the headers. Writes exactly what [`write`](fn@write) writes for the same link.
#[derive(Debug, Clone, Copy)]
pub struct V4Header {
    bytes: [u8; V4_HDR_LEN],
    /// Ones'-complement sum of the IPv4 header with total length and checksum zero, folded
    /// to 16 bits (so that adding a total length needs one fold only).
    sum: u32,
}

impl V4Header {
    /// All zero (a placeholder, never written to a frame).
    pub const EMPTY: V4Header = V4Header {
        bytes: [0; V4_HDR_LEN],
        sum: 0,
    };

    /// The headers from `src` (MAC `src_mac`) to `dst`.
    pub fn new(src_mac: [u8; 6], src: std::net::SocketAddrV4, dst: std::net::SocketAddrV4) -> Self {
        let mut bytes = [0u8; V4_HDR_LEN];
        let s = SocketAddr::V4(src);
        let d = SocketAddr::V4(dst);
        // The generic writer on an empty payload gives every constant field.
        let written = write(&mut bytes, src_mac, [0; 6], &s, &d, 0);
        debug_assert!(written);
        let ip = &mut bytes[ETH_LEN..ETH_LEN + field::ipv4::HEADER_LEN];
        ip[field::ipv4::TOTAL_LEN].fill(0);
        ip[field::ipv4::CHECKSUM].fill(0);
        let sum = u32::from(!fold(sum16(0, ip)));
        V4Header { bytes, sum }
    }

    /// Writes the headers into `frame[..V4_HDR_LEN]` for a UDP payload of `payload_len` bytes
    /// that already follows them, with next-hop MAC `dst_mac`. `false` (nothing written) if
    /// the frame is too short or the payload too long for IPv4.
    #[inline]
    pub fn write(&self, frame: &mut [u8], dst_mac: [u8; 6], payload_len: usize) -> bool {
        self.to_next_hop(dst_mac).write_to(frame, payload_len)
    }

    /// The same headers with next-hop MAC `dst_mac` (kept per burst: a packet then costs
    /// one copy and the length fields, see [`V4Header::write_to`]).
    #[inline]
    pub fn to_next_hop(&self, dst_mac: [u8; 6]) -> V4Header {
        let mut h = *self;
        h.bytes[field::eth::DST].copy_from_slice(&dst_mac);
        h
    }

    /// Writes the headers as they are (next-hop MAC included, see [`V4Header::to_next_hop`])
    /// into `frame[..V4_HDR_LEN]` for a UDP payload of `payload_len` bytes that already
    /// follows them. `false` (nothing written) if the frame is too short or the payload too
    /// long for IPv4.
    #[inline(always)]
    pub fn write_to(&self, frame: &mut [u8], payload_len: usize) -> bool {
        const IP: usize = field::ipv4::HEADER_LEN;
        const UDP: usize = field::udp::HEADER_LEN;
        /// Where the IPv4 and UDP length fields and the IPv4 checksum are in the headers.
        const TOTAL_LEN: usize = ETH_LEN + field::ipv4::TOTAL_LEN.start;
        const CHECKSUM: usize = ETH_LEN + field::ipv4::CHECKSUM.start;
        const UDP_LEN: usize = ETH_LEN + IP + field::udp::LEN.start;
        let Some((h, payload)) = frame.split_first_chunk_mut::<V4_HDR_LEN>() else {
            return false;
        };
        // The generic writer's limit (it leaves room for an IPv6 header).
        if payload.len() < payload_len
            || payload_len + UDP > usize::from(u16::MAX) - field::ipv6::HEADER_LEN
        {
            return false;
        }
        let udp_len = (payload_len + UDP) as u16;
        let total = udp_len + IP as u16;
        *h = self.bytes;
        h[TOTAL_LEN..TOTAL_LEN + 2].copy_from_slice(&total.to_be_bytes());
        // At most 0x1fffe: one carry of the high half into the low one folds it (the carry
        // cannot carry again), the same checksum as `fold` on the whole sum.
        let sum = self.sum + u32::from(total);
        let checksum = !((sum + (sum >> 16)) as u16);
        h[CHECKSUM..CHECKSUM + 2].copy_from_slice(&checksum.to_be_bytes());
        h[UDP_LEN..UDP_LEN + 2].copy_from_slice(&udp_len.to_be_bytes());
        true
    }
}

/// Writes a UDP header with a zero checksum into `udp`.
#[inline]
fn write_udp(udp: &mut [u8], src: &SocketAddr, dst: &SocketAddr, udp_len: u16) {
    udp[field::udp::SRC_PORT].copy_from_slice(&src.port().to_be_bytes());
    udp[field::udp::DST_PORT].copy_from_slice(&dst.port().to_be_bytes());
    udp[field::udp::LEN].copy_from_slice(&udp_len.to_be_bytes());
    udp[field::udp::CHECKSUM].fill(0);
}

/// Writes Ethernet/IP/UDP headers into `frame[..header_len(dst)]` for a UDP payload of
/// `payload_len` bytes that already follows them. `src` and `dst` must be of the same family
/// (returns `false` otherwise). IPv4 gets its header checksum and UDP checksum 0 (allowed);
/// IPv6 gets the mandatory UDP checksum.
pub fn write(
    frame: &mut [u8],
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: &SocketAddr,
    dst: &SocketAddr,
    payload_len: usize,
) -> bool {
    let hl = header_len(dst);
    if frame.len() < hl + payload_len
        || payload_len + field::udp::HEADER_LEN > usize::from(u16::MAX) - field::ipv6::HEADER_LEN
    {
        return false;
    }
    frame[field::eth::DST].copy_from_slice(&dst_mac);
    frame[field::eth::SRC].copy_from_slice(&src_mac);
    let udp_len = (payload_len + field::udp::HEADER_LEN) as u16;
    match (src.ip(), dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            use field::ipv4;
            frame[field::eth::ETHERTYPE].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
            let ip = &mut frame[ETH_LEN..ETH_LEN + ipv4::HEADER_LEN];
            ip[ipv4::VER_IHL] = 0x45; // version 4, 5 words
            ip[ipv4::TOS] = 0;
            let total = udp_len + ipv4::HEADER_LEN as u16;
            ip[ipv4::TOTAL_LEN].copy_from_slice(&total.to_be_bytes());
            ip[ipv4::IDENT].fill(0);
            ip[ipv4::FLAGS_FRAG].copy_from_slice(&ipv4::DONT_FRAGMENT.to_be_bytes());
            ip[ipv4::TTL] = DEFAULT_TTL;
            ip[ipv4::PROTOCOL] = PROTO_UDP;
            ip[ipv4::CHECKSUM].fill(0);
            ip[ipv4::SRC].copy_from_slice(&s.octets());
            ip[ipv4::DST].copy_from_slice(&d.octets());
            let c = fold(sum16(0, ip));
            ip[ipv4::CHECKSUM].copy_from_slice(&c.to_be_bytes());
            let l4 = ETH_LEN + ipv4::HEADER_LEN;
            write_udp(
                &mut frame[l4..l4 + field::udp::HEADER_LEN],
                src,
                dst,
                udp_len,
            );
            true
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            use field::ipv6;
            frame[field::eth::ETHERTYPE].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
            let ip = &mut frame[ETH_LEN..ETH_LEN + ipv6::HEADER_LEN];
            ip[ipv6::VER_TC_FLOW].copy_from_slice(&[0x60, 0, 0, 0]); // version 6
            ip[ipv6::PAYLOAD_LEN].copy_from_slice(&udp_len.to_be_bytes());
            ip[ipv6::NEXT_HEADER] = PROTO_UDP;
            ip[ipv6::HOP_LIMIT] = DEFAULT_TTL;
            ip[ipv6::SRC].copy_from_slice(&s.octets());
            ip[ipv6::DST].copy_from_slice(&d.octets());
            let l4 = ETH_LEN + ipv6::HEADER_LEN;
            write_udp(
                &mut frame[l4..l4 + field::udp::HEADER_LEN],
                src,
                dst,
                udp_len,
            );
            // The checksum over the pseudo header (RFC 8200 section 8.1) and the datagram.
            let mut sum = sum16(0, &s.octets());
            sum = sum16(sum, &d.octets());
            sum += u32::from(udp_len) + u32::from(PROTO_UDP);
            sum = sum16(sum, &frame[l4..l4 + usize::from(udp_len)]);
            let mut c = fold(sum);
            if c == 0 {
                c = 0xffff; // 0 means "no checksum", which IPv6 does not allow
            }
            frame[l4 + field::udp::CHECKSUM.start..l4 + field::udp::CHECKSUM.end]
                .copy_from_slice(&c.to_be_bytes());
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path's destination and a frame to it from 192.0.2.2 with a 40-byte payload.
    fn good_v4_frame() -> (std::net::SocketAddrV4, Vec<u8>) {
        let dst: std::net::SocketAddrV4 = "192.0.2.1:50000".parse().unwrap();
        let src: SocketAddr = "192.0.2.2:50000".parse().unwrap();
        let mut good = vec![0xab; V4_HDR_LEN + 40];
        assert!(write(
            &mut good,
            [2; 6],
            [4; 6],
            &src,
            &SocketAddr::V4(dst),
            40
        ));
        (dst, good)
    }

    #[test]
    fn the_ipv4_fast_path_says_what_parse_says() {
        let (dst, good) = good_v4_frame();
        let key = V4Key::new(dst, 7u8);
        // (byte, value) changes of the frame, each alone.
        let changes: [(usize, u8); 12] = [
            (12, 0x86),           // EtherType
            (ETH_LEN, 0x46),      // IHL with options
            (ETH_LEN, 0x55),      // version
            (ETH_LEN + 2, 0xff),  // total length past the frame
            (ETH_LEN + 3, 27),    // total length short of the UDP header
            (ETH_LEN + 6, 0x20),  // more fragments
            (ETH_LEN + 7, 1),     // fragment offset
            (ETH_LEN + 9, 6),     // TCP
            (ETH_LEN + 19, 9),    // another address
            (ETH_LEN + 23, 1),    // another port
            (ETH_LEN + 25, 7),    // UDP length short of its header
            (ETH_LEN + 25, 0xff), // UDP length past the IP packet
        ];
        let want = |f: &[u8]| {
            parse(f)
                .ok()
                .filter(|r| r.dst == SocketAddr::V4(dst))
                .map(|r| (r.offset, r.len))
        };
        assert_eq!(key.payload(&good), Some((V4_HDR_LEN, 40)));
        assert_eq!(key.payload(&good), want(&good));
        for (i, v) in changes {
            let mut f = good.clone();
            f[i] = v;
            assert_eq!(key.payload(&f), want(&f), "byte {i} = {v:#x}");
        }
        // Longer frames (Ethernet padding) and truncated ones.
        let mut padded = good.clone();
        padded.extend_from_slice(&[0; 6]);
        assert_eq!(key.payload(&padded), want(&padded));
        for n in [0, 14, 33, 41, V4_HDR_LEN + 39] {
            assert_eq!(key.payload(&good[..n]), None, "{n} bytes");
        }
    }

    #[test]
    fn vlan_tags_come_off_and_go_on() {
        let src: SocketAddr = "10.0.0.1:50000".parse().unwrap();
        let dst: SocketAddr = "10.0.0.2:50000".parse().unwrap();
        let payload = [7u8; 20];
        let mut plain = vec![0u8; V4_HDR_LEN + payload.len()];
        assert!(write(&mut plain, [1; 6], [2; 6], &src, &dst, payload.len()));
        plain[V4_HDR_LEN..].copy_from_slice(&payload);
        assert_eq!(vlan_id(&plain), None);
        // Tag: 4 free bytes in front, then the frame.
        let mut tagged = vec![0u8; VLAN_TAG_LEN];
        tagged.extend_from_slice(&plain);
        assert!(tag_in_place(&mut tagged, 0x1064)); // only the 12 VLAN ID bits are used
        assert_eq!(&tagged[..12], &plain[..12], "MACs first");
        assert_eq!(&tagged[12..16], &[0x81, 0x00, 0x00, 0x64]);
        assert_eq!(&tagged[16..], &plain[12..]);
        assert_eq!(vlan_id(&tagged), Some(100));
        // The tagged frame parses with its offsets, the same addresses and payload.
        let r = parse_tagged(&tagged).unwrap();
        assert_eq!((r.src, r.dst, r.len), (src, dst, payload.len()));
        assert_eq!(&tagged[r.offset..r.offset + r.len], &payload);
        assert_eq!(parse_tagged(&plain), parse(&plain));
        assert_eq!(
            parse(&tagged),
            Err(NotScion::OtherEtherType),
            "plain parse refuses tags"
        );
        // Untag: what follows the first 4 bytes is the untagged frame again.
        assert!(untag_in_place(&mut tagged));
        assert_eq!(&tagged[VLAN_TAG_LEN..], &plain[..]);
        // Short frames are refused, not indexed out of bounds.
        assert!(!untag_in_place(&mut [0u8; 17]));
        assert!(!tag_in_place(&mut [0u8; 17], 5));
        assert_eq!(vlan_id(&[0x81; 15]), None);
        assert!(parse_tagged(&[0u8; 3]).is_err());
    }

    /// The IPv4 fast path's checks one field at a time (the word-wise comparison of
    /// [`V4Key::payload`] must say the same).
    fn payload_by_fields(ip4: [u8; 4], port: u16, frame: &[u8]) -> Option<(usize, usize)> {
        const IP: usize = field::ipv4::HEADER_LEN;
        const UDP: usize = field::udp::HEADER_LEN;
        let h = frame.get(..V4_HDR_LEN)?;
        let ip = &h[ETH_LEN..ETH_LEN + IP];
        let udp = &h[ETH_LEN + IP..];
        let total = usize::from(be16(ip, field::ipv4::TOTAL_LEN.start));
        let udp_len = usize::from(be16(udp, field::udp::LEN.start));
        let ok = be16(h, field::eth::ETHERTYPE.start) == ETHERTYPE_IPV4
            && ip[field::ipv4::VER_IHL] == IPV4_NO_OPTIONS
            && ip[field::ipv4::PROTOCOL] == PROTO_UDP
            && be16(ip, field::ipv4::FLAGS_FRAG.start) & field::ipv4::FRAGMENT_MASK == 0
            && ip[field::ipv4::DST] == ip4
            && be16(udp, field::udp::DST_PORT.start) == port
            && total <= frame.len() - ETH_LEN
            && udp_len >= UDP
            && udp_len + IP <= total;
        ok.then(|| (V4_HDR_LEN, udp_len - UDP))
    }

    #[test]
    fn the_ipv4_fast_path_checks_each_field_as_it_should() {
        let (dst, good) = good_v4_frame();
        let key = V4Key::new(dst, ());
        let fields = |f: &[u8]| payload_by_fields(dst.ip().octets(), dst.port(), f);
        assert_eq!(key.payload(&good), Some((V4_HDR_LEN, 40)));
        // Every header byte set to every value, alone.
        for i in 0..V4_HDR_LEN {
            for v in 0..=u8::MAX {
                let mut f = good.clone();
                f[i] = v;
                assert_eq!(key.payload(&f), fields(&f), "byte {i} = {v:#x}");
            }
        }
    }

    #[test]
    fn v4_template_checksums_agree_for_every_length() {
        let most = usize::from(u16::MAX) - field::ipv6::HEADER_LEN - field::udp::HEADER_LEN;
        let (mut a, mut b) = (vec![0u8; V4_HDR_LEN + most], vec![0u8; V4_HDR_LEN + most]);
        // Addresses whose sums are small, middling and close to carrying.
        for (src, dst) in [
            ("0.0.0.1:1", "0.0.0.2:2"),
            ("10.1.0.1:50000", "192.168.255.254:30042"),
            ("255.255.255.255:65535", "255.255.255.254:65535"),
        ] {
            let (s, d): (SocketAddr, SocketAddr) = (src.parse().unwrap(), dst.parse().unwrap());
            let (SocketAddr::V4(s4), SocketAddr::V4(d4)) = (s, d) else {
                unreachable!("IPv4")
            };
            let t = V4Header::new([2; 6], s4, d4).to_next_hop([4; 6]);
            for len in 0..=most {
                let n = V4_HDR_LEN + len;
                assert!(write(&mut a[..n], [2; 6], [4; 6], &s, &d, len));
                assert!(t.write_to(&mut b[..n], len));
                assert_eq!(a[..V4_HDR_LEN], b[..V4_HDR_LEN], "{src} {dst} {len}");
            }
        }
    }

    #[test]
    fn v4_template_writes_what_the_generic_writer_writes() {
        let src: std::net::SocketAddrV4 = "10.1.0.1:50000".parse().unwrap();
        let dst: std::net::SocketAddrV4 = "192.168.255.254:30042".parse().unwrap();
        let t = V4Header::new([2, 0, 0, 0, 0, 1], src, dst);
        // Lengths whose checksums carry differently, up to the largest IPv4 payload.
        for len in [0usize, 1, 136, 1000, 1472, 0x7fff, 65535 - 48] {
            let mut a = vec![0xa5u8; V4_HDR_LEN + len];
            let mut b = a.clone();
            let (s, d) = (SocketAddr::V4(src), SocketAddr::V4(dst));
            assert!(write(
                &mut a,
                [2, 0, 0, 0, 0, 1],
                [9, 8, 7, 6, 5, 4],
                &s,
                &d,
                len
            ));
            assert!(t.write(&mut b, [9, 8, 7, 6, 5, 4], len));
            assert_eq!(a[..V4_HDR_LEN], b[..V4_HDR_LEN], "payload {len}");
            assert_eq!(
                fold(sum16(0, &b[ETH_LEN..ETH_LEN + 20])),
                0,
                "checksum verifies"
            );
            let r = parse(&b).unwrap();
            assert_eq!((r.src, r.dst, r.len), (s, d, len));
        }
        // Too long or too short: nothing written.
        let mut big = vec![0u8; V4_HDR_LEN + 65535 - 47];
        assert!(!t.write(&mut big, [1; 6], 65535 - 47));
        assert!(big.iter().all(|&x| x == 0));
        let mut short = vec![0u8; V4_HDR_LEN + 9];
        assert!(!t.write(&mut short, [1; 6], 10));
        assert!(short.iter().all(|&x| x == 0));
    }

    fn roundtrip(src: &str, dst: &str) {
        let (src, dst): (SocketAddr, SocketAddr) = (src.parse().unwrap(), dst.parse().unwrap());
        let payload: Vec<u8> = (0..77u8).collect();
        let hl = header_len(&dst);
        let mut frame = vec![0u8; hl + payload.len()];
        frame[hl..].copy_from_slice(&payload);
        assert!(write(&mut frame, [1; 6], [2; 6], &src, &dst, payload.len()));
        let r = parse(&frame).expect("parses");
        assert_eq!(r.offset, hl);
        assert_eq!(r.len, payload.len());
        assert_eq!((r.src, r.dst, r.eth_src), (src, dst, [1; 6]));
        assert_eq!(&frame[0..6], &[2; 6]);
        // Checksums verify: the ones'-complement sum over the header (IPv4) or pseudo header
        // plus segment (IPv6) folds to 0.
        match (src.ip(), dst.ip()) {
            (IpAddr::V4(_), _) => assert_eq!(fold(sum16(0, &frame[ETH_LEN..ETH_LEN + 20])), 0),
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                let l4 = ETH_LEN + 40;
                let mut sum = sum16(sum16(0, &s.octets()), &d.octets());
                sum += (payload.len() as u32 + 8) + 17;
                sum = sum16(sum, &frame[l4..]);
                assert_eq!(fold(sum), 0);
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn write_then_parse() {
        roundtrip("192.0.2.1:50000", "198.51.100.7:30041");
        roundtrip("[2001:db8::1]:50000", "[2001:db8::2]:31000");
    }

    #[test]
    fn arp_requests_for_own_addresses_are_answered() {
        let mine = Ipv4Addr::new(10, 0, 0, 1);
        let mut f = vec![0u8; 60];
        f[0..6].copy_from_slice(&[0xff; 6]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
        f[12..14].copy_from_slice(&ETHERTYPE_ARP.to_be_bytes());
        let a = &mut f[ETH_LEN..ETH_LEN + 28];
        a[0..8].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
        a[8..14].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
        a[14..18].copy_from_slice(&[10, 0, 0, 9]);
        a[24..28].copy_from_slice(&mine.octets());
        let req = f.clone();
        let me = [2, 0, 0, 0, 0, 1];
        assert!(!arp_reply_in_place(&mut f, me, |ip| ip == Ipv4Addr::new(10, 0, 0, 2)));
        assert_eq!(f, req, "not ours: untouched");
        assert!(arp_reply_in_place(&mut f, me, |ip| ip == mine));
        assert_eq!(&f[0..6], &[2, 0, 0, 0, 0, 9]);
        assert_eq!(&f[6..12], &me);
        let a = &f[ETH_LEN..ETH_LEN + 28];
        assert_eq!(&a[6..8], &[0, 2], "reply");
        assert_eq!(&a[8..14], &me);
        assert_eq!(&a[14..18], &mine.octets());
        assert_eq!(&a[18..24], &[2, 0, 0, 0, 0, 9]);
        assert_eq!(&a[24..28], &[10, 0, 0, 9]);
        // A reply is not answered again.
        let before = f.clone();
        assert!(!arp_reply_in_place(&mut f, me, |ip| ip == Ipv4Addr::new(10, 0, 0, 9)));
        assert_eq!(f, before);
        assert!(!arp_reply_in_place(&mut f[..30], me, |_| true));
        // The reply, seen by the requester, teaches it our MAC.
        assert_eq!(
            arp_sender_to_me(&f, |ip| ip == Ipv4Addr::new(10, 0, 0, 9)),
            Some((mine, me))
        );
        assert_eq!(
            arp_sender_to_me(&f, |ip| ip == mine),
            None,
            "not addressed to us"
        );
    }

    #[test]
    fn gratuitous_arp_names_its_sender_and_itself_as_target() {
        // "10.0.0.7 is at 02:..:77", broadcast by the neighbour after a failover.
        let mut f = [0u8; ARP_FRAME_LEN];
        let (ip, old_mac, new_mac) = (
            Ipv4Addr::new(10, 0, 0, 7),
            [2, 0, 0, 0, 0, 7],
            [2, 0, 0, 0, 0, 0x77],
        );
        assert!(write_arp_request(&mut f, old_mac, ip, ip));
        f[6..12].copy_from_slice(&new_mac);
        f[ETH_LEN + 8..ETH_LEN + 14].copy_from_slice(&new_mac);
        assert_eq!(arp_sender(&f), Some((ip, new_mac, ip)));
        assert_eq!(
            arp_sender_to_me(&f, |t| t == Ipv4Addr::new(10, 0, 0, 1)),
            None
        );
        // A broadcast sender MAC is never a neighbour's.
        f[ETH_LEN + 8] = 0xff;
        assert_eq!(arp_sender(&f), None);
        assert_eq!(arp_sender(&f[..40]), None);
    }

    #[test]
    fn arp_request_roundtrip() {
        let mut f = [0u8; ARP_FRAME_LEN];
        let me = [2, 0, 0, 0, 0, 1];
        let (my_ip, target) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 7));
        assert!(write_arp_request(&mut f, me, my_ip, target));
        assert!(!write_arp_request(&mut [0u8; 59], me, my_ip, target));
        // The target answers it...
        let peer = [2, 0, 0, 0, 0, 7];
        assert!(arp_reply_in_place(&mut f, peer, |ip| ip == target));
        // ...and we learn the target's MAC from the reply.
        assert_eq!(arp_sender_to_me(&f, |ip| ip == my_ip), Some((target, peer)));
    }

    #[test]
    fn rejects_other_frames() {
        let mut arp = vec![0u8; 60];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(parse(&arp), Err(NotScion::OtherEtherType));
        assert_eq!(parse(&arp[..10]), Err(NotScion::Truncated));
        let src: SocketAddr = "192.0.2.1:1".parse().unwrap();
        let dst: SocketAddr = "192.0.2.2:2".parse().unwrap();
        let mut f = vec![0u8; V4_HDR_LEN + 10];
        assert!(write(&mut f, [0; 6], [0; 6], &src, &dst, 10));
        f[ETH_LEN + 9] = 6; // TCP
        assert_eq!(parse(&f), Err(NotScion::NotUdp));
        f[ETH_LEN + 9] = 17;
        assert!(parse(&f).is_ok());
        assert_eq!(parse(&f[..f.len() - 1]), Err(NotScion::Truncated));
        let v6: SocketAddr = "[2001:db8::1]:1".parse().unwrap();
        assert!(
            !write(&mut f, [0; 6], [0; 6], &src, &v6, 10),
            "mixed families"
        );
    }
}
