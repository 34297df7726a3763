//! Verifies the ID-INT telemetry of packets a router forwarded, as their destination host
//! would: every source entry with the host-to-host key the generator signed it with, every
//! router entry with the router AS's AS-to-host key for the verifier (derived from its
//! `master0.key`), MAC chain, decryption, freshness and replays (`idint_wire::idint::verify`).
//! The main job and tests use it to show that the router's telemetry is right end to end.

use std::collections::HashSet;
use std::io::Read;

use drkey::Protocol;
use drkey::provider::{Level1Provider, LocalProvider};
use idint_wire::crypto::Aes128Enc;
use idint_wire::idint::crypto::verify_stack;
use idint_wire::idint::verify::{
    DecodedEntry, OpenError, ReplayError, ReplayWindow, check_instructions, decode_entries,
};
use idint_wire::idint::{IdInt, Verifier};
use idint_wire::packet::Packet;
use idint_wire::{HostAddr, IsdAsn};
use wire_tools::pcap::{PcapReader, scion_payload};

use crate::GenError;
use crate::keys::KeyRing;

/// How old a source timestamp may be at the verifier's clock: an hour, since a capture may
/// be verified a while after it was sent.
pub const FRESHNESS_WINDOW_NS: u64 = 3_600_000_000_000;

/// How far ahead of the verifier's clock a source timestamp may be.
pub const CLOCK_SKEW_NS: u64 = 3_600_000_000_000;

/// The outcome of verifying a capture.
#[derive(Debug, Default)]
pub struct Verified {
    /// Frames read.
    pub frames: u64,
    /// Frames carrying an ID-INT request.
    pub with_idint: u64,
    /// Stacks that verified and decrypted.
    pub ok: u64,
    /// Stacks that failed, with the first few reasons.
    pub failed: u64,
    /// Up to `sample` failure descriptions.
    pub failures: Vec<String>,
    /// Up to `sample` verified stacks: (source ISD-AS, destination ISD-AS, entries).
    pub samples: Vec<(IsdAsn, IsdAsn, Vec<DecodedEntry>)>,
}

/// Verifies every ID-INT stack in the pcap `input` (frames as the router sent them). The
/// router's AS is `router_ia` with secret `router_master0`; other ASes' secrets come from
/// `keys` (the generator's ring). `now_ns` is the verifier's clock (freshness; the DRKey
/// epoch of a stack is that of its source timestamp). The keys are those of the verifier each
/// request names. An input that is not a readable pcap is a [`GenError::Capture`].
pub fn verify_capture<R: Read>(
    input: R,
    keys: &mut KeyRing,
    router_ia: IsdAsn,
    router_master0: &[u8],
    epoch_secs: u32,
    now_ns: u64,
    sample: usize,
) -> Result<Verified, GenError> {
    let io = GenError::Capture;
    let mut reader = PcapReader::new(input).map_err(io)?;
    let provider = LocalProvider::new(router_ia, router_master0, epoch_secs)
        .map_err(|e| GenError::Key(e.to_string()))?;
    // AS-to-host keys by verifier and DRKey epoch.
    let mut as_keys: Vec<((IsdAsn, HostAddr, u64), Aes128Enc)> = Vec::new();
    // A long freshness window, and every (timestamp, port) pair seen, however many: a capture may hold more stacks than any
    // fixed-size replay window (whose 1 MiB of slots would also be built on the stack).
    let freshness = ReplayWindow::<1>::new(FRESHNESS_WINDOW_NS, CLOCK_SKEW_NS);
    let mut seen: HashSet<(u64, u16)> = HashSet::new();
    let mut out = Verified::default();
    while let Some(rec) = reader.next_record().map_err(io)? {
        out.frames += 1;
        let Ok((_, scion)) = scion_payload(reader.link_type(), &rec.data) else {
            continue;
        };
        let mut buf = scion.to_vec();
        let Ok(p) = Packet::parse(&buf) else {
            continue;
        };
        let (src_ia, dst_ia) = (p.header.src_ia(), p.header.dst_ia());
        let (src_host, dst_host) = (p.header.src_host(), p.header.dst_host());
        let Some(range) = p.hbh_range() else {
            continue;
        };
        let Ok(Some(mut st)) = IdInt::locate(&mut buf[range]) else {
            continue;
        };
        out.with_idint += 1;
        // The keys are those of the verifier the request names (`idint.md` §9 step 2, §10):
        // source entry K(src:src host -> verifier), router entries K(router AS -> verifier).
        let (ver_ia, ver_host) = match st.main().verifier() {
            Verifier::Destination => (dst_ia, dst_host),
            Verifier::Source => (src_ia, src_host),
            Verifier::ThirdParty { ia, host } => (ia, host),
        };
        // The DRKey epoch is the one of the packet's source timestamp (`idint.md` §10, §11),
        // reconstructed from the 48-bit field with the verifier's clock; a stale or future
        // timestamp is refused below whatever key is used.
        let (ts, port) = (st.main().source_timestamp(), st.main().source_port());
        let fresh = freshness.fresh(ts, now_ns);
        let t_s = fresh.unwrap_or(now_ns) / 1_000_000_000;
        let epoch = t_s / u64::from(epoch_secs.max(1));
        let source_key = keys
            .idint_host_key(src_ia, src_host, ver_ia, ver_host, t_s)?
            .clone();
        let id = (ver_ia, ver_host, epoch);
        if !as_keys.iter().any(|(k, _)| *k == id) {
            let (_, l1) = provider
                .level1(Protocol::IDINT, router_ia, ver_ia, t_s)
                .map_err(|e| GenError::Key(e.to_string()))?;
            let k = drkey::as_host(&l1.cipher(), &ver_host)
                .map_err(|e| GenError::Key(e.to_string()))?;
            as_keys.push((id, k.cipher()));
        }
        let router_key = &as_keys
            .iter()
            .find(|(k, _)| *k == id)
            .map(|(_, c)| c.clone())
            .ok_or_else(|| GenError::Key("AS-to-host key".into()))?;
        // As `open` does, with the pairs kept in `seen`: fresh, not seen before, MACs right,
        // known instructions; only then is the pair recorded.
        let opened = fresh.map_err(OpenError::Replay).and_then(|full| {
            if seen.contains(&(full, port)) {
                return Err(OpenError::Replay(ReplayError::Replayed));
            }
            let n = verify_stack(&mut st, &source_key, |_, _| Some(router_key))
                .map_err(OpenError::Verify)?;
            check_instructions(&st.main()).map_err(OpenError::Decode)?;
            seen.insert((full, port));
            Ok(n)
        });
        match opened {
            Ok(_) => {
                out.ok += 1;
                if out.samples.len() < sample {
                    let entries = decode_entries(&st).filter_map(Result::ok).collect();
                    out.samples.push((src_ia, dst_ia, entries));
                }
            }
            Err(e) => {
                out.failed += 1;
                if out.failures.len() < sample {
                    out.failures.push(format!("frame {}: {e}", out.frames));
                }
            }
        }
    }
    Ok(out)
}

/// One line per entry of a verified stack, for people.
pub fn describe(entries: &[DecodedEntry]) -> String {
    let mut s = String::new();
    for e in entries {
        let m = &e.metadata;
        let role = if e.source { "source" } else { "router" };
        s.push_str(&format!(
            "    entry {} ({role}{}{}, hop {}):",
            e.index,
            if e.encrypted { ", decrypted" } else { "" },
            if e.aggregated { ", aggregated" } else { "" },
            e.hop
        ));
        if let Some(n) = m.node_id {
            s.push_str(&format!(" node_id={n}"));
        }
        if let Some(n) = m.node_count {
            s.push_str(&format!(" node_count={n}"));
        }
        if let Some(i) = m.ingress_if {
            s.push_str(&format!(" ingress_if={i}"));
        }
        if let Some(i) = m.egress_if {
            s.push_str(&format!(" egress_if={i}"));
        }
        for (k, v) in m.slots.iter().enumerate() {
            if let Some(v) = v {
                s.push_str(&format!(" slot{}={}", k + 1, v.value));
            }
        }
        s.push('\n');
    }
    s
}
