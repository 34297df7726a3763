//! Arbitrary Ethernet frames through the router's underlay handling: the SCION/UDP underlay
//! parser (plain and 802.1Q-tagged, tags removed and added back), ARP (learn, answer in place) and IPv6 neighbour discovery (parse, learn, answer in
//! place), plus neighbor solicitations written for fuzzed addresses. Checks: no panic; parsed
//! payloads lie inside the frame; an in-place answer keeps the frame length and parses back as
//! the answer to what was asked; a frame that is not answered is left untouched.
//!
//! Input: byte 0 = selector (bit 0: every address is the router's), the rest is the frame.
#![no_main]

use std::net::{Ipv4Addr, Ipv6Addr};

use libfuzzer_sys::fuzz_target;
use router_core::{ndp, underlay};

const MY_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const MY_V4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const MY_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 3, 0, 0, 0, 0, 0, 1);

fuzz_target!(|data: &[u8]| {
    let Some((&sel, frame)) = data.split_first() else {
        return;
    };
    let all = sel & 1 == 1;

    if let Ok(r) = underlay::parse(frame) {
        assert!(r.offset + r.len <= frame.len());
    }
    // 802.1Q: tagged parsing stays inside the frame, agrees with the plain parser on untagged
    // frames, and removing then re-adding a frame's own tag gives the frame back.
    if let Ok(r) = underlay::parse_tagged(frame) {
        assert!(r.offset + r.len <= frame.len());
    }
    if underlay::vlan_id(frame).is_none() {
        assert_eq!(underlay::parse_tagged(frame), underlay::parse(frame));
    } else if let Some(vid) = underlay::vlan_id(frame) {
        let mut f = frame.to_vec();
        assert!(underlay::untag_in_place(&mut f));
        let pcp_dei = frame[14] & 0xf0;
        assert!(underlay::tag_in_place(&mut f, vid));
        f[14] |= pcp_dei;
        assert_eq!(
            f, frame,
            "untag + tag is the identity (priority bits aside)"
        );
    }

    // ARP.
    let mine4 = |ip: Ipv4Addr| all || ip == MY_V4;
    if let Some((_, mac)) = underlay::arp_sender_to_me(frame, mine4) {
        assert_eq!(mac[0] & 1, 0, "multicast MACs are never learned");
    }
    let mut f = frame.to_vec();
    if underlay::arp_reply_in_place(&mut f, MY_MAC, mine4) {
        assert_eq!(f.len(), frame.len());
        let asker = Ipv4Addr::new(frame[28], frame[29], frame[30], frame[31]);
        let target = Ipv4Addr::new(frame[38], frame[39], frame[40], frame[41]);
        assert_eq!(
            underlay::arp_sender_to_me(&f, |ip| ip == asker),
            Some((target, MY_MAC))
        );
    } else {
        assert_eq!(f, frame, "not answered: untouched");
    }

    // NDP.
    let mine6 = |ip: Ipv6Addr| all || ip == MY_V6;
    let parsed = ndp::parse(frame);
    if let Ok(m) = parsed {
        assert!(m.len <= frame.len());
        if let Some((_, mac)) = m.neighbor_for(mine6) {
            assert_eq!(mac[0] & 1, 0, "multicast MACs are never learned");
        }
    }
    let mut f = frame.to_vec();
    if ndp::reply_in_place(&mut f, MY_MAC, mine6) {
        assert_eq!(f.len(), frame.len());
        let ns = parsed.expect("only valid solicitations are answered");
        let na = ndp::parse(&f).expect("the advertisement parses");
        assert_eq!(na.kind, ndp::Kind::Advertisement);
        assert_eq!((na.src, na.target), (ns.target, ns.target));
        assert_ne!(na.flags & ndp::FLAG_OVERRIDE, 0);
        if !ns.src.is_unspecified() {
            assert_eq!(na.dst, ns.src);
            if na.link_layer.is_some() {
                assert_eq!(
                    na.neighbor_for(|ip| ip == ns.src),
                    Some((ns.target, MY_MAC))
                );
            }
        }
    } else {
        assert_eq!(f, frame, "not answered: untouched");
    }

    // Solicitations for fuzzed addresses parse back unless the addresses are unusable.
    if frame.len() >= 32 {
        let me = Ipv6Addr::from(<[u8; 16]>::try_from(&frame[..16]).unwrap());
        let target = Ipv6Addr::from(<[u8; 16]>::try_from(&frame[16..32]).unwrap());
        let mut ns = [0u8; ndp::NS_FRAME_LEN];
        assert!(ndp::write_solicitation(&mut ns, MY_MAC, me, target));
        let usable = !me.is_multicast() && !me.is_unspecified() && !target.is_multicast();
        match ndp::parse(&ns) {
            Ok(m) => {
                assert!(usable);
                assert_eq!((m.src, m.target, m.link_layer), (me, target, Some(MY_MAC)));
                assert_eq!(m.dst, ndp::solicited_node(target));
            }
            Err(e) => assert!(!usable, "{e:?}"),
        }
    }
});
