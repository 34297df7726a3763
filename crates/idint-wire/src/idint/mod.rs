//! ID-INT (inter-domain in-band network telemetry) in the SCION hop-by-hop extension: the main
//! option (type 253), telemetry stack entries (type 254), the instruction table, operations on
//! the pre-allocated stack, the host request builder and, with feature `crypto`, the MAC chain,
//! entry encryption and the verifier's side (verify, decrypt, decode, replay window).
//!
//! Wire-level decisions where the specification is open (`idint.md` §14):
//! * option types 253/254 and OptDataLen = option length minus 2, as in the reference code;
//! * the instruction table is the published specification's (§6.1);
//! * a stack entry's slot lengths come from its ML fields; a slot whose ML disagrees with the
//!   instruction's size is accepted by the parser (the reference test data does that) and
//!   reported by [`entry::Metadata::slot_len_mismatch`];
//! * the source MAC clears the mutable X flag, TOS and DelayHops (as the reference code);
//! * only IPv4/IPv6 third-party verifiers are accepted, VT/VL must be zero otherwise;
//! * the R flag must be zero (as scion-cpp).

pub mod entry;
pub mod instruction;
pub mod main_option;
pub mod request;
pub mod stack;

#[cfg(feature = "crypto")]
pub mod crypto;
#[cfg(feature = "crypto")]
pub mod verify;

pub use entry::{Entry, EntryRepr, Metadata};
pub use instruction::{INSTRUCTIONS, Instruction, InstructionInfo, Stage};
pub use main_option::{MainOption, MainOptionRepr};
pub use request::RequestBuilder;
pub use stack::{IdInt, PushOutcome, Top};

use crate::addr::{HostAddr, IsdAsn};

/// Aggregation mode (Mod).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AggregationMode {
    /// 0: every node pushes its own entry.
    Off,
    /// 1: at most one entry per AS.
    PerAs,
    /// 2: one entry from the ingress and one from the egress border router.
    PerBorderRouter,
    /// 3: as 2, plus one entry of an AS-internal router.
    PerBorderRouterAndInternal,
}

impl AggregationMode {
    /// From the 2-bit field.
    pub const fn from_bits(v: u8) -> Self {
        match v & 3 {
            0 => AggregationMode::Off,
            1 => AggregationMode::PerAs,
            2 => AggregationMode::PerBorderRouter,
            _ => AggregationMode::PerBorderRouterAndInternal,
        }
    }
    /// The 2-bit field.
    pub const fn bits(self) -> u8 {
        match self {
            AggregationMode::Off => 0,
            AggregationMode::PerAs => 1,
            AggregationMode::PerBorderRouter => 2,
            AggregationMode::PerBorderRouterAndInternal => 3,
        }
    }
}

/// Aggregation function of one instruction slot (AFn).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AggregationFunction {
    /// 0: keep the existing value.
    First,
    /// 1: overwrite with the newest value.
    Last,
    /// 2: minimum.
    Min,
    /// 3: maximum.
    Max,
    /// 4: sum (wrapping in the slot width).
    Sum,
    /// 5-7: unassigned. [`From<u8>`] only gives it for those codes; the main option's
    /// emitter refuses any other value (it would parse back as another variant).
    Unknown(u8),
}

impl AggregationFunction {
    /// The 3-bit AFn code, or `None` for an `Unknown` value outside 5-7.
    pub const fn code(self) -> Option<u8> {
        match self {
            AggregationFunction::First => Some(0),
            AggregationFunction::Last => Some(1),
            AggregationFunction::Min => Some(2),
            AggregationFunction::Max => Some(3),
            AggregationFunction::Sum => Some(4),
            AggregationFunction::Unknown(o @ 5..=7) => Some(o),
            AggregationFunction::Unknown(_) => None,
        }
    }
}

impl From<u8> for AggregationFunction {
    fn from(v: u8) -> Self {
        match v & 7 {
            0 => AggregationFunction::First,
            1 => AggregationFunction::Last,
            2 => AggregationFunction::Min,
            3 => AggregationFunction::Max,
            4 => AggregationFunction::Sum,
            o => AggregationFunction::Unknown(o),
        }
    }
}

/// The 3-bit code; an `Unknown` value outside 5-7 gives its low 3 bits (see
/// [`AggregationFunction::code`] for the checked conversion).
impl From<AggregationFunction> for u8 {
    fn from(v: AggregationFunction) -> u8 {
        match v {
            AggregationFunction::First => 0,
            AggregationFunction::Last => 1,
            AggregationFunction::Min => 2,
            AggregationFunction::Max => 3,
            AggregationFunction::Sum => 4,
            AggregationFunction::Unknown(o) => o & 7,
        }
    }
}

/// Who verifies (and decrypts) the telemetry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verifier {
    /// A third party named in the main option.
    ThirdParty {
        /// Verifier ISD-AS.
        ia: IsdAsn,
        /// Verifier host (IPv4 or IPv6).
        host: HostAddr,
    },
    /// The packet's destination.
    Destination,
    /// The packet's source.
    Source,
}

/// Bitmap metadata items in wire order: (mask bit, size in bytes).
pub const BITMAP_ITEMS: [(u8, usize); 4] = [(0x8, 4), (0x4, 2), (0x2, 2), (0x1, 2)];

/// Unpacks four 3-bit values from the low 12 bits of `w` (first value in bits 11..9).
pub(crate) const fn unpack_3bit4(w: u16) -> [u8; 4] {
    [
        ((w >> 9) & 7) as u8,
        ((w >> 6) & 7) as u8,
        ((w >> 3) & 7) as u8,
        (w & 7) as u8,
    ]
}

/// Packs four 3-bit values into the low 12 bits.
pub(crate) const fn pack_3bit4(v: [u8; 4]) -> u16 {
    ((v[0] as u16 & 7) << 9)
        | ((v[1] as u16 & 7) << 6)
        | ((v[2] as u16 & 7) << 3)
        | (v[3] as u16 & 7)
}
