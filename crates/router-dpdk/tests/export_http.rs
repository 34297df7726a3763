//! Infrastructure-mode ID-INT: the router is the sink, its reports reach a UDP listener as
//! `ReportBatch`es that decode and verify; packets with the D flag are consumed, others
//! delivered without their ID-INT options. Meanwhile `/health` and `/metrics` answer on the
//! loopback control port.

mod common;

use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use idint_report::v1::ReportBatch;
use idint_report::{Message, idint_hbh};
use idint_wire::crypto::aes128;
use idint_wire::idint::IdInt;
use idint_wire::idint::crypto::verify_stack;
use idint_wire::packet::Packet;

fn http(addr: &str, request: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
    s.write_all(request.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

#[test]
fn reports_reach_the_collector_and_control_endpoints_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (inp, outp) = (dir.path().join("in.pcap"), dir.path().join("out.pcap"));
    let collector = UdpSocket::bind("127.0.0.1:0").unwrap();
    collector
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let now = now_s();
    let keep = inbound(now, Some(request(now, true, false)), b"deliver me");
    let consume = inbound(now, Some(request(now, true, true)), b"consume me");
    let plain = inbound(now, None, b"no telemetry");
    write_pcap(
        &inp,
        &[
            frame(IF2_REMOTE, IF2_LOCAL, &keep),
            frame(IF2_REMOTE, IF2_LOCAL, &consume),
            frame(IF2_REMOTE, IF2_LOCAL, &plain),
        ],
    );
    let vdev = format!(
        "net_pcap0,rx_pcap={},tx_pcap={}",
        inp.display(),
        outp.display()
    );
    let extra = format!(
        "\n[[neighbor]]\nip = \"{LOCAL_HOST}\"\nmac = \"02:00:00:00:10:60\"\n\n[export]\ncollector = \"{}\"\nrouter_number = 5\nflush_ms = 10\n\n[control]\nhttp = \"127.0.0.1:0\"\n",
        collector.local_addr().unwrap()
    );
    let cfg = write_config(dir.path(), &[vdev], "net_pcap0", &extra);
    let mut child = Command::new(env!("CARGO_BIN_EXE_idint-router"))
        .args(["--config", cfg.to_str().unwrap(), "--duration", "4"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The router binds the control port the OS gives it and says which one on stderr.
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok) {
            if let Some(rest) = line.split("control endpoints on http://").nth(1) {
                let _ = addr_tx.send(rest.split(' ').next().unwrap_or_default().to_string());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let Ok(http_addr) = addr_rx.recv_timeout(Duration::from_secs(10)) else {
        let _ = child.kill();
        panic!("no control address named: {}", stderr.join().unwrap());
    };

    // Control endpoints while it runs.
    let deadline = Instant::now() + Duration::from_millis(3000);
    let health = loop {
        if let Some(h) = http(&http_addr, "GET /health HTTP/1.0\r\n\r\n") {
            break h;
        }
        assert!(Instant::now() < deadline, "control port never answered");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(health.starts_with("HTTP/1.0 200"), "{health}");
    assert!(health.contains("\"status\":\"ok\""), "{health}");
    // Workers publish their counters every few milliseconds: wait for the three frames.
    let deadline = Instant::now() + Duration::from_millis(2000);
    let metrics = loop {
        let m = http(&http_addr, "GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        if m.contains("idint_router_io_rx_frames_total 3") || Instant::now() > deadline {
            break m;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(metrics.starts_with("HTTP/1.0 200"), "{metrics}");
    assert!(
        metrics.contains("idint_router_io_rx_frames_total 3"),
        "{metrics}"
    );
    assert!(
        metrics.contains("idint_router_drops_total{reason=\"telemetry_consumed\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("idint_router_port_rx_packets_total{device=\"net_pcap0\"} 3"));
    for c in [
        "arp_replies",
        "arp_requests",
        "arp_learned",
        "ndp_replies",
        "ndp_requests",
        "ndp_learned",
    ] {
        assert!(
            metrics.contains(&format!("idint_router_io_{c}_total 0")),
            "{c}: {metrics}"
        );
    }
    for result in ["hits", "misses", "evictions"] {
        assert!(
            metrics.contains(&format!(
                "idint_router_idint_key_lookups_total{{result=\"{result}\"}} "
            )),
            "{result}: {metrics}"
        );
    }
    every_metric_the_operators_configs_use_is_exported(&metrics);
    let missing = http(&http_addr, "GET /nope HTTP/1.0\r\n\r\n").unwrap();
    assert!(
        missing.starts_with("HTTP/1.0 404") && missing.contains("\"error\""),
        "{missing}"
    );
    let post = http(&http_addr, "POST /metrics HTTP/1.0\r\n\r\n").unwrap();
    assert!(post.starts_with("HTTP/1.0 405"), "{post}");
    let junk = http(&http_addr, "\r\n\r\n").unwrap();
    assert!(junk.starts_with("HTTP/1.0 400"), "{junk}");

    // Reports at the collector.
    let mut reports = Vec::new();
    let mut buf = vec![0u8; 65536];
    while reports.len() < 2 {
        let n = collector.recv(&mut buf).expect("a report batch arrives");
        let batch = ReportBatch::decode(&buf[..n]).expect("a ReportBatch");
        let ex = batch.exporter.clone().unwrap();
        assert_eq!(ex.name, ROUTER);
        assert_eq!(ex.router_id, 5);
        assert_eq!(ex.isd_as, router_config().local_ia.to_u64());
        reports.extend(batch.reports);
    }
    let out = child.wait_with_output().unwrap();
    let stderr = stderr.join().unwrap();
    assert!(out.status.success(), "{stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(reports.len(), 2, "{summary:#}");
    let key = as_key_for(now, router_config().local_ia, LOCAL_HOST);
    for r in &reports {
        assert_eq!(r.ingress_interface, 2);
        assert_eq!(r.src_isd_as, dst_ia().to_u64());
        assert_eq!(r.dst_isd_as, router_config().local_ia.to_u64());
        let mut hbh = idint_hbh(r).expect("options rebuild");
        let mut st = IdInt::locate(&mut hbh[..]).unwrap().unwrap();
        let n = verify_stack(&mut st, &aes128(&SOURCE_KEY), |i, _| {
            (i == 1).then_some(&key)
        })
        .expect("the router's entry verifies");
        assert_eq!(n, 2);
    }

    assert_eq!(summary["idint"]["idint_exported"], 2, "{summary:#}");
    assert_eq!(summary["idint"]["idint_consumed"], 1);
    assert_eq!(summary["idint"]["idint_stripped"], 1);
    assert_eq!(summary["drops"]["telemetry_consumed"], 1);
    assert_eq!(summary["delivered"], 2);
    assert_eq!(summary["export"]["export_reports"], 2);
    assert_eq!(summary["export"]["export_bad_records"], 0);
    // Both probes have the same verifier (the local host): its key is derived once, never
    // evicted; the second probe finds it (or, in the same burst, reuses its handle).
    assert_eq!(summary["idint_keys"]["misses"], 1, "{summary:#}");
    assert_eq!(summary["idint_keys"]["evictions"], 0);
    assert!(summary["idint_keys"]["hits"].as_u64().unwrap() <= 1);

    // Delivered: the stripped packet and the plain one, same sizes, no ID-INT left.
    let sent = read_pcap(&outp);
    assert_eq!(sent.len(), 2);
    let (src, dst, dmac, _, mut scion) = split(&sent[0]);
    assert_eq!(src, INTERNAL.parse().unwrap());
    assert_eq!(dst, format!("{LOCAL_HOST}:32000").parse().unwrap());
    assert_eq!(dmac, [0x02, 0, 0, 0, 0x10, 0x60]);
    assert_eq!(scion.len(), keep.len());
    let range = Packet::parse(&scion).unwrap().hbh_range();
    if let Some(range) = range {
        assert!(
            IdInt::locate(&mut scion[range]).unwrap().is_none(),
            "options stripped"
        );
    }
    let (_, _, _, _, scion) = split(&sent[1]);
    assert_eq!(scion.len(), plain.len());
}

/// Metric families (`# TYPE name kind`) of a Prometheus text exposition.
fn families(text: &str) -> std::collections::BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.to_string()))
        })
        .collect()
}

/// The router's `/metrics` as the collector's ops-configs test stores it
/// (`crates/collector/tests/data/router-metrics.prom`), and the router metrics the Grafana
/// dashboard and the alerting rules query, must all be what a live router exports: otherwise
/// those tests would pass against a fixture that no router produces.
fn every_metric_the_operators_configs_use_is_exported(metrics: &str) {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let read = |rel: &str| {
        std::fs::read_to_string(repo.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    };
    let live = families(metrics);
    let fixture = families(&read("crates/collector/tests/data/router-metrics.prom"));
    assert!(!fixture.is_empty(), "the fixture declares no metric family");
    for (name, kind) in &fixture {
        assert_eq!(
            live.get(name),
            Some(kind),
            "the fixture's family {name} ({kind}) is not exported as such by the live router"
        );
    }
    for rel in [
        "configs/grafana/dashboard.json",
        "configs/prometheus/alerts.yml",
    ] {
        let text = read(rel);
        let mut used = std::collections::BTreeSet::new();
        for (at, _) in text.match_indices("idint_router_") {
            let name: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            used.insert(name);
        }
        assert!(!used.is_empty(), "{rel} queries no router metric");
        for name in &used {
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s).filter(|f| live.contains_key(*f)))
                .unwrap_or(name);
            assert!(
                live.contains_key(family),
                "{rel} queries {name}, which the live router does not export"
            );
        }
    }
}
