//! The ID-INT benchmark's packets and router stage (criterion bench `idint` and the
//! `idint-loop` example share them).

use std::net::Ipv6Addr;
use std::sync::Arc;

use drkey::cache::KeyCache;
use drkey::provider::LocalProvider;
use idint_wire::idint::{AggregationFunction, AggregationMode, Instruction, RequestBuilder};
use scion_dp::config::Router;
use scion_dp::idint::{CtrDrbg, DrkeyKeys, IdIntStage};
use scion_dp::telemetry::{self, HopContext, TelemetrySource};

/// A source with a clock and a node address, as a router has. Its timestamp is the burst's
/// time, the same for every packet of a burst, and it says so as the router's source does
/// (`router_core::telemetry_source`): the stage asks for it once per burst and flow.
pub struct Source;
impl TelemetrySource for Source {
    fn node_id(&self) -> Option<u32> {
        Some(7)
    }
    fn steady_in_burst(&self, code: u8) -> bool {
        code == telemetry::code::INGRESS_TIMESTAMP
    }
    fn ingress_timestamp_ns(&mut self, c: &HopContext) -> Option<u64> {
        Some(c.now_ns)
    }
    fn node_ipv6(&self) -> Option<Ipv6Addr> {
        Some(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 7))
    }
}

/// The request: 8 bytes (node count 2 + ingress timestamp 6) or 42 bytes (all four bitmap
/// items, 10, and four 8-byte slots).
pub fn request(metadata: usize, encrypt: bool, now_ns: u64) -> RequestBuilder {
    let (bitmap, ins) = if metadata == 8 {
        (
            0x4,
            [
                Instruction(0x82),
                Instruction::NOP,
                Instruction::NOP,
                Instruction::NOP,
            ],
        )
    } else {
        (
            0xf,
            [
                Instruction(0xc1),
                Instruction(0xc2),
                Instruction(0xc1),
                Instruction(0xc2),
            ],
        )
    };
    RequestBuilder {
        encrypt,
        mode: AggregationMode::PerBorderRouter,
        inst_bitmap: bitmap,
        aggregation: [AggregationFunction::Last; 4],
        instructions: ins,
        stack_len_words: 64,
        ..RequestBuilder::new(now_ns % (1 << 48))
    }
}

/// The case packet with the request's hop-by-hop header inserted after the SCION header.
pub fn with_request(input: &[u8], req: &RequestBuilder) -> Vec<u8> {
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

/// `packet` (an IPv4-addressed SCION packet) sent to another destination host: the last
/// byte of its destination address replaced by `host` (the verifier of a destination-verified
/// request changes with it; forwarding does not).
pub fn to_host(packet: &[u8], host: u8) -> Vec<u8> {
    // Common header (12) + destination ISD-AS (8) + source ISD-AS (8), then the destination host.
    assert_eq!(packet[9] >> 4, 0, "an IPv4 destination");
    let mut p = packet.to_vec();
    p[31] = host;
    p
}

/// The ID-INT stage of the benchmark router: keys from a local DRKey provider (cached after
/// the first packet), the source above, a seeded nonce generator.
pub fn stage(router: &Router) -> IdIntStage<DrkeyKeys, Source, CtrDrbg> {
    let provider = Arc::new(LocalProvider::new(router.local_ia(), &[3; 16], 86_400).unwrap());
    let keys = DrkeyKeys {
        cache: KeyCache::new(provider, 1024),
        local: router.local_ia(),
    };
    IdIntStage::new(keys, Source, CtrDrbg::new([5; 32]))
}
