//! The chain's collector (AS A, host 10.1.0.100) as a service for tests: its configuration
//! with key files on disk and loopback listeners, starting it, and plain HTTP/1.1 over
//! loopback to talk to it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use collector::config::Config;
use collector::service::{self, Running, Stores, now_ns};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::chain;

/// AS A's master secret (base64 of [`chain::secret`]`(0)`), as a key file holds it.
pub const MASTER0: &str = "QEBAQEBAQEBAQEBAQEBAQA==\n";

/// A fresh, empty directory for test `tag` of this process.
pub fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("collector-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The chain's collector configuration: A's master key and (when `with_keys`) the level-1
/// keys K(B/C/D -> A) of the current epoch written to `dir`, the API on a loopback port with
/// admin token `token`, and the TOML `sections` (other tables, e.g. `[ingest]`) added.
pub fn config(dir: &Path, token: &str, with_keys: bool, sections: &str) -> Config {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("master0.key"), MASTER0).unwrap();
    // This epoch's keys and the next one's: a test may run across an epoch boundary.
    let now_s = now_ns() / 1_000_000_000;
    let keys = serde_json::to_string(&chain::level1_imports_now_and_next(now_s)).unwrap();
    std::fs::write(dir.join("level1.json"), keys).unwrap();
    let text = format!(
        r#"
[collector]
isd_as = "1-ff00:0:a"
host = "10.1.0.100"
master_key = "{m}"
epoch_secs = {e}
{k}

[api]
listen = "127.0.0.1:0"
admin_token = "{token}"
{sections}"#,
        m = dir.join("master0.key").display(),
        e = chain::EPOCH,
        k = if with_keys {
            format!("level1_keys = \"{}\"", dir.join("level1.json").display())
        } else {
            String::new()
        },
    );
    Config::from_toml(&text, []).unwrap()
}

/// Starts the service on `cfg` with `stores` (panics if it cannot start).
pub async fn start(cfg: Config, stores: Stores) -> Running {
    service::start(cfg, stores).await.unwrap()
}

/// Starts the service on `cfg` with the stores its `[storage]` section names.
pub async fn start_with_storage(cfg: Config) -> Running {
    let stores = collector::storage::connect(&cfg.storage).await.unwrap();
    start(cfg, stores).await
}

/// One HTTP/1.1 request (`Connection: close`): the status and the body.
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let status = std::str::from_utf8(&out[9..12]).unwrap().parse().unwrap();
    let at = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    (status, out[at..].to_vec())
}

/// Waits (polling every 10 ms, at most `tries` times) until the pipeline has taken `n`
/// reports; panics if it does not.
pub async fn settle(r: &Running, n: u64, tries: usize) {
    for _ in 0..tries {
        if r.shared.counters.reports.load(Relaxed) >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "pipeline took only {} of {n} reports",
        r.shared.counters.reports.load(Relaxed)
    );
}

/// Samples a VictoriaMetrics instance holds, all series, by its export API (asked in HTTP/1.0
/// so that the answer is not chunked).
pub async fn points_in_victoria(vm: SocketAddr) -> u64 {
    const EXPORT_ALL: &str = "/api/v1/export?match[]=%7B__name__%3D~%22.%2B%22%7D";
    let mut c = TcpStream::connect(vm).await.unwrap();
    c.write_all(format!("GET {EXPORT_ALL} HTTP/1.0\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut answer = String::new();
    c.read_to_string(&mut answer).await.unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.contains(" 200 "), "{head}");
    body.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["timestamps"].as_array().unwrap().len() as u64
        })
        .sum()
}

/// Waits (up to `timeout`) until VictoriaMetrics at `vm` holds exactly `expected` samples
/// (it makes new data searchable within seconds); panics if it holds more, or fewer at the
/// end.
pub async fn await_points_in_victoria(vm: SocketAddr, expected: u64, timeout: Duration) {
    let start = std::time::Instant::now();
    loop {
        let stored = points_in_victoria(vm).await;
        if stored == expected {
            return;
        }
        assert!(
            stored < expected && start.elapsed() < timeout,
            "{stored} samples in the store, {expected} written"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
