//! Writes the seed corpora of the `host_*` fuzz targets (`fuzz/corpus/host_*/seed-*`):
//! `cargo test -p idint-host --test fuzz_seeds -- --ignored`. The packet seed matches the
//! keys and clock of `fuzz/fuzz_targets/host_packet.rs`.

use std::path::PathBuf;

use idint_host::fixture::{empty_path, segment_path};
use idint_host::keys::HostKeys;
use idint_host::packet::Endpoint;
use idint_host::paths::{PathHop, PathsFile};
use idint_host::payload::Reply;
use idint_host::pinger::Pinger;
use idint_host::responder::Responder;
use idint_wire::{HostAddr, IsdAsn};

const NOW_NS: u64 = 1_763_800_000_000_000_000;

fn corpus(target: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
#[ignore = "writes the fuzz seed corpora"]
fn write_fuzz_seeds() {
    let ia: IsdAsn = "1-ff00:0:111".parse().unwrap();
    let other: IsdAsn = "2-ff00:0:211".parse().unwrap();
    let mut keys = HostKeys::new(3600);
    keys.insert(ia, &[0x21; 16]);
    keys.insert(other, &[0x23; 16]);
    let hops = [
        PathHop {
            ia,
            ingress: 0,
            egress: 41,
        },
        PathHop {
            ia: other,
            ingress: 3,
            egress: 0,
        },
    ];
    let seg = segment_path(
        &mut keys,
        "111-211",
        &hops,
        "10.0.0.1:30042".parse().unwrap(),
        1_763_799_400,
    )
    .unwrap();
    let file = PathsFile {
        paths: vec![seg, empty_path("local", ia)],
    };
    std::fs::write(corpus("host_paths").join("seed-paths"), file.to_json()).unwrap();

    let me = HostAddr::V4([127, 0, 0, 1].into());
    let end = |port| Endpoint { ia, host: me, port };
    for encrypt in [false, true] {
        let mut k = HostKeys::new(3600);
        k.insert(ia, &[0x21; 16]);
        let mut p = Pinger::new(end(28211), end(28210), empty_path("local", ia), encrypt, k);
        let mut pkt = Vec::new();
        p.build(1, NOW_NS, &mut pkt).unwrap();
        let name = if encrypt {
            "seed-ping-encrypted"
        } else {
            "seed-ping"
        };
        std::fs::write(corpus("host_packet").join(name), &pkt).unwrap();
        let mut k = HostKeys::new(3600);
        k.insert(ia, &[0x21; 16]);
        let h = Responder::new(ia, me, k).handle(&pkt, NOW_NS);
        assert_eq!(h.failure, None);
        let reply = h.reply.unwrap();
        std::fs::write(corpus("host_packet").join(format!("{name}-reply")), &reply).unwrap();
        let udp = idint_wire::packet::Packet::parse(&reply).unwrap();
        let idint_wire::packet::L4::Udp(u) = udp.l4 else {
            panic!("UDP")
        };
        Reply::decode(u.payload()).unwrap();
        std::fs::write(
            corpus("host_payload").join(format!("{name}-reply")),
            u.payload(),
        )
        .unwrap();
    }
}
