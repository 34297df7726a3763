//! End to end: a host builds an ID-INT request, the packet crosses four ASes (five border
//! routers, chained scion-dp processors with their own forwarding and DRKey secrets), and the
//! destination verifies and decrypts every entry and finds exactly the values each router's
//! telemetry source supplied.
//!
//! Topology (one core segment, construction direction):
//! ```text
//! host a ─ RA [1] ── [2] RB1 ═ RB2 [3] ── [4] RC [5] ── [6] RD ─ host d
//!   AS A                 AS B (two routers)        AS C          AS D
//! ```

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use drkey::cache::KeyCache;
use drkey::provider::{Level1Provider, LocalProvider};
use drkey::{Protocol, host_as, host_host};
use idint_wire::crypto::{Aes128Enc, aes128};
use idint_wire::idint::crypto::VerifyError;
use idint_wire::idint::entry::SlotValue;
use idint_wire::idint::verify::{
    DecodedEntry, OpenError, ReplayError, ReplayWindow, decode_entries, open,
};
use idint_wire::idint::{
    AggregationFunction as Af, AggregationMode, IdInt, Instruction, Metadata, RequestBuilder,
    Verifier,
};
use idint_wire::path::{HopField, InfoField, PathMeta, ScionPathRepr};
use idint_wire::scion::{FlowId, NextHdr, PathType, ScionRepr};
use idint_wire::udp::UdpRepr;
use idint_wire::{HostAddr, IsdAsn};
use scion_dp::config::{DispatchedPorts, InterfaceConfig, LinkType, Owner, Router, RouterConfig};
use scion_dp::idint::{DrkeyKeys, IdIntStage, KeyHandle, NonceSource, VerifierKeys};
use scion_dp::telemetry::{CounterKind, Direction, HopContext, QueueMetric, TelemetrySource, code};
use scion_dp::{Disposition, Ingress, Processor};

const NOW_S: u64 = 1_763_800_000;
const NOW: u64 = NOW_S * 1_000_000_000;
const EPOCH: u32 = 3600;
const SRC_HOST: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
const DST_HOST: Ipv4Addr = Ipv4Addr::new(10, 4, 0, 9);
const INSTRUCTIONS: [Instruction; 4] = [
    Instruction(code::INGRESS_TIMESTAMP),    // 6 bytes
    Instruction(code::EGRESS_TIMESTAMP),     // 6 bytes
    Instruction(code::QUEUE_LEN),            // instantaneous, 4 bytes
    Instruction(code::EGRESS_TOTAL_PACKETS), // 6 bytes
];

fn ia(s: &str) -> IsdAsn {
    s.parse().unwrap()
}

fn ases() -> [IsdAsn; 4] {
    [
        ia("1-ff00:0:a"),
        ia("1-ff00:0:b"),
        ia("1-ff00:0:c"),
        ia("1-ff00:0:d"),
    ]
}

fn secret(i: usize) -> Vec<u8> {
    vec![0x40 + i as u8; 16]
}

fn sock(last: u8) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)), 30042)
}

fn iface(id: u16, neighbor: IsdAsn, owner: Owner) -> InterfaceConfig {
    InterfaceConfig {
        id,
        link_type: LinkType::Core,
        neighbor_ia: neighbor,
        owner,
    }
}

fn router(as_index: usize, addr: u8, interfaces: Vec<InterfaceConfig>) -> Router {
    Router::new(RouterConfig {
        local_ia: ases()[as_index],
        core: true,
        internal_addr: sock(addr),
        interfaces,
        services: vec![],
        dispatched_ports: DispatchedPorts::All,
        forwarding_key: [0x10 + as_index as u8; 16],
    })
    .unwrap()
}

/// RA, RB1, RB2, RC, RD.
fn routers() -> Vec<Router> {
    let [a, b, c, d] = ases();
    vec![
        router(0, 1, vec![iface(1, b, Owner::Local)]),
        router(
            1,
            2,
            vec![
                iface(2, a, Owner::Local),
                iface(3, c, Owner::Sibling(sock(3))),
            ],
        ),
        router(
            1,
            3,
            vec![
                iface(2, a, Owner::Sibling(sock(2))),
                iface(3, c, Owner::Local),
            ],
        ),
        router(
            2,
            4,
            vec![iface(4, b, Owner::Local), iface(5, d, Owner::Local)],
        ),
        router(3, 5, vec![iface(6, c, Owner::Local)]),
    ]
}

/// Index of the AS each router belongs to.
const ROUTER_AS: [usize; 5] = [0, 1, 1, 2, 3];

fn path(rs: &[Router]) -> ScionPathRepr {
    let mut p = ScionPathRepr {
        meta: PathMeta {
            curr_inf: 0,
            curr_hf: 0,
            reserved: 0,
            seg_len: [4, 0, 0],
        },
        infos: [InfoField::default(); 3],
        hops: [HopField::default(); 64],
    };
    let ts = (NOW_S - 600) as u32;
    p.infos[0] = InfoField {
        peer: false,
        cons_dir: true,
        seg_id: 0x5a5a,
        timestamp: ts,
    };
    let mut seg = 0x5a5a;
    // The router of each AS that checks the hop field: RA, RB1, RC, RD.
    for (j, (ing, eg, r)) in [(0u16, 1u16, 0usize), (2, 3, 1), (4, 5, 3), (6, 0, 4)]
        .into_iter()
        .enumerate()
    {
        let mut h = HopField {
            exp_time: 63,
            cons_ingress: ing,
            cons_egress: eg,
            ..Default::default()
        };
        let full = rs[r].hop_mac().compute(&h.mac_input(seg, ts));
        h.mac.copy_from_slice(&full[..6]);
        seg ^= u16::from_be_bytes([full[0], full[1]]);
        p.hops[j] = h;
    }
    p
}

/// The host-to-host key of the source entry (source host in A to the destination host in D).
fn source_key() -> Aes128Enc {
    keys().1.clone()
}

/// The AS-to-host key of AS `i` for the destination host.
fn as_key(i: usize) -> Aes128Enc {
    keys().0[i].clone()
}

/// Derived once (secret values are PBKDF2).
fn keys() -> &'static (Vec<Aes128Enc>, Aes128Enc) {
    static KEYS: std::sync::OnceLock<(Vec<Aes128Enc>, Aes128Enc)> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| ((0..4).map(derive_as_key).collect(), derive_source_key()))
}

fn derive_source_key() -> Aes128Enc {
    let [a, _, _, d] = ases();
    let p = LocalProvider::new(a, &secret(0), EPOCH).unwrap();
    let (_, l1) = p.level1(Protocol::IDINT, a, d, NOW_S).unwrap();
    let ha = host_as(&l1.cipher(), &HostAddr::V4(SRC_HOST)).unwrap();
    host_host(&ha.cipher(), &HostAddr::V4(DST_HOST))
        .unwrap()
        .cipher()
}

fn derive_as_key(i: usize) -> Aes128Enc {
    let asi = ases()[i];
    let p = LocalProvider::new(asi, &secret(i), EPOCH).unwrap();
    let (_, l1) = p.level1(Protocol::IDINT, asi, ases()[3], NOW_S).unwrap();
    drkey::as_host(&l1.cipher(), &HostAddr::V4(DST_HOST))
        .unwrap()
        .cipher()
}

fn request_packet(rs: &[Router], req: &RequestBuilder) -> Vec<u8> {
    request_packet_to(rs, req, DST_HOST)
}

fn request_packet_to(rs: &[Router], req: &RequestBuilder, dst: Ipv4Addr) -> Vec<u8> {
    request_packet_on(&path(rs), req, dst)
}

/// [`request_packet_to`] on `path`.
fn request_packet_on(path: &ScionPathRepr, req: &RequestBuilder, dst: Ipv4Addr) -> Vec<u8> {
    let payload = b"telemetry please";
    let hbh_len = req.hbh_len();
    let scion = ScionRepr {
        version: 0,
        traffic_class: 0,
        flow_id: FlowId::from_u20(7),
        next_header: NextHdr::HopByHop,
        path_type: PathType::Scion,
        path_len: path.buffer_len(),
        payload_len: (hbh_len + 8 + payload.len()) as u16,
        dst_ia: ases()[3],
        src_ia: ases()[0],
        dst_host: HostAddr::V4(dst),
        src_host: HostAddr::V4(SRC_HOST),
    };
    let hl = scion.header_len();
    let mut pkt = vec![0u8; hl + hbh_len + 8 + payload.len()];
    scion.emit(&mut pkt).unwrap();
    path.emit(&mut pkt[scion.address_end()..]).unwrap();
    req.emit_signed(&mut pkt[hl..], 17, &source_key()).unwrap();
    UdpRepr {
        src_port: 40000,
        dst_port: 31000,
        payload_len: payload.len() as u16,
        checksum: 0,
    }
    .emit(&mut pkt[hl + hbh_len..])
    .unwrap();
    pkt[hl + hbh_len + 8..].copy_from_slice(payload);
    pkt
}

/// A telemetry source with distinct, recorded values per router.
#[derive(Default)]
struct Recorder {
    node: u32,
    /// Every value handed out: (instruction code, value).
    given: Vec<(u8, u64)>,
    total_tx: u64,
}

impl Recorder {
    fn give(&mut self, code: u8, v: u64) -> u64 {
        self.given.push((code, v));
        v
    }
}

impl TelemetrySource for Recorder {
    fn node_id(&self) -> Option<u32> {
        Some(self.node)
    }
    fn ingress_timestamp_ns(&mut self, c: &HopContext) -> Option<u64> {
        let v = (c.now_ns + u64::from(self.node) * 1000) & 0xffff_ffff_ffff;
        Some(self.give(code::INGRESS_TIMESTAMP, v))
    }
    fn egress_timestamp_ns(&mut self, c: &HopContext) -> Option<u64> {
        let v = (c.now_ns + u64::from(self.node) * 1000 + 250) & 0xffff_ffff_ffff;
        Some(self.give(code::EGRESS_TIMESTAMP, v))
    }
    fn queue(&mut self, _ifid: u16, m: QueueMetric) -> Option<u32> {
        // Router 3 (RB2) cannot measure its queue: the slot must stay empty.
        if m != QueueMetric::QueueLen || self.node == 3 {
            return None;
        }
        Some(self.give(code::QUEUE_LEN, u64::from(self.node * 7)) as u32)
    }
    fn total_counter(&mut self, d: Direction, k: CounterKind) -> Option<u64> {
        assert_eq!((d, k), (Direction::Tx, CounterKind::Packets));
        let v = self.total_tx;
        Some(self.give(code::EGRESS_TOTAL_PACKETS, v))
    }
}

/// Keys that answer only for some verifiers (to model a router without a key).
struct NoKeys;
impl VerifierKeys for NoKeys {
    fn find(&mut self, _: IsdAsn, _: &HostAddr, _: u64) -> Option<KeyHandle> {
        None
    }
    fn key(&self, _: KeyHandle) -> Option<&Aes128Enc> {
        None
    }
}

/// A nonce source that counts (so tests see which entries took a nonce).
struct Counting(u8);
impl NonceSource for Counting {
    fn nonce(&mut self) -> [u8; 12] {
        self.0 += 1;
        [self.0; 12]
    }
}

fn stage(r: usize, rs: &[Router]) -> IdIntStage<DrkeyKeys, Recorder, Counting> {
    stage_with_cache(r, rs, 16)
}

/// [`stage`] with a key cache of about `capacity` keys.
fn stage_with_cache(
    r: usize,
    rs: &[Router],
    capacity: usize,
) -> IdIntStage<DrkeyKeys, Recorder, Counting> {
    let asi = ROUTER_AS[r];
    let provider = Arc::new(LocalProvider::new(ases()[asi], &secret(asi), EPOCH).unwrap());
    let keys = DrkeyKeys {
        cache: KeyCache::new(provider, capacity),
        local: rs[r].local_ia(),
    };
    let mut source = Recorder {
        node: r as u32 + 1,
        ..Recorder::default()
    };
    // RB1 and RB2 report counts whose sum overflows 48 bits.
    source.total_tx = match r {
        1 => 0xffff_ffff_fff0,
        2 => 0x25,
        _ => 1000 * (r as u64 + 1),
    };
    IdIntStage::new(keys, source, Counting(r as u8 * 16))
}

/// The ingress of each router on the way, and the decision it must take.
fn hops() -> [(Ingress, Disposition); 5] {
    [
        (Ingress::Internal, Disposition::Forward { ifid: 1 }),
        (
            Ingress::External(2),
            Disposition::Sibling {
                ifid: 3,
                addr: sock(3),
            },
        ),
        (Ingress::Sibling(2), Disposition::Forward { ifid: 3 }),
        (Ingress::External(4), Disposition::Forward { ifid: 5 }),
        (
            Ingress::External(6),
            Disposition::Deliver {
                addr: SocketAddr::new(IpAddr::V4(DST_HOST), 31000),
            },
        ),
    ]
}

struct Trip {
    packet: Vec<u8>,
    stages: Vec<IdIntStage<DrkeyKeys, Recorder, Counting>>,
}

fn traverse(req: &RequestBuilder) -> Trip {
    traverse_with(req, true)
}

fn traverse_with(req: &RequestBuilder, fast: bool) -> Trip {
    let rs = routers();
    let mut packet = request_packet(&rs, req);
    let len = packet.len();
    let mut stages: Vec<_> = (0..5)
        .map(|r| {
            let s = stage(r, &rs);
            if fast { s } else { s.without_fast_path() }
        })
        .collect();
    for (r, (ingress, want)) in hops().into_iter().enumerate() {
        let mut p = Processor::new(&rs[r]);
        let d = p.process_with(&mut packet, len, ingress, NOW, &mut stages[r]);
        assert_eq!(d, want, "router {r}");
        assert_eq!(packet.len(), len, "packets never change size");
    }
    Trip { packet, stages }
}

fn hbh_range(pkt: &[u8]) -> std::ops::Range<usize> {
    let hl = usize::from(pkt[5]) * 4;
    hl..hl + (usize::from(pkt[hl + 1]) + 1) * 4
}

/// Verifies and decrypts at the destination host; the decoded entries.
fn verify(pkt: &mut [u8]) -> Result<Vec<DecodedEntry>, OpenError> {
    let r = hbh_range(pkt);
    let mut idint = IdInt::locate(&mut pkt[r])
        .map_err(|e| OpenError::Verify(VerifyError::Malformed(e)))?
        // A flipped option type hides the whole request.
        .ok_or(OpenError::Verify(VerifyError::NoSourceEntry))?;
    let keys: Vec<Aes128Enc> = (0..4).map(as_key).collect();
    // Hop-field index -> AS: hop j belongs to AS j on this single-segment path.
    let mut window = ReplayWindow::<16>::new(60_000_000_000, 1_000_000_000);
    open(&mut idint, &mut window, NOW, &source_key(), |_, e| {
        keys.get(usize::from(e.hop()))
    })?;
    decode_entries(&idint)
        .collect::<Result<Vec<_>, _>>()
        .map_err(OpenError::Decode)
}

fn request(mode: AggregationMode, encrypt: bool) -> RequestBuilder {
    RequestBuilder {
        encrypt,
        mode,
        verifier: Verifier::Destination,
        inst_bitmap: 0xf,
        aggregation: [Af::First, Af::Last, Af::Max, Af::Sum],
        instructions: INSTRUCTIONS,
        stack_len_words: 120,
        source_port: 9,
        ..RequestBuilder::new(NOW % (1 << 48))
    }
}

/// The metadata router `r` wrote from its recorder's values.
fn written_by(trip: &Trip, r: usize, ingress_if: u16, egress_if: u16) -> Metadata {
    let given = &trip.stages[r].source().given;
    let slot = |code: u8| {
        given.iter().find(|g| g.0 == code).map(|&(c, v)| SlotValue {
            len: Instruction(c).data_len() as u8,
            value: v,
        })
    };
    Metadata {
        node_id: Some(r as u32 + 1),
        node_count: Some(1),
        ingress_if: Some(ingress_if),
        egress_if: Some(egress_if),
        slots: INSTRUCTIONS.map(|i| slot(i.0)),
    }
}

const IFS: [(u16, u16); 5] = [(0, 1), (2, 3), (0, 3), (4, 5), (6, 0)];
const HOPS: [u8; 5] = [0, 1, 1, 2, 3];

#[test]
fn every_router_pushes_in_mode_0_and_the_destination_reads_exactly_its_values() {
    for encrypt in [false, true] {
        let mut trip = traverse(&request(AggregationMode::Off, encrypt));
        let entries = verify(&mut trip.packet).expect("verifies");
        assert_eq!(entries.len(), 6);
        assert!(entries[0].source);
        for r in 0..5 {
            let e = &entries[r + 1];
            assert_eq!(
                e.metadata,
                written_by(&trip, r, IFS[r].0, IFS[r].1),
                "router {r}"
            );
            assert_eq!(e.hop, HOPS[r]);
            assert_eq!(e.encrypted, encrypt, "mode 0 closes every entry");
            assert!(!e.aggregated);
            let first = matches!(hops()[r].0, Ingress::External(_));
            let egress = matches!(hops()[r].1, Disposition::Forward { .. });
            assert_eq!((e.ingress, e.egress), (first, egress), "router {r}");
        }
        // RB2 measured no queue: its slot is empty, not invented.
        assert_eq!(entries[3].metadata.slots[2], None);
    }
}

#[test]
fn mode_1_aggregates_one_entry_per_as_with_every_function() {
    let mut trip = traverse(&request(AggregationMode::PerAs, true));
    let entries = verify(&mut trip.packet).expect("verifies");
    assert_eq!(entries.len(), 5, "source + one entry per AS");
    let b = &entries[2];
    let rb1 = written_by(&trip, 1, 2, 3);
    let rb2 = written_by(&trip, 2, 0, 3);
    assert!(b.aggregated && b.ingress && b.egress && b.encrypted);
    assert_eq!(b.hop, 1);
    let m = b.metadata;
    assert_eq!(m.node_id, Some(3), "newest node id");
    assert_eq!(m.node_count, Some(2));
    assert_eq!((m.ingress_if, m.egress_if), (Some(2), Some(3)));
    assert_eq!(m.slots[0], rb1.slots[0], "first");
    assert_eq!(m.slots[1], rb2.slots[1], "last");
    assert_eq!(
        m.slots[2], rb1.slots[2],
        "max with an empty side keeps the value"
    );
    // Sum wraps in the 6-byte slot: 0xffff_ffff_fff0 + 0x25 = 0x15.
    assert_eq!(
        m.slots[3],
        Some(SlotValue {
            len: 6,
            value: 0x15
        })
    );
    for (i, r) in [(1, 0), (3, 3), (4, 4)] {
        assert_eq!(
            entries[i].metadata,
            written_by(&trip, r, IFS[r].0, IFS[r].1)
        );
        assert!(!entries[i].aggregated);
    }
}

#[test]
fn mode_2_pushes_at_ingress_and_egress_and_encrypts_only_closing_entries() {
    let mut trip = traverse(&request(AggregationMode::PerBorderRouter, true));
    let entries = verify(&mut trip.packet).expect("verifies");
    assert_eq!(entries.len(), 6);
    let encrypted: Vec<bool> = entries[1..].iter().map(|e| e.encrypted).collect();
    // RB1 hands the packet to its sibling: its entry is not closing.
    assert_eq!(encrypted, [true, false, true, true, true]);
    assert_eq!(trip.stages[1].nonces().0, 16, "RB1 drew no nonce");
    for r in 0..5 {
        assert_eq!(
            entries[r + 1].metadata,
            written_by(&trip, r, IFS[r].0, IFS[r].1)
        );
    }
}

#[test]
fn flipping_any_authenticated_byte_is_detected() {
    let trip = traverse(&request(AggregationMode::PerBorderRouter, true));
    let r = hbh_range(&trip.packet);
    let (main_at, used_end) = {
        let idint = IdInt::locate(&trip.packet[r.clone()]).unwrap().unwrap();
        let main_at = r.start + idint.main_offset();
        let stack = idint.stack_range();
        (main_at, r.start + stack.start + idint.used_len())
    };
    let mut checked = 0;
    for at in main_at..used_end {
        for bit in 0..8 {
            let off = at - main_at;
            // Mutable fields outside the source MAC by design: X flag, TOS, DelayHops and its
            // reserved bits.
            if (off == 2 && bit == 1) || off == 6 || off == 7 {
                continue;
            }
            let mut p = trip.packet.clone();
            p[at] ^= 1 << bit;
            assert!(
                verify(&mut p).is_err(),
                "flip at {off} bit {bit} undetected"
            );
            checked += 1;
        }
    }
    assert!(checked > 1000);
}

#[test]
fn a_full_stack_sets_x_and_adds_nothing() {
    // Source entry (12) + 2 router entries without encryption (6 + 10 + 24 + 2 + 4 = 46 -> 48)
    // do not fit in 25 words; room for the source entry and one router entry only.
    let mut req = request(AggregationMode::Off, false);
    req.stack_len_words = 3 + 12;
    let mut trip = traverse(&req);
    let r = hbh_range(&trip.packet);
    {
        let idint = IdInt::locate(&trip.packet[r.clone()]).unwrap().unwrap();
        assert!(idint.main().stack_full());
    }
    let entries = verify(&mut trip.packet).expect("X is outside the MAC");
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1].metadata, written_by(&trip, 0, 0, 1));
    let full: u64 = trip.stages.iter().map(|s| s.counters().stack_full).sum();
    assert_eq!(full, 4);
    // A fast push that finds the stack full leaves the packet to the general path without
    // looking the key up first: each router asks its key cache as often as without a fast
    // path.
    let lookups = |t: &Trip| -> Vec<u64> {
        t.stages
            .iter()
            .map(|s| {
                let c = s.keys().cache.stats();
                c.hits + c.misses
            })
            .collect()
    };
    assert_eq!(lookups(&trip), lookups(&traverse_with(&req, false)));
}

#[test]
fn delay_hops_skips_the_first_ases() {
    let mut req = request(AggregationMode::PerBorderRouter, false);
    req.delay_hops = 2;
    let mut trip = traverse(&req);
    let entries = verify(&mut trip.packet).expect("verifies");
    // A and B are skipped (their closing routers RA and RB2 count down), C and D write.
    let hops: Vec<u8> = entries[1..].iter().map(|e| e.hop).collect();
    assert_eq!(hops, [2, 3]);
    assert_eq!(entries[1].metadata, written_by(&trip, 3, 4, 5));
    let delayed: Vec<u64> = trip.stages.iter().map(|s| s.counters().delayed).collect();
    assert_eq!(delayed, [1, 1, 1, 0, 0]);
}

#[test]
fn a_router_without_a_key_leaves_the_packet_unchanged() {
    let rs = routers();
    let mut packet = request_packet(&rs, &request(AggregationMode::Off, true));
    let mut p = Processor::new(&rs[0]);
    let mut st = IdIntStage::new(NoKeys, Recorder::default(), Counting(0));
    let mut expect = packet.clone();
    let len = packet.len();
    // Same processing without ID-INT: only the path changes.
    Processor::new(&rs[0]).process(&mut expect, len, Ingress::Internal, NOW);
    let d = p.process_with(&mut packet, len, Ingress::Internal, NOW, &mut st);
    assert_eq!(d, Disposition::Forward { ifid: 1 });
    assert_eq!(packet, expect);
    assert_eq!(st.counters().no_key, 1);
    assert_eq!(st.counters().pushed, 0);
}

#[test]
fn replays_and_stale_requests_are_refused() {
    let trip = traverse(&request(AggregationMode::Off, false));
    let r = hbh_range(&trip.packet);
    let keys: Vec<Aes128Enc> = (0..4).map(as_key).collect();
    let mut window = ReplayWindow::<16>::new(60_000_000_000, 1_000_000_000);
    let sk = source_key();
    let mut run = |now: u64| {
        let mut p = trip.packet.clone();
        let mut idint = IdInt::locate(&mut p[r.clone()]).unwrap().unwrap();
        open(&mut idint, &mut window, now, &sk, |_, e| {
            keys.get(usize::from(e.hop()))
        })
    };
    assert_eq!(run(NOW), Ok(6));
    assert_eq!(run(NOW), Err(OpenError::Replay(ReplayError::Replayed)));
    assert!(matches!(
        run(NOW + 61_000_000_000),
        Err(OpenError::Replay(ReplayError::Stale { .. }))
    ));
}

#[test]
fn a_wrong_key_names_the_entry() {
    let trip = traverse(&request(AggregationMode::Off, true));
    let r = hbh_range(&trip.packet);
    let mut keys: Vec<Aes128Enc> = (0..4).map(as_key).collect();
    keys[2] = aes128(&[9; 16]); // AS C's key is wrong: entry 4 (RC) must fail.
    let mut p = trip.packet.clone();
    let mut idint = IdInt::locate(&mut p[r]).unwrap().unwrap();
    let mut window = ReplayWindow::<16>::new(60_000_000_000, 1_000_000_000);
    let got = open(&mut idint, &mut window, NOW, &source_key(), |_, e| {
        keys.get(usize::from(e.hop()))
    });
    assert_eq!(
        got,
        Err(OpenError::Verify(VerifyError::BadMac { index: 4 }))
    );
}

#[test]
fn bursts_with_many_verifiers_and_plain_packets_equal_single_packets() {
    // A cache that holds every key of the burst.
    many_verifiers_in_one_burst(16, 21);
}

#[test]
fn bursts_whose_keys_evict_each_other_equal_single_packets() {
    // A cache of two keys: looking up later verifiers of the burst evicts the keys of earlier
    // ones, whose handles go stale before the burst is sealed.
    let evictions = many_verifiers_in_one_burst(2, 21);
    assert!(evictions > 7, "the burst evicted keys: {evictions}");
}

#[test]
fn full_bursts_whose_keys_evict_each_other_equal_single_packets() {
    // As many packets as a burst takes: entries past the 32nd have stale handles too (the
    // burst pass once tracked its entries in 32-bit masks).
    let evictions = many_verifiers_in_one_burst(2, scion_dp::process::MAX_BURST as u8);
    assert!(evictions > 30, "the burst evicted keys: {evictions}");
}

/// Processes `packets` packets (seven verifiers, encrypted and not, packets without ID-INT in
/// between) one by one and as one burst, with a key cache of `capacity`; both must give the
/// same bytes, decisions and counters (single packets are sealed at once with the key just
/// looked up). Returns the burst cache's evictions.
fn many_verifiers_in_one_burst(capacity: usize, packets: u8) -> u64 {
    let rs = routers();
    let mut inputs = Vec::new();
    for i in 0..packets {
        let req = request(AggregationMode::Off, i % 2 == 0);
        let dst = Ipv4Addr::new(10, 4, 0, 1 + i % 7);
        let mut p = request_packet_to(&rs, &req, dst);
        if i % 5 == 4 {
            p[4] = 17; // no longer carries the HBH header: a plain packet for the router
        }
        inputs.push(p);
    }
    let (_, sb) = burst_equals_singles(&rs, 0, Ingress::Internal, &inputs, || {
        stage_with_cache(0, &rs, capacity)
    });
    assert!(sb.counters().pushed >= u64::from(packets) * 3 / 4);
    assert_eq!(sb.counters().no_key, 0);
    sb.keys().cache.stats().evictions
}

/// A packet's decision and bytes after a router.
type Outcome = (Disposition, Vec<u8>);

/// Processes `inputs` at router `r` (arriving on `ingress`) one by one with the stage `make`
/// builds, and as one burst with another; asserts both give the same decisions, bytes and
/// counters. Returns the decisions and packets, and the burst's stage.
fn burst_equals_singles<K: VerifierKeys, S: TelemetrySource>(
    rs: &[Router],
    r: usize,
    ingress: Ingress,
    inputs: &[Vec<u8>],
    make: impl Fn() -> IdIntStage<K, S, Counting>,
) -> (Vec<Outcome>, IdIntStage<K, S, Counting>) {
    use scion_dp::PacketSlot;
    // One by one through the general path (no plans), and through the fast path (plans
    // kept from packet to packet): the same.
    let one_by_one = |mut st: IdIntStage<K, S, Counting>| {
        let mut p = Processor::new(&rs[r]);
        let out: Vec<_> = inputs
            .iter()
            .map(|input| {
                let mut b = input.clone();
                let len = b.len();
                (p.process_with(&mut b, len, ingress, NOW, &mut st), b)
            })
            .collect();
        (out, st)
    };
    let (general, sg) = one_by_one(make().without_fast_path());
    let (single, st) = one_by_one(make());
    for (i, (g, s)) in general.iter().zip(&single).enumerate() {
        assert_eq!(g, s, "packet {i}: general path vs planned single packets");
    }
    assert_eq!(sg.counters(), st.counters());
    let mut sb = make();
    let mut p = Processor::new(&rs[r]);
    let mut bufs: Vec<Vec<u8>> = inputs.to_vec();
    let mut slots: Vec<PacketSlot<'_>> = bufs
        .iter_mut()
        .map(|b| {
            let len = b.len();
            PacketSlot {
                buf: b,
                len,
                ingress,
                disposition: None,
            }
        })
        .collect();
    p.process_burst_with(&mut slots, NOW, &mut sb);
    let ds: Vec<_> = slots.iter().map(|s| s.disposition.unwrap()).collect();
    drop(slots);
    for (i, ((d, b), (db, bb))) in single.iter().zip(ds.iter().zip(&bufs)).enumerate() {
        assert_eq!(d, db, "packet {i}");
        assert_eq!(b, bb, "packet {i}");
    }
    assert_eq!(sb.counters(), st.counters());
    (single, sb)
}

/// Where the new entry of a fresh request goes in `pkt` (end of the source entry), as an
/// offset into the packet.
fn first_free(pkt: &[u8]) -> usize {
    let hl = usize::from(pkt[5]) * 4;
    let s = hl + 2 + usize::from(pkt[hl + 3]) + 2;
    s + usize::from(pkt[s + 1]) + 2
}

#[test]
fn a_flows_plan_is_taken_only_by_packets_that_decide_alike() {
    // One flow's packets (a stack with one padding option: the burst's first push leaves a
    // plan), with packets in between that differ in one thing each that the plan depends on.
    // The burst must write exactly what the packets processed one by one get.
    let rs = routers();
    let req = |encrypt: bool, ts: u64| RequestBuilder {
        stack_len_words: 64,
        source_timestamp: ts,
        ..request(AggregationMode::Off, encrypt)
    };
    let base = request_packet(&rs, &req(false, NOW % (1 << 48)));
    let free = first_free(&base);
    assert_eq!(base[free], 1, "one PadN option after the source entry");
    let mut inputs = vec![base.clone(), base.clone()];
    // Another verifier.
    inputs.push(request_packet_to(
        &rs,
        &req(false, NOW % (1 << 48)),
        Ipv4Addr::new(10, 4, 0, 9),
    ));
    inputs.push(base.clone());
    // Encryption asked for.
    inputs.push(request_packet(&rs, &req(true, NOW % (1 << 48))));
    inputs.push(base.clone());
    // Another source timestamp: not part of the plan, but of the MAC chain.
    inputs.push(request_packet(&rs, &req(false, NOW % (1 << 48) - 1000)));
    // The padding split in two options.
    let mut split = base.clone();
    let rest = usize::from(split[free + 1]);
    split[free + 1] = 0;
    split[free + 2] = 1;
    split[free + 3] = (rest - 2) as u8;
    inputs.push(split);
    inputs.push(base.clone());
    // A padding option that runs past the stack (malformed).
    let mut long_pad = base.clone();
    long_pad[free + 1] += 4;
    inputs.push(long_pad);
    inputs.push(base.clone());
    // A source entry whose length disagrees with its metadata lengths (malformed).
    let mut bad_top = base.clone();
    let hl = usize::from(bad_top[5]) * 4;
    let s = hl + 2 + usize::from(bad_top[hl + 3]) + 2;
    bad_top[s + 1] += 4;
    inputs.push(bad_top);
    inputs.push(base.clone());
    // DelayHops 1.
    let mut delayed = base.clone();
    delayed[hl + 8] = 1 << 2;
    inputs.push(delayed);
    inputs.push(base.clone());
    // Not carrying the HBH header.
    let mut plain = base.clone();
    plain[4] = 17;
    inputs.push(plain);
    inputs.push(base.clone());

    let (single, sb) = burst_equals_singles(&rs, 0, Ingress::Internal, &inputs, || stage(0, &rs));
    assert_eq!(sb.counters().pushed, 13);
    assert_eq!(sb.counters().malformed, 2);
    assert_eq!(sb.counters().delayed, 1);
    // The burst's packets of the flow verify at the destination like any other.
    let mut first = single[1].1.clone();
    let len = first.len();
    let mut ps: Vec<Processor<'_>> = rs.iter().map(Processor::new).collect();
    let mut stages: Vec<_> = (1..5).map(|r| stage(r, &rs)).collect();
    for (r, (ingress, want)) in hops().into_iter().enumerate().skip(1) {
        let d = ps[r].process_with(&mut first, len, ingress, NOW, &mut stages[r - 1]);
        assert_eq!(d, want, "router {r}");
    }
    assert_eq!(verify(&mut first).expect("verifies").len(), 6);

    // At the next router the stack already holds an entry: the plan checks the top entry and
    // the source entry below it.
    let after_ra = single[0].1.clone();
    let mut corrupt_source = after_ra.clone();
    corrupt_source[s] = 1;
    let mut corrupt_top = after_ra.clone();
    corrupt_top[free + 2] ^= 0x20;
    let inputs = [
        after_ra.clone(),
        after_ra.clone(),
        corrupt_source,
        after_ra.clone(),
        corrupt_top,
        after_ra,
    ];
    let (ingress, want) = hops()[1];
    let (single, sb) = burst_equals_singles(&rs, 1, ingress, &inputs, || stage(1, &rs));
    assert!(single.iter().all(|(d, _)| *d == want));
    // The flipped E flag of the top entry is not malformed (the verifier will reject its MAC).
    assert_eq!(sb.counters().pushed, 5);
    assert_eq!(sb.counters().malformed, 1);
}

/// A source that measures its queue only every other time it is asked.
struct Flaky {
    asked: u32,
}
impl TelemetrySource for Flaky {
    fn node_id(&self) -> Option<u32> {
        Some(9)
    }
    fn ingress_timestamp_ns(&mut self, c: &HopContext) -> Option<u64> {
        Some(c.now_ns & 0xffff_ffff_ffff)
    }
    fn queue(&mut self, _ifid: u16, m: QueueMetric) -> Option<u32> {
        self.asked += 1;
        (m == QueueMetric::QueueLen && self.asked.is_multiple_of(2)).then_some(self.asked)
    }
}

#[test]
fn a_flows_plan_lays_out_what_the_source_supplies_each_time() {
    // The planning packet's source supplied its queue length; the next packet's does not, the
    // one after does again: each entry holds exactly what was supplied for it, as when the
    // packets are processed one by one.
    let rs = routers();
    let req = RequestBuilder {
        stack_len_words: 64,
        ..request(AggregationMode::Off, false)
    };
    let inputs: Vec<Vec<u8>> = (0..6).map(|_| request_packet(&rs, &req)).collect();
    let (single, sb) = burst_equals_singles(&rs, 0, Ingress::Internal, &inputs, || {
        let (keys, _, nonces, _) = stage(0, &rs).into_parts();
        IdIntStage::new(keys, Flaky { asked: 1 }, nonces)
    });
    assert_eq!(sb.counters().pushed, 6);
    // Entries with and without the queue length alternate (their lengths differ).
    let lens: Vec<usize> = single
        .iter()
        .map(|(_, b)| {
            let mut b = b.clone();
            let r = hbh_range(&b);
            let idint = IdInt::locate(&mut b[r]).unwrap().unwrap();
            let top = idint.top().unwrap();
            idint.entry_at(top.offset).unwrap().as_bytes().len()
        })
        .collect();
    assert_ne!(lens[0], lens[1]);
    assert_eq!(lens[0], lens[2]);
    assert_eq!(lens[1], lens[3]);
}

/// One key for every verifier at every time.
struct Pinned(Aes128Enc);
impl VerifierKeys for Pinned {
    fn find(&mut self, _: IsdAsn, _: &HostAddr, _: u64) -> Option<KeyHandle> {
        Some(KeyHandle {
            index: 0,
            generation: 1,
        })
    }
    fn key(&self, _: KeyHandle) -> Option<&Aes128Enc> {
        Some(&self.0)
    }
}

/// The keys of a router's AS for every host but one.
struct AllBut(DrkeyKeys, Ipv4Addr);
impl VerifierKeys for AllBut {
    fn find(&mut self, ia: IsdAsn, host: &HostAddr, now_ns: u64) -> Option<KeyHandle> {
        if *host == HostAddr::V4(self.1) {
            return None;
        }
        self.0.find(ia, host, now_ns)
    }
    fn key(&self, h: KeyHandle) -> Option<&Aes128Enc> {
        self.0.key(h)
    }
}

#[test]
fn a_flows_plan_serves_other_verifiers_of_the_same_kind() {
    // One request shape to several destination hosts (each its own verifier and key), one of
    // them a host this router has no key for: the plan holds for all but the key.
    let rs = routers();
    let req = RequestBuilder {
        stack_len_words: 64,
        ..request(AggregationMode::Off, true)
    };
    let hosts = [1u8, 1, 2, 2, 3, 1, 9, 9, 2, 1];
    let inputs: Vec<Vec<u8>> = hosts
        .iter()
        .map(|&h| request_packet_to(&rs, &req, Ipv4Addr::new(10, 4, 0, h)))
        .collect();
    let (single, sb) = burst_equals_singles(&rs, 0, Ingress::Internal, &inputs, || {
        let (keys, source, nonces, _) = stage(0, &rs).into_parts();
        IdIntStage::new(AllBut(keys, Ipv4Addr::new(10, 4, 0, 9)), source, nonces)
    });
    assert_eq!(sb.counters().pushed, 8);
    assert_eq!(sb.counters().no_key, 2);
    // Without a key the packet's ID-INT options leave unchanged.
    let r = hbh_range(&inputs[6]);
    assert_eq!(single[6].1[r.clone()], inputs[6][r.clone()]);
    assert_ne!(single[5].1[r.clone()], inputs[5][r]);
}

#[test]
fn a_plan_kept_from_earlier_packets_seals_with_the_key_of_each_packets_time() {
    // A flow's plan outlives its packet (single packets) and its burst. A packet of the flow
    // in the next DRKey epoch must be sealed with that epoch's key, exactly as by a stage that
    // never saw the flow, and not with the key the plan found.
    use scion_dp::PacketSlot;
    let rs = routers();
    let req = RequestBuilder {
        stack_len_words: 64,
        ..request(AggregationMode::Off, false)
    };
    let input = request_packet(&rs, &req);
    let len = input.len();
    // NOW is 1600 s into an epoch of 3600 s.
    let later = NOW + 2001 * 1_000_000_000;
    let once = |st: &mut IdIntStage<DrkeyKeys, Recorder, Counting>, at: u64| {
        let mut b = input.clone();
        let d = Processor::new(&rs[0]).process_with(&mut b, len, Ingress::Internal, at, st);
        assert_eq!(d, Disposition::Forward { ifid: 1 });
        b
    };
    let burst = |st: &mut IdIntStage<DrkeyKeys, Recorder, Counting>, at: u64| {
        let mut bufs = vec![input.clone(); 3];
        let mut slots: Vec<PacketSlot<'_>> = bufs
            .iter_mut()
            .map(|b| PacketSlot {
                buf: b,
                len,
                ingress: Ingress::Internal,
                disposition: None,
            })
            .collect();
        Processor::new(&rs[0]).process_burst_with(&mut slots, at, st);
        drop(slots);
        bufs
    };
    let fresh = once(&mut stage(0, &rs), later);
    let fresh_general = once(&mut stage(0, &rs).without_fast_path(), later);
    assert_eq!(fresh, fresh_general);
    let now = once(&mut stage(0, &rs), NOW);
    // What the NOW epoch's key would give later: another MAC (so the checks below can fail).
    let pinned = |st: IdIntStage<DrkeyKeys, Recorder, Counting>| {
        let (_, source, nonces, _) = st.into_parts();
        IdIntStage::new(Pinned(as_key(ROUTER_AS[0])), source, nonces)
    };
    let mut b = input.clone();
    Processor::new(&rs[0]).process_with(
        &mut b,
        len,
        Ingress::Internal,
        later,
        &mut pinned(stage(0, &rs)),
    );
    assert_ne!(b, fresh);
    // The same entry but for its 4-byte MAC.
    let diff: Vec<usize> = (0..len).filter(|&i| b[i] != fresh[i]).collect();
    assert!(diff.last().unwrap() - diff[0] < 4, "{diff:?}");
    // Single packets: a plan from NOW, used at NOW and then later.
    let mut st = stage(0, &rs);
    assert_eq!(once(&mut st, NOW), now);
    assert_eq!(once(&mut st, NOW), now);
    assert_eq!(once(&mut st, later), fresh);
    assert_eq!(st.counters().pushed, 3);
    // Bursts: the plan of a burst at NOW used by the next burst, later.
    let mut st = stage(0, &rs);
    assert!(burst(&mut st, NOW).iter().all(|b| *b == now));
    assert!(burst(&mut st, later).iter().all(|b| *b == fresh));
    // And a single packet after the bursts, back at NOW.
    assert_eq!(once(&mut st, NOW), now);
    assert_eq!(st.counters().pushed, 7);
}

#[test]
fn bursts_write_the_same_telemetry_as_single_packets() {
    // Eight copies of a mode-1 encrypted request through RA, one by one and as one burst
    // (fresh stages: the same nonce sequence).
    let rs = routers();
    let req = request(AggregationMode::PerAs, true);
    let inputs = vec![request_packet(&rs, &req); 8];
    let (single, sb) = burst_equals_singles(&rs, 0, Ingress::Internal, &inputs, || stage(0, &rs));
    assert!(
        single
            .iter()
            .all(|(d, _)| *d == Disposition::Forward { ifid: 1 })
    );
    assert_eq!(sb.counters().pushed, 8);
    assert_eq!(sb.counters().encrypted, 8);
}

mod infrastructure {
    use super::*;
    use idint_report::{idint_hbh, report_from_packet, v1};
    use scion_dp::DropReason;
    use scion_dp::idint::{ReportExporter, SinkRecord};
    use scion_dp::probe::{ProbeRequest, ProbeSource, ProbeTarget};

    const COLLECTOR: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 100);

    /// Builds protobuf reports from sink records (in a router this runs off the packet path).
    struct Reports(Vec<v1::Report>);
    impl ReportExporter for Reports {
        fn export(&mut self, r: &SinkRecord<'_>) -> bool {
            let exporter = v1::Exporter {
                isd_as: ases()[3].to_u64(),
                router_id: 5,
                name: "rd".into(),
            };
            let rep = report_from_packet(&exporter, r.receive_ns, r.ingress.ifid(), r.packet);
            self.0.push(rep.expect("sink packets parse"));
            true
        }
    }

    /// The collector's keys: K(AS i -> A:collector) and the probe source's host-to-host key
    /// K(A:RA -> A:collector).
    fn collector_keys() -> (Vec<Aes128Enc>, Aes128Enc) {
        let a = ases()[0];
        let col = HostAddr::V4(COLLECTOR);
        let as_keys = (0..4)
            .map(|i| {
                let asi = ases()[i];
                let p = LocalProvider::new(asi, &secret(i), EPOCH).unwrap();
                let (_, l1) = p.level1(Protocol::IDINT, asi, a, NOW_S).unwrap();
                drkey::as_host(&l1.cipher(), &col).unwrap().cipher()
            })
            .collect();
        let p = LocalProvider::new(a, &secret(0), EPOCH).unwrap();
        let (_, l1) = p.level1(Protocol::IDINT, a, a, NOW_S).unwrap();
        let router = HostAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        let ha = host_as(&l1.cipher(), &router).unwrap();
        (as_keys, host_host(&ha.cipher(), &col).unwrap().cipher())
    }

    fn probe_trip(deliver: bool) -> (Vec<u8>, Disposition, Vec<v1::Report>, u64) {
        probe_trip_with(deliver, |p| p)
    }

    /// Doubles the ID-INT options of a packet: the main option and stack appear twice in the
    /// hop-by-hop header (malformed: the specification allows one).
    fn with_second_request(mut p: Vec<u8>) -> Vec<u8> {
        let r = hbh_range(&p);
        let (main_at, used_end, used_words) = {
            let idint = IdInt::locate(&p[r.clone()]).unwrap().unwrap();
            let stack = idint.stack_range();
            let used = idint.used_len();
            (
                r.start + idint.main_offset(),
                r.start + stack.start + used,
                used / 4,
            )
        };
        // The copy: the main option and just the used part of its stack.
        let mut extra = p[main_at..used_end].to_vec();
        extra[4] = used_words as u8;
        // The copy starts at an offset = 2 (mod 4) after 2 bytes of PadN-free alignment:
        // main options are 2 (mod 4) long and stacks 0 (mod 4), so a Pad of 2 keeps it valid.
        let mut insert = vec![1u8, 0];
        insert.extend_from_slice(&extra);
        let n = insert.len();
        p.splice(r.end..r.end, insert);
        p[r.start + 1] += (n / 4) as u8;
        let pl = u16::from_be_bytes([p[6], p[7]]) + n as u16;
        p[6..8].copy_from_slice(&pl.to_be_bytes());
        p
    }

    #[test]
    fn the_sink_strips_every_request_a_packet_carries() {
        let (pkt, d, reports, _) = probe_trip_with(true, with_second_request);
        assert!(matches!(d, Disposition::Deliver { .. }));
        assert_eq!(reports.len(), 1);
        let r = hbh_range(&pkt);
        assert!(IdInt::locate(&pkt[r]).unwrap().is_none());
    }

    fn probe_trip_with(
        deliver: bool,
        edit: impl Fn(Vec<u8>) -> Vec<u8>,
    ) -> (Vec<u8>, Disposition, Vec<v1::Report>, u64) {
        let rs = routers();
        let (_, src_key) = collector_keys();
        let mut probes = ProbeSource::new(
            ases()[0],
            HostAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            ases()[0],
            HostAddr::V4(COLLECTOR),
        );
        let mut raw_path = vec![0u8; path(&rs).buffer_len()];
        path(&rs).emit(&mut raw_path).unwrap();
        probes
            .add(
                ProbeTarget {
                    dst_ia: ases()[3],
                    dst_host: HostAddr::V4(DST_HOST),
                    dst_port: 31000,
                    path_type: PathType::Scion,
                    path: raw_path,
                    interval_ns: 1_000_000_000,
                    request: ProbeRequest {
                        encrypt: true,
                        deliver,
                        stack_len_words: 100,
                        ..ProbeRequest::default()
                    },
                },
                NOW,
            )
            .expect("a valid probe target");
        let mut buf = vec![0u8; 2048];
        assert!(
            probes.poll(NOW - 1, &src_key, &mut buf).is_none(),
            "not due yet"
        );
        let probe = probes.poll(NOW, &src_key, &mut buf).unwrap().unwrap();
        assert!(
            probes.poll(NOW, &src_key, &mut buf[..0]).is_none(),
            "one per interval"
        );
        assert_eq!(probes.next_due(), Some(NOW + 1_000_000_000));
        buf.truncate(probe.len);
        let mut buf = edit(buf);
        let len = buf.len();
        let mut stages: Vec<_> = (0..5).map(|r| stage(r, &rs)).collect();
        let mut sink = stage(4, &rs).with_sink(Reports(Vec::new()));
        let mut last = None;
        for (r, (ingress, _)) in hops().into_iter().enumerate() {
            let mut p = Processor::new(&rs[r]);
            let d = if r == 4 {
                p.process_with(&mut buf, len, ingress, NOW, &mut sink)
            } else {
                p.process_with(&mut buf, len, ingress, NOW, &mut stages[r])
            };
            last = Some(d);
        }
        let exported = sink.counters().exported;
        (buf, last.unwrap(), sink.into_parts().3.0, exported)
    }

    #[test]
    fn a_probe_round_trip_produces_a_report_that_decodes_and_verifies() {
        let (_, d, reports, exported) = probe_trip(false);
        assert_eq!(d, Disposition::Drop(DropReason::TelemetryConsumed));
        assert_eq!((reports.len(), exported), (1, 1));
        // Through the wire format, as the collector receives it.
        let batch = v1::ReportBatch {
            exporter: reports[0].exporter.clone(),
            sequence: 1,
            reports,
        };
        let bytes = idint_report::Message::encode_to_vec(&batch);
        let batch: v1::ReportBatch = idint_report::Message::decode(bytes.as_slice()).unwrap();
        let rep = &batch.reports[0];
        assert_eq!(rep.src_isd_as, ases()[0].to_u64());
        assert_eq!(rep.dst_isd_as, ases()[3].to_u64());
        assert_eq!(rep.ingress_interface, 6);
        let path = rep.path.as_ref().unwrap();
        let ifs: Vec<(u32, u32)> = path
            .hop_fields
            .iter()
            .map(|h| (h.cons_ingress, h.cons_egress))
            .collect();
        assert_eq!(ifs, [(0, 1), (2, 3), (4, 5), (6, 0)]);
        assert_eq!(rep.flow.as_ref().unwrap().dst_port, 31000);

        let mut hbh = idint_hbh(rep).unwrap();
        let mut idint = IdInt::locate(&mut hbh[..]).unwrap().unwrap();
        assert!(idint.main().infrastructure() && idint.main().discard());
        let (keys, src_key) = collector_keys();
        let mut window = ReplayWindow::<16>::new(60_000_000_000, 1_000_000_000);
        let n = open(&mut idint, &mut window, NOW, &src_key, |_, e| {
            keys.get(usize::from(e.hop()))
        })
        .expect("the collector verifies the probe");
        assert_eq!(n, 6, "source + RA, RB1, RB2, RC, RD");
        let entries: Vec<DecodedEntry> = decode_entries(&idint).map(|e| e.unwrap()).collect();
        let nodes: Vec<Option<u32>> = entries.iter().map(|e| e.metadata.node_id).collect();
        assert_eq!(nodes, [None, Some(1), Some(2), Some(3), Some(4), Some(5)]);
        // Bad input to the report helpers is an error, not a panic.
        let mut broken = rep.clone();
        broken.idint_stack.truncate(5);
        assert!(idint_hbh(&broken).is_err());
        assert!(report_from_packet(&v1::Exporter::default(), 0, 0, &[1, 2, 3]).is_err());
    }

    #[test]
    fn without_d_the_sink_strips_the_options_and_delivers() {
        let (pkt, d, reports, _) = probe_trip(true);
        assert!(matches!(d, Disposition::Deliver { .. }));
        assert_eq!(reports.len(), 1);
        let r = hbh_range(&pkt);
        assert!(
            IdInt::locate(&pkt[r]).unwrap().is_none(),
            "options are padding now"
        );
        let parsed = idint_wire::packet::Packet::parse(&pkt).unwrap();
        assert!(parsed.payload_len_matches());
    }
}

#[test]
fn the_fast_push_path_equals_the_general_path() {
    let mut scenarios = Vec::new();
    for mode in [
        AggregationMode::Off,
        AggregationMode::PerAs,
        AggregationMode::PerBorderRouter,
        AggregationMode::PerBorderRouterAndInternal,
    ] {
        for encrypt in [false, true] {
            scenarios.push(request(mode, encrypt));
            let mut delayed = request(mode, encrypt);
            delayed.delay_hops = 1;
            scenarios.push(delayed);
            let mut small = request(mode, encrypt);
            small.stack_len_words = 20;
            scenarios.push(small);
            let mut third = request(mode, encrypt);
            third.verifier = Verifier::ThirdParty {
                ia: ases()[2],
                host: HostAddr::V6("fd00::7".parse().unwrap()),
            };
            scenarios.push(third);
        }
    }
    for (i, req) in scenarios.iter().enumerate() {
        let fast = traverse_with(req, true);
        let general = traverse_with(req, false);
        assert_eq!(fast.packet, general.packet, "scenario {i}");
        for r in 0..5 {
            assert_eq!(
                fast.stages[r].counters(),
                general.stages[r].counters(),
                "scenario {i} router {r}"
            );
        }
    }
}

/// As `traverse`, with `internal` AS-internal nodes of AS B between RB1 and RB2.
fn traverse_with_internal_nodes(req: &RequestBuilder, internal: usize) -> (Trip, Vec<Recorder>) {
    let rs = routers();
    let mut packet = request_packet(&rs, req);
    let len = packet.len();
    let mut stages: Vec<_> = (0..5).map(|r| stage(r, &rs)).collect();
    let mut nodes: Vec<_> = (0..internal)
        .map(|i| {
            let mut s = stage(1, &rs);
            s.source_mut().node = 100 + i as u32;
            s.source_mut().total_tx = 7;
            s
        })
        .collect();
    for (r, (ingress, want)) in hops().into_iter().enumerate() {
        if r == 2 {
            for n in nodes.iter_mut() {
                n.process_internal(ases()[1], &mut packet, len, (11, 12), NOW);
            }
        }
        let mut p = Processor::new(&rs[r]);
        let d = p.process_with(&mut packet, len, ingress, NOW, &mut stages[r]);
        assert_eq!(d, want, "router {r}");
    }
    let recorders = nodes.into_iter().map(|n| n.into_parts().1).collect();
    (Trip { packet, stages }, recorders)
}

#[test]
fn internal_nodes_per_aggregation_mode() {
    let hop_b = |entries: &[DecodedEntry]| entries.iter().filter(|e| e.hop == 1).count();
    // Mode 3: one internal summary entry between B's ingress and egress entries.
    let (mut trip, nodes) = traverse_with_internal_nodes(
        &request(AggregationMode::PerBorderRouterAndInternal, true),
        2,
    );
    let entries = verify(&mut trip.packet).expect("verifies");
    assert_eq!(entries.len(), 7, "source, RA, RB1, internal, RB2, RC, RD");
    let internal = &entries[3];
    assert!(!internal.ingress && !internal.egress && internal.aggregated && !internal.encrypted);
    assert_eq!(internal.hop, 1);
    let m = internal.metadata;
    assert_eq!(m.node_count, Some(2));
    assert_eq!(m.node_id, Some(101), "the newer node");
    assert_eq!((m.ingress_if, m.egress_if), (Some(11), Some(12)));
    let ts = |n: &Recorder, code: u8| n.given.iter().find(|g| g.0 == code).unwrap().1;
    assert_eq!(
        m.slots[0].unwrap().value,
        ts(&nodes[0], code::INGRESS_TIMESTAMP),
        "first"
    );
    assert_eq!(
        m.slots[1].unwrap().value,
        ts(&nodes[1], code::EGRESS_TIMESTAMP),
        "last"
    );
    assert_eq!(m.slots[3].unwrap().value, 14, "sum of 7 + 7");
    assert!(
        entries[4].egress && !entries[4].aggregated,
        "RB2 still pushes"
    );
    // Mode 2: internal nodes add nothing.
    let (mut trip, _) =
        traverse_with_internal_nodes(&request(AggregationMode::PerBorderRouter, false), 2);
    let entries = verify(&mut trip.packet).expect("verifies");
    assert_eq!(hop_b(&entries), 2);
    // Mode 1: everything of AS B in one entry (RB1 + 2 nodes + RB2).
    let (mut trip, _) = traverse_with_internal_nodes(&request(AggregationMode::PerAs, true), 2);
    let entries = verify(&mut trip.packet).expect("verifies");
    assert_eq!(hop_b(&entries), 1);
    let b = entries.iter().find(|e| e.hop == 1).unwrap();
    assert_eq!(b.metadata.node_count, Some(4));
    assert!(b.ingress && b.egress && b.encrypted);
    // Mode 0: every node pushes its own closing entry.
    let (mut trip, _) = traverse_with_internal_nodes(&request(AggregationMode::Off, true), 2);
    let entries = verify(&mut trip.packet).expect("verifies");
    assert_eq!(hop_b(&entries), 4);
    assert!(entries.iter().skip(1).all(|e| e.encrypted));
}
#[test]
fn internal_node_never_merges_into_an_open_entry_of_another_as() {
    let rs = routers();
    let mut req = request(AggregationMode::PerAs, true);
    // source 12 + RA (closing, encrypted) 56 + RB1 (open, plain) 44 = 112 bytes = 28 words;
    // 8 bytes left: nothing else fits, but a same-size replacement of the top entry does.
    req.stack_len_words = 30;
    let mut packet = request_packet(&rs, &req);
    let len = packet.len();
    let mut stages: Vec<_> = (0..5).map(|r| stage(r, &rs)).collect();
    for (r, (ingress, want)) in hops().into_iter().enumerate() {
        let mut p = Processor::new(&rs[r]);
        let d = p.process_with(&mut packet, len, ingress, NOW, &mut stages[r]);
        assert_eq!(d, want, "router {r}");
    }
    let full: Vec<u64> = stages.iter().map(|s| s.counters().stack_full).collect();
    assert_eq!(full, [0, 0, 1, 1, 1], "RB2, RC, RD found the stack full");
    // Control: the stack as the border routers left it verifies (X is outside the MAC).
    let before = verify(&mut packet.clone()).expect("valid X-flagged stack verifies");
    assert_eq!(before.len(), 3);
    assert_eq!(before[2].hop, 1);
    assert!(
        before[2].ingress && !before[2].egress,
        "B's entry is still open"
    );

    // An AS-internal node of AS D, on the way from RD to the destination host.
    let mut node = stage(4, &rs);
    node.source_mut().node = 400;
    node.process_internal(ases()[3], &mut packet, len, (11, 12), NOW);
    // D has no entry of its own to merge into: the stack is full, so it only sets X.
    assert_eq!(
        (node.counters().aggregated, node.counters().stack_full),
        (0, 1)
    );
    let after = verify(&mut packet.clone());
    assert!(after.is_ok(), "the stack no longer verifies: {after:?}");
}

/// Same defect in mode 3: AS A's internal summary entry (flags all clear) is on top because
/// the later border routers found the stack full; an internal node of AS B merges into it.
#[test]
fn mode3_internal_node_never_merges_into_another_ases_summary() {
    let rs = routers();
    let mut req = request(AggregationMode::PerBorderRouterAndInternal, false);
    // source 12 + A's internal summary 44 = 56 bytes = 14 words; 20 bytes left.
    req.stack_len_words = 19;
    let mut packet = request_packet(&rs, &req);
    let len = packet.len();
    // An internal node of AS A between host a and RA.
    let mut a_node = stage(0, &rs);
    a_node.source_mut().node = 200;
    a_node.process_internal(ases()[0], &mut packet, len, (21, 22), NOW);
    assert_eq!(a_node.counters().pushed, 1);
    let mut stages: Vec<_> = (0..5).map(|r| stage(r, &rs)).collect();
    for (r, (ingress, want)) in hops().into_iter().enumerate() {
        if r == 2 {
            // An internal node of AS B between RB1 and RB2.
            let mut b_node = stage(1, &rs);
            b_node.source_mut().node = 300;
            b_node.process_internal(ases()[1], &mut packet, len, (31, 32), NOW);
            // A's summary is on top and B's own does not fit: X, nothing merged.
            assert_eq!(
                (b_node.counters().aggregated, b_node.counters().stack_full),
                (0, 1)
            );
        }
        let mut p = Processor::new(&rs[r]);
        let d = p.process_with(&mut packet, len, ingress, NOW, &mut stages[r]);
        assert_eq!(d, want, "router {r}");
    }
    let got = verify(&mut packet);
    assert!(got.is_ok(), "the stack no longer verifies: {got:?}");
}

#[test]
fn delay_hops_count_border_routers_not_internal_nodes() {
    let rs = routers();
    let mut req = request(AggregationMode::Off, false);
    req.delay_hops = 1;
    let mut packet = request_packet(&rs, &req);
    let len = packet.len();
    let delay = |p: &[u8]| {
        let r = hbh_range(p);
        IdInt::locate(&p[r]).unwrap().unwrap().main().delay_hops()
    };
    // An internal node of A (mode 0 would close its entry) writes nothing and leaves the
    // count alone.
    let mut node = stage(0, &rs);
    node.process_internal(ases()[0], &mut packet, len, (1, 2), NOW);
    assert_eq!((node.counters().delayed, node.counters().pushed), (1, 0));
    assert_eq!(delay(&packet), 1);
    // RA, the first border router, uses the delayed hop up.
    let mut ra = stage(0, &rs);
    let d = Processor::new(&rs[0]).process_with(&mut packet, len, Ingress::Internal, NOW, &mut ra);
    assert_eq!(d, Disposition::Forward { ifid: 1 });
    assert_eq!((ra.counters().delayed, ra.counters().pushed), (1, 0));
    assert_eq!(delay(&packet), 0);
}

/// Keys that are found but gone by the time an entry is sealed (a level-1 key withdrawn
/// between lookup and sealing).
struct Vanishing(DrkeyKeys);
impl VerifierKeys for Vanishing {
    fn find(&mut self, ia: IsdAsn, host: &HostAddr, now_ns: u64) -> Option<KeyHandle> {
        self.0.find(ia, host, now_ns)
    }
    fn key(&self, _: KeyHandle) -> Option<&Aes128Enc> {
        None
    }
}

#[test]
fn entries_whose_key_vanished_before_sealing_leave_no_values_and_are_counted_once() {
    let rs = routers();
    for encrypt in [false, true] {
        let req = RequestBuilder {
            stack_len_words: 64,
            ..request(AggregationMode::Off, encrypt)
        };
        let inputs: Vec<Vec<u8>> = [1u8, 2, 2, 3]
            .iter()
            .map(|&h| request_packet_to(&rs, &req, Ipv4Addr::new(10, 4, 0, h)))
            .collect();
        // Single packets (general and planned paths) and a burst write the same bytes.
        let (lost, st) = burst_equals_singles(&rs, 0, Ingress::Internal, &inputs, || {
            let (keys, source, nonces, _) = stage(0, &rs).into_parts();
            IdIntStage::new(Vanishing(keys), source, nonces)
        });
        assert_eq!(st.counters().pushed, 4, "encrypt {encrypt}");
        assert_eq!(st.counters().unsealed, 4, "encrypt {encrypt}");
        assert_eq!(st.counters().no_key, 0, "encrypt {encrypt}");
        assert_eq!(st.counters().malformed, 0, "encrypt {encrypt}");
        // Against the same packets sealed normally: every byte that differs is zero in the
        // unsealed packet (values, nonce and MAC), and the MAC at least differs.
        let (sealed, _) =
            burst_equals_singles(&rs, 0, Ingress::Internal, &inputs, || stage(0, &rs));
        for (i, ((_, l), (_, s))) in lost.iter().zip(&sealed).enumerate() {
            let r = hbh_range(s);
            let differing: Vec<usize> = r.filter(|&k| l[k] != s[k]).collect();
            assert!(differing.len() >= 4, "packet {i}: {differing:?}");
            assert!(
                differing.iter().all(|&k| l[k] == 0),
                "packet {i} (encrypt {encrypt}): unsealed entry keeps values"
            );
            let mut pkt = l.clone();
            assert!(verify(&mut pkt).is_err(), "packet {i} verifies");
        }
    }
}

/// The lower-bound aid at the first router: after the packet that teaches it the template,
/// every packet (of a burst, or one by one) gets its entry from the template; sealed, those
/// entries chain and verify like the real stage's all the way to the destination (four more
/// routers with their real stages); unsealed, they do not verify.
#[test]
fn lower_bound_entries_chain_to_the_destination_when_sealed() {
    use scion_dp::lower_bound::Mode;
    let rs = routers();
    for encrypt in [false, true] {
        for mode in [Mode::Sealed, Mode::Unsealed] {
            for burst in [true, false] {
                let input = request_packet(&rs, &request(AggregationMode::Off, encrypt));
                let len = input.len();
                let mut bufs = vec![input; 8];
                let (bound, counters) = through_lower_bound_counted(0, mode, burst, &mut bufs);
                let case = format!("{mode:?}, burst {burst}, encrypt {encrypt}");
                assert_eq!((bound.general, bound.templated), (1, 7), "{case}");
                assert_eq!(counters.pushed, 8, "{case}");
                // Only sealed entries are counted encrypted (unsealed: the stage's first).
                let encrypted = match mode {
                    Mode::Sealed => 8,
                    _ => 1,
                };
                assert_eq!(counters.encrypted, u64::from(encrypt) * encrypted, "{case}");
                let mut first_slots = None;
                for (k, pkt) in bufs.iter_mut().enumerate() {
                    for (r, (ingress, want)) in hops().into_iter().enumerate().skip(1) {
                        let mut s = stage(r, &rs);
                        let d = Processor::new(&rs[r]).process_with(pkt, len, ingress, NOW, &mut s);
                        assert_eq!(d, want, "packet {k}, router {r}, {case}");
                    }
                    let verified = verify(pkt);
                    if k == 0 || mode == Mode::Sealed {
                        let entries = verified.expect("verifies");
                        assert_eq!(entries.len(), 6, "packet {k}, {case}");
                        assert_eq!(entries[1].encrypted, encrypt, "{case}");
                        // The template holds the stage's entry in the clear: past the time
                        // written over the first 8 metadata bytes (the bitmap items here), a
                        // templated entry decrypts to the stage's values.
                        let slots = entries[1].metadata.slots;
                        assert_eq!(
                            *first_slots.get_or_insert(slots),
                            slots,
                            "packet {k}, {case}"
                        );
                    } else {
                        assert!(
                            matches!(
                                verified,
                                Err(OpenError::Verify(VerifyError::BadMac { index: 1 }))
                            ),
                            "packet {k}, {case}: {verified:?}"
                        );
                    }
                }
            }
        }
    }
}

/// `bufs` (packets of any lengths) through the lower-bound aid of router `r` in `mode`, in one
/// burst or one by one; every packet takes the decision of [`hops`]. The aid and its stage's
/// counters afterwards.
fn through_lower_bound_counted(
    r: usize,
    mode: scion_dp::lower_bound::Mode,
    burst: bool,
    bufs: &mut [Vec<u8>],
) -> (
    scion_dp::lower_bound::LowerBound,
    scion_dp::idint::IdIntCounters,
) {
    use scion_dp::PacketSlot;
    use scion_dp::lower_bound::{LowerBound, WithStage};
    let rs = routers();
    let mut bound = LowerBound::new(mode).expect("an aid mode");
    let mut st = stage(r, &rs);
    let (ingress, want) = hops()[r];
    let mut hook = WithStage {
        bound: &mut bound,
        stage: &mut st,
    };
    let mut p = Processor::new(&rs[r]);
    if burst {
        let mut slots: Vec<PacketSlot<'_>> = bufs
            .iter_mut()
            .map(|b| PacketSlot {
                len: b.len(),
                buf: b,
                ingress,
                disposition: None,
            })
            .collect();
        p.process_burst_with(&mut slots, NOW, &mut hook);
        assert!(slots.iter().all(|s| s.disposition == Some(want)));
    } else {
        for b in bufs.iter_mut() {
            let len = b.len();
            assert_eq!(p.process_with(b, len, ingress, NOW, &mut hook), want);
        }
    }
    (bound, *st.counters())
}

/// [`through_lower_bound_counted`], the aid only.
fn through_lower_bound(
    r: usize,
    mode: scion_dp::lower_bound::Mode,
    burst: bool,
    bufs: &mut [Vec<u8>],
) -> scion_dp::lower_bound::LowerBound {
    through_lower_bound_counted(r, mode, burst, bufs).0
}

/// `pkt` (as RA forwarded it) through RB1 .. RD with their real stages.
fn onward(pkt: &mut [u8]) {
    let rs = routers();
    let len = pkt.len();
    for (r, (ingress, want)) in hops().into_iter().enumerate().skip(1) {
        let mut s = stage(r, &rs);
        let d = Processor::new(&rs[r]).process_with(pkt, len, ingress, NOW, &mut s);
        assert_eq!(d, want, "router {r}");
    }
}

/// Unencrypted entries shorter than an encrypted entry's nonce end (12 and 16 bytes) are
/// templated and sealed like any other.
#[test]
fn lower_bound_templates_unencrypted_entries_shorter_than_a_nonce() {
    use scion_dp::lower_bound::Mode;
    let rs = routers();
    for inst_bitmap in [0x0, 0x3] {
        for burst in [true, false] {
            let req = RequestBuilder {
                inst_bitmap,
                instructions: [Instruction(0); 4],
                stack_len_words: 30,
                ..request(AggregationMode::Off, false)
            };
            let mut bufs = vec![request_packet(&rs, &req); 3];
            let bound = through_lower_bound(0, Mode::Sealed, burst, &mut bufs);
            let case = format!("bitmap {inst_bitmap:#x}, burst {burst}");
            assert_eq!((bound.general, bound.templated), (1, 2), "{case}");
            for (k, pkt) in bufs.iter_mut().enumerate() {
                onward(pkt);
                let entries = verify(pkt).expect("verifies");
                assert_eq!(entries.len(), 6, "packet {k}, {case}");
            }
        }
    }
}

/// Packets at RC (hop field 2 of the path) whose stacks hold only the source entry (the routers
/// before did not write): one on the usual path, one whose path has another hop field in
/// front, so that RC's is hop field 3. Both take the same route through RC with the same top
/// entry, but their entries name different hop fields: the aid writes the header the real
/// stage writes.
#[test]
fn lower_bound_entries_name_the_packets_hop_field() {
    use scion_dp::lower_bound::Mode;
    let rs = routers();
    let req = request(AggregationMode::Off, false);
    // The path as it reaches RC, behind `lead` more hop fields.
    let at_rc = |lead: usize| {
        let mut p = path(&rs);
        for h in &p.hops[..2] {
            p.infos[0].seg_id ^= u16::from_be_bytes([h.mac[0], h.mac[1]]);
        }
        p.hops.copy_within(0..4, lead);
        for h in &mut p.hops[..lead] {
            *h = HopField {
                exp_time: 63,
                cons_ingress: 9,
                cons_egress: 8,
                ..Default::default()
            };
        }
        p.meta.seg_len[0] = 4 + lead as u8;
        p.meta.curr_hf = 2 + lead as u8;
        request_packet_on(&p, &req, DST_HOST)
    };
    let later = at_rc(1);
    // The real stage's entry for the later packet.
    let mut real = later.clone();
    let len = real.len();
    let (ingress, want) = hops()[3];
    let d = Processor::new(&rs[3]).process_with(&mut real, len, ingress, NOW, &mut stage(3, &rs));
    assert_eq!(d, want);
    // RC's entry (right after the source entry): type, length, flags, hop, mask and lengths.
    let header = |pkt: &[u8]| pkt[first_free(pkt)..first_free(pkt) + 6].to_vec();
    assert_eq!(header(&real)[3] >> 2, 3);
    for burst in [true, false] {
        let mut bufs = vec![at_rc(0), later.clone()];
        let bound = through_lower_bound(3, Mode::Sealed, burst, &mut bufs);
        assert_eq!(bound.general + bound.templated, 2, "burst {burst}");
        assert_eq!(header(&bufs[0])[3] >> 2, 2, "burst {burst}");
        assert_eq!(header(&bufs[1]), header(&real), "burst {burst}");
    }
}

/// Padding content is ignored (only the option headers count): with non-zero padding bodies
/// and more free space than one padding option covers (468 bytes after the source entry, in
/// two PadN options), the padding the aid writes after its entry still parses at every router
/// and at the destination.
#[test]
fn lower_bound_padding_parses_whatever_the_padding_bodies_hold() {
    use scion_dp::lower_bound::Mode;
    let rs = routers();
    for encrypt in [false, true] {
        let mut pkt = request_packet(&rs, &request(AggregationMode::Off, encrypt));
        let end = hbh_range(&pkt).end;
        let mut p = first_free(&pkt);
        let mut options = 0;
        while p < end {
            assert_eq!(pkt[p], 1, "PadN");
            let next = p + 2 + usize::from(pkt[p + 1]);
            pkt[p + 2..next].fill(0xaa);
            p = next;
            options += 1;
        }
        assert_eq!((p, options), (end, 2));
        for burst in [true, false] {
            let mut bufs = vec![pkt.clone(); 3];
            let bound = through_lower_bound(0, Mode::Sealed, burst, &mut bufs);
            let case = format!("burst {burst}, encrypt {encrypt}");
            assert_eq!((bound.general, bound.templated), (1, 2), "{case}");
            for (k, pkt) in bufs.iter_mut().enumerate() {
                onward(pkt);
                let entries = verify(pkt).unwrap_or_else(|e| panic!("packet {k}, {case}: {e:?}"));
                assert_eq!(entries.len(), 6, "packet {k}, {case}");
            }
        }
    }
}

/// A template taught in one DRKey epoch, taken by packets of the next: their entries are
/// sealed under the key of their own time, as the real stage seals them.
#[test]
fn lower_bound_seals_with_the_key_of_each_packets_epoch() {
    use scion_dp::PacketSlot;
    use scion_dp::lower_bound::{LowerBound, Mode, WithStage};
    let rs = routers();
    let later_s = NOW_S + u64::from(EPOCH);
    let later_key = {
        let asi = ases()[0];
        let p = LocalProvider::new(asi, &secret(0), EPOCH).unwrap();
        let (_, l1) = p.level1(Protocol::IDINT, asi, ases()[3], later_s).unwrap();
        drkey::as_host(&l1.cipher(), &HostAddr::V4(DST_HOST))
            .unwrap()
            .cipher()
    };
    let (ingress, want) = hops()[0];
    for encrypt in [false, true] {
        for burst in [true, false] {
            let input = request_packet(&rs, &request(AggregationMode::Off, encrypt));
            let len = input.len();
            let mut bound = LowerBound::new(Mode::Sealed).expect("an aid mode");
            let mut st = stage(0, &rs);
            let mut hook = WithStage {
                bound: &mut bound,
                stage: &mut st,
            };
            let mut p = Processor::new(&rs[0]);
            let mut first = input.clone();
            assert_eq!(
                p.process_with(&mut first, len, ingress, NOW, &mut hook),
                want
            );
            let mut bufs = vec![input.clone(); 3];
            let now = later_s * 1_000_000_000;
            if burst {
                let mut slots: Vec<PacketSlot<'_>> = bufs
                    .iter_mut()
                    .map(|b| PacketSlot {
                        buf: b,
                        len,
                        ingress,
                        disposition: None,
                    })
                    .collect();
                p.process_burst_with(&mut slots, now, &mut hook);
            } else {
                for b in bufs.iter_mut() {
                    p.process_with(b, len, ingress, now, &mut hook);
                }
            }
            let case = format!("burst {burst}, encrypt {encrypt}");
            assert_eq!((bound.general, bound.templated), (1, 3), "{case}");
            for (k, pkt) in bufs.iter_mut().enumerate() {
                let r = hbh_range(pkt);
                let mut idint = IdInt::locate(&mut pkt[r]).unwrap().unwrap();
                let mut window = ReplayWindow::<16>::new(60_000_000_000, 1_000_000_000);
                let verified = open(&mut idint, &mut window, NOW, &source_key(), |_, _| {
                    Some(&later_key)
                });
                assert!(verified.is_ok(), "packet {k}, {case}: {verified:?}");
            }
        }
    }
}
