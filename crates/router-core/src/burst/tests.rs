use std::net::SocketAddr;

use super::*;
use crate::tables::test_tables::*;
use crate::underlay::{V4_HDR_LEN, V6_HDR_LEN};

const NOW: u32 = 1_000;
const PAYLOAD: usize = 64;
const NEXT_HOP: [u8; 6] = [2, 0, 0, 0, 0, 0x77];

/// Drops BFD packets, allows every reply and records the asks.
#[derive(Default)]
struct Record {
    asks: Vec<Ask>,
}

impl Aside<MemRoom, MemBatch> for Record {
    fn bfd(&mut self, s: &mut Slot<MemRoom>, _: &mut IoCounters) {
        s.m = None;
    }
    fn allow_reply(&mut self) -> bool {
        true
    }
    fn ask(&mut self, _: &Tables, ask: Ask, _: &mut [MemBatch], _: &mut IoCounters) {
        self.asks.push(ask);
    }
}

fn frame(src: SocketAddr, dst: SocketAddr) -> MemFrame {
    let mut f = vec![0xab; underlay::header_len(&dst) + PAYLOAD];
    assert!(underlay::write(
        &mut f,
        [2, 0, 0, 0, 0, 9],
        port_mac(1),
        &src,
        &dst,
        PAYLOAD
    ));
    MemFrame::new(&f).unwrap()
}

fn batches() -> Vec<MemBatch> {
    (0..3)
        .map(|_| MemBatch {
            frames: Vec::new(),
            cap: 4,
        })
        .collect()
}

#[test]
fn a_burst_is_classified_routed_and_rewritten_into_its_egress_batches() {
    let t = tables(Some(NEXT_HOP));
    let (l1, r1) = link1();
    let elsewhere: SocketAddr = "192.0.2.77:50000".parse().unwrap();
    let rx = vec![frame(r1, l1), frame(r1, elsewhere), frame(r1, l1)];
    let mut slots: Vec<Slot<MemRoom>> = (0..4).map(|_| Slot::default()).collect();
    let mut out = batches();
    let mut io = IoCounters::default();
    let n = classify_burst(&t, 1, NOW, rx.into_iter(), &mut slots, &mut out, &mut io);
    assert_eq!((n, io.rx_frames, io.not_for_us), (2, 3, 1));
    // scion-dp's decisions: one back out by interface 1 (IPv4), one to interface 2 (IPv6,
    // its next hop unknown: asked for and dropped).
    slots[0].set_disposition(Disposition::Forward { ifid: 1 });
    slots[1].set_disposition(Disposition::Forward { ifid: 2 });
    let mut aside = Record::default();
    route_burst(&t, 1, NOW, &mut slots[..n], &mut out, &mut io, &mut aside);
    assert_eq!(out[1].frames.len(), 1);
    assert!(out[2].frames.is_empty());
    assert_eq!((io.no_next_hop_mac, aside.asks.len()), (1, 1));
    let back = underlay::parse(out[1].frames[0].data()).unwrap();
    assert_eq!((back.src, back.dst, back.len), (l1, r1, PAYLOAD));
    assert!(slots.iter().all(|s| s.m.is_none()));
}

#[test]
fn a_longer_underlay_goes_into_head_room() {
    let mut t = tables(None);
    t.neighbors.push((link2().1.ip(), NEXT_HOP));
    let (l1, r1) = link1();
    let mut slots: Vec<Slot<MemRoom>> = (0..1).map(|_| Slot::default()).collect();
    let mut out = batches();
    let mut io = IoCounters::default();
    let rx = std::iter::once(frame(r1, l1));
    assert_eq!(
        classify_burst(&t, 1, NOW, rx, &mut slots, &mut out, &mut io),
        1
    );
    slots[0].set_disposition(Disposition::Forward { ifid: 2 });
    route_burst(
        &t,
        1,
        NOW,
        &mut slots,
        &mut out,
        &mut io,
        &mut Record::default(),
    );
    let f = out[2].frames[0].data();
    assert_eq!(f.len(), V6_HDR_LEN + PAYLOAD);
    assert_eq!(underlay::parse(f).unwrap().dst, link2().1);
    assert!(f[V6_HDR_LEN..].iter().all(|&b| b == 0xab));
    assert_eq!(io.unroutable + V4_HDR_LEN as u64, V4_HDR_LEN as u64);
}
