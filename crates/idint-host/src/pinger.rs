//! The sending side of `idint-ping send`, I/O-free: pings built on a path from the paths
//! file, replies checked and turned into per-hop rows (table and JSON).

use std::fmt::Write as _;

use idint_wire::idint::Verifier;
use idint_wire::packet::{L4, Packet};
use idint_wire::scion::PathType;
use serde::Serialize;

use idint_wire::{HostAddr, IsdAsn};

use crate::keys::{HostKeys, KeyError};
use crate::packet::{
    Endpoint, SLOT_ENERGY, SLOT_QUEUE, SLOT_TIMESTAMP, SLOT_UTIL, build_udp, header_len,
    ping_request,
};
use crate::paths::PathEntry;
use crate::payload::{PayloadError, Ping, Reply, entry_flags};

const NS_PER_S: u64 = 1_000_000_000;
/// The 48-bit timestamp cycle.
const TS_MASK: u64 = (1 << 48) - 1;

/// Why a ping could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// The source key is not available.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The packet cannot be encoded.
    #[error("building the ping: {0}")]
    Wire(idint_wire::Error),
}

/// Why a received datagram is not a reply to this pinger.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// Not a SCION/UDP packet.
    #[error("not a SCION/UDP packet")]
    NotUdp,
    /// From or to another endpoint.
    #[error("reply of another flow")]
    OtherFlow,
    /// The payload is no reply.
    #[error(transparent)]
    Payload(#[from] PayloadError),
}

/// Sends pings from `src` to `dst` on one path.
pub struct Pinger {
    /// This host.
    pub src: Endpoint,
    /// The destination.
    pub dst: Endpoint,
    /// The path.
    pub path: PathEntry,
    /// Ask routers to encrypt their entries.
    pub encrypt: bool,
    /// Who verifies the telemetry: the destination (`None`) or this third party (for
    /// example the collector, so that it can verify the destination's host reports).
    pub verifier: Option<(IsdAsn, HostAddr)>,
    keys: HostKeys,
}

impl Pinger {
    /// A pinger; `keys` must hold the source AS's secret.
    pub fn new(
        src: Endpoint,
        dst: Endpoint,
        path: PathEntry,
        encrypt: bool,
        keys: HostKeys,
    ) -> Self {
        Pinger {
            src,
            dst,
            path,
            encrypt,
            verifier: None,
            keys,
        }
    }

    /// Writes ping `seq` at `now_ns` into `out` (SCION bytes).
    pub fn build(&mut self, seq: u32, now_ns: u64, out: &mut Vec<u8>) -> Result<(), BuildError> {
        let ping = Ping {
            seq,
            sent_ns: now_ns,
            hop_ias: self.path.hops.iter().map(|h| h.ia).collect(),
        };
        let mut payload = Vec::with_capacity(ping.encoded_len());
        ping.encode(&mut payload)
            .ok_or(BuildError::Wire(idint_wire::Error::invalid(
                idint_wire::Layer::Udp,
                "hop count",
            )))?;
        let fixed = header_len(&self.src.host, &self.dst.host, self.path.raw.len())
            + idint_wire::udp::HEADER_LEN
            + payload.len();
        let max_hbh = usize::from(self.path.mtu).saturating_sub(fixed);
        let (verifier, verifier_addr) = match self.verifier {
            None => (Verifier::Destination, (self.dst.ia, self.dst.host)),
            Some((ia, host)) => (Verifier::ThirdParty { ia, host }, (ia, host)),
        };
        let req = ping_request(
            now_ns,
            self.src.port,
            self.encrypt,
            verifier,
            self.path.hops.len(),
            max_hbh,
        );
        let key = self.keys.source_key(
            (self.src.ia, self.src.host),
            verifier_addr,
            now_ns / NS_PER_S,
        )?;
        let path_type = if self.path.is_empty_path() {
            PathType::Empty
        } else {
            PathType::Scion
        };
        build_udp(
            self.src,
            self.dst,
            path_type,
            &self.path.raw,
            Some((&req, &key)),
            &payload,
            out,
        )
        .map_err(BuildError::Wire)
    }

    /// Checks that `packet` (SCION bytes) is a reply from the destination to this host and
    /// decodes its payload.
    pub fn reply(&self, packet: &[u8]) -> Result<Reply, ReplyError> {
        let p = Packet::parse(packet).map_err(|_| ReplyError::NotUdp)?;
        let L4::Udp(u) = p.l4 else {
            return Err(ReplyError::NotUdp);
        };
        let from = (p.header.src_ia(), p.header.src_host(), u.src_port());
        let to = (p.header.dst_ia(), p.header.dst_host(), u.dst_port());
        if from != (self.dst.ia, self.dst.host, self.dst.port)
            || to != (self.src.ia, self.src.host, self.src.port)
        {
            return Err(ReplyError::OtherFlow);
        }
        Ok(Reply::decode(u.payload())?)
    }
}

/// One row of the per-hop table: a router entry of a verified reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HopRow {
    /// Entry index in the stack (1 = first router).
    pub hop: u8,
    /// The router's AS.
    pub ia: Option<String>,
    /// Node id of the router.
    pub node_id: Option<u32>,
    /// Ingress interface.
    pub ingress_if: Option<u16>,
    /// Egress interface.
    pub egress_if: Option<u16>,
    /// Latency from the previous timestamp (the source's for the first router) to this
    /// router's ingress timestamp, ns.
    pub latency_ns: Option<u64>,
    /// Instantaneous queue length, packets.
    pub queue: Option<u64>,
    /// Egress link TX utilisation, kbit/s.
    pub utilisation_kbps: Option<u64>,
    /// Forwarding energy, nJ.
    pub energy_nj: Option<u64>,
    /// The entry was encrypted on the wire.
    pub encrypted: bool,
}

/// One reply, summarised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplySummary {
    /// Sequence number.
    pub seq: u32,
    /// Round-trip time, ns.
    pub rtt_ns: u64,
    /// Whether the destination verified the telemetry.
    pub verified: bool,
    /// Why not, if not.
    pub failure: Option<String>,
    /// Entries were left out of the reply.
    pub truncated: bool,
    /// The routers' values.
    pub hops: Vec<HopRow>,
}

/// The rows of a reply's router entries (the source entry gives the first timestamp).
pub fn rows(reply: &Reply) -> Vec<HopRow> {
    let slot = |e: &crate::payload::HopValues, k: usize| e.metadata.slots[k].map(|s| s.value);
    let mut prev_ts = Some(reply.source_ts & TS_MASK);
    let mut out = Vec::new();
    for e in reply
        .entries
        .iter()
        .filter(|e| e.flags & entry_flags::SOURCE == 0)
    {
        let ts = slot(e, SLOT_TIMESTAMP);
        let latency_ns = match (prev_ts, ts) {
            (Some(p), Some(t)) => Some(t.wrapping_sub(p) & TS_MASK),
            _ => None,
        };
        if ts.is_some() {
            prev_ts = ts;
        }
        out.push(HopRow {
            hop: e.index,
            ia: e.ia.map(|ia: IsdAsn| ia.to_string()),
            node_id: e.metadata.node_id,
            ingress_if: e.metadata.ingress_if,
            egress_if: e.metadata.egress_if,
            latency_ns,
            queue: slot(e, SLOT_QUEUE),
            utilisation_kbps: slot(e, SLOT_UTIL),
            energy_nj: slot(e, SLOT_ENERGY),
            encrypted: e.flags & entry_flags::ENCRYPTED != 0,
        });
    }
    out
}

/// The summary of a reply received `rtt_ns` after its ping.
pub fn summarise(reply: &Reply, rtt_ns: u64) -> ReplySummary {
    ReplySummary {
        seq: reply.seq,
        rtt_ns,
        verified: reply.failure.is_none(),
        failure: reply.failure.map(|r| r.name().to_string()),
        truncated: reply.truncated,
        hops: rows(reply),
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

/// The reply as a table for people.
pub fn table(s: &ReplySummary) -> String {
    let mut t = String::new();
    let rtt_ms = s.rtt_ns as f64 / 1e6;
    match &s.failure {
        None => {
            let _ = writeln!(
                t,
                "reply seq={} rtt={rtt_ms:.3} ms: telemetry verified",
                s.seq
            );
        }
        Some(f) => {
            let _ = writeln!(
                t,
                "reply seq={} rtt={rtt_ms:.3} ms: NOT verified ({f})",
                s.seq
            );
            return t;
        }
    }
    let _ = writeln!(
        t,
        "{:>3}  {:<16} {:>5} {:>7} {:>7} {:>12} {:>7} {:>12} {:>10}",
        "hop",
        "AS",
        "node",
        "ingress",
        "egress",
        "latency[us]",
        "queue",
        "util[kbps]",
        "energy[nJ]"
    );
    for h in &s.hops {
        let _ = writeln!(
            t,
            "{:>3}  {:<16} {:>5} {:>7} {:>7} {:>12} {:>7} {:>12} {:>10}{}",
            h.hop,
            opt(h.ia.clone()),
            opt(h.node_id),
            opt(h.ingress_if),
            opt(h.egress_if),
            h.latency_ns
                .map_or_else(|| "-".into(), |l| format!("{:.3}", l as f64 / 1e3)),
            opt(h.queue),
            opt(h.utilisation_kbps),
            opt(h.energy_nj),
            if h.encrypted { "  (decrypted)" } else { "" }
        );
    }
    if s.truncated {
        t.push_str("  (more entries did not fit in the reply)\n");
    }
    t
}

/// The totals of a `send` run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SendSummary {
    /// The path used.
    pub path: String,
    /// Pings sent.
    pub sent: u64,
    /// Replies received.
    pub received: u64,
    /// Replies whose telemetry the destination verified.
    pub verified: u64,
    /// Every reply.
    pub replies: Vec<ReplySummary>,
}
