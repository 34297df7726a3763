//! Properties of the processor on the reference router cases: bursts equal single packets,
//! forwarded packets and SCMP replies are well-formed, flipped path bits never redirect a
//! packet, link state and counters.

use idint_wire::packet::{L4, Packet};
use idint_wire::scion::ScionHeader;
use idint_wire::scmp::ScmpPacket;
use proptest::prelude::*;
use scion_dp::config::Router;
use scion_dp::idint::{Forwarded, ForwardingHook};
use scion_dp::{Disposition, DropReason, Ingress, PacketSlot, Processor, ScmpReason};
use scion_dp_replay::{Case, CaseFile};

const CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/scion/router_cases.json"
);
const ROOM: usize = 2048;

/// A fresh copy (for tests that change router state such as link liveness).
fn fresh_file() -> CaseFile {
    CaseFile::parse(&std::fs::read_to_string(CASES).unwrap()).unwrap()
}

/// The shared copy (key derivation is PBKDF2, so it is loaded once).
fn file() -> &'static CaseFile {
    static FILE: std::sync::OnceLock<CaseFile> = std::sync::OnceLock::new();
    FILE.get_or_init(fresh_file)
}

fn run(file: &CaseFile, case: &Case, input: &[u8]) -> (Disposition, Vec<u8>) {
    let mut p = Processor::new(&file.routers[&case.router]);
    let mut buf = vec![0u8; ROOM];
    buf[..input.len()].copy_from_slice(input);
    let d = p.process(&mut buf, input.len(), case.ingress, file.now_ns);
    buf.truncate(output_len(&d, input.len()));
    (d, buf)
}

/// Bytes of the packet that leaves after decision `d` on an input of `input_len` bytes.
fn output_len(d: &Disposition, input_len: usize) -> usize {
    match d {
        Disposition::Reply { len, .. } => *len,
        _ => input_len,
    }
}

/// What every decision must satisfy, whatever the input.
fn check_well_formed(d: &Disposition, out: &[u8]) -> Result<(), String> {
    match *d {
        Disposition::Forward { .. } | Disposition::Sibling { .. } | Disposition::Deliver { .. } => {
            ScionHeader::new_checked(out).map_err(|e| format!("forwarded packet: {e:?}"))?;
        }
        Disposition::Reply { len, .. } => {
            if len > 1232 {
                return Err(format!("SCMP reply of {len} bytes"));
            }
            let p = Packet::parse(out).map_err(|e| format!("SCMP reply: {e:?}"))?;
            if !p.payload_len_matches() {
                return Err("SCMP reply PayloadLen".into());
            }
            let L4::Scmp(m) = p.l4 else {
                return Err("reply is not SCMP".into());
            };
            let m = ScmpPacket::new_unchecked(m.into_inner());
            if !m.verify_checksum(&p.header) {
                return Err("SCMP reply checksum".into());
            }
        }
        _ => {}
    }
    Ok(())
}

/// A buffer of [`ROOM`] bytes per case, its input first.
fn buffers(cases: &[&Case]) -> Vec<Vec<u8>> {
    cases
        .iter()
        .map(|c| {
            let mut b = vec![0u8; ROOM];
            b[..c.input.len()].copy_from_slice(&c.input);
            b
        })
        .collect()
}

/// The cases as one burst over `bufs` (from [`buffers`]).
fn burst_slots<'a>(bufs: &'a mut [Vec<u8>], cases: &[&Case]) -> Vec<PacketSlot<'a>> {
    bufs.iter_mut()
        .zip(cases)
        .map(|(b, c)| PacketSlot {
            buf: &mut b[..],
            len: c.input.len(),
            ingress: c.ingress,
            disposition: None,
        })
        .collect()
}

#[test]
fn burst_equals_single_packet_processing() {
    let file = file();
    // All cases of one router in one burst (mixed dispositions), compared with one by one.
    for router in ["R", "C"] {
        let cases: Vec<&Case> = file.cases.iter().filter(|c| c.router == router).collect();
        let singles: Vec<(Disposition, Vec<u8>)> =
            cases.iter().map(|c| run(file, c, &c.input)).collect();
        let mut bufs = buffers(&cases);
        let mut slots = burst_slots(&mut bufs, &cases);
        let mut p = Processor::new(&file.routers[router]);
        p.process_burst(&mut slots, file.now_ns);
        for ((slot, (d, out)), c) in slots.iter().zip(&singles).zip(&cases) {
            assert_eq!(slot.disposition.as_ref(), Some(d), "{}", c.name);
            assert_eq!(&slot.buf[..out.len()], &out[..], "{}", c.name);
        }
        assert_eq!(p.counters().total(), cases.len() as u64);
    }
}

#[test]
fn every_outcome_is_well_formed() {
    let file = file();
    for c in &file.cases {
        let (d, out) = run(file, c, &c.input);
        check_well_formed(&d, &out).unwrap_or_else(|e| panic!("{}: {e}", c.name));
    }
}

/// Flipping any single bit of the path of a forwarded packet never makes the router send it
/// out of an interface that the packet's authenticated hop fields at this AS do not name.
/// The interface IDs are under the MAC; the bits that are not (flags, CurrHF/CurrINF, SegID)
/// are caught by the ingress-interface check and the SegID chaining. What a flip can do, by
/// SCION's design, is reverse the direction flag C of a packet that starts in this AS (ingress
/// 0, no ingress check): a hop field authorises both of its interfaces, so the packet may then
/// leave on the hop field's other interface, as a path using it as an up segment would.
#[test]
fn path_bit_flips_never_redirect() {
    let file = file();
    let mut flips = 0;
    for c in &file.cases {
        let (d, _) = run(file, c, &c.input);
        let egress = match d {
            Disposition::Forward { ifid } | Disposition::Sibling { ifid, .. } => ifid,
            Disposition::Deliver { .. } => 0,
            _ => continue,
        };
        let hdr = ScionHeader::new_checked(&c.input[..]).unwrap();
        // Interfaces named by this AS's hop fields: the current one and, for a segment
        // change, the next one.
        let mut allowed = vec![egress];
        if let idint_wire::packet::PathView::Scion(path) = Packet::parse(&c.input).unwrap().path {
            let hf = usize::from(path.meta().curr_hf);
            for j in [hf, hf + 1] {
                if let Ok(h) = path.hop(j) {
                    allowed.extend([h.cons_ingress, h.cons_egress]);
                }
            }
        }
        for byte in hdr.path_offset()..hdr.header_len() {
            for bit in 0..8 {
                let mut m = c.input.clone();
                m[byte] ^= 1 << bit;
                let (d2, out) = run(file, c, &m);
                flips += 1;
                check_well_formed(&d2, &out)
                    .unwrap_or_else(|e| panic!("{} byte {byte} bit {bit}: {e}", c.name));
                let redirected = match d2 {
                    Disposition::Forward { ifid } | Disposition::Sibling { ifid, .. } => {
                        !allowed.contains(&ifid)
                    }
                    Disposition::Deliver { .. } => egress != 0,
                    _ => false,
                };
                assert!(
                    !redirected,
                    "{}: byte {byte} bit {bit} redirects {d:?} to {d2:?}",
                    c.name
                );
            }
        }
    }
    assert!(flips > 10_000, "only {flips} flips tried");
}

#[test]
fn link_down_answers_with_interface_down() {
    let file = &fresh_file();
    let router = &file.routers["R"];
    let case = |n: &str| file.cases.iter().find(|c| c.name == n).unwrap();
    // Own link down: SCMP 5 (External Interface Down) naming the interface.
    let transit = case("transit_parent_to_child");
    assert!(router.set_link_up(2, false));
    let (d, out) = run(file, transit, &transit.input);
    router.set_link_up(2, true);
    let Disposition::Reply { scmp, .. } = d else {
        panic!("{d:?}")
    };
    assert_eq!(scmp, ScmpReason::ExternalInterfaceDown);
    check_well_formed(&d, &out).unwrap();
    let p = Packet::parse(&out).unwrap();
    let L4::Scmp(m) = p.l4 else { panic!() };
    let body = m.body();
    assert_eq!(&body[..8], &router.local_ia().to_bytes());
    assert_eq!(u64::from_be_bytes(body[8..16].try_into().unwrap()), 2);
    // Sibling-owned egress down: SCMP 6 (Internal Connectivity Down) with ingress and egress.
    let to_sibling = case("as_transit_in_to_sibling");
    router.set_link_up(5, false);
    let (d, out) = run(file, to_sibling, &to_sibling.input);
    router.set_link_up(5, true);
    let Disposition::Reply { scmp, .. } = d else {
        panic!("{d:?}")
    };
    assert_eq!(scmp, ScmpReason::InternalConnectivityDown);
    let p = Packet::parse(&out).unwrap();
    let L4::Scmp(m) = p.l4 else { panic!() };
    let body = m.body();
    assert_eq!(u64::from_be_bytes(body[8..16].try_into().unwrap()), 1);
    assert_eq!(u64::from_be_bytes(body[16..24].try_into().unwrap()), 5);
    // Back up: forwarded again.
    assert!(matches!(
        run(file, transit, &transit.input).0,
        Disposition::Forward { ifid: 2 }
    ));
    assert!(!router.set_link_up(99, false), "unknown interface accepted");
}

/// A hook that records the packets it is run on (burst slots, single calls) and wants every
/// packet or none.
struct Recorder {
    want: bool,
    seen: Vec<usize>,
    single_calls: usize,
}

impl Recorder {
    fn new(want: bool) -> Self {
        Recorder {
            want,
            seen: vec![],
            single_calls: 0,
        }
    }
}

impl ForwardingHook for Recorder {
    fn wants(&self, _: u8) -> bool {
        self.want
    }
    fn after_forwarding(&mut self, _: &Router, _: &mut [u8], _: &Forwarded, _: &mut Disposition) {
        self.single_calls += 1;
    }
    fn after_forwarding_in_burst(
        &mut self,
        _: &Router,
        _: &mut [u8],
        _: &Forwarded,
        _: &mut Disposition,
        slot: usize,
    ) {
        self.seen.push(slot);
    }
}

/// Router R's cases.
fn cases_of_r(file: &CaseFile) -> Vec<&Case> {
    file.cases.iter().filter(|c| c.router == "R").collect()
}

/// One burst of all of router R's cases through `hook`: the slots' decisions.
fn burst_with(file: &CaseFile, hook: &mut Recorder) -> Vec<Option<Disposition>> {
    let cases = cases_of_r(file);
    let mut bufs = buffers(&cases);
    let mut slots = burst_slots(&mut bufs, &cases);
    Processor::new(&file.routers["R"]).process_burst_with(&mut slots, file.now_ns, hook);
    slots.into_iter().map(|s| s.disposition).collect()
}

#[test]
fn a_hook_runs_on_every_packet_it_wants_and_skipping_changes_no_decision() {
    let file = file();
    // Where the single-packet path runs a hook: the packets a burst must run it on too.
    let expected: Vec<usize> = cases_of_r(file)
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            let mut hook = Recorder::new(true);
            let mut buf = vec![0u8; ROOM];
            buf[..c.input.len()].copy_from_slice(&c.input);
            let mut p = Processor::new(&file.routers["R"]);
            p.process_with(&mut buf, c.input.len(), c.ingress, file.now_ns, &mut hook);
            hook.single_calls == 1
        })
        .map(|(i, _)| i)
        .collect();
    let mut all = Recorder::new(true);
    let decided = burst_with(file, &mut all);
    all.seen.sort_unstable();
    assert_eq!(all.seen, expected, "a hook that wants every packet");
    // Wanting none: the fast path's forwards skip the hook, the decisions stay the same.
    let mut none = Recorder::new(false);
    assert_eq!(burst_with(file, &mut none), decided);
    let fast_forwards = expected.len() - none.seen.len();
    assert!(fast_forwards > 0, "no forward skipped the hook");
    assert!(none.seen.iter().all(|s| expected.contains(s)));
    for (s, d) in decided.iter().enumerate() {
        if expected.contains(&s) && !none.seen.contains(&s) {
            assert!(
                matches!(d, Some(Disposition::Forward { .. })),
                "slot {s} skipped the hook but is {d:?}"
            );
        }
    }
}

#[test]
fn counters_follow_dispositions() {
    let file = file();
    let mut p = Processor::new(&file.routers["R"]);
    let mut expect_fwd = 0;
    let mut expect_drop = 0;
    for c in file.cases.iter().filter(|c| c.router == "R") {
        let mut buf = vec![0u8; ROOM];
        buf[..c.input.len()].copy_from_slice(&c.input);
        match p.process(&mut buf, c.input.len(), c.ingress, file.now_ns) {
            Disposition::Forward { .. } => expect_fwd += 1,
            Disposition::Drop(_) | Disposition::Suppressed { .. } => expect_drop += 1,
            _ => {}
        }
    }
    let k = p.counters();
    assert_eq!(k.forwarded, expect_fwd);
    assert_eq!(k.drops.iter().sum::<u64>(), expect_drop);
    assert_eq!(k.drops_for(DropReason::ScmpSuppressed), 1);
    assert_eq!(k.replies_for(ScmpReason::InvalidHopFieldMac), 1);
    assert_eq!(k.drops_for(DropReason::EpicBadHvf), 1);
}

#[test]
fn short_buffers_and_lengths_are_rejected_not_panicking() {
    let file = file();
    let c = &file.cases[0];
    let mut p = Processor::new(&file.routers[&c.router]);
    for cut in 0..c.input.len() {
        let mut buf = c.input[..cut].to_vec();
        let d = p.process(&mut buf, cut, c.ingress, file.now_ns);
        assert!(
            !matches!(d, Disposition::Forward { .. }),
            "cut {cut}: {d:?}"
        );
    }
    // A length beyond the buffer is malformed input, not a panic.
    let mut buf = c.input.clone();
    let d = p.process(&mut buf, c.input.len() + 1, c.ingress, file.now_ns);
    assert_eq!(d, Disposition::Drop(DropReason::Malformed));
    // A reply that does not fit the buffer is dropped, counted, never written out of bounds.
    let bad = file.cases.iter().find(|c| c.name == "err_bad_mac").unwrap();
    let mut tight = bad.input.clone();
    let d = p.process(&mut tight, bad.input.len(), bad.ingress, file.now_ns);
    assert!(
        matches!(d, Disposition::Reply { len, .. } if len <= tight.len())
            || d == Disposition::Drop(DropReason::ScmpUnbuildable),
        "{d:?}"
    );
}

/// The transit fast path gives exactly the general pipeline's outcome and bytes.
fn fast_equals_general(file: &CaseFile, case: &Case, input: &[u8]) -> Result<(), String> {
    let router = &file.routers[&case.router];
    let mut outs = Vec::new();
    for fast in [true, false] {
        let mut p = Processor::new(router);
        if !fast {
            p = p.without_fast_path();
        }
        let mut buf = vec![0u8; ROOM];
        buf[..input.len()].copy_from_slice(input);
        let d = p.process(&mut buf, input.len(), case.ingress, file.now_ns);
        outs.push((d, buf));
    }
    if outs[0] != outs[1] {
        return Err(format!("fast {:?} vs general {:?}", outs[0].0, outs[1].0));
    }
    Ok(())
}

#[test]
fn fast_path_agrees_with_general_pipeline_on_cases_and_bit_flips() {
    let file = file();
    for c in &file.cases {
        fast_equals_general(file, c, &c.input).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        for byte in 0..c.input.len().min(160) {
            for bit in 0..8 {
                let mut m = c.input.clone();
                m[byte] ^= 1 << bit;
                fast_equals_general(file, c, &m)
                    .unwrap_or_else(|e| panic!("{} byte {byte} bit {bit}: {e}", c.name));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Random byte changes anywhere in any case packet: no panic, and every packet that
    /// leaves (forwarded or as SCMP) is well-formed.
    #[test]
    fn mutated_cases_stay_well_formed(
        idx in 0usize..41,
        edits in proptest::collection::vec((any::<u16>(), any::<u8>()), 1..6),
        ingress_kind in 0u8..4,
    ) {
        let file = file();
        let c = &file.cases[idx % file.cases.len()];
        let mut m = c.input.clone();
        for (at, v) in edits {
            let i = usize::from(at) % m.len();
            m[i] = v;
        }
        let mut case = c.clone();
        case.ingress = match ingress_kind {
            0 => c.ingress,
            1 => Ingress::Internal,
            2 => Ingress::Sibling(5),
            _ => Ingress::External(1),
        };
        let (d, out) = run(file, &case, &m);
        prop_assert!(check_well_formed(&d, &out).is_ok(), "{:?}", check_well_formed(&d, &out));
        let same = fast_equals_general(file, &case, &m);
        prop_assert!(same.is_ok(), "{:?}", same);
    }
}

/// A sibling router that owns several interfaces has one link: a packet that entered the AS
/// on any of them is accepted over that link whichever of its interfaces names it, and
/// refused over the link of another sibling router.
#[test]
fn transit_over_the_link_of_a_sibling_owning_several_interfaces() {
    use scion_dp::config::{InterfaceConfig, LinkType, Owner, RouterConfig};
    let file = file();
    let case = file
        .cases
        .iter()
        .find(|c| c.name == "as_transit_out_from_sibling")
        .expect("case in the vectors");
    assert_eq!(case.ingress, Ingress::Sibling(5));
    let base = file.routers[&case.router].config().clone();
    let sibling = base.interfaces.iter().find(|i| i.id == 5).unwrap().owner;
    assert!(matches!(sibling, Owner::Sibling(_)));
    let mut cfg: RouterConfig = base.clone();
    let other: std::net::SocketAddr = "198.51.100.7:30042".parse().unwrap();
    for (id, owner, n) in [(6, sibling, 114), (7, Owner::Sibling(other), 115)] {
        cfg.interfaces.push(InterfaceConfig {
            id,
            link_type: LinkType::Child,
            neighbor_ia: format!("1-ff00:0:{n}").parse().unwrap(),
            owner,
        });
    }
    let router = scion_dp::config::Router::new(cfg).unwrap();
    let decide = |ingress: Ingress| {
        let mut p = Processor::new(&router);
        let mut buf = vec![0u8; ROOM];
        buf[..case.input.len()].copy_from_slice(&case.input);
        let d = p.process(&mut buf, case.input.len(), ingress, file.now_ns);
        buf.truncate(case.input.len());
        (d, buf)
    };
    let (want, want_bytes) = run(file, case, &case.input);
    assert!(matches!(want, Disposition::Forward { .. }), "{want:?}");
    // The sibling's link named by its other interface: the same decision, the same bytes.
    assert_eq!(decide(Ingress::Sibling(6)), (want, want_bytes.clone()));
    assert_eq!(decide(Ingress::Sibling(5)).0, want);
    // Another sibling router's link, the internal network, or a link to an interface this
    // router owns itself: refused.
    for wrong in [Ingress::Sibling(7), Ingress::Internal, Ingress::Sibling(1)] {
        assert_eq!(
            decide(wrong).0,
            Disposition::Drop(DropReason::TransitNotFromSibling),
            "{wrong:?}"
        );
    }
}

/// One change to a transit packet that moves it to a neighbouring path layout (or out of the
/// fast path): `kind` 0 sets a byte of the path meta header, 1 takes `4 * (v % 4)` bytes from
/// the header length and gives them to the payload length (the packet length stays
/// consistent), 2 sets the address-type byte, 3 sets any header byte.
fn change_layout(pkt: &mut [u8], (kind, at, v): (u8, u8, u8)) {
    let sp = ScionHeader::new_unchecked(&*pkt).path_offset();
    let hl = 4 * usize::from(pkt[5]);
    match kind {
        0 => pkt[sp + usize::from(at % 4)] = v,
        1 => {
            let shift = (4 * usize::from(v % 4)).min(hl);
            let payload = usize::from(u16::from_be_bytes([pkt[6], pkt[7]])) + shift;
            pkt[5] = ((hl - shift) / 4) as u8;
            pkt[6..8].copy_from_slice(&(payload as u16).to_be_bytes());
        }
        2 => pkt[9] = v,
        _ => pkt[usize::from(at) % hl.clamp(1, pkt.len())] = v,
    }
}

/// Each packet's decision and the bytes that leave.
type Outcomes = Vec<(Disposition, Vec<u8>)>;

/// Decisions and bytes of `cases` (all of one router) processed as one burst, and each alone.
fn burst_and_singles(file: &CaseFile, cases: &[Case]) -> (Outcomes, Outcomes) {
    let cases: Vec<&Case> = cases.iter().collect();
    let singles = cases.iter().map(|c| run(file, c, &c.input)).collect();
    let mut bufs = buffers(&cases);
    let mut slots = burst_slots(&mut bufs, &cases);
    Processor::new(&file.routers[&cases[0].router]).process_burst(&mut slots, file.now_ns);
    let burst = slots
        .into_iter()
        .map(|s| {
            let d = s.disposition.expect("decided");
            (d, s.buf[..output_len(&d, s.len)].to_vec())
        })
        .collect();
    (burst, singles)
}

/// `case` with `input` as its packet.
fn with_input(case: &Case, input: Vec<u8>) -> Case {
    Case {
        input,
        ..case.clone()
    }
}

/// Packets of one burst that share their path layout with the packet before, or differ from
/// it in one field of it (the fast path reuses the layout of the packet before when the
/// path meta header, path offset and header length are the same): each gets the decision
/// and bytes it gets alone. Here the same packet with fewer header bytes comes second and
/// first: its path no longer fits its header.
#[test]
fn a_burst_reuses_no_path_layout_across_header_lengths() {
    let file = file();
    for name in ["transit_parent_to_child", "transit_child_to_parent"] {
        let c = file.cases.iter().find(|c| c.name == name).unwrap();
        let mut short = c.input.clone();
        change_layout(&mut short, (1, 0, 1));
        for pair in [
            [c.input.clone(), short.clone()],
            [short.clone(), c.input.clone()],
        ] {
            let cases: Vec<Case> = pair.into_iter().map(|p| with_input(c, p)).collect();
            let (burst, singles) = burst_and_singles(file, &cases);
            assert!(
                matches!(singles[0].0, Disposition::Forward { .. })
                    != matches!(singles[1].0, Disposition::Forward { .. }),
                "{name}: one of the two is forwarded"
            );
            assert_eq!(burst, singles, "{name}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Bursts of transit packets, each the one before or a copy of a transit case with up to
    /// two changes of its path layout ([`change_layout`]): each packet gets the decision and
    /// bytes it gets alone.
    #[test]
    fn bursts_of_neighbouring_path_layouts_equal_single_packets(
        packets in proptest::collection::vec(
            (0usize..2, any::<bool>(), proptest::collection::vec((0u8..4, any::<u8>(), any::<u8>()), 0..3)),
            2..12,
        ),
    ) {
        let file = file();
        let names = ["transit_parent_to_child", "transit_child_to_parent"];
        let cases: Vec<&Case> = names
            .iter()
            .map(|n| file.cases.iter().find(|c| &c.name == n).unwrap())
            .collect();
        let mut burst_cases: Vec<Case> = Vec::new();
        for (which, repeat, changes) in packets {
            let mut c = match burst_cases.last() {
                Some(before) if repeat => before.clone(),
                _ => cases[which].clone(),
            };
            for ch in changes {
                change_layout(&mut c.input, ch);
            }
            burst_cases.push(c);
        }
        let (burst, singles) = burst_and_singles(file, &burst_cases);
        prop_assert_eq!(burst, singles);
    }
}
