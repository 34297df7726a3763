//! One test suite for every time-series backend, against the real servers started by
//! `scripts/services.sh`.

mod common;

use std::time::Duration;
use test_kit::require::Need;

use collector_store::influx::Influx;
use collector_store::spool::SpoolConfig;
use collector_store::victoria::Victoria;
use collector_store::writer::{BufferedWriter, Refused, WriterConfig};
use collector_store::{Aggregation, RangeQuery, Sample, TimeSeriesStore};
use common::{now_ns, unique};
use test_kit::services::Services;

const S: u64 = 1_000_000_000;

fn sample(series: &str, hop: u32, value: f64, time_ns: u64) -> Sample {
    Sample {
        measurement: "hop".into(),
        tags: vec![
            ("series".into(), series.into()),
            ("hop".into(), hop.to_string()),
        ],
        field: "latency_ns".into(),
        value,
        time_ns,
    }
}

fn query(
    series: &str,
    start_ns: u64,
    end_ns: u64,
    step_ns: u64,
    aggregation: Aggregation,
) -> RangeQuery {
    RangeQuery {
        measurement: "hop".into(),
        field: "latency_ns".into(),
        tags: vec![("series".into(), series.into())],
        start_ns,
        end_ns,
        step_ns,
        aggregation,
    }
}

/// A recent time aligned to 10 s (both stores align steps to the epoch).
fn base_time() -> u64 {
    (now_ns() / (10 * S) - 12) * 10 * S
}

/// Exact values back, one series per tag set, in time order.
async fn exact_round_trip<T: TimeSeriesStore>(store: &T) {
    let series = unique("exact");
    let t0 = base_time();
    let mut samples = Vec::new();
    for k in 0..20u64 {
        samples.push(sample(
            &series,
            1,
            1000.0 + k as f64 * 0.25,
            t0 + k * 250_000_000,
        ));
        samples.push(sample(&series, 2, -(k as f64) * 1e9, t0 + k * 250_000_000));
    }
    store.write(&samples).await.unwrap();
    let got = store
        .query_range(&query(&series, t0, t0 + 10 * S, 0, Aggregation::Avg))
        .await
        .unwrap();
    assert_eq!(got.len(), 2, "{got:?}");
    for (s, hop) in got.iter().zip([1u32, 2]) {
        assert_eq!(
            s.tags.get("hop").map(String::as_str),
            Some(hop.to_string().as_str())
        );
        assert_eq!(s.tags.get("series"), Some(&series));
        let want: Vec<(u64, f64)> = samples
            .iter()
            .filter(|x| x.tags[1].1 == hop.to_string())
            .map(|x| (x.time_ns, x.value))
            .collect();
        assert_eq!(s.points, want);
    }
}

/// Steps aggregate what falls into them; points are stamped with their window's start.
async fn aggregated_steps<T: TimeSeriesStore>(store: &T) {
    let series = unique("agg");
    let t0 = base_time();
    // Window [t0, t0+5s): 1, 2, 6; window [t0+5s, t0+10s): 10, 30.
    let at = [(1, 1.0), (2, 2.0), (3, 6.0), (6, 10.0), (7, 30.0)];
    let samples: Vec<Sample> = at
        .iter()
        .map(|&(s, v)| sample(&series, 1, v, t0 + s * S))
        .collect();
    store.write(&samples).await.unwrap();
    for (agg, want) in [
        (Aggregation::Avg, [3.0, 20.0]),
        (Aggregation::Min, [1.0, 10.0]),
        (Aggregation::Max, [6.0, 30.0]),
        (Aggregation::Sum, [9.0, 40.0]),
        (Aggregation::Count, [3.0, 2.0]),
        (Aggregation::Last, [6.0, 30.0]),
    ] {
        let got = store
            .query_range(&query(&series, t0, t0 + 10 * S, 5 * S, agg))
            .await
            .unwrap();
        assert_eq!(got.len(), 1, "{agg:?}: {got:?}");
        assert_eq!(
            got[0].points,
            vec![(t0, want[0]), (t0 + 5 * S, want[1])],
            "{agg:?}"
        );
    }
    // A range that starts anywhere (the API's default: the last hour up to now) and ends
    // inside a step: steps counted from its start, the first and the last (partial) one
    // included.
    let series = unique("unaligned");
    let t1 = base_time() + 1_234_567_891;
    let at = [
        (500, 1.0),
        (2000, 2.0),
        (4900, 3.0),
        (5500, 10.0),
        (9000, 20.0),
        (11_000, 7.0),
    ];
    let samples: Vec<Sample> = at
        .iter()
        .map(|&(ms, v)| sample(&series, 1, v, t1 + ms * 1_000_000))
        .collect();
    store.write(&samples).await.unwrap();
    for (agg, want) in [
        (Aggregation::Count, [3.0, 2.0, 1.0]),
        (Aggregation::Max, [3.0, 20.0, 7.0]),
    ] {
        let got = store
            .query_range(&query(&series, t1, t1 + 11_500_000_000, 5 * S, agg))
            .await
            .unwrap();
        assert_eq!(got.len(), 1, "{agg:?}: {got:?}");
        assert_eq!(
            got[0].points,
            vec![(t1, want[0]), (t1 + 5 * S, want[1]), (t1 + 10 * S, want[2])],
            "{agg:?}"
        );
    }
    // Nothing outside the range.
    let none = store
        .query_range(&query(
            &series,
            t0 + 20 * S,
            t0 + 30 * S,
            0,
            Aggregation::Avg,
        ))
        .await
        .unwrap();
    assert!(none.iter().all(|s| s.points.is_empty()), "{none:?}");
}

/// The writer buffers while the store is down, pushes back when full, and delivers
/// everything it accepted once the store is back.
async fn outage<T: TimeSeriesStore + Clone>(store: T, services: &Services, which: &str) {
    let series = unique("outage");
    let t0 = base_time();
    services.stop(&[which]);
    assert!(store.health().await.is_err());
    let w = BufferedWriter::spawn(
        store.clone(),
        WriterConfig {
            capacity: 1500,
            batch: 400,
            max_delay: Duration::from_millis(20),
            backoff_min: Duration::from_millis(20),
            backoff_max: Duration::from_millis(200),
            spool: None,
        },
    )
    .unwrap();
    let samples: Vec<Sample> = (0..1000u64)
        .map(|k| sample(&series, 7, k as f64, t0 + k * 1_000_000))
        .collect();
    for chunk in samples.chunks(100) {
        w.try_write(chunk).unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let st = w.stats();
    assert_eq!(
        (st.accepted, st.written, st.pending),
        (1000, 0, 1000),
        "{st:?}"
    );
    assert!(st.retries > 0 && w.last_error().is_some(), "{st:?}");
    // Full: all-or-nothing refusal, counted.
    let more: Vec<Sample> = (0..600u64)
        .map(|k| sample(&series, 8, 1.0, t0 + k))
        .collect();
    assert!(matches!(
        w.try_write(&more),
        Err(Refused::Full {
            pending: 1000,
            capacity: 1500
        })
    ));
    assert_eq!(w.stats().refused_full, 600);
    // Waiting writers give up after their timeout.
    assert!(matches!(
        w.write(&more, Duration::from_millis(50)).await,
        Err(Refused::Full { .. })
    ));
    services.start(&[which]);
    assert_eq!(w.flush(Duration::from_secs(20)).await, 0, "{:?}", w.stats());
    let st = w.stats();
    assert_eq!(
        (st.accepted, st.written, st.pending),
        (1000, 1000, 0),
        "{st:?}"
    );
    let got = store
        .query_range(&query(&series, t0, t0 + 10 * S, 0, Aggregation::Avg))
        .await
        .unwrap();
    let points: Vec<(u64, f64)> = got.iter().flat_map(|s| s.points.clone()).collect();
    assert_eq!(points.len(), 1000);
    assert!(points.iter().enumerate().all(|(k, p)| p.1 == k as f64));
    // Invalid samples are refused up front, never accepted then lost.
    let mut bad = sample(&series, 1, f64::INFINITY, t0);
    assert!(matches!(
        w.try_write(&[bad.clone()]),
        Err(Refused::Invalid(_))
    ));
    bad.value = 1.0;
    bad.field = "not a name".into();
    assert!(matches!(w.try_write(&[bad]), Err(Refused::Invalid(_))));
    assert_eq!(w.close(Duration::from_secs(5)).await, 0);
    assert!(matches!(w.try_write(&samples[..1]), Err(Refused::Closed)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn victoria_metrics() {
    test_kit::require!(Need::Root, Need::VictoriaMetrics);
    let s = Services::shared(&["victoria"]);
    let vm = Victoria::new(s.url("IDINT_VM_URL"), true).unwrap();
    vm.health().await.unwrap();
    exact_round_trip(&vm).await;
    aggregated_steps(&vm).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn influxdb() {
    test_kit::require!(Need::Root, Need::InfluxDb);
    let s = Services::shared(&["influx"]);
    let ix = Influx::connect(s.url("IDINT_INFLUX_URL"), "idint_test")
        .await
        .unwrap();
    ix.health().await.unwrap();
    exact_round_trip(&ix).await;
    aggregated_steps(&ix).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn victoria_metrics_outage() {
    test_kit::require!(Need::Root, Need::VictoriaMetrics);
    let s = Services::private("vm-outage", 26100, &["victoria"]);
    let vm = Victoria::new(s.url("IDINT_VM_URL"), true).unwrap();
    outage(vm, &s, "victoria").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn influxdb_outage() {
    test_kit::require!(Need::Root, Need::InfluxDb);
    let s = Services::private("influx-outage", 26200, &["influx"]);
    let ix = Influx::connect(s.url("IDINT_INFLUX_URL"), "idint_test")
        .await
        .unwrap();
    outage(ix, &s, "influx").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_queries_are_typed_errors() {
    test_kit::require!(Need::Root, Need::VictoriaMetrics, Need::InfluxDb);
    let s = Services::shared(&["victoria", "influx"]);
    let vm = Victoria::new(s.url("IDINT_VM_URL"), true).unwrap();
    let mut q = query("x", 0, 1, 0, Aggregation::Avg);
    q.measurement = "a\"}b".into();
    assert!(matches!(
        vm.query_range(&q).await,
        Err(collector_store::StoreError::InvalidName(_))
    ));
    let down = Victoria::new("http://127.0.0.1:9", false).unwrap();
    let e = down
        .write(&[sample("x", 1, 1.0, now_ns())])
        .await
        .unwrap_err();
    assert!(e.is_transient(), "{e}");
}

/// With a spool, the writer takes more than its memory holds while the store is down (on
/// disk), keeps it across a restart of the writer, and delivers every sample once the store
/// is back.
async fn outage_with_spool<T: TimeSeriesStore + Clone>(store: T, services: &Services, which: &str) {
    const MEMORY: usize = 200;
    const SAMPLES: u64 = 3000;
    let series = unique("spool");
    let t0 = base_time();
    let dir = std::env::temp_dir().join(format!("spool-{which}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cfg = WriterConfig {
        capacity: MEMORY,
        batch: 100,
        max_delay: Duration::from_millis(20),
        backoff_min: Duration::from_millis(20),
        backoff_max: Duration::from_millis(200),
        spool: Some(SpoolConfig {
            dir: dir.clone(),
            max_bytes: 1 << 20,
            segment_bytes: 16 << 10,
        }),
    };
    services.stop(&[which]);
    let w = BufferedWriter::spawn(store.clone(), cfg.clone()).unwrap();
    let samples: Vec<Sample> = (0..SAMPLES)
        .map(|k| sample(&series, 3, k as f64, t0 + k * 1_000_000))
        .collect();
    for chunk in samples.chunks(50) {
        w.try_write(chunk).unwrap();
    }
    let st = w.stats();
    assert_eq!(st.accepted, SAMPLES);
    assert!(st.spilled >= SAMPLES - MEMORY as u64, "{st:?}");
    // The writer stops while the store is down: what is in memory goes to disk too.
    assert_eq!(w.close(Duration::from_millis(200)).await, 0);
    drop(w);
    // The next writer finds it and writes it once the store is back.
    let w = BufferedWriter::<Sample>::spawn(store.clone(), cfg).unwrap();
    assert_eq!(w.stats().spooled, SAMPLES, "{:?}", w.stats());
    services.start(&[which]);
    assert_eq!(w.flush(Duration::from_secs(60)).await, 0, "{:?}", w.stats());
    let st = w.stats();
    assert_eq!(
        (st.written, st.spooled, st.failed),
        (SAMPLES, 0, 0),
        "{st:?}"
    );
    let got = store
        .query_range(&query(&series, t0, t0 + 10 * S, 0, Aggregation::Avg))
        .await
        .unwrap();
    let mut points: Vec<(u64, f64)> = got.iter().flat_map(|s| s.points.clone()).collect();
    points.sort_by_key(|p| p.0);
    assert_eq!(points.len() as u64, SAMPLES);
    assert!(points.iter().enumerate().all(|(k, p)| p.1 == k as f64));
    assert_eq!(w.close(Duration::from_secs(5)).await, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn victoria_metrics_outage_with_spool() {
    test_kit::require!(Need::Root, Need::VictoriaMetrics);
    let s = Services::private("vm-spool", 26700, &["victoria"]);
    let vm = Victoria::new(s.url("IDINT_VM_URL"), true).unwrap();
    outage_with_spool(vm, &s, "victoria").await;
}

/// Ports of the VictoriaMetrics cluster test: the private services' base (VictoriaMetrics on
/// the next one), nginx's "vminsert" and "vmselect".
const CLUSTER_PORTS: (u16, u16, u16) = (28430, 28433, 28434);
/// The tenant the nginx front accepts.
const TENANT: &str = "42:7";

/// nginx in front of a single-node VictoriaMetrics with a cluster's URL layout for one
/// tenant: `/insert/<tenant>/influx/write` on one port, `/select/<tenant>/prometheus/api/v1/
/// {export,query_range}` on another, `/health` on both, 404 for everything else (another
/// tenant included). Stopped on drop.
struct ClusterFront {
    child: std::process::Child,
    dir: std::path::PathBuf,
}

impl ClusterFront {
    fn start(vm: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("idint-nginx-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (_, insert, select) = CLUSTER_PORTS;
        let d = dir.display();
        let conf = format!(
            r#"
worker_processes 1;
daemon off;
user root;
error_log {d}/error.log warn;
pid {d}/nginx.pid;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    server {{
        listen 127.0.0.1:{insert};
        location = /insert/{TENANT}/influx/write {{ proxy_pass {vm}/write; }}
        location = /health {{ proxy_pass {vm}/health; }}
        location / {{ return 404; }}
    }}
    server {{
        listen 127.0.0.1:{select};
        location ~ ^/select/{TENANT}/prometheus/api/v1/(export|query_range)$ {{
            proxy_pass {vm}/api/v1/$1$is_args$args;
        }}
        location = /health {{ proxy_pass {vm}/health; }}
        location / {{ return 404; }}
    }}
}}
"#
        );
        let path = dir.join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        let child = std::process::Command::new("nginx")
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(&path)
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("nginx starts");
        let front = ClusterFront { child, dir };
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", select)).is_ok()
                && std::net::TcpStream::connect(("127.0.0.1", insert)).is_ok()
            {
                return front;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "nginx did not listen: {}",
            std::fs::read_to_string(front.dir.join("error.log")).unwrap_or_default()
        );
    }
}

impl Drop for ClusterFront {
    fn drop(&mut self) {
        // `nginx -s stop` makes the master stop its workers too (killing the master alone
        // would leave them listening).
        let stopped = std::process::Command::new("nginx")
            .arg("-p")
            .arg(&self.dir)
            .arg("-c")
            .arg(self.dir.join("nginx.conf"))
            .args(["-s", "stop"])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !stopped {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A cluster client whose writes are followed by a flush of the single node behind the front
/// (what vmstorage does by itself within seconds), so that the suite can read at once.
struct FlushedBehind {
    vm: Victoria,
    flush_url: String,
    http: reqwest::Client,
}

impl TimeSeriesStore for FlushedBehind {
    async fn write<L: collector_store::ts::Line>(
        &self,
        items: &[L],
    ) -> Result<(), collector_store::StoreError> {
        self.vm.write(items).await?;
        let r = self.http.get(&self.flush_url).send().await.unwrap();
        assert!(r.status().is_success(), "{}", r.status());
        Ok(())
    }

    async fn query_range(
        &self,
        q: &RangeQuery,
    ) -> Result<Vec<collector_store::Series>, collector_store::StoreError> {
        self.vm.query_range(q).await
    }

    async fn health(&self) -> Result<(), collector_store::StoreError> {
        self.vm.health().await
    }
}

/// Debian packages only the single-node VictoriaMetrics: the cluster's URL layout (separate
/// vminsert and vmselect URLs, the tenant in the path) is tested against nginx fronting it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn victoria_metrics_cluster_url_layout() {
    test_kit::require!(Need::Root, Need::VictoriaMetrics, Need::Nginx);
    let s = Services::private("vm-cluster", CLUSTER_PORTS.0, &["victoria"]);
    let vm_url = s.url("IDINT_VM_URL").to_string();
    let _front = ClusterFront::start(&vm_url);
    let (_, insert, select) = CLUSTER_PORTS;
    let (insert, select) = (
        format!("http://127.0.0.1:{insert}"),
        format!("http://127.0.0.1:{select}"),
    );
    let vm = Victoria::cluster(&insert, &select, TENANT.parse().unwrap()).unwrap();
    vm.health().await.unwrap();
    let store = FlushedBehind {
        vm,
        flush_url: format!("{vm_url}/internal/force_flush"),
        http: reqwest::Client::new(),
    };
    exact_round_trip(&store).await;
    aggregated_steps(&store).await;
    // Only the cluster's paths of this tenant are served (404 otherwise): the round trips
    // above went through them.
    // Another tenant's URLs are not served: refusals (4xx), not outages.
    let other = Victoria::cluster(&insert, &select, "5".parse().unwrap()).unwrap();
    assert!(matches!(
        other.write(&[sample("x", 1, 1.0, now_ns())]).await,
        Err(collector_store::StoreError::Rejected(_))
    ));
    assert!(matches!(
        other
            .query_range(&query("x", now_ns() - S, now_ns(), 0, Aggregation::Avg))
            .await,
        Err(collector_store::StoreError::Rejected(_))
    ));
}
