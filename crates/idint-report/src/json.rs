//! The JSON form of a report batch (HTTP ingest with `Content-Type: application/json`): the
//! protobuf fields by name, ISD-AS as text (`1-ff00:0:110`), the ID-INT option bytes as hex.
//! Example:
//!
//! ```json
//! {"exporter": {"isd_as": "1-ff00:0:d", "router_id": 5, "name": "rd"}, "sequence": 1,
//!  "reports": [{"receive_time_ns": 1763800000000000000, "src_isd_as": "1-ff00:0:a",
//!    "src_host": "10.0.0.1", "dst_isd_as": "1-ff00:0:d", "dst_host": "CS",
//!    "path": {"seg_lens": [4], "info_fields": [{"cons_dir": true}],
//!             "hop_fields": [{"cons_ingress": 0, "cons_egress": 1}, ...]},
//!    "flow": {"flow_id": 1, "traffic_class": 0, "l4_protocol": 17, "src_port": 1, "dst_port": 2},
//!    "idint_main_option_hex": "fd...", "idint_stack_hex": "...", "ingress_interface": 6}]}
//! ```
//!
//! A host address is one of
//! - IPv4 text (type 0) or IPv6 text (type 3), such as `"10.0.0.1"` or `"fd00::9"`;
//! - a service name (type 4): `"DS"`, `"CS"`, `"Wildcard"`, `"None"`, with `_M` for
//!   multicast (`"CS_M"`);
//! - `{"addr_type": 1, "raw_hex": "0102030405060708"}`: any type code 0-15 with its raw bytes,
//!   the form [`encode`] writes for every address the text forms cannot carry exactly (other
//!   types, unnamed services, service addresses with nonzero padding).
//!
//! `flow` is optional (absent or `null`: no flow). [`decode`] checks every report with
//! [`v1::Report::validate`], so a number too large for its packet field is rejected with the
//! field's name; for every valid batch, `decode(encode(b)) == b`.

use std::net::IpAddr;

use crate::v1;
use idint_wire::{IsdAsn, Svc};
use serde::Deserialize;
use serde_json::Value;

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
    src_host: Value,
    dst_isd_as: String,
    dst_host: Value,
    path: Option<Path>,
    flow: Option<Flow>,
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Flow {
    #[serde(default)]
    flow_id: u32,
    #[serde(default)]
    traffic_class: u32,
    #[serde(default)]
    l4_protocol: u32,
    #[serde(default)]
    src_port: u32,
    #[serde(default)]
    dst_port: u32,
}

/// A host address as type code and raw bytes.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHost {
    addr_type: u32,
    raw_hex: String,
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

/// Host type codes of the text forms.
const IPV4: u32 = 0;
const IPV6: u32 = 3;
const SVC: u32 = 4;

/// Reads a host address in one of its three forms (`null`: none, for `validate` to reject).
fn host(field: &str, v: Value) -> Result<Option<v1::HostAddress>, String> {
    let (addr_type, raw) = match v {
        Value::Null => return Ok(None),
        Value::String(s) => {
            if let Ok(ip) = s.parse::<IpAddr>() {
                match ip {
                    IpAddr::V4(a) => (IPV4, a.octets().to_vec()),
                    IpAddr::V6(a) => (IPV6, a.octets().to_vec()),
                }
            } else if let Ok(svc) = s.parse::<Svc>() {
                let [hi, lo] = svc.0.to_be_bytes();
                (SVC, vec![hi, lo, 0, 0])
            } else {
                return Err(format!(
                    "{field}: {s:?} is neither an IP address nor a service name"
                ));
            }
        }
        v @ Value::Object(_) => {
            let h: RawHost = serde_json::from_value(v).map_err(|e| format!("{field}: {e}"))?;
            let raw = hex::decode(&h.raw_hex).map_err(|e| format!("{field}.raw_hex: {e}"))?;
            (h.addr_type, raw)
        }
        _ => {
            return Err(format!(
                "{field}: must be address text or {{\"addr_type\", \"raw_hex\"}}"
            ));
        }
    };
    Ok(Some(v1::HostAddress { addr_type, raw }))
}

/// The JSON form of a host address: text where the text reads back to exactly the same type
/// and bytes, else type code and hex.
fn host_json(h: Option<&v1::HostAddress>) -> Value {
    let Some(h) = h else {
        return Value::Null;
    };
    let text = match (h.addr_type, h.raw.len()) {
        (IPV4, 4) => <[u8; 4]>::try_from(&h.raw[..])
            .ok()
            .map(|b| IpAddr::from(b).to_string()),
        (IPV6, 16) => <[u8; 16]>::try_from(&h.raw[..])
            .ok()
            .map(|b| IpAddr::from(b).to_string()),
        (SVC, 4) if h.raw[2..] == [0, 0] => {
            let svc = Svc(u16::from_be_bytes([h.raw[0], h.raw[1]]));
            let name = svc.to_string();
            // Unnamed services print as `SVC(0x...)`, which does not parse back.
            (name.parse::<Svc>() == Ok(svc)).then_some(name)
        }
        _ => None,
    };
    match text {
        Some(t) => Value::String(t),
        None => serde_json::json!({"addr_type": h.addr_type, "raw_hex": hex::encode(&h.raw)}),
    }
}

fn exporter(e: Exporter) -> Result<v1::Exporter, String> {
    Ok(v1::Exporter {
        isd_as: ia(&e.isd_as)?,
        router_id: e.router_id,
        name: e.name,
    })
}

/// Decodes a JSON batch into the protobuf types and checks every report with
/// [`v1::Report::validate`]; the error names the report and the field.
pub fn decode(bytes: &[u8]) -> Result<v1::ReportBatch, String> {
    let b: Batch = serde_json::from_slice(bytes).map_err(|e| format!("JSON batch: {e}"))?;
    let mut reports = Vec::with_capacity(b.reports.len());
    for (i, r) in b.reports.into_iter().enumerate() {
        let at = |e: String| format!("report {i}: {e}");
        let report = v1::Report {
            exporter: r.exporter.map(exporter).transpose().map_err(at)?,
            receive_time_ns: r.receive_time_ns,
            src_isd_as: ia(&r.src_isd_as).map_err(at)?,
            src_host: host("src_host", r.src_host).map_err(at)?,
            dst_isd_as: ia(&r.dst_isd_as).map_err(at)?,
            dst_host: host("dst_host", r.dst_host).map_err(at)?,
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
            flow: r.flow.map(|f| v1::Flow {
                flow_id: f.flow_id,
                traffic_class: f.traffic_class,
                l4_protocol: f.l4_protocol,
                src_port: f.src_port,
                dst_port: f.dst_port,
            }),
            idint_main_option: hex::decode(&r.idint_main_option_hex)
                .map_err(|e| at(format!("idint_main_option_hex: {e}")))?,
            idint_stack: hex::decode(&r.idint_stack_hex)
                .map_err(|e| at(format!("idint_stack_hex: {e}")))?,
            ingress_interface: r.ingress_interface,
            payload_len: r.payload_len,
        };
        report.validate().map_err(|e| at(e.to_string()))?;
        reports.push(report);
    }
    Ok(v1::ReportBatch {
        exporter: b.exporter.map(exporter).transpose()?,
        sequence: b.sequence,
        reports,
    })
}

/// Encodes a batch as JSON (the inverse of [`decode`], for clients and tests): nothing is
/// dropped or altered, so `decode` gives back exactly `b` when `b` is valid (and names the
/// invalid field otherwise).
pub fn encode(b: &v1::ReportBatch) -> Value {
    use serde_json::json;
    let ia = |v: u64| IsdAsn::from_u64(v).to_string();
    let exp = |e: &v1::Exporter| json!({"isd_as": ia(e.isd_as), "router_id": e.router_id, "name": e.name});
    json!({
        "exporter": b.exporter.as_ref().map(exp),
        "sequence": b.sequence,
        "reports": b.reports.iter().map(|r| json!({
            "exporter": r.exporter.as_ref().map(exp),
            "receive_time_ns": r.receive_time_ns,
            "src_isd_as": ia(r.src_isd_as),
            "src_host": host_json(r.src_host.as_ref()),
            "dst_isd_as": ia(r.dst_isd_as),
            "dst_host": host_json(r.dst_host.as_ref()),
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
            "flow": r.flow.as_ref().map(|f| json!({
                "flow_id": f.flow_id, "traffic_class": f.traffic_class,
                "l4_protocol": f.l4_protocol, "src_port": f.src_port, "dst_port": f.dst_port,
            })),
            "idint_main_option_hex": hex::encode(&r.idint_main_option),
            "idint_stack_hex": hex::encode(&r.idint_stack),
            "ingress_interface": r.ingress_interface,
            "payload_len": r.payload_len,
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(addr_type: u32, raw: &[u8]) -> Option<v1::HostAddress> {
        Some(v1::HostAddress {
            addr_type,
            raw: raw.to_vec(),
        })
    }

    fn report(src_host: Option<v1::HostAddress>, dst_host: Option<v1::HostAddress>) -> v1::Report {
        v1::Report {
            exporter: Some(v1::Exporter {
                isd_as: u64::MAX,
                router_id: u32::MAX,
                name: "br\u{e9}\"1".into(),
            }),
            receive_time_ns: u64::MAX,
            src_isd_as: 0x0001_ff00_0000_0110,
            src_host,
            dst_isd_as: 0x0002_0000_ffff_ffff,
            dst_host,
            path: Some(v1::Path {
                path_type: 3,
                seg_lens: vec![2, 1],
                info_fields: vec![
                    v1::InfoField {
                        cons_dir: true,
                        peer: true,
                        seg_id: 0xffff,
                        timestamp: u32::MAX,
                    },
                    v1::InfoField::default(),
                ],
                hop_fields: vec![
                    v1::HopField {
                        cons_ingress: 0xffff,
                        cons_egress: 1,
                        exp_time: 0xff,
                    };
                    3
                ],
                curr_inf: 1,
                curr_hf: 2,
            }),
            flow: Some(v1::Flow {
                flow_id: 0xf_ffff,
                traffic_class: 0xb8,
                l4_protocol: 17,
                src_port: 0xffff,
                dst_port: 80,
            }),
            idint_main_option: vec![0xfd, 0x14, 0, 1],
            idint_stack: vec![0xfe, 10],
            ingress_interface: 0xffff,
            payload_len: 0xffff,
        }
    }

    fn batch(reports: Vec<v1::Report>) -> v1::ReportBatch {
        v1::ReportBatch {
            exporter: Some(v1::Exporter {
                isd_as: 0,
                router_id: 0,
                name: String::new(),
            }),
            sequence: u64::MAX,
            reports,
        }
    }

    fn round_trip(b: &v1::ReportBatch) -> Result<v1::ReportBatch, String> {
        decode(encode(b).to_string().as_bytes())
    }

    fn v4() -> Option<v1::HostAddress> {
        h(0, &[10, 0, 0, 1])
    }

    #[test]
    fn svc_host_round_trips_as_service_name() {
        let b = batch(vec![report(v4(), h(4, &[0, 2, 0, 0]))]);
        let j = encode(&b);
        assert_eq!(j["reports"][0]["dst_host"], "CS");
        assert_eq!(round_trip(&b).unwrap(), b);
        for (raw, text) in [
            ([0x80, 0x02, 0, 0], "CS_M"),
            ([0, 1, 0, 0], "DS"),
            ([0, 0x10, 0, 0], "Wildcard"),
            ([0xff, 0xff, 0, 0], "None"),
        ] {
            let b = batch(vec![report(v4(), h(4, &raw))]);
            assert_eq!(encode(&b)["reports"][0]["dst_host"], text);
            assert_eq!(round_trip(&b).unwrap(), b, "{text}");
        }
    }

    #[test]
    fn flow_round_trips() {
        let b = batch(vec![report(v4(), h(3, &[0xfd; 16]))]);
        assert_eq!(round_trip(&b).unwrap().reports[0].flow, b.reports[0].flow);
        let mut no_flow = b.clone();
        no_flow.reports[0].flow = None;
        assert_eq!(round_trip(&no_flow).unwrap(), no_flow);
    }

    #[test]
    fn hosts_without_exact_text_round_trip_as_type_and_hex() {
        let other = [
            h(1, &[1, 2, 3, 4, 5, 6, 7, 8]),
            h(0xf, &[0xab; 16]),
            h(4, &[0x12, 0x34, 0, 0]), // unnamed service
            h(4, &[0, 2, 0xaa, 0xbb]), // nonzero padding
            h(0x2, &[9; 12]),
        ];
        for dst in other {
            let b = batch(vec![report(v4(), dst.clone())]);
            let j = encode(&b);
            let d = dst.as_ref().unwrap();
            assert_eq!(
                j["reports"][0]["dst_host"],
                serde_json::json!({"addr_type": d.addr_type, "raw_hex": hex::encode(&d.raw)})
            );
            assert_eq!(round_trip(&b).unwrap(), b, "{dst:?}");
        }
        // Every field at once, with IPv6 (also IPv4-mapped) and several reports.
        let mut minimal = report(h(3, &[0; 16]), h(0, &[0; 4]));
        minimal.exporter = None;
        minimal.path = None;
        minimal.flow = None;
        let mut mapped = [0u8; 16];
        mapped[10..].copy_from_slice(&[0xff, 0xff, 10, 0, 0, 1]);
        let mut b = batch(vec![
            report(h(3, &mapped), v4()),
            minimal,
            v1::Report {
                src_host: v4(),
                dst_host: v4(),
                ..Default::default()
            },
        ]);
        assert_eq!(round_trip(&b).unwrap(), b);
        b.exporter = None;
        assert_eq!(round_trip(&b).unwrap(), b);
    }

    #[test]
    fn out_of_range_values_are_rejected_with_the_field() {
        let mut r = report(v4(), v4());
        r.ingress_interface = u32::MAX;
        let e = round_trip(&batch(vec![report(v4(), v4()), r])).unwrap_err();
        assert!(e.starts_with("report 1: invalid ingress_interface:"), "{e}");
        let e = round_trip(&batch(vec![report(h(99, &[1; 100]), v4())])).unwrap_err();
        assert!(e.contains("invalid src_host.addr_type: 99"), "{e}");
        let e = round_trip(&batch(vec![report(h(0, &[1; 5]), v4())])).unwrap_err();
        assert!(
            e.contains("invalid src_host.raw: 5 bytes, 4 required"),
            "{e}"
        );
        let e = round_trip(&batch(vec![report(v4(), None)])).unwrap_err();
        assert!(e.contains("invalid dst_host: missing"), "{e}");
        let mut r = report(v4(), v4());
        r.flow.as_mut().unwrap().flow_id = 1 << 20;
        let e = round_trip(&batch(vec![r])).unwrap_err();
        assert!(e.contains("invalid flow.flow_id"), "{e}");
        let mut r = report(v4(), v4());
        r.path.as_mut().unwrap().hop_fields[2].cons_ingress = 0x1_0000;
        let e = round_trip(&batch(vec![r])).unwrap_err();
        assert!(e.contains("invalid path.hop_fields[2].cons_ingress"), "{e}");
    }

    const SEED: &str = r#"{"exporter": {"isd_as": "1-ff00:0:d", "router_id": 5, "name": "rd"}, "sequence": 1,
 "reports": [{"receive_time_ns": 1763800000000000000, "src_isd_as": "1-ff00:0:a",
   "src_host": "10.0.0.1", "dst_isd_as": "1-ff00:0:d", "dst_host": "fd00::9",
   "path": {"seg_lens": [2], "info_fields": [{"cons_dir": true, "seg_id": 17, "timestamp": 1763800000}],
            "hop_fields": [{"cons_ingress": 0, "cons_egress": 1, "exp_time": 63}, {"cons_ingress": 6, "cons_egress": 0}],
            "curr_inf": 0, "curr_hf": 1},
   "idint_main_option_hex": "fd1400000000", "idint_stack_hex": "fe0a0000", "ingress_interface": 6, "payload_len": 100}]}"#;

    #[test]
    fn documents_of_the_earlier_form_still_decode() {
        let b = decode(SEED.as_bytes()).unwrap();
        let r = &b.reports[0];
        assert_eq!(r.src_host, v4());
        assert_eq!(r.dst_host.as_ref().unwrap().addr_type, 3);
        assert_eq!(r.flow, None);
        assert_eq!(r.path.as_ref().unwrap().path_type, 1);
        assert_eq!(round_trip(&b).unwrap(), b);
        // The type-and-hex form of an IPv4 address is the same address.
        let obj = SEED.replace(
            r#""10.0.0.1""#,
            r#"{"addr_type": 0, "raw_hex": "0a000001"}"#,
        );
        assert_eq!(decode(obj.as_bytes()).unwrap(), b);
    }

    #[test]
    fn bad_host_forms_are_errors() {
        for (host, why) in [
            (r#""""#, "neither an IP address nor a service name"),
            (r#""CS_X""#, "neither an IP address nor a service name"),
            (
                r#""SVC(0x1234)""#,
                "neither an IP address nor a service name",
            ),
            ("7", "must be address text"),
            (r#"{"addr_type": 0}"#, "missing field `raw_hex`"),
            (
                r#"{"addr_type": 0, "raw_hex": "0g000001"}"#,
                "src_host.raw_hex",
            ),
            (
                r#"{"addr_type": 0, "raw_hex": "0a000001", "x": 1}"#,
                "unknown field",
            ),
            (r#"{"addr_type": 4294967296, "raw_hex": ""}"#, "src_host"),
            ("null", "invalid src_host: missing"),
        ] {
            let doc = SEED.replace(r#""10.0.0.1""#, host);
            let e = decode(doc.as_bytes()).unwrap_err();
            assert!(
                e.starts_with("report 0: ") && e.contains(why),
                "{host}: {e}"
            );
        }
        let doc = SEED.replace(r#""src_host": "10.0.0.1","#, "");
        let e = decode(doc.as_bytes()).unwrap_err();
        assert!(e.contains("missing field `src_host`"), "{e}");
    }
}
