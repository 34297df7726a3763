//! `--verify` (`idint_pktgen::verify::verify_capture`): the keys of the verifier each request
//! names, the DRKey epoch of each packet's source timestamp, and captures of any size.

mod common;

use idint_pktgen::{Generator, Kind, Options, VerifierChoice};
use scion_topology::{MasterKeys, Topology};

const NOW_NS: u64 = 1_763_800_000_123_000_000;
const DAY_NS: u64 = 86_400 * 1_000_000_000;

fn setup() -> (Topology, MasterKeys) {
    let d = common::router_benchmark();
    (
        Topology::load(d.join("topology.json")).unwrap(),
        MasterKeys::load(d.join("keys")).unwrap(),
    )
}

#[test]
fn verify_capture_uses_the_requested_verifier() {
    let (topo, master) = setup();
    for verifier in [VerifierChoice::Destination, VerifierChoice::Source] {
        let mut o = Options::new(NOW_NS);
        o.count = 60;
        o.idint.percent = 100;
        o.idint.verifier = verifier;
        let mut g =
            Generator::new(&topo, "br1a", common::router_benchmark().join("keys"), o).unwrap();
        let (pcap, _) = g.write_pcap(Vec::new(), |_| {}).unwrap();
        let v = common::verify(&pcap, &mut g, &master.master0, NOW_NS);
        assert_eq!(v.with_idint, 60, "{verifier:?}");
        assert_eq!((v.ok, v.failed), (60, 0), "{verifier:?}: {:?}", v.failures);
    }
}

#[test]
fn verify_capture_uses_the_epoch_of_the_source_timestamp() {
    let (topo, master) = setup();
    // Sent 30 s before a (1-day) epoch boundary, verified 30 s after it: well within the
    // verifier's freshness window, but in the next epoch.
    let boundary = NOW_NS / DAY_NS * DAY_NS + DAY_NS;
    let sent = boundary - 30_000_000_000;
    let mut o = Options::new(sent);
    o.count = 30;
    o.idint.percent = 100;
    let mut g = Generator::new(&topo, "br1a", common::router_benchmark().join("keys"), o).unwrap();
    let (pcap, _) = g.write_pcap(Vec::new(), |_| {}).unwrap();
    for verified_at in [sent + 1_000_000_000, boundary + 30_000_000_000] {
        let v = common::verify(&pcap, &mut g, &master.master0, verified_at);
        assert_eq!(v.with_idint, 30);
        assert_eq!(
            (v.ok, v.failed),
            (30, 0),
            "verified at {verified_at}: {:?}",
            v.failures
        );
    }
}

#[test]
fn verify_capture_of_more_than_65536_stacks_on_a_default_stack() {
    const N: u64 = 70_000;
    let (topo, master) = setup();
    let mut o = Options::new(NOW_NS);
    o.count = N;
    o.kinds = vec![Kind::Out];
    o.idint.percent = 100;
    let mut g = Generator::new(&topo, "br1a", common::router_benchmark().join("keys"), o).unwrap();
    let (pcap, _) = g.write_pcap(Vec::new(), |_| {}).unwrap();
    // The default stack of a spawned thread (2 MiB), explicitly.
    let v = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || common::verify(&pcap, &mut g, &master.master0, NOW_NS))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(v.with_idint, N);
    assert_eq!((v.ok, v.failed), (N, 0), "{:?}", v.failures);
}
