//! `idint-pktgen`: writes pcaps of valid SCION / ID-INT traffic for one border router.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser};
use idint_pktgen::scenario::{Scenario, aggregation_mode};
use idint_pktgen::{
    GenError, Generator, IdIntOptions, Kind, Options, PacketInfo, Size, VerifierChoice,
};
use idint_wire::IsdAsn;
use idint_wire::idint::Instruction;

/// Writes pcaps (Ethernet/IP/UDP underlay) of valid SCION traffic for the border router
/// ROUTER of a topology: transit, crossover, peering, inbound, outbound and EPIC-HP, with or
/// without ID-INT requests, correct hop-field MACs and timestamps relative to --now.
///
/// The router's hop fields are MACed with the key derived from KEYS/master0.key; other ASes'
/// with the keys given by --as-keys, else with deterministic secrets
/// (SHA-256("idint-pktgen master secret " || ISD-AS)[..16]). ID-INT source entries are signed
/// with the DRKey host-to-host key derived from the source AS's secret.
#[derive(Parser, Debug)]
#[command(name = "idint-pktgen", version)]
struct Cli {
    /// topology.json (scionproto or appliance format).
    #[arg(long, short = 't', required_unless_present = "scenario")]
    topology: Option<PathBuf>,
    /// Border router id, e.g. br1-ff00_0_110-1.
    #[arg(long, short = 'r', required_unless_present = "scenario")]
    router: Option<String>,
    /// Scenario file (TOML, see pktgen-configs/): topology, router, keys and the generation
    /// options. Only --now and, if given, --count, --topology, --router and --keys of the
    /// command line apply on top of it.
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// The router's keys directory (master0.key). Default: `keys` next to the topology.
    #[arg(long, short = 'k')]
    keys: Option<PathBuf>,
    /// Output pcap (all packets in one file).
    #[arg(long, short = 'o', required_unless_present_any = ["out_dir", "list_shapes", "verify"])]
    out: Option<PathBuf>,
    /// Output directory with one pcap per ingress: ext-<ifid>.pcap, sibling-<ifid>.pcap,
    /// internal.pcap.
    #[arg(long, conflicts_with = "out")]
    out_dir: Option<PathBuf>,
    /// Number of packets.
    #[arg(long, short = 'n', default_value_t = 1000)]
    count: u64,
    /// The router's clock: Unix seconds (fractions allowed) or `now`; with --verify, the
    /// verifier's clock (freshness of the source timestamps).
    #[arg(long, default_value = "now")]
    now: String,
    /// Kinds, comma-separated: transit, crossover, peering, in, out, epic (default all the
    /// topology allows).
    #[arg(long, value_delimiter = ',')]
    kinds: Vec<Kind>,
    /// Number of flows (source host/port, destination port, flow ID).
    #[arg(long, default_value_t = 16)]
    flows: u32,
    /// Whole Ethernet frame size in bytes (e.g. 172); the payload fills the rest.
    #[arg(long, conflicts_with = "payload")]
    size: Option<usize>,
    /// UDP payload size in bytes (default 64); SCION packets are limited to 65000 bytes.
    #[arg(long)]
    payload: Option<usize>,
    /// Percentage of packets carrying an ID-INT request (0-100).
    #[arg(long, default_value_t = 0)]
    idint: u8,
    /// ID-INT aggregation modes used in turn: 0 off, 1 per AS, 2 per border router,
    /// 3 per border router and internal.
    #[arg(long, value_delimiter = ',', default_value = "0,1,2,3")]
    idint_modes: Vec<u8>,
    /// ID-INT instruction codes (up to 4, hex like 0x82 or decimal).
    #[arg(long, value_delimiter = ',', default_value = "0x82,0x83,0x4f,0x8b")]
    idint_instructions: Vec<String>,
    /// ID-INT InstF bitmap (0x8 node ID, 0x4 node count, 0x2 ingress, 0x1 egress interface).
    #[arg(long, default_value = "0xb")]
    idint_bitmap: String,
    /// Ask routers to encrypt their ID-INT entries.
    #[arg(long)]
    idint_encrypt: bool,
    /// ID-INT verifier: dst (destination host) or src (source host).
    #[arg(long, default_value = "dst")]
    idint_verifier: String,
    /// ID-INT stack space in 4-byte words.
    #[arg(long, default_value_t = 16)]
    idint_stack_words: u8,
    /// Number of malformed packets among --count (truncated, bad MAC, expired in turn).
    #[arg(long, default_value_t = 0)]
    malformed: u64,
    /// Age of the path timestamps at --now, seconds.
    #[arg(long, default_value_t = 300)]
    path_age: u32,
    /// Hop-field ExpTime (lifetime (1 + ExpTime) * 337.5 s).
    #[arg(long, default_value_t = 63)]
    exp_time: u8,
    /// DRKey epoch length, seconds (360 to 259200, SCION's limits).
    #[arg(long, default_value_t = 86_400)]
    drkey_epoch: u32,
    /// Give hosts outside the router's AS IPv6 addresses.
    #[arg(long)]
    ipv6_hosts: bool,
    /// Gap between pcap timestamps, nanoseconds (the last packet's must be before 2106).
    #[arg(long, default_value_t = 1000)]
    gap_ns: u64,
    /// Keys directory of another AS, as ISD-AS=DIR (repeatable).
    #[arg(long)]
    as_keys: Vec<String>,
    /// Also write one line per packet (index, ingress, kind, shape, malformed, expected).
    #[arg(long)]
    expect: Option<PathBuf>,
    /// Print the shapes the topology allows and exit.
    #[arg(long)]
    list_shapes: bool,
    /// Instead of generating: verify and decrypt, as the destination host would, the ID-INT
    /// telemetry of every packet in this capture of the router's output; print a sample.
    #[arg(long, conflicts_with_all = ["out", "out_dir"])]
    verify: Option<PathBuf>,
    /// Verified stacks to print with --verify.
    #[arg(long, default_value_t = 3)]
    sample: usize,
}

use idint_pktgen::scenario::parse_byte as parse_u8;

fn now_ns(s: &str) -> Result<u64, String> {
    if s == "now" {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| e.to_string())?;
        return Ok(d.as_nanos() as u64);
    }
    let v: f64 = s
        .parse()
        .map_err(|_| format!("--now {s:?}: expected Unix seconds or `now`"))?;
    if !(0.0..4.0e9).contains(&v) {
        return Err(format!("--now {s:?}: out of range"));
    }
    Ok((v * 1e9) as u64)
}

fn options(cli: &Cli) -> Result<Options, String> {
    let mut o = Options::new(now_ns(&cli.now)?);
    if !cli.kinds.is_empty() {
        o.kinds = cli.kinds.clone();
    }
    o.flows = cli.flows;
    o.size = match (cli.size, cli.payload) {
        (Some(f), _) => Size::Frame(f),
        (None, Some(p)) => Size::Payload(p),
        (None, None) => Size::Payload(64),
    };
    let modes = cli
        .idint_modes
        .iter()
        .map(|&m| aggregation_mode(m).map_err(|_| format!("--idint-modes: {m} is not 0-3")))
        .collect::<Result<Vec<_>, _>>()?;
    if cli.idint_instructions.len() > 4 {
        return Err("--idint-instructions: at most 4".into());
    }
    let mut instructions = [Instruction::NOP; 4];
    for (slot, s) in instructions.iter_mut().zip(&cli.idint_instructions) {
        *slot = Instruction(parse_u8(s).map_err(|e| format!("--idint-instructions: {e}"))?);
    }
    o.idint = IdIntOptions {
        percent: cli.idint,
        modes,
        inst_bitmap: parse_u8(&cli.idint_bitmap).map_err(|e| format!("--idint-bitmap: {e}"))?,
        instructions,
        encrypt: cli.idint_encrypt,
        verifier: match cli.idint_verifier.as_str() {
            "dst" | "destination" => VerifierChoice::Destination,
            "src" | "source" => VerifierChoice::Source,
            v => return Err(format!("--idint-verifier {v:?}: expected dst or src")),
        },
        stack_words: cli.idint_stack_words,
    };
    o.count = cli.count;
    o.malformed = cli.malformed;
    o.path_age_secs = cli.path_age;
    o.exp_time = cli.exp_time;
    idint_pktgen::check_drkey_epoch(cli.drkey_epoch)?;
    o.drkey_epoch_secs = cli.drkey_epoch;
    o.ipv6_hosts = cli.ipv6_hosts;
    o.gap_ns = cli.gap_ns;
    for a in &cli.as_keys {
        let (ia, dir) = a
            .split_once('=')
            .ok_or_else(|| format!("--as-keys {a:?}: expected ISD-AS=DIR"))?;
        let ia: IsdAsn = ia.parse().map_err(|e| format!("--as-keys {a:?}: {e}"))?;
        o.as_keys.push((ia, PathBuf::from(dir)));
    }
    Ok(o)
}

fn line(info: &PacketInfo, label: &str) -> String {
    format!(
        "{},{:?},{},{},{},{}",
        info.index,
        info.ingress,
        info.kind,
        label,
        info.malformed.map_or("-".to_string(), |m| m.to_string()),
        info.expect
    )
}

/// The router (topology, id, keys) and options to generate for: from the command line, or
/// from the scenario file with the command line's explicit --count, --topology, --router and
/// --keys on top.
fn target(cli: &Cli, count_given: bool) -> Result<(PathBuf, String, PathBuf, Options), String> {
    let next_to = |topology: &PathBuf| {
        topology
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join("keys")
    };
    let Some(path) = &cli.scenario else {
        let topology = cli.topology.clone().ok_or("--topology is required")?;
        let router = cli.router.clone().ok_or("--router is required")?;
        let keys = cli.keys.clone().unwrap_or_else(|| next_to(&topology));
        return Ok((topology, router, keys, options(cli)?));
    };
    let s = Scenario::load(path)?;
    let mut o = s.options(now_ns(&cli.now)?)?;
    if count_given {
        o.count = cli.count;
    }
    let topology = cli.topology.clone().unwrap_or_else(|| s.topology_path());
    let keys = match (&cli.keys, &cli.topology) {
        (Some(k), _) => k.clone(),
        (None, Some(t)) => next_to(t),
        (None, None) => s.keys_path(),
    };
    let router = cli.router.clone().unwrap_or_else(|| s.router.clone());
    Ok((topology, router, keys, o))
}

fn run(cli: &Cli, count_given: bool) -> Result<(), String> {
    let (topology, router, keys, opts) = target(cli, count_given)?;
    let topo = scion_topology::Topology::load(&topology).map_err(|e| e.to_string())?;
    let mut g = Generator::new(&topo, &router, &keys, opts).map_err(|e| e.to_string())?;
    if let Some(path) = &cli.verify {
        let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let master = scion_topology::MasterKeys::load(&keys).map_err(|e| e.to_string())?;
        let ia = g.router_config().local_ia;
        let now = now_ns(&cli.now)?;
        let v = idint_pktgen::verify::verify_capture(
            std::io::BufReader::new(f),
            g.keys_mut(),
            ia,
            &master.master0,
            cli.drkey_epoch,
            now,
            cli.sample,
        )
        .map_err(|e| match e {
            GenError::Capture(io) => format!("--verify {}: {io}", path.display()),
            e => e.to_string(),
        })?;
        println!(
            "ID-INT telemetry in {}: {} frames, {} with ID-INT, {} verified and decrypted, {} failed",
            path.display(),
            v.frames,
            v.with_idint,
            v.ok,
            v.failed
        );
        for (src, dst, entries) in &v.samples {
            println!("  {src} -> {dst}:");
            print!("{}", idint_pktgen::verify::describe(entries));
        }
        for f in &v.failures {
            println!("  FAILED {f}");
        }
        if v.failed > 0 {
            println!(
                "  (verifier's clock {:.3} s (--now); source timestamps count as fresh from {} s \
                 before it to {} s after it)",
                now as f64 / 1e9,
                idint_pktgen::verify::FRESHNESS_WINDOW_NS / 1_000_000_000,
                idint_pktgen::verify::CLOCK_SKEW_NS / 1_000_000_000
            );
        }
        return if v.failed == 0 {
            Ok(())
        } else {
            Err(format!("{} stacks failed verification", v.failed))
        };
    }
    if cli.list_shapes {
        for i in 0..g.shape_count() {
            println!("{i}: {}", g.shape_label(i).unwrap_or("?"));
        }
        return Ok(());
    }
    let labels: Vec<String> = (0..g.shape_count())
        .map(|i| g.shape_label(i).unwrap_or("?").to_string())
        .collect();
    let mut expect = match &cli.expect {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?,
        )),
        None => None,
    };
    let mut expect_err = None;
    let mut on_packet = |info: &PacketInfo| {
        if let Some(w) = expect.as_mut()
            && let Err(e) = writeln!(w, "{}", line(info, &labels[info.shape]))
        {
            expect_err.get_or_insert(e);
        }
    };
    let started = std::time::Instant::now();
    let summary = if let Some(dir) = &cli.out_dir {
        g.write_pcaps_by_ingress(dir, &mut on_packet)
            .map_err(|e| e.to_string())?
    } else {
        let path = cli.out.as_ref().ok_or("--out or --out-dir is required")?;
        let f = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let (_, s) = g
            .write_pcap(std::io::BufWriter::new(f), &mut on_packet)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        s
    };
    if let Some(e) = expect_err {
        return Err(format!("--expect: {e}"));
    }
    if let Some(mut w) = expect {
        w.flush().map_err(|e| format!("--expect: {e}"))?;
    }
    eprintln!(
        "{summary} ({} shapes, {:.2} s)",
        g.shape_count(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let count_given = matches.value_source("count") == Some(ValueSource::CommandLine);
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    match run(&cli, count_given) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("idint-pktgen: {e}");
            ExitCode::FAILURE
        }
    }
}
