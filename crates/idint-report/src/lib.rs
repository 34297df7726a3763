//! Protobuf schema of ID-INT telemetry reports, package `idint.report.v1`
//! (`proto/idint/report/v1/report.proto`), shared by routers, hosts and the collector.
//!
//! A [`v1::Report`] carries the raw ID-INT main option and stack bytes so that the collector
//! verifies every MAC itself; a [`v1::ReportBatch`] groups reports for transport. Feature
//! `json`: the JSON form of a batch (`json::decode` / `json::encode`), as the collector's HTTP
//! ingest accepts it. [`v1::Report::validate`] checks that a decoded report's numbers fit the
//! packet fields they describe (`json::decode` applies it).

/// Version 1 of the report schema.
pub mod v1 {
    include!(concat!(env!("OUT_DIR"), "/idint.report.v1.rs"));
}

pub use prost::Message;

#[cfg(feature = "json")]
pub mod json;

mod validate;
pub use validate::{FieldProblem, InvalidReport};

use idint_wire::idint::IdInt;
use idint_wire::packet::{L4, Packet, PathView};
use idint_wire::path::scion::ScionPath;

/// Why a packet could not be turned into a report, or a report back into ID-INT options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportError {
    /// The packet does not parse.
    Packet(idint_wire::Error),
    /// The packet carries no ID-INT options.
    NoIdInt,
    /// The report's main option or stack bytes are not a valid ID-INT structure.
    BadOptions(&'static str),
}

impl std::fmt::Display for ReportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReportError::Packet(e) => write!(f, "packet does not parse: {e}"),
            ReportError::NoIdInt => f.write_str("packet carries no ID-INT options"),
            ReportError::BadOptions(why) => write!(f, "bad ID-INT options in report: {why}"),
        }
    }
}

impl std::error::Error for ReportError {}

fn host(t: idint_wire::AddrType, raw: &[u8]) -> v1::HostAddress {
    v1::HostAddress {
        addr_type: u32::from(t.nibble()),
        raw: raw.to_vec(),
    }
}

fn path_of(p: &ScionPath<&[u8]>, path_type: u8) -> v1::Path {
    let meta = p.meta();
    let n_inf = meta.seg_len.iter().filter(|&&l| l > 0).count();
    let n_hop: usize = meta.seg_len.iter().map(|&l| usize::from(l)).sum();
    v1::Path {
        path_type: u32::from(path_type),
        seg_lens: meta.seg_len[..n_inf]
            .iter()
            .map(|&l| u32::from(l))
            .collect(),
        info_fields: (0..n_inf)
            .filter_map(|i| p.info(i).ok())
            .map(|f| v1::InfoField {
                cons_dir: f.cons_dir,
                peer: f.peer,
                seg_id: u32::from(f.seg_id),
                timestamp: f.timestamp,
            })
            .collect(),
        hop_fields: (0..n_hop)
            .filter_map(|j| p.hop(j).ok())
            .map(|h| v1::HopField {
                cons_ingress: u32::from(h.cons_ingress),
                cons_egress: u32::from(h.cons_egress),
                exp_time: u32::from(h.exp_time),
            })
            .collect(),
        curr_inf: u32::from(meta.curr_inf),
        curr_hf: u32::from(meta.curr_hf),
    }
}

/// Builds the report of a SCION packet carrying ID-INT, as the sink router saw it: addresses,
/// path, flow and the raw main option and stack (verified later by the collector).
///
/// An upper layer that does not parse (a UDP Length field that disagrees with the bytes, a
/// cut SCMP message) does not cost the report: the sink delivered the packet reading no
/// more of it than the port, and the telemetry does not depend on it. The protocol is
/// reported as it is; the UDP ports when the 8-byte UDP header is there, else 0.
pub fn report_from_packet(
    exporter: &v1::Exporter,
    receive_time_ns: u64,
    ingress_interface: u16,
    packet: &[u8],
) -> Result<v1::Report, ReportError> {
    let e = match Packet::parse(packet) {
        Ok(p) => return report_of(exporter, receive_time_ns, ingress_interface, packet, &p),
        Err(e) => e,
    };
    if !matches!(e.layer(), idint_wire::Layer::Udp | idint_wire::Layer::Scmp) {
        return Err(ReportError::Packet(e));
    }
    // Parsed again with the upper layer's protocol number (in the last header before it)
    // replaced by one that is read as opaque bytes.
    let at = upper_layer_protocol_at(packet).ok_or(ReportError::Packet(e))?;
    let proto = packet[at];
    let mut opaque = packet.to_vec();
    opaque[at] = OPAQUE_L4;
    let p = Packet::parse(&opaque).map_err(|_| ReportError::Packet(e))?;
    let mut r = report_of(exporter, receive_time_ns, ingress_interface, &opaque, &p)?;
    let l4 = &packet[p.l4_offset.min(packet.len())..];
    if let Some(f) = r.flow.as_mut() {
        f.l4_protocol = u32::from(proto);
        (f.src_port, f.dst_port) = match l4 {
            [a, b, c, d, _, _, _, _, ..] if proto == UDP => (
                u32::from(u16::from_be_bytes([*a, *b])),
                u32::from(u16::from_be_bytes([*c, *d])),
            ),
            _ => (0, 0),
        };
    }
    Ok(r)
}

/// Protocol number of SCION/UDP.
const UDP: u8 = 17;
/// A protocol number `Packet::parse` reads as opaque upper-layer bytes (253, RFC 3692
/// experimentation).
const OPAQUE_L4: u8 = 253;

/// Offset of the byte naming the upper-layer protocol: the NextHdr of the last extension
/// header, or of the common header without extensions.
fn upper_layer_protocol_at(packet: &[u8]) -> Option<usize> {
    const EXTENSIONS: [u8; 2] = [200, 201];
    let hl = usize::from(*packet.get(5)?) * 4;
    let (mut at, mut off) = (4, hl);
    while EXTENSIONS.contains(packet.get(at)?) {
        at = off;
        off += (usize::from(*packet.get(off + 1)?) + 1) * 4;
    }
    Some(at)
}

fn report_of(
    exporter: &v1::Exporter,
    receive_time_ns: u64,
    ingress_interface: u16,
    packet: &[u8],
    p: &Packet<'_>,
) -> Result<v1::Report, ReportError> {
    let h = &p.header;
    let (hbh_at, hbh) = p.hbh.ok_or(ReportError::NoIdInt)?;
    let hbh_bytes = &packet[hbh_at..hbh_at + hbh.header_len()];
    let idint = IdInt::locate(hbh_bytes)
        .map_err(ReportError::Packet)?
        .ok_or(ReportError::NoIdInt)?;
    let main_at = idint.main_offset();
    let stack = idint.stack_range();
    let path_type = u8::from(h.path_type());
    let path = match p.path {
        PathView::Scion(s) => Some(path_of(&s, path_type)),
        PathView::Epic(e) => Some(path_of(&e.scion_path(), path_type)),
        _ => None,
    };
    let (src_port, dst_port) = match p.l4 {
        L4::Udp(u) => (u32::from(u.src_port()), u32::from(u.dst_port())),
        _ => (0, 0),
    };
    Ok(v1::Report {
        exporter: Some(exporter.clone()),
        receive_time_ns,
        src_isd_as: h.src_ia().to_u64(),
        src_host: Some(host(h.src_addr_type(), h.src_host_bytes())),
        dst_isd_as: h.dst_ia().to_u64(),
        dst_host: Some(host(h.dst_addr_type(), h.dst_host_bytes())),
        path,
        flow: Some(v1::Flow {
            flow_id: h.flow_id().value(),
            traffic_class: u32::from(h.traffic_class()),
            l4_protocol: u32::from(u8::from(p.l4_protocol())),
            src_port,
            dst_port,
        }),
        idint_main_option: hbh_bytes[main_at..stack.start].to_vec(),
        idint_stack: hbh_bytes[stack].to_vec(),
        ingress_interface: u32::from(ingress_interface),
        payload_len: u32::from(h.payload_len()),
    })
}

/// Rebuilds a hop-by-hop header holding exactly the report's ID-INT options (main option at
/// offset 2, then the stack), for `idint_wire::idint::IdInt::locate` and the verifier.
pub fn idint_hbh(report: &v1::Report) -> Result<Vec<u8>, ReportError> {
    let (m, s) = (&report.idint_main_option, &report.idint_stack);
    let total = 2 + m.len() + s.len();
    if m.len() % 4 != 2 || !s.len().is_multiple_of(4) || total > idint_wire::ext::MAX_LEN {
        return Err(ReportError::BadOptions("lengths"));
    }
    let mut hbh = Vec::with_capacity(total);
    hbh.push(0);
    hbh.push((total / 4 - 1) as u8);
    hbh.extend_from_slice(m);
    hbh.extend_from_slice(s);
    match IdInt::locate(&hbh[..]) {
        Ok(Some(v)) if v.main_offset() == 2 && v.stack_range().end == total => Ok(hbh),
        Ok(_) => Err(ReportError::BadOptions(
            "not an ID-INT main option and stack",
        )),
        Err(_) => Err(ReportError::BadOptions("malformed")),
    }
}

#[cfg(test)]
mod tests {
    use super::v1::*;
    use prost::Message;

    #[test]
    fn batch_round_trip_keeps_every_field() {
        let report = Report {
            exporter: Some(Exporter {
                isd_as: 0x0001_ff00_0000_0110,
                router_id: 7,
                name: "br1".into(),
            }),
            receive_time_ns: 1_704_067_800_000_000_123,
            src_isd_as: 0x0001_ff00_0000_0111,
            src_host: Some(HostAddress {
                addr_type: 0,
                raw: vec![10, 0, 0, 1],
            }),
            dst_isd_as: 0x0001_ff00_0000_0110,
            dst_host: Some(HostAddress {
                addr_type: 3,
                raw: vec![0xfd; 16],
            }),
            path: Some(Path {
                path_type: 1,
                seg_lens: vec![2, 2],
                info_fields: vec![InfoField {
                    cons_dir: true,
                    peer: false,
                    seg_id: 0x111,
                    timestamp: 256,
                }],
                hop_fields: vec![HopField {
                    cons_ingress: 0,
                    cons_egress: 1,
                    exp_time: 63,
                }],
                curr_inf: 1,
                curr_hf: 3,
            }),
            flow: Some(Flow {
                flow_id: 0xdead,
                traffic_class: 0xb8,
                l4_protocol: 17,
                src_port: 1280,
                dst_port: 80,
            }),
            idint_main_option: vec![0xfd, 20, 0, 0],
            idint_stack: vec![0xfe, 10],
            ingress_interface: 1,
            payload_len: 1032,
        };
        let batch = ReportBatch {
            exporter: report.exporter.clone(),
            sequence: 42,
            reports: vec![report.clone(), report],
        };
        let bytes = batch.encode_to_vec();
        let back = ReportBatch::decode(bytes.as_slice()).unwrap();
        assert_eq!(back, batch);
        // Garbage is an error, not a panic.
        assert!(ReportBatch::decode(&[0xff, 0xff, 0xff][..]).is_err());
    }
}
