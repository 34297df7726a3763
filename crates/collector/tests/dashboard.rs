//! The dashboard at `/` in real headless Chromium: a collector fed genuine reports of the
//! four-AS scion-dp chain (latency and carbon probes, and a replayed batch it rejects) serves
//! the page; after its scripts have polled, the DOM shows the ASes, the path, per-hop and path
//! values from the reports, the ranking, events and the rejection, and nothing was logged to
//! the console. A page with a deliberate error shows that both error detectors fire.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;

use collector::service::{Running, Stores, now_ns};
use idint_report::Message;
use serde_json::Value;
use test_kit::chain::{self, Ask, Chain, ases};
use test_kit::require;
use test_kit::require::Need;
use test_kit::service::{self as kit, http, tempdir};

const TOKEN: &str = "dashboard-token";
/// The collector's API port (this test's private range; the tests use it and the next two).
const API_PORT: u16 = 28131;
/// Virtual time the page's scripts get before the DOM is taken, ms (the page polls every 3 s).
const BUDGET_MS: u32 = 10_000;
/// Wall-clock limit of one Chromium run, s.
const CHROMIUM_TIMEOUT_S: &str = "120";
/// Reports per probe kind.
const REPORTS: usize = 6;
/// A second probe source in AS A (asks for energy and CO2).
const CARBON_HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

/// What Chromium made of a page: the DOM after its scripts ran and the console lines it
/// logged (`CONSOLE` lines of Chromium's log on stderr: messages, errors and uncaught
/// exceptions alike).
struct Loaded {
    dom: String,
    console: Vec<String>,
}

/// Loads `url` in headless Chromium (a fresh profile under `dir`) for [`BUDGET_MS`] of virtual
/// time.
fn chromium(url: &str, dir: &Path) -> Loaded {
    let profile = dir.join(format!("profile-{}", now_ns()));
    let out = Command::new("timeout")
        .arg(CHROMIUM_TIMEOUT_S)
        .arg("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            &format!("--user-data-dir={}", profile.display()),
            &format!("--virtual-time-budget={BUDGET_MS}"),
            "--dump-dom",
            url,
        ])
        .output()
        .expect("chromium runs");
    let _ = std::fs::remove_dir_all(&profile);
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        dom.contains("</html>"),
        "chromium gave no DOM for {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    Loaded { dom, console }
}

/// `chromium` off the runtime's threads (the collector keeps answering meanwhile).
async fn load(url: String, dir: PathBuf) -> Loaded {
    tokio::task::spawn_blocking(move || chromium(&url, &dir))
        .await
        .unwrap()
}

/// The markup from the element with `id` to the end of its table or `div` (whichever ends
/// first).
fn section<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the DOM"));
    let rest = &dom[at..];
    let end = ["</table>", "</div>"]
        .iter()
        .filter_map(|e| rest.find(e))
        .min()
        .unwrap_or(rest.len());
    &rest[..end]
}

/// The value of attribute `name` of the first tag carrying it.
fn attribute<'a>(dom: &'a str, name: &str) -> &'a str {
    let key = format!("{name}=\"");
    let at = dom
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in the DOM"))
        + key.len();
    &dom[at..at + dom[at..].find('"').unwrap()]
}

/// A value as the page shows it (the page script's `fmt`): scaled to a unit, at most two
/// decimals, trailing zeros dropped.
fn shown(measurement: &str, v: f64) -> String {
    let units: &[(f64, &str)] = match measurement {
        "latency_ns" => &[(1e6, "ms"), (1e3, "µs"), (1.0, "ns")],
        "utilisation_kbps" => &[(1e6, "Gbit/s"), (1e3, "Mbit/s"), (1.0, "kbit/s")],
        "queue_len" => &[(1.0, "pkts")],
        "energy_nj" => &[(1e6, "mJ"), (1e3, "µJ"), (1.0, "nJ")],
        "co2_pg" => &[(1e6, "µg"), (1e3, "ng"), (1.0, "pg")],
        m => panic!("unknown measurement {m}"),
    };
    let &(div, unit) = units
        .iter()
        .find(|(d, _)| v.abs() >= *d || *d == 1.0)
        .unwrap();
    let x = v / div;
    let digits = if x.abs() >= 100.0 {
        0
    } else if x.abs() >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{x:.digits$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    };
    format!("{text} {unit}")
}

async fn get_json(api: SocketAddr, path: &str) -> Value {
    let (st, body) = http(api, "GET", path, &[], b"").await;
    assert_eq!(st, 200, "{path}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

async fn post_batch(api: SocketAddr, batch: &idint_report::v1::ReportBatch) {
    let (st, body) = http(
        api,
        "POST",
        "/api/v1/reports",
        &[("Content-Type", "application/x-protobuf")],
        &batch.encode_to_vec(),
    )
    .await;
    assert_eq!(st, 202, "{}", String::from_utf8_lossy(&body));
}

/// A collector with the chain's topology imported, fed latency and carbon probes and one
/// replayed batch (rejected), its API on `port`.
async fn fed_collector(dir: &Path, port: u16) -> Running {
    let mut cfg = kit::config(dir, TOKEN, true, "");
    cfg.api.listen = SocketAddr::from(([127, 0, 0, 1], port));
    let r = kit::start(cfg, Stores::default()).await;
    let auth = format!("Bearer {TOKEN}");
    for f in chain::topology_files() {
        let (st, body) = http(
            r.http_addr,
            "POST",
            "/api/v1/admin/topology",
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            f.as_bytes(),
        )
        .await;
        assert_eq!(st, 200, "{}", String::from_utf8_lossy(&body));
    }
    let mut latency = Chain::new(now_ns(), true, Ask::Latency);
    let first = latency.batch(REPORTS, 1);
    post_batch(r.http_addr, &first).await;
    post_batch(r.http_addr, &latency.batch(REPORTS, 2)).await;
    let mut carbon = Chain::from_source(CARBON_HOST, now_ns(), false, Ask::Carbon, |_| {});
    post_batch(r.http_addr, &carbon.batch(REPORTS, 1)).await;
    // Sent again: every report of it is refused as replayed.
    post_batch(r.http_addr, &first).await;
    kit::settle(&r, 4 * REPORTS as u64, 500).await;
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_the_reports_values_in_chromium_without_console_errors() {
    require!(Need::Chromium);
    let dir = tempdir("dashboard");
    let r = fed_collector(&dir, API_PORT).await;
    let api = r.http_addr;

    // What the API says, to compare the page with.
    let paths = get_json(api, "/api/v1/paths").await;
    assert_eq!(paths["total"], 1, "{paths}");
    let path = &paths["paths"][0];
    let id = path["id"].as_str().unwrap().to_owned();
    let value = |m: &str| {
        path["telemetry"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["scope"] == "path" && t["measurement"] == m)
            .and_then(|t| t["value"].as_f64())
            .unwrap_or_else(|| panic!("no path {m} in {path}"))
    };
    let quarantine = get_json(api, "/api/v1/quarantine").await;
    assert_eq!(quarantine["rejected"]["replayed"], REPORTS as u64);

    let page = load(format!("http://{api}/"), dir.clone()).await;
    let dom = &page.dom;
    assert!(
        page.console.is_empty(),
        "console messages: {:#?}",
        page.console
    );
    assert_eq!(attribute(dom, "data-js-errors"), "0", "{dom}");
    assert_eq!(attribute(dom, "data-state"), "ok", "{dom}");
    let polls: u32 = attribute(dom, "data-polls").parse().unwrap();
    assert!(
        polls >= 2,
        "the page polled {polls} times in {BUDGET_MS} ms"
    );

    // Tiles: the counters.
    let tiles = &dom[dom.find("id=\"tiles\"").unwrap()..dom.find("<main>").unwrap()];
    for (n, what) in [
        (4 * REPORTS, "reports"),
        (3 * REPORTS, "accepted"),
        (REPORTS, "rejected"),
    ] {
        let tile = format!("<div class=\"v\">{n}</div><div class=\"k\">{what}</div>");
        assert!(tiles.contains(&tile), "{tile} not in {tiles}");
    }
    assert!(dom.contains("<b id=\"local-ia\">1-ff00:0:a</b>"));

    // The path with its totals from the reports.
    let paths_table = section(dom, "paths");
    assert!(paths_table.contains(&id), "{paths_table}");
    assert!(paths_table.contains("1-ff00:0:a → 1-ff00:0:d"));
    for m in [
        "latency_ns",
        "utilisation_kbps",
        "queue_len",
        "energy_nj",
        "co2_pg",
    ] {
        let v = value(m);
        assert!(v > 0.0, "path {m} {v}");
        let text = shown(m, v);
        assert!(
            paths_table.contains(&text),
            "path {m}: {text} not in {paths_table}"
        );
    }

    // Every AS hop of the path with its values: energy and CO2 as the chain's routers hand
    // them out (node n: 11 n nJ, 3 n pg; AS B's two routers summed), the rest as the API has
    // them, every hop with a latency and all but the last with utilisation and queue.
    let hop_values = get_json(api, &format!("/dashboard/hops?path={id}")).await;
    let hops = section(dom, "hops");
    let nodes_of_hop: [&[u32]; 4] = [&[1], &[2, 3], &[4], &[5]];
    for (i, ia) in ases().iter().enumerate() {
        let row = hops
            .split("<tr>")
            .find(|r| r.contains(&format!("<td>{ia}</td>")))
            .unwrap_or_else(|| panic!("no row of {ia} in {hops}"));
        let h = &hop_values["hops"][i];
        assert_eq!(h["ia"], ia.to_string());
        let nodes: u32 = nodes_of_hop[i].iter().sum();
        assert_eq!(h["energy_nj"], f64::from(11 * nodes), "{h}");
        assert_eq!(h["co2_pg"], f64::from(3 * nodes), "{h}");
        let mut ms = vec!["latency_ns", "energy_nj", "co2_pg"];
        // The destination sends on no link.
        if i < 3 {
            ms.extend(["utilisation_kbps", "queue_len"]);
        }
        for m in ms {
            let v = h[m]
                .as_f64()
                .unwrap_or_else(|| panic!("hop {i} has no {m}: {h}"));
            assert!(v > 0.0, "hop {i} {m} {v}");
            let text = shown(m, v);
            assert!(row.contains(&text), "hop {i} {m}: {text} not in {row}");
        }
    }

    // Charts and the topology, each shown once loaded, and the ranking.
    let charts = section(dom, "charts");
    for chart in ["history.svg?path=", "hops.svg?path="] {
        assert!(
            charts.contains(&format!("dashboard/charts/{chart}{id}")),
            "{chart} not in {charts}"
        );
    }
    assert!(dom.contains(&format!("dashboard/topology.svg?path={id}")));
    let ranking = section(dom, "ranking");
    assert!(
        ranking.contains(&id) && ranking.contains("1-ff00:0:b"),
        "{ranking}"
    );
    assert!(ranking.contains(&shown("latency_ns", value("latency_ns"))));

    // Rejections by reason and the quarantined reports; events.
    let reasons = &dom[dom.find("id=\"reasons\"").unwrap()..dom.find("id=\"quarantine\"").unwrap()];
    assert!(
        reasons.contains("replayed") && reasons.contains(&format!(">{REPORTS}<")),
        "{reasons}"
    );
    assert!(section(dom, "quarantine").contains("replayed"));
    let events = section(dom, "events");
    assert!(
        events.contains("<td>new</td>") && events.contains(&format!("path {id}")),
        "{events}"
    );

    // The charts the page shows are SVG with the values in them.
    let (st, svg) = http(
        api,
        "GET",
        &format!("/dashboard/charts/hops.svg?path={id}&measurement=queue_len"),
        &[],
        b"",
    )
    .await;
    assert_eq!(st, 200);
    let svg = String::from_utf8(svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("1-ff00:0:c"));
    let queue_c = hop_values["hops"][2]["queue_len"].as_f64().unwrap();
    // plotters writes each text on a line of its own.
    assert!(
        svg.contains(&format!("\n{queue_c}\n")),
        "queue {queue_c} not in the chart"
    );
    let (st, svg) = http(api, "GET", "/dashboard/topology.svg", &[], b"").await;
    assert_eq!(st, 200);
    let svg = String::from_utf8(svg).unwrap();
    for ia in ases() {
        assert!(svg.contains(&ia.to_string()), "{ia} not in the topology");
    }

    // A screenshot through the script the main job uses.
    let png = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/dashboard-shot.sh");
    let url = format!("http://{api}/");
    let shot = {
        let png = png.clone();
        tokio::task::spawn_blocking(move || Command::new(script).arg(url).arg(png).output())
            .await
            .unwrap()
            .unwrap()
    };
    assert!(
        shot.status.success(),
        "{}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(bytes.len() > 50_000, "a {} byte screenshot", bytes.len());
    eprintln!("dashboard screenshot: {}", png.display());
    r.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The page's own error hook and the console log both catch a deliberate error: the checks
/// above can fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deliberate_script_error_is_detected() {
    require!(Need::Chromium);
    let dir = tempdir("dashboard-error");
    let mut cfg = kit::config(&dir, TOKEN, false, "");
    cfg.api.listen = SocketAddr::from(([127, 0, 0, 1], API_PORT + 1));
    let r = kit::start(cfg, Stores::default()).await;
    let (st, html) = http(r.http_addr, "GET", "/", &[], b"").await;
    assert_eq!(st, 200);
    let html = String::from_utf8(html).unwrap();
    // The served page's hook, with a page that throws after loading.
    let start = html
        .find("<script id=\"error-hook\">")
        .expect("the error hook");
    let end = start + html[start..].find("</script>").unwrap() + "</script>".len();
    let page = format!(
        "<!doctype html><html data-js-errors=\"0\"><head>{}</head><body>\
         <pre id=\"js-errors\" hidden></pre>\
         <script>setTimeout(function () {{ null.deliberate(); }}, 500);</script></body></html>",
        &html[start..end]
    );
    let file = dir.join("broken.html");
    std::fs::write(&file, page).unwrap();
    let loaded = load(format!("file://{}", file.display()), dir.clone()).await;
    assert_eq!(
        attribute(&loaded.dom, "data-js-errors"),
        "1",
        "{}",
        loaded.dom
    );
    assert!(loaded.dom.contains("deliberate"), "{}", loaded.dom);
    assert!(
        loaded
            .console
            .iter()
            .any(|l| l.contains("Uncaught TypeError")),
        "{:#?}",
        loaded.console
    );
    r.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The dashboard's endpoints refuse bad parameters with a 400 naming the fault, unknown
/// paths with a 404, and serve the page's assets with their content types.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_dashboard_queries_get_clear_errors() {
    let dir = tempdir("dashboard-bad");
    let r = fed_collector(&dir, API_PORT + 2).await;
    let api = r.http_addr;
    let id = get_json(api, "/api/v1/paths").await["paths"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let other = if id == "0000000000000001" {
        "0000000000000002"
    } else {
        "0000000000000001"
    };
    let cases: Vec<(String, u16, &str)> = vec![
        (
            "/dashboard/events?limit=0".into(),
            400,
            "limit 0 is out of range",
        ),
        ("/dashboard/events?limit=201".into(), 400, "1 to 200"),
        ("/dashboard/events?limits=3".into(), 400, "unknown field"),
        ("/dashboard/hops".into(), 400, "missing field `path`"),
        ("/dashboard/hops?path=xyz".into(), 400, "bad path id"),
        (format!("/dashboard/hops?path={other}"), 404, "unknown"),
        (
            format!("/dashboard/charts/hops.svg?path={id}&measurement=speed"),
            400,
            "unknown measurement",
        ),
        (
            format!("/dashboard/charts/history.svg?path={id}&colour=red"),
            400,
            "unknown field",
        ),
        (
            format!("/dashboard/charts/history.svg?path={id}&t=soon"),
            400,
            "invalid digit",
        ),
        (
            format!("/dashboard/charts/hops.svg?path={other}"),
            404,
            "unknown",
        ),
        ("/dashboard/topology.svg?path=12".into(), 400, "bad path id"),
        (
            format!("/dashboard/topology.svg?path={other}"),
            404,
            "unknown",
        ),
    ];
    for (url, status, says) in cases {
        let (st, body) = http(api, "GET", &url, &[], b"").await;
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        assert_eq!(st, status, "{url}: {body}");
        let error = body["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(says),
            "{url}: {error:?} does not say {says:?}"
        );
    }
    let events = get_json(api, "/dashboard/events?limit=3").await;
    assert_eq!(events["events"].as_array().unwrap().len(), 3);
    let summary = get_json(api, "/dashboard/summary").await;
    assert_eq!(summary["accepted"], 3 * REPORTS as u64);
    assert_eq!(summary["rejected"]["replayed"], REPORTS as u64);
    for (url, content_type) in [
        ("/", "text/html"),
        ("/dashboard/app.js", "text/javascript"),
        ("/dashboard/style.css", "text/css"),
        ("/dashboard/topology.svg", "image/svg+xml"),
    ] {
        let mut s = tokio::net::TcpStream::connect(api).await.unwrap();
        let req = format!("GET {url} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        tokio::io::AsyncWriteExt::write_all(&mut s, req.as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut s, &mut out)
            .await
            .unwrap();
        assert!(out.starts_with("HTTP/1.1 200"), "{url}: {out}");
        assert!(
            out.contains(&format!("content-type: {content_type}")),
            "{url}: {out}"
        );
    }
    // The document names the parameters as the endpoints take them.
    let doc = get_json(api, "/openapi.json").await;
    let params: Vec<&str> = doc["paths"]["/dashboard/charts/hops.svg"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(params, ["path", "measurement", "t"]);
    r.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
