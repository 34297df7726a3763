//! The data of a templated push: [`FlowPlan`], a flow's template (what a flow's first fast
//! push checked and decided, compared byte for byte by the flow's next packets, and the entry
//! it wrote) and [`VerifierAt`] (where the request's verifier sits). `fast` learns templates,
//! `planned` uses them, and the seal batch keeps the last few.

use idint_wire::AddrType;
use idint_wire::ext::opt_type;

use crate::header::ADDR_TYPES_AT;

use super::emit::EntryPlan;
use super::keys::{KeyHandle, VerifierId};
use super::roles::Role;
use super::sealing::JobShape;

/// Plans kept.
pub(super) const PLANS: usize = 4;

/// The padding left between `e_end` and `end`: its header bytes and how many there are.
pub(super) fn padding_tail(e_end: usize, end: usize) -> ([u8; 2], u8) {
    match end.saturating_sub(e_end) {
        0 => ([0; 2], 0),
        1 => ([opt_type::PAD1, 0], 1),
        r => ([opt_type::PADN, (r - 2) as u8], 2),
    }
}

/// A [`FlowPlan::burst`] no burst has.
pub(super) const NO_BURST: u64 = u64::MAX;

/// A flow's template: the checks and decisions of a fast push and the entry it wrote, kept
/// for the flow's next packets that carry the same request along the same route to the same
/// verifier (`FlowPlan::request`, `route`, `top`, `pad` and the verifier compared byte for
/// byte): they take the same decisions without walking the stack again and get the same
/// entry bytes. Only values, nonce and MAC differ per packet.
#[derive(Clone, Copy)]
pub(super) struct FlowPlan {
    /// HBH bytes 0-15 (extension header; main option type, length, flags, mode, verifier
    /// kind, StackLen, TOS, DelayHops, bitmap, aggregation functions, instructions).
    pub(super) request: u128,
    /// The roles, the hop index and the interfaces ([`route_key`](super::planned::route_key)).
    pub(super) route: u64,
    /// The top entry's first 6 bytes (type, length, flags, hop, mask and lengths), at `t`.
    pub(super) top: u64,
    /// Start of the stack (the source entry's type byte is checked there too).
    pub(super) s: u16,
    pub(super) t: u16,
    /// End of the top entry (where the new entry goes) and end of the stack.
    pub(super) free: u16,
    pub(super) end: u16,
    /// The header of the one padding option that covered `free..end`.
    pub(super) pad: [u8; 2],
    /// What is left of that padding option after the template's entry: its header bytes
    /// (`tail_len` of them: none, a Pad1, or a PadN header).
    pub(super) tail: [u8; 2],
    pub(super) tail_len: u8,
    /// The new TOS byte.
    pub(super) new_tos: u8,
    pub(super) encrypt: bool,
    pub(super) role: Role,
    pub(super) at: VerifierAt,
    pub(super) id: VerifierId,
    /// `id`'s bytes as [`VerifierAt::raw`] reads them.
    pub(super) raw: (u64, u128),
    /// `id`'s index in the verifier table of burst number `burst` (meaningless in any
    /// other burst: the table is refilled per burst).
    pub(super) id_ix: u8,
    pub(super) burst: u64,
    /// `id`'s key, found at `found_ns`: trusted only at that same time (a later packet may
    /// fall into another key epoch), and only while the store still holds it (its handle).
    pub(super) handle: KeyHandle,
    pub(super) found_ns: u64,
    /// The deferred job of the template's entry (its length, key and verifier index).
    pub(super) job: JobShape,
    /// The entry, with the per-burst values of its last refresh: those of burst number
    /// `values_burst` ([`NO_BURST`]: to be refreshed).
    pub(super) entry: EntryPlan,
    pub(super) values_burst: u64,
}

/// Where a request's verifier is: in the main option (`types: None`; offsets in the HBH
/// header) or the SCION address header (`types`: its address-type byte; offsets in it).
#[derive(Clone, Copy)]
pub(super) struct VerifierAt {
    pub(super) types: Option<u8>,
    pub(super) ia_at: u8,
    pub(super) host_at: u8,
    pub(super) v6: bool,
}

impl VerifierAt {
    /// The verifier of a packet whose verifier sits where this one's did (`None` if the
    /// address types differ or the bytes are not there).
    #[inline(always)]
    pub(super) fn read(&self, head: &[u8], hbh: &[u8]) -> Option<VerifierId> {
        let bytes = match self.types {
            Some(t) if head.get(ADDR_TYPES_AT) == Some(&t) => head,
            Some(_) => return None,
            None => hbh,
        };
        let (ia_at, host_at) = (usize::from(self.ia_at), usize::from(self.host_at));
        let (t, n) = if self.v6 {
            (AddrType::IPV6, 16)
        } else {
            (AddrType::IPV4, 4)
        };
        let ia = bytes.get(ia_at..ia_at + 8)?;
        let host = bytes.get(host_at..host_at + n)?;
        Some(VerifierId::new(
            u64::from_be_bytes(ia.try_into().ok()?),
            t,
            host,
        ))
    }

    /// Whether the packet's verifier bytes are `raw` (as [`Self::raw`] would read them),
    /// compared piece by piece with early exits.
    #[inline(always)]
    pub(super) fn holds(&self, head: &[u8], hbh: &[u8], raw: &(u64, u128)) -> bool {
        let bytes = match self.types {
            Some(t) if head.get(ADDR_TYPES_AT) == Some(&t) => head,
            Some(_) => return false,
            None => hbh,
        };
        let (ia_at, host_at) = (usize::from(self.ia_at), usize::from(self.host_at));
        let Some(ia) = bytes.get(ia_at..ia_at + 8) else {
            return false;
        };
        if u64::from_le_bytes(ia.try_into().unwrap_or([0; 8])) != raw.0 {
            return false;
        }
        if self.v6 {
            bytes
                .get(host_at..host_at + 16)
                .is_some_and(|h| u128::from_le_bytes(h.try_into().unwrap_or([0; 16])) == raw.1)
        } else {
            bytes.get(host_at..host_at + 4).is_some_and(|h| {
                u128::from(u32::from_le_bytes(h.try_into().unwrap_or([0; 4]))) == raw.1
            })
        }
    }

    /// The verifier bytes of a packet whose verifier sits where this one's did: its ISD-AS
    /// and host as little-endian integers, only ever compared with
    /// [`FlowPlan::raw`] (`None` if the address types differ or the bytes are not there).
    #[inline(always)]
    pub(super) fn raw(&self, head: &[u8], hbh: &[u8]) -> Option<(u64, u128)> {
        let bytes = match self.types {
            Some(t) if head.get(ADDR_TYPES_AT) == Some(&t) => head,
            Some(_) => return None,
            None => hbh,
        };
        let (ia_at, host_at) = (usize::from(self.ia_at), usize::from(self.host_at));
        let ia = u64::from_le_bytes(bytes.get(ia_at..ia_at + 8)?.try_into().ok()?);
        let host = if self.v6 {
            u128::from_le_bytes(bytes.get(host_at..host_at + 16)?.try_into().ok()?)
        } else {
            u128::from(u32::from_le_bytes(
                bytes.get(host_at..host_at + 4)?.try_into().ok()?,
            ))
        };
        Some((ia, host))
    }
}
