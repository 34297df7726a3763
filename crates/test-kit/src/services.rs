//! The real storage services for tests: `scripts/services.sh` starts PostgreSQL,
//! VictoriaMetrics and InfluxDB on loopback. A test uses the shared instance (default
//! directory and ports, left running for the next test) or a private one (its own directory
//! and ports, which the test may stop and restart; stopped and removed when dropped).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

/// Directory and ports of the shared instance (the defaults of `scripts/services.sh`).
const SHARED_DIR: &str = "/tmp/idint-services";
const SHARED_PORTS: [u16; 3] = [25432, 28428, 28086];

/// Services started by `scripts/services.sh` in one directory with one set of ports.
pub struct Services {
    /// The state directory (`IDINT_SERVICES_DIR`).
    pub dir: PathBuf,
    /// The script's environment for this instance: directory and ports.
    env: Vec<(String, String)>,
    /// The endpoints the script printed at start (`IDINT_PG_URL`, ...).
    urls: HashMap<String, String>,
    /// Whether dropping the value stops the services (private instances).
    private: bool,
}

impl Services {
    fn script() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/services.sh")
    }

    /// The shared instance with `which` (`postgres`, `victoria`, `influx`) started if needed;
    /// never stopped by tests.
    pub fn shared(which: &[&str]) -> Self {
        Self::start_in(PathBuf::from(SHARED_DIR), SHARED_PORTS, false, which)
    }

    /// A private instance named after `tag`: PostgreSQL on `base_port`, VictoriaMetrics on the
    /// next port, InfluxDB on the one after; stopped and its directory removed on drop.
    pub fn private(tag: &str, base_port: u16, which: &[&str]) -> Self {
        let dir = std::env::temp_dir().join(format!("idint-svc-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let ports = [base_port, base_port + 1, base_port + 2];
        Self::start_in(dir, ports, true, which)
    }

    fn start_in(dir: PathBuf, ports: [u16; 3], private: bool, which: &[&str]) -> Self {
        let env = vec![
            ("IDINT_SERVICES_DIR".into(), dir.display().to_string()),
            ("IDINT_PG_PORT".into(), ports[0].to_string()),
            ("IDINT_VM_PORT".into(), ports[1].to_string()),
            ("IDINT_INFLUX_PORT".into(), ports[2].to_string()),
        ];
        let mut s = Services {
            dir,
            env,
            urls: HashMap::new(),
            private,
        };
        let out = s.start(which);
        s.urls = out
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        s
    }

    /// Runs `scripts/services.sh` with `args` for this instance; its standard output (panics
    /// when it fails).
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("bash")
            .arg(Self::script())
            .args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("scripts/services.sh runs");
        assert!(
            out.status.success(),
            "services.sh {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Starts `which` of this instance (again); the script's output.
    pub fn start(&self, which: &[&str]) -> String {
        let mut args = vec!["start"];
        args.extend_from_slice(which);
        self.run(&args)
    }

    /// Stops `which` of this instance (all of it if empty).
    pub fn stop(&self, which: &[&str]) {
        let mut args = vec!["stop"];
        args.extend_from_slice(which);
        self.run(&args);
    }

    /// The endpoint `name` (e.g. `IDINT_PG_URL`) of a started service.
    pub fn url(&self, name: &str) -> &str {
        self.urls
            .get(name)
            .unwrap_or_else(|| panic!("{name} not among {:?}", self.urls.keys()))
    }
}

impl Drop for Services {
    fn drop(&mut self) {
        if self.private {
            let _ = Command::new("bash")
                .arg(Self::script())
                .arg("stop")
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .output();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
