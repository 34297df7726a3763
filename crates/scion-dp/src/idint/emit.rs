//! Writing a new entry: gathering the values this router can supply ([`gather`]) and laying
//! the plaintext entry out in the packet, from gathered values ([`emit_entry`]) or from a
//! flow's template ([`EntryPlan`]). The MAC field is left holding the previous entry's MAC
//! (the MAC input); `sealing` seals it.

use idint_wire::IsdAsn;
use idint_wire::ext::opt_type;
use idint_wire::idint::entry::{MAC_LEN as MAC_FIELD, NONCE_LEN, NONCE_OFFSET, flags as eflags};

use crate::telemetry::{HopContext, TelemetrySource, per_burst, read_instruction};

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

impl Gathered {
    /// An entry of `ctx`'s interfaces with only the items of `bitmap` every entry has.
    #[inline(always)]
    fn empty(bitmap: u8, ctx: &HopContext) -> Gathered {
        Gathered {
            node_id: 0,
            ingress_if: ctx.ingress_if,
            egress_if: ctx.egress_if,
            mask: bitmap & item::ALWAYS,
            values: [0; 4],
            widths: [0; 4],
            md_len: 0,
        }
    }
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
    let mut g = Gathered::empty(bitmap, ctx);
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

/// Longest entry a flow template holds (as the burst pass seals; router entries are at most 64
/// bytes).
pub(super) const TEMPLATE_MAX: usize = 80;

/// Bytes of the store a per-packet value is written with (values are at most 8 bytes).
const WORD_BYTES: usize = 8;

/// Bytes copied per store when an entry is written from its template.
const CHUNK: usize = 16;

/// A slot a template asks the source for per packet: its instruction code and, if the source
/// supplied it for the learning packet, how its value is written: one 8-byte store at
/// `store_at` ending where the slot ends, keeping the bits of `mask` (the slot's width) from
/// the value and the rest from the template.
#[derive(Clone, Copy, Default)]
pub(super) struct PerPacket {
    pub(super) code: u8,
    pub(super) store_at: u8,
    pub(super) mask: u64,
}

impl PerPacket {
    /// The slot of instruction `code`, `width` bytes at `at` in the entry (`at + width` at
    /// least [`WORD_BYTES`]: slots start after the entry's 6 header bytes).
    fn new(code: u8, width: u8, at: u8) -> Self {
        let end = at.saturating_add(width);
        PerPacket {
            code,
            store_at: end.saturating_sub(WORD_BYTES as u8),
            mask: u64::MAX
                .checked_shr(u64::BITS.saturating_sub(u32::from(width) * u8::BITS))
                .unwrap_or(0),
        }
    }
}

/// One slot a template asks the source for.
#[derive(Clone, Copy, Default)]
pub(super) struct Read {
    /// Its index among the instructions (0-3), instruction code and width.
    pub(super) slot: u8,
    pub(super) code: u8,
    pub(super) width: u8,
    /// Where its value goes in the entry, if the source supplied it for the learning packet.
    pub(super) at: Option<u8>,
    /// Whether it is asked for once per burst ([`per_burst`], or steady in a burst for the
    /// source: [`TelemetrySource::steady_in_burst`]).
    pub(super) per_burst: bool,
}

/// The entry a flow template writes while the source supplies the same items as for the
/// packet it was learnt from: its plaintext bytes (header, bitmap items, zero padding; nonce
/// and MAC field zero) with the per-burst values ([`per_burst`], and the node id) of the last
/// refresh; the other values, the nonce and the MAC field are written per packet.
#[derive(Clone, Copy)]
pub(super) struct EntryPlan {
    pub(super) bytes: [u8; TEMPLATE_MAX],
    pub(super) len: u8,
    /// Whether the request asks for the node id; where it goes if the source supplied it.
    pub(super) ask_node: bool,
    pub(super) node_at: Option<u8>,
    /// Every slot asked for, in order.
    pub(super) reads: [Read; 4],
    pub(super) n_reads: u8,
    /// The slots asked for per packet, and which of them the source supplied for the
    /// learning packet (bit `d` for `per_packet[d]`).
    pub(super) per_packet: [PerPacket; 4],
    pub(super) n_per_packet: u8,
    pub(super) supplied: u8,
}

impl EntryPlan {
    /// The template of `e` (at most [`TEMPLATE_MAX`] bytes), just written from `g` for
    /// `instructions`; `ask_node`: the request's bitmap asks for the node id. Slots of
    /// [`per_burst`] codes, or steady in a burst for `source`, are asked for once per burst.
    pub(super) fn new<S: TelemetrySource>(
        e: &[u8],
        g: &Gathered,
        instructions: &[idint_wire::idint::Instruction; 4],
        ask_node: bool,
        source: &S,
    ) -> Option<Self> {
        let len = e.len();
        let mut p = EntryPlan {
            bytes: [0; TEMPLATE_MAX],
            len: u8::try_from(len).ok()?,
            ask_node,
            node_at: None,
            reads: [Read::default(); 4],
            n_reads: 0,
            per_packet: [PerPacket::default(); 4],
            n_per_packet: 0,
            supplied: 0,
        };
        let nonce = e.get(ENTRY_FLAGS)? & eflags::C != 0;
        p.bytes.get_mut(..len)?.copy_from_slice(e);
        let mut at = NONCE_OFFSET;
        if nonce {
            p.bytes[at..at + NONCE_LEN].fill(0);
            at += NONCE_LEN;
        }
        p.bytes[len - MAC_FIELD..len].fill(0);
        if g.mask & item::NODE_ID != 0 {
            p.node_at = Some(at as u8);
        }
        let mut v = at + usize::from(BITMAP_BYTES[usize::from(g.mask)]);
        for (k, ins) in instructions.iter().enumerate() {
            let w = ins.data_len();
            if w == 0 || ins.reserved_bit() {
                continue;
            }
            let supplied = g.widths[k] != 0;
            let read = Read {
                slot: k as u8,
                code: ins.0,
                width: w as u8,
                at: supplied.then_some(v as u8),
                per_burst: per_burst(ins.0) || source.steady_in_burst(ins.0),
            };
            if supplied {
                v += w;
            }
            if !read.per_burst {
                let d = usize::from(p.n_per_packet);
                p.per_packet[d] = PerPacket::new(read.code, read.width, read.at.unwrap_or(0));
                p.supplied |= u8::from(supplied) << d;
                p.n_per_packet += 1;
            }
            p.reads[usize::from(p.n_reads)] = read;
            p.n_reads += 1;
        }
        Some(p)
    }

    /// Asks the source for the per-burst values (node id, [`per_burst`] slots) and writes
    /// them into the template; `false` if it did not supply the same of them as for the
    /// packet the template was learnt from.
    #[inline(never)]
    pub(super) fn refresh<S: TelemetrySource>(
        &mut self,
        source: &mut S,
        local_ia: IsdAsn,
        ctx: &HopContext,
    ) -> bool {
        let node_id = if self.ask_node {
            source.node_id()
        } else {
            None
        };
        match (node_id, self.node_at) {
            (Some(id), Some(at)) => put_be(&mut self.bytes, usize::from(at), u64::from(id), 4),
            (None, None) => {}
            _ => return false,
        }
        for r in self.reads[..usize::from(self.n_reads)].iter() {
            if !r.per_burst {
                continue;
            }
            match (read_instruction(source, local_ia, r.code, ctx), r.at) {
                (Some(v), Some(at)) => {
                    put_be(&mut self.bytes, usize::from(at), v, usize::from(r.width));
                }
                (None, None) => {}
                _ => return false,
            }
        }
        true
    }

    /// Writes the template into `e` (exactly its length), `prev_mac` in its MAC field, the
    /// per-packet values `values` (`values[d]` of `per_packet[d]`, those the template has
    /// room for: the source supplied the same items as for the learning packet) and `nonce`
    /// after the header (if encrypted): the entry [`emit_entry`] writes for the same values
    /// and nonce. Fixed-size copies (the last one overlapping), no call to `memcpy`.
    #[inline(always)]
    pub(super) fn write(
        &self,
        e: &mut [u8],
        nonce: Option<[u8; NONCE_LEN]>,
        values: &[u64; 4],
        prev_mac: [u8; 4],
    ) {
        let len = e.len();
        if (CHUNK..=TEMPLATE_MAX).contains(&len) {
            let mut o = 0;
            while o + CHUNK < len {
                e[o..o + CHUNK].copy_from_slice(&self.bytes[o..o + CHUNK]);
                o += CHUNK;
            }
            e[len - CHUNK..].copy_from_slice(&self.bytes[len - CHUNK..len]);
        } else if let Some(b) = self.bytes.get(..len) {
            e.copy_from_slice(b);
        }
        // Last slot first: each value is one 8-byte store ending where its slot ends, the
        // bytes before the slot taken from the template (any earlier slot's value among them
        // is written after it, the nonce too).
        let n = usize::from(self.n_per_packet);
        for (d, (r, &v)) in self.per_packet[..n].iter().zip(values).enumerate().rev() {
            if self.supplied & (1 << d) != 0 {
                self.put_value(e, r, v);
            }
        }
        if let Some(n) = nonce {
            e[NONCE_OFFSET..NONCE_OFFSET + NONCE_LEN].copy_from_slice(&n);
        }
        e[len - MAC_FIELD..].copy_from_slice(&prev_mac);
    }

    /// Writes `v` into slot `r` of `e` (a copy of the template) with one 8-byte store ending
    /// at the slot's end: the low bytes of `v` big-endian in the slot, the bytes before it
    /// the template's.
    #[inline(always)]
    fn put_value(&self, e: &mut [u8], r: &PerPacket, v: u64) {
        let from = usize::from(r.store_at);
        let to = from + WORD_BYTES;
        let (Some(t), Some(out)) = (self.bytes.get(from..to), e.get_mut(from..to)) else {
            return;
        };
        let t = u64::from_be_bytes(t.try_into().unwrap_or([0; WORD_BYTES]));
        out.copy_from_slice(&((t & !r.mask) | (v & r.mask)).to_be_bytes());
    }

    /// The values of a packet whose source supplied other items than the template's: the
    /// per-packet ones already asked for (`values`, `supplied`: as for [`Self::write`]), the
    /// per-burst ones asked for again (no side effects), laid out as [`gather`] does.
    #[inline(never)]
    pub(super) fn gathered<S: TelemetrySource>(
        &self,
        source: &mut S,
        local_ia: IsdAsn,
        bitmap: u8,
        ctx: &HopContext,
        values: &[u64; 4],
        supplied: u8,
    ) -> Gathered {
        let mut g = Gathered::empty(bitmap, ctx);
        if self.ask_node
            && let Some(id) = source.node_id()
        {
            g.node_id = id;
            g.mask |= item::NODE_ID;
        }
        g.md_len = usize::from(BITMAP_BYTES[usize::from(g.mask)]);
        let mut d = 0;
        for r in self.reads[..usize::from(self.n_reads)].iter() {
            let v = if r.per_burst {
                read_instruction(source, local_ia, r.code, ctx)
            } else {
                d += 1;
                (supplied & (1 << (d - 1)) != 0).then(|| values[d - 1])
            };
            if let Some(v) = v {
                let (k, w) = (usize::from(r.slot), usize::from(r.width));
                g.values[k] = v;
                g.widths[k] = w;
                g.md_len += w;
            }
        }
        g
    }
}
