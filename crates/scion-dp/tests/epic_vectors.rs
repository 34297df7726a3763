//! `vectors/scion/epic.json`: EPIC-HP hop validation fields and timestamp freshness.

use idint_wire::{HostAddr, IsdAsn};
use scion_dp::epic::{HvfInput, hvf, timestamp_fresh, verify_hvf};

/// Parses `2024-01-01T00:10:00Z` / `...:57.5Z` style times into Unix ns (date fixed by the
/// vectors: 2024-01-01).
fn utc_2024_01_01_ns(s: &str) -> u64 {
    let t = s
        .strip_prefix("2024-01-01T")
        .unwrap()
        .strip_suffix('Z')
        .unwrap();
    let mut parts = t.split(':');
    let h: u64 = parts.next().unwrap().parse().unwrap();
    let m: u64 = parts.next().unwrap().parse().unwrap();
    let sec: f64 = parts.next().unwrap().parse().unwrap();
    (1_704_067_200 + h * 3600 + m * 60) * 1_000_000_000 + (sec * 1e9).round() as u64
}

#[test]
fn hvf_and_freshness_vectors() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/scion/epic.json"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = v["vectors"].as_array().unwrap();
    assert_eq!(cases.len(), 3);
    for c in cases {
        let auth: [u8; 16] = hex::decode(c["auth_hex"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let host: HostAddr = match c["src_host"]
            .as_str()
            .unwrap()
            .parse::<std::net::IpAddr>()
            .unwrap()
        {
            std::net::IpAddr::V4(a) => a.into(),
            std::net::IpAddr::V6(a) => a.into(),
        };
        let epic_ts = c["pktid_epic_ts"].as_u64().unwrap() as u32;
        let counter = c["pktid_counter"].as_u64().unwrap() as u32;
        let ts = c["info0_timestamp"].as_u64().unwrap() as u32;
        let input = HvfInput {
            info0_timestamp: ts,
            pkt_id: (u64::from(epic_ts) << 32) | u64::from(counter),
            src_ia: c["src_ia"].as_str().unwrap().parse::<IsdAsn>().unwrap(),
            src_host: &host,
            payload_len: c["payload_len"].as_u64().unwrap() as u16,
        };
        let want: [u8; 4] = hex::decode(c["hvf_hex"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        assert_eq!(hvf(&auth, &input), want);
        assert!(verify_hvf(&auth, &input, &want));
        let mut wrong = want;
        wrong[3] ^= 1;
        assert!(!verify_hvf(&auth, &input, &wrong));
        let now = utc_2024_01_01_ns(c["router_now_utc"].as_str().unwrap());
        assert_eq!(
            timestamp_fresh(ts, epic_ts, now),
            c["verify_timestamp_ok_at_router_now"].as_bool().unwrap()
        );
        // The vector prints the sender time rounded to the millisecond.
        let sent = scion_dp::epic::sender_time_ns(ts, epic_ts);
        let printed = utc_2024_01_01_ns(c["sender_time_utc"].as_str().unwrap());
        assert!(sent.abs_diff(printed) < 1_000_000, "{sent} vs {printed}");
    }
}
