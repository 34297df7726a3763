//! `idint-collector`: the ID-INT telemetry collector service.
//!
//! ```text
//! idint-collector run --config collector.toml
//! idint-collector check-config --config collector.toml
//! idint-collector import --url http://127.0.0.1:8480 --token T topology FILE...
//! idint-collector import --url http://127.0.0.1:8480 --token T paths FILE...
//! idint-collector import --url http://127.0.0.1:8480 --token T keys FILE...
//! ```

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::ExitCode;

use collector::config::Config;
use collector::service;
use tracing::{error, info};

fn usage() -> ExitCode {
    eprintln!(
        "usage:\n  idint-collector run --config FILE\n  idint-collector check-config --config FILE\n  idint-collector import --url http://HOST:PORT --token TOKEN (topology|paths|keys) FILE..."
    );
    ExitCode::from(2)
}

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("run") | Some("check-config") => {
            let Some(path) = flag(&args, "--config") else {
                return usage();
            };
            let cfg = match Config::load(&PathBuf::from(path)) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("idint-collector: {e}");
                    return ExitCode::from(1);
                }
            };
            if args[0] == "check-config" {
                println!("configuration ok");
                return ExitCode::SUCCESS;
            }
            run(cfg)
        }
        Some("import") => import(&args[1..]),
        _ => usage(),
    }
}

fn init_logging(cfg: &Config) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&cfg.log.filter));
    // Colours only for a terminal: logs written to files stay plain text.
    let b = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()));
    if cfg.log.format == "json" {
        b.json().init();
    } else {
        b.init();
    }
}

fn run(cfg: Config) -> ExitCode {
    init_logging(&cfg);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            error!(error = %e, "tokio runtime");
            return ExitCode::from(1);
        }
    };
    rt.block_on(async move {
        let stores = match collector::storage::connect(&cfg.storage).await {
            Ok(s) => s,
            Err(e) => {
                error!(error = %e, "storage");
                return ExitCode::from(1);
            }
        };
        let running = match service::start(cfg, stores).await {
            Ok(r) => r,
            Err(e) => {
                error!(error = %e, "start failed");
                return ExitCode::from(1);
            }
        };
        wait_for_signal().await;
        info!("shutting down: draining the ingest queue and flushing stores");
        running.shutdown().await;
        ExitCode::SUCCESS
    })
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Posts files to the admin API of a running collector (plain HTTP/1.1 on loopback).
fn import(args: &[String]) -> ExitCode {
    let (Some(url), Some(token)) = (flag(args, "--url"), flag(args, "--token")) else {
        return usage();
    };
    let rest: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.starts_with("--") && (*i == 0 || !args[i - 1].starts_with("--")))
        .map(|(_, a)| a)
        .collect();
    let Some((kind, files)) = rest.split_first() else {
        return usage();
    };
    let endpoint = match kind.as_str() {
        "topology" => "/api/v1/admin/topology",
        "paths" => "/api/v1/admin/paths",
        "keys" => "/api/v1/admin/keys",
        _ => return usage(),
    };
    let Some(hostport) = url.strip_prefix("http://").map(|s| s.trim_end_matches('/')) else {
        eprintln!("idint-collector: only http:// URLs");
        return ExitCode::from(2);
    };
    let mut failed = false;
    for f in files {
        let body = match std::fs::read(f.as_str()) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{f}: {e}");
                failed = true;
                continue;
            }
        };
        match post(hostport, endpoint, &token, &body) {
            Ok((status, text)) => {
                println!("{f}: {status} {text}");
                failed |= !(200..300).contains(&status);
            }
            Err(e) => {
                eprintln!("{f}: {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn post(hostport: &str, path: &str, token: &str, body: &[u8]) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(hostport)?;
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {hostport}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    s.write_all(body)?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let text = out.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    Ok((status, text))
}
