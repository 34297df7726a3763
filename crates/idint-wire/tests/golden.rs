//! Golden SCION packets from the reference implementation: parse, re-emit, checksums.

use idint_wire::checksum;
use idint_wire::ext::ExtRepr;
use idint_wire::packet::{L4, Packet};
use idint_wire::path::PathRepr;
use idint_wire::scion::{ScionHeader, ScionRepr};
use idint_wire::scmp::ScmpRepr;
use idint_wire::udp::UdpRepr;

const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/scion");

fn json(name: &str) -> serde_json::Value {
    let text =
        std::fs::read_to_string(format!("{VECTORS}/{name}")).expect("golden vectors in testdata/");
    serde_json::from_str(&text).unwrap()
}

fn golden_files() -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(format!("{VECTORS}/slayers_golden"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    assert_eq!(v.len(), 7, "all seven upstream golden packets");
    v
}

/// Rebuilds a packet from its reprs (extension option areas and non-UDP/SCMP payloads are
/// copied as bytes).
fn re_emit(bytes: &[u8]) -> Vec<u8> {
    let pkt = Packet::parse(bytes).unwrap();
    let scion = ScionRepr::parse(&pkt.header).unwrap();
    let path = PathRepr::parse(pkt.header.path_type(), pkt.header.path_bytes()).unwrap();
    let mut out = vec![0u8; bytes.len() - pkt.trailing];
    assert_eq!(pkt.missing, 0, "re_emit needs a consistent PayloadLen");
    scion.emit(&mut out).unwrap();
    path.emit(&mut out[scion.address_end()..]).unwrap();
    assert_eq!(
        scion.address_end() + path.buffer_len(),
        scion.header_len(),
        "no surplus path bytes"
    );
    for (off, h, layer) in [
        pkt.hbh.map(|(o, h)| (o, h, idint_wire::Layer::HopByHop)),
        pkt.e2e.map(|(o, h)| (o, h, idint_wire::Layer::EndToEnd)),
    ]
    .into_iter()
    .flatten()
    {
        ExtRepr::parse(&h)
            .unwrap()
            .emit(&mut out[off..], layer)
            .unwrap();
    }
    let l4 = pkt.l4_offset;
    match pkt.l4 {
        L4::Udp(u) => {
            UdpRepr::parse(&u).unwrap().emit(&mut out[l4..]).unwrap();
            out[l4 + 8..].copy_from_slice(u.payload());
        }
        L4::Scmp(s) => {
            let r = ScmpRepr::parse(s.into_inner()).unwrap();
            r.emit(&mut out[l4..]).unwrap();
            out[l4 + 2..l4 + 4].copy_from_slice(&s.checksum().to_be_bytes());
        }
        L4::Other(_, b) => out[l4..].copy_from_slice(b),
    }
    out
}

#[test]
fn slayers_golden_parse_and_re_emit_byte_identically() {
    for (name, bytes) in golden_files() {
        let pkt = Packet::parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(pkt.trailing, 0, "{name}");
        assert_eq!(re_emit(&bytes), bytes, "{name}");
        // UDP checksums of the upstream files are valid; SCMP ones were left zero upstream.
        if let L4::Udp(u) = pkt.l4 {
            assert!(u.verify_checksum(&pkt.header), "{name}: UDP checksum");
        }
    }
}

#[test]
fn slayers_golden_fields() {
    let files = golden_files();
    let get = |n: &str| &files.iter().find(|(f, _)| f == n).unwrap().1;
    let udp = Packet::parse(get("scion-udp.bin")).unwrap();
    assert_eq!(udp.header.header_len(), 116);
    assert_eq!(udp.header.payload_len(), 1032);
    let L4::Udp(u) = udp.l4 else {
        panic!("UDP expected")
    };
    assert_eq!(
        (u.src_port(), u.dst_port(), u.checksum()),
        (1280, 80, 0xb7d2)
    );
    let extn = Packet::parse(get("scion-udp-extn.bin")).unwrap();
    let types: Vec<u8> = extn
        .hop_by_hop()
        .unwrap()
        .options()
        .map(|o| o.unwrap().opt_type)
        .collect();
    assert!(types.contains(&0x1e) && types.contains(&0x3e), "{types:?}");
    assert!(extn.end_to_end().is_some());
    let scmp = Packet::parse(get("scion-scmp-int-conn-down.bin")).unwrap();
    let L4::Scmp(s) = scmp.l4 else {
        panic!("SCMP expected")
    };
    match ScmpRepr::parse(s.into_inner()).unwrap() {
        ScmpRepr::InternalConnectivityDown {
            ia,
            ingress,
            egress,
            ..
        } => {
            assert_eq!(ia.to_string(), "1-ff00:0:111");
            assert_eq!((ingress, egress), (5, 15));
        }
        other => panic!("{other:?}"),
    }
    let bfd = Packet::parse(get("scion-bfd.bin")).unwrap();
    assert_eq!(bfd.l4_protocol(), idint_wire::scion::NextHdr::Bfd);
}

#[test]
fn truncated_golden_packets_are_errors() {
    for (name, bytes) in golden_files() {
        for cut in 0..bytes.len() {
            // Either an error, or (cut inside the payload) a parse that reports missing bytes.
            if let Ok(p) = Packet::parse(&bytes[..cut]) {
                assert_eq!(p.missing, bytes.len() - cut, "{name} cut at {cut}");
            }
        }
    }
}

#[test]
fn router_case_packets_parse_completely() {
    let v = json("router_cases.json");
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 41);
    let mut parsed = 0;
    let mut mismatched = 0;
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let mut hexes = vec![c["input_hex"].as_str().unwrap()];
        if let Some(o) = c["expected"]["output_hex"].as_str() {
            hexes.push(o);
        }
        for h in hexes {
            let bytes = hex::decode(h).unwrap();
            let pkt = Packet::parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            if !pkt.payload_len_matches() {
                // Still parsed (a router must answer it with SCMP 4/19), but not re-emittable.
                mismatched += 1;
                continue;
            }
            assert_eq!(re_emit(&bytes), bytes, "{name}");
            parsed += 1;
        }
    }
    assert!(parsed > 41);
    // Exactly one input (err_payload_len) announces a PayloadLen that does not match.
    assert_eq!(mismatched, 1);
}

#[test]
fn checksum_vectors() {
    let v = json("checksum.json");
    let cases = v["vectors"].as_array().unwrap();
    assert_eq!(cases.len(), 4);
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let bytes = hex::decode(c["packet_hex"].as_str().unwrap()).unwrap();
        let pkt = Packet::parse(&bytes).unwrap();
        let want = u16::from_str_radix(c["checksum_hex"].as_str().unwrap(), 16).unwrap();
        // The pseudo header bytes we feed equal the vector's.
        let ph = hex::decode(c["pseudo_header_hex"].as_str().unwrap()).unwrap();
        let mut c1 = checksum::Checksum::new();
        let (proto, l4) = match pkt.l4 {
            L4::Udp(u) => (17, u.into_inner()),
            L4::Scmp(s) => (202, s.into_inner()),
            L4::Other(..) => panic!("{name}"),
        };
        checksum::add_pseudo_header(&mut c1, &pkt.header, l4.len() as u32, proto);
        let mut c2 = checksum::Checksum::new();
        c2.add(&ph);
        assert_eq!(c1.finish(), c2.finish(), "{name}: pseudo header");
        let zeroed = hex::decode(c["l4_with_zero_checksum_hex"].as_str().unwrap()).unwrap();
        let at = if proto == 17 { 6 } else { 2 };
        assert_eq!(
            checksum::compute(&pkt.header, proto, &zeroed, at),
            want,
            "{name}"
        );
        match pkt.l4 {
            L4::Udp(u) => assert!(u.verify_checksum(&pkt.header)),
            L4::Scmp(s) => assert!(s.verify_checksum(&pkt.header)),
            L4::Other(..) => unreachable!(),
        }
        // Filling the checksum into a zeroed copy gives the packet back.
        let mut copy = bytes.clone();
        let off = pkt.l4_offset;
        copy[off + at..off + at + 2].fill(0);
        let hdr_bytes = copy.clone();
        let hdr = ScionHeader::new_checked(&hdr_bytes[..]).unwrap();
        if proto == 17 {
            idint_wire::udp::UdpPacket::new_unchecked(&mut copy[off..]).fill_checksum(&hdr);
        } else {
            idint_wire::scmp::ScmpPacket::new_unchecked(&mut copy[off..]).fill_checksum(&hdr);
        }
        assert_eq!(copy, bytes, "{name}");
    }
}
