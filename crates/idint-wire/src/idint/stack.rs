//! The ID-INT options inside a hop-by-hop header: locating them, walking the telemetry stack,
//! and appending entries inside the pre-allocated space (packets never grow).
//!
//! Layout inside the HBH header: the main option at an offset ≡ 2 (mod 4), then `StackLen * 4`
//! bytes of stack: entries (the source entry first, newest last, TOS pointing at the newest)
//! followed by Pad1/PadN up to the end of the stack. Other HBH options may follow the stack.

use core::ops::Range;

use super::entry::{Entry, EntryRepr};
use super::main_option::MainOption;
use crate::error::{Error, Layer, Result};
use crate::ext::{self, ExtHeader, opt_type};

/// Most entries a stack can hold (every entry is at least [`super::entry::MIN_LEN`] bytes and
/// the stack lies inside a hop-by-hop header of at most [`ext::MAX_LEN`] bytes).
pub const MAX_ENTRIES: usize = ext::MAX_LEN / super::entry::MIN_LEN;

/// What [`IdInt::push`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushOutcome {
    /// The entry was written at this offset of the HBH header and TOS points at it.
    Pushed {
        /// Offset of the entry from the start of the HBH header.
        offset: usize,
    },
    /// It did not fit: X was set and nothing else changed.
    StackFull,
}

/// The ID-INT options of a hop-by-hop header. The buffer is the whole HBH header (NextHdr and
/// ExtLen included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdInt<T: AsRef<[u8]>> {
    buffer: T,
    main: usize,
    /// Stack byte range, filled by `check_top` (StackLen and the main option length cannot be
    /// changed through this view).
    stack: (usize, usize),
    /// End of the TOS entry (= start of the free space), kept by this view's writers.
    free: usize,
}

/// What a router needs to know about the newest entry, read without parsing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Top {
    /// Offset of the entry in the HBH header.
    pub offset: usize,
    /// Its flags byte (S I E A C).
    pub flags: u8,
    /// Its MAC as on the wire.
    pub mac: [u8; super::entry::MAC_LEN],
}

impl<T: AsRef<[u8]>> IdInt<T> {
    /// Finds the ID-INT main option in the HBH header `buffer` and checks the whole ID-INT
    /// structure. `Ok(None)` if the header carries no ID-INT.
    #[inline(always)]
    pub fn locate(buffer: T) -> Result<Option<Self>> {
        let hbh = ExtHeader::new_checked(buffer.as_ref(), Layer::HopByHop)?;
        let mut main = None;
        for o in hbh.options() {
            let o = o?;
            if o.opt_type == opt_type::IDINT_MAIN {
                main = Some(o.offset);
                break;
            }
        }
        let Some(main) = main else { return Ok(None) };
        let mut s = IdInt {
            buffer,
            main,
            stack: (0, 0),
            free: 0,
        };
        s.check_top()?;
        Ok(Some(s))
    }

    /// Wraps an HBH header whose main option is at `main`, with the checks of
    /// [`Self::locate`].
    #[inline(always)]
    pub fn new_checked(buffer: T, main: usize) -> Result<Self> {
        let mut s = IdInt {
            buffer,
            main,
            stack: (0, 0),
            free: 0,
        };
        s.check_top()?;
        Ok(s)
    }

    /// The checks [`Self::locate`] runs, in O(1) entries: alignment, the main option, the
    /// stack inside the HBH header, the entry TOS points at (a source entry iff TOS is 0), and
    /// only padding between that entry and the end of the stack. This is what a router needs
    /// to read the top entry and append safely; the entries below TOS are checked by
    /// [`Self::check`] (verifiers run it: a forged TOS cannot survive the MAC chain).
    #[inline(always)]
    pub fn check_top(&mut self) -> Result<()> {
        let b = self.buffer.as_ref();
        ExtHeader::new_checked(b, Layer::HopByHop)?;
        let hbh_len = self.hbh_len();
        if self.main % 4 != 2 || self.main >= hbh_len {
            return Err(Error::invalid(Layer::IdIntMain, "alignment"));
        }
        let main = MainOption::new_checked(&b[self.main..hbh_len])?;
        let start = self.main + main.total_len();
        let stack = start..start + main.stack_len();
        if stack.end > hbh_len {
            return Err(Error::truncated(Layer::IdIntStack, stack.end, hbh_len));
        }
        let tos = usize::from(main.tos_words()) * 4;
        let free_from = if b.get(stack.start) == Some(&opt_type::IDINT_ENTRY) {
            if stack.start + tos >= stack.end {
                return Err(Error::invalid(Layer::IdIntMain, "TOS"));
            }
            let e = Entry::new_checked(&b[stack.start + tos..stack.end])?;
            if e.is_source() != (tos == 0) {
                return Err(Error::invalid(Layer::IdIntEntry, "S"));
            }
            stack.start + tos + e.total_len()
        } else {
            if tos != 0 {
                return Err(Error::invalid(Layer::IdIntMain, "TOS"));
            }
            stack.start
        };
        for o in ext::Options::new(&b[free_from..stack.end], free_from) {
            if !o?.is_padding() {
                return Err(Error::invalid(Layer::IdIntStack, "option inside stack"));
            }
        }
        self.stack = (stack.start, stack.end);
        self.free = free_from;
        Ok(())
    }

    fn hbh_len(&self) -> usize {
        ExtHeader::new_unchecked(self.buffer.as_ref(), Layer::HopByHop).header_len()
    }

    /// Checks the whole stack: valid entries (the source entry first and only first) followed
    /// only by padding up to its end, and TOS pointing at the newest entry.
    pub fn check(&self) -> Result<()> {
        self.check_entries(&mut [0; MAX_ENTRIES]).map(|_| ())
    }

    /// [`Self::check`], also writing the offset of every entry (oldest first) to `offsets`;
    /// returns the number of entries. A stack with more entries than `offsets` holds is
    /// refused as malformed.
    pub fn check_entries(&self, offsets: &mut [u16]) -> Result<usize> {
        let b = self.buffer.as_ref();
        let main = self.main();
        let stack = self.stack_range();
        let mut n = 0;
        let mut pos = stack.start;
        while pos < stack.end && b[pos] == opt_type::IDINT_ENTRY {
            let e = Entry::new_checked(&b[pos..stack.end])?;
            if e.is_source() != (pos == stack.start) {
                return Err(Error::invalid(Layer::IdIntEntry, "S"));
            }
            let slot = offsets
                .get_mut(n)
                .ok_or(Error::invalid(Layer::IdIntStack, "too many entries"))?;
            *slot = u16::try_from(pos).map_err(|_| Error::invalid(Layer::IdIntStack, "offset"))?;
            n += 1;
            pos += e.total_len();
        }
        for o in ext::Options::new(&b[pos..stack.end], pos) {
            if !o?.is_padding() {
                return Err(Error::invalid(Layer::IdIntStack, "option inside stack"));
            }
        }
        let tos = usize::from(main.tos_words()) * 4;
        let last = n
            .checked_sub(1)
            .map_or(0, |i| usize::from(offsets[i]) - stack.start);
        if tos != last {
            return Err(Error::invalid(Layer::IdIntMain, "TOS"));
        }
        Ok(n)
    }

    /// The entry at `offset` without re-checking it: `offset` must come from
    /// [`Self::check_entries`] on this view (otherwise reading it may panic).
    #[cfg(feature = "crypto")]
    pub(crate) fn entry_at_unchecked(&self, offset: usize) -> Entry<&[u8]> {
        let end = self.stack_range().end;
        Entry::new_unchecked(&self.buffer.as_ref()[offset..end])
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Offset of the main option in the HBH header.
    pub fn main_offset(&self) -> usize {
        self.main
    }

    /// The main option.
    pub fn main(&self) -> MainOption<&[u8]> {
        let b = self.buffer.as_ref();
        MainOption::new_unchecked(&b[self.main..])
    }

    /// Byte range of the stack in the HBH header.
    pub fn stack_range(&self) -> Range<usize> {
        self.stack.0..self.stack.1
    }

    /// The stack bytes (entries and padding).
    pub fn stack_bytes(&self) -> &[u8] {
        &self.buffer.as_ref()[self.stack_range()]
    }

    /// Iterates over the entries, oldest (source entry) first, with their offsets in the HBH
    /// header.
    pub fn entries(&self) -> Entries<'_> {
        let r = self.stack_range();
        Entries {
            buffer: self.buffer.as_ref(),
            pos: r.start,
            end: r.end,
        }
    }

    /// Bytes used by entries (up to the end of the TOS entry).
    pub fn used_len(&self) -> usize {
        self.free - self.stack.0
    }

    /// The newest entry's offset, flags and MAC, read in O(1) without parsing it (the view
    /// checked it when it was built and keeps track of what its writers change).
    #[inline]
    pub fn top(&self) -> Option<Top> {
        let b = self.buffer.as_ref();
        let free = self.free;
        if free == self.stack.0 {
            return None;
        }
        let offset = self.stack.0 + usize::from(self.main().tos_words()) * 4;
        let mut mac = [0u8; super::entry::MAC_LEN];
        mac.copy_from_slice(&b[free - super::entry::MAC_LEN..free]);
        Some(Top {
            offset,
            flags: b[offset + 2],
            mac,
        })
    }

    /// Free bytes left in the stack.
    pub fn free_len(&self) -> usize {
        self.main().stack_len() - self.used_len()
    }

    /// The newest entry (the one TOS points at) and its offset, if there is any entry. O(1):
    /// TOS was checked against the stack when this view was built.
    #[inline]
    pub fn tos_entry(&self) -> Option<(usize, Entry<&[u8]>)> {
        let stack = self.stack_range();
        let b = self.buffer.as_ref();
        if b.get(stack.start) != Some(&opt_type::IDINT_ENTRY) {
            return None;
        }
        let at = stack.start + usize::from(self.main().tos_words()) * 4;
        Entry::new_checked(&b[at..stack.end]).ok().map(|e| (at, e))
    }

    /// The entry at `offset` (as returned by [`Self::entries`]).
    pub fn entry_at(&self, offset: usize) -> Result<Entry<&[u8]>> {
        let end = self.stack_range().end;
        let b = self.buffer.as_ref();
        if offset >= end {
            return Err(Error::invalid(Layer::IdIntEntry, "offset"));
        }
        Entry::new_checked(&b[offset..end])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IdInt<T> {
    /// The main option, writable.
    pub fn main_mut(&mut self) -> MainOption<&mut [u8]> {
        let m = self.main;
        MainOption::new_unchecked(&mut self.buffer.as_mut()[m..])
    }

    /// The whole HBH header, writable: the stack verifier decrypts entries in place through
    /// it after [`Self::check_entries`].
    #[cfg(feature = "crypto")]
    pub(crate) fn buffer_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// The entry at `offset`, writable, without re-checking it (see
    /// [`Self::entry_at_unchecked`]).
    #[cfg(feature = "crypto")]
    pub(crate) fn entry_at_mut_unchecked(&mut self, offset: usize) -> Entry<&mut [u8]> {
        let end = self.stack_range().end;
        Entry::new_unchecked(&mut self.buffer.as_mut()[offset..end])
    }

    /// The entry at `offset`, writable.
    pub fn entry_at_mut(&mut self, offset: usize) -> Result<Entry<&mut [u8]>> {
        self.entry_at(offset)?;
        let end = self.stack_range().end;
        Ok(Entry::new_unchecked(&mut self.buffer.as_mut()[offset..end]))
    }

    /// Appends `entry` where the padding starts, re-writes the padding after it and points TOS
    /// at it. If it does not fit, sets X and writes nothing else. The first entry of a stack
    /// must be the source entry and no later entry may be one, and the entry must pass
    /// [`EntryRepr::validate`]; otherwise nothing is written (X included) and the error says
    /// so.
    pub fn push(&mut self, entry: &EntryRepr) -> Result<PushOutcome> {
        entry.validate()?;
        let len = entry.buffer_len();
        if entry.source != (self.used_len() == 0) {
            return Err(Error::invalid(Layer::IdIntStack, "source entry position"));
        }
        // The entry is valid: from here on nothing fails after the first write.
        let outcome = self.reserve(len)?;
        if let PushOutcome::Pushed { offset } = outcome {
            entry.emit(&mut self.buffer.as_mut()[offset..offset + len])?;
        }
        Ok(outcome)
    }

    /// Makes room for a new entry of `len` bytes (a multiple of 4) where the padding starts:
    /// re-writes the padding headers after it (only the headers: the rest of the old padding
    /// stays as it was) and points TOS at it. The caller writes the entry into
    /// [`Self::bytes_mut`]`(offset, len)` next; until then the stack is not valid. If it does
    /// not fit, sets X and changes nothing else.
    pub fn reserve(&mut self, len: usize) -> Result<PushOutcome> {
        let stack = self.stack_range();
        let free = stack.start + self.used_len();
        if len < super::entry::MIN_LEN || !len.is_multiple_of(4) {
            return Err(Error::invalid(Layer::IdIntEntry, "length"));
        }
        let end = free + len;
        if end > stack.end {
            self.main_mut().set_stack_full(true);
            return Ok(PushOutcome::StackFull);
        }
        let tos = u8::try_from((free - stack.start) / 4)
            .map_err(|_| Error::invalid(Layer::IdIntMain, "TOS"))?;
        let b = self.buffer.as_mut();
        // The first old padding option that starts at or after the new entry's end: the
        // padding from there on is still valid.
        let mut pos = free;
        while pos < end {
            pos += match b[pos] {
                opt_type::PAD1 => 1,
                _ => 2 + usize::from(b[pos + 1]),
            };
        }
        ext::write_padding_headers(&mut b[end..pos.min(stack.end)]);
        self.free = end;
        self.main_mut().set_tos_words(tos);
        Ok(PushOutcome::Pushed { offset: free })
    }

    /// `len` bytes at `offset` of the HBH header, writable (for an entry made room for with
    /// [`Self::reserve`]). The range is clamped to the end of the stack: it is shorter than
    /// `len` if it would reach past the stack, and empty if `offset` is at or after its end.
    pub fn bytes_mut(&mut self, offset: usize, len: usize) -> &mut [u8] {
        let end = self.stack_range().end;
        let start = offset.min(end);
        &mut self.buffer.as_mut()[start..offset.saturating_add(len).min(end)]
    }
}

impl<T: AsRef<[u8]>> IdInt<T> {
    /// The on-wire MAC of the entry just below the one at `offset` (the value the entry at
    /// `offset` chains to), or `None` if `offset` is the source entry or not an entry start.
    pub fn mac_below(&self, offset: usize) -> Option<[u8; super::entry::MAC_LEN]> {
        let mut prev = None;
        for (at, e) in self.entries() {
            if at == offset {
                return prev;
            }
            if at > offset {
                return None;
            }
            prev = Some(e.mac());
        }
        None
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IdInt<T> {
    /// Replaces the newest (TOS) entry by `entry`, which may be longer or shorter, and
    /// re-writes the padding after it; TOS is unchanged. If the new entry does not fit in the
    /// stack, sets X and writes nothing else. Replacing the source entry, writing a source
    /// entry above it, or an entry that fails [`EntryRepr::validate`] is refused with an error
    /// and nothing is written.
    pub fn replace_tos(&mut self, entry: &EntryRepr) -> Result<PushOutcome> {
        entry.validate()?;
        let stack = self.stack_range();
        let Some((at, old)) = self.tos_entry() else {
            return Err(Error::invalid(Layer::IdIntStack, "no entry to replace"));
        };
        if old.is_source() || entry.source {
            return Err(Error::invalid(Layer::IdIntStack, "source entry position"));
        }
        let len = entry.buffer_len();
        if at + len > stack.end {
            self.main_mut().set_stack_full(true);
            return Ok(PushOutcome::StackFull);
        }
        let b = self.buffer.as_mut();
        entry.emit(&mut b[at..at + len])?;
        ext::write_padding(&mut b[at + len..stack.end]);
        self.free = at + len;
        Ok(PushOutcome::Pushed { offset: at })
    }

    /// Turns the ID-INT options (main option and the whole stack) into padding, leaving the
    /// rest of the hop-by-hop header and the packet length unchanged. The view is consumed:
    /// what remains is no longer ID-INT.
    pub fn strip(mut self) -> T {
        let start = self.main;
        let end = self.stack_range().end;
        ext::write_padding(&mut self.buffer.as_mut()[start..end]);
        self.buffer
    }
}

/// Iterator over the entries of a stack.
#[derive(Debug, Clone)]
pub struct Entries<'a> {
    buffer: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> Iterator for Entries<'a> {
    type Item = (usize, Entry<&'a [u8]>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.end || self.buffer[self.pos] != opt_type::IDINT_ENTRY {
            return None;
        }
        let e = Entry::new_checked(&self.buffer[self.pos..self.end]).ok()?;
        let at = self.pos;
        self.pos += e.total_len();
        Some((at, e))
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::idint::RequestBuilder;
    use crate::idint::entry::SlotValue;
    use std::vec;
    use std::vec::Vec;

    /// An HBH header with a request of `words` stack words (source entry only).
    fn request(words: u8) -> Vec<u8> {
        let mut r = RequestBuilder::new(1000);
        r.stack_len_words = words;
        let mut b = vec![0u8; r.hbh_len()];
        r.emit_hbh(&mut b, 17).unwrap();
        b
    }

    fn bad_entries() -> [(EntryRepr, Error); 3] {
        let mut three = EntryRepr::default();
        three.metadata.slots[0] = Some(SlotValue { len: 3, value: 1 });
        let mut ten = EntryRepr::default();
        ten.metadata.slots[2] = Some(SlotValue { len: 10, value: 1 });
        let ml = Error::invalid(Layer::IdIntEntry, "ML");
        [
            (
                EntryRepr {
                    hop: 64,
                    nonce: Some([0; 12]),
                    ..EntryRepr::default()
                },
                Error::invalid(Layer::IdIntEntry, "Hop"),
            ),
            (three, ml),
            (ten, ml),
        ]
    }

    #[test]
    fn push_of_an_invalid_entry_changes_nothing() {
        // 20 words: room to spare; 3 words: only the source entry fits (the push would set X).
        for words in [20, 3] {
            for (e, err) in bad_entries() {
                let mut b = request(words);
                let orig = b.clone();
                let mut s = IdInt::locate(&mut b[..]).unwrap().unwrap();
                let used = s.used_len();
                assert_eq!(s.push(&e), Err(err));
                assert_eq!(s.used_len(), used);
                assert_eq!(b, orig, "{words} words, {e:?}");
                IdInt::locate(&b[..]).unwrap().unwrap().check().unwrap();
            }
        }
    }

    #[test]
    fn replace_tos_with_an_invalid_entry_changes_nothing() {
        // 8 words: the 24-byte entry with Hop 64 would not fit either (the replace would set X).
        for words in [20, 8] {
            let mut b = request(words);
            let mut s = IdInt::locate(&mut b[..]).unwrap().unwrap();
            let first = EntryRepr {
                hop: 1,
                ..EntryRepr::default()
            };
            assert!(matches!(s.push(&first), Ok(PushOutcome::Pushed { .. })));
            let orig = b.clone();
            for (e, err) in bad_entries() {
                let mut s = IdInt::locate(&mut b[..]).unwrap().unwrap();
                assert_eq!(s.replace_tos(&e), Err(err));
                assert_eq!(b, orig, "{words} words, {e:?}");
                IdInt::locate(&b[..]).unwrap().unwrap().check().unwrap();
            }
        }
    }

    #[test]
    fn bytes_mut_clamps_to_the_stack() {
        let mut b = request(20);
        let mut s = IdInt::locate(&mut b[..]).unwrap().unwrap();
        let end = s.stack_range().end;
        assert_eq!(s.bytes_mut(end - 4, 4).len(), 4);
        assert_eq!(s.bytes_mut(end - 4, 8).len(), 4);
        assert!(s.bytes_mut(end, 4).is_empty());
        assert!(s.bytes_mut(1000, 4).is_empty());
        assert!(s.bytes_mut(usize::MAX, usize::MAX).is_empty());
        assert_eq!(s.bytes_mut(end - 1, usize::MAX).len(), 1);
    }
}
