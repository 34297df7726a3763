//! `idint-netbox`: a multi-AS SCION network with ID-INT on one machine (see the crate docs).
//!
//! ```text
//! idint-netbox run [--small] [--out DIR] [--bin DIR] ...   the main job (needs root)
//! idint-netbox files --out DIR [--small]                    only the configuration files
//! idint-netbox down                                         removes what a run left
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Parser, Subcommand};
use netbox::files::{self, Layout, Storage};
use netbox::netns;
use netbox::paths::all_paths;
use netbox::plan::Network;
use netbox::run::{Options, run, unix_now};
use netbox::sim::SimNetwork;

#[derive(Parser)]
#[command(
    name = "idint-netbox",
    about = "A multi-AS SCION network with ID-INT on one machine"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Brings the network up, exercises and checks it, tears it down (root).
    Run {
        /// The integration test's smaller network (4 ASes).
        #[arg(long)]
        small: bool,
        /// Output directory.
        #[arg(long, default_value = "target/demo")]
        out: PathBuf,
        /// Directory of idint-router, idint-collector and idint-ping.
        #[arg(long, default_value = "target/release")]
        bin: PathBuf,
        /// The repository root (for the Wireshark dissector).
        #[arg(long, default_value = ".")]
        repo: PathBuf,
        /// Pings per path.
        #[arg(long, default_value_t = 5)]
        pings: u32,
        /// Seconds of probes after the pings.
        #[arg(long, default_value_t = 5)]
        probe_secs: u64,
        /// Skip the faults (link down/up, router and collector restarts).
        #[arg(long)]
        no_faults: bool,
        /// The collector's API address.
        #[arg(long, default_value = "127.0.0.1:28580")]
        api: String,
        /// PostgreSQL URL of the collector.
        #[arg(long, env = "IDINT_PG_URL")]
        postgres: String,
        /// VictoriaMetrics URL of the collector.
        #[arg(long, env = "IDINT_VM_URL")]
        victoria: String,
        /// A program taking a screenshot: called with the dashboard's URL and a PNG path.
        #[arg(long)]
        screenshot: Option<PathBuf>,
    },
    /// Writes the configuration files of the network and checks every path in memory.
    Files {
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// The smaller network.
        #[arg(long)]
        small: bool,
    },
    /// Removes the namespaces, veths, bridge and processes a run left (root).
    Down,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Run {
            small,
            out,
            bin,
            repo,
            pings,
            probe_secs,
            no_faults,
            api,
            postgres,
            victoria,
            screenshot,
        } => {
            let stop = Arc::new(AtomicBool::new(false));
            let flag = stop.clone();
            if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed)) {
                eprintln!("idint-netbox: cannot handle signals: {e}");
                return ExitCode::FAILURE;
            }
            // The generated configurations name files by absolute paths: the routers resolve
            // relative ones against their configuration file's directory.
            let absolute = |p: PathBuf| std::path::absolute(&p).unwrap_or(p);
            let opts = Options {
                out: absolute(out),
                bin: absolute(bin),
                repo: absolute(repo),
                small,
                pings,
                probe_secs,
                faults: !no_faults,
                storage: Storage {
                    postgres_url: postgres,
                    victoria_url: victoria,
                },
                api,
                screenshot,
            };
            let result = run(&opts, stop.clone());
            // Whatever happened, nothing stays behind.
            netns::teardown();
            match result {
                Ok(0) => ExitCode::SUCCESS,
                Ok(_) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!(
                        "idint-netbox: {e}{}",
                        if stop.load(Ordering::Relaxed) {
                            " (interrupted)"
                        } else {
                            ""
                        }
                    );
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Files { out, small } => {
            let net = if small {
                Network::small()
            } else {
                Network::demo()
            };
            let layout = Layout::new(std::path::absolute(&out).unwrap_or(out));
            let paths = all_paths(&net);
            let storage = Storage {
                postgres_url: "postgresql://collector@127.0.0.1/collector".into(),
                victoria_url: "http://127.0.0.1:28428".into(),
            };
            let now_s = unix_now();
            let written =
                files::write_all(&net, &layout, now_s, &paths, "127.0.0.1:28580", &storage);
            let (_, raws) = match written {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("idint-netbox: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let sim = match SimNetwork::load(&net, &layout) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("idint-netbox: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let mut failed = 0;
            for (p, raw) in paths.iter().zip(&raws) {
                match sim.send(&net, p, raw, now_s * 1_000_000_000) {
                    Ok(c) => println!("{}: delivered over {} routers", p.name(&net), c.len()),
                    Err(e) => {
                        failed += 1;
                        println!("{}: {e}", p.name(&net));
                    }
                }
            }
            if failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Cmd::Down => {
            for r in netns::teardown() {
                println!("removed {r}");
            }
            ExitCode::SUCCESS
        }
    }
}
