//! Infrastructure-mode probes: a router-side source of ID-INT probe packets for configured
//! paths at configured rates (I and D flags set, verified by the AS's collector).
//!
//! [`ProbeSource::poll`] writes the next due probe into a buffer; the router then processes
//! it like any packet from the AS-internal network (`Ingress::Internal`), so its own entry is
//! the first after the source entry. At the last border router of the path the packet's
//! telemetry is exported and the packet dropped (see [`crate::idint`]).

use alloc::vec::Vec;

use idint_wire::crypto::Aes128Enc;
use idint_wire::idint::{
    AggregationFunction, AggregationMode, Instruction, RequestBuilder, Verifier,
};
use idint_wire::scion::{FlowId, NextHdr, PathType, ScionHeader, ScionRepr};
use idint_wire::udp::{UdpPacket, UdpRepr};
use idint_wire::{Error, HostAddr, IsdAsn, Layer};

/// What a probe asks routers to record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeRequest {
    /// Aggregation mode.
    pub mode: AggregationMode,
    /// Ask routers to encrypt their entries.
    pub encrypt: bool,
    /// Bitmap items (InstF).
    pub inst_bitmap: u8,
    /// AF1..AF4.
    pub aggregation: [AggregationFunction; 4],
    /// Inst1..Inst4.
    pub instructions: [Instruction; 4],
    /// Stack space in words.
    pub stack_len_words: u8,
    /// Keep the packet at the sink (D clear: options stripped, packet delivered).
    pub deliver: bool,
}

impl Default for ProbeRequest {
    /// Per-border-router entries with node id and interfaces, ingress/egress timestamps,
    /// queue length and egress link utilisation, room for 16 ASes.
    fn default() -> Self {
        ProbeRequest {
            mode: AggregationMode::PerBorderRouter,
            encrypt: false,
            inst_bitmap: 0xb,
            aggregation: [
                AggregationFunction::First,
                AggregationFunction::Last,
                AggregationFunction::Max,
                AggregationFunction::Max,
            ],
            instructions: [
                Instruction(0x82),
                Instruction(0x83),
                Instruction(0x4f),
                Instruction(0x4d),
            ],
            stack_len_words: 240,
            deliver: false,
        }
    }
}

/// One probed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeTarget {
    /// Destination AS (the probe's sink is that AS's ingress border router).
    pub dst_ia: IsdAsn,
    /// Destination host.
    pub dst_host: HostAddr,
    /// Destination UDP port.
    pub dst_port: u16,
    /// Path type of `path` (SCION or EPIC).
    pub path_type: PathType,
    /// Raw path bytes, as the path service gave them (refresh with
    /// [`ProbeSource::set_path`] before they expire).
    pub path: Vec<u8>,
    /// Time between probes, ns.
    pub interval_ns: u64,
    /// What to record.
    pub request: ProbeRequest,
}

#[derive(Debug, Clone)]
struct Scheduled {
    target: ProbeTarget,
    next_ns: u64,
    seq: u64,
}

/// A probe written by [`ProbeSource::poll`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// Index of the target.
    pub target: usize,
    /// Packet length in the buffer.
    pub len: usize,
    /// Sequence number of this probe for its target (also its UDP payload).
    pub seq: u64,
}

/// Probe scheduler and builder of one router.
#[derive(Debug, Clone)]
pub struct ProbeSource {
    local_ia: IsdAsn,
    src_host: HostAddr,
    collector_ia: IsdAsn,
    collector_host: HostAddr,
    targets: Vec<Scheduled>,
    last_ts: u64,
}

/// UDP port probes are sent from.
pub const PROBE_SRC_PORT: u16 = 30_142;
const PAYLOAD: usize = 8;

impl ProbeSource {
    /// Probes sent from `src_host` (this router's internal address) in `local_ia`, verified
    /// by the collector at `collector_host` in `collector_ia`.
    pub fn new(
        local_ia: IsdAsn,
        src_host: HostAddr,
        collector_ia: IsdAsn,
        collector_host: HostAddr,
    ) -> Self {
        ProbeSource {
            local_ia,
            src_host,
            collector_ia,
            collector_host,
            targets: Vec::new(),
            last_ts: 0,
        }
    }

    /// Adds a target, first probed at `start_ns`; returns its index.
    pub fn add(&mut self, target: ProbeTarget, start_ns: u64) -> usize {
        self.targets.push(Scheduled {
            target,
            next_ns: start_ns,
            seq: 0,
        });
        self.targets.len() - 1
    }

    /// Replaces the path of target `index`.
    pub fn set_path(&mut self, index: usize, path_type: PathType, path: Vec<u8>) {
        if let Some(s) = self.targets.get_mut(index) {
            s.target.path_type = path_type;
            s.target.path = path;
        }
    }

    /// When the next probe is due (Unix ns), if there is any target.
    pub fn next_due(&self) -> Option<u64> {
        self.targets.iter().map(|s| s.next_ns).min()
    }

    /// The source's host-to-host key must be K(this router -> collector); these are the
    /// parties for the DRKey derivation: (local AS, router host, collector AS, collector host).
    pub fn key_parties(&self) -> (IsdAsn, HostAddr, IsdAsn, HostAddr) {
        (
            self.local_ia,
            self.src_host,
            self.collector_ia,
            self.collector_host,
        )
    }

    /// Writes the most overdue probe (if one is due at `now_ns`) into `buf`, its source entry
    /// signed with `source_key`, and schedules that target's next probe. `Some(Err(..))` if
    /// the probe cannot be built (a path or request that does not fit); the target is then
    /// rescheduled all the same.
    pub fn poll(
        &mut self,
        now_ns: u64,
        source_key: &Aes128Enc,
        buf: &mut [u8],
    ) -> Option<Result<Probe, Error>> {
        let (index, _) = self
            .targets
            .iter()
            .enumerate()
            .filter(|(_, s)| s.next_ns <= now_ns)
            .min_by_key(|(_, s)| s.next_ns)?;
        // (timestamp, port) must never repeat under the key: strictly increasing timestamps.
        let ts = (now_ns % (1 << 48)).max(self.last_ts + 1) % (1 << 48);
        self.last_ts = ts;
        let s = &mut self.targets[index];
        let seq = s.seq;
        s.seq += 1;
        s.next_ns = s.next_ns.saturating_add(s.target.interval_ns.max(1));
        if s.next_ns <= now_ns {
            // Fell behind (for example after a pause): do not burst to catch up.
            s.next_ns = now_ns.saturating_add(s.target.interval_ns.max(1));
        }
        let t = &s.target;
        let built = build(
            t,
            self.local_ia,
            self.src_host,
            Verifier::ThirdParty {
                ia: self.collector_ia,
                host: self.collector_host,
            },
            ts,
            index as u16,
            seq,
            source_key,
            buf,
        );
        Some(built.map(|len| Probe {
            target: index,
            len,
            seq,
        }))
    }
}

#[allow(clippy::too_many_arguments)]
fn build(
    t: &ProbeTarget,
    src_ia: IsdAsn,
    src_host: HostAddr,
    verifier: Verifier,
    ts: u64,
    port: u16,
    seq: u64,
    key: &Aes128Enc,
    buf: &mut [u8],
) -> Result<usize, Error> {
    let r = &t.request;
    let req = RequestBuilder {
        infrastructure: true,
        discard: !r.deliver,
        encrypt: r.encrypt,
        mode: r.mode,
        verifier,
        inst_bitmap: r.inst_bitmap,
        aggregation: r.aggregation,
        instructions: r.instructions,
        stack_len_words: r.stack_len_words,
        source_port: port,
        ..RequestBuilder::new(ts)
    };
    let hbh_len = req.hbh_len();
    let scion = ScionRepr {
        version: 0,
        traffic_class: 0,
        flow_id: FlowId::from_u20(u32::from(port)),
        next_header: NextHdr::HopByHop,
        path_type: t.path_type,
        path_len: t.path.len(),
        payload_len: u16::try_from(hbh_len + 8 + PAYLOAD)
            .map_err(|_| Error::invalid(Layer::Common, "PayloadLen"))?,
        dst_ia: t.dst_ia,
        src_ia,
        dst_host: t.dst_host,
        src_host,
    };
    let hl = scion.header_len();
    let total = hl + hbh_len + 8 + PAYLOAD;
    if buf.len() < total {
        return Err(Error::truncated(Layer::Common, total, buf.len()));
    }
    scion.emit(buf)?;
    buf[scion.address_end()..hl].copy_from_slice(&t.path);
    req.emit_signed(&mut buf[hl..], 17, key)?;
    let l4 = hl + hbh_len;
    UdpRepr {
        src_port: PROBE_SRC_PORT,
        dst_port: t.dst_port,
        payload_len: PAYLOAD as u16,
        checksum: 0,
    }
    .emit(&mut buf[l4..])?;
    buf[l4 + 8..total].copy_from_slice(&seq.to_be_bytes());
    let (head, rest) = buf.split_at_mut(hl);
    let hdr = ScionHeader::new_checked(&*head)?;
    UdpPacket::new_unchecked(&mut rest[hbh_len..hbh_len + 8 + PAYLOAD]).fill_checksum(&hdr);
    Ok(total)
}
