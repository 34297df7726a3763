//! Verdicts: a report's rejection with its reason, and the errors of each phase mapped to one.

use super::*;

impl Reject {
    /// Whether the report waits for keys being fetched rather than being rejected (it is
    /// rejected with `reason` if they never come).
    pub fn is_waiting_for_keys(&self) -> bool {
        self.waiting_for_keys
    }
}

pub(super) fn reject(reason: RejectReason, detail: impl Into<String>) -> Reject {
    Reject {
        reason,
        detail: detail.into(),
        waiting_for_keys: false,
    }
}

/// A report that must wait for keys being fetched, rejected with `reason` if they never come.
pub(super) fn wait_for_keys(reason: RejectReason, detail: String) -> Reject {
    Reject {
        waiting_for_keys: true,
        ..reject(reason, detail)
    }
}

/// A key error as the report's verdict: waiting if the key is being fetched.
pub(super) fn key_reject(reason: RejectReason, e: KeyError, detail: String) -> Reject {
    match e {
        KeyError::Pending(_) => wait_for_keys(reason, format!("{detail}: fetch did not complete")),
        _ => reject(reason, detail),
    }
}

pub(super) fn record_reject(e: RecordError) -> Reject {
    match e {
        RecordError::Replay(e) => replay_reject(e),
        RecordError::SourceQuota => reject(
            RejectReason::SourceQuota,
            "the source holds its whole share of the replay memory",
        ),
    }
}

pub(super) fn replay_reject(e: ReplayError) -> Reject {
    let reason = match e {
        ReplayError::Stale { .. } => RejectReason::Stale,
        ReplayError::Future { .. } => RejectReason::Future,
        ReplayError::Replayed => RejectReason::Replayed,
        ReplayError::Full => RejectReason::ReplayFull,
    };
    reject(reason, e.to_string())
}

pub(super) fn verify_reject(e: VerifyError) -> Reject {
    let reason = match e {
        VerifyError::Malformed(_) => RejectReason::MalformedStack,
        VerifyError::NoSourceEntry => RejectReason::NoSourceEntry,
        VerifyError::MissingKey { .. } => RejectReason::HopOutsidePath,
        VerifyError::BadMac { index: 0 } => RejectReason::BadSourceMac,
        VerifyError::BadMac { .. } => RejectReason::BadMac,
    };
    reject(reason, e.to_string())
}

pub(super) fn decode_reject(e: DecodeError) -> Reject {
    let reason = match e {
        DecodeError::UnknownInstruction { .. } => RejectReason::UnknownInstruction,
        _ => RejectReason::MalformedEntry,
    };
    reject(reason, e.to_string())
}
