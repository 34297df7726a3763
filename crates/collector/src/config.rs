//! Configuration: a TOML file, overridden by environment variables
//! `IDINT_COLLECTOR__<SECTION>__<KEY>=value` (value parsed as a TOML value when it is one,
//! else taken as a string), for example `IDINT_COLLECTOR__INGEST__UDP_LISTEN=0.0.0.0:30255`.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::metrics::DetectionConfig;

/// Environment variable prefix of overrides.
pub const ENV_PREFIX: &str = "IDINT_COLLECTOR__";

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
    /// DRKey epoch length of the own AS, seconds.
    #[serde(default = "default_epoch")]
    pub epoch_secs: u32,
    /// Imported level-1 keys of other ASes (JSON array, `drkey` static key file format).
    pub level1_keys: Option<PathBuf>,
    /// The AS's control service (`http://host:port`, DRKey gRPC API), asked for level-1 keys
    /// that are neither derived locally nor imported.
    pub control_service: Option<String>,
}

fn default_epoch() -> u32 {
    86_400
}

/// Ingest listeners and queue.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IngestConfig {
    /// UDP listen address (none: no UDP ingest).
    pub udp_listen: Option<SocketAddr>,
    /// Batches the ingest queue holds; beyond, HTTP answers 503 and UDP drops are counted.
    pub queue_batches: usize,
    /// Largest accepted batch, bytes (HTTP bodies and UDP datagrams).
    pub max_batch_bytes: usize,
    /// Most reports in one batch; larger batches are refused (HTTP 413, counted as
    /// `too_large`).
    pub max_batch_reports: usize,
    /// Decoded reports the ingest queues hold at most over all workers; beyond, HTTP answers
    /// 503 and UDP drops are counted (bounds the queues' memory with `queue_batches`).
    pub queue_reports: usize,
    /// Batches a worker takes from the queue at once.
    pub worker_chunk: usize,
    /// UDP socket receive buffer, bytes (the kernel caps it at `net.core.rmem_max`).
    pub udp_recv_buffer: usize,
    /// Pipeline worker threads (reports are sharded by source; each has its own replay
    /// memory and key caches and an equal share of `queue_batches`).
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
    /// Rejected reports kept for operators.
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
    /// Oldest accepted source timestamp, seconds.
    pub window_s: u64,
    /// Allowed clock skew into the future, ms.
    pub skew_ms: u64,
    /// Pairs remembered at most.
    pub capacity: usize,
}

impl Default for ReplaySection {
    fn default() -> Self {
        ReplaySection {
            window_s: 60,
            skew_ms: 1000,
            capacity: 4 << 20,
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
    /// Base URL of the time-series store.
    pub timeseries_url: Option<String>,
    /// InfluxDB database.
    pub influx_db: String,
    /// Samples the time-series writer buffers at most.
    pub buffer_samples: usize,
    /// Topology changes the write-behind queue holds at most.
    pub topology_queue: usize,
    /// Quarantined reports kept in PostgreSQL.
    pub quarantine_rows: u64,
    /// How long a pipeline worker waits for a full time-series buffer before counting the
    /// points as refused, ms (meanwhile the ingest queues fill and push back).
    pub wait_ms: u64,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            postgres_url: None,
            timeseries: "none".into(),
            timeseries_url: None,
            influx_db: "idint".into(),
            buffer_samples: 1_000_000,
            topology_queue: 100_000,
            quarantine_rows: 10_000,
            wait_ms: 60_000,
        }
    }
}

/// Logging.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// `text` or `json`.
    pub format: String,
    /// Filter (`RUST_LOG` syntax), e.g. `info,collector=debug`.
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
            let v = parse_value(&value);
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
        Self::from_toml(&text, std::env::vars())
    }

    fn validate(&self) -> Result<(), ConfigError> {
        self.collector
            .isd_as
            .parse::<idint_wire::IsdAsn>()
            .map_err(|_| ConfigError(format!("collector.isd_as {:?}", self.collector.isd_as)))?;
        let i = &self.ingest;
        if i.queue_batches == 0
            || i.worker_chunk == 0
            || i.workers == 0
            || i.max_batch_bytes == 0
            || i.max_batch_reports == 0
            || i.queue_reports == 0
        {
            return Err(ConfigError(
                "ingest.queue_batches, ingest.worker_chunk, ingest.workers, \
                 ingest.max_batch_bytes, ingest.max_batch_reports and ingest.queue_reports must \
                 be > 0"
                    .into(),
            ));
        }
        if i.max_batch_reports > i.queue_reports {
            return Err(ConfigError(
                "ingest.max_batch_reports must not exceed ingest.queue_reports".into(),
            ));
        }
        if !matches!(self.log.format.as_str(), "text" | "json") {
            return Err(ConfigError("log.format must be text or json".into()));
        }
        Ok(())
    }
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
}
