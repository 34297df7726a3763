//! The JSON form of a report batch (HTTP ingest with `Content-Type: application/json`): the
//! protobuf fields by name, ISD-AS as text (`1-ff00:0:110`), hosts as IP address text, the
//! ID-INT option bytes as hex. Example:
//!
//! ```json
//! {"exporter": {"isd_as": "1-ff00:0:d", "router_id": 5, "name": "rd"}, "sequence": 1,
//!  "reports": [{"receive_time_ns": 1763800000000000000, "src_isd_as": "1-ff00:0:a",
//!    "src_host": "10.0.0.1", "dst_isd_as": "1-ff00:0:d", "dst_host": "10.4.0.9",
//!    "path": {"seg_lens": [4], "info_fields": [{"cons_dir": true}],
//!             "hop_fields": [{"cons_ingress": 0, "cons_egress": 1}, ...]},
//!    "idint_main_option_hex": "fd...", "idint_stack_hex": "...", "ingress_interface": 6}]}
//! ```

use std::net::IpAddr;

use crate::v1;
use idint_wire::{HostAddr, IsdAsn};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Batch {
    exporter: Option<Exporter>,
    #[serde(default)]
    sequence: u64,
    reports: Vec<Report>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Exporter {
    isd_as: String,
    #[serde(default)]
    router_id: u32,
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Report {
    exporter: Option<Exporter>,
    #[serde(default)]
    receive_time_ns: u64,
    src_isd_as: String,
    src_host: String,
    dst_isd_as: String,
    dst_host: String,
    path: Option<Path>,
    idint_main_option_hex: String,
    idint_stack_hex: String,
    #[serde(default)]
    ingress_interface: u32,
    #[serde(default)]
    payload_len: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Path {
    #[serde(default = "one")]
    path_type: u32,
    seg_lens: Vec<u32>,
    info_fields: Vec<Info>,
    hop_fields: Vec<Hop>,
    #[serde(default)]
    curr_inf: u32,
    #[serde(default)]
    curr_hf: u32,
}

fn one() -> u32 {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Info {
    cons_dir: bool,
    #[serde(default)]
    peer: bool,
    #[serde(default)]
    seg_id: u32,
    #[serde(default)]
    timestamp: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Hop {
    cons_ingress: u32,
    cons_egress: u32,
    #[serde(default)]
    exp_time: u32,
}

fn ia(s: &str) -> Result<u64, String> {
    s.parse::<IsdAsn>()
        .map(|i| i.to_u64())
        .map_err(|_| format!("bad ISD-AS {s:?}"))
}

fn host(s: &str) -> Result<v1::HostAddress, String> {
    let ip: IpAddr = s.parse().map_err(|_| format!("bad host address {s:?}"))?;
    let h = HostAddr::from(ip);
    let (b, n) = h.to_bytes();
    Ok(v1::HostAddress {
        addr_type: u32::from(h.addr_type().nibble()),
        raw: b[..n].to_vec(),
    })
}

fn exporter(e: Exporter) -> Result<v1::Exporter, String> {
    Ok(v1::Exporter {
        isd_as: ia(&e.isd_as)?,
        router_id: e.router_id,
        name: e.name,
    })
}

/// Decodes a JSON batch into the protobuf types.
pub fn decode(bytes: &[u8]) -> Result<v1::ReportBatch, String> {
    let b: Batch = serde_json::from_slice(bytes).map_err(|e| format!("JSON batch: {e}"))?;
    let mut reports = Vec::with_capacity(b.reports.len());
    for (i, r) in b.reports.into_iter().enumerate() {
        let at = |e: String| format!("report {i}: {e}");
        reports.push(v1::Report {
            exporter: r.exporter.map(exporter).transpose().map_err(at)?,
            receive_time_ns: r.receive_time_ns,
            src_isd_as: ia(&r.src_isd_as).map_err(at)?,
            src_host: Some(host(&r.src_host).map_err(at)?),
            dst_isd_as: ia(&r.dst_isd_as).map_err(at)?,
            dst_host: Some(host(&r.dst_host).map_err(at)?),
            path: r.path.map(|p| v1::Path {
                path_type: p.path_type,
                seg_lens: p.seg_lens,
                info_fields: p
                    .info_fields
                    .into_iter()
                    .map(|f| v1::InfoField {
                        cons_dir: f.cons_dir,
                        peer: f.peer,
                        seg_id: f.seg_id,
                        timestamp: f.timestamp,
                    })
                    .collect(),
                hop_fields: p
                    .hop_fields
                    .into_iter()
                    .map(|h| v1::HopField {
                        cons_ingress: h.cons_ingress,
                        cons_egress: h.cons_egress,
                        exp_time: h.exp_time,
                    })
                    .collect(),
                curr_inf: p.curr_inf,
                curr_hf: p.curr_hf,
            }),
            flow: None,
            idint_main_option: hex::decode(&r.idint_main_option_hex)
                .map_err(|e| at(format!("idint_main_option_hex: {e}")))?,
            idint_stack: hex::decode(&r.idint_stack_hex)
                .map_err(|e| at(format!("idint_stack_hex: {e}")))?,
            ingress_interface: r.ingress_interface,
            payload_len: r.payload_len,
        });
    }
    Ok(v1::ReportBatch {
        exporter: b.exporter.map(exporter).transpose()?,
        sequence: b.sequence,
        reports,
    })
}

/// Encodes a batch as JSON (the inverse of [`decode`], for clients and tests).
pub fn encode(b: &v1::ReportBatch) -> serde_json::Value {
    use serde_json::json;
    let ia = |v: u64| IsdAsn::from_u64(v).to_string();
    let host = |h: &Option<v1::HostAddress>| {
        h.as_ref()
            .and_then(|h| match h.raw.len() {
                4 => <[u8; 4]>::try_from(&h.raw[..])
                    .ok()
                    .map(|b| IpAddr::from(b).to_string()),
                16 => <[u8; 16]>::try_from(&h.raw[..])
                    .ok()
                    .map(|b| IpAddr::from(b).to_string()),
                _ => None,
            })
            .unwrap_or_default()
    };
    let exp = |e: &v1::Exporter| json!({"isd_as": ia(e.isd_as), "router_id": e.router_id, "name": e.name});
    json!({
        "exporter": b.exporter.as_ref().map(exp),
        "sequence": b.sequence,
        "reports": b.reports.iter().map(|r| json!({
            "exporter": r.exporter.as_ref().map(exp),
            "receive_time_ns": r.receive_time_ns,
            "src_isd_as": ia(r.src_isd_as),
            "src_host": host(&r.src_host),
            "dst_isd_as": ia(r.dst_isd_as),
            "dst_host": host(&r.dst_host),
            "path": r.path.as_ref().map(|p| json!({
                "path_type": p.path_type,
                "seg_lens": p.seg_lens,
                "info_fields": p.info_fields.iter().map(|f| json!({
                    "cons_dir": f.cons_dir, "peer": f.peer, "seg_id": f.seg_id, "timestamp": f.timestamp,
                })).collect::<Vec<_>>(),
                "hop_fields": p.hop_fields.iter().map(|h| json!({
                    "cons_ingress": h.cons_ingress, "cons_egress": h.cons_egress, "exp_time": h.exp_time,
                })).collect::<Vec<_>>(),
                "curr_inf": p.curr_inf,
                "curr_hf": p.curr_hf,
            })),
            "idint_main_option_hex": hex::encode(&r.idint_main_option),
            "idint_stack_hex": hex::encode(&r.idint_stack),
            "ingress_interface": r.ingress_interface,
            "payload_len": r.payload_len,
        })).collect::<Vec<_>>(),
    })
}
