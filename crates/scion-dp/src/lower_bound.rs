//! A measurement aid, not a forwarding mode for production: the least work an authenticated
//! (optionally encrypted) ID-INT entry can cost, to tell how much of the measured ID-INT cost
//! is this implementation's and how much any implementation pays on the same machine (the
//! DPDK router's `dataplane.idint_lower_bound`, run by `scripts/router-bench.sh`, and the
//! `idint` criterion benchmark's `single_lower_bound` and `burst32_lower_bound` rows).
//!
//! The first ID-INT packet goes through the real [`IdIntStage`]; what it wrote becomes the
//! *template*: the request (main option bytes), the route, the destination verifier, the top
//! entry, where the new entry goes, its bytes and its key. Every later packet whose request,
//! route, verifier, top entry and free space match gets, with no parsing, walking or lookup:
//! the template entry copied in, the burst's time in its first metadata bytes (in place of the
//! source's values), the previous entry's MAC chained, a fresh nonce when encrypted, the rest
//! of the padding and the TOS rewritten; at the end of the burst every entry's CBC-MAC (and
//! keystream) under the template's key, all lanes interleaved. Entries stay verifiable
//! (same key, correct chain), only their values are not measurements. Anything else takes the
//! real stage. Only destination verifiers with IPv4 hosts and entries of at most 80 bytes are
//! templated; one verifier, so no key lookup but when the time changes (once per burst: a
//! later time may fall into another key epoch): the favourable case.
//!
//! [`Mode::Unsealed`] leaves out the cryptography as well (no nonce, no MAC, no keystream:
//! the entries do not verify): what writing the entry alone costs.

use alloc::boxed::Box;

use idint_wire::crypto::{Aes128Enc, cbc_mac_lanes, encrypt_blocks};
use idint_wire::ext::opt_type;
use idint_wire::idint::entry::{NONCE_LEN, NONCE_OFFSET, flags as eflags};
use idint_wire::scion::{DST_HOST_OFFSET, DST_IA_OFFSET};

use crate::burst::MAX_BURST;
use crate::config::Router;
use crate::header::{
    ADDR_TYPES_AT, DST_ADDR_TYPE_SHIFT, EXT_LEN_AT, HDR_LEN_AT, LEN_UNIT, NEXT_HDR_AT,
    ext_header_len,
};
use crate::idint::layout::mode::{VERIFIER_DESTINATION, VERIFIER_MASK, VERIFIER_SHIFT};
use crate::idint::layout::{
    MAIN, MAIN_DATA_LEN, MAIN_MODE, OPT_DATA_LEN, OPT_HDR, REQUEST_END, STACK_LEN, TOS, WORD,
};
use crate::idint::{
    Forwarded, ForwardingHook, IdIntStage, NonceSource, ReportExporter, VerifierKeys,
};
use crate::telemetry::TelemetrySource;
use crate::{BurstPacket, Disposition};

/// Longest templated entry (as the stage's burst pass).
const ENTRY_MAX: usize = 80;
/// Its CBC-MAC blocks.
const BLOCKS: usize = ENTRY_MAX / 16;

/// What the real stage wrote into the first packet, and the key it used.
struct Template {
    /// HBH bytes 0-15.
    request: u128,
    /// Ingress and egress interface, and the hop-field index (the entry's Hop).
    route: (u16, u16, u8),
    /// The address types byte (SCION header byte 9), destination ISD-AS and IPv4 host
    /// (bytes 12-19 and 28-31).
    types: u8,
    verifier: [u8; 12],
    /// Offset of the top entry in the HBH header, and its first 6 bytes.
    top_at: usize,
    top: [u8; 6],
    /// Where the new entry goes, its length and 16-byte blocks, the end of the stack.
    free: usize,
    len: usize,
    blocks: usize,
    end: usize,
    /// The padding option header that was at `free`, and the end of that option (the
    /// stage re-covers only the rest of it: what follows it stays as it is).
    pad: [u8; 2],
    pad_end: usize,
    /// The new entry in 16-byte blocks, zeros after it (the padding's body), written whole.
    entry: [[u8; 16]; BLOCKS],
    /// The entry's bytes in its last block (the rest is the padding's header and body).
    last_mask: u128,
    /// The new TOS.
    tos: u8,
    /// Where the values start (after the nonce when encrypted).
    values_at: usize,
    encrypted: bool,
    /// Keystream blocks per entry and the mask of the last one (encrypted only).
    ks_blocks: usize,
    ks_last_mask: u128,
    key: Aes128Enc,
    /// The time `key` was found for (any other time looks it up again).
    found_ns: u64,
}

/// `k` low-address bytes of ones (as a little-endian load sees them).
fn keep(k: usize) -> u128 {
    if k >= 16 {
        u128::MAX
    } else {
        (1u128 << (8 * k)) - 1
    }
}

/// The 16 bytes at `b[at..]` (in bounds: callers checked).
#[inline(always)]
fn load(b: &[u8], at: usize) -> u128 {
    u128::from_le_bytes(b[at..at + 16].try_into().unwrap_or([0; 16]))
}

/// Stores `v` at `b[at..at + 16]` (in bounds: callers checked).
#[inline(always)]
fn store(b: &mut [u8], at: usize, v: u128) {
    b[at..at + 16].copy_from_slice(&v.to_le_bytes());
}

/// Which ID-INT processing a worker runs (configuration `dataplane.idint_lower_bound`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// The real stage (the only mode for production).
    #[default]
    Off,
    /// Template entries, MACed (and encrypted) as the real stage does.
    Sealed,
    /// Template entries without any cryptography (they do not verify).
    Unsealed,
}

impl Mode {
    /// The mode named `s` in the configuration ("off", "sealed", "unsealed").
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "off" => Some(Mode::Off),
            "sealed" => Some(Mode::Sealed),
            "unsealed" => Some(Mode::Unsealed),
            _ => None,
        }
    }
}

/// The lower-bound hook's state (kept across bursts).
pub struct LowerBound {
    /// Whether entries get their nonce, MAC and keystream.
    seal: bool,
    template: Option<Template>,
    /// Templated entries of this burst: slot and offset in the packet.
    jobs: [(u8, u16); MAX_BURST],
    n: usize,
    blocks: Box<[[[u8; 16]; MAX_BURST]; BLOCKS]>,
    n_blocks: [u8; MAX_BURST],
    macs: [[u8; 16]; MAX_BURST],
    ks: Box<[[u8; 16]; MAX_BURST * BLOCKS]>,
    /// Packets that took the template.
    pub templated: u64,
    /// Packets with ID-INT that took the real stage.
    pub general: u64,
}

impl LowerBound {
    /// The state for `mode` (`None` for [`Mode::Off`]).
    pub fn new(mode: Mode) -> Option<Self> {
        let seal = match mode {
            Mode::Off => return None,
            Mode::Sealed => true,
            Mode::Unsealed => false,
        };
        Some(LowerBound {
            seal,
            template: None,
            jobs: [(0, 0); MAX_BURST],
            n: 0,
            blocks: Box::new([[[0; 16]; MAX_BURST]; BLOCKS]),
            n_blocks: [0; MAX_BURST],
            macs: [[0; 16]; MAX_BURST],
            ks: Box::new([[0; 16]; MAX_BURST * BLOCKS]),
            templated: 0,
            general: 0,
        })
    }
}

/// The hook for one burst: the lower bound's state and the real stage beside it.
pub struct WithStage<'a, K, S, N, X> {
    /// Kept state.
    pub bound: &'a mut LowerBound,
    /// The real stage (first packets, anything the template does not fit).
    pub stage: &'a mut IdIntStage<K, S, N, X>,
}

/// The forwarding decision as (ingress, egress) interfaces and the hop-field index (which the
/// entry names), for the packets the template covers (forwarded to an interface).
fn route(f: &Forwarded, d: &Disposition) -> Option<(u16, u16, u8)> {
    match *d {
        Disposition::Forward { ifid } => Some((f.ingress.ifid(), ifid, f.hop)),
        _ => None,
    }
}

/// The HBH header of `buf` (a SCION packet) and its offset, if its first option is ID-INT's.
fn hbh_of(buf: &[u8], len: usize) -> Option<(usize, usize)> {
    if len <= HDR_LEN_AT || buf.len() < len || buf[NEXT_HDR_AT] != idint_wire::ext::HBH {
        return None;
    }
    let hl = usize::from(buf[HDR_LEN_AT]) * LEN_UNIT;
    let n = ext_header_len(*buf.get(hl + EXT_LEN_AT)?);
    (hl + n <= len && buf.get(hl + MAIN) == Some(&opt_type::IDINT_MAIN)).then_some((hl, n))
}

/// Address-type byte: one DT/DL or ST/SL nibble after its shift.
const ADDR_TYPE_NIBBLE: u8 = 0xf;
/// Address-type byte: DT/DL (or ST/SL) of a 4-byte IPv4 host address.
const ADDR_TYPE_IPV4: u8 = 0x0;

/// Whether the request names the packet's destination as verifier and the destination host is
/// IPv4, the only case templated (no key lookup, perhaps a derivation, for anything else).
/// `before`: the HBH header; `buf`: the packet.
#[inline(always)]
fn destination_verifier_v4(before: &[u8], buf: &[u8]) -> bool {
    (before[MAIN_MODE] >> VERIFIER_SHIFT) & VERIFIER_MASK == VERIFIER_DESTINATION
        && (buf[ADDR_TYPES_AT] >> DST_ADDR_TYPE_SHIFT) & ADDR_TYPE_NIBBLE == ADDR_TYPE_IPV4
}

impl Template {
    /// Reads the template from the packet before (`before`: its HBH bytes) and after the real
    /// stage pushed an entry into it.
    fn learn(
        before: &[u8],
        buf: &[u8],
        hl: usize,
        route: (u16, u16, u8),
        key: &Aes128Enc,
        found_ns: u64,
    ) -> Option<Self> {
        let hbh = buf.get(hl..hl + before.len())?;
        let mlen = usize::from(before[MAIN_DATA_LEN]) + OPT_HDR;
        let s = MAIN + mlen;
        let top_at = s + usize::from(before[TOS]) * WORD;
        let free = s + usize::from(hbh[TOS]) * WORD;
        let end = s + usize::from(before[STACK_LEN]) * WORD;
        let len = usize::from(*hbh.get(free + OPT_DATA_LEN)?) + OPT_HDR;
        let blocks = len.div_ceil(16);
        let pad = [*before.get(free)?, *before.get(free + OPT_DATA_LEN)?];
        let pad_end = free + OPT_HDR + usize::from(pad[1]);
        // Whole blocks are written: they must stay within the padding option at `free` (one
        // PadN, at most 257 bytes), itself within the stack.
        if hbh.get(free) != Some(&opt_type::IDINT_ENTRY)
            || len > ENTRY_MAX
            || pad[0] != opt_type::PADN
            || free + 16 * blocks > pad_end
            || pad_end > end
        {
            return None;
        }
        // Destination verifier (kind 1), IPv4 destination host.
        if !destination_verifier_v4(before, buf) {
            return None;
        }
        let mut flat = [0u8; ENTRY_MAX];
        flat[..len].copy_from_slice(&hbh[free..free + len]);
        let encrypted = flat[2] & eflags::C != 0;
        let from = NONCE_OFFSET + NONCE_LEN;
        let ks_blocks = if encrypted {
            (len - from).div_ceil(16)
        } else {
            0
        };
        if free + from + 16 * ks_blocks > end {
            return None;
        }
        // The stage wrote the entry encrypted: the template holds it in the clear (values and
        // zero padding), as every templated entry is before it is sealed.
        let mut ctr = [0u8; 16];
        ctr[..12].copy_from_slice(&flat[NONCE_OFFSET..from]);
        for c in 0..ks_blocks {
            ctr[12..].copy_from_slice(&(c as u32).to_be_bytes());
            let k = aes(key, u128::from_le_bytes(ctr)).to_le_bytes();
            for (x, y) in flat[from + 16 * c..len].iter_mut().zip(k) {
                *x ^= y;
            }
        }
        let mut entry = [[0u8; 16]; BLOCKS];
        for (k, b) in flat[..len].iter().enumerate() {
            entry[k / 16][k % 16] = *b;
        }
        let mut verifier = [0u8; 12];
        verifier[..8].copy_from_slice(&buf[DST_IA_OFFSET..DST_IA_OFFSET + 8]);
        verifier[8..].copy_from_slice(&buf[DST_HOST_OFFSET..DST_HOST_OFFSET + 4]);
        let mut top = [0u8; 6];
        top.copy_from_slice(before.get(top_at..top_at + 6)?);
        Some(Template {
            request: u128::from_le_bytes(before[..REQUEST_END].try_into().ok()?),
            route,
            types: buf[ADDR_TYPES_AT],
            verifier,
            top_at,
            top,
            free,
            len,
            blocks,
            end,
            pad,
            pad_end,
            entry,
            last_mask: keep(len - 16 * (blocks - 1)),
            tos: hbh[TOS],
            values_at: NONCE_OFFSET + if encrypted { NONCE_LEN } else { 0 },
            encrypted,
            ks_blocks,
            // Unencrypted entries may end before `from` (12 or 16 bytes): no keystream.
            ks_last_mask: keep(len.saturating_sub(from + 16 * ks_blocks.saturating_sub(1))),
            key: key.clone(),
            found_ns,
        })
    }

    /// Makes `key` the verifier's key at `now_ns` (as the stage's plans do, whenever the time
    /// differs from when it was found); `false` if there is none.
    #[inline(always)]
    fn key_at<K: VerifierKeys>(&mut self, keys: &mut K, now_ns: u64) -> bool {
        if self.found_ns == now_ns {
            return true;
        }
        let ia = u64::from_be_bytes(self.verifier[..8].try_into().unwrap_or([0; 8]));
        let host = <[u8; 4]>::try_from(&self.verifier[8..]).unwrap_or([0; 4]);
        let host = idint_wire::HostAddr::V4(core::net::Ipv4Addr::from(host));
        let Some(key) = keys.as_host_key(idint_wire::IsdAsn::from_u64(ia), &host, now_ns) else {
            return false;
        };
        self.key = key.clone();
        self.found_ns = now_ns;
        true
    }

    /// Whether packet `buf` (HBH at `hl`, `n` bytes) is the template's case.
    #[inline(always)]
    fn fits(&self, buf: &[u8], hl: usize, n: usize, route: (u16, u16, u8)) -> bool {
        let hbh = &buf[hl..hl + n];
        n >= self.end
            && n >= REQUEST_END
            && u128::from_le_bytes(hbh[..REQUEST_END].try_into().unwrap_or([0; 16])) == self.request
            && route == self.route
            && buf.get(ADDR_TYPES_AT) == Some(&self.types)
            && buf.get(DST_IA_OFFSET..DST_IA_OFFSET + 8) == Some(&self.verifier[..8])
            && buf.get(DST_HOST_OFFSET..DST_HOST_OFFSET + 4) == Some(&self.verifier[8..])
            && hbh[self.top_at..self.top_at + 6] == self.top
            && hbh[self.free..self.free + 2] == self.pad
    }
}

impl<K: VerifierKeys, S: TelemetrySource, N: NonceSource, X: ReportExporter>
    WithStage<'_, K, S, N, X>
{
    /// Writes the template's entry (unsealed: the MAC field holds the previous MAC) if the
    /// packet is the template's case and returns its offset in the packet; else runs the real
    /// stage on it (single-packet path), learning the template from the first push.
    #[inline(always)]
    fn templated(
        &mut self,
        router: &Router,
        buf: &mut [u8],
        f: &Forwarded,
        d: &mut Disposition,
    ) -> Option<usize> {
        let (hl, n) = hbh_of(buf, f.len)?;
        let b = &mut *self.bound;
        let r = route(f, d);
        let fits = match (&mut b.template, r) {
            (Some(t), Some(r)) => {
                t.fits(buf, hl, n, r)
                    && (hl + t.free) <= usize::from(u16::MAX)
                    && (!b.seal || t.key_at(&mut self.stage.keys, f.now_ns))
            }
            _ => false,
        };
        match &b.template {
            Some(t) if fits => {
                let hbh = &mut buf[hl..hl + n];
                let (free, len) = (t.free, t.len);
                let mut prev = [0u8; 4];
                prev.copy_from_slice(&hbh[free - 4..free]);
                for (k, b) in t.entry.iter().enumerate().take(t.blocks) {
                    hbh[free + 16 * k..free + 16 * k + 16].copy_from_slice(b);
                }
                let e = &mut hbh[free..free + len];
                if t.encrypted && b.seal {
                    e[NONCE_OFFSET..NONCE_OFFSET + NONCE_LEN]
                        .copy_from_slice(&self.stage.nonces.nonce());
                }
                let v = t.values_at;
                if v + 8 <= len - 4 {
                    e[v..v + 8].copy_from_slice(&f.now_ns.to_be_bytes());
                }
                e[len - 4..].copy_from_slice(&prev);
                match t.pad_end - (free + len) {
                    0 => {}
                    1 => hbh[free + len] = opt_type::PAD1,
                    rest => {
                        hbh[free + len] = opt_type::PADN;
                        hbh[free + len + 1] = (rest - 2) as u8;
                    }
                }
                hbh[TOS] = t.tos;
                b.templated += 1;
                self.stage.counters.packets += 1;
                self.stage.counters.pushed += 1;
                self.stage.counters.encrypted += u64::from(t.encrypted && b.seal);
                Some(hl + free)
            }
            _ => {
                b.general += 1;
                let mut before = [0u8; 1024];
                let hbh_len = n.min(1024);
                before[..hbh_len].copy_from_slice(&buf[hl..hl + hbh_len]);
                let pushed = self.stage.counters.pushed;
                self.stage.after_forwarding(router, buf, f, d);
                if b.template.is_some() || self.stage.counters.pushed != pushed + 1 {
                    return None;
                }
                let r = r?;
                // Only a destination verifier with an IPv4 host is templated: no key lookup
                // (perhaps a derivation) for anything else.
                if !destination_verifier_v4(&before, buf) {
                    return None;
                }
                let (ia, host) = (
                    idint_wire::IsdAsn::from_u64(u64::from_be_bytes(
                        buf[DST_IA_OFFSET..DST_IA_OFFSET + 8]
                            .try_into()
                            .unwrap_or([0; 8]),
                    )),
                    idint_wire::HostAddr::V4(core::net::Ipv4Addr::from(
                        <[u8; 4]>::try_from(&buf[DST_HOST_OFFSET..DST_HOST_OFFSET + 4])
                            .unwrap_or([0; 4]),
                    )),
                );
                let key = self.stage.keys.as_host_key(ia, &host, f.now_ns).cloned()?;
                b.template = Template::learn(&before[..hbh_len], buf, hl, r, &key, f.now_ns);
                None
            }
        }
    }
}

/// One AES-128 block (little-endian view of its bytes).
#[inline(always)]
fn aes(key: &Aes128Enc, x: u128) -> u128 {
    let mut b = x.to_le_bytes();
    idint_wire::crypto::encrypt_blocks(key, core::slice::from_mut(&mut b));
    u128::from_le_bytes(b)
}

impl<K: VerifierKeys, S: TelemetrySource, N: NonceSource, X: ReportExporter> ForwardingHook
    for WithStage<'_, K, S, N, X>
{
    /// Only packets with a hop-by-hop header get an entry (as in the real stage).
    #[inline(always)]
    fn wants(&self, next_hdr: u8) -> bool {
        next_hdr == idint_wire::ext::HBH
    }

    /// A single packet: a templated entry is sealed at once (its CBC-MAC chain waited for).
    fn after_forwarding(
        &mut self,
        router: &Router,
        buf: &mut [u8],
        f: &Forwarded,
        d: &mut Disposition,
    ) {
        let Some(at) = self.templated(router, buf, f, d) else {
            return;
        };
        let b = &*self.bound;
        let Some(t) = &b.template else {
            return;
        };
        if !b.seal {
            return;
        }
        let (len, from) = (t.len, NONCE_OFFSET + NONCE_LEN);
        let mut mac = 0u128;
        for s in 0..t.blocks {
            let m = if s + 1 == t.blocks {
                t.last_mask
            } else {
                u128::MAX
            };
            mac = aes(&t.key, mac ^ (load(buf, at + 16 * s) & m));
        }
        let mut ctr = [0u8; 16];
        ctr[..12].copy_from_slice(&buf[at + NONCE_OFFSET..at + from]);
        buf[at + len - 4..at + len].copy_from_slice(&mac.to_le_bytes()[..4]);
        for c in 0..t.ks_blocks {
            ctr[12..].copy_from_slice(&(c as u32).to_be_bytes());
            let m = if c + 1 == t.ks_blocks {
                t.ks_last_mask
            } else {
                u128::MAX
            };
            let p = at + from + 16 * c;
            let k = aes(&t.key, u128::from_le_bytes(ctr));
            store(buf, p, load(buf, p) ^ (k & m));
        }
    }

    #[inline(always)]
    fn after_forwarding_in_burst(
        &mut self,
        router: &Router,
        buf: &mut [u8],
        f: &Forwarded,
        d: &mut Disposition,
        slot: usize,
    ) {
        if let Some(at) = self.templated(router, buf, f, d) {
            let b = &mut *self.bound;
            if b.n < MAX_BURST && b.seal {
                b.jobs[b.n] = (slot as u8, at as u16);
                b.n += 1;
            }
        }
    }

    fn finish_burst<P: BurstPacket>(&mut self, pkts: &mut [P]) {
        self.stage.finish_burst(pkts);
        let b = &mut *self.bound;
        let n = core::mem::take(&mut b.n);
        let Some(t) = &b.template else {
            return;
        };
        if n == 0 || !b.seal {
            return;
        }
        let (len, nb, n_ks) = (t.len, t.blocks, t.ks_blocks);
        let from = NONCE_OFFSET + NONCE_LEN;
        for (i, &(slot, at)) in b.jobs[..n].iter().enumerate() {
            let buf = pkts[usize::from(slot)].buffer();
            let at = usize::from(at);
            for (s, row) in b.blocks.iter_mut().enumerate().take(nb) {
                let m = if s + 1 == nb { t.last_mask } else { u128::MAX };
                row[i] = (load(buf, at + 16 * s) & m).to_le_bytes();
            }
            let mut ctr = [0u8; 16];
            ctr[..12].copy_from_slice(&buf[at + NONCE_OFFSET..at + from]);
            for c in 0..n_ks {
                ctr[12..].copy_from_slice(&(c as u32).to_be_bytes());
                b.ks[i * n_ks + c] = ctr;
            }
            b.n_blocks[i] = nb as u8;
        }
        cbc_mac_lanes(&t.key, &b.blocks[..nb], &b.n_blocks[..n], &mut b.macs[..n]);
        encrypt_blocks(&t.key, &mut b.ks[..n * n_ks]);
        for (i, &(slot, at)) in b.jobs[..n].iter().enumerate() {
            let buf = pkts[usize::from(slot)].buffer();
            let at = usize::from(at);
            buf[at + len - 4..at + len].copy_from_slice(&b.macs[i][..4]);
            for c in 0..n_ks {
                let m = if c + 1 == n_ks {
                    t.ks_last_mask
                } else {
                    u128::MAX
                };
                let p = at + from + 16 * c;
                let k = u128::from_le_bytes(b.ks[i * n_ks + c]);
                store(buf, p, load(buf, p) ^ (k & m));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_by_name_only() {
        assert_eq!(Mode::parse("off"), Some(Mode::Off));
        assert_eq!(Mode::parse("sealed"), Some(Mode::Sealed));
        assert_eq!(Mode::parse("unsealed"), Some(Mode::Unsealed));
        assert_eq!(Mode::parse("Sealed"), None);
        assert_eq!(Mode::parse(""), None);
        assert!(LowerBound::new(Mode::Off).is_none());
        assert!(LowerBound::new(Mode::Sealed).is_some_and(|b| b.seal));
        assert!(LowerBound::new(Mode::Unsealed).is_some_and(|b| !b.seal));
    }

    #[test]
    fn keep_masks_the_first_bytes_of_a_little_endian_load() {
        let ones = u128::from_le_bytes([0xff; 16]);
        for k in 0..=16 {
            let kept = (ones & keep(k)).to_le_bytes();
            assert!(kept[..k].iter().all(|&b| b == 0xff), "{k}");
            assert!(kept[k..].iter().all(|&b| b == 0), "{k}");
        }
        assert_eq!(keep(20), u128::MAX);
    }
}
