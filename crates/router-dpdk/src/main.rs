//! `idint-router`: the DPDK SCION/ID-INT border router.
//!
//! ```text
//! idint-router --config router.toml [--duration SECS] [--summary FILE]
//! ```
//! Runs until SIGINT/SIGTERM (or for `--duration` seconds), then prints a JSON summary of
//! every counter on stdout (and into `--summary FILE`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use router_dpdk::config::Config;
use router_dpdk::run::{Options, run};

const USAGE: &str = "usage: idint-router --config FILE [--duration SECS] [--summary FILE]";

fn parse_args() -> Result<(PathBuf, Options), String> {
    let mut config = None;
    let mut opts = Options::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--config" | "-c" => config = Some(PathBuf::from(value("--config")?)),
            "--duration" => {
                let v = value("--duration")?;
                let s: f64 = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| format!("--duration {v:?}: expected positive seconds"))?;
                opts.duration = Some(Duration::from_secs_f64(s));
            }
            "--summary" => opts.summary = Some(PathBuf::from(value("--summary")?)),
            "--help" | "-h" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let config = config.ok_or_else(|| format!("--config is required\n{USAGE}"))?;
    Ok((config, opts))
}

fn main() -> ExitCode {
    let (path, opts) = match parse_args() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("idint-router: {e}");
            return ExitCode::from(2);
        }
    };
    let config = match Config::load(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("idint-router: configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    match run(config, &opts) {
        Ok(summary) => {
            println!("{summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("idint-router: {e}");
            ExitCode::from(1)
        }
    }
}
