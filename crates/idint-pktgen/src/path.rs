//! Path segments with chained SegIDs and MACs, and the SCION path as it looks when it arrives
//! at the router under test (`scion-dp.md` §2.2).

use idint_wire::IsdAsn;
use idint_wire::path::{HopField, InfoField, PathMeta, ScionPathRepr};

use crate::keys::KeyRing;

/// One AS hop of a segment, in construction order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegHop {
    /// The AS of the hop.
    pub ia: IsdAsn,
    /// Ingress interface in construction direction (0 at the segment's first AS).
    pub cons_ingress: u16,
    /// Egress interface in construction direction (0 at the segment's last AS).
    pub cons_egress: u16,
}

/// A segment: hops in construction order, travelled in that order if `cons_dir`, else
/// reversed. A peering segment's hop 0 is the peering hop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegSpec {
    /// Travelled in construction direction.
    pub cons_dir: bool,
    /// A peering segment (its info field's Peer flag).
    pub peer: bool,
    /// The hops in construction order.
    pub hops: Vec<SegHop>,
}

/// Where the packet is when it reaches the router under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Segment index (travel order).
    pub seg: usize,
    /// Construction index of the router's hop in that segment.
    pub hop: usize,
    /// Whether the packet arrives from another AS (its ingress BR has not run yet).
    pub external: bool,
}

/// A built path: the path header as it arrives and the full 16-byte MACs of every hop in
/// travel order (EPIC hop validation fields are keyed with them).
#[derive(Debug, Clone)]
pub struct BuiltPath {
    /// The path header.
    pub repr: ScionPathRepr,
    /// The full 16-byte MAC of every hop, in travel order.
    pub full_macs: Vec<[u8; 16]>,
    /// Travel index of the router's (current) hop.
    pub curr_hf: usize,
}

/// A fixed SegID start value per segment (any value works; distinct per segment).
fn beta0(seg: usize, salt: u16) -> u16 {
    0x5eed ^ (seg as u16).wrapping_mul(0x9e37) ^ salt
}

/// Builds the path of `segs` with info timestamps `timestamp` and hop expiry `exp_time`, with
/// MACs from `keys`, positioned at `pos`.
pub fn build(
    segs: &[SegSpec],
    pos: Position,
    timestamp: u32,
    exp_time: u8,
    salt: u16,
    keys: &mut KeyRing,
) -> BuiltPath {
    let mut repr = ScionPathRepr {
        meta: PathMeta::default(),
        infos: [InfoField::default(); 3],
        hops: [HopField::default(); 64],
    };
    let mut full_macs = Vec::new();
    let mut travel = 0usize;
    let mut curr_hf = 0usize;
    for (k, seg) in segs.iter().enumerate() {
        let n = seg.hops.len();
        // betas[i]: the SegID hop i is MACed over. A peering hop (0) shares hop 1's.
        let mut betas = vec![0u16; n];
        let mut hops = vec![HopField::default(); n];
        let mut macs = vec![[0u8; 16]; n];
        let mut beta = beta0(k, salt);
        let order: Vec<usize> = if seg.peer {
            (1..n).chain([0]).collect()
        } else {
            (0..n).collect()
        };
        for &i in &order {
            let h = &seg.hops[i];
            let hf = HopField {
                ingress_alert: false,
                egress_alert: false,
                exp_time,
                cons_ingress: h.cons_ingress,
                cons_egress: h.cons_egress,
                mac: [0; 6],
            };
            let b = if seg.peer && i == 0 {
                betas.get(1).copied().unwrap_or(beta)
            } else {
                beta
            };
            let full = keys.hop_mac(h.ia).compute(&hf.mac_input(b, timestamp));
            let mut hf = hf;
            hf.mac.copy_from_slice(&full[..6]);
            betas[i] = b;
            hops[i] = hf;
            macs[i] = full;
            if !(seg.peer && i == 0) {
                beta = b ^ u16::from_be_bytes([full[0], full[1]]);
            }
        }
        // The SegID the packet carries for this segment when it reaches the router.
        let seg_id = if k < pos.seg {
            // Already travelled.
            if seg.cons_dir { betas[n - 1] } else { betas[0] }
        } else if k > pos.seg {
            // Not reached yet: what the source (or the crossover AS) uses.
            if seg.cons_dir { betas[0] } else { betas[n - 1] }
        } else if !seg.cons_dir && pos.external {
            // Against construction, the ingress BR XORs the hop's MAC in first.
            betas.get(pos.hop + 1).copied().unwrap_or(betas[pos.hop])
        } else {
            betas[pos.hop]
        };
        repr.infos[k] = InfoField {
            peer: seg.peer,
            cons_dir: seg.cons_dir,
            seg_id,
            timestamp,
        };
        repr.meta.seg_len[k] = n as u8;
        let travel_order: Vec<usize> = if seg.cons_dir {
            (0..n).collect()
        } else {
            (0..n).rev().collect()
        };
        for i in travel_order {
            if k == pos.seg && i == pos.hop {
                curr_hf = travel;
            }
            repr.hops[travel] = hops[i];
            full_macs.push(macs[i]);
            travel += 1;
        }
    }
    repr.meta.curr_hf = curr_hf as u8;
    repr.meta.curr_inf = pos.seg as u8;
    BuiltPath {
        repr,
        full_macs,
        curr_hf,
    }
}
