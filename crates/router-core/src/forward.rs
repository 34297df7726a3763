//! The routing decision for a processed packet: by scion-dp's disposition, which port it
//! leaves by, with which underlay addresses and next-hop MAC, and the underlay rewrite in
//! front of the SCION packet. A next hop without a MAC (or with a stale one) is to be asked
//! for (see [`crate::resolver`]). Works on the frame bytes; the I/O shell resizes its buffer
//! between the decision and the rewrite.

use std::net::{IpAddr, SocketAddr};

use scion_dp::{Disposition, Ingress};

use crate::classify::Classified;
use crate::counters::IoCounters;
use crate::neighbor::Learned;
use crate::tables::Tables;
use crate::underlay;

/// What the worker knows of one packet of a burst: where the SCION packet is in its frame,
/// its ingress, and scion-dp's decision (the packet-side half of scion-dp's `BurstPacket`).
#[derive(Debug, Default, Clone)]
pub struct PacketMeta {
    /// Offset of the SCION packet in the frame as received.
    pub offset: usize,
    /// Length of the SCION packet as received.
    pub len: usize,
    /// The link it came by.
    pub ingress: Option<Ingress>,
    /// The egress interface of a packet forwarded on an external link (the common decision,
    /// kept apart from `disposition`: see [`PacketMeta::set_disposition`]).
    forward: Option<u16>,
    /// Any other decision.
    disposition: Option<Disposition>,
}

impl PacketMeta {
    /// Resets the metadata for a newly classified packet (no decision yet).
    #[inline]
    pub fn receive(&mut self, c: &Classified) {
        self.offset = c.offset;
        self.len = c.len;
        self.ingress = Some(c.ingress);
        self.forward = None;
        self.disposition = None;
    }

    /// The packet's ingress (internal if unknown).
    #[inline]
    pub fn ingress(&self) -> Ingress {
        self.ingress.unwrap_or(Ingress::Internal)
    }

    /// The decision other than forwarding on an external link, for scion-dp to read or set.
    #[inline]
    pub fn disposition_mut(&mut self) -> &mut Option<Disposition> {
        &mut self.disposition
    }

    /// Records scion-dp's decision: a forward on an external link in its compact field (no
    /// copy of the large [`Disposition`] on the common path), any other in `disposition`.
    #[inline(always)]
    pub fn set_disposition(&mut self, d: Disposition) {
        if let Disposition::Forward { ifid } = d {
            self.forward = Some(ifid);
            self.disposition = None;
        } else {
            self.forward = None;
            self.disposition = Some(d);
        }
    }

    /// The egress interface of a packet forwarded on an external link, however recorded.
    #[inline]
    fn forward_ifid(&self) -> Option<u16> {
        match (self.forward, &self.disposition) {
            (Some(ifid), _) => Some(ifid),
            (None, Some(Disposition::Forward { ifid })) => Some(*ifid),
            _ => None,
        }
    }
}

/// Entries of [`EgressMacs`].
const EGRESS_MACS: usize = 4;

/// The next-hop MACs of the last few egress interfaces looked up in one burst: packets of a
/// burst mostly leave by a few links, and each lookup would search the static and learned
/// neighbours again. Valid for one burst only (what the tables said then).
#[derive(Debug, Default)]
pub struct EgressMacs {
    ifids: [u16; EGRESS_MACS],
    macs: [Option<Learned>; EGRESS_MACS],
    /// Entries filled.
    n: usize,
    /// Lookups so far (the next entry to replace once all are filled).
    next: usize,
    /// The last fast-path answer of [`forward_v4`], valid for the burst as the rest
    /// (consecutive packets of a burst mostly leave by the same link).
    last: LastV4,
}

/// A fast-path answer of [`forward_v4`]: the link's headers with the next hop's MAC in.
#[derive(Debug, Clone, Copy)]
struct LastV4 {
    /// The interface, or [`LastV4::NONE`] (no answer yet: no `u16` is that).
    ifid: u32,
    port: usize,
    header: underlay::V4Header,
}

impl LastV4 {
    /// The interface of no answer.
    const NONE: u32 = u32::MAX;
}

impl Default for LastV4 {
    fn default() -> Self {
        LastV4 {
            ifid: Self::NONE,
            port: 0,
            header: underlay::V4Header::EMPTY,
        }
    }
}

impl EgressMacs {
    /// The MAC for `ifid`, from `lookup` the first time in this burst. The hit is inlined
    /// into the packet loop, the first lookup of a burst is not.
    #[inline(always)]
    pub fn get_or(
        &mut self,
        ifid: u16,
        lookup: impl FnOnce() -> Option<Learned>,
    ) -> Option<Learned> {
        match self.ifids[..self.n].iter().position(|&i| i == ifid) {
            Some(k) => self.macs[k],
            None => self.insert(ifid, lookup),
        }
    }

    /// Looks `ifid` up and keeps the answer.
    #[cold]
    #[inline(never)]
    fn insert(&mut self, ifid: u16, lookup: impl FnOnce() -> Option<Learned>) -> Option<Learned> {
        let mac = lookup();
        // Round robin once full (a burst to more links than that looks some up again).
        let k = self.next % EGRESS_MACS;
        self.next += 1;
        self.ifids[k] = ifid;
        self.macs[k] = mac;
        self.n = self.next.min(EGRESS_MACS);
        mac
    }
}

/// A next hop to ask for its MAC (ARP or NDP): from the router's address `me` on `port`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask {
    /// The port to ask on.
    pub port: usize,
    /// The router's address the request comes from.
    pub me: IpAddr,
    /// The next hop asked for.
    pub target: IpAddr,
}

/// How a packet leaves: its port and the underlay headers to write in front of the SCION
/// packet. The addresses stay references into the tables, the decision or the caller's
/// scratch: copying the large `SocketAddr` values and reading them back piecewise stalled on
/// store forwarding.
#[derive(Debug, Clone, Copy)]
pub struct Egress<'a> {
    /// The egress port index.
    pub port: usize,
    /// Length of the underlay headers to write.
    pub header_len: usize,
    /// Length of the SCION packet after them.
    pub len: usize,
    /// The egress port's MAC.
    src_mac: [u8; 6],
    /// The next hop's MAC.
    dst_mac: [u8; 6],
    src: &'a SocketAddr,
    dst: &'a SocketAddr,
    /// The link's header template, for an IPv4 link.
    v4: Option<&'a underlay::V4Header>,
}

impl Egress<'_> {
    /// Length of the frame to send (headers and SCION packet).
    #[inline]
    pub fn frame_len(&self) -> usize {
        self.header_len + self.len
    }

    /// Writes the underlay headers into `frame[..header_len]` in front of the SCION packet
    /// that follows them; `false` if `frame` is too short.
    #[inline]
    pub fn write(&self, frame: &mut [u8]) -> bool {
        match self.v4 {
            // A link's headers from its template (the port's MAC is the template's source).
            Some(t) => t.write(frame, self.dst_mac, self.len),
            None => underlay::write(
                frame,
                self.src_mac,
                self.dst_mac,
                self.src,
                self.dst,
                self.len,
            ),
        }
    }

    /// Rewrites a frame held in `buf` from `start`, whose SCION packet is at `start + offset`:
    /// the new headers go right in front of the SCION packet (into head room if they are
    /// longer). Returns the range of the frame to send, `None` if `buf` has no room.
    #[inline]
    pub fn rewrite_in(
        &self,
        buf: &mut [u8],
        start: usize,
        offset: usize,
    ) -> Option<std::ops::Range<usize>> {
        let scion = start.checked_add(offset)?;
        let from = scion.checked_sub(self.header_len)?;
        let to = scion.checked_add(self.len)?;
        let frame = buf.get_mut(from..to)?;
        self.write(frame).then_some(from..to)
    }
}

/// The routing decision for one packet.
#[derive(Debug, Clone, Copy)]
pub struct Route<'a> {
    /// How it leaves; `None`: it is dropped (counted, unless scion-dp dropped or consumed it).
    pub send: Option<Egress<'a>>,
    /// A next hop to ask for its MAC: unknown (the packet is dropped) or stale (still used).
    pub ask: Option<Ask>,
}

impl Route<'_> {
    const DROP: Self = Route {
        send: None,
        ask: None,
    };
}

/// The common case of [`route`]: a packet forwarded on an IPv4 link (headers from its
/// template) whose next hop's MAC is known and fresh, or the port's default. Its egress port
/// and the link's headers to that MAC (kept in `macs` for the rest of the burst); `None`:
/// [`route`] decides (same `macs`: no second lookup).
#[inline(always)]
pub fn forward_v4<'m>(
    tables: &Tables,
    meta: &PacketMeta,
    now_s: u32,
    macs: &'m mut EgressMacs,
) -> Option<(usize, &'m underlay::V4Header)> {
    let ifid = meta.forward_ifid()?;
    if macs.last.ifid == u32::from(ifid) {
        return Some((macs.last.port, &macs.last.header));
    }
    forward_v4_first(tables, ifid, now_s, macs)
}

/// [`forward_v4`] for an interface other than the last one: looks the link and its next
/// hop up and keeps the answer.
#[inline(never)]
fn forward_v4_first<'m>(
    tables: &Tables,
    ifid: u16,
    now_s: u32,
    macs: &'m mut EgressMacs,
) -> Option<(usize, &'m underlay::V4Header)> {
    let e = tables.egress.get(usize::from(ifid))?.as_ref()?;
    let t = e.v4.as_ref()?;
    // As `route`: the port must be known (its MAC is the template's source).
    if e.port >= tables.ports.len() {
        return None;
    }
    let mac = match e.mac {
        Some(mac) => mac,
        None => match macs.get_or(ifid, || tables.neighbor(e.port, &e.remote.ip(), now_s)) {
            Some(l) if !l.stale => l.mac,
            // A stale MAC is used while asked for again: `route` does both.
            Some(_) => return None,
            // As `route`: the port's default next hop, asking for nothing.
            None => tables.default_macs.get(e.port).copied().flatten()?,
        },
    };
    macs.last = LastV4 {
        ifid: u32::from(ifid),
        port: e.port,
        header: t.to_next_hop(mac),
    };
    Some((macs.last.port, &macs.last.header))
}

/// Decides where the packet `meta` (received on `in_port`, frame `frame` as processed) goes at
/// `now_s` (Unix seconds), counting what cannot be routed in `io`. `macs` holds the burst's
/// egress MAC lookups; `arrived` is scratch for the headers a reply goes back by.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn route<'a>(
    tables: &'a Tables,
    in_port: usize,
    now_s: u32,
    meta: &'a PacketMeta,
    frame: &[u8],
    macs: &mut EgressMacs,
    arrived: &'a mut Option<underlay::Received>,
    io: &mut IoCounters,
) -> Route<'a> {
    // (egress port, src, dst, dst mac, SCION length, template).
    #[allow(clippy::type_complexity)]
    let (port, src, dst, mac, len, v4): (
        usize,
        &SocketAddr,
        &SocketAddr,
        _,
        usize,
        Option<&underlay::V4Header>,
    ) = if let Some(ifid) = meta.forward_ifid() {
        let Some(e) = tables
            .egress
            .get(usize::from(ifid))
            .and_then(Option::as_ref)
        else {
            io.unroutable += 1;
            return Route::DROP;
        };
        let mac = match e.mac {
            Some(mac) => Some(Learned { mac, stale: false }),
            None => macs.get_or(ifid, || tables.neighbor(e.port, &e.remote.ip(), now_s)),
        };
        (e.port, &e.local, &e.remote, mac, meta.len, e.v4.as_ref())
    } else {
        match &meta.disposition {
            Some(Disposition::Sibling { addr, .. } | Disposition::Deliver { addr }) => {
                let port = tables.internal_port;
                let mac = tables.neighbor(port, &addr.ip(), now_s);
                (port, &tables.internal_addr, addr, mac, meta.len, None)
            }
            Some(Disposition::Reply { len, .. }) => {
                // The frame still starts with the headers it arrived with (only the SCION
                // packet after them was rewritten): the reply goes back the way they came.
                let Ok(r) = underlay::parse(frame) else {
                    io.unroutable += 1;
                    return Route::DROP;
                };
                let r = arrived.insert(r);
                let mac = Learned {
                    mac: r.eth_src,
                    stale: false,
                };
                (in_port, &r.dst, &r.src, Some(mac), *len, None)
            }
            _ => return Route::DROP,
        }
    };
    let ask = Ask {
        port,
        me: src.ip(),
        target: dst.ip(),
    };
    let (mac, ask) = match mac {
        // A stale entry is still used while the neighbour is asked again.
        Some(l) => (l.mac, l.stale.then_some(ask)),
        None => match tables.default_macs.get(port).copied().flatten() {
            Some(mac) => (mac, None),
            None => {
                io.no_next_hop_mac += 1;
                return Route {
                    send: None,
                    ask: Some(ask),
                };
            }
        },
    };
    // Source address of the reply/forward must match the destination's family; a router
    // address of the other family (e.g. IPv6 internal, IPv4 link) cannot be used.
    let Some(src_mac) = tables
        .ports
        .get(port)
        .copied()
        .filter(|_| src.is_ipv4() == dst.is_ipv4())
    else {
        io.unroutable += 1;
        return Route { send: None, ask };
    };
    Route {
        send: Some(Egress {
            port,
            header_len: underlay::header_len(dst),
            len,
            src_mac,
            dst_mac: mac,
            src,
            dst,
            v4,
        }),
        ask,
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::tables::test_tables::*;
    use crate::underlay::{V4_HDR_LEN, V6_HDR_LEN};

    const NOW: u32 = 1_000;
    const PAYLOAD: usize = 64;
    const NEXT_HOP: [u8; 6] = [2, 0, 0, 0, 0, 0x77];

    fn meta(offset: usize, d: Disposition) -> PacketMeta {
        let mut m = PacketMeta::default();
        m.receive(&Classified {
            offset,
            len: PAYLOAD,
            ingress: Ingress::Internal,
        });
        m.set_disposition(d);
        m
    }

    fn decide<'a>(
        t: &'a Tables,
        m: &'a PacketMeta,
        frame: &[u8],
        arrived: &'a mut Option<underlay::Received>,
        io: &mut IoCounters,
    ) -> Route<'a> {
        route(t, 0, NOW, m, frame, &mut EgressMacs::default(), arrived, io)
    }

    /// An internal frame (IPv4) carrying a SCION packet of [`PAYLOAD`] bytes of 0xab.
    fn internal_frame() -> Vec<u8> {
        let mut f = vec![0xab; V4_HDR_LEN + PAYLOAD];
        let from: SocketAddr = "10.0.0.7:30042".parse().unwrap();
        assert!(underlay::write(
            &mut f,
            [2, 0, 0, 0, 0, 7],
            port_mac(0),
            &from,
            &internal(),
            PAYLOAD
        ));
        f
    }

    #[test]
    fn forwarding_rewrites_the_underlay_bytes_of_the_link() {
        let t = tables(Some(NEXT_HOP));
        let m = meta(V4_HDR_LEN, Disposition::Forward { ifid: 1 });
        let mut io = IoCounters::default();
        let mut scratch = None;
        let mut buf = internal_frame();
        let r = decide(&t, &m, &buf.clone(), &mut scratch, &mut io);
        assert_eq!(r.ask, None);
        let e = r.send.expect("sent");
        assert_eq!(
            (e.port, e.header_len, e.frame_len()),
            (1, V4_HDR_LEN, V4_HDR_LEN + PAYLOAD)
        );
        let range = e.rewrite_in(&mut buf, 0, V4_HDR_LEN).unwrap();
        assert_eq!(range, 0..V4_HDR_LEN + PAYLOAD);
        // Exactly the bytes the generic writer gives for the link.
        let (l1, r1) = link1();
        let mut want = vec![0xab; V4_HDR_LEN + PAYLOAD];
        assert!(underlay::write(
            &mut want,
            port_mac(1),
            NEXT_HOP,
            &l1,
            &r1,
            PAYLOAD
        ));
        assert_eq!(buf, want);
        let back = underlay::parse(&buf).unwrap();
        assert_eq!((back.src, back.dst, back.len), (l1, r1, PAYLOAD));
        assert_eq!(io, IoCounters::default());
    }

    #[test]
    fn the_ipv4_fast_path_agrees_with_route() {
        let m = meta(V4_HDR_LEN, Disposition::Forward { ifid: 1 });
        let frame = internal_frame();
        let peer = match link1().1.ip() {
            IpAddr::V4(a) => a,
            IpAddr::V6(_) => unreachable!("IPv4 link"),
        };
        let fresh = |t: &mut Tables| assert!(t.learned[1].v4.learn(peer, NEXT_HOP, NOW));
        let stale = |t: &mut Tables| assert!(t.learned[1].v4.learn(peer, NEXT_HOP, NOW - 100));
        let default = |t: &mut Tables| t.default_macs[1] = Some(NEXT_HOP);
        /// (name, interface 1's static MAC, what the tables learned).
        type Case<'a> = (&'a str, Option<[u8; 6]>, &'a dyn Fn(&mut Tables));
        let cases: [Case<'_>; 5] = [
            ("static", Some(NEXT_HOP), &|_| {}),
            ("learned", None, &fresh),
            ("stale", None, &stale),
            ("default", None, &default),
            ("unknown", None, &|_| {}),
        ];
        for (name, neighbor1, setup) in cases {
            let mut t = tables(neighbor1);
            setup(&mut t);
            let mut macs = EgressMacs::default();
            let fast = forward_v4(&t, &m, NOW, &mut macs);
            let mut io = IoCounters::default();
            let mut scratch = None;
            let r = decide(&t, &m, &frame, &mut scratch, &mut io);
            match fast {
                Some((port, tpl)) => {
                    assert!(r.ask.is_none(), "{name}");
                    let e = r.send.expect(name);
                    let (mut a, mut b) = (frame.clone(), frame.clone());
                    assert!(e.write(&mut a) && tpl.write_to(&mut b, PAYLOAD), "{name}");
                    assert_eq!((port, a), (e.port, b), "{name}");
                }
                None => assert!(r.ask.is_some(), "{name}: left to route, which asks"),
            }
        }
    }

    #[test]
    fn a_longer_header_goes_into_head_room() {
        // IPv4 in, IPv6 link out: 20 more bytes of headers in front.
        let mut t = tables(None);
        t.neighbors.push((link2().1.ip(), NEXT_HOP));
        let m = meta(V4_HDR_LEN, Disposition::Forward { ifid: 2 });
        let head = V6_HDR_LEN - V4_HDR_LEN;
        let mut buf = vec![0u8; head];
        buf.extend_from_slice(&internal_frame());
        let mut scratch = None;
        let mut io = IoCounters::default();
        let e = decide(&t, &m, &buf[head..], &mut scratch, &mut io)
            .send
            .unwrap();
        assert_eq!(e.header_len, V6_HDR_LEN);
        let range = e.rewrite_in(&mut buf, head, V4_HDR_LEN).unwrap();
        assert_eq!(range, 0..V6_HDR_LEN + PAYLOAD);
        let back = underlay::parse(&buf[range]).unwrap();
        assert_eq!((back.src, back.dst), link2());
        assert!(
            buf[V6_HDR_LEN..].iter().all(|&b| b == 0xab),
            "SCION packet kept"
        );
        // Without the head room: refused.
        let mut short = internal_frame();
        assert_eq!(e.rewrite_in(&mut short, 0, V4_HDR_LEN), None);
    }

    #[test]
    fn unknown_next_hops_are_asked_for_and_stale_ones_used_while_asked() {
        let t = tables(None);
        let m = meta(V4_HDR_LEN, Disposition::Forward { ifid: 1 });
        let frame = internal_frame();
        let mut io = IoCounters::default();
        let mut scratch = None;
        let r = decide(&t, &m, &frame, &mut scratch, &mut io);
        let (l1, r1) = link1();
        let ask = Ask {
            port: 1,
            me: l1.ip(),
            target: r1.ip(),
        };
        assert!(r.send.is_none());
        assert_eq!(r.ask, Some(ask));
        assert_eq!(io.no_next_hop_mac, 1);
        // Learned long ago: stale, used and asked for again.
        let IpAddr::V4(next) = r1.ip() else {
            unreachable!()
        };
        let aging = crate::neighbor::Aging::default();
        assert!(
            t.learned[1]
                .v4
                .learn(next, NEXT_HOP, NOW - aging.refresh_s - 1)
        );
        let r = decide(&t, &m, &frame, &mut scratch, &mut io);
        assert_eq!(r.ask, Some(ask));
        assert!(r.send.is_some());
        // A port default MAC serves when nothing is known.
        let mut t = tables(None);
        t.default_macs[1] = Some(NEXT_HOP);
        let r = decide(&t, &m, &frame, &mut scratch, &mut io);
        assert_eq!((r.send.is_some(), r.ask), (true, None));
    }

    #[test]
    fn deliveries_and_replies_use_the_internal_port_and_the_arrival_headers() {
        let t = tables(None);
        let host: SocketAddr = "10.0.0.20:31000".parse().unwrap();
        assert!(
            t.learned[0]
                .v4
                .learn(Ipv4Addr::new(10, 0, 0, 20), NEXT_HOP, NOW)
        );
        let frame = internal_frame();
        let mut io = IoCounters::default();
        let mut scratch = None;
        let m = meta(V4_HDR_LEN, Disposition::Deliver { addr: host });
        let e = decide(&t, &m, &frame, &mut scratch, &mut io).send.unwrap();
        assert_eq!(e.port, t.internal_port);
        let mut buf = frame.clone();
        let range = e.rewrite_in(&mut buf, 0, V4_HDR_LEN).unwrap();
        let back = underlay::parse(&buf[range]).unwrap();
        assert_eq!((back.src, back.dst), (internal(), host));
        assert_eq!(&buf[0..6], &NEXT_HOP);
        // A reply goes back to where the packet came from, to the MAC it came from.
        let mut m = meta(
            V4_HDR_LEN,
            Disposition::Drop(scion_dp::DropReason::Malformed),
        );
        *m.disposition_mut() = Some(Disposition::Reply {
            len: PAYLOAD - 8,
            scmp: scion_dp::ScmpReason::NoRoute,
            pointer: 0,
        });
        let e = decide(&t, &m, &frame, &mut scratch, &mut io).send.unwrap();
        assert_eq!((e.port, e.len), (0, PAYLOAD - 8));
        let mut buf = frame.clone();
        let range = e.rewrite_in(&mut buf, 0, V4_HDR_LEN).unwrap();
        let back = underlay::parse(&buf[range]).unwrap();
        assert_eq!(back.dst, "10.0.0.7:30042".parse().unwrap());
        assert_eq!(&buf[0..6], &[2, 0, 0, 0, 0, 7]);
        assert_eq!(io, IoCounters::default());
    }

    #[test]
    fn what_cannot_be_routed_is_counted() {
        let t = tables(Some(NEXT_HOP));
        let frame = internal_frame();
        let mut io = IoCounters::default();
        let mut scratch = None;
        // No such interface.
        let m = meta(V4_HDR_LEN, Disposition::Forward { ifid: 5 });
        assert!(decide(&t, &m, &frame, &mut scratch, &mut io).send.is_none());
        assert_eq!(io.unroutable, 1);
        // An IPv6 host behind an IPv4 internal address.
        let host: SocketAddr = "[fd00::20]:31000".parse().unwrap();
        let mut t6 = tables(None);
        t6.neighbors.push((host.ip(), NEXT_HOP));
        let m = meta(V4_HDR_LEN, Disposition::Deliver { addr: host });
        assert!(
            decide(&t6, &m, &frame, &mut scratch, &mut io)
                .send
                .is_none()
        );
        assert_eq!(io.unroutable, 2);
        // Dropped by scion-dp, or nothing decided: not counted here.
        let m = meta(
            V4_HDR_LEN,
            Disposition::Drop(scion_dp::DropReason::Malformed),
        );
        assert!(decide(&t, &m, &frame, &mut scratch, &mut io).send.is_none());
        assert!(
            decide(&t, &PacketMeta::default(), &frame, &mut scratch, &mut io)
                .send
                .is_none()
        );
        assert_eq!(io.unroutable, 2);
    }

    #[test]
    fn each_interface_is_looked_up_once_per_burst_and_answers_stay_exact() {
        let mut c = EgressMacs::default();
        let mut asked = Vec::new();
        let mac = |i: u16| {
            Some(Learned {
                mac: [i as u8; 6],
                stale: i.is_multiple_of(2),
            })
        };
        // Six interfaces, some repeated: more than the cache holds.
        for ifid in [1u16, 2, 1, 3, 4, 2, 5, 1, 6, 6, 5] {
            let got = c.get_or(ifid, || {
                asked.push(ifid);
                mac(ifid)
            });
            assert_eq!(got, mac(ifid), "interface {ifid}");
        }
        // 1..4 fill it; 5 replaces 1, so 1 is asked again (replacing 2), then 6 replaces 3.
        assert_eq!(asked, vec![1, 2, 3, 4, 5, 1, 6]);
        // An unknown neighbour is remembered as unknown for the burst.
        let mut c = EgressMacs::default();
        assert_eq!(c.get_or(9, || None), None);
        assert_eq!(c.get_or(9, || mac(9)), None);
    }
}
