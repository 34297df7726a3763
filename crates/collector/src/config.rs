//! Configuration: a TOML file, overridden by environment variables
//! `IDINT_COLLECTOR__<SECTION>__<KEY>=value` (value parsed as a TOML value when it is one,
//! else taken as a string), for example `IDINT_COLLECTOR__INGEST__UDP_LISTEN=0.0.0.0:30255`.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use collector_core::metrics::DetectionConfig;

/// Environment variable prefix of overrides.
pub const ENV_PREFIX: &str = "IDINT_COLLECTOR__";

/// Upper bound of `ingest.queue_batches`.
pub const MAX_QUEUE_BATCHES: usize = 1 << 20;
/// Upper bound of `ingest.queue_reports`.
pub const MAX_QUEUE_REPORTS: usize = 1 << 26;
/// Upper bound of `ingest.max_batch_bytes` (128 MiB).
pub const MAX_BATCH_BYTES: usize = 1 << 27;
/// Upper bound of `ingest.worker_chunk`.
pub const MAX_WORKER_CHUNK: usize = 1 << 16;
/// Upper bound of `ingest.workers`.
pub const MAX_WORKERS: usize = 1024;
/// Upper bound of `replay.capacity`.
pub const MAX_REPLAY_CAPACITY: usize = 1 << 30;
/// Upper bound of `ingest.udp_recv_buffer` (1 GiB; the kernel caps it lower anyway).
pub const MAX_UDP_RECV_BUFFER: usize = 1 << 30;
/// Upper bound of `api.quarantine` (rejected reports kept in memory, a few hundred bytes
/// each).
pub const MAX_QUARANTINE: usize = 1 << 20;
/// Upper bound of `storage.buffer_samples`.
pub const MAX_BUFFER_SAMPLES: usize = 1 << 26;
/// Default of `storage.spool_bytes` (1 GiB: about ten million samples).
pub const DEFAULT_SPOOL_BYTES: u64 = 1 << 30;
/// Upper bound of `storage.topology_queue`.
pub const MAX_TOPOLOGY_QUEUE: usize = 1 << 24;
/// Upper bound of `storage.wait_ms` (an hour).
pub const MAX_WAIT_MS: u64 = 3_600_000;
/// The 48-bit source timestamp wraps every 2^48 ns (~3.26 days): the replay window plus the
/// allowed skew must stay below that, or a timestamp could be taken as either past or future.
const TIMESTAMP_WRAP_NS: u64 = 1 << 48;

/// Keys whose values are strings: an environment override of one of them is taken as text
/// even when it looks like a number or a boolean (`IDINT_COLLECTOR__API__ADMIN_TOKEN=123456`).
const STRING_KEYS: &[&[&str]] = &[
    &["collector", "isd_as"],
    &["collector", "control_service"],
    &["collector", "master_key"],
    &["collector", "level1_keys"],
    &["api", "admin_token"],
    &["log", "format"],
    &["log", "filter"],
    &["storage", "postgres_url"],
    &["storage", "spool_dir"],
    &["storage", "timeseries"],
    &["storage", "timeseries_url"],
    &["storage", "influx_db"],
    &["storage", "victoria_insert_url"],
    &["storage", "victoria_select_url"],
    &["storage", "victoria_tenant"],
];

/// The whole configuration.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Who the collector is and its keys.
    pub collector: CollectorConfig,
    /// Ingest.
    #[serde(default)]
    pub ingest: IngestConfig,
    /// REST API.
    #[serde(default)]
    pub api: ApiConfig,
    /// Replay window.
    #[serde(default)]
    pub replay: ReplaySection,
    /// Event detection.
    #[serde(default)]
    pub detection: DetectionConfig,
    /// Topology imported at start.
    #[serde(default)]
    pub topology: TopologySection,
    /// Logging.
    #[serde(default)]
    pub log: LogConfig,
    /// PostgreSQL and the time-series store.
    #[serde(default)]
    pub storage: StorageConfig,
    /// Several instances sharing the stores.
    #[serde(default)]
    pub cluster: ClusterSection,
}

/// Several collector instances on one PostgreSQL and one time-series store: each owns the
/// sources that [`collector_core::replay::Share`] assigns to it and refuses the others'
/// reports (so a report replayed to another instance is refused); topology changes made
/// through one reach the others through PostgreSQL's LISTEN/NOTIFY.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterSection {
    /// Instances in the cluster (at least 1).
    pub instances: u32,
    /// This instance, `0..instances`.
    pub index: u32,
}

impl Default for ClusterSection {
    fn default() -> Self {
        ClusterSection {
            instances: 1,
            index: 0,
        }
    }
}

/// Identity and keys.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectorConfig {
    /// The collector's ISD-AS (the verifier AS of the reports it accepts).
    pub isd_as: String,
    /// The collector's host address (the verifier host).
    pub host: std::net::IpAddr,
    /// The AS master secret file (`master0.key`), for own-AS keys.
    pub master_key: Option<PathBuf>,
    /// DRKey epoch length of the own AS, seconds (> 0).
    #[serde(default = "default_epoch")]
    pub epoch_secs: u32,
    /// Imported level-1 keys of other ASes (JSON array, `drkey` static key file format).
    pub level1_keys: Option<PathBuf>,
    /// The AS's control service (`http://host:port`, DRKey gRPC API), asked for level-1 keys
    /// that are neither derived locally nor imported. Must be an `http://` URL with a host
    /// (the gRPC client is built without TLS: `https://` is refused rather than sent in
    /// clear).
    pub control_service: Option<String>,
    /// Key fetches from the control service per second at most (> 0); lookups never wait
    /// for a fetch: the reports that need its key wait in the pipeline instead.
    #[serde(default = "default_fetches_per_s")]
    pub control_service_fetches_per_s: u32,
    /// How long a failed key fetch is remembered, seconds: reports needing that key are
    /// rejected at once meanwhile instead of asking again.
    #[serde(default = "default_miss_ttl_s")]
    pub control_service_miss_ttl_s: u64,
}

fn default_epoch() -> u32 {
    86_400
}

fn default_fetches_per_s() -> u32 {
    collector_core::remote_keys::RemoteKeysConfig::default().fetches_per_s
}

fn default_miss_ttl_s() -> u64 {
    collector_core::remote_keys::RemoteKeysConfig::default().miss_ttl_s
}

/// Ingest listeners and queue.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IngestConfig {
    /// UDP listen address (none: no UDP ingest).
    pub udp_listen: Option<SocketAddr>,
    /// Batches the ingest queue holds; beyond, HTTP answers 503 and UDP drops are counted
    /// (1 to [`MAX_QUEUE_BATCHES`]).
    pub queue_batches: usize,
    /// Largest accepted batch, bytes (HTTP bodies and UDP datagrams; 1 to
    /// [`MAX_BATCH_BYTES`]).
    pub max_batch_bytes: usize,
    /// Most reports in one batch; larger batches are refused (HTTP 413, counted as
    /// `too_large`; 1 to `queue_reports`).
    pub max_batch_reports: usize,
    /// Decoded reports the ingest queues hold at most over all workers; beyond, HTTP answers
    /// 503 and UDP drops are counted (bounds the queues' memory with `queue_batches`; 1 to
    /// [`MAX_QUEUE_REPORTS`]).
    pub queue_reports: usize,
    /// Batches a worker takes from the queue at once (1 to [`MAX_WORKER_CHUNK`]).
    pub worker_chunk: usize,
    /// UDP socket receive buffer, bytes (1 to [`MAX_UDP_RECV_BUFFER`]; the kernel caps it at
    /// `net.core.rmem_max`).
    pub udp_recv_buffer: usize,
    /// Pipeline worker threads (reports are sharded by source; each has its own replay
    /// memory and key caches and an equal share of `queue_batches`; 1 to [`MAX_WORKERS`]).
    pub workers: usize,
}

impl Default for IngestConfig {
    fn default() -> Self {
        IngestConfig {
            udp_listen: None,
            queue_batches: 4096,
            max_batch_bytes: 1 << 20,
            max_batch_reports: 4096,
            queue_reports: 1 << 18,
            worker_chunk: 64,
            udp_recv_buffer: 4 << 20,
            workers: 1,
        }
    }
}

/// REST API.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiConfig {
    /// HTTP listen address.
    pub listen: SocketAddr,
    /// Bearer token of the admin endpoints (none: admin endpoints refuse everything).
    pub admin_token: Option<String>,
    /// Rejected reports kept for operators (0 to [`MAX_QUARANTINE`]).
    pub quarantine: usize,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8480)),
            admin_token: None,
            quarantine: 1024,
        }
    }
}

/// Replay window.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplaySection {
    /// Oldest accepted source timestamp, seconds (at least 1; with `skew_ms`, under the
    /// 2^48 ns wrap of the timestamps).
    pub window_s: u64,
    /// Allowed clock skew into the future, ms.
    pub skew_ms: u64,
    /// Pairs remembered at most (1 to [`MAX_REPLAY_CAPACITY`]).
    pub capacity: usize,
    /// Pairs one source may hold at most (1 to `capacity`; default: an eighth of it), so
    /// that one source cannot lock the others out. A load generator that is one source
    /// sets it to `capacity`.
    pub per_source: Option<usize>,
}

impl ReplaySection {
    /// The per-source quota in effect.
    pub fn source_quota(&self) -> usize {
        self.per_source
            .unwrap_or(self.capacity / collector_core::pipeline::DEFAULT_SOURCE_SHARE)
            .max(1)
    }
}

impl Default for ReplaySection {
    fn default() -> Self {
        ReplaySection {
            window_s: 60,
            skew_ms: 1000,
            capacity: collector_core::pipeline::DEFAULT_REPLAY_CAPACITY,
            per_source: None,
        }
    }
}

/// Topology files imported at start.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TopologySection {
    /// SCION `topology.json` files.
    pub files: Vec<PathBuf>,
    /// Path description files (JSON array of `{"hops": [...]}`).
    pub paths: Vec<PathBuf>,
}

/// Storage configuration (`[storage]`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// PostgreSQL URL (`postgresql://user:pw@host:port/db`); none: topology in memory only.
    pub postgres_url: Option<String>,
    /// `victoria`, `influx` or `none`.
    pub timeseries: String,
    /// Base URL of the time-series store (a single-node VictoriaMetrics or InfluxDB).
    pub timeseries_url: Option<String>,
    /// InfluxDB database.
    pub influx_db: String,
    /// A VictoriaMetrics cluster's vminsert (`http://host:8480`): writes go to
    /// `/insert/<tenant>/influx/write`. Set with `victoria_select_url`, instead of
    /// `timeseries_url`.
    pub victoria_insert_url: Option<String>,
    /// A VictoriaMetrics cluster's vmselect (`http://host:8481`): queries go to
    /// `/select/<tenant>/prometheus/api/v1/...`.
    pub victoria_select_url: Option<String>,
    /// The cluster tenant: `accountID` or `accountID:projectID` (none: tenant `0`).
    pub victoria_tenant: Option<String>,
    /// Samples the time-series writer buffers at most (1 to [`MAX_BUFFER_SAMPLES`]).
    pub buffer_samples: usize,
    /// Where the time-series writer spills samples when its memory buffer is full (the
    /// store down or slow), and where it finds them again after a restart (none: refuse
    /// instead, and the pipeline waits up to `wait_ms`).
    pub spool_dir: Option<PathBuf>,
    /// Bytes the spool holds at most (about 100 bytes a sample).
    pub spool_bytes: u64,
    /// Topology changes the write-behind queue holds at most (1 to [`MAX_TOPOLOGY_QUEUE`]).
    pub topology_queue: usize,
    /// Quarantined reports kept in PostgreSQL.
    pub quarantine_rows: u64,
    /// Quarantined reports waiting to be written at most (1 to [`MAX_TOPOLOGY_QUEUE`]); a
    /// queue of its own, which drops (and counts) what does not fit, so that a flood of bad
    /// reports never takes the topology changes' room.
    pub quarantine_queue: usize,
    /// How long a pipeline worker waits for a full time-series buffer before counting the
    /// points as refused, ms (meanwhile the ingest queues fill and push back; at most
    /// [`MAX_WAIT_MS`]).
    pub wait_ms: u64,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            postgres_url: None,
            timeseries: "none".into(),
            timeseries_url: None,
            influx_db: "idint".into(),
            victoria_insert_url: None,
            victoria_select_url: None,
            victoria_tenant: None,
            buffer_samples: 1_000_000,
            spool_dir: None,
            spool_bytes: DEFAULT_SPOOL_BYTES,
            topology_queue: 100_000,
            quarantine_rows: 10_000,
            quarantine_queue: 4096,
            wait_ms: 60_000,
        }
    }
}

/// Where a VictoriaMetrics cluster takes writes and queries, for which tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VictoriaCluster {
    /// vminsert's base URL.
    pub insert_url: String,
    /// vmselect's base URL.
    pub select_url: String,
    /// The tenant.
    pub tenant: collector_store::victoria::Tenant,
}

impl StorageConfig {
    /// The VictoriaMetrics cluster the keys name, if any; an error when they are
    /// inconsistent: only one of the two URLs, a URL that is no `http` URL, a cluster and
    /// `timeseries_url` at once, cluster keys with another store than `victoria`, or a tenant
    /// that does not parse.
    pub fn victoria_cluster(&self) -> Result<Option<VictoriaCluster>, ConfigError> {
        let (insert, select) = match (&self.victoria_insert_url, &self.victoria_select_url) {
            (None, None) => {
                return match &self.victoria_tenant {
                    Some(_) => Err(ConfigError(
                        "storage.victoria_tenant needs storage.victoria_insert_url and \
                         storage.victoria_select_url"
                            .into(),
                    )),
                    None => Ok(None),
                };
            }
            (Some(i), Some(s)) => (i, s),
            _ => {
                return Err(ConfigError(
                    "storage.victoria_insert_url and storage.victoria_select_url go together"
                        .into(),
                ));
            }
        };
        if self.timeseries != "victoria" {
            return Err(ConfigError(format!(
                "storage.victoria_insert_url/select_url need storage.timeseries = \"victoria\", \
                 not {:?}",
                self.timeseries
            )));
        }
        if self.timeseries_url.is_some() {
            return Err(ConfigError(
                "storage.timeseries_url (a single node) and storage.victoria_insert_url/\
                 select_url (a cluster) exclude each other"
                    .into(),
            ));
        }
        for (key, url) in [
            ("victoria_insert_url", insert),
            ("victoria_select_url", select),
        ] {
            check_url(url).map_err(|e| ConfigError(format!("storage.{key} {url:?}: {e}")))?;
        }
        let tenant = match &self.victoria_tenant {
            None => collector_store::victoria::Tenant::default(),
            Some(t) => t
                .parse()
                .map_err(|e| ConfigError(format!("storage.victoria_tenant: {e}")))?,
        };
        Ok(Some(VictoriaCluster {
            insert_url: insert.clone(),
            select_url: select.clone(),
            tenant,
        }))
    }
}

/// Logging.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// `text` or `json`.
    pub format: String,
    /// Filter (`RUST_LOG` syntax), e.g. `info,collector=debug`; a filter that does not parse
    /// is refused.
    pub filter: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            format: "text".into(),
            filter: "info".into(),
        }
    }
}

/// Why the configuration is unusable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Parses TOML text and applies overrides from `env` (name, value) pairs.
    pub fn from_toml(
        text: &str,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut table: toml::Table =
            toml::from_str(text).map_err(|e| ConfigError(format!("config: {e}")))?;
        for (name, value) in env {
            let Some(rest) = name.strip_prefix(ENV_PREFIX) else {
                continue;
            };
            let path: Vec<String> = rest.split("__").map(|s| s.to_ascii_lowercase()).collect();
            if path.iter().any(|p| p.is_empty()) {
                return Err(ConfigError(format!(
                    "environment override {name}: empty key"
                )));
            }
            let mut v = parse_value(&value);
            if !v.is_str() && STRING_KEYS.iter().any(|k| k.iter().eq(path.iter())) {
                v = toml::Value::String(value);
            }
            set(&mut table, &path, v).map_err(|e| ConfigError(format!("{name}: {e}")))?;
        }
        let cfg: Config = table
            .try_into()
            .map_err(|e| ConfigError(format!("config: {e}")))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Reads a file and applies the process environment.
    pub fn load(path: &std::path::Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("{}: {e}", path.display())))?;
        Self::from_toml(&text, utf8_env(std::env::vars_os())?)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let c = &self.cluster;
        if c.instances == 0 || c.index >= c.instances {
            return Err(ConfigError(format!(
                "cluster.index = {} with cluster.instances = {}: needs 0 <= index < instances",
                c.index, c.instances
            )));
        }
        self.collector
            .isd_as
            .parse::<idint_wire::IsdAsn>()
            .map_err(|_| ConfigError(format!("collector.isd_as {:?}", self.collector.isd_as)))?;
        let (lo, hi) = (drkey::epoch::MIN_DURATION, drkey::epoch::MAX_DURATION);
        if !(lo..=hi).contains(&self.collector.epoch_secs) {
            return Err(ConfigError(format!(
                "collector.epoch_secs = {}: a DRKey epoch lasts {lo} to {hi} s",
                self.collector.epoch_secs
            )));
        }
        if self.collector.control_service_fetches_per_s == 0 {
            return Err(ConfigError(
                "collector.control_service_fetches_per_s must be > 0".into(),
            ));
        }
        if let Some(url) = &self.collector.control_service {
            check_url(url)
                .map_err(|e| ConfigError(format!("collector.control_service {url:?}: {e}")))?;
        }
        let i = &self.ingest;
        for (key, v, max) in [
            ("ingest.queue_batches", i.queue_batches, MAX_QUEUE_BATCHES),
            ("ingest.queue_reports", i.queue_reports, MAX_QUEUE_REPORTS),
            ("ingest.max_batch_bytes", i.max_batch_bytes, MAX_BATCH_BYTES),
            (
                "ingest.max_batch_reports",
                i.max_batch_reports,
                i.queue_reports,
            ),
            ("ingest.worker_chunk", i.worker_chunk, MAX_WORKER_CHUNK),
            ("ingest.workers", i.workers, MAX_WORKERS),
            (
                "ingest.udp_recv_buffer",
                i.udp_recv_buffer,
                MAX_UDP_RECV_BUFFER,
            ),
            ("replay.capacity", self.replay.capacity, MAX_REPLAY_CAPACITY),
            (
                "replay.per_source",
                self.replay.per_source.unwrap_or(1),
                self.replay.capacity,
            ),
            (
                "storage.buffer_samples",
                self.storage.buffer_samples,
                MAX_BUFFER_SAMPLES,
            ),
            (
                "storage.topology_queue",
                self.storage.topology_queue,
                MAX_TOPOLOGY_QUEUE,
            ),
            (
                "storage.quarantine_queue",
                self.storage.quarantine_queue,
                MAX_TOPOLOGY_QUEUE,
            ),
        ] {
            in_range(key, v, max)?;
        }
        // Zero is allowed here: no rejected report kept.
        if self.api.quarantine > MAX_QUARANTINE {
            return Err(ConfigError(format!(
                "api.quarantine = {}: must be at most {MAX_QUARANTINE}",
                self.api.quarantine
            )));
        }
        if self.storage.wait_ms > MAX_WAIT_MS {
            return Err(ConfigError(format!(
                "storage.wait_ms = {}: must be at most {MAX_WAIT_MS} (an hour)",
                self.storage.wait_ms
            )));
        }
        let r = &self.replay;
        let span_ns = r
            .window_s
            .checked_mul(1_000_000_000)
            .and_then(|w| w.checked_add(r.skew_ms.checked_mul(1_000_000)?));
        if r.window_s == 0 || span_ns.is_none_or(|ns| ns >= TIMESTAMP_WRAP_NS) {
            return Err(ConfigError(format!(
                "replay.window_s = {} with replay.skew_ms = {}: the window must be at least 1 s \
                 and window plus skew under 2^48 ns (~3.26 days), where the 48-bit source \
                 timestamps wrap",
                r.window_s, r.skew_ms
            )));
        }
        if !matches!(self.log.format.as_str(), "text" | "json") {
            return Err(ConfigError("log.format must be text or json".into()));
        }
        tracing_subscriber::EnvFilter::try_new(&self.log.filter)
            .map_err(|e| ConfigError(format!("log.filter {:?}: {e}", self.log.filter)))?;
        if !matches!(
            self.storage.timeseries.as_str(),
            "none" | "victoria" | "influx"
        ) {
            return Err(ConfigError(format!(
                "storage.timeseries {:?}: victoria, influx or none",
                self.storage.timeseries
            )));
        }
        self.storage.victoria_cluster()?;
        Ok(())
    }
}

fn in_range(key: &str, v: usize, max: usize) -> Result<(), ConfigError> {
    if v == 0 || v > max {
        return Err(ConfigError(format!(
            "{key} = {v}: must be between 1 and {max}"
        )));
    }
    Ok(())
}

/// Checks that `url` is an absolute `http` URL with a host (this build's HTTP and gRPC
/// clients have no TLS: an `https` URL would not be honoured).
fn check_url(url: &str) -> Result<(), String> {
    let u: axum::http::Uri = url.parse().map_err(|e| format!("not a URL: {e}"))?;
    match u.scheme_str() {
        Some("http") => {}
        Some("https") => {
            return Err("https is not supported: this build's clients have no TLS".into());
        }
        _ => return Err("scheme must be http".into()),
    }
    if u.host().is_none_or(str::is_empty) {
        return Err("no host".into());
    }
    Ok(())
}

/// The environment as UTF-8 pairs: variables that are not UTF-8 are skipped, unless they
/// are overrides (named `IDINT_COLLECTOR__...`), which are an error naming the variable.
pub fn utf8_env(
    vars: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for (name, value) in vars {
        let ours = name.as_encoded_bytes().starts_with(ENV_PREFIX.as_bytes());
        match (name.into_string(), value.into_string()) {
            (Ok(n), Ok(v)) => out.push((n, v)),
            (n, _) if ours => {
                let n = match n {
                    Ok(n) => n,
                    Err(n) => n.to_string_lossy().into_owned(),
                };
                return Err(ConfigError(format!(
                    "environment override {n}: name or value is not UTF-8"
                )));
            }
            _ => {}
        }
    }
    Ok(out)
}

fn parse_value(s: &str) -> toml::Value {
    // A bare TOML value (number, bool, array, quoted string), else the text itself.
    let doc = format!("v = {s}");
    match toml::from_str::<toml::Table>(&doc) {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(s.into())),
        Err(_) => toml::Value::String(s.into()),
    }
}

fn set(t: &mut toml::Table, path: &[String], v: toml::Value) -> Result<(), String> {
    match path {
        [] => Err("empty path".into()),
        [k] => {
            t.insert(k.clone(), v);
            Ok(())
        }
        [k, rest @ ..] => {
            let e = t
                .entry(k.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            match e {
                toml::Value::Table(sub) => set(sub, rest, v),
                _ => Err(format!("{k} is not a section")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
[collector]
isd_as = "1-ff00:0:a"
host = "10.1.0.100"

[api]
listen = "127.0.0.1:8480"

[detection]
latency_ns = 500.0
"#;

    #[test]
    fn environment_overrides_the_file() {
        let env = [
            ("IDINT_COLLECTOR__INGEST__UDP_LISTEN", "127.0.0.1:30255"),
            ("IDINT_COLLECTOR__API__ADMIN_TOKEN", "s3cret"),
            ("IDINT_COLLECTOR__DETECTION__REFRESH_MS", "250"),
            ("OTHER", "ignored"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()));
        let c = Config::from_toml(BASE, env).unwrap();
        assert_eq!(
            c.ingest.udp_listen,
            Some("127.0.0.1:30255".parse().unwrap())
        );
        assert_eq!(c.api.admin_token.as_deref(), Some("s3cret"));
        assert_eq!(c.detection.refresh_ms, 250);
        assert_eq!(c.detection.latency_ns, 500.0);
        // Unknown keys and bad values are errors with the reason.
        let e = Config::from_toml(BASE, [("IDINT_COLLECTOR__API__NOPE".into(), "1".into())])
            .unwrap_err();
        assert!(e.0.contains("nope"), "{e}");
        let e = Config::from_toml(&BASE.replace("1-ff00:0:a", "x"), []).unwrap_err();
        assert!(e.0.contains("isd_as"), "{e}");
    }

    #[test]
    fn a_victoria_metrics_cluster_needs_both_urls_and_a_tenant_that_parses() {
        const VM: &str = "[storage]\ntimeseries = \"victoria\"\n";
        let cluster = "victoria_insert_url = \"http://127.0.0.1:8480\"\n\
                       victoria_select_url = \"http://127.0.0.1:8481\"\n";
        let c = Config::from_toml(
            &format!("{BASE}\n{VM}{cluster}victoria_tenant = \"42:7\""),
            [],
        )
        .unwrap();
        let vc = c.storage.victoria_cluster().unwrap().unwrap();
        assert_eq!(vc.insert_url, "http://127.0.0.1:8480");
        assert_eq!(vc.select_url, "http://127.0.0.1:8481");
        assert_eq!(vc.tenant.to_string(), "42:7");
        // Tenant 0 by default; a single node has no cluster.
        let c = Config::from_toml(&format!("{BASE}\n{VM}{cluster}"), []).unwrap();
        assert_eq!(
            c.storage
                .victoria_cluster()
                .unwrap()
                .unwrap()
                .tenant
                .account,
            0
        );
        let c = Config::from_toml(
            &format!("{BASE}\n{VM}timeseries_url = \"http://vm:8428\""),
            [],
        )
        .unwrap();
        assert_eq!(c.storage.victoria_cluster().unwrap(), None);
        // A tenant given through the environment stays text.
        let env = [(
            "IDINT_COLLECTOR__STORAGE__VICTORIA_TENANT".to_string(),
            "12".to_string(),
        )];
        let c = Config::from_toml(&format!("{BASE}\n{VM}{cluster}"), env).unwrap();
        assert_eq!(
            c.storage
                .victoria_cluster()
                .unwrap()
                .unwrap()
                .tenant
                .account,
            12
        );
        for (extra, what) in [
            (
                format!("{VM}victoria_insert_url = \"http://i:8480\""),
                "go together",
            ),
            (
                format!("{VM}{cluster}victoria_tenant = \"x\""),
                "victoria_tenant",
            ),
            (
                format!("{VM}{cluster}victoria_tenant = \"1:2:3\""),
                "victoria_tenant",
            ),
            (format!("{VM}victoria_tenant = \"1\""), "victoria_tenant"),
            (
                format!("{VM}{cluster}timeseries_url = \"http://vm:8428\""),
                "exclude each other",
            ),
            (
                format!("{}{cluster}", VM.replace("victoria", "influx")),
                "storage.timeseries = \"victoria\"",
            ),
            (
                format!(
                    "{VM}{}",
                    cluster.replace("http://127.0.0.1:8481", "https://s")
                ),
                "storage.victoria_select_url",
            ),
        ] {
            let e = refused(&extra);
            assert!(e.contains(what), "{extra}: {e}");
        }
    }

    fn refused(extra: &str) -> String {
        Config::from_toml(&format!("{BASE}\n{extra}"), [])
            .unwrap_err()
            .0
    }

    #[test]
    fn out_of_range_and_unusable_values_name_the_key() {
        for (extra, key) in [
            (
                "[ingest]\nworker_chunk = 4611686018427387904",
                "ingest.worker_chunk",
            ),
            (
                "[ingest]\nqueue_batches = 9223372036854775807",
                "ingest.queue_batches",
            ),
            (
                "[ingest]\nqueue_reports = 9223372036854775807",
                "ingest.queue_reports",
            ),
            ("[ingest]\nworkers = 100000", "ingest.workers"),
            ("[ingest]\nmax_batch_bytes = 0", "ingest.max_batch_bytes"),
            (
                "[ingest]\nmax_batch_reports = 300000",
                "ingest.max_batch_reports",
            ),
            ("[replay]\ncapacity = 0", "replay.capacity"),
            ("[replay]\nwindow_s = 0", "replay.window_s"),
            ("[replay]\nwindow_s = 281475", "replay.window_s"),
            (
                "[replay]\nwindow_s = 281000\nskew_ms = 1000000",
                "replay.window_s",
            ),
            ("[replay]\nskew_ms = 9223372036854775807", "replay.window_s"),
            ("[ingest]\nudp_recv_buffer = 0", "ingest.udp_recv_buffer"),
            (
                "[ingest]\nudp_recv_buffer = 4611686018427387904",
                "ingest.udp_recv_buffer",
            ),
            ("[storage]\nbuffer_samples = 0", "storage.buffer_samples"),
            ("[storage]\ntopology_queue = 0", "storage.topology_queue"),
            ("[storage]\nwait_ms = 86400000", "storage.wait_ms"),
            ("[log]\nfilter = \"[[[==\"", "log.filter"),
            ("[storage]\ntimeseries = \"bogus\"", "storage.timeseries"),
        ] {
            let e = refused(extra);
            assert!(e.contains(key), "{extra}: {e}");
        }
        let with = |k: &str, v: &str| BASE.replace("[api]", &format!("{k} = {v}\n[api]"));
        for (k, v) in [
            ("epoch_secs", "0"),
            ("epoch_secs", "10"),
            ("epoch_secs", "300000"),
            ("control_service", "\"not a url\""),
            ("control_service", "\"ftp://cs:1\""),
            ("control_service", "\"https://cs:1\""),
        ] {
            let e = Config::from_toml(&with(k, v), []).unwrap_err().0;
            assert!(e.contains(&format!("collector.{k}")), "{k}: {e}");
        }
        let big = BASE.replace("[api]", "[api]\nquarantine = 4611686018427387904");
        let e = Config::from_toml(&big, []).unwrap_err().0;
        assert!(e.contains("api.quarantine"), "{e}");
        Config::from_toml(&BASE.replace("[api]", "[api]\nquarantine = 0"), []).unwrap();
        let ok = with("control_service", "\"http://127.0.0.1:31255\"");
        Config::from_toml(
            &format!("{ok}\n[log]\nfilter = \"info,collector=debug\""),
            [],
        )
        .unwrap();
    }

    #[test]
    fn numeric_looking_string_overrides_stay_strings() {
        let env = [
            ("IDINT_COLLECTOR__API__ADMIN_TOKEN", "123456"),
            ("IDINT_COLLECTOR__STORAGE__INFLUX_DB", "true"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()));
        let c = Config::from_toml(BASE, env).unwrap();
        assert_eq!(c.api.admin_token.as_deref(), Some("123456"));
        assert_eq!(c.storage.influx_db, "true");
    }

    #[test]
    fn non_utf8_environment_is_skipped_unless_an_override() {
        use std::ffi::OsString;
        use std::os::unix::ffi::OsStringExt;
        let junk = || OsString::from_vec(vec![0xff, b'x']);
        let env = utf8_env([
            (OsString::from("JUNK"), junk()),
            (junk(), OsString::from("v")),
            (OsString::from("HOME"), OsString::from("/root")),
        ])
        .unwrap();
        assert_eq!(env, [("HOME".to_string(), "/root".to_string())]);
        let e =
            utf8_env([(OsString::from("IDINT_COLLECTOR__API__ADMIN_TOKEN"), junk())]).unwrap_err();
        assert!(e.0.contains("IDINT_COLLECTOR__API__ADMIN_TOKEN"), "{e}");
        let mut name = b"IDINT_COLLECTOR__".to_vec();
        name.push(0xff);
        let e = utf8_env([(OsString::from_vec(name), OsString::from("1"))]).unwrap_err();
        assert!(e.0.contains("IDINT_COLLECTOR__"), "{e}");
    }
}
