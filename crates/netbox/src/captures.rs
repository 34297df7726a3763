//! The inter-AS link captures, read back: every link carried SCION, and ID-INT, as tshark with
//! the project's dissector (`tools/wireshark/scion-idint.lua`) sees it.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::checks::Checks;
use crate::plan::Network;

/// The capture file of link `k`: `link1-110-111.pcap`.
pub fn file_name(net: &Network, k: usize) -> String {
    let l = &net.links[k];
    format!(
        "link{}-{}-{}.pcap",
        k + 1,
        net.ases[l.a.as_ix].number,
        net.ases[l.b.as_ix].number
    )
}

/// Frames of `file` matching display filter `filter`, counted by tshark with the dissector.
fn count(file: &Path, dissector: &Path, filter: &str) -> Result<usize, String> {
    let out = Command::new("tshark")
        .arg("-X")
        .arg(format!("lua_script:{}", dissector.display()))
        .arg("-r")
        .arg(file)
        .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
        .output()
        .map_err(|e| format!("tshark: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().count())
}

/// Checks every link's capture; per link what it held.
pub fn check(dir: &Path, repo: &Path, net: &Network, checks: &mut Checks) -> Value {
    let dissector = repo.join("tools/wireshark/scion-idint.lua");
    let mut out = Vec::new();
    for k in 0..net.links.len() {
        let file = dir.join(file_name(net, k));
        let scion = count(&file, &dissector, "scion");
        let idint = count(&file, &dissector, "scion.idint.version");
        let ok = matches!((&scion, &idint), (Ok(s), Ok(i)) if *s > 0 && *i > 0);
        checks.add(
            &format!(
                "capture {}: SCION and ID-INT on the link",
                file_name(net, k)
            ),
            ok,
            format!("{scion:?} SCION frames, {idint:?} with ID-INT"),
        );
        out.push(json!({
            "file": file.display().to_string(),
            "scion_frames": scion.ok(),
            "idint_frames": idint.ok(),
        }));
    }
    json!(out)
}
