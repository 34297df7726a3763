//! Writing a new entry: gathering the values this router can supply ([`gather`]) and laying
//! the plaintext entry out in the packet, from gathered values ([`emit_entry`]) or from a
//! flow's plan ([`emit_planned`]). The MAC field is left holding the previous entry's MAC
//! (the MAC input); `sealing` seals it.

use idint_wire::IsdAsn;
use idint_wire::ext::opt_type;
use idint_wire::idint::entry::{NONCE_LEN, NONCE_OFFSET, flags as eflags};

use crate::telemetry::{HopContext, TelemetrySource, read_instruction};

use super::layout::{
    ENTRY_FLAGS, ENTRY_HOP, ENTRY_MD, OPT_DATA_LEN, OPT_HDR, OPT_TYPE, entry_hop, entry_md, item,
};
use super::roles::Role;

/// The values of a new entry, gathered before its length is known (kept as integers: no
/// byte staging buffer that would be read back with wider loads).
pub(super) struct Gathered {
    pub(super) node_id: u32,
    pub(super) ingress_if: u16,
    pub(super) egress_if: u16,
    /// The Mask nibble of the entry (items actually present).
    pub(super) mask: u8,
    pub(super) values: [u64; 4],
    pub(super) widths: [usize; 4],
    pub(super) md_len: usize,
}

/// Reads the bitmap items and the instruction values this router can supply.
#[inline(always)]
pub(super) fn gather<S: TelemetrySource>(
    source: &mut S,
    local_ia: IsdAsn,
    bitmap: u8,
    instructions: &[idint_wire::idint::Instruction; 4],
    ctx: &HopContext,
) -> Gathered {
    let mut g = Gathered {
        node_id: 0,
        ingress_if: ctx.ingress_if,
        egress_if: ctx.egress_if,
        mask: bitmap & item::ALWAYS,
        values: [0; 4],
        widths: [0; 4],
        md_len: 0,
    };
    if bitmap & item::NODE_ID != 0
        && let Some(id) = source.node_id()
    {
        g.node_id = id;
        g.mask |= item::NODE_ID;
    }
    g.md_len = usize::from(BITMAP_BYTES[usize::from(g.mask)]);
    for (k, ins) in instructions.iter().enumerate() {
        let w = ins.data_len();
        if w == 0 || ins.reserved_bit() {
            continue;
        }
        if let Some(v) = read_instruction(source, local_ia, ins.0, ctx) {
            g.values[k] = v;
            g.widths[k] = w;
            g.md_len += w;
        }
    }
    g
}

/// Bytes of the bitmap items for each Mask value (node id 4, node count 2, interfaces 2 + 2).
pub(super) const BITMAP_BYTES: [u8; 16] = {
    let mut t = [0u8; 16];
    let mut m = 0;
    while m < 16 {
        let m8 = m as u8;
        t[m] = (if m8 & item::NODE_ID != 0 { 4 } else { 0 })
            + (if m8 & item::NODE_COUNT != 0 { 2 } else { 0 })
            + (if m8 & item::INGRESS_IF != 0 { 2 } else { 0 })
            + (if m8 & item::EGRESS_IF != 0 { 2 } else { 0 });
        m += 1;
    }
    t
};

/// Writes the low `w` bytes (2, 4, 6 or 8) of `v` big-endian at `e[p..]` with fixed-size
/// stores.
#[inline(always)]
fn put_be(e: &mut [u8], p: usize, v: u64, w: usize) {
    match w {
        2 => e[p..p + 2].copy_from_slice(&(v as u16).to_be_bytes()),
        4 => e[p..p + 4].copy_from_slice(&(v as u32).to_be_bytes()),
        6 => {
            e[p..p + 2].copy_from_slice(&((v >> 32) as u16).to_be_bytes());
            e[p + 2..p + 6].copy_from_slice(&(v as u32).to_be_bytes());
        }
        _ => e[p..p + 8].copy_from_slice(&v.to_be_bytes()),
    }
}

/// Writes a new plaintext entry into `e`, which has exactly its length, with `prev_mac` (the
/// MAC of the entry below) in its MAC field: the entry is then exactly its MAC input.
#[inline(always)]
pub(super) fn emit_entry(
    e: &mut [u8],
    g: &Gathered,
    role: Role,
    hop: u8,
    nonce: Option<[u8; 12]>,
    prev_mac: [u8; 4],
) {
    let len = e.len();
    e[OPT_TYPE] = opt_type::IDINT_ENTRY;
    e[OPT_DATA_LEN] = (len - OPT_HDR) as u8;
    e[ENTRY_FLAGS] = (u8::from(role.first) * eflags::I)
        | (u8::from(role.egress) * eflags::E)
        | (u8::from(nonce.is_some()) * eflags::C);
    e[ENTRY_HOP] = (hop & entry_hop::MASK) << entry_hop::SHIFT;
    let ml = g.widths.map(|w| (w / entry_md::ML_UNIT) as u16);
    let [s1, s2, s3, s4] = entry_md::ML_SHIFT;
    let word = (u16::from(g.mask) << entry_md::MASK_SHIFT)
        | (ml[0] << s1)
        | (ml[1] << s2)
        | (ml[2] << s3)
        | (ml[3] << s4);
    e[ENTRY_MD..ENTRY_MD + 2].copy_from_slice(&word.to_be_bytes());
    let mut p = NONCE_OFFSET;
    if let Some(n) = nonce {
        e[p..p + NONCE_LEN].copy_from_slice(&n);
        p += NONCE_LEN;
    }
    if g.mask & item::NODE_ID != 0 {
        put_be(e, p, u64::from(g.node_id), 4);
        p += 4;
    }
    for (bit, v) in [
        (item::NODE_COUNT, 1),
        (item::INGRESS_IF, g.ingress_if),
        (item::EGRESS_IF, g.egress_if),
    ] {
        if g.mask & bit != 0 {
            put_be(e, p, u64::from(v), 2);
            p += 2;
        }
    }
    for k in 0..4 {
        let w = g.widths[k];
        if w != 0 {
            put_be(e, p, g.values[k], w);
            p += w;
        }
    }
    // Zero padding (0-3 bytes) and the MAC field: `len - p` is 4 to 7, so two fixed 4-byte
    // stores cover it (a loop here became a call to memset per packet).
    e[p..p + 4].fill(0);
    e[len - 4..].copy_from_slice(&prev_mac);
}

/// Writes a new plaintext entry into `e` (exactly its length) in the layout `ep` planned:
/// what [`emit_entry`] writes for the same items, header bytes taken from the plan. `values[r]`
/// is the value of `ep.reads[r]` (every read of the plan was supplied). Kept apart from
/// `emit_entry` on purpose: sharing the metadata writer between the two cost 25 instructions
/// per packet on this path (callgrind, 8 B authenticated).
#[inline(always)]
pub(super) fn emit_planned(
    e: &mut [u8],
    ep: &EntryPlan,
    nonce: Option<[u8; 12]>,
    node_id: Option<u32>,
    ctx: &HopContext,
    values: &[u64; 4],
    prev_mac: [u8; 4],
) {
    let len = e.len();
    e[..6].copy_from_slice(&ep.head);
    let mut p = NONCE_OFFSET;
    if let Some(n) = nonce {
        e[p..p + NONCE_LEN].copy_from_slice(&n);
        p += NONCE_LEN;
    }
    if let Some(id) = node_id {
        put_be(e, p, u64::from(id), 4);
        p += 4;
    }
    for (bit, v) in [
        (item::NODE_COUNT, 1),
        (item::INGRESS_IF, ctx.ingress_if),
        (item::EGRESS_IF, ctx.egress_if),
    ] {
        if ep.mask & bit != 0 {
            put_be(e, p, u64::from(v), 2);
            p += 2;
        }
    }
    for (r, (&(_, _, w), &v)) in ep.reads[..usize::from(ep.n_reads)]
        .iter()
        .zip(values)
        .enumerate()
    {
        if ep.supplied & (1 << r) != 0 {
            let w = usize::from(w);
            put_be(e, p, v, w);
            p += w;
        }
    }
    e[p..p + 4].fill(0);
    e[len - 4..].copy_from_slice(&prev_mac);
}

/// The entry a plan writes while the source supplies the same items as for the planning
/// packet: everything but the values, the nonce and the MAC is fixed.
#[derive(Clone, Copy)]
pub(super) struct EntryPlan {
    /// The first 6 bytes (type, length, flags, hop, mask and slot lengths).
    pub(super) head: [u8; 6],
    pub(super) len: u8,
    /// The Mask nibble written (node id 8, node count 4, ingress 2, egress 1).
    pub(super) mask: u8,
    /// The slots the source is asked for, in order: (slot index, instruction code, width);
    /// and which of them it supplied (bit `r` for `reads[r]`).
    pub(super) reads: [(u8, u8, u8); 4],
    pub(super) n_reads: u8,
    pub(super) supplied: u8,
}

impl EntryPlan {
    /// The layout of `e`, just written from `g` for `instructions`.
    pub(super) fn new(
        e: &[u8],
        g: &Gathered,
        instructions: &[idint_wire::idint::Instruction; 4],
    ) -> Self {
        let mut p = EntryPlan {
            head: [0; 6],
            len: e.len() as u8,
            mask: g.mask,
            reads: [(0, 0, 0); 4],
            n_reads: 0,
            supplied: 0,
        };
        p.head.copy_from_slice(&e[..6]);
        for (k, ins) in instructions.iter().enumerate() {
            let w = ins.data_len();
            if w == 0 || ins.reserved_bit() {
                continue;
            }
            let r = usize::from(p.n_reads);
            p.reads[r] = (k as u8, ins.0, w as u8);
            if g.widths[k] != 0 {
                p.supplied |= 1 << r;
            }
            p.n_reads += 1;
        }
        p
    }
}
