//! Building an ID-INT request on a host: the HBH header with the main option, the source
//! entry and padding covering the rest of the pre-allocated stack.

use super::entry::EntryRepr;
use super::main_option::MainOptionRepr;
use super::{AggregationFunction, AggregationMode, Instruction, Metadata, Verifier};
use crate::error::{Error, Layer, Result};
use crate::ext::{self, MAX_LEN};

/// Parameters of a request. `stack_len_words` is the stack space to reserve (source entry
/// included), in 4-byte words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestBuilder {
    /// Infrastructure mode (I).
    pub infrastructure: bool,
    /// Discard at the sink (D).
    pub discard: bool,
    /// Ask routers to encrypt their entries (E).
    pub encrypt: bool,
    /// Aggregation mode.
    pub mode: AggregationMode,
    /// Verifier.
    pub verifier: Verifier,
    /// Number of AS hops (border routers in mode 0) to skip before recording.
    pub delay_hops: u8,
    /// InstF: bitmap items to record (0x8 node ID, 0x4 node count, 0x2/0x1 interfaces).
    pub inst_bitmap: u8,
    /// AF1..AF4.
    pub aggregation: [AggregationFunction; 4],
    /// Inst1..Inst4.
    pub instructions: [Instruction; 4],
    /// Stack space in words.
    pub stack_len_words: u8,
    /// Source timestamp (48 bits, ns; with `source_port` unique per key).
    pub source_timestamp: u64,
    /// Source port.
    pub source_port: u16,
    /// Telemetry the source itself records in its entry (usually none).
    pub source_metadata: Metadata,
}

impl RequestBuilder {
    /// A request verified by the destination, aggregation off, nothing requested yet, with a
    /// 64-word stack.
    pub fn new(source_timestamp: u64) -> Self {
        RequestBuilder {
            infrastructure: false,
            discard: false,
            encrypt: false,
            mode: AggregationMode::Off,
            verifier: Verifier::Destination,
            delay_hops: 0,
            inst_bitmap: 0,
            aggregation: [AggregationFunction::Last; 4],
            instructions: [Instruction::NOP; 4],
            stack_len_words: 64,
            source_timestamp,
            source_port: 0,
            source_metadata: Metadata::default(),
        }
    }

    /// The main option this request starts with.
    pub fn main_option(&self) -> MainOptionRepr {
        MainOptionRepr {
            infrastructure: self.infrastructure,
            discard: self.discard,
            encrypt: self.encrypt,
            stack_full: false,
            mode: self.mode,
            verifier: self.verifier,
            stack_len_words: self.stack_len_words,
            tos_words: 0,
            delay_hops: self.delay_hops,
            inst_bitmap: self.inst_bitmap,
            aggregation: self.aggregation,
            instructions: self.instructions,
            source_timestamp: self.source_timestamp,
            source_port: self.source_port,
        }
    }

    /// The source entry (S set, hop 0, MAC zero until signed).
    pub fn source_entry(&self) -> EntryRepr {
        EntryRepr {
            source: true,
            metadata: self.source_metadata,
            ..EntryRepr::default()
        }
    }

    /// Length of the HBH header [`Self::emit_hbh`] writes.
    pub fn hbh_len(&self) -> usize {
        2 + self.main_option().buffer_len() + usize::from(self.stack_len_words) * 4
    }

    /// Writes a complete HBH header (NextHdr = `next_header`) holding the request to the start
    /// of `buf`; returns its length. The source MAC is left zero (see `idint::crypto`). On
    /// error nothing is written.
    pub fn emit_hbh(&self, buf: &mut [u8], next_header: u8) -> Result<usize> {
        let main = self.main_option();
        main.validate()?;
        let main_len = main.buffer_len();
        let stack_len = usize::from(self.stack_len_words) * 4;
        let total = self.hbh_len();
        if total > MAX_LEN {
            return Err(Error::invalid(Layer::IdIntMain, "StackLen"));
        }
        let source = self.source_entry();
        source.validate()?;
        if source.buffer_len() > stack_len {
            return Err(Error::NoSpace {
                layer: Layer::IdIntStack,
                required: source.buffer_len(),
                available: stack_len,
            });
        }
        if buf.len() < total {
            return Err(Error::truncated(Layer::HopByHop, total, buf.len()));
        }
        // Both options are valid and fit: nothing below fails.
        buf[0] = next_header;
        buf[1] = (total / 4 - 1) as u8;
        main.emit(&mut buf[2..])?;
        let stack = 2 + main_len;
        source.emit(&mut buf[stack..])?;
        ext::write_padding(&mut buf[stack + source.buffer_len()..total]);
        Ok(total)
    }

    /// [`Self::emit_hbh`], then signs the source entry with `key` (the host-to-host DRKey of
    /// the source and the verifier; see `idint.md` §10).
    #[cfg(feature = "crypto")]
    pub fn emit_signed(
        &self,
        buf: &mut [u8],
        next_header: u8,
        key: &crate::crypto::Aes128Enc,
    ) -> Result<usize> {
        let n = self.emit_hbh(buf, next_header)?;
        let mut idint = super::IdInt::locate(&mut buf[..n])?
            .ok_or(Error::invalid(Layer::IdIntMain, "missing"))?;
        super::crypto::sign_source(&mut idint, key).map_err(|e| match e {
            super::crypto::VerifyError::Malformed(e) => e,
            _ => Error::invalid(Layer::IdIntEntry, "source entry"),
        })?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idint::entry::SlotValue;

    #[test]
    fn invalid_requests_write_nothing() {
        let mut late = RequestBuilder::new(1 << 48);
        late.stack_len_words = 8;
        let mut bad_slot = RequestBuilder::new(1);
        bad_slot.stack_len_words = 8;
        bad_slot.source_metadata.slots[0] = Some(SlotValue { len: 3, value: 1 });
        let mut bad_af = RequestBuilder::new(1);
        bad_af.stack_len_words = 8;
        bad_af.aggregation[2] = AggregationFunction::Unknown(1);
        for (r, err) in [
            (late, Error::invalid(Layer::IdIntMain, "source timestamp")),
            (bad_slot, Error::invalid(Layer::IdIntEntry, "ML")),
            (bad_af, Error::invalid(Layer::IdIntMain, "AF")),
        ] {
            let mut b = [0xa5u8; 64];
            assert_eq!(r.emit_hbh(&mut b, 17), Err(err));
            assert_eq!(b, [0xa5; 64], "{err}");
        }
    }
}
