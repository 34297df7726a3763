//! The ID-INT source entry of every packet is signed with the DRKey of the epoch its own
//! source timestamp lies in (`idint.md` §10, §11), also when a capture crosses an epoch.

mod common;

use idint_pktgen::{Generator, Options};
use idint_wire::idint::IdInt;
use idint_wire::idint::crypto::verify_stack;
use idint_wire::packet::Packet;
use scion_topology::{MasterKeys, Topology};

#[test]
fn source_entries_use_the_epoch_of_their_timestamp() {
    const DAY_NS: u64 = 86_400 * 1_000_000_000;
    let d = common::router_benchmark();
    let topo = Topology::load(d.join("topology.json")).unwrap();
    let own = MasterKeys::load(d.join("keys")).unwrap();
    // Packets 1 s apart, starting 5 s before a (1-day) epoch boundary.
    let boundary = 1_763_800_000_000_000_000 / DAY_NS * DAY_NS + DAY_NS;
    let now = boundary - 5_000_000_000;
    let mut o = Options::new(now);
    o.count = 10;
    o.gap_ns = 1_000_000_000;
    o.idint.percent = 100;
    let mut g = Generator::new(&topo, "br1a", d.join("keys"), o).unwrap();
    let mut pkt = Vec::new();
    for i in 0..10u64 {
        g.scion_packet(i, &mut pkt).unwrap();
        let range = Packet::parse(&pkt).unwrap().hbh_range().unwrap();
        let ts48 = IdInt::locate(&mut pkt[range.clone()])
            .unwrap()
            .unwrap()
            .main()
            .source_timestamp();
        let sent_ns = now + i * 1_000_000_000;
        assert_eq!(ts48, sent_ns & ((1 << 48) - 1), "packet {i}");
        let key = common::packet_source_key(&topo, &own.master0, &pkt, sent_ns / 1_000_000_000);
        let mut idint = IdInt::locate(&mut pkt[range]).unwrap().unwrap();
        assert_eq!(
            verify_stack(&mut idint, &key, |_, _| None),
            Ok(1),
            "packet {i}, sent {} s after the epoch boundary",
            (sent_ns as i128 - boundary as i128) / 1_000_000_000
        );
    }
}
