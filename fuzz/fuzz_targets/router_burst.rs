//! Bursts of arbitrary frames (or of mutations of a valid transit frame) through the router's
//! whole sans-IO path as the DPDK worker runs it (`router_core::burst` around scion-dp:
//! classify, `process_burst`, route, underlay rewrite, egress batching), the IPv4 fast paths
//! included. Checks: no panic; no more frames leave than arrived; every frame queued for a port
//! is a whole Ethernet/IP/UDP frame that parses, addressed from that port's MAC.
//!
//! Input: byte 0 = selector (bit 0: mutation mode; bits 1-5: frames in the burst - 1);
//! in mutation mode the rest is read as (offset high, offset low, byte) triples, each written
//! into the next frame's copy of the valid transit frame, round robin; otherwise the rest is
//! cut into that many raw frames of equal length.
#![no_main]

use std::sync::OnceLock;

use benches::router_path::{PORTS, PathRig};
use libfuzzer_sys::fuzz_target;
use router_core::burst::FrameBuf;
use router_core::underlay;
use scion_dp::config::Router;
use scion_dp_replay::CaseFile;

const CASES: &str = include_str!("../../testdata/scion/router_cases.json");
/// The valid transit case (interface 1 in, interface 2 out) mutations start from.
const CASE: &str = "transit_parent_to_child";
/// Frames per burst: 1 + these bits of the selector.
const FRAMES_MASK: u8 = 0x1f;

fn cases() -> &'static CaseFile {
    static FILE: OnceLock<CaseFile> = OnceLock::new();
    FILE.get_or_init(|| CaseFile::parse(CASES).expect("router cases"))
}

fn case() -> (&'static Router, &'static [u8], u64) {
    let file = cases();
    let case = file.cases.iter().find(|c| c.name == CASE).expect("case");
    (&file.routers[&case.router], &case.input, file.now_ns)
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let (router, scion, now_ns) = case();
    let mut rig = PathRig::new(router, scion, now_ns);
    let n = 1 + usize::from((sel >> 1) & FRAMES_MASK);
    let frames: Vec<Vec<u8>> = if sel & 1 == 1 {
        let mut frames = vec![rig.arrival_frame().to_vec(); n];
        for (k, t) in rest.chunks_exact(3).enumerate() {
            let f = &mut frames[k % n];
            let at = usize::from(u16::from_be_bytes([t[0], t[1]]));
            if let Some(b) = f.get_mut(at) {
                *b = t[2];
            }
        }
        frames
    } else {
        let len = rest.len() / n;
        rest.chunks(len.max(1))
            .take(n)
            .map(<[u8]>::to_vec)
            .collect()
    };
    rig.load(frames.iter().map(Vec::as_slice));
    let queued = rig.path();
    assert!(
        queued <= frames.len(),
        "{queued} frames out of {}",
        frames.len()
    );
    for port in 0..PORTS {
        for f in rig.queued(port) {
            let d = f.data();
            let parsed = underlay::parse(d);
            assert!(parsed.is_ok(), "a queued frame does not parse: {parsed:?}");
            assert_eq!(
                d[6..12],
                rig.tables.ports[port],
                "frame on port {port} not from its MAC"
            );
        }
    }
});
