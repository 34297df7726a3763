//! The paths file: the SCION paths a host may send on, as the network generator writes them.
//!
//! ```json
//! {"paths":[{"name":"111-211-core","src":"1-ff00:0:111","dst":"2-ff00:0:211",
//!   "raw":"<hex of the standard SCION path header (path type 1) as the source sends it>",
//!   "first_hop":"10.111.0.1:30042","mtu":1472,"expires_unix":1790000000,
//!   "hops":[{"ia":"1-ff00:0:111","ingress":0,"egress":41}, ...]}]}
//! ```
//!
//! * `raw` is the path header exactly as the source host puts it after the address header:
//!   CurrINF = CurrHF = 0. An empty `raw` with `src == dst` is the empty path (intra-AS):
//!   the packet goes straight to the destination host.
//! * `hops` has one element per hop field of `raw`, in travel order, with the interfaces in
//!   travel direction (0 = none). An ID-INT entry names the hop field it was written at; the
//!   host maps it to the AS through this list. The empty path has no hops.
//! * `first_hop` is the underlay address (IP:port) of the source AS's border router that
//!   owns the first hop's egress interface.
//!
//! Parsing checks everything a sender relies on and never panics ([`PathsFile::parse`]).

use std::fmt;
use std::net::SocketAddr;

use idint_wire::IsdAsn;
use idint_wire::path::ScionPathRepr;
use serde::{Deserialize, Serialize};

/// Most hop fields a standard SCION path holds.
pub const MAX_HOPS: usize = idint_wire::path::scion::MAX_HOPS;

/// One hop field of a path: the AS and its interfaces in travel direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathHop {
    /// The AS of the hop field.
    pub ia: IsdAsn,
    /// Ingress interface in travel direction (0 at the source).
    pub ingress: u16,
    /// Egress interface in travel direction (0 at the destination).
    pub egress: u16,
}

/// One path of the file, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathEntry {
    /// Name, unique in the file.
    pub name: String,
    /// Source AS.
    pub src: IsdAsn,
    /// Destination AS.
    pub dst: IsdAsn,
    /// The SCION path header bytes (empty: the empty path).
    pub raw: Vec<u8>,
    /// Underlay address of the first border router (or of nothing, for the empty path).
    pub first_hop: Option<SocketAddr>,
    /// Path MTU, bytes of SCION packet.
    pub mtu: u16,
    /// When the path's first hop field expires, Unix seconds.
    pub expires_unix: u64,
    /// The hop fields in travel order.
    pub hops: Vec<PathHop>,
}

impl PathEntry {
    /// Whether this is the empty (intra-AS) path.
    pub fn is_empty_path(&self) -> bool {
        self.raw.is_empty()
    }

    /// The AS that wrote an ID-INT entry at hop field `hop`, if the path has it.
    pub fn hop_ia(&self, hop: usize) -> Option<IsdAsn> {
        self.hops.get(hop).map(|h| h.ia)
    }
}

/// A checked paths file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PathsFile {
    /// The paths in file order.
    pub paths: Vec<PathEntry>,
}

/// Why a paths file was refused: the path (index and name, if known), the field and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathsError {
    /// Not JSON of the expected shape.
    #[error("paths file: {0}")]
    Json(String),
    /// A field of path `index` is wrong.
    #[error("paths file: path {index} ({name}): {field}: {why}")]
    Field {
        /// Index in `paths`.
        index: usize,
        /// The path's name as given.
        name: String,
        /// The field.
        field: &'static str,
        /// What is wrong.
        why: String,
    },
}

/// No path matches a query of [`PathsFile::select`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no path {what} in the paths file")]
pub struct NoPath {
    /// What was asked for.
    pub what: String,
}

#[derive(Serialize, Deserialize)]
struct RawFile {
    paths: Vec<RawPath>,
}

#[derive(Serialize, Deserialize)]
struct RawPath {
    name: String,
    src: String,
    dst: String,
    #[serde(default)]
    raw: String,
    #[serde(default)]
    first_hop: String,
    mtu: u16,
    expires_unix: u64,
    #[serde(default)]
    hops: Vec<RawHop>,
}

#[derive(Serialize, Deserialize)]
struct RawHop {
    ia: String,
    ingress: u16,
    egress: u16,
}

impl PathsFile {
    /// Parses and checks a paths file.
    pub fn parse(text: &str) -> Result<Self, PathsError> {
        let raw: RawFile =
            serde_json::from_str(text).map_err(|e| PathsError::Json(e.to_string()))?;
        let mut paths: Vec<PathEntry> = Vec::with_capacity(raw.paths.len());
        for (index, p) in raw.paths.into_iter().enumerate() {
            let entry = check_path(index, p)?;
            if paths.iter().any(|q| q.name == entry.name) {
                return Err(PathsError::Field {
                    index,
                    name: entry.name,
                    field: "name",
                    why: "used by an earlier path".into(),
                });
            }
            paths.push(entry);
        }
        Ok(PathsFile { paths })
    }

    /// The file as JSON text (what [`Self::parse`] reads back).
    pub fn to_json(&self) -> String {
        let raw = RawFile {
            paths: self
                .paths
                .iter()
                .map(|p| RawPath {
                    name: p.name.clone(),
                    src: p.src.to_string(),
                    dst: p.dst.to_string(),
                    raw: hex::encode(&p.raw),
                    first_hop: p.first_hop.map(|a| a.to_string()).unwrap_or_default(),
                    mtu: p.mtu,
                    expires_unix: p.expires_unix,
                    hops: p
                        .hops
                        .iter()
                        .map(|h| RawHop {
                            ia: h.ia.to_string(),
                            ingress: h.ingress,
                            egress: h.egress,
                        })
                        .collect(),
                })
                .collect(),
        };
        serde_json::to_string_pretty(&raw).unwrap_or_default()
    }

    /// The path named `name`, or else the first from `src` to `dst`. A named path must also
    /// run from `src` to `dst`.
    pub fn select(
        &self,
        name: Option<&str>,
        src: IsdAsn,
        dst: IsdAsn,
    ) -> Result<&PathEntry, NoPath> {
        let found = match name {
            Some(n) => self.paths.iter().find(|p| p.name == n),
            None => self.paths.iter().find(|p| p.src == src && p.dst == dst),
        };
        found
            .filter(|p| p.src == src && p.dst == dst)
            .ok_or_else(|| NoPath {
                what: match name {
                    Some(n) => format!("named {n:?} from {src} to {dst}"),
                    None => format!("from {src} to {dst}"),
                },
            })
    }
}

fn check_path(index: usize, p: RawPath) -> Result<PathEntry, PathsError> {
    let name = p.name.clone();
    let bad = |field: &'static str, why: String| PathsError::Field {
        index,
        name: name.clone(),
        field,
        why,
    };
    let ia = |field: &'static str, s: &str| {
        s.parse::<IsdAsn>()
            .map_err(|e| bad(field, format!("{s:?} is not an ISD-AS: {e}")))
    };
    let src = ia("src", &p.src)?;
    let dst = ia("dst", &p.dst)?;
    let raw = hex::decode(&p.raw).map_err(|e| bad("raw", format!("not hex: {e}")))?;
    if p.mtu == 0 {
        return Err(bad("mtu", "must be positive".into()));
    }
    let mut hops = Vec::with_capacity(p.hops.len());
    for h in &p.hops {
        hops.push(PathHop {
            ia: ia("hops.ia", &h.ia)?,
            ingress: h.ingress,
            egress: h.egress,
        });
    }
    let first_hop = if p.first_hop.is_empty() {
        None
    } else {
        Some(
            p.first_hop
                .parse::<SocketAddr>()
                .map_err(|e| bad("first_hop", format!("{:?}: {e}", p.first_hop)))?,
        )
    };
    if raw.is_empty() {
        if src != dst {
            return Err(bad(
                "raw",
                "the empty path only joins hosts of one AS".into(),
            ));
        }
        if !hops.is_empty() {
            return Err(bad("hops", "the empty path has no hop fields".into()));
        }
    } else {
        let path =
            ScionPathRepr::parse(&raw).map_err(|e| bad("raw", format!("not a SCION path: {e}")))?;
        if path.buffer_len() != raw.len() {
            return Err(bad(
                "raw",
                format!(
                    "{} bytes after the path's {}",
                    raw.len() - path.buffer_len(),
                    path.buffer_len()
                ),
            ));
        }
        if path.meta.curr_inf != 0 || path.meta.curr_hf != 0 {
            return Err(bad(
                "raw",
                "CurrINF and CurrHF must be 0 at the source".into(),
            ));
        }
        let n = path.meta.num_hops();
        if hops.len() != n {
            return Err(bad(
                "hops",
                format!("{} given for the path's {n} hop fields", hops.len()),
            ));
        }
        if first_hop.is_none() {
            return Err(bad("first_hop", "needed for a non-empty path".into()));
        }
        if hops.first().map(|h| h.ia) != Some(src) || hops.last().map(|h| h.ia) != Some(dst) {
            return Err(bad("hops", "must start in src and end in dst".into()));
        }
    }
    Ok(PathEntry {
        name: p.name,
        src,
        dst,
        raw,
        first_hop,
        mtu: p.mtu,
        expires_unix: p.expires_unix,
        hops,
    })
}

impl fmt::Display for PathEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} -> {}, ", self.name, self.src, self.dst)?;
        if self.hops.is_empty() {
            f.write_str("intra-AS)")
        } else {
            write!(f, "{} hop fields)", self.hops.len())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{empty_path, segment_path};
    use crate::keys::HostKeys;

    fn ia(s: &str) -> IsdAsn {
        s.parse().unwrap()
    }

    fn file() -> PathsFile {
        let (a, b) = (ia("1-ff00:0:111"), ia("2-ff00:0:211"));
        let mut keys = HostKeys::new(3600);
        keys.insert(a, &[1; 16]);
        keys.insert(b, &[2; 16]);
        let hops = [
            PathHop {
                ia: a,
                ingress: 0,
                egress: 41,
            },
            PathHop {
                ia: b,
                ingress: 7,
                egress: 0,
            },
        ];
        let first = "10.111.0.1:30042".parse().unwrap();
        let seg = segment_path(&mut keys, "111-211", &hops, first, 1_763_800_000).unwrap();
        PathsFile {
            paths: vec![seg, empty_path("111-local", a)],
        }
    }

    /// The JSON of `file()` with `f` applied to path `i`.
    fn edited(i: usize, f: impl FnOnce(&mut serde_json::Value)) -> String {
        let mut v: serde_json::Value = serde_json::from_str(&file().to_json()).unwrap();
        f(&mut v["paths"][i]);
        v.to_string()
    }

    /// A change to one path's JSON.
    type Edit = fn(&mut serde_json::Value);

    fn field_of(text: &str) -> &'static str {
        match PathsFile::parse(text) {
            Err(PathsError::Field { field, .. }) => field,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn written_files_parse_back_and_paths_are_selected() {
        let f = file();
        let back = PathsFile::parse(&f.to_json()).unwrap();
        assert_eq!(back, f);
        let (a, b) = (ia("1-ff00:0:111"), ia("2-ff00:0:211"));
        assert_eq!(back.select(None, a, b).unwrap().name, "111-211");
        assert_eq!(back.select(Some("111-local"), a, a).unwrap().hops.len(), 0);
        assert!(back.select(Some("111-local"), a, b).is_err());
        assert!(back.select(None, b, a).is_err());
        assert_eq!(back.paths[0].hop_ia(1), Some(b));
        // Unknown fields are ignored (the generator may add some).
        let extra = edited(0, |p| p["comment"] = "x".into());
        assert!(PathsFile::parse(&extra).is_ok());
    }

    #[test]
    fn every_wrong_field_is_named() {
        assert!(matches!(PathsFile::parse("{"), Err(PathsError::Json(_))));
        assert!(matches!(PathsFile::parse("{}"), Err(PathsError::Json(_))));
        let cases: [(usize, Edit, &str); 10] = [
            (0, |p| p["src"] = "1-x".into(), "src"),
            (0, |p| p["raw"] = "zz".into(), "raw"),
            (0, |p| p["raw"] = "0000".into(), "raw"),
            (0, |p| p["first_hop"] = "nowhere".into(), "first_hop"),
            (0, |p| p["first_hop"] = "".into(), "first_hop"),
            (0, |p| p["mtu"] = 0.into(), "mtu"),
            (0, |p| p["hops"].as_array_mut().unwrap().truncate(1), "hops"),
            (0, |p| p["hops"][0]["ia"] = "3-ff00:0:1".into(), "hops"),
            (1, |p| p["dst"] = "2-ff00:0:211".into(), "raw"),
            (1, |p| p["name"] = "111-211".into(), "name"),
        ];
        for (i, f, field) in cases {
            assert_eq!(field_of(&edited(i, f)), field);
        }
        // A path already advanced (CurrHF 1) is not what a source sends.
        let advanced = edited(0, |p| {
            let mut raw = hex::decode(p["raw"].as_str().unwrap()).unwrap();
            raw[0] = 0x01;
            p["raw"] = hex::encode(raw).into();
        });
        assert_eq!(field_of(&advanced), "raw");
    }
}
