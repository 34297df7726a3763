//! Why a received packet was not verified: one code per reason, counted by `serve` and carried
//! in replies.

use core::fmt;

use idint_wire::idint::crypto::VerifyError;
use idint_wire::idint::verify::{OpenError, ReplayError};

/// Why a packet's telemetry was not verified (or the packet not handled at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    /// The SCION packet does not parse.
    Parse,
    /// Not SCION/UDP.
    NotUdp,
    /// Addressed to another host or AS.
    NotForUs,
    /// The UDP payload is no ping.
    BadPayload,
    /// A path type the host cannot answer on (only empty and standard SCION paths).
    Path,
    /// No ID-INT request in the packet.
    NoIdInt,
    /// Source timestamp older than the window.
    Stale,
    /// Source timestamp further ahead than the allowed skew.
    Future,
    /// (Timestamp, port) seen before.
    Replayed,
    /// The replay window is full.
    ReplayFull,
    /// The telemetry stack is malformed.
    Malformed,
    /// The stack has no source entry.
    NoSourceEntry,
    /// No key for an entry (its hop field's AS is unknown).
    MissingKey,
    /// A MAC is wrong.
    BadMac,
    /// The contents cannot be interpreted (unknown instruction, slot length).
    Decode,
    /// A DRKey key could not be derived.
    Key,
}

impl Reason {
    /// Every reason, in code order.
    pub const ALL: [Reason; 16] = [
        Reason::Parse,
        Reason::NotUdp,
        Reason::NotForUs,
        Reason::BadPayload,
        Reason::Path,
        Reason::NoIdInt,
        Reason::Stale,
        Reason::Future,
        Reason::Replayed,
        Reason::ReplayFull,
        Reason::Malformed,
        Reason::NoSourceEntry,
        Reason::MissingKey,
        Reason::BadMac,
        Reason::Decode,
        Reason::Key,
    ];

    /// The wire code (1..=16; 0 means verified in a reply).
    pub fn code(self) -> u8 {
        Reason::ALL
            .iter()
            .position(|r| *r == self)
            .map_or(0, |i| i as u8 + 1)
    }

    /// The reason of a wire code.
    pub fn from_code(c: u8) -> Option<Self> {
        Reason::ALL.get(usize::from(c).checked_sub(1)?).copied()
    }

    /// Short snake_case name (stats keys, JSON).
    pub fn name(self) -> &'static str {
        match self {
            Reason::Parse => "parse",
            Reason::NotUdp => "not_udp",
            Reason::NotForUs => "not_for_us",
            Reason::BadPayload => "bad_payload",
            Reason::Path => "path",
            Reason::NoIdInt => "no_idint",
            Reason::Stale => "stale",
            Reason::Future => "future",
            Reason::Replayed => "replayed",
            Reason::ReplayFull => "replay_full",
            Reason::Malformed => "malformed",
            Reason::NoSourceEntry => "no_source_entry",
            Reason::MissingKey => "missing_key",
            Reason::BadMac => "bad_mac",
            Reason::Decode => "decode",
            Reason::Key => "key",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<ReplayError> for Reason {
    fn from(e: ReplayError) -> Self {
        match e {
            ReplayError::Stale { .. } => Reason::Stale,
            ReplayError::Future { .. } => Reason::Future,
            ReplayError::Replayed => Reason::Replayed,
            ReplayError::Full => Reason::ReplayFull,
        }
    }
}

impl From<OpenError> for Reason {
    fn from(e: OpenError) -> Self {
        match e {
            OpenError::Replay(r) => r.into(),
            OpenError::Verify(VerifyError::Malformed(_)) => Reason::Malformed,
            OpenError::Verify(VerifyError::NoSourceEntry) => Reason::NoSourceEntry,
            OpenError::Verify(VerifyError::MissingKey { .. }) => Reason::MissingKey,
            OpenError::Verify(VerifyError::BadMac { .. }) => Reason::BadMac,
            OpenError::Decode(_) => Reason::Decode,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for r in Reason::ALL {
            assert_eq!(Reason::from_code(r.code()), Some(r));
            assert_ne!(r.code(), 0);
        }
        assert_eq!(Reason::from_code(0), None);
        assert_eq!(Reason::from_code(17), None);
    }
}
