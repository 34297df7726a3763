//! Replays router test cases through the `scion-dp` processor and judges each outcome.
//!
//! Input is any file in the format of `testdata/scion/router_cases.json`: `routers[]`
//! (ISD-AS, core flag, interfaces with link type, neighbour and owner, internal address,
//! services, dispatched ports, `key_isd_as`), `as_keys[]` (master key per AS), a fixed clock
//! `router_now_unix` and `cases[]`. Unknown keys are ignored. A case with `quirk: true` records
//! a reference-router behaviour that contradicts the specification; it passes when the outcome
//! matches any entry of its `spec_expected` (fields absent from an entry are not compared).
//! Every other case is judged against `expected`: disposition, egress interface, underlay
//! destination, SCMP type/code/pointer and the output bytes.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;

use idint_wire::{IsdAsn, Svc};
use scion_dp::config::{DispatchedPorts, InterfaceConfig, LinkType, Owner, Router, RouterConfig};
use scion_dp::hop_mac::forwarding_key;
use scion_dp::{Disposition, Ingress, Processor};
use serde_json::Value;

/// Room after each packet for an SCMP reply (a DPDK mbuf has 2048 bytes of data room).
const BUFFER_LEN: usize = 2048;

/// A file that cannot be replayed.
#[derive(Debug)]
pub struct LoadError(pub String);

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}

fn err<T>(msg: impl Into<String>) -> Result<T, LoadError> {
    Err(LoadError(msg.into()))
}

/// One case ready to run.
#[derive(Debug, Clone)]
pub struct Case {
    /// Case name.
    pub name: String,
    /// Name of the router that processes it.
    pub router: String,
    /// Arrival.
    pub ingress: Ingress,
    /// The SCION packet.
    pub input: Vec<u8>,
    /// Outcomes that pass (one for normal cases; the `spec_expected` list for quirk cases).
    pub accepted: Vec<Value>,
    /// Whether the case is judged against the specification rather than the reference router.
    pub quirk: bool,
}

/// A loaded case file.
pub struct CaseFile {
    /// Routers by name.
    pub routers: HashMap<String, Router>,
    /// Fixed clock, Unix nanoseconds.
    pub now_ns: u64,
    /// The cases in file order.
    pub cases: Vec<Case>,
}

/// The result of one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The outcome matched.
    Pass,
    /// The first difference found.
    Fail(String),
}

impl CaseFile {
    /// Parses the JSON text of a case file.
    pub fn parse(text: &str) -> Result<Self, LoadError> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| LoadError(format!("not JSON: {e}")))?;
        let now = v["router_now_unix"]
            .as_u64()
            .ok_or_else(|| LoadError("router_now_unix missing".into()))?;
        let mut keys = HashMap::new();
        for k in v["as_keys"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let ia = parse_ia(&k["isd_as"], "as_keys[].isd_as")?;
            keys.insert(ia, key_of(k)?);
        }
        let mut routers = HashMap::new();
        for r in v["routers"]
            .as_array()
            .ok_or_else(|| LoadError("routers missing".into()))?
        {
            let name = str_of(&r["name"], "routers[].name")?.to_string();
            let router =
                router_of(r, &keys).map_err(|e| LoadError(format!("router {name}: {e}")))?;
            routers.insert(name, router);
        }
        let mut cases = Vec::new();
        for c in v["cases"]
            .as_array()
            .ok_or_else(|| LoadError("cases missing".into()))?
        {
            let name = str_of(&c["name"], "cases[].name")?.to_string();
            let case =
                case_of(c, &name, &routers).map_err(|e| LoadError(format!("case {name}: {e}")))?;
            cases.push(case);
        }
        Ok(CaseFile {
            routers,
            now_ns: now * 1_000_000_000,
            cases,
        })
    }

    /// Runs one case on a fresh processor.
    pub fn run(&self, case: &Case) -> Verdict {
        let router = &self.routers[&case.router];
        let mut p = Processor::new(router);
        let mut buf = vec![0u8; BUFFER_LEN.max(case.input.len())];
        buf[..case.input.len()].copy_from_slice(&case.input);
        let d = p.process(&mut buf, case.input.len(), case.ingress, self.now_ns);
        let outcome = Outcome::of(&d, case, &buf);
        let mut first = None;
        for want in &case.accepted {
            match outcome.compare(want) {
                None => return Verdict::Pass,
                Some(diff) => {
                    first.get_or_insert(diff);
                }
            }
        }
        Verdict::Fail(first.unwrap_or_else(|| "no accepted outcome".into()))
    }
}

/// Our outcome in the vocabulary of the case file.
struct Outcome {
    disposition: &'static str,
    egress: Option<u16>,
    underlay: Option<SocketAddr>,
    scmp: Option<(u8, u8, u16)>,
    suppressed: bool,
    output: Option<Vec<u8>>,
    detail: String,
}

impl Outcome {
    fn of(d: &Disposition, case: &Case, buf: &[u8]) -> Self {
        let back = case.ingress.ifid();
        let mut o = Outcome {
            disposition: "drop",
            egress: None,
            underlay: None,
            scmp: None,
            suppressed: false,
            output: None,
            detail: format!("{d:?}"),
        };
        let len = case.input.len();
        match *d {
            Disposition::Forward { ifid } | Disposition::Sibling { ifid, .. } => {
                o.disposition = "forward";
                o.egress = Some(ifid);
                o.output = Some(buf[..len].to_vec());
            }
            Disposition::Deliver { addr } => {
                o.disposition = "forward";
                o.egress = Some(0);
                o.underlay = Some(addr);
                o.output = Some(buf[..len].to_vec());
            }
            Disposition::Reply { len, scmp, pointer } => {
                let (t, c) = scmp.type_code();
                o.disposition = "scmp";
                o.egress = Some(back);
                o.scmp = Some((t, c, pointer));
                o.output = Some(buf[..len].to_vec());
            }
            Disposition::Suppressed { scmp, pointer } => {
                let (t, c) = scmp.type_code();
                o.scmp = Some((t, c, pointer));
                o.suppressed = true;
            }
            Disposition::Bfd => o.disposition = "bfd",
            Disposition::Drop(_) => {}
        }
        o
    }

    /// The first difference from an expected outcome, if any.
    fn compare(&self, want: &Value) -> Option<String> {
        let got = &self.detail;
        let disp = want["disposition"].as_str().unwrap_or("?");
        if disp != self.disposition {
            return Some(format!("disposition: expected {disp}, got {got}"));
        }
        if let Some(e) = want["egress_ifid"].as_u64()
            && disp != "drop"
            && self.egress != Some(e as u16)
        {
            return Some(format!("egress_ifid: expected {e}, got {got}"));
        }
        if let Some(u) = want["underlay_dst"].as_str() {
            let ok = self.underlay.map(|a| a.to_string()) == Some(u.to_string());
            if !ok {
                return Some(format!("underlay_dst: expected {u}, got {got}"));
            }
        }
        if let Some(r) = want.get("slow_path_request").filter(|r| !r.is_null()) {
            let exp = (
                r["type"].as_u64(),
                r["code"].as_u64(),
                r["pointer"].as_u64(),
            );
            let have = self
                .scmp
                .map(|(t, c, p)| (Some(u64::from(t)), Some(u64::from(c)), Some(u64::from(p))));
            if have != Some(exp) {
                return Some(format!(
                    "SCMP type/code/pointer: expected {:?}/{:?}/{:?}, got {got}",
                    exp.0, exp.1, exp.2
                ));
            }
        }
        if want["scmp_suppressed"].as_bool() == Some(true) && !self.suppressed {
            return Some(format!(
                "expected the SCMP error to be suppressed, got {got}"
            ));
        }
        if let Some(h) = want["output_hex"].as_str() {
            let Ok(exp) = hex::decode(h) else {
                return Some("output_hex is not hex".into());
            };
            let out = self.output.as_deref().unwrap_or(&[]);
            if let Some(i) = exp.iter().zip(out).position(|(a, b)| a != b) {
                return Some(format!(
                    "output byte {i}: expected {:02x}, got {:02x} ({got})",
                    exp[i], out[i]
                ));
            }
            if exp.len() != out.len() {
                return Some(format!(
                    "output length: expected {}, got {} ({got})",
                    exp.len(),
                    out.len()
                ));
            }
        }
        None
    }
}

fn str_of<'a>(v: &'a Value, what: &str) -> Result<&'a str, LoadError> {
    v.as_str()
        .ok_or_else(|| LoadError(format!("{what} missing")))
}

fn parse_ia(v: &Value, what: &str) -> Result<IsdAsn, LoadError> {
    let s = str_of(v, what)?;
    s.parse()
        .map_err(|_| LoadError(format!("{what}: bad ISD-AS {s:?}")))
}

fn parse_addr(v: &Value, what: &str) -> Result<SocketAddr, LoadError> {
    let s = str_of(v, what)?;
    s.parse()
        .map_err(|_| LoadError(format!("{what}: bad address {s:?}")))
}

/// The forwarding key of an `as_keys[]` entry: derived from the master key (base64 file
/// content or hex), cross-checked with `hop_field_key_hex` when both are given.
fn key_of(k: &Value) -> Result<[u8; 16], LoadError> {
    let master = if let Some(b64) = k["master0_key_file_content_base64"].as_str() {
        let mut out = [0u8; drkey::keyfile::MAX_MASTER_LEN];
        let n = drkey::keyfile::decode_master_key(b64.as_bytes(), &mut out)
            .map_err(|e| LoadError(format!("master key: {e:?}")))?;
        Some(out[..n].to_vec())
    } else if let Some(h) = k["master_key_hex"].as_str() {
        Some(hex::decode(h).map_err(|_| LoadError("master_key_hex is not hex".into()))?)
    } else {
        None
    };
    let given = match k["hop_field_key_hex"].as_str() {
        Some(h) => {
            let b = hex::decode(h).map_err(|_| LoadError("hop_field_key_hex is not hex".into()))?;
            Some(
                <[u8; 16]>::try_from(b.as_slice())
                    .map_err(|_| LoadError("hop_field_key_hex is not 16 bytes".into()))?,
            )
        }
        None => None,
    };
    match (master.map(|m| forwarding_key(&m)), given) {
        (Some(d), Some(g)) if d != g => err("hop_field_key_hex does not match the master key"),
        (Some(d), _) => Ok(d),
        (None, Some(g)) => Ok(g),
        (None, None) => err("no key"),
    }
}

fn router_of(r: &Value, keys: &HashMap<IsdAsn, [u8; 16]>) -> Result<Router, LoadError> {
    let local_ia = parse_ia(&r["isd_as"], "isd_as")?;
    let key_ia = match r.get("key_isd_as") {
        Some(v) if !v.is_null() => parse_ia(v, "key_isd_as")?,
        _ => local_ia,
    };
    let forwarding_key = *keys
        .get(&key_ia)
        .ok_or_else(|| LoadError(format!("no as_keys entry for {key_ia}")))?;
    let mut interfaces = Vec::new();
    for i in r["interfaces"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let id = i["ifid"]
            .as_u64()
            .and_then(|v| u16::try_from(v).ok())
            .ok_or_else(|| LoadError("interfaces[].ifid missing or not a u16".into()))?;
        let link_type: LinkType = str_of(&i["link_to"], "link_to")?
            .parse()
            .map_err(|e| LoadError(format!("interface {id}: {e}")))?;
        let owner = match i["owner"].as_str().unwrap_or("this") {
            "this" => Owner::Local,
            "sibling" => Owner::Sibling(parse_addr(
                &i["sibling_internal_addr"],
                "sibling_internal_addr",
            )?),
            o => return err(format!("interface {id}: unknown owner {o:?}")),
        };
        interfaces.push(InterfaceConfig {
            id,
            link_type,
            neighbor_ia: parse_ia(&i["neighbor_isd_as"], "neighbor_isd_as")?,
            owner,
        });
    }
    let mut services = Vec::new();
    if let Some(svc) = r["svc"].as_object() {
        for (name, addr) in svc {
            let s = match name.as_str() {
                "CS" => Svc::CS,
                "DS" => Svc::DS,
                other => return err(format!("unknown service {other:?}")),
            };
            // One address or a list; the router uses the first instance.
            let a = match addr {
                Value::Array(list) => match list.first() {
                    Some(a) => a,
                    None => continue,
                },
                a => a,
            };
            services.push((s, parse_addr(a, "svc")?));
        }
    }
    let dispatched_ports: DispatchedPorts = r["dispatched_ports"]
        .as_str()
        .unwrap_or("")
        .parse()
        .map_err(|e| LoadError(format!("dispatched_ports: {e}")))?;
    let config = RouterConfig {
        local_ia,
        core: r["core"].as_bool().unwrap_or(false),
        internal_addr: parse_addr(&r["internal_addr"], "internal_addr")?,
        interfaces,
        services,
        dispatched_ports,
        forwarding_key,
    };
    Router::new(config).map_err(|e| LoadError(e.to_string()))
}

fn case_of(c: &Value, name: &str, routers: &HashMap<String, Router>) -> Result<Case, LoadError> {
    let router = str_of(&c["router"], "router")?.to_string();
    if !routers.contains_key(&router) {
        return err(format!("unknown router {router:?}"));
    }
    let ifid = |k: &str| {
        c[k].as_u64()
            .and_then(|v| u16::try_from(v).ok())
            .ok_or_else(|| LoadError(format!("{k} missing or not a u16")))
    };
    let ingress = match str_of(&c["ingress_scope"], "ingress_scope")? {
        "external" => Ingress::External(ifid("ingress_ifid")?),
        "internal" => Ingress::Internal,
        "sibling" => Ingress::Sibling(ifid("ingress_link_ifid")?),
        s => return err(format!("unknown ingress_scope {s:?}")),
    };
    let input = hex::decode(str_of(&c["input_hex"], "input_hex")?)
        .map_err(|_| LoadError("input_hex is not hex".into()))?;
    let quirk = c["quirk"].as_bool().unwrap_or(false);
    let accepted = if quirk {
        match c["spec_expected"].as_array() {
            Some(list) if !list.is_empty() => list.clone(),
            _ => return err("quirk case without spec_expected"),
        }
    } else {
        if !c["expected"].is_object() {
            return err("expected missing");
        }
        vec![c["expected"].clone()]
    };
    Ok(Case {
        name: name.to_string(),
        router,
        ingress,
        input,
        accepted,
        quirk,
    })
}

/// Runs every case of the file at `path`, printing one line per case and a summary; returns
/// (passed, failed).
pub fn run_file(
    path: &std::path::Path,
    out: &mut dyn std::io::Write,
) -> Result<(usize, usize), LoadError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| LoadError(format!("{}: {e}", path.display())))?;
    let file = CaseFile::parse(&text)?;
    let (mut pass, mut fail) = (0, 0);
    for case in &file.cases {
        let tag = if case.quirk { " (judged by spec)" } else { "" };
        let line = match file.run(case) {
            Verdict::Pass => {
                pass += 1;
                format!("PASS {}{tag}", case.name)
            }
            Verdict::Fail(why) => {
                fail += 1;
                format!("FAIL {}{tag}: {why}", case.name)
            }
        };
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out, "{pass} passed, {fail} failed");
    Ok((pass, fail))
}
