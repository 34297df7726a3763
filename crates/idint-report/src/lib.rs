//! Protobuf schema of ID-INT telemetry reports, package `idint.report.v1`
//! (`proto/idint/report/v1/report.proto`), shared by routers, hosts and the collector.
//!
//! A [`v1::Report`] carries the raw ID-INT main option and stack bytes so that the collector
//! verifies every MAC itself; a [`v1::ReportBatch`] groups reports for transport.

/// Version 1 of the report schema.
#[allow(missing_docs, clippy::doc_markdown)]
pub mod v1 {
    include!(concat!(env!("OUT_DIR"), "/idint.report.v1.rs"));
}

pub use prost::Message;

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
