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
use idint_wire::path::epic::EPIC_PREFIX_LEN;
use idint_wire::path::{EpicPath, ScionPath};
use idint_wire::scion::{FlowId, NextHdr, PathType, ScionHeader, ScionRepr};
use idint_wire::udp::{UdpPacket, UdpRepr};
use idint_wire::{Error, HostAddr, IsdAsn, Layer};

use crate::idint::layout::item;
use crate::telemetry::code;

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
            inst_bitmap: item::NODE_ID | item::INGRESS_IF | item::EGRESS_IF,
            aggregation: [
                AggregationFunction::First,
                AggregationFunction::Last,
                AggregationFunction::Max,
                AggregationFunction::Max,
            ],
            instructions: [
                Instruction(code::INGRESS_TIMESTAMP),
                Instruction(code::EGRESS_TIMESTAMP),
                Instruction(code::QUEUE_LEN),
                Instruction(code::EGRESS_LINK_TX_UTILISATION),
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
    /// The (full, Unix ns) time the last probe was stamped with (none yet: `None`).
    last_ns: Option<u64>,
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
            last_ns: None,
        }
    }

    /// Adds a target, first probed at `start_ns`; returns its index. Refused, and nothing
    /// added, if its interval is 0, its path is not a whole SCION or EPIC path of its
    /// `path_type`, or all 65,536 source ports (one per target: the request's port) are
    /// taken.
    pub fn add(&mut self, target: ProbeTarget, start_ns: u64) -> Result<usize, Error> {
        if target.interval_ns == 0 {
            return Err(Error::invalid(Layer::Common, "probe interval"));
        }
        check_path(target.path_type, &target.path)?;
        if self.targets.len() > usize::from(u16::MAX) {
            return Err(Error::invalid(
                Layer::IdIntMain,
                "source port (too many targets)",
            ));
        }
        self.targets.push(Scheduled {
            target,
            next_ns: start_ns,
            seq: 0,
        });
        Ok(self.targets.len() - 1)
    }

    /// Replaces the path of target `index` (checked as [`Self::add`] checks it; an unknown
    /// index is an error too).
    pub fn set_path(
        &mut self,
        index: usize,
        path_type: PathType,
        path: Vec<u8>,
    ) -> Result<(), Error> {
        check_path(path_type, &path)?;
        let s = self
            .targets
            .get_mut(index)
            .ok_or(Error::invalid(Layer::Common, "probe target index"))?;
        s.target.path_type = path_type;
        s.target.path = path;
        Ok(())
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
        let stamp_ns = next_stamp(now_ns, self.last_ns);
        self.last_ns = Some(stamp_ns);
        let ts = stamp_ns % (1 << 48);
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

/// The time (Unix ns) a probe sent at `now_ns` is stamped with, after one stamped `last`:
/// (timestamp, port) must never repeat under the key, so stamps strictly increase: the
/// clock's value, or one more than the last if the clock has not moved past it. Kept in full
/// 64 bits and reduced modulo 2^48 only on the wire, so that neither the wrap of the 48-bit
/// field nor a long pause between probes makes later stamps lag the clock.
fn next_stamp(now_ns: u64, last: Option<u64>) -> u64 {
    match last {
        Some(last) if now_ns <= last => last.saturating_add(1),
        _ => now_ns,
    }
}

/// `path` is a whole path of `path_type` (SCION or EPIC, the types probes are sent on), with
/// no bytes after its last hop field.
fn check_path(path_type: PathType, path: &[u8]) -> Result<(), Error> {
    let len = match path_type {
        PathType::Scion => ScionPath::new_checked(path)?.len(),
        PathType::Epic => EPIC_PREFIX_LEN + EpicPath::new_checked(path)?.scion_path().len(),
        _ => {
            return Err(Error::invalid(
                Layer::Common,
                "PathType (probes: SCION or EPIC)",
            ));
        }
    };
    if len != path.len() {
        return Err(Error::invalid(
            Layer::Path,
            "bytes after the last hop field",
        ));
    }
    Ok(())
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
    let total = hl + hbh_len + idint_wire::udp::HEADER_LEN + PAYLOAD;
    if buf.len() < total {
        return Err(Error::truncated(Layer::Common, total, buf.len()));
    }
    scion.emit(buf)?;
    buf[scion.address_end()..hl].copy_from_slice(&t.path);
    req.emit_signed(&mut buf[hl..], idint_wire::udp::PROTOCOL, key)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use idint_wire::path::{HopField, InfoField, PathMeta, ScionPathRepr};

    const WRAP: u64 = 1 << 48;

    #[test]
    fn stamps_follow_the_clock_across_the_48_bit_wrap_and_long_pauses() {
        // One probe a second, the first half a second before a wrap of the 48-bit field.
        let start = 7 * WRAP - 500_000_000;
        let mut last = None;
        for i in 0..5u64 {
            let now = start + i * 1_000_000_000;
            let ns = next_stamp(now, last);
            assert_eq!(ns, now, "probe {i}: the clock's own value");
            last = Some(ns);
        }
        // After a pause of two days (more than half the 48-bit range): still the clock.
        let later = start + 2 * 86_400_000_000_000;
        assert_eq!(next_stamp(later, last), later);
        // Probes within the same nanosecond, or a clock that steps back a little: one more
        // than the last each time.
        assert_eq!(
            next_stamp(5 * WRAP + 10, Some(5 * WRAP + 10)),
            5 * WRAP + 11
        );
        assert_eq!(next_stamp(5 * WRAP + 9, Some(5 * WRAP + 11)), 5 * WRAP + 12);
        assert_eq!(next_stamp(3 * WRAP, None), 3 * WRAP);
    }

    fn target(path_type: PathType, path: Vec<u8>, interval_ns: u64) -> ProbeTarget {
        ProbeTarget {
            dst_ia: "1-ff00:0:111".parse().unwrap(),
            dst_host: HostAddr::V4(core::net::Ipv4Addr::new(10, 0, 0, 2)),
            dst_port: 1,
            path_type,
            path,
            interval_ns,
            request: ProbeRequest::default(),
        }
    }

    fn scion_path() -> Vec<u8> {
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
        b
    }

    #[test]
    fn targets_that_could_never_be_probed_are_refused() {
        let ia = "1-ff00:0:110".parse().unwrap();
        let host = HostAddr::V4(core::net::Ipv4Addr::new(10, 0, 0, 1));
        let mut p = ProbeSource::new(ia, host, ia, host);
        let ok = scion_path();
        let mut longer = ok.clone();
        longer.push(0);
        for (t, why) in [
            (target(PathType::Scion, ok.clone(), 0), "interval"),
            (target(PathType::Scion, Vec::new(), 1), "empty path"),
            (
                target(PathType::Scion, ok[..ok.len() - 1].to_vec(), 1),
                "cut",
            ),
            (target(PathType::Scion, longer, 1), "trailing byte"),
            (target(PathType::Epic, ok.clone(), 1), "not EPIC"),
            (target(PathType::Empty, Vec::new(), 1), "path type"),
        ] {
            assert!(p.add(t, 0).is_err(), "{why}");
        }
        assert_eq!(p.next_due(), None, "nothing was added");
        assert_eq!(p.add(target(PathType::Scion, ok.clone(), 1), 0), Ok(0));
        assert!(p.set_path(0, PathType::Scion, vec![0; 3]).is_err());
        assert!(p.set_path(1, PathType::Scion, ok.clone()).is_err());
        assert_eq!(p.set_path(0, PathType::Scion, ok), Ok(()));
    }
}
