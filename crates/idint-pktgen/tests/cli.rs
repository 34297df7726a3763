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
