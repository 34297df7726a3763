//! The destination side of `idint-ping serve`, I/O-free: a received SCION/UDP packet in, the
//! verified telemetry, the host report for the collector and the reply out.
//!
//! For every packet, in this order: parse (SCION, path, extensions, UDP); check it is for
//! this host; decode the ping; reverse the path for the reply; locate the ID-INT stack; derive
//! the DRKey keys of the verifier the request names, normally this host (source entry:
//! host-to-host K(source host -> verifier); router entries: AS-to-host K(router AS ->
//! verifier), the router AS read from the ping's hop list at the entry's hop-field index; a
//! third-party verifier such as the collector works too when this host holds the secrets); check freshness and replay, verify every MAC and decrypt
//! (`idint_wire::idint::verify::open`); decode the entries. A packet that parsed that far gets
//! a reply, with the values or the reason of the failure.

use std::collections::BTreeMap;

use idint_report::{Message, report_from_packet, v1};
use idint_wire::crypto::Aes128Enc;
use idint_wire::idint::verify::{ReplayWindow, decode_entries, open};
use idint_wire::idint::{IdInt, Verifier};
use idint_wire::packet::{L4, Packet, PathView};
use idint_wire::path::ScionPathRepr;
use idint_wire::scion::PathType;
use idint_wire::{HostAddr, IsdAsn};
use serde::Serialize;

use crate::keys::HostKeys;
use crate::packet::{Endpoint, build_udp, header_len};
use crate::payload::{HopValues, Ping, Reply};
use crate::reason::Reason;

/// Slots of the replay window (pairs remembered at once).
pub const REPLAY_SLOTS: usize = 1 << 14;
/// How old a source timestamp may be, ns (the specification suggests 60 s).
pub const REPLAY_WINDOW_NS: u64 = 60_000_000_000;
/// How far ahead of this host's clock a source timestamp may be, ns.
pub const CLOCK_SKEW_NS: u64 = 1_000_000_000;
/// Largest reply packet (SCION header to the end), bytes: a 1500-byte IPv4 underlay MTU
/// minus IPv4 and UDP headers.
pub const REPLY_MTU: usize = 1472;
/// Name of the host in its reports.
pub const EXPORTER_NAME: &str = "idint-ping";

const NS_PER_S: u64 = 1_000_000_000;

/// What `serve` counts; written as JSON on exit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Datagrams handled.
    pub received: u64,
    /// Stacks verified and decrypted.
    pub verified: u64,
    /// Packets not verified, by reason.
    pub failed: BTreeMap<&'static str, u64>,
    /// Replies built.
    pub replies: u64,
    /// Host reports sent to the collector.
    pub reports_sent: u64,
    /// Host reports that could not be sent.
    pub report_errors: u64,
}

/// The result of handling one packet.
#[derive(Debug, Clone, Default)]
pub struct Handled {
    /// The ping, if the payload was one.
    pub ping: Option<Ping>,
    /// Where the packet came from (SCION), if it parsed.
    pub from: Option<Endpoint>,
    /// `None`: verified.
    pub failure: Option<Reason>,
    /// The verified entries.
    pub entries: Vec<HopValues>,
    /// The reply packet (SCION bytes) to send back to the underlay source.
    pub reply: Option<Vec<u8>>,
    /// The host report batch (protobuf) for the collector, if the stack verified.
    pub report: Option<Vec<u8>>,
}

/// The destination host: its address, keys, replay window and counters.
pub struct Responder {
    ia: IsdAsn,
    host: HostAddr,
    keys: HostKeys,
    window: Box<ReplayWindow<REPLAY_SLOTS>>,
    report_seq: u64,
    /// The counters.
    pub stats: Stats,
}

impl Responder {
    /// The host `host` of `ia`, verifying with `keys`.
    pub fn new(ia: IsdAsn, host: HostAddr, keys: HostKeys) -> Self {
        Responder {
            ia,
            host,
            keys,
            window: Box::new(ReplayWindow::new(REPLAY_WINDOW_NS, CLOCK_SKEW_NS)),
            report_seq: 0,
            stats: Stats::default(),
        }
    }

    /// Handles one received SCION packet at `now_ns`, counting the outcome.
    pub fn handle(&mut self, packet: &[u8], now_ns: u64) -> Handled {
        self.stats.received += 1;
        let mut out = Handled::default();
        match self.process(packet, now_ns, &mut out) {
            Ok(()) => self.stats.verified += 1,
            Err(r) => {
                out.failure = Some(r);
                *self.stats.failed.entry(r.name()).or_default() += 1;
            }
        }
        if out.reply.is_some() {
            self.stats.replies += 1;
        }
        out
    }

    fn process(&mut self, packet: &[u8], now_ns: u64, out: &mut Handled) -> Result<(), Reason> {
        let p = Packet::parse(packet).map_err(|_| Reason::Parse)?;
        let L4::Udp(udp) = p.l4 else {
            return Err(Reason::NotUdp);
        };
        let from = Endpoint {
            ia: p.header.src_ia(),
            host: p.header.src_host(),
            port: udp.src_port(),
        };
        out.from = Some(from);
        if p.header.dst_ia() != self.ia || p.header.dst_host() != self.host {
            return Err(Reason::NotForUs);
        }
        let ping = Ping::decode(udp.payload()).map_err(|_| Reason::BadPayload)?;
        out.ping = Some(ping.clone());
        let (path_type, reversed) = reverse_path(&p)?;
        let local = Endpoint {
            ia: self.ia,
            host: self.host,
            port: udp.dst_port(),
        };
        let result = self.verify(&p, packet, &ping, now_ns);
        let mut reply = Reply {
            seq: ping.seq,
            sent_ns: ping.sent_ns,
            failure: result.as_ref().err().copied(),
            truncated: false,
            instructions: [idint_wire::idint::Instruction::NOP; 4],
            source_ts: 0,
            entries: Vec::new(),
        };
        if let Ok(v) = &result {
            reply.instructions = v.instructions;
            reply.source_ts = v.source_ts;
            reply.entries = v.entries.clone();
            out.entries = v.entries.clone();
            out.report = self.report(packet, now_ns);
        }
        let room = REPLY_MTU.saturating_sub(
            header_len(&local.host, &from.host, reversed.len()) + idint_wire::udp::HEADER_LEN,
        );
        let mut payload = Vec::new();
        if reply.encode(&mut payload, room).is_some() {
            let mut pkt = Vec::new();
            if build_udp(local, from, path_type, &reversed, None, &payload, &mut pkt).is_ok() {
                out.reply = Some(pkt);
            }
        }
        result.map(|_| ())
    }

    /// Verifies and decrypts the stack of `p` (a copy of `packet` is changed, not `packet`).
    fn verify(
        &mut self,
        p: &Packet<'_>,
        packet: &[u8],
        ping: &Ping,
        now_ns: u64,
    ) -> Result<Verified, Reason> {
        let range = p.hbh_range().ok_or(Reason::NoIdInt)?;
        let mut buf = packet.to_vec();
        let hbh = buf.get_mut(range).ok_or(Reason::Malformed)?;
        let mut idint = IdInt::locate(hbh)
            .map_err(|_| Reason::Malformed)?
            .ok_or(Reason::NoIdInt)?;
        // The keys are those of the verifier the request names (`idint.md` §10): this host,
        // or a third party (the collector) whose keys follow from the same secrets.
        let verifier = match idint.main().verifier() {
            Verifier::Destination => (self.ia, self.host),
            Verifier::ThirdParty { ia, host } => (ia, host),
            Verifier::Source => (p.header.src_ia(), p.header.src_host()),
        };
        let (ts, _) = (idint.main().source_timestamp(), idint.main().source_port());
        // The DRKey epoch is that of the source timestamp (a stale one is refused by `open`).
        let t_s = self.window.fresh(ts, now_ns).unwrap_or(now_ns) / NS_PER_S;
        let source_key = self
            .keys
            .source_key((p.header.src_ia(), p.header.src_host()), verifier, t_s)
            .map_err(|_| Reason::Key)?;
        let hop_keys: Vec<Option<Aes128Enc>> = ping
            .hop_ias
            .iter()
            .map(|&ia| self.keys.router_key(ia, verifier, t_s).ok())
            .collect();
        open(&mut idint, &mut self.window, now_ns, &source_key, |_, e| {
            hop_keys.get(usize::from(e.hop())).and_then(Option::as_ref)
        })?;
        let instructions = idint.main().instructions();
        let mut entries = Vec::new();
        for e in decode_entries(&idint) {
            let e = e.map_err(|_| Reason::Decode)?;
            let flags = (u8::from(e.source) << 7)
                | (u8::from(e.ingress) << 6)
                | (u8::from(e.egress) << 5)
                | (u8::from(e.aggregated) << 4)
                | (u8::from(e.encrypted) << 3);
            entries.push(HopValues {
                index: e.index.min(usize::from(u8::MAX)) as u8,
                flags,
                hop: e.hop,
                ia: if e.source {
                    Some(p.header.src_ia())
                } else {
                    ping.hop_ias.get(usize::from(e.hop)).copied()
                },
                metadata: e.metadata,
            });
        }
        Ok(Verified {
            instructions,
            source_ts: ts,
            entries,
        })
    }

    /// The host report of a verified packet: a batch of one report of the packet as it
    /// arrived (the collector verifies the raw options itself).
    fn report(&mut self, packet: &[u8], now_ns: u64) -> Option<Vec<u8>> {
        let exporter = v1::Exporter {
            isd_as: self.ia.to_u64(),
            router_id: 0,
            name: EXPORTER_NAME.into(),
        };
        let report = report_from_packet(&exporter, now_ns, 0, packet).ok()?;
        self.report_seq += 1;
        Some(
            v1::ReportBatch {
                exporter: Some(exporter),
                sequence: self.report_seq,
                reports: vec![report],
            }
            .encode_to_vec(),
        )
    }
}

struct Verified {
    instructions: [idint_wire::idint::Instruction; 4],
    source_ts: u64,
    entries: Vec<HopValues>,
}

/// The path to answer on: the empty path stays empty, a standard SCION path is reversed
/// (`ScionPathRepr::reversed`); other path types are not answered.
fn reverse_path(p: &Packet<'_>) -> Result<(PathType, Vec<u8>), Reason> {
    match p.path {
        PathView::Empty => Ok((PathType::Empty, Vec::new())),
        PathView::Scion(_) => {
            let rev = ScionPathRepr::parse(p.header.path_bytes())
                .and_then(|r| r.reversed())
                .map_err(|_| Reason::Path)?;
            let mut b = vec![0u8; rev.buffer_len()];
            rev.emit(&mut b).map_err(|_| Reason::Path)?;
            Ok((PathType::Scion, b))
        }
        _ => Err(Reason::Path),
    }
}
