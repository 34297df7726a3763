//! The operations configurations under `configs/` against a real VictoriaMetrics: a private
//! instance is filled by the collector (in process, `timeseries = "victoria"`, genuine reports
//! of the test chain asking for latency and for energy/CO2) and with the collector's and a
//! router's `/metrics` as a Prometheus scraper would store them (`job`/`instance` labels,
//! two scrapes a minute apart, the scraper's `up` series). Then every query of every panel of
//! the Grafana dashboard (template variables replaced by real label values) must answer with
//! data; the alerting rules must pass `vmalert -dryRun`, every rule expression must evaluate,
//! and every metric name in it must exist.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;

use collector::service::now_ns;
use idint_report::{Message, v1};
use serde_json::Value;
use test_kit::chain::{self, Ask, Chain};
use test_kit::require::Need;
use test_kit::service as kit;
use test_kit::services::Services;

const TOKEN: &str = "ops-configs-token";
/// PostgreSQL on this port, VictoriaMetrics on the next (private instance).
const BASE_PORT: u16 = 27_040;
/// Reports per batch and batches per chain.
const REPORTS: usize = 10;
const BATCHES: u64 = 3;
/// Offset between the clocks of the two chains, ns.
const CHAIN_OFFSET_NS: u64 = 100_000_000;
/// Gap between the two simulated scrapes, ms.
const SCRAPE_GAP_MS: u64 = 60_000;
/// The router's `/metrics` text in the format of router-dpdk's `http::prometheus`.
const ROUTER_METRICS: &str = include_str!("data/router-metrics.prom");
/// Template variables of the dashboard and the label each stands for.
const VARIABLES: [(&str, &str, &str); 2] = [
    ("$path", "path", "path_latency_ns"),
    ("$ia", "ia", "link_latency_ns"),
];
/// PromQL words that are not metric names.
const KEYWORDS: [&str; 23] = [
    "sum",
    "min",
    "max",
    "avg",
    "count",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
    "group",
    "by",
    "without",
    "and",
    "or",
    "unless",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "offset",
];
/// Keywords followed by a parenthesised label list.
const LABEL_LIST_KEYWORDS: [&str; 6] = [
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

fn configs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs")
}

/// Percent-encodes a query-string value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A blocking HTTP/1.0 request (no chunked answers); status and body.
fn http10(addr: SocketAddr, method: &str, path: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text[9..12].parse().unwrap();
    let at = text.find("\r\n\r\n").map_or(text.len(), |i| i + 4);
    (status, text[at..].to_string())
}

/// A VictoriaMetrics instance's query API.
struct Vm(SocketAddr);

impl Vm {
    fn get(&self, path: &str) -> Value {
        let (st, body) = http10(self.0, "GET", path, b"");
        assert_eq!(st, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// Evaluates `q` at `time_s`; the result vector (panics if the query fails).
    fn query(&self, q: &str, time_s: u64) -> Vec<Value> {
        let v = self.get(&format!("/api/v1/query?query={}&time={time_s}", encode(q)));
        assert_eq!(v["status"], "success", "{q}: {v}");
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// Imports Prometheus text with a scraper's labels, every sample stamped `ts_ms`.
    fn import(&self, text: &str, job: &str, instance: &str, ts_ms: u64) {
        let stamped: String = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| format!("{l} {ts_ms}\n"))
            .chain(std::iter::once(format!("up 1 {ts_ms}\n")))
            .collect();
        let path = format!(
            "/api/v1/import/prometheus?extra_label={}&extra_label={}",
            encode(&format!("job={job}")),
            encode(&format!("instance={instance}"))
        );
        let (st, body) = http10(self.0, "POST", &path, stamped.as_bytes());
        assert!(st == 204 || st == 200, "import {job}: {st} {body}");
    }

    fn flush(&self) {
        let (st, _) = http10(self.0, "GET", "/internal/force_flush", b"");
        assert_eq!(st, 200);
    }
}

/// Every metric name in a PromQL/MetricsQL expression: identifiers outside label matchers,
/// strings and range brackets that are neither functions, keywords nor label lists.
fn metric_names(expr: &str) -> Vec<String> {
    let c: Vec<char> = expr.chars().collect();
    let mut names = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '"' || ch == '\'' {
            i += 1;
            while i < c.len() && c[i] != ch {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if ch == '{' || ch == '[' {
            let close = if ch == '{' { '}' } else { ']' };
            while i < c.len() && c[i] != close {
                i += 1;
            }
            i += 1;
        } else if ch.is_ascii_digit() {
            while i < c.len()
                && (c[i].is_ascii_alphanumeric()
                    || c[i] == '.'
                    || ((c[i] == '-' || c[i] == '+') && matches!(c[i - 1], 'e' | 'E')))
            {
                i += 1;
            }
        } else if ch.is_ascii_alphabetic() || ch == '_' || ch == ':' {
            let start = i;
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '_' || c[i] == ':') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let mut j = i;
            while j < c.len() && c[j].is_whitespace() {
                j += 1;
            }
            let call = j < c.len() && c[j] == '(';
            if LABEL_LIST_KEYWORDS.contains(&word.as_str()) && call {
                while i < c.len() && c[i] != ')' {
                    i += 1;
                }
            } else if !call && !KEYWORDS.contains(&word.as_str()) {
                names.push(word);
            }
        } else {
            i += 1;
        }
    }
    names.sort();
    names.dedup();
    names
}

/// Every `expr` of the rules file (single-line, or `|` blocks).
fn rule_exprs(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if let Some(rest) = l.trim_start().strip_prefix("expr:") {
            let indent = l.len() - l.trim_start().len();
            let rest = rest.trim();
            if rest == "|" || rest == ">" {
                let mut block = Vec::new();
                while i + 1 < lines.len() {
                    let n = lines[i + 1];
                    if !n.trim().is_empty() && n.len() - n.trim_start().len() <= indent {
                        break;
                    }
                    block.push(n.trim());
                    i += 1;
                }
                out.push(block.join(" "));
            } else {
                out.push(rest.to_string());
            }
        }
        i += 1;
    }
    out
}

/// Every panel query of the dashboard: (panel title, expression).
fn panel_queries(dashboard: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack: Vec<&Value> = dashboard["panels"].as_array().unwrap().iter().collect();
    while let Some(p) = stack.pop() {
        if let Some(inner) = p["panels"].as_array() {
            stack.extend(inner);
        }
        for t in p["targets"].as_array().into_iter().flatten() {
            out.push((
                p["title"].as_str().unwrap().to_string(),
                t["expr"].as_str().unwrap().to_string(),
            ));
        }
    }
    out
}

/// Fills the private VictoriaMetrics: collector samples from genuine reports, then the
/// collector's and the router's `/metrics` twice. Returns the evaluation time (s).
async fn fill(svc: &Services, vm: &Vm) -> u64 {
    let pg = svc.url("IDINT_PG_URL");
    let vm_url = svc.url("IDINT_VM_URL");
    let cfg = kit::config(
        &svc.dir.join("collector"),
        TOKEN,
        true,
        &format!(
            "\n[detection]\nqueue_len = 0.0\n\n[storage]\npostgres_url = \"{pg}\"\ntimeseries = \"victoria\"\ntimeseries_url = \"{vm_url}\"\n"
        ),
    );
    let r = kit::start_with_storage(cfg).await;
    let api = r.http_addr;
    let bearer = format!("Bearer {TOKEN}");
    for f in chain::topology_files() {
        let (st, _) = kit::http(
            api,
            "POST",
            "/api/v1/admin/topology",
            &[("Authorization", &bearer)],
            f.as_bytes(),
        )
        .await;
        assert_eq!(st, 200);
    }
    let metrics_text = || async move {
        let (st, body) = kit::http(api, "GET", "/metrics", &[], b"").await;
        assert_eq!(st, 200);
        String::from_utf8(body).unwrap()
    };
    let scrape = |text: String, ts_ms: u64| {
        vm.import(&text, "idint-collector", "collector-1", ts_ms);
        vm.import(ROUTER_METRICS, "idint-router", "br1-ff00_0_110-1", ts_ms);
    };
    // The first scrape's text is taken now, before the reports, but stamped SCRAPE_GAP_MS
    // before the second one at the end: rates over [5m] then see both samples however long
    // the filling takes on a busy machine.
    let before = metrics_text().await;
    let t0 = now_ns();
    let mut n = 0;
    for (k, ask) in [Ask::Latency, Ask::Carbon].into_iter().enumerate() {
        // Distinct clocks so that the two chains' probes never look like replays.
        let mut c = Chain::new(t0 + k as u64 * CHAIN_OFFSET_NS, k == 0, ask);
        for s in 0..BATCHES {
            let reports: Vec<_> = (0..REPORTS)
                .map(|_| {
                    c.now_ns += 2_000_000;
                    c.probe()
                })
                .collect();
            let b = v1::ReportBatch {
                exporter: reports[0].exporter.clone(),
                sequence: k as u64 * BATCHES + s,
                reports,
            };
            let (st, _) = kit::http(api, "POST", "/api/v1/reports", &[], &b.encode_to_vec()).await;
            assert_eq!(st, 202);
            n += REPORTS as u64;
        }
    }
    kit::settle(&r, n, 1000).await;
    let accepted = r
        .shared
        .counters
        .accepted
        .load(std::sync::atomic::Ordering::Relaxed);
    if accepted != n {
        let (_, m) = kit::http(api, "GET", "/metrics", &[], b"").await;
        panic!(
            "{accepted} of {n} reports accepted:\n{}",
            String::from_utf8_lossy(&m)
                .lines()
                .filter(|l| l.contains("rejected_total{") && !l.ends_with(" 0"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    // Let the writer deliver the samples (it flushes on its own period).
    let now_ms = now_ns() / 1_000_000;
    for _ in 0..100 {
        vm.flush();
        if !vm
            .query("count(hop_latency_ns)", now_ms / 1000 + 1)
            .is_empty()
            && !vm
                .query("count(router_energy_nj)", now_ms / 1000 + 1)
                .is_empty()
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    scrape(before, now_ms - SCRAPE_GAP_MS);
    scrape(metrics_text().await, now_ms);
    vm.flush();
    now_ms / 1000 + 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_and_alert_queries_answer_from_a_filled_victoria_metrics() {
    test_kit::require!(
        Need::Root,
        Need::Postgres,
        Need::VictoriaMetrics,
        Need::Vmalert
    );
    let svc = Services::private("ops-configs", BASE_PORT, &["postgres", "victoria"]);
    let vm_addr: SocketAddr = svc
        .url("IDINT_VM_URL")
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let vm = Vm(vm_addr);
    let t = fill(&svc, &vm).await;

    let names = vm.get("/api/v1/label/__name__/values");
    eprintln!("metric names in VictoriaMetrics: {}", names["data"]);

    // The dashboard: every panel's every query answers with data.
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(configs().join("grafana/dashboard.json")).unwrap(),
    )
    .unwrap();
    let mut values = Vec::new();
    for (var, label, metric) in VARIABLES {
        let v = vm.get(&format!(
            "/api/v1/label/{label}/values?match[]={}",
            encode(metric)
        ));
        let first = v["data"][0]
            .as_str()
            .unwrap_or_else(|| panic!("no {label} of {metric}: {v}"))
            .to_string();
        values.push((var, first));
    }
    let queries = panel_queries(&dashboard);
    assert!(queries.len() >= 25, "{} queries", queries.len());
    let mut empty = Vec::new();
    for (title, expr) in &queries {
        let mut q = expr.clone();
        for (var, value) in &values {
            q = q.replace(var, value);
        }
        assert!(!q.contains('$'), "{title}: unreplaced variable in {q}");
        if vm.query(&q, t).is_empty() {
            empty.push(format!("{title}: {q}"));
        }
    }
    assert!(
        empty.is_empty(),
        "panel queries without data:\n{}",
        empty.join("\n")
    );
    // Template variable queries name existing metrics.
    for v in dashboard["templating"]["list"].as_array().unwrap() {
        if let Some(def) = v["definition"].as_str() {
            for name in metric_names(def) {
                if name != "label_values" && !["path", "ia"].contains(&name.as_str()) {
                    assert!(!vm.query(&format!("count({name})"), t).is_empty(), "{def}");
                }
            }
        }
    }

    // The alerting rules: valid for vmalert, every expression evaluates, every metric exists.
    let rules = configs().join("prometheus/alerts.yml");
    let st = Command::new("vmalert")
        .arg("-dryRun")
        .arg(format!("-rule={}", rules.display()))
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "vmalert -dryRun: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    let exprs = rule_exprs(&std::fs::read_to_string(&rules).unwrap());
    assert!(exprs.len() >= 15, "{exprs:?}");
    let mut missing = Vec::new();
    for e in &exprs {
        vm.query(e, t);
        let names = metric_names(e);
        assert!(!names.is_empty(), "{e}");
        for name in names {
            if vm.query(&format!("count({name})"), t).is_empty() {
                missing.push(format!("{name} (in {e})"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "metrics of rules not in VictoriaMetrics:\n{}",
        missing.join("\n")
    );
    eprintln!(
        "{} panel queries with data, {} rule expressions checked",
        queries.len(),
        exprs.len()
    );
}

#[test]
fn metric_names_are_found_in_expressions() {
    assert_eq!(
        metric_names(
            r#"sum by (instance, reason) (rate(x_total{reason="a b"}[5m])) / clamp_min(y, 1e-9) > 0.1 or z offset 5m"#
        ),
        vec!["x_total", "y", "z"]
    );
    assert_eq!(
        rule_exprs("    expr: |\n      a\n        / b\n    for: 1m\n    expr: c == 0\n"),
        vec!["a / b".to_string(), "c == 0".to_string()]
    );
}

#[test]
fn prometheus_scrapes_router_and_collector_and_loads_the_rules() {
    let text = std::fs::read_to_string(configs().join("prometheus/prometheus.yml")).unwrap();
    for needle in [
        "job_name: idint-router",
        "job_name: idint-collector",
        "alerts.yml",
        "/metrics",
    ] {
        assert!(text.contains(needle), "{needle}");
    }
    let ds = std::fs::read_to_string(
        configs().join("grafana/provisioning/datasources/victoriametrics.yaml"),
    )
    .unwrap();
    assert!(ds.contains("type: prometheus"));
    let dash =
        std::fs::read_to_string(configs().join("grafana/provisioning/dashboards/idint.yaml"))
            .unwrap();
    assert!(dash.contains("type: file"));
}
