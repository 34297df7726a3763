//! Starts the real services through `scripts/services.sh` for the tests.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

/// An instance of the services, started by the script in its own directory and ports.
pub struct Services {
    /// Environment printed by the script (IDINT_PG_URL, IDINT_VM_URL, IDINT_INFLUX_URL).
    pub env: HashMap<String, String>,
    dir: String,
    ports: [(&'static str, String); 3],
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/services.sh")
}

impl Services {
    /// The shared instance (default ports), started if needed; never stopped by tests.
    pub fn shared(which: &[&str]) -> Services {
        Self::start_in("/tmp/idint-services", 25432, 28428, 28086, which)
    }

    /// A private instance (own directory and ports) that a test may stop and restart.
    pub fn private(name: &str, base_port: u16, which: &[&str]) -> Services {
        let dir = format!("/tmp/idint-services-test-{name}");
        let _ = std::fs::remove_dir_all(&dir);
        Self::start_in(&dir, base_port, base_port + 1, base_port + 2, which)
    }

    fn start_in(dir: &str, pg: u16, vm: u16, ix: u16, which: &[&str]) -> Services {
        let s = Services {
            env: HashMap::new(),
            dir: dir.to_string(),
            ports: [
                ("IDINT_PG_PORT", pg.to_string()),
                ("IDINT_VM_PORT", vm.to_string()),
                ("IDINT_INFLUX_PORT", ix.to_string()),
            ],
        };
        let out = s.run("start", which);
        let env = out
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Services { env, ..s }
    }

    fn run(&self, cmd: &str, which: &[&str]) -> String {
        let out = Command::new(script())
            .arg(cmd)
            .args(which)
            .env("IDINT_SERVICES_DIR", &self.dir)
            .envs(self.ports.iter().map(|(k, v)| (*k, v.as_str())))
            .output()
            .expect("run scripts/services.sh");
        assert!(
            out.status.success(),
            "services.sh {cmd} {which:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Stops services of this instance.
    pub fn stop(&self, which: &[&str]) {
        self.run("stop", which);
    }

    /// Starts services of this instance again.
    pub fn start(&self, which: &[&str]) {
        self.run("start", which);
    }

    /// The endpoint `key` (e.g. `IDINT_VM_URL`).
    pub fn url(&self, key: &str) -> &str {
        &self.env[key]
    }
}

/// Stops everything of a private instance and removes its directory.
pub struct Cleanup<'a>(pub &'a Services);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        self.0.run("stop", &[]);
        let _ = std::fs::remove_dir_all(&self.0.dir);
    }
}

/// Unix time now, ns.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// A tag value unique to this test run.
pub fn unique(name: &str) -> String {
    format!("{name}-{}-{}", std::process::id(), now_ns())
}
