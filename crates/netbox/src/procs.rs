//! The box's processes: started in their namespaces with their output in log files, stopped
//! (TERM, then KILL) when the box goes down, whatever way it goes down.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::netns;

/// How long a process may take to exit after SIGTERM before it is killed.
const TERM_GRACE: Duration = Duration::from_secs(5);
/// Poll interval of waits.
const POLL: Duration = Duration::from_millis(100);

/// A started process.
pub struct Proc {
    /// Name (for logs and messages).
    pub name: String,
    /// Its log file.
    pub log: PathBuf,
    child: Child,
}

impl Proc {
    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// Every process of the box, and the stop flag (set by SIGINT/SIGTERM).
pub struct Procs {
    list: Vec<Proc>,
    logs: PathBuf,
    stop: Arc<AtomicBool>,
}

/// Why a wait ended without its condition.
#[derive(Debug)]
pub enum WaitError {
    /// The time ran out.
    Timeout(String),
    /// SIGINT or SIGTERM.
    Interrupted,
}

impl std::fmt::Display for WaitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WaitError::Timeout(what) => write!(f, "{what}: timed out"),
            WaitError::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for WaitError {}

impl Procs {
    /// No processes yet; logs go to `logs`; `stop` is the interrupt flag.
    pub fn new(logs: &Path, stop: Arc<AtomicBool>) -> std::io::Result<Self> {
        std::fs::create_dir_all(logs)?;
        Ok(Procs {
            list: Vec::new(),
            logs: logs.to_path_buf(),
            stop,
        })
    }

    /// Whether the box was interrupted.
    pub fn interrupted(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Starts `program args` in namespace `ns` (`None`: the root namespace), stdout and stderr
    /// to `<logs>/<name>.log`.
    pub fn spawn(
        &mut self,
        name: &str,
        ns: Option<&str>,
        program: &Path,
        args: &[String],
    ) -> std::io::Result<&Proc> {
        let log = self.logs.join(format!("{name}.log"));
        let out = File::create(&log)?;
        let err = out.try_clone()?;
        let mut cmd = match ns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(program);
                c
            }
            None => Command::new(program),
        };
        let child = cmd
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| std::io::Error::other(format!("{}: {e}", program.display())))?;
        self.list.push(Proc {
            name: name.to_string(),
            log,
            child,
        });
        Ok(self.list.last().expect("just pushed"))
    }

    /// The process named `name`, if it still runs (`None` if it exited: its status).
    pub fn check(&mut self, name: &str) -> Result<(), String> {
        let p = self
            .list
            .iter_mut()
            .find(|p| p.name == name)
            .ok_or(format!("no process {name}"))?;
        match p.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(st)) => Err(format!("{name} exited ({st}); log: {}", p.log.display())),
            Err(e) => Err(format!("{name}: {e}")),
        }
    }

    /// The process ids of the processes named in `names` that are in the list.
    pub fn pids(&self, names: &[String]) -> Vec<u32> {
        self.list
            .iter()
            .filter(|p| names.contains(&p.name))
            .map(Proc::pid)
            .collect()
    }

    /// Stops process `name` (TERM, then KILL after a grace period); its exit status.
    pub fn stop(&mut self, name: &str) -> Option<std::process::ExitStatus> {
        let i = self.list.iter().position(|p| p.name == name)?;
        let mut p = self.list.remove(i);
        terminate(&mut p.child)
    }

    /// Waits until `f` holds, polling, for at most `within`.
    pub fn wait_until(
        &self,
        what: &str,
        within: Duration,
        mut f: impl FnMut() -> bool,
    ) -> Result<Duration, WaitError> {
        let start = Instant::now();
        loop {
            if self.interrupted() {
                return Err(WaitError::Interrupted);
            }
            if f() {
                return Ok(start.elapsed());
            }
            if start.elapsed() >= within {
                return Err(WaitError::Timeout(what.to_string()));
            }
            std::thread::sleep(POLL);
        }
    }

    /// Sleeps `d` unless interrupted.
    pub fn sleep(&self, d: Duration) -> Result<(), WaitError> {
        match self.wait_until("sleep", d, || false) {
            Err(WaitError::Timeout(_)) => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// Stops every process, newest first.
    pub fn stop_all(&mut self) {
        while let Some(mut p) = self.list.pop() {
            let _ = terminate(&mut p.child);
        }
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        self.stop_all();
        netns::teardown();
    }
}

/// Clock ticks per second of `/proc/<pid>/stat` times (Linux's USER_HZ on every architecture
/// this runs on).
const USER_HZ: f64 = 100.0;

/// CPU time (user + system) of process `pid` so far, seconds.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / USER_HZ)
}

/// CPU use of `pids` together over `window`, in percent of one CPU.
pub fn cpu_percent(pids: &[u32], window: Duration) -> f64 {
    let total = || pids.iter().filter_map(|&p| cpu_seconds(p)).sum::<f64>();
    let before = total();
    std::thread::sleep(window);
    (total() - before) / window.as_secs_f64() * 100.0
}

/// SIGTERM (through `kill`, as the child may be `ip netns exec`, which passes it on), then
/// SIGKILL after [`TERM_GRACE`].
fn terminate(child: &mut Child) -> Option<std::process::ExitStatus> {
    if let Ok(Some(st)) = child.try_wait() {
        return Some(st);
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let start = Instant::now();
    while start.elapsed() < TERM_GRACE {
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait().ok()
}
