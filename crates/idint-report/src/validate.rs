//! Range checks of decoded reports: every field must fit the wire field it was taken from
//! (protobuf and JSON carry 32-bit numbers where the packet has 16 or fewer bits).

use std::fmt;

use crate::v1;

/// Most segments of a SCION path.
const MAX_SEGMENTS: usize = 3;
/// Most hop fields of one segment (the 6-bit `SegLen`).
const MAX_SEG_LEN: u64 = 63;

/// What is wrong with a report field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldProblem {
    /// A required field is absent.
    Missing,
    /// A number is larger than its wire field can hold.
    TooLarge {
        /// The value found.
        value: u64,
        /// The largest value the wire field holds.
        max: u64,
    },
    /// A list has more elements than the wire form can hold.
    TooMany {
        /// The number of elements found.
        len: usize,
        /// The most the wire form holds.
        max: usize,
    },
    /// Bytes of the wrong length.
    WrongLength {
        /// The length found.
        len: usize,
        /// The length required.
        want: usize,
    },
}

impl fmt::Display for FieldProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FieldProblem::Missing => f.write_str("missing"),
            FieldProblem::TooLarge { value, max } => write!(f, "{value} is larger than {max}"),
            FieldProblem::TooMany { len, max } => {
                write!(f, "{len} elements, at most {max} allowed")
            }
            FieldProblem::WrongLength { len, want } => write!(f, "{len} bytes, {want} required"),
        }
    }
}

/// A report field holding a value that its wire form cannot carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidReport {
    /// The field, as a path from the report (or batch), e.g. `path.hop_fields[2].cons_egress`.
    pub field: String,
    /// What is wrong with it.
    pub problem: FieldProblem,
}

impl fmt::Display for InvalidReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {}: {}", self.field, self.problem)
    }
}

impl std::error::Error for InvalidReport {}

fn fail(field: impl Into<String>, problem: FieldProblem) -> Result<(), InvalidReport> {
    Err(InvalidReport {
        field: field.into(),
        problem,
    })
}

/// `value <= max`, else the error for the field named by `field()` (built only on error).
fn at_most(value: u32, max: u64, field: impl FnOnce() -> String) -> Result<(), InvalidReport> {
    let value = u64::from(value);
    if value > max {
        return fail(field(), FieldProblem::TooLarge { value, max });
    }
    Ok(())
}

fn at_most_items(len: usize, max: usize, field: &str) -> Result<(), InvalidReport> {
    if len > max {
        return fail(field, FieldProblem::TooMany { len, max });
    }
    Ok(())
}

const U8: u64 = 0xff;
const U16: u64 = 0xffff;

fn host(h: Option<&v1::HostAddress>, field: &str) -> Result<(), InvalidReport> {
    let Some(h) = h else {
        return fail(field, FieldProblem::Missing);
    };
    at_most(h.addr_type, 15, || format!("{field}.addr_type"))?;
    // The type/length code `T << 2 | L` says the address is `4 * (L + 1)` bytes long.
    let want = 4 * ((h.addr_type & 3) as usize + 1);
    if h.raw.len() != want {
        return fail(
            format!("{field}.raw"),
            FieldProblem::WrongLength {
                len: h.raw.len(),
                want,
            },
        );
    }
    Ok(())
}

fn path(p: &v1::Path) -> Result<(), InvalidReport> {
    at_most(p.path_type, U8, || "path.path_type".into())?;
    at_most_items(p.seg_lens.len(), MAX_SEGMENTS, "path.seg_lens")?;
    for (i, &l) in p.seg_lens.iter().enumerate() {
        at_most(l, MAX_SEG_LEN, || format!("path.seg_lens[{i}]"))?;
    }
    at_most_items(p.info_fields.len(), MAX_SEGMENTS, "path.info_fields")?;
    for (i, f) in p.info_fields.iter().enumerate() {
        at_most(f.seg_id, U16, || format!("path.info_fields[{i}].seg_id"))?;
    }
    let max_hops = MAX_SEGMENTS * MAX_SEG_LEN as usize;
    at_most_items(p.hop_fields.len(), max_hops, "path.hop_fields")?;
    for (i, h) in p.hop_fields.iter().enumerate() {
        let name = |f: &str| format!("path.hop_fields[{i}].{f}");
        at_most(h.cons_ingress, U16, || name("cons_ingress"))?;
        at_most(h.cons_egress, U16, || name("cons_egress"))?;
        at_most(h.exp_time, U8, || name("exp_time"))?;
    }
    at_most(p.curr_inf, MAX_SEGMENTS as u64, || "path.curr_inf".into())?;
    at_most(p.curr_hf, MAX_SEG_LEN, || "path.curr_hf".into())
}

fn flow(f: &v1::Flow) -> Result<(), InvalidReport> {
    at_most(f.flow_id, 0xf_ffff, || "flow.flow_id".into())?;
    at_most(f.traffic_class, U8, || "flow.traffic_class".into())?;
    at_most(f.l4_protocol, U8, || "flow.l4_protocol".into())?;
    at_most(f.src_port, U16, || "flow.src_port".into())?;
    at_most(f.dst_port, U16, || "flow.dst_port".into())
}

impl v1::Report {
    /// Checks that every field fits the packet field it describes: both hosts present with a
    /// 4-bit type and as many bytes as the type says, interface IDs, ports and lengths within
    /// 16 bits, the flow ID within 20 bits, the path within the SCION path header's limits.
    /// The ID-INT option bytes are not looked at here (see [`crate::idint_hbh`]).
    pub fn validate(&self) -> Result<(), InvalidReport> {
        host(self.src_host.as_ref(), "src_host")?;
        host(self.dst_host.as_ref(), "dst_host")?;
        if let Some(p) = &self.path {
            path(p)?;
        }
        if let Some(f) = &self.flow {
            flow(f)?;
        }
        at_most(self.ingress_interface, U16, || "ingress_interface".into())?;
        at_most(self.payload_len, U16, || "payload_len".into())
    }
}

impl v1::ReportBatch {
    /// Checks every report with [`v1::Report::validate`]; the field of the first invalid one
    /// is prefixed with its position, e.g. `reports[3].ingress_interface`.
    pub fn validate(&self) -> Result<(), InvalidReport> {
        for (i, r) in self.reports.iter().enumerate() {
            r.validate().map_err(|e| InvalidReport {
                field: format!("reports[{i}].{}", e.field),
                problem: e.problem,
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> v1::Report {
        v1::Report {
            src_host: Some(v1::HostAddress {
                addr_type: 0,
                raw: vec![10, 0, 0, 1],
            }),
            dst_host: Some(v1::HostAddress {
                addr_type: 4,
                raw: vec![0, 2, 0, 0],
            }),
            path: Some(v1::Path {
                path_type: 1,
                seg_lens: vec![63, 63, 63],
                info_fields: vec![
                    v1::InfoField {
                        seg_id: 0xffff,
                        ..Default::default()
                    };
                    3
                ],
                hop_fields: vec![
                    v1::HopField {
                        cons_ingress: 0xffff,
                        cons_egress: 0xffff,
                        exp_time: 0xff,
                    };
                    189
                ],
                curr_inf: 2,
                curr_hf: 63,
            }),
            flow: Some(v1::Flow {
                flow_id: 0xf_ffff,
                traffic_class: 0xff,
                l4_protocol: 0xff,
                src_port: 0xffff,
                dst_port: 0xffff,
            }),
            ingress_interface: 0xffff,
            payload_len: 0xffff,
            ..Default::default()
        }
    }

    fn err(r: &v1::Report) -> (String, FieldProblem) {
        let e = r.validate().unwrap_err();
        (e.field, e.problem)
    }

    #[test]
    fn largest_wire_values_are_valid() {
        valid().validate().unwrap();
        let mut r = valid();
        r.path = None;
        r.flow = None;
        r.dst_host = Some(v1::HostAddress {
            addr_type: 0xf,
            raw: vec![1; 16],
        });
        r.validate().unwrap();
    }

    #[test]
    fn out_of_range_fields_are_named() {
        let too_large = |value, max| FieldProblem::TooLarge { value, max };
        let mut r = valid();
        r.ingress_interface = u32::MAX;
        assert_eq!(
            err(&r),
            (
                "ingress_interface".into(),
                too_large(u64::from(u32::MAX), 0xffff)
            )
        );
        let mut r = valid();
        r.payload_len = 0x1_0000;
        assert_eq!(err(&r).0, "payload_len");
        let mut r = valid();
        r.src_host.as_mut().unwrap().addr_type = 99;
        assert_eq!(err(&r), ("src_host.addr_type".into(), too_large(99, 15)));
        let mut r = valid();
        r.dst_host.as_mut().unwrap().raw = vec![1; 100];
        assert_eq!(
            err(&r),
            (
                "dst_host.raw".into(),
                FieldProblem::WrongLength { len: 100, want: 4 }
            )
        );
        let mut r = valid();
        r.src_host = None;
        assert_eq!(err(&r), ("src_host".into(), FieldProblem::Missing));
        let mut r = valid();
        r.flow.as_mut().unwrap().flow_id = 0x10_0000;
        assert_eq!(err(&r).0, "flow.flow_id");
        let mut r = valid();
        r.flow.as_mut().unwrap().dst_port = 0x1_0000;
        assert_eq!(err(&r).0, "flow.dst_port");
        let mut r = valid();
        r.path.as_mut().unwrap().hop_fields[7].exp_time = 256;
        assert_eq!(err(&r).0, "path.hop_fields[7].exp_time");
        let mut r = valid();
        r.path.as_mut().unwrap().hop_fields[0].cons_egress = 0x1_0000;
        assert_eq!(err(&r).0, "path.hop_fields[0].cons_egress");
        let mut r = valid();
        r.path
            .as_mut()
            .unwrap()
            .hop_fields
            .push(v1::HopField::default());
        assert_eq!(
            err(&r),
            (
                "path.hop_fields".into(),
                FieldProblem::TooMany { len: 190, max: 189 }
            )
        );
        let mut r = valid();
        r.path.as_mut().unwrap().seg_lens.push(1);
        assert_eq!(err(&r).0, "path.seg_lens");
        let mut r = valid();
        r.path.as_mut().unwrap().seg_lens[1] = 64;
        assert_eq!(err(&r).0, "path.seg_lens[1]");
        let mut r = valid();
        r.path.as_mut().unwrap().info_fields[2].seg_id = 0x1_0000;
        assert_eq!(err(&r).0, "path.info_fields[2].seg_id");
        let mut r = valid();
        r.path.as_mut().unwrap().curr_inf = 4;
        assert_eq!(err(&r).0, "path.curr_inf");
        let mut r = valid();
        r.path.as_mut().unwrap().path_type = 256;
        assert_eq!(err(&r).0, "path.path_type");
    }

    #[test]
    fn batch_names_the_report() {
        let mut bad = valid();
        bad.ingress_interface = u32::MAX;
        let b = v1::ReportBatch {
            exporter: None,
            sequence: 0,
            reports: vec![valid(), bad],
        };
        let e = b.validate().unwrap_err();
        assert_eq!(e.field, "reports[1].ingress_interface");
        assert_eq!(
            e.to_string(),
            "invalid reports[1].ingress_interface: 4294967295 is larger than 65535"
        );
    }
}
