//! InfluxDB 1.x backend: line protocol into `/write?precision=ns`, InfluxQL out of `/query`
//! (`epoch=ns`). The database is created when the client connects.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::ts::{Aggregation, Line, RangeQuery, Series, StoreError, TimeSeriesStore};
use crate::ts::{check_name, line_protocol, quote};
use crate::victoria::{body_of, unavailable};

/// Largest request body sent (InfluxDB refuses bodies over 25 MB).
const MAX_BODY: usize = 8 << 20;

/// An InfluxDB 1.x server and database.
#[derive(Debug, Clone)]
pub struct Influx {
    base: String,
    db: String,
    http: reqwest::Client,
}

impl Influx {
    /// Connects to the server at `base` (e.g. `http://127.0.0.1:8086`) and creates database
    /// `db` if needed.
    pub async fn connect(base: &str, db: &str) -> Result<Self, StoreError> {
        check_name(db)?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| StoreError::Protocol(e.to_string()))?;
        let me = Influx {
            base: base.trim_end_matches('/').to_string(),
            db: db.to_string(),
            http,
        };
        me.influxql(&format!("CREATE DATABASE \"{db}\""), true)
            .await?;
        Ok(me)
    }

    async fn influxql(&self, q: &str, post: bool) -> Result<Value, StoreError> {
        let url = format!("{}/query", self.base);
        let params = [("db", self.db.as_str()), ("epoch", "ns"), ("q", q)];
        let req = if post {
            self.http.post(url).form(&params)
        } else {
            self.http.get(url).query(&params)
        };
        let body = body_of(req.send().await.map_err(unavailable)?).await?;
        let v: Value = serde_json::from_str(&body)
            .map_err(|e| StoreError::Protocol(format!("InfluxDB answer: {e}")))?;
        if let Some(e) = v["results"][0]["error"].as_str() {
            return Err(StoreError::Rejected(e.to_string()));
        }
        Ok(v)
    }
}

fn function(a: Aggregation) -> &'static str {
    match a {
        Aggregation::Avg => "mean",
        Aggregation::Min => "min",
        Aggregation::Max => "max",
        Aggregation::Last => "last",
        Aggregation::Sum => "sum",
        Aggregation::Count => "count",
    }
}

impl TimeSeriesStore for Influx {
    async fn write<L: Line>(&self, samples: &[L]) -> Result<(), StoreError> {
        let mut body = String::with_capacity(samples.len().min(100_000) * 96);
        let mut rest = samples;
        while !rest.is_empty() {
            body.clear();
            let mut n = 0;
            while n < rest.len() && body.len() < MAX_BODY {
                line_protocol(&mut body, &rest[n..n + 1])?;
                n += 1;
            }
            let r = self
                .http
                .post(format!("{}/write", self.base))
                .query(&[("db", self.db.as_str()), ("precision", "ns")])
                .body(body.clone())
                .send()
                .await
                .map_err(unavailable)?;
            body_of(r).await?;
            rest = &rest[n..];
        }
        Ok(())
    }

    async fn query_range(&self, q: &RangeQuery) -> Result<Vec<Series>, StoreError> {
        check_name(&q.measurement)?;
        check_name(&q.field)?;
        let mut cond = format!("time >= {} AND time <= {}", q.start_ns, q.end_ns);
        for (k, v) in &q.tags {
            check_name(k)?;
            cond.push_str(&format!(" AND \"{k}\" = {}", quote(v, '\'')));
        }
        let sql = if q.step_ns == 0 {
            format!(
                "SELECT \"{}\" FROM \"{}\" WHERE {cond} GROUP BY *",
                q.field, q.measurement
            )
        } else {
            format!(
                "SELECT {}(\"{}\") FROM \"{}\" WHERE {cond} GROUP BY time({}ns, {}ns), * fill(none)",
                function(q.aggregation),
                q.field,
                q.measurement,
                q.step_ns,
                // Steps counted from the range's start (not from the epoch).
                q.start_ns % q.step_ns
            )
        };
        let v = self.influxql(&sql, false).await?;
        let mut out = Vec::new();
        for s in v["results"][0]["series"].as_array().into_iter().flatten() {
            let tags: BTreeMap<String, String> = s["tags"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                        .filter(|(_, v)| !v.is_empty())
                        .collect()
                })
                .unwrap_or_default();
            let points = s["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| Some((p.get(0)?.as_u64()?, p.get(1)?.as_f64()?)))
                .collect();
            out.push(Series { tags, points });
        }
        out.sort_by(|a, b| a.tags.cmp(&b.tags));
        Ok(out)
    }

    async fn health(&self) -> Result<(), StoreError> {
        let r = self
            .http
            .get(format!("{}/ping", self.base))
            .send()
            .await
            .map_err(unavailable)?;
        body_of(r).await.map(|_| ())
    }
}
