//! Arbitrary bytes as a complete SCION packet: every layer, every accessor (through the
//! pretty printer), and re-emission of every header that parsed.
#![no_main]

use idint_wire::ext::ExtRepr;
use idint_wire::packet::{L4, Packet, PathView};
use idint_wire::path::PathRepr;
use idint_wire::pretty::PrettyPacket;
use idint_wire::scion::{ScionHeader, ScionRepr};
use idint_wire::scmp::ScmpRepr;
use idint_wire::spao::{SpaoRepr, mac_input};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let pretty = PrettyPacket::new(data);
    let mut sink = String::new();
    let _ = std::fmt::write(&mut sink, format_args!("{pretty}"));
    let _ = pretty.is_complete();
    let Ok(pkt) = Packet::parse(data) else { return };
    // Re-emit what parsed and compare with the input bytes.
    let scion = ScionRepr::parse(&pkt.header).expect("parsed header re-parses");
    // Round trip: emit over a copy of the header, re-parse, same repr. (Reserved bits, the
    // RSV field and the padding of SVC addresses are not kept: they are ignored on receive.)
    let mut out = data[..scion.header_len()].to_vec();
    scion.emit(&mut out).expect("emit into exact buffer");
    let again =
        ScionRepr::parse(&ScionHeader::new_checked(&out[..]).expect("re-check")).expect("re-parse");
    assert_eq!(again, scion);
    if let Ok(path) = PathRepr::parse(pkt.header.path_type(), pkt.header.path_bytes()) {
        let mut p = vec![0u8; path.buffer_len()];
        path.emit(&mut p).expect("path emits");
        assert_eq!(
            PathRepr::parse(pkt.header.path_type(), &p).expect("re-parse"),
            path
        );
    }
    if let PathView::Scion(p) = pkt.path {
        let m = p.meta();
        for j in 0..m.num_hops() {
            let h = p.hop(j).expect("hop in range");
            let _ = h.mac_input(0, 0);
        }
    }
    for h in [pkt.hop_by_hop(), pkt.end_to_end()].into_iter().flatten() {
        let r = ExtRepr::parse(&h).expect("checked header");
        let mut e = vec![0u8; r.buffer_len()];
        let _ = r.emit(&mut e, idint_wire::Layer::HopByHop);
        for o in h.options().flatten() {
            if o.opt_type == 2 {
                if let Ok(s) = SpaoRepr::parse(o.data) {
                    let _ = mac_input(&pkt, &s, |_| {});
                }
            }
        }
    }
    if let L4::Scmp(s) = pkt.l4 {
        if let Ok(r) = ScmpRepr::parse(s.into_inner()) {
            let mut b = vec![0u8; r.buffer_len()];
            r.emit(&mut b).expect("scmp emits");
            assert_eq!(
                ScmpRepr::parse(&b).expect("re-parse").type_code(),
                r.type_code()
            );
        }
    }
});
