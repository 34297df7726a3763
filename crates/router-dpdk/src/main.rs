//! `idint-router`: the DPDK SCION/ID-INT border router.
//!
//! ```text
//! idint-router --config router.toml [--duration SECS] [--summary FILE]
//! idint-router --check-config router.toml
//! idint-router --help
//! ```
//! Runs until SIGINT/SIGTERM (or for `--duration` seconds), then prints a JSON summary of
//! every counter on stdout (and into `--summary FILE`, which is created before the router
//! starts). `--check-config` validates the configuration without starting DPDK. Exit codes:
//! 0 done (or the configuration is valid), 1 runtime error, 2 configuration or usage error.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use router_dpdk::config::Config;
use router_dpdk::run::{Finished, Options, run};

const USAGE: &str = "usage: idint-router --config FILE [--duration SECS] [--summary FILE]
       idint-router --check-config FILE
       idint-router --help

  -c, --config FILE   router configuration (TOML; see the router-dpdk README)
  --duration SECS     stop after SECS seconds (default: at SIGINT/SIGTERM)
  --summary FILE      also write the final JSON summary to FILE (created at start)
  --check-config FILE validate the configuration (topology, keys, ports, EAL arguments,
                      probe paths, mbuf pool, collector) without starting DPDK; prints
                      what it sets up, exit code 0 if valid, 2 if not
  -h, --help          print this help and exit

The final JSON summary of every counter is printed on stdout. Exit codes: 0 done,
1 runtime error, 2 configuration or usage error.";

/// What the command line asks for.
#[derive(Debug)]
enum Command {
    /// Print the usage on stdout.
    Help,
    /// Validate a configuration without starting DPDK.
    Check(PathBuf),
    /// Run the router.
    Run {
        /// The configuration file.
        config: PathBuf,
        /// Run options.
        opts: Options,
        /// Where to write the summary too.
        summary: Option<PathBuf>,
    },
}

/// Parses the arguments (without the program name).
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut config = None;
    let mut duration = None;
    let mut summary = None;
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        /// Stores `v` unless the flag was given before.
        fn once<T>(slot: &mut Option<T>, name: &str, v: T) -> Result<(), String> {
            if slot.is_some() {
                return Err(format!("{name} given more than once"));
            }
            *slot = Some(v);
            Ok(())
        }
        match a.as_str() {
            "--config" | "-c" => once(&mut config, "--config", PathBuf::from(value("--config")?))?,
            "--duration" => {
                let v = value("--duration")?;
                once(&mut duration, "--duration", parse_duration(&v)?)?;
            }
            "--summary" => once(
                &mut summary,
                "--summary",
                PathBuf::from(value("--summary")?),
            )?,
            "--help" | "-h" => return Ok(Command::Help),
            "--check-config" => {
                let file = PathBuf::from(value("--check-config")?);
                if let Some(extra) = args.next() {
                    return Err(format!(
                        "--check-config takes one file and no other argument (got {extra:?})"
                    ));
                }
                if config.is_some() || duration.is_some() || summary.is_some() {
                    return Err("--check-config takes no other argument".into());
                }
                return Ok(Command::Check(file));
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let config = config.ok_or("--config is required")?;
    Ok(Command::Run {
        config,
        opts: Options { duration },
        summary,
    })
}

/// Parses `--duration` seconds: positive, finite and representable.
fn parse_duration(v: &str) -> Result<Duration, String> {
    let s: f64 = v
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s > 0.0)
        .ok_or_else(|| format!("--duration {v:?}: expected positive seconds"))?;
    match Duration::try_from_secs_f64(s) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err(format!(
            "--duration {v:?}: shorter than a nanosecond (expected positive seconds)"
        )),
        Err(_) => Err(format!(
            "--duration {v:?}: too long (at most {} seconds)",
            Duration::MAX.as_secs()
        )),
    }
}

fn main() -> ExitCode {
    let (path, opts, summary) = match parse_args(std::env::args().skip(1)) {
        Ok(Command::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Command::Check(file)) => {
            return match router_dpdk::check::check_config(&file) {
                Ok(report) => {
                    print!("{report}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("idint-router: configuration error: {e}");
                    ExitCode::from(2)
                }
            };
        }
        Ok(Command::Run {
            config,
            opts,
            summary,
        }) => (config, opts, summary),
        Err(e) => {
            eprintln!("idint-router: {e}\n{USAGE}");
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
    // Opened now, so a summary that cannot be written is known before the router starts;
    // an existing file keeps its content until the new summary replaces it.
    let mut summary_file = match &summary {
        None => None,
        Some(p) => match std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(p)
        {
            Ok(f) => Some((p, f)),
            Err(e) => {
                eprintln!(
                    "idint-router: --summary {}: cannot create: {e}",
                    p.display()
                );
                return ExitCode::from(2);
            }
        },
    };
    let Finished { summary, failure } = match run(config, &opts) {
        Ok(f) => f,
        Err(e) if e.is_config() => {
            eprintln!("idint-router: configuration error: {e}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("idint-router: {e}");
            return ExitCode::from(1);
        }
    };
    // The counters go to stdout whatever happens to the file.
    println!("{summary}");
    let mut code = ExitCode::SUCCESS;
    if let Some((p, f)) = &mut summary_file
        && let Err(e) = f.set_len(0).and_then(|()| f.write_all(summary.as_bytes()))
    {
        eprintln!("idint-router: --summary {}: cannot write: {e}", p.display());
        code = ExitCode::from(1);
    }
    if let Some(e) = failure {
        eprintln!("idint-router: {e}");
        code = ExitCode::from(1);
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Command, String> {
        parse_args(args.iter().map(|a| a.to_string()))
    }

    #[test]
    fn help_is_not_an_error() {
        for a in [&["--help"][..], &["-h"], &["--config", "x.toml", "--help"]] {
            assert!(matches!(parse(a), Ok(Command::Help)), "{a:?}");
        }
    }

    #[test]
    fn repeated_flags_are_refused() {
        for (a, flag) in [
            (&["--config", "a", "--config", "b"][..], "--config"),
            (&["-c", "a", "--config", "b"], "--config"),
            (
                &["-c", "a", "--duration", "1", "--duration", "2"],
                "--duration",
            ),
            (
                &["-c", "a", "--summary", "s", "--summary", "t"],
                "--summary",
            ),
        ] {
            let e = parse(a).expect_err(&format!("{a:?}"));
            assert_eq!(e, format!("{flag} given more than once"), "{a:?}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        for bad in ["0", "-1", "nan", "inf", "x", "1e-12"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        let e = parse_duration("1e30").unwrap_err();
        assert!(e.contains("too long"), "{e}");
        let Ok(Command::Run { opts, summary, .. }) =
            parse(&["-c", "r.toml", "--duration", "2", "--summary", "s.json"])
        else {
            panic!("a valid command line");
        };
        assert_eq!(opts.duration, Some(Duration::from_secs(2)));
        assert_eq!(summary, Some(PathBuf::from("s.json")));
        assert_eq!(
            parse(&["--duration", "1"]).unwrap_err(),
            "--config is required"
        );
    }
}
