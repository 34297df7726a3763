//! The ID-INT source entry of every packet is signed with the DRKey of the epoch its own
//! source timestamp lies in (`idint.md` §10, §11), also when a capture crosses an epoch.

use std::path::{Path, PathBuf};

use drkey::provider::{Level1Provider, LocalProvider};
use idint_pktgen::keys::deterministic_secret;
use idint_pktgen::{Generator, Options};
use idint_wire::idint::IdInt;
use idint_wire::idint::crypto::verify_stack;
use idint_wire::packet::Packet;
use idint_wire::scion::ScionHeader;
use scion_topology::{MasterKeys, Topology};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/vectors/scion/config_examples/router_benchmark")
}

#[test]
fn source_entries_use_the_epoch_of_their_timestamp() {
    const DAY_NS: u64 = 86_400 * 1_000_000_000;
    let d = example();
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
        let h = ScionHeader::new_checked(&pkt[..]).unwrap();
        let (src_ia, src_host, dst_ia, dst_host) =
            (h.src_ia(), h.src_host(), h.dst_ia(), h.dst_host());
        let secret = if src_ia == topo.ases[0].ia {
            own.master0.clone()
        } else {
            deterministic_secret(src_ia).to_vec()
        };
        let p = LocalProvider::new(src_ia, &secret, 86_400).unwrap();
        let (_, l1) = p
            .level1(
                drkey::Protocol::IDINT,
                src_ia,
                dst_ia,
                sent_ns / 1_000_000_000,
            )
            .unwrap();
        let ha = drkey::host_as(&l1.cipher(), &src_host).unwrap();
        let key = drkey::host_host(&ha.cipher(), &dst_host).unwrap().cipher();
        let mut idint = IdInt::locate(&mut pkt[range]).unwrap().unwrap();
        assert_eq!(
            verify_stack(&mut idint, &key, |_, _| None),
            Ok(1),
            "packet {i}, sent {} s after the epoch boundary",
            (sent_ns as i128 - boundary as i128) / 1_000_000_000
        );
    }
}
