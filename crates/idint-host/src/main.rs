//! `idint-ping`: an ID-INT ping over SCION/UDP on kernel UDP sockets.
//!
//! ```text
//! idint-ping serve --local ISD-AS,IP --listen IP:PORT --keys DIR [--collector IP:PORT] [--stats FILE]
//! idint-ping send  --local ISD-AS,IP --paths FILE --dst ISD-AS,IP:PORT [--path NAME] [--count N]
//!                  [--interval-ms MS] [--timeout-ms MS] [--port PORT] [--encrypt]
//!                  [--verifier ISD-AS,IP] --keys DIR [--json FILE]
//! ```
//! The logic is in the library (`idint_host`); this file only moves bytes between sockets,
//! clocks, files and it.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{Parser, Subcommand};
use idint_host::keys::{DEFAULT_EPOCH_SECS, HostKeys};
use idint_host::packet::Endpoint;
use idint_host::paths::PathsFile;
use idint_host::pinger::{Pinger, SendSummary, summarise, table};
use idint_host::responder::Responder;
use idint_wire::{HostAddr, IsdAsn};

/// Largest datagram read.
const RECV_BUF: usize = 65_536;
/// How often `serve` looks at the stop flag when idle.
const POLL: Duration = Duration::from_millis(100);

#[derive(Parser)]
#[command(
    name = "idint-ping",
    about = "ID-INT ping over SCION/UDP: request, verify and show per-hop telemetry"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Receive pings, verify and decrypt their telemetry, report it and reply.
    Serve {
        /// This host: ISD-AS,IP.
        #[arg(long, value_parser = parse_local)]
        local: (IsdAsn, IpAddr),
        /// Underlay UDP address to receive on.
        #[arg(long)]
        listen: SocketAddr,
        /// Keys directory (<ISD-AS with _ for :>/master0.key per AS).
        #[arg(long)]
        keys: PathBuf,
        /// Collector UDP ingest address for host reports.
        #[arg(long)]
        collector: Option<SocketAddr>,
        /// Write the counters as JSON here on SIGTERM/SIGINT.
        #[arg(long)]
        stats: Option<PathBuf>,
        /// DRKey epoch length, seconds.
        #[arg(long, default_value_t = DEFAULT_EPOCH_SECS)]
        epoch_secs: u32,
    },
    /// Send pings requesting per-hop telemetry and print the verified values.
    Send {
        /// This host: ISD-AS,IP.
        #[arg(long, value_parser = parse_local)]
        local: (IsdAsn, IpAddr),
        /// Paths file (JSON).
        #[arg(long)]
        paths: PathBuf,
        /// Destination: ISD-AS,IP:PORT (PORT is the SCION/UDP port).
        #[arg(long, value_parser = parse_dst)]
        dst: (IsdAsn, SocketAddr),
        /// Path name (default: the first from here to the destination AS).
        #[arg(long)]
        path: Option<String>,
        /// Pings to send.
        #[arg(long, default_value_t = 3)]
        count: u32,
        /// Time between pings, ms.
        #[arg(long, default_value_t = 1000)]
        interval_ms: u64,
        /// How long to wait for a reply, ms.
        #[arg(long, default_value_t = 1000)]
        timeout_ms: u64,
        /// Local UDP port (socket and SCION/UDP source port; 0: any).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Ask the routers to encrypt their entries.
        #[arg(long)]
        encrypt: bool,
        /// Third-party verifier ISD-AS,IP (e.g. the collector, which only accepts host reports
        /// it is the verifier of); default: the destination.
        #[arg(long, value_parser = parse_local)]
        verifier: Option<(IsdAsn, IpAddr)>,
        /// Keys directory (the source AS's master secret signs the request).
        #[arg(long)]
        keys: PathBuf,
        /// Write the replies and totals as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// DRKey epoch length, seconds.
        #[arg(long, default_value_t = DEFAULT_EPOCH_SECS)]
        epoch_secs: u32,
    },
}

fn parse_local(s: &str) -> Result<(IsdAsn, IpAddr), String> {
    let (ia, ip) = s.split_once(',').ok_or("expected ISD-AS,IP")?;
    Ok((
        ia.parse().map_err(|e| format!("{ia}: {e}"))?,
        ip.parse().map_err(|e| format!("{ip}: {e}"))?,
    ))
}

fn parse_dst(s: &str) -> Result<(IsdAsn, SocketAddr), String> {
    let (ia, addr) = s.split_once(',').ok_or("expected ISD-AS,IP:PORT")?;
    Ok((
        ia.parse().map_err(|e| format!("{ia}: {e}"))?,
        addr.parse().map_err(|e| format!("{addr}: {e}"))?,
    ))
}

fn host(ip: IpAddr) -> HostAddr {
    match ip {
        IpAddr::V4(a) => HostAddr::V4(a),
        IpAddr::V6(a) => HostAddr::V6(a),
    }
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn main() -> ExitCode {
    let result = match Cli::parse().cmd {
        Cmd::Serve {
            local,
            listen,
            keys,
            collector,
            stats,
            epoch_secs,
        } => serve(local, listen, &keys, collector, stats, epoch_secs),
        Cmd::Send {
            local,
            paths,
            dst,
            path,
            count,
            interval_ms,
            timeout_ms,
            port,
            encrypt,
            verifier,
            keys,
            json,
            epoch_secs,
        } => {
            let opts = SendOpts {
                local,
                paths,
                dst,
                path,
                count,
                interval: Duration::from_millis(interval_ms),
                timeout: Duration::from_millis(timeout_ms),
                port,
                encrypt,
                verifier,
                keys,
                json,
                epoch_secs,
            };
            send(&opts)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("idint-ping: {e}");
            ExitCode::from(2)
        }
    }
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn serve(
    local: (IsdAsn, IpAddr),
    listen: SocketAddr,
    keys_dir: &std::path::Path,
    collector: Option<SocketAddr>,
    stats: Option<PathBuf>,
    epoch_secs: u32,
) -> Res<ExitCode> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let keys = HostKeys::load(keys_dir, epoch_secs)?;
    let mut responder = Responder::new(local.0, host(local.1), keys);
    let sock = UdpSocket::bind(listen).map_err(|e| format!("binding {listen}: {e}"))?;
    sock.set_read_timeout(Some(POLL))?;
    eprintln!("idint-ping: serving {},{} on {listen}", local.0, local.1);
    let mut buf = vec![0u8; RECV_BUF];
    while !stop.load(Ordering::Relaxed) {
        let (n, from) = match sock.recv_from(&mut buf) {
            Ok(x) => x,
            Err(e) if no_datagram_yet(&e) => continue,
            Err(e) => return Err(e.into()),
        };
        let h = responder.handle(&buf[..n], now_ns());
        match (&h.failure, &h.ping) {
            (None, Some(p)) => eprintln!(
                "ping seq={} from {from}: verified, {} entries",
                p.seq,
                h.entries.len()
            ),
            (Some(r), _) => eprintln!("packet from {from}: not verified: {r}"),
            _ => {}
        }
        if let Some(reply) = &h.reply
            && let Err(e) = sock.send_to(reply, from)
        {
            eprintln!("reply to {from}: {e}");
        }
        if let (Some(report), Some(c)) = (&h.report, collector) {
            match sock.send_to(report, c) {
                Ok(_) => responder.stats.reports_sent += 1,
                Err(_) => responder.stats.report_errors += 1,
            }
        }
    }
    let json = serde_json::to_string_pretty(&responder.stats)?;
    match stats {
        Some(f) => std::fs::write(&f, json + "\n").map_err(|e| format!("{}: {e}", f.display()))?,
        None => println!("{json}"),
    }
    Ok(ExitCode::SUCCESS)
}

struct SendOpts {
    local: (IsdAsn, IpAddr),
    paths: PathBuf,
    dst: (IsdAsn, SocketAddr),
    path: Option<String>,
    count: u32,
    interval: Duration,
    timeout: Duration,
    port: u16,
    encrypt: bool,
    verifier: Option<(IsdAsn, IpAddr)>,
    keys: PathBuf,
    json: Option<PathBuf>,
    epoch_secs: u32,
}

fn send(o: &SendOpts) -> Res<ExitCode> {
    let text =
        std::fs::read_to_string(&o.paths).map_err(|e| format!("{}: {e}", o.paths.display()))?;
    let paths = PathsFile::parse(&text)?;
    let path = paths.select(o.path.as_deref(), o.local.0, o.dst.0)?.clone();
    let keys = HostKeys::load(&o.keys, o.epoch_secs)?;
    let sock = UdpSocket::bind(SocketAddr::new(o.local.1, o.port))
        .map_err(|e| format!("binding {}:{}: {e}", o.local.1, o.port))?;
    let src = Endpoint {
        ia: o.local.0,
        host: host(o.local.1),
        port: sock.local_addr()?.port(),
    };
    let dst = Endpoint {
        ia: o.dst.0,
        host: host(o.dst.1.ip()),
        port: o.dst.1.port(),
    };
    // The empty path goes straight to the destination host, at its SCION/UDP port.
    let next_hop = path.first_hop.unwrap_or(o.dst.1);
    println!(
        "PING {},{} via {path} from {},{}:{}",
        dst.ia, o.dst.1, src.ia, o.local.1, src.port
    );
    let mut pinger = Pinger::new(src, dst, path.clone(), o.encrypt, keys);
    pinger.verifier = o.verifier.map(|(ia, ip)| (ia, host(ip)));
    let mut summary = SendSummary {
        path: path.name.clone(),
        ..SendSummary::default()
    };
    let mut pkt = Vec::new();
    let mut buf = vec![0u8; RECV_BUF];
    for seq in 0..o.count {
        let started = Instant::now();
        pinger.build(seq, now_ns(), &mut pkt)?;
        sock.send_to(&pkt, next_hop)?;
        summary.sent += 1;
        let deadline = started + o.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                println!("seq={seq}: no reply within {} ms", o.timeout.as_millis());
                break;
            }
            sock.set_read_timeout(Some(left))?;
            let n = match sock.recv_from(&mut buf) {
                Ok((n, _)) => n,
                Err(e) if no_datagram_yet(&e) => continue,
                Err(e) => return Err(e.into()),
            };
            let Ok(reply) = pinger.reply(&buf[..n]) else {
                continue;
            };
            if reply.seq != seq {
                continue;
            }
            let rtt = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            let s = summarise(&reply, rtt);
            print!("{}", table(&s));
            summary.received += 1;
            summary.verified += u64::from(s.verified);
            summary.replies.push(s);
            break;
        }
        if seq + 1 < o.count {
            std::thread::sleep(o.interval.saturating_sub(started.elapsed()));
        }
    }
    println!(
        "--- {} sent, {} received, {} verified",
        summary.sent, summary.received, summary.verified
    );
    if let Some(f) = &o.json {
        std::fs::write(f, serde_json::to_string_pretty(&summary)? + "\n")
            .map_err(|e| format!("{}: {e}", f.display()))?;
    }
    Ok(if summary.verified > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Whether a receive ended without a datagram only because of the socket's timeout or a
/// signal (try again), not because of an error.
fn no_datagram_yet(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}
