//! The real storage services for tests: `scripts/services.sh` starts PostgreSQL,
//! VictoriaMetrics and InfluxDB on loopback with their own ports and state directory, and
//! stops them when the [`Services`] value is dropped.

use std::path::PathBuf;
use std::process::Command;

/// Services started by `scripts/services.sh` in their own directory and ports; stopped (and
/// the directory removed) on drop.
pub struct Services {
    /// The state directory (`IDINT_SERVICES_DIR`).
    pub dir: PathBuf,
    env: Vec<(String, String)>,
}

impl Services {
    fn script() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/services.sh")
    }

    /// Runs `scripts/services.sh` with `args` in this environment; its standard output
    /// (panics when it fails).
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

    /// Starts `which` (`postgres`, `victoria`, `influx`) in a directory named after `tag`,
    /// PostgreSQL on `base_port`, VictoriaMetrics on the next port, InfluxDB on the one after.
    pub fn start(tag: &str, base_port: u16, which: &[&str]) -> Self {
        let dir = std::env::temp_dir().join(format!("collector-svc-{tag}-{}", std::process::id()));
        let env = vec![
            ("IDINT_SERVICES_DIR".into(), dir.display().to_string()),
            ("IDINT_PG_PORT".into(), base_port.to_string()),
            ("IDINT_VM_PORT".into(), (base_port + 1).to_string()),
            ("IDINT_INFLUX_PORT".into(), (base_port + 2).to_string()),
        ];
        let s = Services { dir, env };
        let mut args = vec!["start"];
        args.extend_from_slice(which);
        s.run(&args);
        s
    }

    /// The value of `name` (e.g. `IDINT_PG_URL`) that `services.sh env` prints.
    pub fn url(&self, name: &str) -> String {
        let env = self.run(&["env"]);
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("{name} in {env}"))
            .to_string()
    }
}

impl Drop for Services {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(Self::script())
            .arg("stop")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
