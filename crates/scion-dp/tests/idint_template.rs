//! Flow templates: the packets of a flow written from the template the first one left give
//! exactly the bytes, decisions and counters the general path gives them one by one, for
//! random requests, sources (values that change per call, items supplied only some of the
//! time), stack sizes, verifiers and burst splits.

use std::sync::Arc;

use drkey::cache::KeyCache;
use drkey::provider::LocalProvider;
use idint_wire::idint::{
    AggregationFunction, AggregationMode, Instruction, RequestBuilder, Verifier,
};
use proptest::prelude::*;
use scion_dp::config::Router;
use scion_dp::idint::{DrkeyKeys, IdIntStage, NonceSource};
use scion_dp::telemetry::{CounterKind, Direction, HopContext, QueueMetric, TelemetrySource, code};
use scion_dp::{Disposition, PacketSlot, Processor};
use scion_dp_replay::CaseFile;

/// Instructions drawn from: per-burst ones (router identity, `&self` methods) and per-packet
/// ones (clocks, counters, queues), of every width, and NOP.
const CODES: [u8; 12] = [
    0,
    code::ISD,
    code::ASN,
    code::DEVICE_VENDOR,
    code::NODE_IPV4,
    code::SOFTWARE_VERSION,
    code::NODE_IPV6_HIGH,
    code::INGRESS_TIMESTAMP,
    code::EGRESS_TIMESTAMP,
    code::QUEUE_LEN,
    code::INGRESS_IF_PACKETS,
    code::EGRESS_TOTAL_BYTES,
];

/// A source whose per-packet values change with every call, and which supplies the queue
/// length only on calls `k` with `k % flaky == 0` (every call for `flaky == 1`); with
/// `steady`, its ingress timestamp is the burst's time, declared steady in a burst.
struct Varying {
    calls: u64,
    flaky: u64,
    node: Option<u32>,
    steady: bool,
}

impl TelemetrySource for Varying {
    fn node_id(&self) -> Option<u32> {
        self.node
    }
    fn steady_in_burst(&self, c: u8) -> bool {
        self.steady && c == code::INGRESS_TIMESTAMP
    }
    fn ingress_timestamp_ns(&mut self, c: &HopContext) -> Option<u64> {
        if self.steady {
            return Some(c.now_ns);
        }
        self.calls += 1;
        Some(c.now_ns + self.calls)
    }
    fn egress_timestamp_ns(&mut self, c: &HopContext) -> Option<u64> {
        self.calls += 1;
        Some(c.now_ns + 2 * self.calls + c.len as u64)
    }
    fn interface_counter(&mut self, ifid: u16, _: Direction, _: CounterKind) -> Option<u64> {
        self.calls += 1;
        Some(u64::from(ifid) << 32 | self.calls)
    }
    fn total_counter(&mut self, _: Direction, _: CounterKind) -> Option<u64> {
        self.calls += 1;
        Some(0xffff_ffff_ff00 + self.calls)
    }
    fn queue(&mut self, _: u16, _: QueueMetric) -> Option<u32> {
        self.calls += 1;
        self.calls
            .is_multiple_of(self.flaky)
            .then_some(self.calls as u32)
    }
    fn node_ipv4(&self) -> Option<core::net::Ipv4Addr> {
        Some(core::net::Ipv4Addr::new(10, 9, 8, 7))
    }
    fn node_ipv6(&self) -> Option<core::net::Ipv6Addr> {
        Some(core::net::Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 7))
    }
    fn software_version(&self) -> Option<(u16, u16, u16)> {
        Some((1, 2, 3))
    }
}

/// Nonces that count, so every entry's nonce is known.
struct Counting(u8);
impl NonceSource for Counting {
    fn nonce(&mut self) -> [u8; 12] {
        self.0 = self.0.wrapping_add(1);
        [self.0; 12]
    }
}

type Stage = IdIntStage<DrkeyKeys, Varying, Counting>;

fn stage(router: &Router, flaky: u64, node: Option<u32>, steady: bool) -> Stage {
    let provider = Arc::new(LocalProvider::new(router.local_ia(), &[3; 16], 86_400).unwrap());
    let keys = DrkeyKeys {
        cache: KeyCache::new(provider, 64),
        local: router.local_ia(),
    };
    let source = Varying {
        calls: 0,
        flaky,
        node,
        steady,
    };
    IdIntStage::new(keys, source, Counting(0))
}

/// The case packet with the request's hop-by-hop header inserted after the SCION header.
fn with_request(input: &[u8], req: &RequestBuilder) -> Vec<u8> {
    let hl = usize::from(input[5]) * 4;
    let mut hbh = vec![0u8; req.hbh_len()];
    req.emit_signed(&mut hbh, input[4], &idint_wire::crypto::aes128(&[1; 16]))
        .unwrap();
    let mut out = input[..hl].to_vec();
    out.extend_from_slice(&hbh);
    out.extend_from_slice(&input[hl..]);
    out[4] = idint_wire::ext::HBH;
    let pl = u16::from_be_bytes([out[6], out[7]]) + hbh.len() as u16;
    out[6..8].copy_from_slice(&pl.to_be_bytes());
    out
}

type Outcome = Vec<(Disposition, Vec<u8>)>;

/// The packets one by one.
fn singles(
    p: &mut Processor<'_>,
    st: &mut Stage,
    inputs: &[Vec<u8>],
    ing: scion_dp::Ingress,
    now: u64,
) -> Outcome {
    inputs
        .iter()
        .map(|input| {
            let mut b = input.clone();
            let len = b.len();
            (p.process_with(&mut b, len, ing, now, st), b)
        })
        .collect()
}

/// The packets as two bursts, split at `split`.
fn bursts(
    p: &mut Processor<'_>,
    st: &mut Stage,
    inputs: &[Vec<u8>],
    ing: scion_dp::Ingress,
    now: u64,
    split: usize,
) -> Outcome {
    let mut bufs: Vec<Vec<u8>> = inputs.to_vec();
    let (a, b) = bufs.split_at_mut(split.min(inputs.len()));
    let mut out = Vec::new();
    for part in [a, b] {
        let mut slots: Vec<PacketSlot<'_>> = part
            .iter_mut()
            .map(|b| PacketSlot {
                len: b.len(),
                buf: b,
                ingress: ing,
                disposition: None,
            })
            .collect();
        p.process_burst_with(&mut slots, now, st);
        out.extend(
            slots
                .into_iter()
                .map(|s| (s.disposition.unwrap(), s.buf.to_vec())),
        );
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn templated_pushes_equal_the_general_path(
        encrypt in any::<bool>(),
        source_verifier in any::<bool>(),
        bitmap in 0u8..16,
        ins in proptest::array::uniform4(0usize..CODES.len()),
        // Room for an entry: a full stack makes the straight-line push ask the source before
        // the general path asks again (documented), which a counting source would tell.
        stack_words in 40u8..80,
        hosts in proptest::collection::vec(prop_oneof![4 => Just(0u8), 1 => 1u8..3], 1..40),
        flaky in prop_oneof![3 => Just(1u64), 1 => 2u64..4],
        node in proptest::option::of(any::<u32>()),
        split in 0usize..40,
        steady in any::<bool>(),
    ) {
        let file = CaseFile::parse(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../testdata/scion/router_cases.json"
            ))
            .unwrap(),
        )
        .unwrap();
        let case = file.cases.iter().find(|c| c.name == "transit_parent_to_child").unwrap();
        let router = &file.routers[&case.router];
        let req = RequestBuilder {
            encrypt,
            mode: AggregationMode::PerBorderRouter,
            verifier: if source_verifier { Verifier::Source } else { Verifier::Destination },
            inst_bitmap: bitmap,
            aggregation: [AggregationFunction::Last; 4],
            instructions: ins.map(|k| Instruction(CODES[k])),
            stack_len_words: stack_words,
            ..RequestBuilder::new(file.now_ns % (1 << 48))
        };
        let base = with_request(&case.input, &req);
        // Mostly one flow; some packets to another destination host (another verifier for
        // destination-verified requests).
        let inputs: Vec<Vec<u8>> = hosts
            .iter()
            .map(|&h| {
                let mut p = base.clone();
                p[31] = p[31].wrapping_add(h);
                p
            })
            .collect();
        let now = file.now_ns;
        let mut general = stage(router, flaky, node, steady).without_fast_path();
        let want = singles(&mut Processor::new(router), &mut general, &inputs, case.ingress, now);
        let mut single = stage(router, flaky, node, steady);
        let got = singles(&mut Processor::new(router), &mut single, &inputs, case.ingress, now);
        prop_assert_eq!(&want, &got, "single packets");
        prop_assert_eq!(general.counters(), single.counters());
        let mut burst = stage(router, flaky, node, steady);
        let got = bursts(&mut Processor::new(router), &mut burst, &inputs, case.ingress, now, split);
        prop_assert_eq!(&want, &got, "bursts");
        prop_assert_eq!(general.counters(), burst.counters());
    }
}
