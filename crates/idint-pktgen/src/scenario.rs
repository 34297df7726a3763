//! Traffic scenarios as files: a small TOML format naming the router (topology, router id,
//! keys) and the generation options, so that a load test is a file under version control
//! rather than a command line (see `pktgen-configs/` at the repository root).
//!
//! ```toml
//! description = "Transit between a parent and a child link, half of it with ID-INT"
//! topology = "../topologies/noncore/topology.json"   # relative to this file
//! router = "br1-ff00_0_110-1"
//! count = 600
//! kinds = ["transit"]
//! flows = 16
//! payload = 64            # or: size = 172 (whole Ethernet frame)
//!
//! [idint]
//! percent = 50
//! modes = [0, 1, 2, 3]
//! instructions = ["0x82", "0x83", "0x4f", "0x8b"]
//! bitmap = "0xb"
//! encrypt = false
//! verifier = "dst"
//! stack_words = 16
//!
//! [expect]                # checked by the tests, ignored by the generator
//! kinds = ["transit"]
//! rejected = 0
//! ```
//!
//! Every key but `topology` and `router` is optional; absent ones take the generator's
//! defaults (those of `idint-pktgen --help`).

use std::path::{Path, PathBuf};

use idint_wire::idint::{AggregationMode, Instruction};
use serde::Deserialize;

use crate::{IdIntOptions, Kind, Options, Size, VerifierChoice};

/// Largest number of instruction slots of an ID-INT request.
pub const INSTRUCTION_SLOTS: usize = 4;

/// A scenario file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// What the scenario exercises (one line).
    #[serde(default)]
    pub description: String,
    /// `topology.json` of the router under test (relative paths: to the scenario file).
    pub topology: PathBuf,
    /// Border router id in the topology.
    pub router: String,
    /// Keys directory (`master0.key`); default `keys` next to the topology.
    pub keys: Option<PathBuf>,
    /// Number of packets.
    pub count: Option<u64>,
    /// Traffic kinds (default: all the topology allows).
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Number of flows.
    pub flows: Option<u32>,
    /// UDP payload bytes (exclusive with `size`).
    pub payload: Option<usize>,
    /// Whole Ethernet frame bytes (exclusive with `payload`).
    pub size: Option<usize>,
    /// Number of malformed packets among `count` (truncated, bad MAC, expired in turn).
    pub malformed: Option<u64>,
    /// Age of the path timestamps, seconds.
    pub path_age: Option<u32>,
    /// Hop-field ExpTime.
    pub exp_time: Option<u8>,
    /// Give hosts outside the router's AS IPv6 addresses.
    pub ipv6_hosts: Option<bool>,
    /// Gap between pcap timestamps, ns.
    pub gap_ns: Option<u64>,
    /// ID-INT requests.
    #[serde(default)]
    pub idint: IdIntSection,
    /// What the tests expect of the generated packets.
    #[serde(default)]
    pub expect: ExpectSection,
    /// Directory of the scenario file (paths are relative to it); set by [`Scenario::load`].
    #[serde(skip)]
    pub base: PathBuf,
}

/// The `[idint]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdIntSection {
    /// Share of packets (0..=100 %) with a request.
    pub percent: Option<u8>,
    /// Aggregation modes 0-3, used in turn.
    pub modes: Option<Vec<u8>>,
    /// Instruction codes (hex strings like "0x82" or decimal), at most four.
    pub instructions: Option<Vec<String>>,
    /// InstF bitmap (hex string or decimal).
    pub bitmap: Option<String>,
    /// Ask routers to encrypt their entries.
    pub encrypt: Option<bool>,
    /// Verifier: "dst" or "src".
    pub verifier: Option<String>,
    /// Stack space in 4-byte words.
    pub stack_words: Option<u8>,
}

/// The `[expect]` table: what the scenario's packets must show (checked by the tests).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectSection {
    /// Kinds that must occur among the valid packets.
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Packets the router must reject (drop or answer with SCMP).
    pub rejected: Option<u64>,
    /// Packets carrying an ID-INT request.
    pub idint: Option<u64>,
}

/// Parses a byte written as decimal or `0x` hex.
pub fn parse_byte(s: &str) -> Result<u8, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u8::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("{s:?} is not a byte (decimal or 0x hex)"))
}

/// An aggregation mode by number (0 off, 1 per AS, 2 per border router, 3 per border router
/// and internal).
pub fn aggregation_mode(m: u8) -> Result<AggregationMode, String> {
    Ok(match m {
        0 => AggregationMode::Off,
        1 => AggregationMode::PerAs,
        2 => AggregationMode::PerBorderRouter,
        3 => AggregationMode::PerBorderRouterAndInternal,
        _ => return Err(format!("ID-INT mode {m} is not 0-3")),
    })
}

/// Parses kind names.
pub fn kinds(names: &[String]) -> Result<Vec<Kind>, String> {
    names.iter().map(|k| k.parse()).collect()
}

impl Scenario {
    /// Reads and parses a scenario file; relative paths in it are taken from its directory.
    pub fn load(path: impl AsRef<Path>) -> Result<Scenario, String> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut s: Scenario =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        s.base = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        Ok(s)
    }

    /// The topology file, resolved against the scenario's directory.
    pub fn topology_path(&self) -> PathBuf {
        self.base.join(&self.topology)
    }

    /// The keys directory, resolved: `keys` next to the topology unless given.
    pub fn keys_path(&self) -> PathBuf {
        match &self.keys {
            Some(k) => self.base.join(k),
            None => self
                .topology_path()
                .parent()
                .unwrap_or(Path::new("."))
                .join("keys"),
        }
    }

    /// The generator options of the scenario for a router clock of `now_ns`.
    pub fn options(&self, now_ns: u64) -> Result<Options, String> {
        let mut o = Options::new(now_ns);
        if !self.kinds.is_empty() {
            o.kinds = kinds(&self.kinds)?;
        }
        if let Some(c) = self.count {
            o.count = c;
        }
        if let Some(f) = self.flows {
            o.flows = f;
        }
        o.size = match (self.size, self.payload) {
            (Some(_), Some(_)) => return Err("`size` and `payload` are exclusive".into()),
            (Some(f), None) => Size::Frame(f),
            (None, Some(p)) => Size::Payload(p),
            (None, None) => o.size,
        };
        if let Some(m) = self.malformed {
            o.malformed = m;
        }
        if let Some(a) = self.path_age {
            o.path_age_secs = a;
        }
        if let Some(e) = self.exp_time {
            o.exp_time = e;
        }
        if let Some(v) = self.ipv6_hosts {
            o.ipv6_hosts = v;
        }
        if let Some(g) = self.gap_ns {
            o.gap_ns = g;
        }
        o.idint = self.idint.options()?;
        Ok(o)
    }
}

impl IdIntSection {
    /// The ID-INT options: the generator's defaults overridden by what the table sets.
    pub fn options(&self) -> Result<IdIntOptions, String> {
        let mut o = IdIntOptions::default();
        if let Some(p) = self.percent {
            if p > 100 {
                return Err(format!("idint.percent {p} is above 100"));
            }
            o.percent = p;
        }
        if let Some(modes) = &self.modes {
            o.modes = modes
                .iter()
                .map(|&m| aggregation_mode(m))
                .collect::<Result<_, _>>()?;
        }
        if let Some(insts) = &self.instructions {
            if insts.len() > INSTRUCTION_SLOTS {
                return Err(format!("idint.instructions: at most {INSTRUCTION_SLOTS}"));
            }
            let mut slots = [Instruction::NOP; INSTRUCTION_SLOTS];
            for (slot, s) in slots.iter_mut().zip(insts) {
                *slot = Instruction(parse_byte(s).map_err(|e| format!("idint.instructions: {e}"))?);
            }
            o.instructions = slots;
        }
        if let Some(b) = &self.bitmap {
            o.inst_bitmap = parse_byte(b).map_err(|e| format!("idint.bitmap: {e}"))?;
        }
        if let Some(e) = self.encrypt {
            o.encrypt = e;
        }
        if let Some(v) = &self.verifier {
            o.verifier = match v.as_str() {
                "dst" | "destination" => VerifierChoice::Destination,
                "src" | "source" => VerifierChoice::Source,
                v => return Err(format!("idint.verifier {v:?}: expected dst or src")),
            };
        }
        if let Some(w) = self.stack_words {
            o.stack_words = w;
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minimal_scenario_takes_the_defaults() {
        let s: Scenario = toml::from_str("topology = \"t.json\"\nrouter = \"br1\"\n").unwrap();
        let o = s.options(1).unwrap();
        let d = Options::new(1);
        assert_eq!((o.count, o.flows, o.size), (d.count, d.flows, d.size));
        assert_eq!(o.idint, IdIntOptions::default());
    }

    #[test]
    fn every_key_is_applied_and_errors_are_named() {
        let s: Scenario = toml::from_str(
            r#"topology = "t.json"
router = "br1"
count = 7
kinds = ["epic", "in"]
size = 200
[idint]
percent = 100
modes = [2]
instructions = ["0x4a", "75"]
bitmap = "0x8"
encrypt = true
verifier = "src"
stack_words = 30
"#,
        )
        .unwrap();
        let o = s.options(1).unwrap();
        assert_eq!(o.count, 7);
        assert_eq!(o.kinds, vec![Kind::Epic, Kind::In]);
        assert_eq!(o.size, Size::Frame(200));
        assert_eq!(o.idint.modes, vec![AggregationMode::PerBorderRouter]);
        assert_eq!(o.idint.instructions[1], Instruction(75));
        assert_eq!(o.idint.instructions[2], Instruction::NOP);
        assert!(o.idint.encrypt);
        assert_eq!(o.idint.verifier, VerifierChoice::Source);
        let bad: Result<Scenario, _> =
            toml::from_str("topology = \"t\"\nrouter = \"r\"\nbogus = 1\n");
        assert!(bad.is_err());
        let s: Scenario =
            toml::from_str("topology = \"t\"\nrouter = \"r\"\n[idint]\nmodes = [4]\n").unwrap();
        assert!(s.options(1).unwrap_err().contains("mode 4"));
    }
}
