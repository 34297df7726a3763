//! The end hosts: `idint-ping serve` on every AS's host, and `idint-ping send` over every path
//! of the box from its source AS's host (both in the AS's namespace, over kernel UDP sockets
//! to the border routers).

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use serde_json::{Value, json};

use crate::files::{COLLECTOR_UDP_PORT, HOST_PORT, Layout};
use crate::netns::as_ns;
use crate::paths::BoxPath;
use crate::plan::{COLLECTOR_IP, Network};
use crate::procs::{Procs, WaitError};
use crate::run::Options;

/// Interval between two pings of one path, ms.
const PING_INTERVAL_MS: u32 = 50;
/// How long a ping waits for its reply, ms.
const PING_TIMEOUT_MS: u32 = 1000;

/// What one `idint-ping send` run saw.
#[derive(Debug, Clone)]
pub struct PingResult {
    /// The path's name.
    pub path: String,
    /// Pings sent.
    pub sent: u64,
    /// Replies received.
    pub received: u64,
    /// Replies whose telemetry verified.
    pub verified: u64,
    /// Milliseconds from the start of the box to the end of the first run with a verified
    /// reply (an upper bound of the first verified packet's time).
    pub first_verified_ms: Option<u128>,
    /// The run's JSON output.
    pub output: Value,
}

impl PingResult {
    /// As JSON for the summary.
    pub fn to_json(&self) -> Value {
        json!({
            "path": self.path,
            "sent": self.sent,
            "received": self.received,
            "verified": self.verified,
        })
    }
}

/// The box's hosts.
pub struct Hosts<'n> {
    net: &'n Network,
    ping: PathBuf,
    paths_file: PathBuf,
    keys: PathBuf,
    dir: PathBuf,
    /// The pings' verifier: the box's collector (so that the hosts' reports are verified and
    /// stored by it).
    verifier: String,
    /// When the box started (timings are from it).
    t0: Instant,
}

impl<'n> Hosts<'n> {
    /// Hosts of `net` using the files of `layout`.
    pub fn new(opts: &Options, layout: &Layout, net: &'n Network, t0: Instant) -> Self {
        Hosts {
            net,
            ping: opts.bin.join("idint-ping"),
            paths_file: layout.host_paths(),
            keys: layout.keys_root(),
            dir: opts.out.join("hosts"),
            verifier: format!("{},{COLLECTOR_IP}", crate::files::collector_ia(net)),
            t0,
        }
    }

    fn local(&self, as_ix: usize) -> String {
        let a = &self.net.ases[as_ix];
        format!("{},{}", a.ia, a.host())
    }

    fn server_name(&self, as_ix: usize) -> String {
        format!("host-{}", self.net.ases[as_ix].number)
    }

    /// Starts `idint-ping serve` on every AS's host.
    pub fn start_servers(&self, procs: &mut Procs) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        for (i, a) in self.net.ases.iter().enumerate() {
            let stats = self.dir.join(format!("serve-{}.json", a.number));
            procs.spawn(
                &self.server_name(i),
                Some(&as_ns(a.number)),
                &self.ping,
                &[
                    "serve".into(),
                    "--local".into(),
                    self.local(i),
                    "--listen".into(),
                    format!("{}:{HOST_PORT}", a.host()),
                    "--keys".into(),
                    self.keys.display().to_string(),
                    "--collector".into(),
                    format!("{COLLECTOR_IP}:{COLLECTOR_UDP_PORT}"),
                    "--stats".into(),
                    stats.display().to_string(),
                ],
            )?;
        }
        Ok(())
    }

    /// Stops the servers; the statistics each wrote.
    pub fn stop_servers(&self, procs: &mut Procs) -> Value {
        let mut out = serde_json::Map::new();
        for (i, a) in self.net.ases.iter().enumerate() {
            procs.stop(&self.server_name(i));
            let stats = self.dir.join(format!("serve-{}.json", a.number));
            let v = std::fs::read_to_string(&stats)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or(Value::Null);
            out.insert(a.ia.to_string(), v);
        }
        Value::Object(out)
    }

    /// `count` pings over every path; one result per path.
    pub fn ping_all(
        &self,
        procs: &Procs,
        paths: &[BoxPath],
        count: u32,
    ) -> Result<Vec<PingResult>, WaitError> {
        let mut out = Vec::new();
        for p in paths {
            if procs.interrupted() {
                return Err(WaitError::Interrupted);
            }
            let name = p.name(self.net);
            let dst = &self.net.ases[p.dst];
            let json_file = self
                .dir
                .join(format!("ping-{}.json", name.replace(['>', ' '], "-")));
            let run = Command::new("ip")
                .args(["netns", "exec", &as_ns(self.net.ases[p.src].number)])
                .arg(&self.ping)
                .args(["send", "--local", &self.local(p.src), "--paths"])
                .arg(&self.paths_file)
                .args(["--dst", &format!("{},{}:{HOST_PORT}", dst.ia, dst.host())])
                .args(["--path", &name, "--count", &count.to_string()])
                .args(["--interval-ms", &PING_INTERVAL_MS.to_string()])
                .args(["--timeout-ms", &PING_TIMEOUT_MS.to_string()])
                .args(["--verifier", &self.verifier, "--keys"])
                .arg(&self.keys)
                .arg("--json")
                .arg(&json_file)
                .output();
            let output: Value = std::fs::read_to_string(&json_file)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or(Value::Null);
            let n = |k: &str| output[k].as_u64().unwrap_or(0);
            let verified = n("verified");
            if let Ok(o) = &run {
                let text = String::from_utf8_lossy(&o.stdout);
                println!("   --- {name}\n{}", indent(&text));
            }
            out.push(PingResult {
                path: name,
                sent: n("sent"),
                received: n("received"),
                verified,
                first_verified_ms: (verified > 0).then(|| self.t0.elapsed().as_millis()),
                output,
            });
        }
        Ok(out)
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("   {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
