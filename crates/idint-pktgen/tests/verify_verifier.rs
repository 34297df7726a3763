//! `--verify` checks a capture with the keys of the verifier the requests name (Vrf), not
//! always with the destination's.

use std::path::{Path, PathBuf};

use idint_pktgen::{Generator, Options, VerifierChoice};
use scion_topology::{MasterKeys, Topology};

const NOW_NS: u64 = 1_763_800_000_123_000_000;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/vectors/scion/config_examples/router_benchmark")
}

#[test]
fn verify_capture_uses_the_requested_verifier() {
    // verify_capture keeps a 1 MiB replay window: run it on a roomy stack.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(check_both_verifiers)
        .unwrap()
        .join()
        .unwrap();
}

fn check_both_verifiers() {
    let d = example();
    let topo = Topology::load(d.join("topology.json")).unwrap();
    let master = MasterKeys::load(d.join("keys")).unwrap();
    for verifier in [VerifierChoice::Destination, VerifierChoice::Source] {
        let mut o = Options::new(NOW_NS);
        o.count = 60;
        o.idint.percent = 100;
        o.idint.verifier = verifier;
        let mut g = Generator::new(&topo, "br1a", d.join("keys"), o).unwrap();
        let (pcap, _) = g.write_pcap(Vec::new(), |_| {}).unwrap();
        let ia = g.router_config().local_ia;
        let v = idint_pktgen::verify::verify_capture(
            &pcap[..],
            g.keys_mut(),
            ia,
            &master.master0,
            86_400,
            NOW_NS,
            3,
        )
        .unwrap();
        assert_eq!(v.with_idint, 60, "{verifier:?}");
        assert_eq!((v.ok, v.failed), (60, 0), "{verifier:?}: {:?}", v.failures);
    }
}
