//! The `idint-pktgen` binary: help, a run with an expectations file, clear errors.

use std::path::{Path, PathBuf};
use std::process::Command;

use wire_tools::pcap::PcapReader;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_idint-pktgen"))
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/scion/config_examples/router_benchmark")
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

/// The 48-bit ID-INT timestamp repeats every 2^48 ns (~3.26 days).
const CYCLE_NS: u64 = 1 << 48;
const NS: u64 = 1_000_000_000;
const HOUR_NS: u64 = 3_600 * NS;
const DAY_NS: u64 = 86_400 * NS;

/// `--now` for a time in ns.
fn secs(ns: u64) -> String {
    format!("{}.{:09}", ns / NS, ns % NS)
}

/// Runs `--verify` of `pcap` with the verifier's clock at `now_ns`: (success, all output).
fn verify_at(pcap: &Path, now_ns: u64) -> (bool, String) {
    let out = bin()
        .args(["--topology"])
        .arg(example().join("topology.json"))
        .args(["--router", "br1a", "--verify"])
        .arg(pcap)
        .args(["--now", &secs(now_ns), "--sample", "20"])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// `--verify` judges freshness by `--now`, never by the real clock: captures written at
/// several points of the 48-bit timestamp cycle (and just before a DRKey epoch boundary)
/// verify at their time and 30 minutes later, and are refused with the classification the
/// specification gives (the nearer of the two readings) 2 hours later (stale), 2 hours earlier
/// (future), 2 days later (more than half a cycle: reads as future) and exactly one cycle later
/// (the timestamps read as fresh; the DRKey keys of another epoch refuse the MACs).
#[test]
fn verify_classifies_timestamps_by_the_given_clock() {
    let dir = std::env::temp_dir().join(format!("idint-pktgen-now-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cycle_start = 1_763_800_000 * NS / CYCLE_NS * CYCLE_NS;
    let mut sent_at: Vec<u64> = (0..4)
        .map(|k| cycle_start + k * (CYCLE_NS / 4) + 7 * NS)
        .collect();
    // 20 frames 1 µs apart straddling a DRKey epoch boundary (1-day epochs), and the last
    // nanoseconds of a cycle.
    sent_at.push((cycle_start / DAY_NS + 3) * DAY_NS - 10_000);
    sent_at.push(cycle_start + CYCLE_NS - 10_000);
    for (k, &t) in sent_at.iter().enumerate() {
        let pcap = dir.join(format!("at-{k}.pcap"));
        let out = bin()
            .args(["--topology"])
            .arg(example().join("topology.json"))
            .args(["--router", "br1a", "--count", "20", "--now", &secs(t)])
            .args(["--idint", "100", "--out"])
            .arg(&pcap)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for now in [t, t + HOUR_NS / 2] {
            let (ok, text) = verify_at(&pcap, now);
            assert!(ok, "sent {t}, verified {now}: {text}");
            assert!(
                text.contains("20 with ID-INT, 20 verified and decrypted, 0 failed"),
                "sent {t}, verified {now}: {text}"
            );
        }
        for (now, verdict) in [
            (t + 2 * HOUR_NS, "is stale: it reads as 7"),
            (t - 2 * HOUR_NS, "is in the future: it reads as 7200.0"),
            (t + 2 * DAY_NS, "is in the future: it reads as "),
            (t + CYCLE_NS, "MAC mismatch"),
        ] {
            let (ok, text) = verify_at(&pcap, now);
            assert!(!ok, "sent {t}, verified {now}: {text}");
            assert!(
                text.contains("20 with ID-INT, 0 verified and decrypted, 20 failed"),
                "sent {t}, verified {now}: {text}"
            );
            assert_eq!(
                text.matches(verdict).count(),
                20,
                "sent {t}, verified {now}, expected {verdict:?} for every frame: {text}"
            );
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}
