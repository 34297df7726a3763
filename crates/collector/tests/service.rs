//! The service over loopback: reports from a real four-AS scion-dp chain sent over UDP and
//! HTTP (protobuf and JSON) come out of the REST API with the routers' exact values; bad input
//! gets the right status and counters; overload is counted backpressure; shutdown processes
//! every accepted batch.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use collector::config::Config;
use collector::counters::{MalformedReason, RejectReason, Transport};
use collector::service::{self, Running, Stores, now_ns};
use idint_report::Message;
use serde_json::Value;
use test_kit::chain::{self, Ask, Chain, ases};
use test_kit::service::{self as kit, http, tempdir};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

const TOKEN: &str = "test-token-123";

/// Config for the chain's collector (A:10.1.0.100), keys on disk, loopback listeners.
fn config(dir: &std::path::Path, queue: usize, with_keys: bool) -> Config {
    kit::config(
        dir,
        TOKEN,
        with_keys,
        &format!(
            r#"
[ingest]
udp_listen = "127.0.0.1:0"
queue_batches = {queue}

[detection]
latency_ns = 0.0
"#
        ),
    )
}

/// The service on [`config`]`(dir, queue, true)` without stores.
async fn start_in(dir: &std::path::Path, queue: usize) -> Running {
    kit::start(config(dir, queue, true), Stores::default()).await
}

async fn get_json(addr: SocketAddr, path: &str) -> (u16, Value) {
    let (st, b) = http(addr, "GET", path, &[], b"").await;
    (st, serde_json::from_slice(&b).unwrap_or(Value::Null))
}

/// Posts `batch` as protobuf: the HTTP status and body.
async fn post_batch(api: SocketAddr, batch: &idint_report::v1::ReportBatch) -> (u16, Vec<u8>) {
    http(
        api,
        "POST",
        "/api/v1/reports",
        &[("Content-Type", "application/x-protobuf")],
        &batch.encode_to_vec(),
    )
    .await
}

/// Posts `batch` to the report endpoint in its JSON form.
async fn post_json_batch(api: SocketAddr, batch: &idint_report::v1::ReportBatch) -> (u16, Vec<u8>) {
    let json = collector::json::encode(batch).to_string();
    http(
        api,
        "POST",
        "/api/v1/reports",
        &[("Content-Type", "application/json")],
        json.as_bytes(),
    )
    .await
}

/// Imports the chain's topology files through the admin API.
async fn import_topology(api: SocketAddr) {
    for f in chain::topology_files() {
        assert_eq!(admin_post(api, "/api/v1/admin/topology", &f).await.0, 200);
    }
}

async fn admin_post(addr: SocketAddr, path: &str, body: &str) -> (u16, Value) {
    let auth = format!("Bearer {TOKEN}");
    let (st, b) = http(
        addr,
        "POST",
        path,
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        body.as_bytes(),
    )
    .await;
    (st, serde_json::from_slice(&b).unwrap_or(Value::Null))
}

/// Waits until the pipeline has taken `n` reports.
async fn settle(r: &Running, n: u64) {
    kit::settle(r, n, 500).await;
}

fn telemetry_value(v: &Value, measurement: &str) -> f64 {
    v["telemetry"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["measurement"] == measurement)
        .unwrap_or_else(|| panic!("no {measurement} in {v}"))["value"]
        .as_f64()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_over_udp_and_http_come_out_of_the_api_with_exact_values() {
    end_to_end(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_holds_with_two_pipeline_workers() {
    end_to_end(2).await;
}

async fn end_to_end(workers: usize) {
    let dir = tempdir(&format!("e2e{workers}"));
    let mut cfg = config(&dir, 256, true);
    cfg.ingest.workers = workers;
    let r = service::start(cfg, Stores::default()).await.unwrap();
    let api = r.http_addr;
    assert_eq!(get_json(api, "/health").await.0, 200);
    assert_eq!(get_json(api, "/ready").await.0, 200);

    // Admin: topology files (token required).
    let files = chain::topology_files();
    let (st, body) = http(
        api,
        "POST",
        "/api/v1/admin/topology",
        &[],
        files[0].as_bytes(),
    )
    .await;
    assert_eq!(st, 401);
    assert!(String::from_utf8_lossy(&body).contains("bearer"));
    for f in &files {
        assert_eq!(admin_post(api, "/api/v1/admin/topology", f).await.0, 200);
    }
    let (st, v) = admin_post(api, "/api/v1/admin/topology", "{\"isd_as\": 5}").await;
    assert_eq!(st, 400);
    assert!(v["error"].as_str().unwrap().contains("isd_as"));

    let mut chain = Chain::new(now_ns(), true, Ask::Latency);
    // UDP: one datagram of 3 reports.
    let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let b1 = chain.batch(3, 1);
    udp.send_to(&b1.encode_to_vec(), r.udp_addr.unwrap())
        .await
        .unwrap();
    // HTTP protobuf: 2 reports.
    let b2 = chain.batch(2, 2);
    let (st, v) = post_batch(api, &b2).await;
    assert_eq!(st, 202, "{}", String::from_utf8_lossy(&v));
    // HTTP JSON: 1 report (the last one: its values are what the API must show).
    let b3 = chain.batch(1, 3);
    assert_eq!(post_json_batch(api, &b3).await.0, 202);
    settle(&r, 6).await;
    assert_eq!(r.shared.counters.accepted.load(Relaxed), 6);

    // Routers: exact transit latency and queue of each.
    let (_, routers) = get_json(api, "/api/v1/routers").await;
    let routers = routers["routers"].as_array().unwrap().clone();
    assert_eq!(routers.len(), 5);
    for (i, name) in ["ra", "rb1", "rb2", "rc", "rd"].iter().enumerate() {
        let rt = routers.iter().find(|x| x["name"] == *name).unwrap();
        let g = chain.given(i);
        assert_eq!(rt["node_id"], i as u64 + 1);
        assert_eq!(
            telemetry_value(rt, "latency_ns"),
            (g.egress_ts - g.ingress_ts) as f64,
            "{name}"
        );
    }
    // The learned path, its one-way latency and bottleneck.
    let (_, paths) = get_json(api, "/api/v1/paths?src=1-ff00:0:a&dst=1-ff00:0:d").await;
    let paths = paths["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 1);
    assert_eq!(paths[0]["origin"], "learned");
    let id = paths[0]["id"].as_str().unwrap().to_string();
    let (st, p) = get_json(api, &format!("/api/v1/paths/{id}")).await;
    assert_eq!(st, 200);
    let path_latency = p["telemetry"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["scope"] == "path" && t["measurement"] == "latency_ns")
        .unwrap()["value"]
        .as_f64()
        .unwrap();
    let src_ts = (chain.now_ns - 1000) & 0xffff_ffff_ffff;
    assert_eq!(path_latency, (chain.given(4).ingress_ts - src_ts) as f64);
    // Queue of RC towards D, by key.
    let (_, q) = get_json(
        api,
        "/api/v1/telemetry?scope=queue&ia=1-ff00:0:c&node=4&ifid=5",
    )
    .await;
    assert_eq!(
        q["telemetry"][0]["value"].as_f64().unwrap(),
        f64::from(chain.given(3).queue)
    );
    // Ranking and SLA over the one path.
    let (st, rank) = get_json(
        api,
        "/api/v1/paths/rank?src=1-ff00:0:a&dst=1-ff00:0:d&objective=latency",
    )
    .await;
    assert_eq!(st, 200);
    assert_eq!(rank["paths"][0]["path"], id.as_str());
    assert_eq!(rank["paths"][0]["value"].as_f64().unwrap(), path_latency);
    let (_, sla) = get_json(
        api,
        &format!(
            "/api/v1/sla?path={id}&objective=latency&max={}",
            path_latency - 1.0
        ),
    )
    .await;
    assert_eq!(sla["compliant"], false);
    assert!(!sla["violations"].as_array().unwrap().is_empty());
    let (_, sla) = get_json(
        api,
        &format!(
            "/api/v1/sla?path={id}&objective=latency&max={}",
            path_latency + 1.0
        ),
    )
    .await;
    assert_eq!(sla["compliant"], true);
    let (_, h) = get_json(
        api,
        &format!("/api/v1/telemetry/history?scope=path&path={id}&measurement=latency_ns"),
    )
    .await;
    assert!(!h["series"][0]["points"].as_array().unwrap().is_empty());
    // AS-internal link of B.
    let (_, links) = get_json(api, "/api/v1/links").await;
    assert_eq!(links["internal_links"][0]["ia"], "1-ff00:0:b");
    assert_eq!(links["links"].as_array().unwrap().len(), 3);

    // Bad input: replay over HTTP, garbage over both transports, bad queries.
    let (st, _) = post_batch(api, &b2).await;
    assert_eq!(st, 202, "a replay is well-formed: queued, then rejected");
    let (st, v) = http(api, "POST", "/api/v1/reports", &[], &[0xff; 33]).await;
    assert_eq!(st, 400);
    let v: Value = serde_json::from_slice(&v).unwrap();
    assert!(v["error"].as_str().unwrap().contains("ReportBatch"));
    let bytes = b1.encode_to_vec();
    udp.send_to(&bytes[..bytes.len() / 2], r.udp_addr.unwrap())
        .await
        .unwrap();
    settle(&r, 8).await;
    for _ in 0..100 {
        if r.shared
            .counters
            .malformed_count(Transport::Udp, MalformedReason::Protobuf)
            == 1
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let c = &r.shared.counters;
    assert_eq!(
        c.malformed_count(Transport::Udp, MalformedReason::Protobuf),
        1
    );
    assert_eq!(
        c.malformed_count(Transport::Http, MalformedReason::Protobuf),
        1
    );
    assert_eq!(c.rejected(RejectReason::Replayed), 2);
    let (_, q) = get_json(api, "/api/v1/quarantine?reason=replayed").await;
    assert_eq!(q["reports"].as_array().unwrap().len(), 2);
    assert_eq!(q["rejected"]["replayed"], 2);
    let (st, v) = get_json(api, "/api/v1/paths/rank?src=x&dst=1-ff00:0:d").await;
    assert_eq!(st, 400);
    assert!(v["error"].as_str().unwrap().contains("ISD-AS"));
    let (st, v) = get_json(api, "/api/v1/nope").await;
    assert_eq!((st, v["error"].is_string()), (404, true));
    // Prometheus and OpenAPI.
    let (_, m) = http(api, "GET", "/metrics", &[], b"").await;
    let m = String::from_utf8(m).unwrap();
    assert!(m.contains("idint_collector_accepted_total 6"), "{m}");
    assert!(m.contains("idint_collector_rejected_total{reason=\"replayed\"} 2"));
    // Totals that only grow are counters.
    assert!(
        m.contains("# TYPE idint_collector_quarantine_evicted_total counter\n"),
        "{m}"
    );
    let (st, o) = get_json(api, "/openapi.json").await;
    assert_eq!(st, 200);
    assert!(o["paths"]["/api/v1/paths/rank"]["get"].is_object());
    r.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_is_counted_backpressure_and_shutdown_processes_every_accepted_batch() {
    let dir = tempdir("load");
    let r = start_in(&dir, 2).await;
    let api = r.http_addr;
    import_topology(api).await;
    let mut chain = Chain::new(now_ns(), false, Ask::Latency);
    let batches: Vec<Vec<u8>> = (0..96)
        .map(|i| chain.batch(16, i).encode_to_vec())
        .collect();
    // HTTP, 8 clients at once, until at least one 503 was seen.
    let mut queued = 0u64;
    let mut refused = 0u64;
    for round in batches[..64].chunks(8) {
        let mut tasks = Vec::new();
        for b in round {
            let b = b.clone();
            tasks.push(tokio::spawn(async move {
                http(api, "POST", "/api/v1/reports", &[], &b).await
            }));
        }
        for t in tasks {
            let (st, body) = t.await.unwrap();
            match st {
                202 => queued += 16,
                503 => {
                    refused += 1;
                    let v: Value = serde_json::from_slice(&body).unwrap();
                    assert!(v["error"].as_str().unwrap().contains("queue full"));
                }
                s => panic!("status {s}"),
            }
        }
    }
    // UDP as fast as the socket takes it.
    let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    for b in &batches[64..] {
        udp.send_to(b, r.udp_addr.unwrap()).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let shared = r.shared.clone();
    r.shutdown().await;
    let c = &shared.counters;
    assert_eq!(c.http_queue_full.load(Relaxed), refused);
    let udp_in = c.udp_datagrams.load(Relaxed);
    let udp_dropped = c.udp_queue_full.load(Relaxed);
    // Nothing accepted was lost: every queued report was processed, and accepted (they are
    // all genuine and distinct).
    let taken = queued + 16 * (udp_in - udp_dropped);
    assert_eq!(c.reports.load(Relaxed), taken);
    assert_eq!(c.accepted.load(Relaxed), taken);
    eprintln!(
        "http queued {queued} reports, refused {refused} batches; udp {udp_in} in, {udp_dropped} dropped"
    );
    assert!(
        refused + udp_dropped > 0 || queued == 64 * 16,
        "a queue of 2 batches overflowed or took everything"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = ases();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_of_other_ases_come_from_the_control_service_when_not_imported() {
    use drkey::provider::LocalProvider;
    use drkey_grpc::ControlServiceServer;
    let dir = tempdir("cs");
    let mut cfg = config(&dir, 64, true);
    // Only C's and D's keys imported (this epoch's and the next one's: the test may run
    // across an epoch start); B's come from the control service (B's server here).
    let keys: Vec<_> = chain::level1_imports_now_and_next(now_ns() / 1_000_000_000)
        .into_iter()
        .filter(|k| k.src_ia != ases()[1].to_string())
        .collect();
    assert_eq!(keys.len(), 4);
    std::fs::write(
        dir.join("level1.json"),
        serde_json::to_string(&keys).unwrap(),
    )
    .unwrap();
    let b = ases()[1];
    let server = ControlServiceServer::new(
        b,
        LocalProvider::new(b, &chain::secret(1), chain::EPOCH).unwrap(),
    );
    let served = server.request_counter();
    let addr = server
        .spawn("127.0.0.1:0".parse().unwrap(), std::future::pending())
        .await
        .unwrap();
    cfg.collector.control_service = Some(format!("http://{addr}"));
    let r = service::start(cfg, Stores::default()).await.unwrap();
    import_topology(r.http_addr).await;
    let mut chain = Chain::new(now_ns(), true, Ask::Latency);
    for i in 0..2 {
        let (st, _) = http(
            r.http_addr,
            "POST",
            "/api/v1/reports",
            &[],
            &chain.batch(4, i).encode_to_vec(),
        )
        .await;
        assert_eq!(st, 202);
    }
    settle(&r, 8).await;
    let shared = r.shared.clone();
    r.shutdown().await;
    assert_eq!(shared.counters.accepted.load(Relaxed), 8);
    assert_eq!(served.get(), 1, "one fetch, then cached for the epoch");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topology_and_path_files_named_in_the_config_are_imported_at_start() {
    let dir = tempdir("files");
    let mut cfg = config(&dir, 16, true);
    for (i, t) in chain::topology_files().iter().enumerate() {
        let f = dir.join(format!("topology-{i}.json"));
        std::fs::write(&f, t).unwrap();
        cfg.topology.files.push(f);
    }
    let f = dir.join("paths.json");
    std::fs::write(
        &f,
        serde_json::to_string(&vec![chain::path_description()]).unwrap(),
    )
    .unwrap();
    cfg.topology.paths.push(f);
    let r = service::start(cfg, Stores::default()).await.unwrap();
    let (_, v) = get_json(r.http_addr, "/api/v1/paths").await;
    assert_eq!(v["paths"].as_array().unwrap().len(), 1);
    assert_eq!(v["paths"][0]["origin"], "imported");
    let (_, v) = get_json(r.http_addr, "/api/v1/ases/1-ff00:0:b").await;
    assert_eq!(v["routers"]["rb2"]["node_id"], 3);
    assert_eq!(v["interfaces"]["3"]["neighbor_ia"], "1-ff00:0:c");
    r.shutdown().await;
    // A missing file stops the start with its name.
    let mut cfg = config(&dir, 16, true);
    cfg.topology.files.push(dir.join("nope.json"));
    let e = service::start(cfg, Stores::default()).await.err().unwrap();
    assert!(e.0.contains("nope.json"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sends raw request bytes; returns the status, the Content-Type and the body.
async fn raw(addr: SocketAddr, req: &[u8], close_write: bool) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    // The server may answer (and close) before taking the whole request: keep what it sent.
    let _ = s.write_all(req).await;
    if close_write {
        s.shutdown().await.unwrap();
    }
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf).await {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    let status = std::str::from_utf8(&out[9..12]).unwrap().parse().unwrap();
    let at = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&out[..at]).to_ascii_lowercase();
    let ct = head
        .lines()
        .find_map(|l| l.strip_prefix("content-type: "))
        .unwrap_or("")
        .to_string();
    (status, ct, out[at..].to_vec())
}

/// A 4xx whose body is the API's JSON error; returns the message.
fn json_error(st: u16, body: &[u8], want: u16) -> String {
    let v: Value = serde_json::from_slice(body)
        .unwrap_or_else(|_| panic!("{st}: not JSON: {}", String::from_utf8_lossy(body)));
    assert_eq!(st, want, "{v}");
    v["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_batches_are_refused_by_bytes_and_by_reports_counted_with_json_errors() {
    let dir = tempdir("sizes");
    let mut cfg = config(&dir, 16, true);
    cfg.ingest.max_batch_bytes = 3 << 20;
    cfg.ingest.max_batch_reports = 1000;
    let r = service::start(cfg, Stores::default()).await.unwrap();
    let api = r.http_addr;
    let c = r.shared.counters.clone();
    let too_large = || c.malformed_count(Transport::Http, MalformedReason::TooLarge);
    // A million empty reports in 2 MB: refused before decoding, counted.
    let million = b"\x1a\x00".repeat(1_000_000);
    let (st, b) = http(api, "POST", "/api/v1/reports", &[], &million).await;
    assert!(json_error(st, &b, 413).contains("max_batch_reports"));
    assert_eq!(too_large(), 1);
    // The same as JSON: refused after decoding, counted.
    let json = format!(
        "{{\"reports\": [{}]}}",
        vec![collector::json::encode(&Chain::new(now_ns(), true, Ask::Latency).batch(1, 1))["reports"][0].to_string(); 1001].join(",")
    );
    let (st, b) = http(
        api,
        "POST",
        "/api/v1/reports",
        &[("Content-Type", "application/json")],
        json.as_bytes(),
    )
    .await;
    assert!(json_error(st, &b, 413).contains("1001 reports"));
    assert_eq!(too_large(), 2);
    // The configured byte limit applies above axum's default 2 MiB: 2.5 MB is decoded (and
    // refused as garbage), 3.5 MB is too large; both JSON and counted.
    let (st, b) = http(api, "POST", "/api/v1/reports", &[], &vec![0xff; 5 << 19]).await;
    assert!(json_error(st, &b, 400).contains("ReportBatch"));
    assert_eq!(
        c.malformed_count(Transport::Http, MalformedReason::Protobuf),
        1
    );
    // (Refused on its Content-Length, before the body is sent.)
    let req = format!(
        "POST /api/v1/reports HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        7 << 19
    );
    let (st, _, b) = raw(api, req.as_bytes(), false).await;
    assert!(json_error(st, &b, 413).contains("max_batch_bytes"));
    assert_eq!(too_large(), 3);
    // Chunked, without a length: refused as it grows past the limit.
    let mut req = b"POST /api/v1/reports HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..4 {
        req.extend_from_slice(format!("{:x}\r\n", 1 << 20).as_bytes());
        req.extend(std::iter::repeat_n(0u8, 1 << 20));
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    let (st, _, b) = raw(api, &req, false).await;
    assert!(json_error(st, &b, 413).contains("max_batch_bytes"));
    assert_eq!(too_large(), 4);
    r.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_imports_are_refused_whole_with_the_reason() {
    let dir = tempdir("imports");
    let r = start_in(&dir, 16).await;
    let api = r.http_addr;
    // An AS without routers is recorded.
    let (st, v) = admin_post(
        api,
        "/api/v1/admin/topology",
        &chain::topology_json("4-ff00:0:1", false, &[]),
    )
    .await;
    assert_eq!((st, &v["changes"]), (200, &Value::from(1)), "{v}");
    assert_eq!(get_json(api, "/api/v1/ases/4-ff00:0:1").await.0, 200);
    // Node ids (where given) and interfaces are unique; interface ids are 1..65535.
    let topo = |brs: &str| format!(r#"{{"isd_as":"4-ff00:0:2","border_routers":{{{brs}}}}}"#);
    // A router `name` with internal address 10.0.0.`k`, more fields `id` and interfaces.
    let br = |name: &str, k: u8, id: &str, ifs: &str| {
        format!(r#""{name}":{{"internal_addr":"10.0.0.{k}:30042"{id},"interfaces":{{{ifs}}}}}"#)
    };
    // Interface `ifid` to `n` (more fields `extra`).
    let ifc = |ifid: &str, n: &str, extra: &str| {
        format!(
            r#""{ifid}":{{"isd_as":"{n}","link_to":"core","underlay":{{"local":"192.0.2.1:5000{ifid}","remote":"198.51.100.1:50000"}}{extra}}}"#
        )
    };
    let n3 = "4-ff00:0:3";
    for (brs, want) in [
        (br("r1", 1, r#","id":"x""#, ""), "is not a node id"),
        (br("r1", 1, r#","id":4294967296"#, ""), "is not a node id"),
        (
            format!(
                "{},{}",
                br("r1", 1, r#","id":1"#, ""),
                br("r2", 2, r#","id":1"#, "")
            ),
            "both have id 1",
        ),
        (
            br("r1", 1, r#","id":1"#, &ifc("0", n3, "")),
            "interface ID 0 is reserved",
        ),
        (
            br(
                "r1",
                1,
                r#","id":1"#,
                &ifc("1", n3, r#","remote_interface_id":99999"#),
            ),
            "99999 does not fit in 16 bits",
        ),
        (
            format!(
                "{},{}",
                br("r1", 1, r#","id":1"#, &ifc("1", n3, "")),
                br("r2", 2, r#","id":2"#, &ifc("1", n3, ""))
            ),
            "interface 1 is also defined by router r1",
        ),
        (
            br("r1", 1, r#","id":1"#, &ifc("1", "4-ff00:0:2", "")),
            "to itself",
        ),
    ] {
        let (st, v) = admin_post(api, "/api/v1/admin/topology", &topo(&brs)).await;
        assert_eq!(st, 400, "{brs}: {v}");
        assert!(v["error"].as_str().unwrap().contains(want), "{brs}: {v}");
    }
    assert_eq!(get_json(api, "/api/v1/ases/4-ff00:0:2").await.0, 404);
    // A scionproto topology.json gives no node ids: its routers are kept by name.
    let (st, v) = admin_post(
        api,
        "/api/v1/admin/topology",
        &chain::topology_json(
            "4-ff00:0:2",
            false,
            &[
                ("br2-a", None, &[(1, "4-ff00:0:3", None)]),
                ("br2-b", Some(7), &[(2, "4-ff00:0:3", None)]),
            ],
        ),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    let (_, a) = get_json(api, "/api/v1/ases/4-ff00:0:2").await;
    assert_eq!(a["routers"]["br2-a"]["node_id"], Value::Null, "{a}");
    assert_eq!(
        a["routers"]["br2-a"]["interfaces"],
        serde_json::json!([1]),
        "{a}"
    );
    assert_eq!(a["routers"]["br2-b"]["node_id"], 7, "{a}");

    // Paths: all or nothing, each element's error named, hops checked, unknown fields refused.
    let good = serde_json::to_string(&chain::path_description()).unwrap();
    for (body, want) in [
        (format!("[{good}, {{\"hops\": []}}]"), "path 1: a path needs"),
        (format!("[{good}, 5]"), "path 1: invalid type: integer"),
        (
            r#"{"hops":[{"ia":"1-ff00:0:a","ingress":0,"egress":1},{"ia":"1-ff00:0:b","ingress":0,"egress":0},{"ia":"1-ff00:0:c","ingress":2,"egress":0}]}"#.into(),
            "ingress 0",
        ),
        (
            r#"{"hops":[{"ia":"1-ff00:0:a","ingress":0,"egress":1},{"ia":"1-ff00:0:a","ingress":2,"egress":0}]}"#.into(),
            "both in 1-ff00:0:a",
        ),
        (
            r#"{"hops":[{"ia":"1-ff00:0:a","ingress":0,"egress":0,"mtu":9}]}"#.into(),
            "unknown field `mtu`",
        ),
        (r#"{"hops":[], "x": 1}"#.into(), "unknown field `x`"),
    ] {
        let (st, v) = admin_post(api, "/api/v1/admin/paths", &body).await;
        assert_eq!(st, 400, "{body}: {v}");
        assert!(v["error"].as_str().unwrap().contains(want), "{body}: {v}");
    }
    let (_, v) = get_json(api, "/api/v1/paths").await;
    assert_eq!(v["paths"], Value::Array(vec![]), "nothing imported");
    // Paths differing only in a middle AS get different ids.
    let mut other = chain::path_description();
    other.hops[1].ia = "1-ff00:0:e".parse().unwrap();
    let body = serde_json::to_string(&vec![chain::path_description(), other]).unwrap();
    let (st, v) = admin_post(api, "/api/v1/admin/paths", &body).await;
    assert_eq!(st, 200, "{v}");
    assert_ne!(v["paths"][0], v["paths"][1]);
    let (_, v) = get_json(api, "/api/v1/paths").await;
    assert_eq!(v["paths"].as_array().unwrap().len(), 2);

    // Keys: only for this collector's AS; unknown fields refused.
    let mut k = serde_json::to_value(&chain::level1_imports(now_ns() / 1_000_000_000)[0]).unwrap();
    k["dst_ia"] = "1-ff00:0:b".into();
    let (st, v) = admin_post(api, "/api/v1/admin/keys", &format!("[{k}]")).await;
    assert_eq!(st, 400);
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("not this collector's AS"),
        "{v}"
    );
    k["dst_ia"] = "1-ff00:0:a".into();
    k["extra"] = 1.into();
    let (st, v) = admin_post(api, "/api/v1/admin/keys", &format!("[{k}]")).await;
    assert_eq!(st, 400);
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("unknown field `extra`"),
        "{v}"
    );
    r.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_queries_and_requests_get_json_errors() {
    let dir = tempdir("queries");
    let r = start_in(&dir, 16).await;
    let api = r.http_addr;
    import_topology(api).await;
    let mut chain = Chain::new(now_ns(), true, Ask::Latency);
    let (st, _) = http(
        api,
        "POST",
        "/api/v1/reports",
        &[],
        &chain.batch(2, 1).encode_to_vec(),
    )
    .await;
    assert_eq!(st, 202);
    settle(&r, 2).await;
    let (_, paths) = get_json(api, "/api/v1/paths").await;
    let id = paths["paths"][0]["id"].as_str().unwrap().to_string();
    for (q, want) in [
        ("/api/v1/telemetry?node=-1", "node"),
        ("/api/v1/telemetry?ifid=65536", "ifid"),
        ("/api/v1/telemetry?node=1&node=2", "duplicate"),
        ("/api/v1/quarantine?limit=-1", "limit"),
        ("/api/v1/sla?path=0000000000000001&max=x", "max"),
        ("/api/v1/paths/rank?src=1-ff00:0:a", "dst"),
        ("/api/v1/ases/%FF", "UTF-8"),
        ("/api/v1/paths/+abc000000000000", "16 hex digits"),
        ("/api/v1/paths/abc", "16 hex digits"),
        ("/api/v1/paths/0000000000000000000001", "16 hex digits"),
        (&format!("/api/v1/sla?path={id}&max=NaN"), "finite"),
        (&format!("/api/v1/sla?path={id}&max=inf"), "finite"),
        (&format!("/api/v1/sla?path={id}&max=1e400"), "finite"),
        ("/api/v1/telemetry/history?step_ms=0", "step_ms must be > 0"),
        (
            "/api/v1/telemetry/history?scope=path&step_ms=18446744073709551615",
            "too large",
        ),
        (
            "/api/v1/telemetry/history?scope=path&from=0&step_ms=1",
            "steps",
        ),
        (
            "/api/v1/telemetry/history?scope=path&ia=9-ff00:0:99",
            "ia does not apply to scope path",
        ),
        (
            "/api/v1/telemetry?scope=router&path=0000000000000001",
            "path does not apply",
        ),
        ("/api/v1/telemetry?ia=1-ff00:0:a&hop=1", "no scope takes"),
        // A misspelt filter is refused, not ignored (which answered with unfiltered data).
        (
            "/api/v1/telemetry?measurment=latency_ns",
            "unknown field `measurment`",
        ),
        (
            "/api/v1/telemetry/history?scope=path&form=0",
            "unknown field `form`",
        ),
        (
            &format!("/api/v1/sla?path={id}&max=1&window=60"),
            "unknown field `window`",
        ),
        ("/api/v1/paths?source=1-ff00:0:a", "unknown field `source`"),
        (
            "/api/v1/quarantine?reasons=bad_mac",
            "unknown field `reasons`",
        ),
        (
            "/api/v1/paths/rank?src=1-ff00:0:a&dst=1-ff00:0:d&by=latency",
            "unknown field `by`",
        ),
    ] {
        let (st, ct, b) = raw(
            api,
            format!("GET {q} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
            false,
        )
        .await;
        assert_eq!(ct, "application/json", "{q}");
        let e = json_error(st, &b, 400);
        assert!(e.contains(want), "{q}: {e}");
    }
    // A filter applies to the scopes that have it only: no path series for an ISD-AS.
    let (st, v) = get_json(api, "/api/v1/telemetry?ia=1-ff00:0:c").await;
    assert_eq!(st, 200);
    let t = v["telemetry"].as_array().unwrap();
    assert!(!t.is_empty());
    assert!(t.iter().all(|x| x["tags"]["ia"] == "1-ff00:0:c"), "{v}");
    let (st, v) = get_json(api, "/api/v1/telemetry/history?scope=path&step_ms=1000").await;
    assert_eq!(st, 200, "{v}");
    // Wrong method, truncated body, media types.
    let (st, ct, b) = raw(
        api,
        b"DELETE /api/v1/paths HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        false,
    )
    .await;
    assert_eq!(ct, "application/json");
    json_error(st, &b, 405);
    let req = format!(
        "POST /api/v1/admin/paths HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 100\r\n\r\n[{{"
    );
    let (st, ct, b) = raw(api, req.as_bytes(), true).await;
    assert_eq!(ct, "application/json", "{}", String::from_utf8_lossy(&b));
    assert!((400..500).contains(&st), "{st}");
    let json = collector::json::encode(&chain.batch(1, 2)).to_string();
    for (ct, want) in [
        ("Application/JSON", 202),
        ("application/json; charset=utf-8", 202),
        ("application/jsonx", 415),
        ("text/plain", 415),
    ] {
        let (st, b) = http(
            api,
            "POST",
            "/api/v1/reports",
            &[("Content-Type", ct)],
            json.as_bytes(),
        )
        .await;
        assert_eq!(st, want, "{ct}: {}", String::from_utf8_lossy(&b));
        if want == 415 {
            json_error(st, &b, 415);
        }
    }
    let mut req = b"POST /api/v1/reports HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\nContent-Type: application/x-protobuf".to_vec();
    req.extend_from_slice(b"\xff\r\n\r\n");
    let (st, _, b) = raw(api, &req, false).await;
    assert!(json_error(st, &b, 415).contains("not ASCII"));
    // The OpenAPI document types numbers as numbers.
    let (_, o) = get_json(api, "/openapi.json").await;
    let params = o["paths"]["/api/v1/telemetry"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let node = params.iter().find(|p| p["name"] == "node").unwrap();
    assert_eq!(node["schema"]["type"], "integer");
    r.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A service of the test config as `edit` changes it, its topology imported, and a chain of
/// latency reports to feed it.
async fn latency_service(
    tag: &str,
    edit: impl FnOnce(&mut Config),
) -> (std::path::PathBuf, Running, Chain) {
    let dir = tempdir(tag);
    let mut cfg = config(&dir, 64, true);
    edit(&mut cfg);
    let r = service::start(cfg, Stores::default()).await.unwrap();
    import_topology(r.http_addr).await;
    (dir, r, Chain::new(now_ns(), false, Ask::Latency))
}

/// Report `k` (from 0) of `chain`, 1 ms after the previous one with a path delay of
/// `delay_ns`: posted, accepted and processed.
async fn post_latency(r: &Running, chain: &mut Chain, k: usize, delay_ns: u64) {
    chain.sink_delay_ns = delay_ns;
    chain.now_ns += 1_000_000;
    let (st, body) = post_batch(r.http_addr, &chain.batch(1, k as u64 + 1)).await;
    assert_eq!(st, 202, "{}", String::from_utf8_lossy(&body));
    settle(r, k as u64 + 1).await;
}

/// Path latency 45 µs, 54 µs, 46 µs with the default 10 µs detection threshold: the 54 µs
/// value is within the threshold of the written 45 µs and is not written, yet a 50 µs
/// objective must see it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sla_sees_values_event_detection_left_unwritten() {
    let (dir, r, mut chain) = latency_service("sla", |c| c.detection.latency_ns = 10_000.0).await;
    let api = r.http_addr;
    let mut latencies = Vec::new();
    for (k, delay) in [40_000u64, 49_000, 41_000].into_iter().enumerate() {
        post_latency(&r, &mut chain, k, delay).await;
        let (_, paths) = get_json(api, "/api/v1/paths").await;
        let lat = paths["paths"][0]["telemetry"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["scope"] == "path" && t["measurement"] == "latency_ns")
            .unwrap()["value"]
            .as_f64()
            .unwrap();
        latencies.push(lat);
    }
    assert_eq!(r.shared.counters.accepted.load(Relaxed), 3);
    // Only the middle value is above 50 µs, and it was not written.
    assert!(latencies[1] > 50_000.0 && latencies[0] < 50_000.0 && latencies[2] < 50_000.0);
    let (_, paths) = get_json(api, "/api/v1/paths").await;
    let id = paths["paths"][0]["id"].as_str().unwrap().to_string();
    let (st, sla) = get_json(
        api,
        &format!("/api/v1/sla?path={id}&objective=latency&max=50000"),
    )
    .await;
    assert_eq!(st, 200, "{sla}");
    assert_eq!(sla["compliant"], false, "{sla:#}");
    let v = sla["violations"].as_array().unwrap();
    assert_eq!(v.len(), 1, "{sla:#}");
    assert_eq!(v[0]["value"].as_f64(), Some(latencies[1]));
    // A bound above every value: compliant.
    let (_, ok) = get_json(
        api,
        &format!("/api/v1/sla?path={id}&objective=latency&max=60000"),
    )
    .await;
    assert_eq!(ok["compliant"], true, "{ok:#}");
    // A window after the last measurement: nothing in it violates, whatever the latest
    // (older) value was.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let (_, later) = get_json(
        api,
        &format!("/api/v1/sla?path={id}&objective=latency&max=30000&window_s=1"),
    )
    .await;
    assert_eq!(later["samples"], 0, "{later:#}");
    assert_eq!(later["current"].as_f64(), Some(latencies[2]), "{later:#}");
    assert_eq!(later["compliant"], true, "{later:#}");
    r.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_accepted_before_a_restart_is_not_accepted_again_after_it() {
    let dir = tempdir("restart");
    let start = |dir: PathBuf| async move {
        let r = start_in(&dir, 64).await;
        import_topology(r.http_addr).await;
        r
    };
    let first = start(dir.clone()).await;
    let mut chain = Chain::new(now_ns(), true, Ask::Latency);
    let old = chain.batch(1, 1);
    assert_eq!(post_batch(first.http_addr, &old).await.0, 202);
    settle(&first, 1).await;
    assert_eq!(first.shared.counters.accepted.load(Relaxed), 1);
    first.shutdown().await;

    // A new process remembers nothing: well within the freshness window, the same report
    // could only be checked against a memory it does not have, so it is refused.
    let second = start(dir.clone()).await;
    assert_eq!(post_batch(second.http_addr, &old).await.0, 202);
    settle(&second, 1).await;
    let c = &second.shared.counters;
    assert_eq!(c.accepted.load(Relaxed), 0);
    assert_eq!(c.rejected(RejectReason::PredatesReplayMemory), 1);
    // Reports made after the restart are accepted.
    let mut fresh = Chain::new(now_ns(), true, Ask::Latency);
    assert_eq!(
        post_batch(second.http_addr, &fresh.batch(1, 2)).await.0,
        202
    );
    settle(&second, 2).await;
    assert_eq!(c.accepted.load(Relaxed), 1);
    // Without a time-series store, what happened before the restart is unknown to an SLA
    // check, and the answer says so.
    let (_, paths) = get_json(second.http_addr, "/api/v1/paths").await;
    let id = paths["paths"][0]["id"].as_str().unwrap().to_string();
    let (st, sla) = get_json(
        second.http_addr,
        &format!("/api/v1/sla?path={id}&objective=latency&max=1e12&window_s=3600"),
    )
    .await;
    assert_eq!(st, 200, "{sla}");
    assert_eq!(sla["complete"], false, "{sla:#}");
    assert_eq!(sla["sources"], serde_json::json!(["memory"]), "{sla:#}");
    assert!(sla["covered_from"].as_u64().unwrap() > sla["window"]["from"].as_u64().unwrap());
    assert_eq!(sla["samples"], 1, "{sla:#}");
    second.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A batch may name its exporter once, for every report (the JSON form's example does): a
/// quarantined report of it names that exporter, over HTTP (decoded) and UDP (read in place).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quarantined_reports_name_the_exporter_of_their_batch() {
    let dir = tempdir("quarantine-exporter");
    let r = start_in(&dir, 64).await;
    // No topology: the reports' path maps to no AS and they are quarantined.
    let mut chain = Chain::new(now_ns(), true, Ask::Latency);
    let mut batch = chain.batch(1, 1);
    for rep in &mut batch.reports {
        rep.exporter = None;
    }
    assert_eq!(post_json_batch(r.http_addr, &batch).await.0, 202);
    settle(&r, 1).await;
    let mut batch = chain.batch(1, 2);
    for rep in &mut batch.reports {
        rep.exporter = None;
    }
    let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    udp.send_to(&batch.encode_to_vec(), r.udp_addr.unwrap())
        .await
        .unwrap();
    settle(&r, 2).await;
    assert_eq!(r.shared.counters.rejected(RejectReason::UnknownPath), 2);
    let (st, q) = get_json(r.http_addr, "/api/v1/quarantine").await;
    assert_eq!(st, 200);
    let items = q["reports"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{q:#}");
    for item in items {
        assert_eq!(item["exporter_ia"], "1-ff00:0:d", "{item:#}");
        assert_eq!(item["exporter_router"], 5, "{item:#}");
    }
    r.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Memory keeps `detection.history` written values per key: once older ones are dropped, an
/// SLA check must not claim to have seen the window since the process started (here: a
/// violation among the dropped values would be missed while the answer says memory covered it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sla_does_not_claim_values_memory_has_dropped() {
    let (dir, r, mut chain) = latency_service("sla-dropped", |c| c.detection.history = 2).await;
    let api = r.http_addr;
    let first_ns = chain.now_ns;
    // Every value is written (threshold 0); the first one is the only violation.
    for (k, delay) in [90_000u64, 40_000, 41_000, 42_000].into_iter().enumerate() {
        post_latency(&r, &mut chain, k, delay).await;
    }
    assert_eq!(r.shared.counters.accepted.load(Relaxed), 4);
    let (_, paths) = get_json(api, "/api/v1/paths").await;
    let id = paths["paths"][0]["id"].as_str().unwrap().to_string();
    let (st, sla) = get_json(
        api,
        &format!("/api/v1/sla?path={id}&objective=latency&max=50000&window_s=3600"),
    )
    .await;
    assert_eq!(st, 200, "{sla}");
    let seen = !sla["violations"].as_array().unwrap().is_empty();
    let covered_from = sla["covered_from"].as_u64().unwrap();
    assert!(
        seen || covered_from > first_ns,
        "the 90 µs value is neither reported nor outside the claimed coverage: {sla:#}"
    );
    if !seen {
        assert_eq!(sla["complete"], false, "{sla:#}");
    }
    r.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// An admin request with a body over the limit: without the right token it is refused for
/// the token (401), with it for the size (413).
#[tokio::test]
async fn admin_requests_are_refused_for_the_token_before_their_body_is_read() {
    const LEN: usize = 3_000_000;
    let dir = tempdir("admin-order");
    let r = start_in(&dir, 64).await;
    let ask = |auth: Option<String>| async move {
        let s = TcpStream::connect(r.http_addr).await.unwrap();
        let (mut rd, mut wr) = s.into_split();
        let mut req = format!(
            "POST /api/v1/admin/keys HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {LEN}\r\n"
        );
        if let Some(a) = auth {
            req.push_str(&format!("Authorization: {a}\r\n"));
        }
        req.push_str("\r\n");
        // The body is sent beside reading the answer: the server may answer (and close)
        // before taking all of it, and the write then fails, which is fine.
        let writer = tokio::spawn(async move {
            wr.write_all(req.as_bytes()).await?;
            wr.write_all(&vec![b' '; LEN]).await
        });
        let mut out = Vec::new();
        tokio::time::timeout(Duration::from_secs(20), rd.read_to_end(&mut out))
            .await
            .expect("an answer")
            .ok();
        let _ = writer.await;
        let status: u16 = std::str::from_utf8(&out[9..12]).unwrap().parse().unwrap();
        (status, String::from_utf8_lossy(&out).into_owned())
    };
    let (st, body) = ask(None).await;
    assert_eq!(st, 401, "{body}");
    assert!(body.contains("bearer token required"), "{body}");
    let (st, body) = ask(Some("Bearer wrong-token-000".into())).await;
    assert_eq!(st, 401, "{body}");
    assert!(body.contains("wrong bearer token"), "{body}");
    let (st, body) = ask(Some(format!("Bearer {TOKEN}"))).await;
    assert_eq!(st, 413, "{body}");
}

/// ASes named only by an imported path are listed and answered (core unknown), not 404
/// while `/links` and `/paths` show them; once their topology is imported, its record.
#[tokio::test]
async fn ases_known_only_from_paths_are_answered() {
    let dir = tempdir("ases-from-paths");
    let r = start_in(&dir, 16).await;
    let api = r.http_addr;
    let [a, b, _, _] = ases();
    let body = serde_json::to_string(&chain::path_description()).unwrap();
    assert_eq!(admin_post(api, "/api/v1/admin/paths", &body).await.0, 200);
    let (st, v) = get_json(api, &format!("/api/v1/ases/{b}")).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["known_from"], "paths", "{v}");
    assert_eq!(v["core"], Value::Null, "{v}");
    assert_eq!(v["routers"], serde_json::json!({}), "{v}");
    let (_, list) = get_json(api, "/api/v1/ases").await;
    let listed: Vec<&str> = list["ases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["isd_as"].as_str().unwrap())
        .collect();
    assert_eq!(listed.len(), 4, "{list}");
    assert!(listed.contains(&a.to_string().as_str()), "{list}");
    // Never heard of: still 404.
    assert_eq!(get_json(api, "/api/v1/ases/9-ff00:0:9").await.0, 404);
    // Its topology imported: the record, no longer only named.
    let files = chain::topology_files();
    for f in &files {
        assert_eq!(admin_post(api, "/api/v1/admin/topology", f).await.0, 200);
    }
    let (_, v) = get_json(api, &format!("/api/v1/ases/{b}")).await;
    assert_eq!(
        (&v["known_from"], &v["core"]),
        (&Value::from("topology"), &Value::from(true)),
        "{v}"
    );
    let (_, list) = get_json(api, "/api/v1/ases").await;
    assert_eq!(list["ases"].as_array().unwrap().len(), 4, "{list}");
    r.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
