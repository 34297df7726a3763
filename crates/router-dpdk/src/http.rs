//! The control thread's HTTP endpoints on a loopback port: `GET /metrics` (Prometheus text
//! format) and `GET /health` (JSON). A minimal HTTP/1.0 responder on `std::net`: one request
//! per connection, no runtime.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use scion_dp::{DropReason, ScmpReason};

use crate::stats::Snapshot;

/// Binds the control listener; only loopback addresses are accepted.
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    if !addr.ip().is_loopback() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("control address {addr} is not a loopback address"),
        ));
    }
    let l = TcpListener::bind(addr)?;
    l.set_nonblocking(true)?;
    Ok(l)
}

/// Serves until `done` is set. `metrics` renders the Prometheus text, `health` the JSON body
/// and whether the router is healthy (200) or not (503).
pub fn serve(
    listener: TcpListener,
    done: Arc<AtomicBool>,
    metrics: impl Fn() -> String,
    health: impl Fn() -> (bool, String),
) {
    while !done.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((s, _)) => {
                let _ = handle(s, &metrics, &health);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

fn respond(s: &mut TcpStream, status: &str, ctype: &str, body: &str) -> std::io::Result<()> {
    write!(
        s,
        "HTTP/1.0 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    s.flush()
}

fn json_error(s: &mut TcpStream, status: &str, msg: &str) -> std::io::Result<()> {
    let body = serde_json::json!({ "error": msg }).to_string();
    respond(s, status, "application/json", &body)
}

fn handle(
    mut s: TcpStream,
    metrics: &impl Fn() -> String,
    health: &impl Fn() -> (bool, String),
) -> std::io::Result<()> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut buf = [0u8; 2048];
    let mut n = 0;
    while n < buf.len() {
        let k = s.read(&mut buf[n..])?;
        if k == 0 {
            break;
        }
        n += k;
        if buf[..n].windows(4).any(|w| w == b"\r\n\r\n")
            || buf[..n].windows(2).any(|w| w == b"\n\n")
        {
            break;
        }
    }
    let text = String::from_utf8_lossy(&buf[..n]);
    let mut parts = text.lines().next().unwrap_or("").split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if method.is_empty() || path.is_empty() {
        return json_error(&mut s, "400 Bad Request", "malformed request line");
    }
    if method != "GET" {
        return json_error(
            &mut s,
            "405 Method Not Allowed",
            &format!("method {method} not allowed; use GET"),
        );
    }
    match path.split('?').next().unwrap_or("") {
        "/metrics" => respond(&mut s, "200 OK", "text/plain; version=0.0.4", &metrics()),
        "/health" => {
            let (ok, body) = health();
            let status = if ok {
                "200 OK"
            } else {
                "503 Service Unavailable"
            };
            respond(&mut s, status, "application/json", &body)
        }
        other => json_error(
            &mut s,
            "404 Not Found",
            &format!("no such endpoint {other:?}; try /metrics or /health"),
        ),
    }
}

/// Renders counters in the Prometheus text format (prefix `idint_router_`).
pub fn prometheus(
    snap: &Snapshot,
    ports: &[(String, dpdk::PortStats)],
    extra: &[(&'static str, u64)],
) -> String {
    use std::fmt::Write as _;
    let mut o = String::with_capacity(8192);
    let mut counter = |name: &str, help: &str, rows: &[(String, u64)]| {
        let _ = writeln!(o, "# HELP idint_router_{name} {help}");
        let _ = writeln!(o, "# TYPE idint_router_{name} counter");
        for (labels, v) in rows {
            if labels.is_empty() {
                let _ = writeln!(o, "idint_router_{name} {v}");
            } else {
                let _ = writeln!(o, "idint_router_{name}{{{labels}}} {v}");
            }
        }
    };
    let one = |v: u64| vec![(String::new(), v)];
    for (k, v) in snap.io.named() {
        counter(
            &format!("io_{k}_total"),
            "I/O counter of the workers",
            &one(v),
        );
    }
    counter(
        "forwarded_total",
        "Packets forwarded on own links",
        &one(snap.dp.forwarded),
    );
    counter(
        "to_sibling_total",
        "Packets handed to sibling routers",
        &one(snap.dp.to_sibling),
    );
    counter(
        "delivered_total",
        "Packets delivered in the local AS",
        &one(snap.dp.delivered),
    );
    counter("bfd_total", "BFD packets", &one(snap.dp.bfd));
    let replies: Vec<_> = ScmpReason::ALL
        .iter()
        .map(|r| (format!("reason=\"{}\"", r.name()), snap.dp.replies_for(*r)))
        .collect();
    counter(
        "scmp_replies_total",
        "SCMP replies sent, by reason",
        &replies,
    );
    let drops: Vec<_> = DropReason::ALL
        .iter()
        .map(|r| (format!("reason=\"{}\"", r.name()), snap.dp.drops_for(*r)))
        .collect();
    counter("drops_total", "Packets dropped, by reason", &drops);
    for (k, v) in snap.idint.named() {
        counter(&format!("{k}_total"), "ID-INT stage counter", &one(v));
    }
    let lookups: Vec<_> = crate::stats::key_lookups_named(&snap.keys)
        .iter()
        .map(|(k, v)| (format!("result=\"{k}\""), *v))
        .collect();
    counter(
        "idint_key_lookups_total",
        "ID-INT verifier key lookups in the workers' DRKey caches (hits, misses = derivations, evictions)",
        &lookups,
    );
    for (k, v) in extra {
        let help = if k.starts_with("dist_") {
            "Software flow distribution counter"
        } else {
            "Report export counter"
        };
        counter(&format!("{k}_total"), help, &one(*v));
    }
    let per_port = |f: fn(&dpdk::PortStats) -> u64| -> Vec<(String, u64)> {
        ports
            .iter()
            .map(|(d, s)| (format!("device=\"{d}\""), f(s)))
            .collect()
    };
    counter(
        "port_rx_packets_total",
        "Port packets received",
        &per_port(|s| s.rx_packets),
    );
    counter(
        "port_tx_packets_total",
        "Port packets sent",
        &per_port(|s| s.tx_packets),
    );
    counter(
        "port_rx_bytes_total",
        "Port bytes received",
        &per_port(|s| s.rx_bytes),
    );
    counter(
        "port_tx_bytes_total",
        "Port bytes sent",
        &per_port(|s| s.tx_bytes),
    );
    counter(
        "port_rx_missed_total",
        "Port rx drops (queue full)",
        &per_port(|s| s.rx_missed),
    );
    counter(
        "port_tx_errors_total",
        "Port tx errors",
        &per_port(|s| s.tx_errors),
    );
    o
}
