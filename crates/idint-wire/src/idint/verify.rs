//! The verifier's side: check and decrypt a received telemetry stack, decode every entry, and
//! refuse replays.
//!
//! ```text
//! let mut idint = IdInt::locate(&mut hbh[..])?.unwrap();
//! window.check(main.source_timestamp(), main.source_port(), now_ns)?;   // replay / freshness
//! let n = verify_stack(&mut idint, &source_key, |i, e| keys.for_hop(e.hop()))?;  // MACs, in place
//! for entry in decode_entries(&idint) { let entry = entry?; ... }      // plaintext metadata
//! ```
//!
//! [`open`] runs the three steps in that order.

use core::fmt;

use super::crypto::{VerifyError, verify_stack};
use super::entry::Entry;
use super::main_option::MainOption;
use super::stack::IdInt;
use super::{Instruction, Metadata};
use crate::crypto::Aes128Enc;

/// One verified, decrypted entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodedEntry {
    /// Position in stack order (0 = source entry).
    pub index: usize,
    /// Source entry (S).
    pub source: bool,
    /// Written by the AS-ingress router (I).
    pub ingress: bool,
    /// Written or closed by the AS-egress router (E).
    pub egress: bool,
    /// Aggregated from several routers (A).
    pub aggregated: bool,
    /// Was encrypted on the wire (C).
    pub encrypted: bool,
    /// Hop-field index the entry relates to.
    pub hop: u8,
    /// The metadata (node id, count, interfaces, slots 1-4 in the main option's order).
    pub metadata: Metadata,
}

/// Why a stack's contents cannot be used although its MACs are right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The main option requests an instruction this implementation does not know (slot
    /// 0-3), so its values cannot be interpreted.
    UnknownInstruction {
        /// Slot index.
        slot: usize,
        /// Instruction code.
        code: u8,
    },
    /// Entry `index` stores slot `slot` with a length other than its instruction's.
    SlotLength {
        /// Entry index.
        index: usize,
        /// Slot index.
        slot: usize,
    },
    /// Entry `index` could not be read.
    Malformed {
        /// Entry index.
        index: usize,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::UnknownInstruction { slot, code } => {
                write!(
                    f,
                    "unknown ID-INT instruction {code:#04x} in slot {}",
                    slot + 1
                )
            }
            DecodeError::SlotLength { index, slot } => write!(
                f,
                "ID-INT entry {index}: slot {} length differs from its instruction",
                slot + 1
            ),
            DecodeError::Malformed { index } => write!(f, "ID-INT entry {index} is malformed"),
        }
    }
}

impl core::error::Error for DecodeError {}

/// Checks that every instruction of the main option is known.
pub fn check_instructions<T: AsRef<[u8]>>(main: &MainOption<T>) -> Result<(), DecodeError> {
    for (slot, ins) in main.instructions().iter().enumerate() {
        if *ins != Instruction::NOP && (ins.reserved_bit() || ins.info().is_none()) {
            return Err(DecodeError::UnknownInstruction { slot, code: ins.0 });
        }
    }
    Ok(())
}

/// Decodes the entries of a stack that [`verify_stack`] has verified and decrypted.
pub fn decode_entries<T: AsRef<[u8]>>(
    idint: &IdInt<T>,
) -> impl Iterator<Item = Result<DecodedEntry, DecodeError>> + '_ {
    let instructions = idint.main().instructions();
    idint
        .entries()
        .enumerate()
        .map(move |(index, (_, e))| decode_entry(index, &e, &instructions))
}

/// Decodes one verified, decrypted entry (`index` in stack order) under the main option's
/// `instructions`, as [`decode_entries`] does for each entry; for use with
/// [`super::crypto::verify_stack_with`], which hands over each entry once it is verified.
/// Inlined, so that the caller's copy of the result (into a vector, say) is written in place
/// instead of read back with wide loads right after the narrow stores that built it.
#[inline]
pub fn decode_entry(
    index: usize,
    e: &Entry<&[u8]>,
    instructions: &[Instruction; 4],
) -> Result<DecodedEntry, DecodeError> {
    let metadata = e.metadata().map_err(|_| DecodeError::Malformed { index })?;
    if let Some(slot) = metadata.slot_len_mismatch(instructions) {
        return Err(DecodeError::SlotLength { index, slot });
    }
    Ok(DecodedEntry {
        index,
        source: e.is_source(),
        ingress: e.ingress(),
        egress: e.egress(),
        aggregated: e.aggregated(),
        encrypted: e.encrypted(),
        hop: e.hop(),
        metadata,
    })
}

/// Why a received stack was refused by [`open`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenError {
    /// The (timestamp, port) pair is stale, from the future or already seen.
    Replay(ReplayError),
    /// A MAC or the stack structure is wrong.
    Verify(VerifyError),
    /// The contents cannot be interpreted.
    Decode(DecodeError),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Replay(e) => e.fmt(f),
            OpenError::Verify(e) => e.fmt(f),
            OpenError::Decode(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for OpenError {}

/// Checks freshness and replay, verifies and decrypts the stack in place, and checks that
/// its instructions are known. Returns the number of entries (source entry included); read
/// them with [`decode_entries`]. The replay window records the pair only when the MACs are
/// right, so forged packets cannot fill it.
pub fn open<'k, T, F, const N: usize>(
    idint: &mut IdInt<T>,
    window: &mut ReplayWindow<N>,
    now_ns: u64,
    source_key: &Aes128Enc,
    key_for: F,
) -> Result<usize, OpenError>
where
    T: AsRef<[u8]> + AsMut<[u8]>,
    F: FnMut(usize, &Entry<&[u8]>) -> Option<&'k Aes128Enc>,
{
    let (ts, port) = {
        let m = idint.main();
        (m.source_timestamp(), m.source_port())
    };
    let full = window.fresh(ts, now_ns).map_err(OpenError::Replay)?;
    if window.seen(full, port) {
        return Err(OpenError::Replay(ReplayError::Replayed));
    }
    let n = verify_stack(idint, source_key, key_for).map_err(OpenError::Verify)?;
    check_instructions(&idint.main()).map_err(OpenError::Decode)?;
    window
        .record(full, port, now_ns)
        .map_err(OpenError::Replay)?;
    Ok(n)
}

/// Why a (timestamp, port) pair was refused.
///
/// The source timestamp is Unix time in ns modulo 2^48 ([`TIMESTAMP_CYCLE_NS`], ~3.26 days),
/// so a receiver reads every timestamp two ways: `age` ns in the past or `cycle - age` ns in
/// the future (and either by any number of whole cycles more). A timestamp within the window
/// behind or the skew ahead is fresh. Any other one is refused, and which of the two errors it
/// gets is decided by the *nearer* reading: [`ReplayError::Stale`] if the past reading is
/// nearer, [`ReplayError::Future`] otherwise. The verifier cannot tell the two apart: a
/// timestamp more than half a cycle (~1.63 days) old reads as `Future`, and one written about
/// a whole cycle ago can even read as fresh (the MACs then fail, since DRKey epochs are
/// shorter than the cycle). Both errors carry both readings ([`ReplayError::readings`]) and
/// say so when displayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayError {
    /// Not fresh, and the past reading is the nearer one: older than the window.
    Stale {
        /// Age in ns by the nearer reading (modulo [`TIMESTAMP_CYCLE_NS`]).
        age_ns: u64,
    },
    /// Not fresh, and the future reading is the nearer one: further ahead than the allowed
    /// clock skew (or, read the other way, older than half a cycle).
    Future {
        /// How far ahead, ns, by the nearer reading (modulo [`TIMESTAMP_CYCLE_NS`]).
        ahead_ns: u64,
    },
    /// Already seen within the window.
    Replayed,
    /// The window holds its maximum of fresh pairs; refusing is the safe answer.
    Full,
}

impl ReplayError {
    /// For a refused timestamp, its two readings `(age_ns, ahead_ns)` modulo the cycle (they
    /// add up to [`TIMESTAMP_CYCLE_NS`]); `None` for [`ReplayError::Replayed`] and
    /// [`ReplayError::Full`].
    pub fn readings(&self) -> Option<(u64, u64)> {
        match *self {
            ReplayError::Stale { age_ns } => Some((age_ns, WRAP - age_ns)),
            ReplayError::Future { ahead_ns } => Some((WRAP - ahead_ns, ahead_ns)),
            ReplayError::Replayed | ReplayError::Full => None,
        }
    }
}

/// A duration for people: seconds with millisecond precision (`no_std`, no float).
struct Secs(u64);

impl fmt::Display for Secs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NS_PER_S: u64 = 1_000_000_000;
        const NS_PER_MS: u64 = 1_000_000;
        let ms = (self.0 % NS_PER_S) / NS_PER_MS;
        write!(f, "{}.{ms:03} s", self.0 / NS_PER_S)
    }
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Stale { age_ns } => write!(
                f,
                "ID-INT source timestamp is stale: it reads as {} old, beyond the window \
                 (or {} ahead: 48-bit timestamps repeat every {})",
                Secs(*age_ns),
                Secs(WRAP - age_ns),
                Secs(WRAP)
            ),
            ReplayError::Future { ahead_ns } => write!(
                f,
                "ID-INT source timestamp is in the future: it reads as {} ahead, beyond the \
                 allowed skew (or {} old: 48-bit timestamps repeat every {})",
                Secs(*ahead_ns),
                Secs(WRAP - ahead_ns),
                Secs(WRAP)
            ),
            ReplayError::Replayed => f.write_str("ID-INT (timestamp, port) replayed"),
            ReplayError::Full => f.write_str("ID-INT replay window full"),
        }
    }
}

impl core::error::Error for ReplayError {}

/// The period of the 48-bit source timestamp: 2^48 ns, about 3.26 days.
pub const TIMESTAMP_CYCLE_NS: u64 = 1 << 48;

const WRAP: u64 = TIMESTAMP_CYCLE_NS;

/// Marks a used slot of [`ReplayWindow`] (above the 16 port bits).
const OCCUPIED: u32 = 1 << 16;

/// Freshness and replay suppression for the 48-bit source timestamp (`idint.md` §11): the
/// full time is reconstructed from the receiver's clock, pairs older than `window_ns` or more
/// than `skew_ns` ahead are refused, and up to `N` fresh pairs are remembered. No allocation:
/// an open-addressing table of `N` slots (a power of two) whose expired slots are reused.
#[derive(Debug, Clone)]
pub struct ReplayWindow<const N: usize> {
    window_ns: u64,
    skew_ns: u64,
    /// (full timestamp, port | [`OCCUPIED`]); (0, 0) is an empty slot. The mark is a bit of
    /// its own: every timestamp, 0 included, can be recorded.
    slots: [(u64, u32); N],
}

impl<const N: usize> ReplayWindow<N> {
    /// A window accepting timestamps at most `window_ns` old and `skew_ns` ahead
    /// (the specification suggests 60 s).
    pub const fn new(window_ns: u64, skew_ns: u64) -> Self {
        assert!(N.is_power_of_two(), "N must be a power of two");
        ReplayWindow {
            window_ns,
            skew_ns,
            slots: [(0, 0); N],
        }
    }

    /// The full Unix time (ns) of a 48-bit timestamp received at `now_ns`, if it is fresh.
    ///
    /// Of the two candidates `back` ns before and `ahead` ns after `now_ns`, only times from
    /// 0 to `u64::MAX` count: a timestamp that could only lie before the Unix epoch is in the
    /// future, and one that could only lie after `u64::MAX` ns is refused as
    /// [`ReplayError::Future`] (no panic at either end of the clock).
    pub fn fresh(&self, ts48: u64, now_ns: u64) -> Result<u64, ReplayError> {
        let now48 = now_ns % WRAP;
        let back = (now48.wrapping_sub(ts48 % WRAP)) % WRAP;
        let ahead = WRAP - back;
        let past = now_ns.checked_sub(back);
        if back != 0
            && ahead <= self.skew_ns
            && let Some(t) = now_ns.checked_add(ahead)
        {
            return Ok(t);
        }
        match past {
            Some(t) if back <= self.window_ns => Ok(t),
            Some(_) if ahead >= WRAP / 2 => Err(ReplayError::Stale { age_ns: back }),
            _ => Err(ReplayError::Future { ahead_ns: ahead }),
        }
    }

    fn home(full: u64, port: u16) -> usize {
        let h = (full ^ (u64::from(port) << 48)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> 32) as usize & (N - 1)
    }

    /// Whether the pair has been recorded.
    pub fn seen(&self, full: u64, port: u16) -> bool {
        let home = Self::home(full, port);
        let want = (full, u32::from(port) | OCCUPIED);
        (0..N).any(|i| self.slots[(home + i) & (N - 1)] == want)
    }

    /// Records a pair (after its packet verified). Fails if the pair was already recorded or
    /// every slot holds a fresh pair.
    pub fn record(&mut self, full: u64, port: u16, now_ns: u64) -> Result<(), ReplayError> {
        if self.seen(full, port) {
            return Err(ReplayError::Replayed);
        }
        let oldest_ok = now_ns.saturating_sub(self.window_ns);
        let home = Self::home(full, port);
        for i in 0..N {
            let s = &mut self.slots[(home + i) & (N - 1)];
            if s.1 & OCCUPIED == 0 || s.0 < oldest_ok {
                *s = (full, u32::from(port) | OCCUPIED);
                return Ok(());
            }
        }
        Err(ReplayError::Full)
    }

    /// [`Self::fresh`], [`Self::seen`] and [`Self::record`] in one step, for callers that
    /// check replay after verifying the MACs themselves.
    pub fn check(&mut self, ts48: u64, port: u16, now_ns: u64) -> Result<u64, ReplayError> {
        let full = self.fresh(ts48, now_ns)?;
        self.record(full, port, now_ns)?;
        Ok(full)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::format;
    use std::string::ToString;

    const S: u64 = 1_000_000_000;

    #[test]
    fn freshness_across_the_48_bit_wrap() {
        let w = ReplayWindow::<8>::new(60 * S, S);
        let now = 1_763_800_000 * S;
        let ts = |t: u64| t % WRAP;
        assert_eq!(w.fresh(ts(now - 5 * S), now), Ok(now - 5 * S));
        assert_eq!(w.fresh(ts(now), now), Ok(now));
        assert_eq!(w.fresh(ts(now + S / 2), now), Ok(now + S / 2));
        assert_eq!(
            w.fresh(ts(now - 61 * S), now),
            Err(ReplayError::Stale { age_ns: 61 * S })
        );
        assert_eq!(
            w.fresh(ts(now + 10 * S), now),
            Err(ReplayError::Future { ahead_ns: 10 * S })
        );
        // Just after a wrap of the 48-bit counter.
        let now = 5 * WRAP + 3 * S;
        assert_eq!(w.fresh(ts(now - 4 * S), now), Ok(now - 4 * S));
    }

    /// The classification at many points of the 48-bit cycle: the verifier's clock is set
    /// explicitly to each, never read from the system.
    #[test]
    fn freshness_at_every_point_of_the_cycle() {
        const WINDOW: u64 = 60 * S;
        const SKEW: u64 = S;
        const YEAR: u64 = 365 * 86_400 * S;
        let w = ReplayWindow::<8>::new(WINDOW, SKEW);
        let base = 1_763_800_000 * S / WRAP * WRAP; // a cycle start in 2025
        let mut points = [0u64; 20];
        for (k, p) in points.iter_mut().enumerate().take(16) {
            *p = base + k as u64 * (WRAP / 16) + 12_345;
        }
        points[16..].copy_from_slice(&[base, base + 1, base + WRAP - 1, base + WRAP / 2]);
        for now in points {
            let ts = |sent: u64| sent % WRAP;
            let r = |sent| w.fresh(ts(sent), now);
            // Fresh at both edges, with the full time reconstructed.
            assert_eq!(r(now - WINDOW), Ok(now - WINDOW), "now {now}");
            assert_eq!(r(now + SKEW), Ok(now + SKEW), "now {now}");
            assert_eq!(r(now), Ok(now), "now {now}");
            // Just outside: the nearer reading decides.
            let stale = ReplayError::Stale { age_ns: WINDOW + 1 };
            assert_eq!(r(now - WINDOW - 1), Err(stale), "now {now}");
            let future = ReplayError::Future { ahead_ns: SKEW + 1 };
            assert_eq!(r(now + SKEW + 1), Err(future), "now {now}");
            // Around half a cycle old the verdict flips from stale to future.
            let half = WRAP / 2;
            assert_eq!(
                r(now - (half - 1)),
                Err(ReplayError::Stale { age_ns: half - 1 })
            );
            assert_eq!(r(now - half), Err(ReplayError::Stale { age_ns: half }));
            assert_eq!(
                r(now - (half + 1)),
                Err(ReplayError::Future { ahead_ns: half - 1 })
            );
            // A year old: whatever the cycle says, never fresh, and both readings are given.
            let e = r(now - YEAR).unwrap_err();
            let (age, ahead) = e.readings().unwrap();
            assert_eq!((age, age + ahead), (YEAR % WRAP, WRAP), "now {now}");
            let expected = if age <= half {
                ReplayError::Stale { age_ns: age }
            } else {
                ReplayError::Future { ahead_ns: ahead }
            };
            assert_eq!(e, expected, "now {now}");
            // Exactly one cycle old is indistinguishable from now (the MACs must refuse it).
            assert_eq!(r(now - WRAP), Ok(now), "now {now}");
        }
    }

    #[test]
    fn refusals_say_both_readings() {
        let text = ReplayError::Stale { age_ns: 7_200 * S }.to_string();
        assert!(text.contains("7200.000 s old"), "{text}");
        assert!(
            text.contains(&format!("{} ahead", Secs(WRAP - 7_200 * S))),
            "{text}"
        );
        let text = ReplayError::Future {
            ahead_ns: 1_500_000,
        }
        .to_string();
        assert!(text.contains("0.001 s ahead"), "{text}");
        assert!(text.contains("repeat every 281474.976 s"), "{text}");
    }

    #[test]
    fn freshness_at_both_ends_of_the_clock() {
        let w = ReplayWindow::<8>::new(60 * S, S);
        // 6 ns "ago" would be before the Unix epoch: the only candidate is ~2^48 ns ahead.
        assert_eq!(
            w.fresh(WRAP - 1, 5),
            Err(ReplayError::Future { ahead_ns: WRAP - 6 })
        );
        assert_eq!(w.fresh(5, 5), Ok(5));
        assert_eq!(w.fresh(2, 5), Ok(2));
        // Within the skew: fine unless it lies after u64::MAX ns.
        assert_eq!(w.fresh(3, 1), Ok(3));
        assert_eq!(
            w.fresh(0, u64::MAX),
            Err(ReplayError::Future { ahead_ns: 1 })
        );
        assert_eq!(w.fresh(u64::MAX % WRAP, u64::MAX), Ok(u64::MAX));
        assert_eq!(w.fresh((u64::MAX - 7) % WRAP, u64::MAX), Ok(u64::MAX - 7));
        // A window wider than the clock so far.
        let wide = ReplayWindow::<8>::new(u64::MAX, 0);
        assert_eq!(
            wide.fresh(WRAP - 1, 5),
            Err(ReplayError::Future { ahead_ns: WRAP - 6 })
        );
        assert_eq!(wide.fresh(0, 5), Ok(0));
    }

    #[test]
    fn time_zero_and_port_zero_are_ordinary_pairs() {
        // A receiver whose clock is still near the Unix epoch (no real-time clock yet).
        let now = 30 * S;
        let mut w = ReplayWindow::<8>::new(60 * S, S);
        assert_eq!(w.check(0, 0, now), Ok(0), "a fresh pair, not an empty slot");
        assert_eq!(w.check(0, 0, now), Err(ReplayError::Replayed));
        assert_eq!(w.check(0, 5, now), Ok(0));
        assert_eq!(w.check(0, 5, now), Err(ReplayError::Replayed));
        assert!(!w.seen(1, 5), "time 0 is not stored as 1");
    }

    #[test]
    fn replays_are_refused_and_expired_slots_reused() {
        let mut w = ReplayWindow::<4>::new(60 * S, S);
        let now = 1_763_800_000 * S;
        for p in 0..4u16 {
            w.check((now - S) % WRAP, p, now).unwrap();
        }
        assert_eq!(
            w.check((now - S) % WRAP, 2, now),
            Err(ReplayError::Replayed)
        );
        assert_eq!(w.check((now - S) % WRAP, 9, now), Err(ReplayError::Full));
        // A minute later the old pairs expired: their slots are free again.
        let later = now + 61 * S;
        w.check((later - S) % WRAP, 9, later).unwrap();
        assert_eq!(
            w.check((now - S) % WRAP, 2, later),
            Err(ReplayError::Stale { age_ns: 62 * S })
        );
    }
}
