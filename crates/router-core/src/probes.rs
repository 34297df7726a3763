//! Infrastructure-mode probes of the router's configuration: the `[probes]` section of
//! `router.toml` and the paths file it names (format in `docs/router.md`, "Probe paths
//! file").
//!
//! ```toml
//! # probe-paths.toml: one [[path]] per probed path
//! [[path]]
//! dst_ia = "1-ff00:0:2"             # destination AS (the probe's sink is its ingress router)
//! dst_host = "10.2.0.9"             # destination host (IPv4 or IPv6)
//! dst_port = 30041                  # optional, default 30041
//! type = "scion"                    # optional: "scion" (default) or "epic"
//! path = "0000200000..."            # the raw path header as sent, hex (spaces and ':' ignored)
//! ```

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use scion_dp::probe::{ProbeRequest, ProbeSource, ProbeTarget};
use serde::Deserialize;

use idint_wire::idint::Instruction;
use idint_wire::scion::PathType;
use idint_wire::{HostAddr, IsdAsn};

/// Default time between two probes of one path, ms.
pub const DEFAULT_INTERVAL_MS: u64 = 1000;
/// Allowed probe intervals, ms (10 ms to an hour).
pub const INTERVAL_MS_RANGE: std::ops::RangeInclusive<u64> = 10..=3_600_000;
/// Default destination UDP port of probes.
pub const DEFAULT_DST_PORT: u16 = 30_041;
/// Most paths one paths file may hold (one probe source port each).
pub const MAX_PATHS: usize = 4096;
/// Allowed ID-INT stack sizes, 4-byte words.
pub const STACK_WORDS_RANGE: std::ops::RangeInclusive<u8> = 8..=255;
/// Instruction slots of a request (Inst1..Inst4).
const INSTRUCTION_SLOTS: usize = 4;
/// Bits of InstF a request may set (the bitmap items: node id, ingress/egress interface,
/// ...; the low nibble).
const BITMAP_ITEMS: u8 = 0x0f;

/// The `[probes]` section as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawProbes {
    paths: PathBuf,
    interval_ms: Option<u64>,
    instructions: Option<Vec<u8>>,
    bitmap: Option<u8>,
    encrypt: Option<bool>,
    stack_words: Option<u8>,
    verifier: Option<String>,
    verifier_ia: Option<String>,
}

/// The paths file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPathsFile {
    #[serde(default)]
    path: Vec<RawPath>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPath {
    dst_ia: String,
    dst_host: String,
    dst_port: Option<u16>,
    #[serde(rename = "type")]
    path_type: Option<String>,
    path: String,
}

/// The validated `[probes]` section: what infrastructure mode probes, how often, and for
/// which verifier (the AS's collector).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeSettings {
    /// The paths file (resolved against the configuration's directory).
    pub paths_file: PathBuf,
    /// The probed paths, in file order (each with `interval_ns` and `request`).
    pub targets: Vec<ProbeTarget>,
    /// Time between two probes of one path, ns.
    pub interval_ns: u64,
    /// What every probe asks routers to record.
    pub request: ProbeRequest,
    /// The collector that verifies the probes: a host of `verifier_ia`.
    pub verifier: IpAddr,
    /// The collector's AS (default: the local AS).
    pub verifier_ia: IsdAsn,
}

/// A problem with the `[probes]` section: the item (`probes.x`, or the paths file with the
/// entry) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProbeError {
    /// `probes.<key>`, or `probes.paths` for problems of the paths file.
    pub item: String,
    /// What is wrong.
    pub reason: String,
}

fn err(item: &str, reason: String) -> ProbeError {
    ProbeError {
        item: item.to_string(),
        reason,
    }
}

/// Validates `[probes]` (`raw`, relative paths against `base`) of a router in `local_ia`;
/// `export_collector` is the `[export]` collector's IP, the verifier unless `verifier` is
/// given.
pub(crate) fn settings(
    raw: &RawProbes,
    base: &Path,
    local_ia: IsdAsn,
    export_collector: Option<IpAddr>,
) -> Result<ProbeSettings, ProbeError> {
    let interval_ms = raw.interval_ms.unwrap_or(DEFAULT_INTERVAL_MS);
    if !INTERVAL_MS_RANGE.contains(&interval_ms) {
        return Err(err(
            "probes.interval_ms",
            format!(
                "{interval_ms} is outside {} ..= {}",
                INTERVAL_MS_RANGE.start(),
                INTERVAL_MS_RANGE.end()
            ),
        ));
    }
    let request = request(raw)?;
    let verifier = match (&raw.verifier, export_collector) {
        (Some(v), _) => v.parse::<IpAddr>().map_err(|_| {
            err(
                "probes.verifier",
                format!("{v:?} is not an IP address (the collector's host in this AS)"),
            )
        })?,
        (None, Some(ip)) => ip,
        (None, None) => {
            return Err(err(
                "probes.verifier",
                "missing: name the AS's collector (verifier = \"IP\"), or configure [export] \
                 whose collector is then the verifier"
                    .into(),
            ));
        }
    };
    if verifier.is_unspecified() || verifier.is_multicast() {
        return Err(err(
            "probes.verifier",
            format!("{verifier} is not a unicast host"),
        ));
    }
    let verifier_ia = match &raw.verifier_ia {
        None => local_ia,
        Some(v) => v.parse::<IsdAsn>().map_err(|_| {
            err(
                "probes.verifier_ia",
                format!("{v:?} is not an ISD-AS (the collector's AS, e.g. \"1-ff00:0:110\")"),
            )
        })?,
    };
    let paths_file = base.join(&raw.paths);
    let interval_ns = interval_ms * 1_000_000;
    let text = std::fs::read_to_string(&paths_file).map_err(|e| {
        err(
            "probes.paths",
            format!("{}: cannot read: {e}", paths_file.display()),
        )
    })?;
    let targets = parse_paths(&text, interval_ns, request).map_err(|reason| {
        err(
            "probes.paths",
            format!("{}: {reason}", paths_file.display()),
        )
    })?;
    // The same checks the probe source makes when it is given the targets.
    let host = HostAddr::from(verifier);
    let mut check = ProbeSource::new(local_ia, host, verifier_ia, host);
    for (i, t) in targets.iter().enumerate() {
        check.add(t.clone(), 0).map_err(|e| {
            err(
                "probes.paths",
                format!("{}: path[{i}].path: {e}", paths_file.display()),
            )
        })?;
    }
    Ok(ProbeSettings {
        paths_file,
        targets,
        interval_ns,
        request,
        verifier,
        verifier_ia,
    })
}

/// The request of `[probes]`: `instructions` (up to four codes, NOP-filled), `bitmap`,
/// `encrypt`, `stack_words`, the rest as [`ProbeRequest::default`].
fn request(raw: &RawProbes) -> Result<ProbeRequest, ProbeError> {
    let mut r = ProbeRequest::default();
    if let Some(codes) = &raw.instructions {
        if codes.len() > INSTRUCTION_SLOTS {
            return Err(err(
                "probes.instructions",
                format!(
                    "{} instructions, a request carries at most {INSTRUCTION_SLOTS}",
                    codes.len()
                ),
            ));
        }
        r.instructions = [Instruction::NOP; INSTRUCTION_SLOTS];
        for (slot, &code) in r.instructions.iter_mut().zip(codes) {
            let i = Instruction(code);
            if code == 0 || i.reserved_bit() || i.info().is_none() {
                return Err(err(
                    "probes.instructions",
                    format!("{code:#04x} is not an instruction of the ID-INT table"),
                ));
            }
            *slot = i;
        }
    }
    if let Some(b) = raw.bitmap {
        if b & !BITMAP_ITEMS != 0 {
            return Err(err(
                "probes.bitmap",
                format!("{b:#04x} sets bits outside the bitmap items ({BITMAP_ITEMS:#04x})"),
            ));
        }
        r.inst_bitmap = b;
    }
    r.encrypt = raw.encrypt.unwrap_or(false);
    if let Some(w) = raw.stack_words {
        if !STACK_WORDS_RANGE.contains(&w) {
            return Err(err(
                "probes.stack_words",
                format!(
                    "{w} is outside {} ..= {}",
                    STACK_WORDS_RANGE.start(),
                    STACK_WORDS_RANGE.end()
                ),
            ));
        }
        r.stack_len_words = w;
    }
    Ok(r)
}

/// The targets of a paths file `text`, each probed every `interval_ns` with `request`.
fn parse_paths(
    text: &str,
    interval_ns: u64,
    request: ProbeRequest,
) -> Result<Vec<ProbeTarget>, String> {
    let raw: RawPathsFile =
        toml::from_str(text).map_err(|e| e.to_string().trim_end().replace('\n', " "))?;
    if raw.path.is_empty() {
        return Err("no [[path]] entries".into());
    }
    if raw.path.len() > MAX_PATHS {
        return Err(format!(
            "{} paths, at most {MAX_PATHS} are probed",
            raw.path.len()
        ));
    }
    raw.path
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let at = |key: &str, why: String| format!("path[{i}].{key}: {why}");
            let dst_ia: IsdAsn = p.dst_ia.parse().map_err(|_| {
                at(
                    "dst_ia",
                    format!("{:?} is not an ISD-AS (e.g. 1-ff00:0:110)", p.dst_ia),
                )
            })?;
            let host: IpAddr = p
                .dst_host
                .parse()
                .map_err(|_| at("dst_host", format!("{:?} is not an IP address", p.dst_host)))?;
            let path_type = match p.path_type.as_deref() {
                None | Some("scion") => PathType::Scion,
                Some("epic") => PathType::Epic,
                Some(o) => {
                    return Err(at("type", format!("{o:?}: expected \"scion\" or \"epic\"")));
                }
            };
            let path = hex(&p.path).map_err(|why| at("path", why))?;
            Ok(ProbeTarget {
                dst_ia,
                dst_host: HostAddr::from(host),
                dst_port: p.dst_port.unwrap_or(DEFAULT_DST_PORT),
                path_type,
                path,
                interval_ns,
                request,
            })
        })
        .collect()
}

/// Bytes of hex text (spaces, tabs, newlines and ':' between digits ignored).
fn hex(s: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = s
        .bytes()
        .filter(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b':'))
        .collect();
    if !digits.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    let val = |d: u8| -> Result<u8, String> {
        (d as char)
            .to_digit(16)
            .map(|v| v as u8)
            .ok_or_else(|| format!("{:?} is not a hex digit", d as char))
    };
    digits
        .chunks(2)
        .map(|p| Ok(val(p[0])? << 4 | val(p[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use idint_wire::path::{HopField, InfoField, PathMeta, ScionPathRepr};

    fn path_hex() -> String {
        let repr = ScionPathRepr {
            meta: PathMeta {
                seg_len: [2, 0, 0],
                ..PathMeta::default()
            },
            infos: [InfoField::default(); 3],
            hops: [HopField::default(); 64],
        };
        let mut b = vec![0u8; repr.buffer_len()];
        repr.emit(&mut b).unwrap();
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "router-core-probes-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn raw(section: &str) -> RawProbes {
        toml::from_str(section).unwrap()
    }

    fn ia() -> IsdAsn {
        "1-ff00:0:1".parse().unwrap()
    }

    /// `[probes]` `section` with a paths file of `paths`: the settings or the error text.
    fn load(section: &str, paths: &str, export: Option<IpAddr>) -> Result<ProbeSettings, String> {
        let d = dir();
        std::fs::write(d.join("p.toml"), paths).unwrap();
        settings(&raw(section), &d, ia(), export).map_err(|e| format!("{}: {}", e.item, e.reason))
    }

    fn good_paths() -> String {
        format!(
            "[[path]]\ndst_ia = \"1-ff00:0:2\"\ndst_host = \"10.2.0.9\"\npath = \"{}\"\n\n\
             [[path]]\ndst_ia = \"1-ff00:0:3\"\ndst_host = \"fd00::9\"\ndst_port = 40000\n\
             type = \"scion\"\npath = \"{}\"\n",
            path_hex(),
            path_hex()
        )
    }

    #[test]
    fn a_good_section_and_file_load() {
        let s = load(
            "paths = \"p.toml\"\ninterval_ms = 250\ninstructions = [0x82, 0x4f]\nencrypt = true\n\
             verifier = \"10.123.10.5\"",
            &good_paths(),
            None,
        )
        .unwrap();
        assert_eq!(s.targets.len(), 2);
        assert_eq!(s.interval_ns, 250_000_000);
        assert!(s.request.encrypt);
        assert_eq!(
            s.request.instructions,
            [
                Instruction(0x82),
                Instruction(0x4f),
                Instruction::NOP,
                Instruction::NOP
            ]
        );
        assert_eq!(s.verifier, "10.123.10.5".parse::<IpAddr>().unwrap());
        assert_eq!(s.targets[0].dst_port, DEFAULT_DST_PORT);
        assert_eq!(s.targets[1].dst_port, 40000);
        assert_eq!(
            s.targets[1].dst_host,
            HostAddr::V6("fd00::9".parse().unwrap())
        );
        assert_eq!(s.targets[0].interval_ns, 250_000_000);
        // Defaults: one probe a second, the default request, the export collector verifies.
        let export: IpAddr = "10.123.10.7".parse().unwrap();
        let s = load("paths = \"p.toml\"", &good_paths(), Some(export)).unwrap();
        assert_eq!(s.interval_ns, DEFAULT_INTERVAL_MS * 1_000_000);
        assert_eq!(s.request, ProbeRequest::default());
        assert_eq!(s.verifier, export);
        assert_eq!(s.verifier_ia, ia());
        // A collector of another AS.
        let s = load(
            "paths = \"p.toml\"\nverifier_ia = \"2-ff00:0:210\"",
            &good_paths(),
            Some(export),
        )
        .unwrap();
        assert_eq!(s.verifier_ia, "2-ff00:0:210".parse().unwrap());
    }

    #[test]
    fn bad_sections_are_refused_with_the_item() {
        let p = good_paths();
        let v = "\nverifier = \"10.0.0.5\"";
        for (section, needle) in [
            (
                "paths = \"p.toml\"\ninterval_ms = 0",
                "probes.interval_ms: 0 is outside",
            ),
            (
                "paths = \"p.toml\"\ninstructions = [1, 2, 3, 4, 5]",
                "probes.instructions: 5 instructions",
            ),
            (
                "paths = \"p.toml\"\ninstructions = [0x3f]",
                "probes.instructions: 0x3f is not",
            ),
            (
                "paths = \"p.toml\"\ninstructions = [0]",
                "probes.instructions: 0x00 is not",
            ),
            (
                "paths = \"p.toml\"\nbitmap = 0x10",
                "probes.bitmap: 0x10 sets bits",
            ),
            (
                "paths = \"p.toml\"\nstack_words = 2",
                "probes.stack_words: 2 is outside",
            ),
            ("paths = \"p.toml\"", "probes.verifier: missing"),
            (
                "paths = \"p.toml\"\nverifier = \"collector\"",
                "probes.verifier: \"collector\" is not",
            ),
            (
                "paths = \"p.toml\"\nverifier = \"224.0.0.1\"",
                "probes.verifier: 224.0.0.1 is not a unicast",
            ),
            (
                "paths = \"nope.toml\"\nverifier = \"10.0.0.5\"",
                "probes.paths: ",
            ),
            (
                "paths = \"p.toml\"\nverifier = \"10.0.0.5\"\nverifier_ia = \"1-ff00\"",
                "probes.verifier_ia: \"1-ff00\" is not an ISD-AS",
            ),
        ] {
            let section = if section.contains("verifier") || needle.contains("verifier") {
                section.to_string()
            } else {
                format!("{section}{v}")
            };
            let e = load(&section, &p, None).expect_err(needle);
            assert!(e.starts_with(needle), "{needle:?} does not start {e:?}");
        }
    }

    #[test]
    fn bad_paths_files_are_refused_with_the_entry() {
        let section = "paths = \"p.toml\"\nverifier = \"10.0.0.5\"";
        let good = path_hex();
        let entry = |ia: &str, host: &str, extra: &str, path: &str| {
            format!(
                "[[path]]\ndst_ia = \"{ia}\"\ndst_host = \"{host}\"\n{extra}path = \"{path}\"\n"
            )
        };
        let cut = &good[..good.len() - 2];
        for (file, needle) in [
            (String::new(), "no [[path]] entries"),
            (
                "[[path]]\ndst_ia = \"1-ff00:0:2\"\n".to_string(),
                "missing field",
            ),
            (
                entry("1-ff00:0:2", "10.2.0.9", "colour = 1\n", &good),
                "unknown field",
            ),
            (
                entry("1-ff00:0:2:7", "10.2.0.9", "", &good),
                "path[0].dst_ia: \"1-ff00:0:2:7\" is not",
            ),
            (
                entry("1-ff00:0:2", "host", "", &good),
                "path[0].dst_host: \"host\" is not",
            ),
            (
                entry("1-ff00:0:2", "10.2.0.9", "type = \"onehop\"\n", &good),
                "path[0].type: \"onehop\"",
            ),
            (
                entry("1-ff00:0:2", "10.2.0.9", "", "abc"),
                "path[0].path: odd number",
            ),
            (
                entry("1-ff00:0:2", "10.2.0.9", "", "zz"),
                "path[0].path: 'z' is not",
            ),
            (entry("1-ff00:0:2", "10.2.0.9", "", cut), "path[0].path: "),
            (
                entry("1-ff00:0:2", "10.2.0.9", "", &format!("{good}00")),
                "path[0].path: ",
            ),
            (
                entry("1-ff00:0:2", "10.2.0.9", "type = \"epic\"\n", &good),
                "path[0].path: ",
            ),
        ] {
            let e = load(section, &file, None).expect_err(needle);
            assert!(e.starts_with("probes.paths: "), "{e}");
            assert!(e.contains(needle), "{needle:?} not in {e:?}");
        }
        // Spaces and colons between digits are fine.
        let spaced: String = good
            .as_bytes()
            .chunks(2)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect::<Vec<_>>()
            .join(":");
        load(section, &entry("1-ff00:0:2", "10.2.0.9", "", &spaced), None).unwrap();
    }
}
