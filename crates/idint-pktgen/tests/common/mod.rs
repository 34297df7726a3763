//! Helpers shared by the generator's integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use drkey::provider::{Level1Provider, LocalProvider};
use idint_pktgen::Generator;
use idint_pktgen::keys::deterministic_secret;
use idint_pktgen::verify::{Verified, verify_capture};
use idint_wire::crypto::Aes128Enc;
use idint_wire::{HostAddr, IsdAsn};
use scion_topology::Topology;

/// The shared example configurations.
pub fn config_examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/scion/config_examples")
}

/// The router benchmark example (router `br1a`).
pub fn router_benchmark() -> PathBuf {
    config_examples().join("router_benchmark")
}

/// The host-to-host key K(src_ia:src_host -> ver_ia:ver_host) of epoch time `t_s` that the
/// generator signs a source entry with: from `own_master0` for the topology's AS, from the
/// generator's deterministic secrets for the others.
pub fn source_key(
    topo: &Topology,
    own_master0: &[u8],
    (src_ia, src_host): (IsdAsn, HostAddr),
    (ver_ia, ver_host): (IsdAsn, HostAddr),
    t_s: u64,
) -> (Aes128Enc, Aes128Enc) {
    let secret = if src_ia == topo.ases[0].ia {
        own_master0.to_vec()
    } else {
        deterministic_secret(src_ia).to_vec()
    };
    let p = LocalProvider::new(src_ia, &secret, 86_400).unwrap();
    let (_, l1) = p
        .level1(drkey::Protocol::IDINT, src_ia, ver_ia, t_s)
        .unwrap();
    let ha = drkey::host_as(&l1.cipher(), &src_host).unwrap();
    let key = drkey::host_host(&ha.cipher(), &ver_host).unwrap().cipher();
    // The host-to-AS key too, for deriving keys of other hosts (a wrong key, say).
    (key, ha.cipher())
}

/// [`source_key`] (the host-to-host key only) of SCION packet `pkt`'s source and destination
/// hosts, the destination being the verifier.
pub fn packet_source_key(topo: &Topology, own_master0: &[u8], pkt: &[u8], t_s: u64) -> Aes128Enc {
    let h = idint_wire::scion::ScionHeader::new_checked(pkt).unwrap();
    source_key(
        topo,
        own_master0,
        (h.src_ia(), h.src_host()),
        (h.dst_ia(), h.dst_host()),
        t_s,
    )
    .0
}

/// `--verify` of `pcap` with `g`'s keys at `now_ns` (router AS secret `master0`, 1-day
/// epochs), up to 3 samples.
pub fn verify(pcap: &[u8], g: &mut Generator, master0: &[u8], now_ns: u64) -> Verified {
    let ia = g.router_config().local_ia;
    verify_capture(pcap, g.keys_mut(), ia, master0, 86_400, now_ns, 3).unwrap()
}
