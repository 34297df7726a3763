//! The Wireshark dissector `tools/wireshark/scion-idint.lua` against idint-wire, field by field.
//!
//! Every packet (the golden packets of `testdata/`, the ID-INT demo packet and variants of it,
//! the traffic of idint-pktgen in several modes, and truncated / corrupted copies of them) is
//! decoded twice: by [`wire_tools::fields::decode`] (idint-wire) and by `tshark -T json` with
//! the dissector loaded. For every packet idint-wire accepts, the `scion.*` fields must be the
//! same, in the same order, with the same values, and tshark must report nothing malformed; for
//! every packet idint-wire rejects, tshark must flag it malformed. No packet may raise a Lua
//! error. Needs `tshark` (skipped with the reason otherwise, failed under
//! `IDINT_TEST_REQUIRE_ALL=1`).

use std::path::{Path, PathBuf};
use std::process::Command;

use idint_pktgen::{Generator, Kind, Options, VerifierChoice};
use idint_wire::idint::entry::SlotValue;
use idint_wire::idint::{AggregationMode, Instruction, RequestBuilder, Verifier};
use idint_wire::{HostAddr, IsdAsn};
use scion_topology::Topology;
use test_kit::require;
use test_kit::require::Need;
use wire_tools::fields::{Fields, decode};
use wire_tools::pcap::{LINKTYPE_ETHERNET, PcapWriter, ethernet_ipv4_udp, scion_payload};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn lua() -> PathBuf {
    repo().join("tools/wireshark/scion-idint.lua")
}

// ---------------------------------------------------------------------------------------
// A minimal JSON reader that keeps the order and the duplicates of object keys (tshark
// repeats a key for every occurrence of a field).
// ---------------------------------------------------------------------------------------

#[derive(Debug)]
enum Json {
    Str(String),
    Obj(Vec<(String, Json)>),
    Arr(Vec<Json>),
    Other,
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn ws(&mut self) {
        while self.pos < self.b.len() && self.b[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, c: u8) {
        self.ws();
        assert_eq!(
            self.b.get(self.pos),
            Some(&c),
            "JSON: expected {} at {}",
            c as char,
            self.pos
        );
        self.pos += 1;
    }

    fn string(&mut self) -> String {
        self.expect(b'"');
        let mut out = Vec::new();
        loop {
            let c = self.b[self.pos];
            self.pos += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = self.b[self.pos];
                    self.pos += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'u' => {
                            let h = std::str::from_utf8(&self.b[self.pos..self.pos + 4]).unwrap();
                            self.pos += 4;
                            let v = u32::from_str_radix(h, 16).unwrap();
                            let ch = char::from_u32(v).unwrap_or('?');
                            out.extend_from_slice(ch.to_string().as_bytes());
                        }
                        other => out.push(other),
                    }
                }
                c => out.push(c),
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    fn value(&mut self) -> Json {
        self.ws();
        match self.b[self.pos] {
            b'"' => Json::Str(self.string()),
            b'{' => {
                self.pos += 1;
                let mut v = Vec::new();
                self.ws();
                if self.b[self.pos] == b'}' {
                    self.pos += 1;
                    return Json::Obj(v);
                }
                loop {
                    let k = self.string();
                    self.expect(b':');
                    v.push((k, self.value()));
                    self.ws();
                    let c = self.b[self.pos];
                    self.pos += 1;
                    if c == b'}' {
                        return Json::Obj(v);
                    }
                    assert_eq!(c, b',', "JSON: bad object at {}", self.pos);
                }
            }
            b'[' => {
                self.pos += 1;
                let mut v = Vec::new();
                self.ws();
                if self.b[self.pos] == b']' {
                    self.pos += 1;
                    return Json::Arr(v);
                }
                loop {
                    v.push(self.value());
                    self.ws();
                    let c = self.b[self.pos];
                    self.pos += 1;
                    if c == b']' {
                        return Json::Arr(v);
                    }
                    assert_eq!(c, b',', "JSON: bad array at {}", self.pos);
                }
            }
            _ => {
                while self.pos < self.b.len() && !b",}]".contains(&self.b[self.pos]) {
                    self.pos += 1;
                }
                Json::Other
            }
        }
    }
}

fn get<'a>(o: &'a [(String, Json)], key: &str) -> Option<&'a Json> {
    o.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// What tshark said about one packet.
#[derive(Debug, Default)]
struct Dissected {
    /// `scion.*` fields in tree order, outside the quoted packet of SCMP errors and outside
    /// expert infos.
    fields: Vec<(String, String)>,
    /// Whether the SCION layer is there.
    scion: bool,
    /// Malformed expert infos (the dissector's own or Wireshark's).
    malformed: Vec<String>,
    /// Malformed expert infos of Wireshark's BFD dissector about the BFD message.
    bfd_malformed: Vec<String>,
    /// Lua errors and the dissector's internal-error notes.
    errors: Vec<String>,
    /// Protocols at the top level of the packet.
    layers: Vec<String>,
}

fn collect_fields(o: &[(String, Json)], out: &mut Vec<(String, String)>) {
    for (k, v) in o {
        if k == "_ws.expert" || k == "scion.scmp.quote_tree" {
            continue;
        }
        match v {
            Json::Str(s) if k.starts_with("scion.") => out.push((k.clone(), s.clone())),
            Json::Obj(o) => collect_fields(o, out),
            Json::Arr(items) => {
                for i in items {
                    match i {
                        Json::Str(s) if k.starts_with("scion.") => out.push((k.clone(), s.clone())),
                        Json::Obj(o) => collect_fields(o, out),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
}

/// `in_bfd`: inside Wireshark's BFD dissector, whose complaints about the BFD message go to
/// `bfd_malformed` (idint-wire does not decode BFD, so it cannot have an opinion).
fn scan(k: &str, v: &Json, in_bfd: bool, d: &mut Dissected) {
    let in_bfd = in_bfd || k == "bfd";
    match k {
        "_ws.malformed" | "scion.malformed" if in_bfd => d.bfd_malformed.push(k.to_string()),
        "_ws.malformed" | "scion.malformed" => d.malformed.push(k.to_string()),
        "_ws.lua.error" | "scion.internal_error" => d.errors.push(k.to_string()),
        _ => {}
    }
    match v {
        Json::Obj(o) => {
            if k == "_ws.expert" {
                let msg = match get(o, "_ws.expert.message") {
                    Some(Json::Str(s)) => s.clone(),
                    _ => String::new(),
                };
                // PI_MALFORMED.
                if matches!(get(o, "_ws.expert.group"), Some(Json::Str(g)) if g == "117440512") {
                    if in_bfd {
                        d.bfd_malformed.push(msg.clone());
                    } else {
                        d.malformed.push(msg.clone());
                    }
                }
                if get(o, "_ws.lua.error").is_some() || get(o, "scion.internal_error").is_some() {
                    d.errors.push(msg);
                }
            }
            for (k2, v2) in o {
                scan(k2, v2, in_bfd, d);
            }
        }
        Json::Arr(items) => {
            for i in items {
                scan(k, i, in_bfd, d);
            }
        }
        _ => {}
    }
}

/// Runs tshark with the dissector over `frames` (Ethernet); one result per frame.
fn tshark(frames: &[Vec<u8>], dir: &Path, name: &str) -> Vec<Dissected> {
    tshark_with(frames, dir, name, &[])
}

/// [`tshark`] with extra command-line arguments.
fn tshark_with(frames: &[Vec<u8>], dir: &Path, name: &str, extra: &[&str]) -> Vec<Dissected> {
    let pcap = dir.join(format!("{name}.pcap"));
    let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write(1_704_067_800_000_000_000 + i as u64 * 1000, f)
            .unwrap();
    }
    std::fs::write(&pcap, w.finish().unwrap()).unwrap();
    let out = Command::new("tshark")
        .arg("-n")
        .arg("-X")
        .arg(format!("lua_script:{}", lua().display()))
        .arg("-r")
        .arg(&pcap)
        .args(["-T", "json"])
        .args(extra)
        .env("HOME", dir)
        .output()
        .expect("running tshark");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tshark failed: {stderr}");
    assert!(
        !stderr.contains("Lua") && !stderr.contains("lua"),
        "tshark complained about the Lua script: {stderr}"
    );
    let doc = Reader {
        b: &out.stdout,
        pos: 0,
    }
    .value();
    let Json::Arr(packets) = doc else {
        panic!("tshark JSON is not an array")
    };
    assert_eq!(packets.len(), frames.len(), "tshark packet count");
    packets
        .iter()
        .map(|p| {
            let Json::Obj(p) = p else {
                panic!("packet is not an object")
            };
            let Some(Json::Obj(src)) = get(p, "_source") else {
                panic!("no _source")
            };
            let Some(Json::Obj(layers)) = get(src, "layers") else {
                panic!("no layers")
            };
            let mut d = Dissected {
                layers: layers.iter().map(|(k, _)| k.clone()).collect(),
                ..Dissected::default()
            };
            if let Some(Json::Obj(s)) = get(layers, "scion") {
                d.scion = true;
                collect_fields(s, &mut d.fields);
            }
            for (k, v) in layers {
                scan(k, v, false, &mut d);
            }
            d
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Packets
// ---------------------------------------------------------------------------------------

struct Pkt {
    name: String,
    /// The SCION packet (UDP payload of `frame`).
    scion: Vec<u8>,
    frame: Vec<u8>,
}

fn wrap(name: impl Into<String>, scion: Vec<u8>) -> Pkt {
    let frame = ethernet_ipv4_udp(
        "192.0.2.1:30041".parse().unwrap(),
        "192.0.2.2:30041".parse().unwrap(),
        &scion,
    );
    Pkt {
        name: name.into(),
        scion,
        frame,
    }
}

fn json_file(rel: &str) -> serde_json::Value {
    let p = repo().join("testdata").join(rel);
    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
}

/// Splices an HBH header into a SCION packet without extensions.
fn with_hbh(pkt: &[u8], hbh: &[u8]) -> Vec<u8> {
    let hl = usize::from(pkt[5]) * 4;
    let mut v = pkt[..hl].to_vec();
    assert_eq!(hbh[0], pkt[4], "the HBH header must name the packet's L4");
    v[4] = 200;
    let plen = u16::from_be_bytes([pkt[6], pkt[7]]) + hbh.len() as u16;
    v[6..8].copy_from_slice(&plen.to_be_bytes());
    v.extend_from_slice(hbh);
    v.extend_from_slice(&pkt[hl..]);
    v
}

fn golden() -> Vec<Pkt> {
    let mut out = Vec::new();
    let dir = repo().join("testdata/scion/slayers_golden");
    let mut bins: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    bins.sort();
    for b in bins {
        let name = b.file_name().unwrap().to_string_lossy().into_owned();
        out.push(wrap(format!("slayers/{name}"), std::fs::read(&b).unwrap()));
    }
    let cases = json_file("scion/router_cases.json");
    for c in cases["cases"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        let input = hex::decode(c["input_hex"].as_str().unwrap()).unwrap();
        out.push(wrap(format!("router_cases/{name}/input"), input));
        if let Some(o) = c["expected"]["output_hex"].as_str() {
            out.push(wrap(
                format!("router_cases/{name}/output"),
                hex::decode(o).unwrap(),
            ));
        }
    }
    for (file, key) in [
        ("scion/spao.json", "packet_hex"),
        ("scion/checksum.json", "packet_hex"),
    ] {
        let j = json_file(file);
        for (i, v) in j["vectors"].as_array().unwrap().iter().enumerate() {
            if let Some(h) = v[key].as_str() {
                out.push(wrap(format!("{file}[{i}]"), hex::decode(h).unwrap()));
            }
        }
    }
    // The reference HBH header with three ID-INT entries, on the golden UDP packet.
    let hbh = hex::decode(
        json_file("idint/idint.json")["hbh_example"]["hex"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let udp = std::fs::read(repo().join("testdata/scion/slayers_golden/scion-udp.bin")).unwrap();
    out.push(wrap("idint.json/hbh_example", with_hbh(&udp, &hbh)));
    out
}

/// The demo packet (two router entries, one encrypted) and requests with every verifier
/// kind, all instructions and source metadata, on the golden UDP packet.
fn idint_variants() -> Vec<Pkt> {
    let mut out = vec![wrap("demo", wire_tools::demo::demo_packet().unwrap())];
    let udp = std::fs::read(repo().join("testdata/scion/slayers_golden/scion-udp.bin")).unwrap();
    let ia: IsdAsn = "1-ff00:0:1".parse().unwrap();
    let verifiers = [
        Verifier::Destination,
        Verifier::Source,
        Verifier::ThirdParty {
            ia,
            host: HostAddr::V4("10.0.0.100".parse().unwrap()),
        },
        Verifier::ThirdParty {
            ia: "64-2:0:2c".parse().unwrap(),
            host: HostAddr::V6("fd00::1".parse().unwrap()),
        },
    ];
    for (n, verifier) in verifiers.into_iter().enumerate() {
        let mut r = RequestBuilder::new(0x1234_5678_9abc + n as u64);
        r.verifier = verifier;
        r.encrypt = n % 2 == 1;
        r.discard = n == 2;
        r.infrastructure = n == 3;
        r.mode = [
            AggregationMode::Off,
            AggregationMode::PerAs,
            AggregationMode::PerBorderRouter,
            AggregationMode::PerBorderRouterAndInternal,
        ][n];
        r.delay_hops = n as u8 * 7;
        r.inst_bitmap = [0xf, 0x8, 0x3, 0x0][n];
        r.instructions = [
            [
                Instruction(0x01),
                Instruction(0x41),
                Instruction(0x82),
                Instruction(0xc1),
            ],
            [
                Instruction(0x4f),
                Instruction(0x00),
                Instruction(0x8b),
                Instruction(0x00),
            ],
            [Instruction(0x00); 4],
            [
                Instruction(0x09),
                Instruction(0x53),
                Instruction(0x8f),
                Instruction(0xc2),
            ],
        ][n];
        r.source_port = 40000 + n as u16;
        r.stack_len_words = [12, 16, 64, 200][n];
        r.source_metadata.node_id = (n == 0).then_some(0xdead_beef);
        r.source_metadata.node_count = (n == 0).then_some(1);
        r.source_metadata.ingress_if = (n < 2).then_some(7);
        r.source_metadata.egress_if = (n == 0 || n == 2).then_some(9);
        r.source_metadata.slots[0] = (n == 0).then_some(SlotValue { len: 2, value: 64 });
        r.source_metadata.slots[2] = (n < 2).then_some(SlotValue {
            len: 6,
            value: 0xffff_ffff_ffff,
        });
        r.source_metadata.slots[3] = (n == 0 || n == 3).then_some(SlotValue {
            len: 8,
            value: u64::MAX - 5,
        });
        let mut hbh = vec![0u8; r.hbh_len()];
        r.emit_hbh(&mut hbh, 17)
            .unwrap_or_else(|e| panic!("request {n}: {e}"));
        out.push(wrap(format!("request/{n}"), with_hbh(&udp, &hbh)));
    }
    out
}

/// A named idint-pktgen configuration.
type PktgenMode = (&'static str, fn(&mut Options));

/// Traffic of idint-pktgen for the router benchmark's `br1a`, frames as the generator writes
/// them (its underlay ports 50000 and 30042 are in the dissector's default port range).
fn pktgen() -> Vec<Pkt> {
    let dir = repo().join("testdata/scion/config_examples/router_benchmark");
    let topo = Topology::load(dir.join("topology.json")).unwrap();
    let mut out = Vec::new();
    let modes: [PktgenMode; 7] = [
        ("plain", |_| {}),
        ("idint", |o| o.idint.percent = 100),
        ("idint-encrypt-src", |o| {
            o.idint.percent = 100;
            o.idint.encrypt = true;
            o.idint.verifier = VerifierChoice::Source;
            o.idint.inst_bitmap = 0xf;
        }),
        ("epic", |o| {
            o.kinds = vec![Kind::Epic];
            o.idint.percent = 50;
        }),
        ("ipv6", |o| {
            o.ipv6_hosts = true;
            o.idint.percent = 50;
            o.size = idint_pktgen::Size::Payload(0);
        }),
        ("big-stack", |o| {
            o.idint.percent = 100;
            o.idint.stack_words = 250;
            o.idint.instructions = [
                Instruction(0xc1),
                Instruction(0xc2),
                Instruction(0x44),
                Instruction(0x05),
            ];
        }),
        ("malformed", |o| {
            o.idint.percent = 50;
            o.malformed = 12;
        }),
    ];
    for (name, set) in modes {
        let mut o = Options::new(1_763_800_000_123_000_000);
        o.count = 36;
        set(&mut o);
        let mut g = Generator::new(&topo, "br1a", dir.join("keys"), o).unwrap();
        for i in 0..36 {
            let mut frame = Vec::new();
            g.frame(i, &mut frame).unwrap();
            let (_, scion) = scion_payload(LINKTYPE_ETHERNET, &frame).unwrap();
            out.push(Pkt {
                name: format!("pktgen/{name}/{i}"),
                scion: scion.to_vec(),
                frame: frame.clone(),
            });
        }
    }
    out
}

/// Probes through test-kit's chain of five real scion-dp routers, captured after each router:
/// ID-INT stacks as routers fill, authenticate, aggregate and (on request) encrypt them, for
/// every aggregation mode, both instruction sets, with and without encryption.
fn router_chain() -> Vec<Pkt> {
    use test_kit::chain::{Ask, Chain};
    let mut out = Vec::new();
    let mut n = 0;
    for encrypt in [false, true] {
        for ask in [Ask::Latency, Ask::Carbon] {
            for mode in [AggregationMode::Off, AggregationMode::PerAs] {
                let mut chain = Chain::with_request(1_763_800_000_123_000_000, encrypt, ask, |r| {
                    r.mode = mode;
                    r.inst_bitmap = if n % 2 == 0 { 0xf } else { 0x8 };
                });
                for probe in 0..3 {
                    let (_, packets) = chain.probe_packets();
                    for (r, p) in packets.into_iter().enumerate() {
                        out.push(wrap(format!("chain/{n}/probe{probe}/after-router{r}"), p));
                    }
                }
                n += 1;
            }
        }
    }
    out
}

/// Truncated and corrupted copies of `base`: cut at many lengths (the underlay carrying only
/// what is left) and every header byte inverted in turn.
fn corrupted(base: &[Pkt]) -> Vec<Pkt> {
    let mut out = Vec::new();
    for p in base {
        let n = p.scion.len();
        let step = (n / 40).max(1);
        // (An empty UDP payload goes to no dissector at all.)
        for cut in (1..n).step_by(step).chain([n.saturating_sub(1)]) {
            out.push(wrap(
                format!("{}/cut{cut}", p.name),
                p.scion[..cut].to_vec(),
            ));
        }
        for i in 0..n.min(320) {
            let mut v = p.scion.clone();
            v[i] ^= 0xff;
            out.push(wrap(format!("{}/flip{i}", p.name), v));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------------------

#[derive(Default, Debug)]
struct Tally {
    packets: usize,
    valid: usize,
    malformed: usize,
    fields: usize,
    /// ID-INT stack entries among the compared fields, and how many of them encrypted.
    entries: usize,
    encrypted_entries: usize,
}

fn compare(pkts: &[Pkt], name: &str) -> (Tally, Vec<String>) {
    let dir = std::env::temp_dir().join(format!("idint-dissector-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let frames: Vec<Vec<u8>> = pkts.iter().map(|p| p.frame.clone()).collect();
    let got = tshark(&frames, &dir, name);
    let mut t = Tally::default();
    let mut problems = Vec::new();
    for (p, d) in pkts.iter().zip(&got) {
        t.packets += 1;
        let want: Fields = decode(&p.scion);
        if !d.errors.is_empty() {
            problems.push(format!("{}: Lua error {:?}", p.name, d.errors));
            continue;
        }
        if !d.scion {
            problems.push(format!(
                "{}: no SCION layer (layers {:?})",
                p.name, d.layers
            ));
            continue;
        }
        match &want.malformed {
            Some(why) => {
                t.malformed += 1;
                if d.malformed.is_empty() && d.bfd_malformed.is_empty() {
                    problems.push(format!(
                        "{}: idint-wire rejects it ({why}) but tshark flags nothing; hex {}",
                        p.name,
                        short_hex(&p.scion)
                    ));
                }
            }
            None => {
                t.valid += 1;
                if !d.malformed.is_empty() {
                    problems.push(format!(
                        "{}: valid for idint-wire, tshark says malformed {:?}; hex {}",
                        p.name,
                        d.malformed,
                        short_hex(&p.scion)
                    ));
                    continue;
                }
                let want: Vec<(String, String)> = want
                    .fields
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect();
                if want != d.fields {
                    let at = want
                        .iter()
                        .zip(&d.fields)
                        .position(|(a, b)| a != b)
                        .unwrap_or(want.len().min(d.fields.len()));
                    problems.push(format!(
                        "{}: fields differ at #{at}: idint-wire {:?} / tshark {:?} ({} vs {} fields); hex {}",
                        p.name,
                        want.get(at),
                        d.fields.get(at),
                        want.len(),
                        d.fields.len(),
                        short_hex(&p.scion)
                    ));
                    continue;
                }
                t.fields += want.len();
                t.entries += want
                    .iter()
                    .filter(|(k, _)| k == "scion.idint.entry.source")
                    .count();
                t.encrypted_entries += want
                    .iter()
                    .filter(|(k, v)| k == "scion.idint.entry.encrypted" && v == "1")
                    .count();
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("{name}: {t:?}");
    (t, problems)
}

fn short_hex(b: &[u8]) -> String {
    let h = hex::encode(&b[..b.len().min(200)]);
    if b.len() > 200 { format!("{h}...") } else { h }
}

fn assert_no_problems(problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn golden_packets_match_idint_wire_field_by_field() {
    require!(Need::Tshark);
    let mut pkts = golden();
    pkts.extend(idint_variants());
    let (t, problems) = compare(&pkts, "golden");
    assert_no_problems(&problems);
    // 7 slayers packets, 41 router inputs and their outputs, SPAO and checksum vectors, the
    // ID-INT reference header, the demo and the four requests.
    assert!(t.valid >= 90, "{t:?}");
    assert!(t.fields >= 5000, "{t:?}");
}

#[test]
fn generated_traffic_matches_idint_wire_field_by_field() {
    require!(Need::Tshark);
    let mut pkts = pktgen();
    pkts.extend(router_chain());
    let (t, problems) = compare(&pkts, "pktgen");
    assert_no_problems(&problems);
    assert_eq!(t.packets, 7 * 36 + 8 * 5 * 3);
    assert!(t.valid >= 230 + 120, "{t:?}");
    assert!(
        t.encrypted_entries >= 50,
        "the chain's encrypted entries: {t:?}"
    );
    assert!(t.malformed >= 1, "the generator's truncated packets: {t:?}");
}

#[test]
fn truncated_and_corrupted_packets_are_flagged_without_lua_errors() {
    require!(Need::Tshark);
    let mut base: Vec<Pkt> = idint_variants();
    let g = golden();
    for want in [
        "slayers/scion-scmp-int-conn-down.bin",
        "slayers/scion-udp-extn.bin",
        "slayers/scion-bfd.bin",
        "router_cases/onehop_outbound/input",
        "router_cases/epic_inbound_last_hop/input",
        "router_cases/traceroute_ingress_alert/output",
        "scion/spao.json[0]",
        "idint.json/hbh_example",
    ] {
        let p = g
            .iter()
            .find(|p| p.name == want)
            .unwrap_or_else(|| panic!("{want}"));
        base.push(wrap(p.name.clone(), p.scion.clone()));
    }
    // Router-filled stacks: plain (mode 0, all bitmap items) and encrypted (per AS).
    base.extend(router_chain().into_iter().filter(|p| {
        p.name == "chain/0/probe0/after-router3" || p.name == "chain/5/probe0/after-router3"
    }));
    assert_eq!(base.len(), 15);
    let pkts = corrupted(&base);
    let (t, problems) = compare(&pkts, "corrupted");
    assert_no_problems(&problems);
    // Every cut (about 40 per packet) and the header flips idint-wire rejects.
    assert!(t.malformed >= 700, "{t:?}");
    assert!(t.valid >= 2000, "{t:?}");
}

/// The ports the dissector registers: the default range, the `scion.ports` preference,
/// Decode As, and the (opt-in) heuristic.
#[test]
fn registration_follows_ports_preference_decode_as_and_heuristic() {
    require!(Need::Tshark);
    let scion = std::fs::read(repo().join("testdata/scion/slayers_golden/scion-udp.bin")).unwrap();
    let frame = |src: &str, dst: &str| {
        ethernet_ipv4_udp(src.parse().unwrap(), dst.parse().unwrap(), &scion)
    };
    let dir = std::env::temp_dir().join(format!("idint-dissector-{}-ports", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let default_ports: Vec<Vec<u8>> = [
        "10.0.0.1:30041",
        "10.0.0.1:30042",
        "10.0.0.1:30051",
        "10.0.0.1:50000",
    ]
    .iter()
    .map(|d| frame("10.0.0.2:41000", d))
    .collect();
    for d in tshark(&default_ports, &dir, "default") {
        assert!(
            d.scion && d.malformed.is_empty() && d.errors.is_empty(),
            "{d:?}"
        );
    }
    let other = vec![frame("10.0.0.2:41000", "10.0.0.1:40000")];
    assert!(
        !tshark(&other, &dir, "other")[0].scion,
        "port 40000 is not SCION by default"
    );
    for extra in [
        &["-o", "scion.ports:40000"][..],
        &["-d", "udp.port==40000,scion"][..],
        &["-o", "scion.heuristic:TRUE"][..],
    ] {
        let d = &tshark_with(&other, &dir, "other", extra)[0];
        assert!(
            d.scion && d.malformed.is_empty() && d.errors.is_empty(),
            "{extra:?}: {d:?}"
        );
        assert_eq!(
            d.fields,
            decode(&scion)
                .fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<Vec<_>>()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `tools/wireshark/install.sh` copies the dissector into the personal plugin folder, where
/// tshark finds it without `-X`; a second run changes nothing; `--uninstall` removes it.
#[test]
fn install_script_is_idempotent_and_tshark_loads_the_plugin() {
    require!(Need::Tshark);
    let home = std::env::temp_dir().join(format!("idint-dissector-{}-home", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    let script = repo().join("tools/wireshark/install.sh");
    let run = |args: &[&str]| {
        let out = Command::new("bash")
            .arg(&script)
            .args(args)
            .env("HOME", &home)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let installed = home.join(".local/lib/wireshark/plugins/scion-idint.lua");
    assert!(run(&[]).contains("installed"));
    assert_eq!(
        std::fs::read(&installed).unwrap(),
        std::fs::read(lua()).unwrap()
    );
    assert!(run(&[]).contains("up to date"));
    let plugins = Command::new("tshark")
        .args(["-G", "plugins"])
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&plugins.stdout).contains("scion-idint.lua"),
        "tshark does not list the plugin"
    );
    assert!(run(&["--uninstall"]).contains("removed"));
    assert!(!installed.exists());
    let _ = std::fs::remove_dir_all(&home);
}
