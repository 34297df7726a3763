//! The `idint-pktgen` binary: help, a run with an expectations file, clear errors.

use std::path::{Path, PathBuf};
use std::process::Command;

use wire_tools::pcap::PcapReader;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_idint-pktgen"))
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/vectors/scion/config_examples/router_benchmark")
}

#[test]
fn help_documents_the_options() {
    let out = bin().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for opt in [
        "--topology",
        "--router",
        "--now",
        "--malformed",
        "--idint",
        "--size",
        "--kinds",
    ] {
        assert!(text.contains(opt), "{opt} missing from --help:\n{text}");
    }
}

#[test]
fn writes_pcap_and_expectations() {
    let dir = std::env::temp_dir().join(format!("idint-pktgen-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("out.pcap");
    let expect = dir.join("expect.csv");
    let out = bin()
        .args(["--topology"])
        .arg(example().join("topology.json"))
        .args(["--router", "br1a", "--count", "90", "--now", "1763800000.5"])
        .args([
            "--idint",
            "30",
            "--malformed",
            "9",
            "--size",
            "300",
            "--out",
        ])
        .arg(&pcap)
        .arg("--expect")
        .arg(&expect)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("90 packets, "), "{err}");
    assert!(err.contains("truncated 3 bad-mac 3 expired 3"), "{err}");
    let lines = std::fs::read_to_string(&expect).unwrap();
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(lines.len(), 90);
    assert_eq!(lines.iter().filter(|l| l.ends_with(",rejected")).count(), 9);
    assert!(
        lines[0].starts_with("0,External(2),crossover,"),
        "{}",
        lines[0]
    );
    let mut r = PcapReader::new(std::fs::File::open(&pcap).unwrap()).unwrap();
    let mut n = 0;
    while let Some(rec) = r.next_record().unwrap() {
        // Every frame has the requested size except the truncated ones.
        if lines[n].contains(",truncated,") {
            assert!(rec.data.len() < 300);
        } else {
            assert_eq!(rec.data.len(), 300, "{}", lines[n]);
        }
        n += 1;
    }
    assert_eq!(n, 90);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn errors_are_clear() {
    let run = |args: &[&str]| {
        let out = bin().args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let topo = example().join("topology.json");
    let topo = topo.to_str().unwrap();
    let e = run(&["-t", topo, "-r", "br9", "-o", "/dev/null"]);
    assert!(e.contains("no border router \"br9\""), "{e}");
    let e = run(&["-t", "/nonexistent.json", "-r", "br1a", "-o", "/dev/null"]);
    assert!(e.contains("/nonexistent.json: cannot read"), "{e}");
    let e = run(&[
        "-t",
        topo,
        "-r",
        "br1a",
        "-o",
        "/dev/null",
        "--now",
        "yesterday",
    ]);
    assert!(e.contains("--now \"yesterday\""), "{e}");
    let e = run(&["-t", topo, "-r", "br1a", "-o", "/dev/null", "--size", "60"]);
    assert!(e.contains("frame size 60 too small"), "{e}");
    let e = run(&[
        "-t",
        topo,
        "-r",
        "br1a",
        "-o",
        "/dev/null",
        "--kinds",
        "sideways",
    ]);
    assert!(e.contains("unknown kind"), "{e}");
    let e = run(&[
        "-t",
        topo,
        "-r",
        "br1a",
        "-o",
        "/dev/null",
        "--idint-modes",
        "7",
    ]);
    assert!(e.contains("--idint-modes: 7"), "{e}");
    let e = run(&[
        "-t",
        topo,
        "-r",
        "br1a",
        "-o",
        "/dev/null",
        "-n",
        "5",
        "--malformed",
        "6",
    ]);
    assert!(e.contains("6 malformed packets"), "{e}");
}

#[test]
fn bad_numbers_and_files_are_named() {
    fn run<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S]) -> String {
        let out = bin().args(args).output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(!out.status.success(), "{args:?} succeeded: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        err
    }
    let topo = example().join("topology.json");
    let topo = topo.to_str().unwrap();
    let base = ["-t", topo, "-r", "br1a", "-o", "/dev/null"];
    let with = |extra: &[&'static str]| -> Vec<String> {
        base.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    // Sizes and gaps that overflow are refused up front, naming the option.
    let e = run(&with(&["--payload", "18446744073709551615"]));
    assert!(e.contains("--payload") && e.contains("too large"), "{e}");
    let e = run(&with(&["--gap-ns", "18446744073709551615"]));
    assert!(e.contains("--gap-ns 18446744073709551615"), "{e}");
    // A DRKey epoch outside SCION's limits, with or without ID-INT, names the option.
    for extra in [
        &["--drkey-epoch", "0"][..],
        &["--drkey-epoch", "0", "--idint", "50"],
    ] {
        let e = run(&with(extra));
        assert!(e.starts_with("idint-pktgen: --drkey-epoch 0: "), "{e}");
        assert!(!e.contains("DRKey:"), "{e}");
    }
    // --verify of something that is not a capture names the file.
    let e = run(&["-t", topo, "-r", "br1a", "--verify", topo]);
    assert!(
        e.contains(&format!("--verify {topo}: not a pcap file")),
        "{e}"
    );
    assert!(!e.contains("DRKey"), "{e}");
}

#[test]
fn malformed_epic_packets_are_written() {
    let topo = example().join("topology.json");
    for extra in [
        &["-n", "200", "--malformed", "199"][..],
        &["--kinds", "epic", "-n", "9", "--malformed", "3"],
    ] {
        let out = bin()
            .arg("-t")
            .arg(&topo)
            .args(["-r", "br1a", "-o", "/dev/null", "--now", "1763800000.5"])
            .args(extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{extra:?}: {err}");
        assert!(err.contains(" expired "), "{err}");
    }
}

/// `--verify` judges freshness by `--now` (default: the real clock): a capture written at a
/// past `--now` verifies at that time and is stale now.
#[test]
fn verify_takes_the_clock_from_now() {
    let dir = std::env::temp_dir().join(format!("idint-pktgen-now-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("out.pcap");
    let at = "1763800000.5";
    let out = bin()
        .args(["--topology"])
        .arg(example().join("topology.json"))
        .args(["--router", "br1a", "--count", "20", "--now", at])
        .args(["--idint", "100", "--out"])
        .arg(&pcap)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verify = |now: Option<&str>| {
        let mut c = bin();
        c.args(["--topology"])
            .arg(example().join("topology.json"))
            .args(["--router", "br1a", "--verify"])
            .arg(&pcap);
        if let Some(n) = now {
            c.args(["--now", n]);
        }
        let out = c.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (ok, text) = verify(Some(at));
    assert!(ok, "{text}");
    assert!(
        text.contains("20 with ID-INT, 20 verified and decrypted, 0 failed"),
        "{text}"
    );
    let (ok, text) = verify(None);
    assert!(!ok, "{text}");
    assert!(text.contains("Stale"), "{text}");
    std::fs::remove_dir_all(dir).unwrap();
}
