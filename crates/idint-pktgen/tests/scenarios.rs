//! `pktgen-configs/`: every scenario file generates (through `idint-pktgen --scenario`, the
//! same bytes as the library), every packet gets the disposition the generator expects from
//! scion-dp's processor for the scenario's router, and the `[expect]` table of each scenario
//! holds (kinds present, packets rejected, packets with ID-INT). Every Pktgen-DPDK Lua script
//! parses (`luac -p`) and every `.pkt` command file names only existing pcaps' scenarios.

use std::path::{Path, PathBuf};
use std::process::Command;

use idint_pktgen::scenario::{Scenario, kinds};
use idint_pktgen::{Expect, Generator};
use scion_dp::Processor;
use scion_dp::config::Router;
use scion_topology::Topology;
use test_kit::require::Need;
use wire_tools::pcap::{LINKTYPE_ETHERNET, PcapReader, scion_payload};

/// The router clock every scenario is generated and processed at.
const NOW_NS: u64 = 1_763_800_000_000_000_000;
/// `--now` for the command line: [`NOW_NS`] in seconds.
const NOW_ARG: &str = "1763800000";
/// Processing buffer: larger than any frame a scenario generates.
const BUF_LEN: usize = 16 * 1024;

fn configs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pktgen-configs")
}

/// Files of `dir` ending in `.ext`, sorted.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

fn scenario_files() -> Vec<PathBuf> {
    let v = files(&configs().join("scenarios"), "toml");
    assert!(v.len() >= 10, "scenarios: {v:?}");
    v
}

/// Generates the scenario with the library and runs every packet through scion-dp.
/// Returns the capture and the `[expect]` counts that do not hold.
fn check(path: &Path) -> (Vec<u8>, Vec<String>) {
    let name = path.file_stem().unwrap().to_string_lossy().to_string();
    let s = Scenario::load(path).unwrap();
    let topo = Topology::load(s.topology_path()).unwrap();
    let keys = s.keys_path();
    let router = Router::new(topo.router_config(&s.router, &keys).unwrap()).unwrap();
    let opts = s.options(NOW_NS).unwrap();
    let mut g = Generator::new(&topo, &s.router, &keys, opts).unwrap();
    let mut infos = Vec::new();
    let (pcap, _) = g.write_pcap(Vec::new(), |i| infos.push(i.clone())).unwrap();
    let mut p = Processor::new(&router);
    let mut buf = vec![0u8; BUF_LEN];
    let mut reader = PcapReader::new(&pcap[..]).unwrap();
    let mut n = 0;
    while let Some(rec) = reader.next_record().unwrap() {
        let info = &infos[n];
        let (_, scion) = scion_payload(LINKTYPE_ETHERNET, &rec.data).unwrap();
        buf[..scion.len()].copy_from_slice(scion);
        let d = p.process(&mut buf, scion.len(), info.ingress, NOW_NS);
        assert!(
            info.expect.matches(&d),
            "{name}: packet {n} ({}, {:?}): expected {}, router said {d:?}",
            g.shape_label(info.shape).unwrap(),
            info.malformed,
            info.expect
        );
        n += 1;
    }
    assert_eq!(n, infos.len(), "{name}");
    assert_eq!(n as u64, s.count.unwrap_or(n as u64), "{name}");
    for k in kinds(&s.expect.kinds).unwrap() {
        assert!(
            infos.iter().any(|i| i.kind == k && i.malformed.is_none()),
            "{name}: no valid {k} packet"
        );
    }
    let rejected = infos
        .iter()
        .filter(|i| i.expect == Expect::Rejected)
        .count() as u64;
    let idint = infos.iter().filter(|i| i.idint).count() as u64;
    eprintln!("{name}: {n} packets, {rejected} rejected, {idint} with ID-INT");
    let mut wrong = Vec::new();
    if s.expect.rejected.is_some_and(|r| r != rejected) {
        wrong.push(format!(
            "{name}: {rejected} rejected, expected {:?}",
            s.expect.rejected
        ));
    }
    if s.expect.idint.is_some_and(|r| r != idint) {
        wrong.push(format!(
            "{name}: {idint} with ID-INT, expected {:?}",
            s.expect.idint
        ));
    }
    (pcap, wrong)
}

#[test]
fn every_scenario_generates_and_gets_the_expected_dispositions() {
    let mut wrong = Vec::new();
    for path in scenario_files() {
        let (pcap, w) = check(&path);
        wrong.extend(w);
        // The command line produces the same capture from the file.
        let out = std::env::temp_dir().join(format!(
            "pktgen-scenario-{}-{}.pcap",
            path.file_stem().unwrap().to_string_lossy(),
            std::process::id()
        ));
        let st = Command::new(env!("CARGO_BIN_EXE_idint-pktgen"))
            .arg("--scenario")
            .arg(&path)
            .args(["--now", NOW_ARG, "--out"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(st.status.success(), "{}: {st:?}", path.display());
        assert!(
            std::fs::read(&out).unwrap() == pcap,
            "{}: the command line wrote another capture",
            path.display()
        );
        std::fs::remove_file(out).unwrap();
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_command_line_count_overrides_the_scenario() {
    let path = configs().join("scenarios/transit.toml");
    let out = std::env::temp_dir().join(format!("pktgen-count-{}.pcap", std::process::id()));
    let st = Command::new(env!("CARGO_BIN_EXE_idint-pktgen"))
        .arg("--scenario")
        .arg(&path)
        .args(["--now", NOW_ARG, "--count", "5", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(st.status.success(), "{st:?}");
    let bytes = std::fs::read(&out).unwrap();
    let mut r = PcapReader::new(&bytes[..]).unwrap();
    let mut n = 0;
    while r.next_record().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 5);
    std::fs::remove_file(out).unwrap();
}

#[test]
fn every_pktgen_dpdk_lua_script_parses() {
    test_kit::require!(Need::Luac);
    let scripts = files(&configs().join("pktgen-dpdk"), "lua");
    assert!(!scripts.is_empty());
    for s in scripts {
        let st = Command::new("luac").args(["-p"]).arg(&s).output().unwrap();
        assert!(
            st.status.success(),
            "{}: {}",
            s.display(),
            String::from_utf8_lossy(&st.stderr)
        );
    }
}

#[test]
fn pktgen_dpdk_and_testpmd_files_name_existing_scenarios() {
    let names: Vec<String> = scenario_files()
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().to_string())
        .collect();
    let dir = configs().join("pktgen-dpdk");
    let mut checked = 0;
    for f in files(&dir, "pkt")
        .into_iter()
        .chain(files(&dir, "lua"))
        .chain(files(&configs().join("testpmd"), "sh"))
    {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, _) in text.match_indices(".pcap") {
            let start = text[..i]
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
                .map_or(0, |s| s + 1);
            let stem = &text[start..i];
            // `pktgen.pcap(...)` is Pktgen-DPDK's Lua API, not a file.
            if stem.is_empty() || text[i..].starts_with(".pcap(") {
                continue;
            }
            assert!(
                names.iter().any(|n| n == stem),
                "{}: {stem}.pcap is not a scenario",
                f.display()
            );
            checked += 1;
        }
    }
    assert!(checked > 0);
}
