//! What the box reads from its processes: the collector's REST API and `/metrics`, and the
//! routers' `/health` and `/metrics` (inside their namespaces, where they listen on loopback).

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::files::ROUTER_HTTP_PORT;
use crate::netns::router_ns;

/// Time limit of one HTTP request.
const HTTP_TIMEOUT: Duration = Duration::from_secs(5);

/// A client of the collector at `base` (`http://127.0.0.1:port`).
pub struct Collector {
    base: String,
    http: reqwest::blocking::Client,
}

impl Collector {
    /// A client of the collector whose API listens at `listen` (`host:port`).
    pub fn new(listen: &str) -> Self {
        Collector {
            base: format!("http://{listen}"),
            http: reqwest::blocking::Client::builder()
                .timeout(HTTP_TIMEOUT)
                .build()
                .expect("a client without TLS builds"),
        }
    }

    /// The API's base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `GET path` as JSON; the status and the body for other answers.
    pub fn get(&self, path: &str) -> Result<Value, String> {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .map_err(|e| format!("GET {path}: {e}"))?;
        let status = r.status();
        let text = r.text().map_err(|e| format!("GET {path}: {e}"))?;
        if !status.is_success() {
            return Err(format!("GET {path}: {status}: {text}"));
        }
        serde_json::from_str(&text).map_err(|e| format!("GET {path}: {e}"))
    }

    /// Whether `/ready` answers 200.
    pub fn ready(&self) -> bool {
        self.http
            .get(format!("{}/ready", self.base))
            .send()
            .is_ok_and(|r| r.status().is_success())
    }

    /// The collector's `/metrics` text.
    pub fn metrics(&self) -> Result<String, String> {
        self.http
            .get(format!("{}/metrics", self.base))
            .send()
            .and_then(|r| r.text())
            .map_err(|e| format!("GET /metrics: {e}"))
    }
}

/// The value of sample `name` (with labels, e.g. `x_total{reason="bad_mac"}`) in Prometheus
/// text, 0 if absent.
pub fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let rest = l.strip_prefix(name)?;
            rest.strip_prefix(' ')?.trim().parse().ok()
        })
        .unwrap_or(0.0)
}

/// Every sample of metric `name` with its labels, as (label text, value).
pub fn samples_with_labels(text: &str, name: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?.strip_prefix('{')?;
            let (labels, value) = rest.split_once("} ")?;
            Some((labels.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

/// `GET path` of router `name`'s control API, from inside its namespace.
pub fn router_get(name: &str, path: &str) -> Option<String> {
    let out = Command::new("ip")
        .args(["netns", "exec", &router_ns(name), "curl", "-s", "-m", "2"])
        .arg(format!("http://127.0.0.1:{ROUTER_HTTP_PORT}{path}"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Router `name`'s `/health`, parsed.
pub fn router_health(name: &str) -> Option<Value> {
    serde_json::from_str(&router_get(name, "/health")?).ok()
}

/// Whether router `name` is healthy with every interface up (BFD sessions Up).
pub fn router_all_up(name: &str) -> bool {
    router_health(name).is_some_and(|h| {
        h["links"]["interfaces_down"]
            .as_array()
            .is_some_and(|d| d.is_empty())
    })
}

/// Whether interface `ifid` of router `name` is up.
pub fn router_if_up(name: &str, ifid: u16) -> Option<bool> {
    let h = router_health(name)?;
    let down = h["links"]["interfaces_down"].as_array()?;
    Some(!down.iter().any(|v| v.as_u64() == Some(u64::from(ifid))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_read_by_name_and_labels() {
        let t = "# HELP a_total x\na_total 12\nb_total{reason=\"bad_mac\"} 3\n\
                 b_total{reason=\"stale\"} 4\na_totally 9\n";
        assert_eq!(sample(t, "a_total"), 12.0);
        assert_eq!(sample(t, "missing"), 0.0);
        assert_eq!(
            samples_with_labels(t, "b_total"),
            [
                ("reason=\"bad_mac\"".to_string(), 3.0),
                ("reason=\"stale\"".to_string(), 4.0)
            ]
        );
    }
}
