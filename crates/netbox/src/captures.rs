//! The inter-AS link captures, read back: every link carried SCION and ID-INT, and tshark with
//! the project's dissector (`tools/wireshark/scion-idint.lua`) sees in the routers' real output
//! the same SCION frames, ID-INT requests and stack entries as idint-wire, and nothing malformed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use idint_wire::idint::IdInt;
use idint_wire::packet::{L4, Packet};
use serde_json::{Value, json};
use wire_tools::pcap::{PcapReader, scion_payload};

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

/// What one SCION frame carries, as far as the comparison goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carries {
    /// Neither ID-INT nor an SCMP error.
    Plain,
    /// An ID-INT request with this many stack entries.
    IdInt(usize),
    /// An SCMP error: its quote may hold the ID-INT of the packet it answers, which tshark
    /// shows in the same fields; the frame is compared as an SCMP error only.
    ScmpError,
}

/// What a capture holds, frame by frame: each SCION frame's number (from 1, as tshark counts)
/// and what it carries.
type Frames = BTreeMap<usize, Carries>;

/// SCMP types below this are errors (informational messages from 128 on).
const SCMP_INFO_FROM: u8 = 128;

/// Display filter of frames tshark or the dissector found malformed or in error.
const MALFORMED: &str = "_ws.malformed || _ws.expert.severity == \"Error\"";

/// Lines of `-T fields` output for the frames of `file` matching `filter`, as tshark with the
/// dissector prints them.
fn tshark_fields(
    file: &Path,
    dissector: &Path,
    filter: &str,
    fields: &[&str],
) -> Result<Vec<String>, String> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-X")
        .arg(format!("lua_script:{}", dissector.display()))
        .arg("-r")
        .arg(file)
        .args(["-Y", filter, "-T", "fields", "-E", "separator=/t"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().map_err(|e| format!("tshark: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect())
}

/// The capture as tshark with the dissector reads it.
fn tshark_frames(file: &Path, dissector: &Path) -> Result<Frames, String> {
    let mut frames = Frames::new();
    let lines = tshark_fields(
        file,
        dissector,
        "scion",
        &[
            "frame.number",
            "scion.scmp.type",
            "scion.idint.version",
            "scion.idint.entry.hop",
        ],
    )?;
    for line in lines {
        let mut cols = line.split('\t');
        let number = cols.next().and_then(|n| n.parse().ok());
        let number = number.ok_or_else(|| format!("tshark line {line:?}"))?;
        // The outer SCMP type comes first (a quoted packet's would follow it).
        let scmp = cols
            .next()
            .and_then(|t| t.split(',').next()?.parse::<u8>().ok());
        let idint = cols.next().is_some_and(|v| !v.is_empty());
        // The entries' hops, separated by commas.
        let entries = cols
            .next()
            .map_or(0, |h| h.split(',').filter(|h| !h.is_empty()).count());
        let carries = match (scmp, idint) {
            (Some(t), _) if t < SCMP_INFO_FROM => Carries::ScmpError,
            (_, true) => Carries::IdInt(entries),
            _ => Carries::Plain,
        };
        frames.insert(number, carries);
    }
    Ok(frames)
}

/// The capture as idint-wire reads it: frames whose UDP payload parses as SCION, their ID-INT
/// requests and stack entries.
fn wire_frames(file: &Path) -> Result<Frames, String> {
    let f = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut reader = PcapReader::new(std::io::BufReader::new(f)).map_err(|e| e.to_string())?;
    let mut frames = Frames::new();
    let mut number = 0;
    while let Some(r) = reader.next_record().map_err(|e| e.to_string())? {
        number += 1;
        let Ok((_, bytes)) = scion_payload(reader.link_type(), &r.data) else {
            continue;
        };
        let Ok(p) = Packet::parse(bytes) else {
            continue;
        };
        let carries = match (&p.l4, p.hop_by_hop().map(|h| IdInt::locate(h.into_inner()))) {
            (L4::Scmp(m), _) if m.msg_type() < SCMP_INFO_FROM => Carries::ScmpError,
            (_, Some(Ok(Some(s)))) => Carries::IdInt(s.entries().count()),
            (_, Some(Err(e))) => return Err(format!("frame {number}: ID-INT {e:?}")),
            _ => Carries::Plain,
        };
        frames.insert(number, carries);
    }
    Ok(frames)
}

/// Totals of a capture for the summary: SCION frames, frames with ID-INT, stack entries.
fn totals(frames: &Frames) -> Value {
    json!({
        "scion_frames": frames.len(),
        "idint_frames": frames.values().filter(|c| matches!(c, Carries::IdInt(_))).count(),
        "idint_entries": frames
            .values()
            .map(|c| match c {
                Carries::IdInt(n) => *n,
                _ => 0,
            })
            .sum::<usize>(),
        "scmp_errors": frames.values().filter(|c| **c == Carries::ScmpError).count(),
    })
}

/// The first frames the two readings disagree on, as `number: tshark / idint-wire`.
fn differences(seen: &Frames, wire: &Frames) -> Vec<String> {
    let numbers: std::collections::BTreeSet<_> = seen.keys().chain(wire.keys()).collect();
    numbers
        .into_iter()
        .filter(|n| seen.get(n) != wire.get(n))
        .take(5)
        .map(|n| format!("frame {n}: {:?} / {:?}", seen.get(n), wire.get(n)))
        .collect()
}

/// Checks every link's capture; per link what it held.
pub fn check(dir: &Path, repo: &Path, net: &Network, checks: &mut Checks) -> Value {
    let dissector = repo.join("tools/wireshark/scion-idint.lua");
    let mut out = Vec::new();
    for k in 0..net.links.len() {
        let file = dir.join(file_name(net, k));
        let name = file_name(net, k);
        let seen = tshark_frames(&file, &dissector);
        let wire = wire_frames(&file);
        let malformed = tshark_fields(&file, &dissector, MALFORMED, &["frame.number"]);
        let idint = |f: &Frames| {
            f.values()
                .filter(|c| matches!(c, Carries::IdInt(n) if *n > 0))
                .count()
        };
        checks.add(
            &format!("capture {name}: SCION and ID-INT on the link"),
            matches!(&seen, Ok(f) if !f.is_empty() && idint(f) > 0),
            format!("tshark: {:?}", seen.as_ref().map(totals)),
        );
        let same = match (&seen, &wire) {
            (Ok(a), Ok(b)) => Ok(differences(a, b)),
            (Err(e), _) | (_, Err(e)) => Err(e.clone()),
        };
        checks.add(
            &format!("capture {name}: the dissector reads what idint-wire reads"),
            matches!(&same, Ok(d) if d.is_empty()),
            format!("frames read differently (tshark / idint-wire): {same:?}"),
        );
        checks.add(
            &format!("capture {name}: nothing malformed"),
            matches!(&malformed, Ok(m) if m.is_empty()),
            format!("malformed frames: {malformed:?}"),
        );
        let mut entry = seen.as_ref().map(totals).unwrap_or(Value::Null);
        entry["file"] = json!(file.display().to_string());
        out.push(entry);
    }
    json!(out)
}
