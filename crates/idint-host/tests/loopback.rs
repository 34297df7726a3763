//! `idint-ping serve` and `idint-ping send` as real processes over 127.0.0.1 on the empty
//! (intra-AS) path: the request carries only the source entry, the reply comes back, exit
//! codes, stats and JSON are right.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use idint_host::fixture::empty_path;
use idint_host::paths::PathsFile;

const IA: &str = "1-ff00:0:111";
const SERVE_PORT: u16 = 28_210;
const SEND_PORT: u16 = 28_211;
const IDLE_PORT: u16 = 28_212;
/// A master0.key of the reference configuration examples.
const MASTER0: &str = "V9SOOHqV4KdAL6utGnvEtA==";

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("idint-host-loopback-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("keys/1-ff00_0_111")).unwrap();
    std::fs::write(d.join("keys/1-ff00_0_111/master0.key"), MASTER0).unwrap();
    let paths = PathsFile {
        paths: vec![empty_path("local", IA.parse().unwrap())],
    };
    std::fs::write(d.join("paths.json"), paths.to_json()).unwrap();
    d
}

fn ping() -> Command {
    Command::new(env!("CARGO_BIN_EXE_idint-ping"))
}

fn send(d: &Path, port: u16, json: &str) -> std::process::Output {
    ping()
        .args(["send", "--local", &format!("{IA},127.0.0.1")])
        .arg("--paths")
        .arg(d.join("paths.json"))
        .args(["--dst", &format!("{IA},127.0.0.1:{port}")])
        .args([
            "--count",
            "2",
            "--interval-ms",
            "50",
            "--timeout-ms",
            "2000",
        ])
        .args(["--port", &SEND_PORT.to_string(), "--encrypt"])
        .arg("--keys")
        .arg(d.join("keys"))
        .arg("--json")
        .arg(d.join(json))
        .output()
        .unwrap()
}

fn stop(child: &mut Child) -> std::process::ExitStatus {
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn serve_and_send_over_loopback() {
    let d = dir();
    let mut serve = ping()
        .args(["serve", "--local", &format!("{IA},127.0.0.1")])
        .args(["--listen", &format!("127.0.0.1:{SERVE_PORT}")])
        .arg("--keys")
        .arg(d.join("keys"))
        .arg("--stats")
        .arg(d.join("stats.json"))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the server's socket is bound: a ping to it is answered.
    let mut out = send(&d, SERVE_PORT, "send.json");
    for _ in 0..20 {
        if out.status.success() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        out = send(&d, SERVE_PORT, "send.json");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("telemetry verified"), "{stdout}");
    assert!(
        stdout.contains("2 sent, 2 received, 2 verified"),
        "{stdout}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("send.json")).unwrap()).unwrap();
    assert_eq!(json["sent"], 2);
    assert_eq!(json["verified"], 2);
    assert_eq!(json["path"], "local");
    assert_eq!(json["replies"][0]["verified"], true);
    // The empty path: only the source entry, so no router rows.
    assert_eq!(json["replies"][0]["hops"].as_array().unwrap().len(), 0);

    assert!(stop(&mut serve).success());
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("stats.json")).unwrap()).unwrap();
    assert!(stats["verified"].as_u64().unwrap() >= 2, "{stats}");
    assert_eq!(stats["verified"], stats["replies"]);
    assert_eq!(stats["reports_sent"], 0, "no collector given");

    // Nobody listening: nothing verified, a non-zero exit.
    let out = ping()
        .args(["send", "--local", &format!("{IA},127.0.0.1")])
        .arg("--paths")
        .arg(d.join("paths.json"))
        .args(["--dst", &format!("{IA},127.0.0.1:{IDLE_PORT}")])
        .args(["--count", "1", "--timeout-ms", "200"])
        .arg("--keys")
        .arg(d.join("keys"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&d);
}
