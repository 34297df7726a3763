//! UDP load generator for a running collector (see `scripts/collector-load.sh`).
//!
//! Sends genuine reports from a real four-AS scion-dp chain (the collector must be configured
//! as the chain's collector, A:10.1.0.100, with the chain's keys and topology) at rising rates,
//! each for a few seconds, and for each rate reports: reports sent, accepted, refused by the
//! collector's queue, dropped by the kernel (UDP receive buffer errors), and the p50/p99
//! report-to-queryable latency: from sending a datagram to the collector's
//! `idint_collector_accepted_total` counter (polled over HTTP every millisecond) covering it.
//! Prints the highest rate sustained with zero loss, and how many metric points the collector
//! handed to its time-series store. `--write-config DIR [--postgres URL --victoria URL]`
//! writes the matching collector configuration (with storage if both URLs are given).
//!
//! ```text
//! cargo run --release -p collector --example loadgen -- --udp 127.0.0.1:30255 \
//!     --api 127.0.0.1:8480 --rates 5000,10000,20000,50000,100000 --secs 2 --batch 32
//! ```

#![allow(missing_docs)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use idint_report::Message;
use test_kit::chain::{self as chain, Ask, Chain};

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_string())
}

fn scrape(api: SocketAddr) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&api, Duration::from_secs(1)).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

fn counter(text: &str, name: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Kernel UDP receive buffer errors (all sockets), from /proc/net/snmp.
fn udp_rcvbuf_errors() -> u64 {
    let t = std::fs::read_to_string("/proc/net/snmp").unwrap_or_default();
    let mut lines = t.lines().filter(|l| l.starts_with("Udp:"));
    let (Some(h), Some(v)) = (lines.next(), lines.next()) else {
        return 0;
    };
    h.split_whitespace()
        .zip(v.split_whitespace())
        .find(|(k, _)| *k == "RcvbufErrors")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

fn pct(v: &mut [u64], p: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// Writes the chain collector's configuration, keys and topology files into `dir`; with
/// `storage`, the collector keeps its topology in that PostgreSQL database and writes metrics
/// to that VictoriaMetrics (`(postgres_url, victoria_url)`).
fn write_config(dir: &std::path::Path, udp: &str, api: &str, storage: Option<(&str, &str)>) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("master0.key"), "QEBAQEBAQEBAQEBAQEBAQA==\n").unwrap();
    // This epoch's keys and the next one's: a run may cross the hour.
    let now_s = now_ns() / 1_000_000_000;
    let keys = chain::level1_imports_now_and_next(now_s);
    std::fs::write(
        dir.join("level1.json"),
        serde_json::to_string(&keys).unwrap(),
    )
    .unwrap();
    let mut files = Vec::new();
    for (i, t) in chain::topology_files().iter().enumerate() {
        let f = dir.join(format!("topology-{i}.json"));
        std::fs::write(&f, t).unwrap();
        files.push(format!("{:?}", f.display().to_string()));
    }
    let cfg = format!(
        "[collector]\nisd_as = \"1-ff00:0:a\"\nhost = \"10.1.0.100\"\nmaster_key = {:?}\nepoch_secs = {}\nlevel1_keys = {:?}\n\n[ingest]\nudp_listen = \"{udp}\"\n\n[api]\nlisten = \"{api}\"\n\n[topology]\nfiles = [{}]\n\n[log]\nfilter = \"warn\"\n\n[replay]\n# One source sends all the load: it may use the whole replay memory.\nper_source = {}\n",
        dir.join("master0.key").display().to_string(),
        chain::EPOCH,
        dir.join("level1.json").display().to_string(),
        files.join(", "),
        collector::pipeline::DEFAULT_REPLAY_CAPACITY,
    );
    let cfg = match storage {
        Some((pg, vm)) => format!(
            "{cfg}\n[storage]\npostgres_url = {pg:?}\ntimeseries = \"victoria\"\ntimeseries_url = {vm:?}\n"
        ),
        None => cfg,
    };
    std::fs::write(dir.join("collector.toml"), cfg).unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--write-config") {
        let dir = std::path::PathBuf::from(&args[i + 1]);
        let (pg, vm) = (arg(&args, "--postgres", ""), arg(&args, "--victoria", ""));
        let storage = (!pg.is_empty() && !vm.is_empty()).then_some((pg.as_str(), vm.as_str()));
        write_config(
            &dir,
            &arg(&args, "--udp", "127.0.0.1:30255"),
            &arg(&args, "--api", "127.0.0.1:8480"),
            storage,
        );
        return;
    }
    let udp: SocketAddr = arg(&args, "--udp", "127.0.0.1:30255").parse().unwrap();
    let api: SocketAddr = arg(&args, "--api", "127.0.0.1:8480").parse().unwrap();
    let secs: f64 = arg(&args, "--secs", "2").parse().unwrap();
    let batch: usize = arg(&args, "--batch", "32").parse().unwrap();
    let rates: Vec<u64> = arg(&args, "--rates", "5000,10000,20000,50000,100000")
        .split(',')
        .map(|r| r.parse().unwrap())
        .collect();

    // Poller: (time, accepted) whenever the counter moves.
    let samples: Arc<Mutex<Vec<(Instant, u64)>>> = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let (samples, stop) = (samples.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut last = u64::MAX;
            while !stop.load(Ordering::Relaxed) {
                if let Some(t) = scrape(api) {
                    let a = counter(&t, "idint_collector_accepted_total");
                    if a != last {
                        last = a;
                        samples.lock().unwrap().push((Instant::now(), a));
                    }
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };

    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut chain = Chain::new(now_ns(), false, Ask::Latency);
    let mut best = None;
    println!("rate/s     sent  accepted  queue_full  kernel_drops  p50_ms  p99_ms");
    for &rate in &rates {
        let n_batches = ((rate as f64 * secs) as usize).div_ceil(batch).max(1);
        // Reports are generated before the step (not timed), stamped with the real clock.
        chain.now_ns = now_ns();
        let datagrams: Vec<Vec<u8>> = (0..n_batches)
            .map(|i| chain.batch(batch, i as u64).encode_to_vec())
            .collect();
        let before = scrape(api).expect("collector API reachable");
        let acc0 = counter(&before, "idint_collector_accepted_total");
        let full0 = counter(&before, "idint_collector_udp_queue_full_total");
        let rej0 = counter(&before, "idint_collector_reports_total") - acc0;
        let kern0 = udp_rcvbuf_errors();
        let interval = Duration::from_secs_f64(batch as f64 / rate as f64);
        let start = Instant::now();
        let mut sent_at = Vec::with_capacity(n_batches);
        for (i, d) in datagrams.iter().enumerate() {
            // Sleep (not spin) until due: the collector shares the machine's cores.
            let due = start + interval * i as u32;
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            sent_at.push(Instant::now());
            let _ = sock.send_to(d, udp);
        }
        let sent = (n_batches * batch) as u64;
        // Let the collector catch up (or give up after 5 s).
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut after;
        loop {
            after = scrape(api).expect("collector API reachable");
            let done = counter(&after, "idint_collector_accepted_total") - acc0
                + counter(&after, "idint_collector_udp_queue_full_total") * batch as u64
                - full0 * batch as u64;
            if done >= sent || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let accepted = counter(&after, "idint_collector_accepted_total") - acc0;
        let full = counter(&after, "idint_collector_udp_queue_full_total") - full0;
        let rejected = counter(&after, "idint_collector_reports_total")
            - counter(&after, "idint_collector_accepted_total")
            - rej0;
        let kern = udp_rcvbuf_errors() - kern0;
        // Latency: for each datagram, the first poll showing its last report accepted.
        let s = samples.lock().unwrap().clone();
        let mut lat = Vec::new();
        for (i, t) in sent_at.iter().enumerate() {
            let need = acc0 + ((i + 1) * batch) as u64;
            if let Some((seen, _)) = s.iter().find(|(ts, a)| *a >= need && ts >= t) {
                lat.push(seen.duration_since(*t).as_micros() as u64);
            }
        }
        let (p50, p99) = (pct(&mut lat, 0.5), pct(&mut lat, 0.99));
        println!(
            "{rate:>7} {sent:>8} {accepted:>9} {full:>11} {kern:>13} {:>7.2} {:>7.2}{}",
            p50 as f64 / 1000.0,
            p99 as f64 / 1000.0,
            if rejected > 0 {
                format!("  ({rejected} rejected!)")
            } else {
                String::new()
            }
        );
        if accepted == sent && full == 0 && kern == 0 {
            best = Some((rate, p50, p99));
        } else {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = poller.join();
    match best {
        Some((r, p50, p99)) => println!(
            "highest sustained rate with zero loss: {r} reports/s (p50 {:.2} ms, p99 {:.2} ms report-to-queryable)",
            p50 as f64 / 1000.0,
            p99 as f64 / 1000.0
        ),
        None => println!("no rate was sustained without loss"),
    }
    if let Some(t) = scrape(api) {
        println!(
            "points handed to the time-series store: {}, refused (store buffer full): {}",
            counter(&t, "idint_collector_points_written_total"),
            counter(&t, "idint_collector_points_refused_total")
        );
    }
}
