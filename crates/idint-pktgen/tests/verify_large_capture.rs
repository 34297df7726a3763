//! `--verify` of a large capture: every valid stack verifies, however many the capture has,
//! on an ordinary thread stack.

use std::path::{Path, PathBuf};

use idint_pktgen::{Generator, Kind, Options};
use scion_topology::{MasterKeys, Topology};

const NOW_NS: u64 = 1_763_800_000_123_000_000;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/vectors/scion/config_examples/router_benchmark")
}

#[test]
fn verify_capture_of_more_than_65536_stacks_on_a_default_stack() {
    const N: u64 = 70_000;
    let d = example();
    let topo = Topology::load(d.join("topology.json")).unwrap();
    let master = MasterKeys::load(d.join("keys")).unwrap();
    let mut o = Options::new(NOW_NS);
    o.count = N;
    o.kinds = vec![Kind::Out];
    o.idint.percent = 100;
    let mut g = Generator::new(&topo, "br1a", d.join("keys"), o).unwrap();
    let (pcap, _) = g.write_pcap(Vec::new(), |_| {}).unwrap();
    let ia = g.router_config().local_ia;
    // The default stack of a spawned thread (2 MiB), explicitly.
    let v = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            idint_pktgen::verify::verify_capture(
                &pcap[..],
                g.keys_mut(),
                ia,
                &master.master0,
                86_400,
                NOW_NS,
                3,
            )
            .unwrap()
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(v.with_idint, N);
    assert_eq!((v.ok, v.failed), (N, 0), "{:?}", v.failures);
}
