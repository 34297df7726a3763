//! VictoriaMetrics backend: InfluxDB line protocol into `/write`, raw values out of
//! `/api/v1/export`, aggregated steps out of `/api/v1/query_range` (`<agg>_over_time`).
//!
//! A single-node server takes all of them at its base URL. A cluster takes writes at
//! vminsert's `/insert/<tenant>/influx/write` and queries at vmselect's
//! `/select/<tenant>/prometheus/api/v1/...` ([`Victoria::cluster`]).
//!
//! A sample `measurement.field` becomes the metric `measurement_field` with the sample's tags
//! as labels (VictoriaMetrics' own mapping). VictoriaMetrics keeps millisecond timestamps,
//! so nanoseconds are truncated to whole milliseconds. Aggregated steps are stamped with the
//! start of their window like InfluxDB's; VictoriaMetrics' windows are `(start, start+step]`
//! where InfluxDB's are `[start, start+step)`, which only matters for samples exactly on a
//! step boundary.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde_json::Value;

use crate::ts::{Aggregation, Line, RangeQuery, Series, StoreError, TimeSeriesStore};
use crate::ts::{check_name, line_protocol, quote};

/// A VictoriaMetrics single-node server or cluster.
#[derive(Debug, Clone)]
pub struct Victoria {
    /// Where line protocol is posted.
    write_url: String,
    /// What the query APIs' paths (`/api/v1/...`) are appended to.
    select_base: String,
    /// Health pages that must answer (vminsert's and vmselect's in a cluster).
    health_urls: Vec<String>,
    /// Asked after every write when set (single node only: a cluster's vminsert has none).
    flush_url: Option<String>,
    http: reqwest::Client,
}

/// A VictoriaMetrics cluster tenant: `accountID` or `accountID:projectID`, each a 32-bit
/// unsigned number (VictoriaMetrics' own rule); tenant `0` is the default one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tenant {
    /// The account id.
    pub account: u32,
    /// The project id (0 if not given).
    pub project: u32,
}

/// A tenant that is not `accountID` or `accountID:projectID`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "VictoriaMetrics tenant {0:?}: expected accountID or accountID:projectID (32-bit unsigned numbers)"
)]
pub struct BadTenant(pub String);

impl FromStr for Tenant {
    type Err = BadTenant;

    fn from_str(s: &str) -> Result<Self, BadTenant> {
        let bad = || BadTenant(s.to_string());
        // Digits only: `u32::from_str` would also take a leading `+`.
        let num = |x: &str| {
            if x.is_empty() || !x.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            x.parse::<u32>().map_err(|_| bad())
        };
        match s.split_once(':') {
            None => Ok(Tenant {
                account: num(s)?,
                project: 0,
            }),
            Some((a, p)) => Ok(Tenant {
                account: num(a)?,
                project: num(p)?,
            }),
        }
    }
}

impl fmt::Display for Tenant {
    /// As VictoriaMetrics writes it in URLs: `account` or `account:project`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.project == 0 {
            write!(f, "{}", self.account)
        } else {
            write!(f, "{}:{}", self.account, self.project)
        }
    }
}

/// How long one request to VictoriaMetrics may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

impl Victoria {
    /// A client for the single-node server at `base` (e.g. `http://127.0.0.1:8428`). With
    /// `force_flush`, every write is followed by `/internal/force_flush` so that the samples
    /// are queryable at once (otherwise VictoriaMetrics makes them visible within a few
    /// seconds).
    pub fn new(base: &str, force_flush: bool) -> Result<Self, StoreError> {
        let base = base.trim_end_matches('/');
        Ok(Victoria {
            write_url: format!("{base}/write"),
            select_base: base.to_string(),
            health_urls: vec![format!("{base}/health")],
            flush_url: force_flush.then(|| format!("{base}/internal/force_flush")),
            http: client()?,
        })
    }

    /// A client for a cluster: writes to vminsert at `insert_base`
    /// (`<insert_base>/insert/<tenant>/influx/write`), queries to vmselect at `select_base`
    /// (`<select_base>/select/<tenant>/prometheus/api/v1/...`), both for `tenant`. Health
    /// asks both (`/health`). Samples become queryable when vmstorage flushes them (within
    /// seconds): a cluster has no force flush through vminsert.
    pub fn cluster(
        insert_base: &str,
        select_base: &str,
        tenant: Tenant,
    ) -> Result<Self, StoreError> {
        let (insert, select) = (
            insert_base.trim_end_matches('/'),
            select_base.trim_end_matches('/'),
        );
        Ok(Victoria {
            write_url: format!("{insert}/insert/{tenant}/influx/write"),
            select_base: format!("{select}/select/{tenant}/prometheus"),
            health_urls: vec![format!("{insert}/health"), format!("{select}/health")],
            flush_url: None,
            http: client()?,
        })
    }

    fn selector(q: &RangeQuery) -> Result<String, StoreError> {
        check_name(&q.measurement)?;
        check_name(&q.field)?;
        let mut s = format!("{}_{}{{", q.measurement, q.field);
        for (i, (k, v)) in q.tags.iter().enumerate() {
            check_name(k)?;
            if i > 0 {
                s.push(',');
            }
            s.push_str(k);
            s.push('=');
            s.push_str(&quote(v, '"'));
        }
        s.push('}');
        Ok(s)
    }

    async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<String, StoreError> {
        self.get_url(&format!("{}{}", self.select_base, path), query)
            .await
    }

    async fn get_url(&self, url: &str, query: &[(&str, String)]) -> Result<String, StoreError> {
        let mut r = self
            .http
            .get(url)
            .query(query)
            .send()
            .await
            .map_err(unavailable)?;
        if !r.status().is_success() {
            return body_of(r).await;
        }
        // A query answer (an export of raw values above all) can be as large as the range
        // asked for: it is read only up to a bound, never whole into memory.
        let mut body = Vec::new();
        while let Some(chunk) = r.chunk().await.map_err(unavailable)? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(StoreError::Rejected(format!(
                    "the answer is larger than {MAX_ANSWER_BYTES} bytes: ask for a shorter \
                     range or aggregated steps"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        String::from_utf8(body).map_err(|_| bad("not UTF-8"))
    }
}

/// Largest query answer read from VictoriaMetrics, bytes.
pub const MAX_ANSWER_BYTES: usize = 64 << 20;

fn client() -> Result<reqwest::Client, StoreError> {
    reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|e| StoreError::Protocol(e.to_string()))
}

pub(crate) fn unavailable(e: reqwest::Error) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

/// The body of a successful answer; 5xx is transient, 4xx is not.
pub(crate) async fn body_of(r: reqwest::Response) -> Result<String, StoreError> {
    let status = r.status();
    let body = r.text().await.map_err(unavailable)?;
    if status.is_success() {
        Ok(body)
    } else if status.is_server_error() {
        Err(StoreError::Unavailable(format!(
            "{status}: {}",
            body.trim()
        )))
    } else {
        Err(StoreError::Rejected(format!("{status}: {}", body.trim())))
    }
}

fn over_time(a: Aggregation) -> &'static str {
    match a {
        Aggregation::Avg => "avg_over_time",
        Aggregation::Min => "min_over_time",
        Aggregation::Max => "max_over_time",
        Aggregation::Last => "last_over_time",
        Aggregation::Sum => "sum_over_time",
        Aggregation::Count => "count_over_time",
    }
}

/// Seconds with millisecond precision, as VictoriaMetrics takes them.
fn secs(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000_000_000, ns / 1_000_000 % 1000)
}

fn labels(metric: &Value) -> BTreeMap<String, String> {
    metric
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| k.as_str() != "__name__")
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn bad(what: &str) -> StoreError {
    StoreError::Protocol(format!("VictoriaMetrics answer: {what}"))
}

impl TimeSeriesStore for Victoria {
    async fn write<L: Line>(&self, samples: &[L]) -> Result<(), StoreError> {
        if samples.is_empty() {
            return Ok(());
        }
        let mut body = String::with_capacity(samples.len() * 96);
        line_protocol(&mut body, samples)?;
        let r = self
            .http
            .post(&self.write_url)
            .body(body)
            .send()
            .await
            .map_err(unavailable)?;
        body_of(r).await?;
        if let Some(flush) = &self.flush_url {
            self.get_url(flush, &[]).await?;
        }
        Ok(())
    }

    async fn query_range(&self, q: &RangeQuery) -> Result<Vec<Series>, StoreError> {
        let sel = Self::selector(q)?;
        if q.step_ns == 0 {
            // Raw values: the export API streams one JSON object per series.
            let body = self
                .get(
                    "/api/v1/export",
                    &[
                        ("match[]", sel),
                        ("start", secs(q.start_ns)),
                        ("end", secs(q.end_ns)),
                    ],
                )
                .await?;
            let mut out = Vec::new();
            for line in body.lines().filter(|l| !l.trim().is_empty()) {
                let v: Value = serde_json::from_str(line).map_err(|e| bad(&e.to_string()))?;
                let ts = v["timestamps"]
                    .as_array()
                    .ok_or_else(|| bad("timestamps"))?;
                let vs = v["values"].as_array().ok_or_else(|| bad("values"))?;
                let mut points: Vec<(u64, f64)> = ts
                    .iter()
                    .zip(vs)
                    .filter_map(|(t, v)| Some((t.as_u64()? * 1_000_000, v.as_f64()?)))
                    .collect();
                points.sort_by_key(|p| p.0);
                out.push(Series {
                    tags: labels(&v["metric"]),
                    points,
                });
            }
            out.sort_by(|a, b| a.tags.cmp(&b.tags));
            return Ok(out);
        }
        // Steps of `step` from `start` (as the in-memory history and InfluxDB with an offset
        // count them), the last one partial: step `i` holds the samples of
        // [start + i * step, start + (i + 1) * step), at VictoriaMetrics' millisecond
        // resolution. A lookbehind window `[step]` evaluated at `t` covers (t - step, t], so
        // step `i` is evaluated at the millisecond before it ends; `nocache=1` keeps the
        // evaluation times as asked (with many points it would shift them to cache them).
        let step_ms = (q.step_ns / 1_000_000).max(1);
        let from_ms = q.start_ns.div_ceil(1_000_000);
        let to_ms = (q.end_ns / 1_000_000).max(from_ms);
        let steps = (to_ms - from_ms) / step_ms + 1;
        let first_eval = from_ms + step_ms - 1;
        let last_eval = from_ms + steps * step_ms - 1;
        let ms = |t: u64| format!("{}.{:03}", t / 1000, t % 1000);
        let query = format!("{}({}[{}ms])", over_time(q.aggregation), sel, step_ms);
        let body = self
            .get(
                "/api/v1/query_range",
                &[
                    ("query", query),
                    ("start", ms(first_eval)),
                    ("end", ms(last_eval)),
                    ("step", format!("{step_ms}ms")),
                    ("nocache", "1".into()),
                ],
            )
            .await?;
        let v: Value = serde_json::from_str(&body).map_err(|e| bad(&e.to_string()))?;
        let result = v["data"]["result"]
            .as_array()
            .ok_or_else(|| bad("data.result"))?;
        let mut out = Vec::new();
        for r in result {
            let values = r["values"].as_array().ok_or_else(|| bad("values"))?;
            let points = values
                .iter()
                .filter_map(|p| {
                    let t = p.get(0)?.as_f64()?;
                    let v: f64 = p.get(1)?.as_str()?.parse().ok()?;
                    // Each step stamped with its start, as InfluxDB does (VictoriaMetrics
                    // stamps the evaluation time, the step's last millisecond).
                    let t_ms = (t * 1000.0).round() as u64;
                    let i = t_ms.checked_sub(first_eval)? / step_ms;
                    (i < steps).then(|| (q.start_ns + i * q.step_ns, v))
                })
                .collect();
            out.push(Series {
                tags: labels(&r["metric"]),
                points,
            });
        }
        out.sort_by(|a, b| a.tags.cmp(&b.tags));
        Ok(out)
    }

    async fn health(&self) -> Result<(), StoreError> {
        for url in &self.health_urls {
            self.get_url(url, &[]).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_parse_as_victoria_metrics_writes_them() {
        assert_eq!("0".parse(), Ok(Tenant::default()));
        let t: Tenant = "42:7".parse().unwrap();
        assert_eq!((t.account, t.project), (42, 7));
        assert_eq!(t.to_string(), "42:7");
        assert_eq!("42".parse::<Tenant>().unwrap().to_string(), "42");
        for bad in [
            "",
            "x",
            "-1",
            "+1",
            "1:",
            ":1",
            "1:2:3",
            "4294967296",
            "1/../2",
        ] {
            assert_eq!(bad.parse::<Tenant>(), Err(BadTenant(bad.into())), "{bad}");
        }
    }

    #[test]
    fn a_cluster_writes_to_vminsert_and_asks_vmselect_for_the_tenant() {
        let v = Victoria::cluster(
            "http://ins:8480/",
            "http://sel:8481",
            "42:7".parse().unwrap(),
        )
        .unwrap();
        assert_eq!(v.write_url, "http://ins:8480/insert/42:7/influx/write");
        assert_eq!(v.select_base, "http://sel:8481/select/42:7/prometheus");
        assert_eq!(
            v.health_urls,
            ["http://ins:8480/health", "http://sel:8481/health"]
        );
        assert_eq!(v.flush_url, None);
        let single = Victoria::new("http://vm:8428/", true).unwrap();
        assert_eq!(single.write_url, "http://vm:8428/write");
        assert_eq!(single.select_base, "http://vm:8428");
        assert_eq!(
            single.flush_url.as_deref(),
            Some("http://vm:8428/internal/force_flush")
        );
    }
}
