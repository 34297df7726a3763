//! `--verify` picks the DRKey epoch from each packet's ID-INT source timestamp (`idint.md`
//! §10, §11), not from the verifier's clock.

use std::path::{Path, PathBuf};

use idint_pktgen::{Generator, Options};
use scion_topology::{MasterKeys, Topology};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/vectors/scion/config_examples/router_benchmark")
}

#[test]
fn verify_capture_uses_the_epoch_of_the_source_timestamp() {
    // verify_capture keeps a 1 MiB replay window: run it on a roomy stack.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(check)
        .unwrap()
        .join()
        .unwrap();
}

fn check() {
    const DAY_NS: u64 = 86_400 * 1_000_000_000;
    let d = example();
    let topo = Topology::load(d.join("topology.json")).unwrap();
    let master = MasterKeys::load(d.join("keys")).unwrap();
    // Sent 30 s before a (1-day) epoch boundary, verified 30 s after it: well within the
    // verifier's freshness window, but in the next epoch.
    let boundary = 1_763_800_000_000_000_000 / DAY_NS * DAY_NS + DAY_NS;
    let sent = boundary - 30_000_000_000;
    let mut o = Options::new(sent);
    o.count = 30;
    o.idint.percent = 100;
    let mut g = Generator::new(&topo, "br1a", d.join("keys"), o).unwrap();
    let (pcap, _) = g.write_pcap(Vec::new(), |_| {}).unwrap();
    let ia = g.router_config().local_ia;
    for verified_at in [sent + 1_000_000_000, boundary + 30_000_000_000] {
        let v = idint_pktgen::verify::verify_capture(
            &pcap[..],
            g.keys_mut(),
            ia,
            &master.master0,
            86_400,
            verified_at,
            3,
        )
        .unwrap();
        assert_eq!(v.with_idint, 30);
        assert_eq!(
            (v.ok, v.failed),
            (30, 0),
            "verified at {verified_at}: {:?}",
            v.failures
        );
    }
}
