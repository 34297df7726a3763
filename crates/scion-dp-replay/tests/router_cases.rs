//! All reference router cases through the replay library, and proof that the judge notices
//! differences.

use scion_dp_replay::{CaseFile, Verdict};
use serde_json::Value;

const CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/scion/router_cases.json"
);

fn text() -> String {
    std::fs::read_to_string(CASES).expect("router_cases.json beside the checkout")
}

#[test]
fn every_reference_case_passes() {
    let file = CaseFile::parse(&text()).unwrap();
    assert_eq!(file.cases.len(), 41);
    let failures: Vec<String> = file
        .cases
        .iter()
        .filter_map(|c| match file.run(c) {
            Verdict::Pass => None,
            Verdict::Fail(why) => Some(format!("{}: {why}", c.name)),
        })
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
    // The three quirk cases are judged against the specification.
    assert_eq!(file.cases.iter().filter(|c| c.quirk).count(), 3);
}

fn with_edit(edit: impl FnOnce(&mut Value)) -> (CaseFile, Value) {
    let mut v: Value = serde_json::from_str(&text()).unwrap();
    edit(&mut v);
    (CaseFile::parse(&v.to_string()).unwrap(), v)
}

fn verdict_of(file: &CaseFile, name: &str) -> Verdict {
    let case = file.cases.iter().find(|c| c.name == name).unwrap();
    file.run(case)
}

#[test]
fn judge_reports_a_changed_output_byte() {
    let (file, _) = with_edit(|v| {
        let c = &mut v["cases"][0]["expected"]["output_hex"];
        let mut h = c.as_str().unwrap().to_string();
        let flipped = if &h[60..61] == "0" { "1" } else { "0" };
        h.replace_range(60..61, flipped);
        *c = Value::String(h);
    });
    let name = file.cases[0].name.clone();
    match verdict_of(&file, &name) {
        Verdict::Fail(why) => assert!(why.contains("output byte 30"), "{why}"),
        Verdict::Pass => panic!("a changed output byte passed"),
    }
}

#[test]
fn judge_reports_wrong_egress_pointer_and_disposition() {
    let (file, v) = with_edit(|v| {
        for c in v["cases"].as_array_mut().unwrap() {
            let e = &mut c["expected"];
            match e["disposition"].as_str() {
                Some("forward") => e["egress_ifid"] = Value::from(999),
                Some("scmp") => e["slow_path_request"]["pointer"] = Value::from(7),
                Some("drop") => e["disposition"] = Value::from("forward"),
                _ => {}
            }
        }
    });
    let quirk: Vec<bool> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["quirk"].as_bool().unwrap_or(false))
        .collect();
    for (c, q) in file.cases.iter().zip(quirk) {
        // Quirk cases are judged by spec_expected, which the edit left alone.
        let v = file.run(c);
        assert_eq!(v == Verdict::Pass, q, "{}: {v:?}", c.name);
    }
}

#[test]
fn bad_files_are_typed_errors() {
    assert!(CaseFile::parse("{").is_err());
    assert!(CaseFile::parse("{\"router_now_unix\": 1}").is_err());
    let mut v: Value = serde_json::from_str(&text()).unwrap();
    v["as_keys"][0]["hop_field_key_hex"] = Value::from("00".repeat(16));
    let e = CaseFile::parse(&v.to_string())
        .err()
        .expect("mismatching key accepted");
    assert!(e.0.contains("does not match"), "{e}");
}

/// The `replay-cases` binary: every reference case passes (exit 0), a case file that cannot
/// be read is exit status 2 with its reason.
#[test]
fn the_binary_judges_a_file() {
    let bin = env!("CARGO_BIN_EXE_replay-cases");
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/scion/router_cases.json"
    );
    let out = std::process::Command::new(bin).arg(file).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains(" passed, 0 failed"), "{text}");
    let out = std::process::Command::new(bin)
        .arg("/nonexistent/cases.json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("replay-cases: "));
}
