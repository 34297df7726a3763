//! The ID-INT main option (HBH option type 253), offsets from the option type byte:
//!
//! ```text
//!  0 OptType=253  1 OptDataLen (20, 32 or 44)
//!  2 Ver(3) I D E X R      3 Mod(2) Vrf(2) VT(2) VL(2)
//!  4 StackLen (words)      5 TOS (words)   6 DelayHops(6) Res(2)   7 Res
//!  8 InstF(4) AF1..AF4(3 each, to byte 9)  10..13 Inst1..Inst4
//! 14 Source timestamp (48 bits)            20 Source port
//! 22 Verifier ISD-AS (8) + host (4 or 16), only with Vrf = 0 (third party)
//! ```

use super::{AggregationFunction, AggregationMode, Verifier, pack_3bit4, unpack_3bit4};
use crate::addr::{AddrType, HostAddr, IsdAsn};
use crate::bytes::{read_u16, read_u48, read_u64, write_u16, write_u48, write_u64};
use crate::error::{Error, Layer, Result, need};
use crate::ext::opt_type;
use crate::idint::instruction::Instruction;

/// Main option length without a verifier address.
pub const BASE_LEN: usize = 22;

/// Flag bits of byte 2.
pub mod flags {
    /// Infrastructure mode.
    pub const I: u8 = 0x10;
    /// Discard at the sink.
    pub const D: u8 = 0x08;
    /// Encrypt telemetry.
    pub const E: u8 = 0x04;
    /// Stack space exhausted (set by routers).
    pub const X: u8 = 0x02;
    /// Reserved.
    pub const R: u8 = 0x01;
}

/// View of the main option, starting at its type byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MainOption<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> MainOption<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> Self {
        MainOption { buffer }
    }

    /// Wraps `buffer` and runs [`Self::check_len`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self> {
        let m = Self::new_unchecked(buffer);
        m.check_len()?;
        Ok(m)
    }

    /// Checks type, version, reserved bits, the verifier fields and that OptDataLen matches
    /// them and fits the buffer.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need(Layer::IdIntMain, b, BASE_LEN)?;
        if b[0] != opt_type::IDINT_MAIN {
            return Err(Error::invalid(Layer::IdIntMain, "OptType"));
        }
        if self.version() != 0 {
            return Err(Error::Unsupported {
                layer: Layer::IdIntMain,
                field: "Ver",
            });
        }
        if b[2] & flags::R != 0 {
            return Err(Error::invalid(Layer::IdIntMain, "R"));
        }
        let want = match self.verifier_code() {
            0 => match self.verifier_addr_type() {
                AddrType::IPV4 | AddrType::IPV6 => {
                    BASE_LEN + 8 + self.verifier_addr_type().addr_len()
                }
                _ => {
                    return Err(Error::Unsupported {
                        layer: Layer::IdIntMain,
                        field: "VT/VL",
                    });
                }
            },
            1 | 2 => {
                if b[3] & 0x0f != 0 {
                    return Err(Error::invalid(Layer::IdIntMain, "VT/VL"));
                }
                BASE_LEN
            }
            _ => return Err(Error::invalid(Layer::IdIntMain, "Vrf")),
        };
        if self.total_len() != want {
            return Err(Error::invalid(Layer::IdIntMain, "OptDataLen"));
        }
        need(Layer::IdIntMain, b, want)
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Option length including type and length bytes.
    pub fn total_len(&self) -> usize {
        usize::from(self.b()[1]) + 2
    }
    /// The option bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.b()[..self.total_len()]
    }
    /// Version (must be 0).
    pub fn version(&self) -> u8 {
        self.b()[2] >> 5
    }
    /// Raw flags byte (Ver, I, D, E, X, R).
    pub fn flags(&self) -> u8 {
        self.b()[2]
    }
    /// I: infrastructure mode.
    pub fn infrastructure(&self) -> bool {
        self.b()[2] & flags::I != 0
    }
    /// D: discard at the sink.
    pub fn discard(&self) -> bool {
        self.b()[2] & flags::D != 0
    }
    /// E: encryption requested.
    pub fn encrypt(&self) -> bool {
        self.b()[2] & flags::E != 0
    }
    /// X: the stack ran out of space.
    pub fn stack_full(&self) -> bool {
        self.b()[2] & flags::X != 0
    }
    /// Aggregation mode.
    pub fn mode(&self) -> AggregationMode {
        AggregationMode::from_bits(self.b()[3] >> 6)
    }
    /// Raw verifier code (0 third party, 1 destination, 2 source).
    pub fn verifier_code(&self) -> u8 {
        (self.b()[3] >> 4) & 3
    }
    /// Verifier host address type/length (only meaningful for a third-party verifier).
    pub fn verifier_addr_type(&self) -> AddrType {
        AddrType::from_nibble(self.b()[3] & 0xf)
    }
    /// The verifier.
    pub fn verifier(&self) -> Verifier {
        match self.verifier_code() {
            1 => Verifier::Destination,
            2 => Verifier::Source,
            _ => {
                let ia = IsdAsn::from_u64(read_u64(self.b(), 22));
                let host = HostAddr::parse(self.verifier_addr_type(), &self.b()[30..])
                    .unwrap_or(HostAddr::Svc(crate::addr::Svc::NONE));
                Verifier::ThirdParty { ia, host }
            }
        }
    }
    /// StackLen: pre-allocated stack space in 4-byte words.
    pub fn stack_len_words(&self) -> u8 {
        self.b()[4]
    }
    /// Stack space in bytes.
    pub fn stack_len(&self) -> usize {
        usize::from(self.stack_len_words()) * 4
    }
    /// TOS: offset of the newest entry from the stack start, in words.
    pub fn tos_words(&self) -> u8 {
        self.b()[5]
    }
    /// DelayHops (6 bits).
    pub fn delay_hops(&self) -> u8 {
        self.b()[6] >> 2
    }
    /// Instruction bitmap (InstF, 4 bits).
    pub fn inst_bitmap(&self) -> u8 {
        self.b()[8] >> 4
    }
    /// Aggregation functions AF1..AF4.
    pub fn aggregation_functions(&self) -> [AggregationFunction; 4] {
        unpack_3bit4(read_u16(self.b(), 8)).map(AggregationFunction::from)
    }
    /// Instructions Inst1..Inst4.
    pub fn instructions(&self) -> [Instruction; 4] {
        let b = self.b();
        [
            Instruction(b[10]),
            Instruction(b[11]),
            Instruction(b[12]),
            Instruction(b[13]),
        ]
    }
    /// Source timestamp (48 bits, ns).
    pub fn source_timestamp(&self) -> u64 {
        read_u48(self.b(), 14)
    }
    /// Source port.
    pub fn source_port(&self) -> u16 {
        read_u16(self.b(), 20)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> MainOption<T> {
    /// Sets or clears X.
    pub fn set_stack_full(&mut self, v: bool) {
        let b = self.buffer.as_mut();
        b[2] = if v { b[2] | flags::X } else { b[2] & !flags::X };
    }
    /// Sets TOS (words).
    pub fn set_tos_words(&mut self, v: u8) {
        self.buffer.as_mut()[5] = v;
    }
    /// Sets DelayHops (low 6 bits of `v`), keeping the reserved bits.
    pub fn set_delay_hops(&mut self, v: u8) {
        let b = self.buffer.as_mut();
        b[6] = (v << 2) | (b[6] & 3);
    }
}

/// Owned main option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MainOptionRepr {
    /// I: infrastructure mode.
    pub infrastructure: bool,
    /// D: discard at the sink.
    pub discard: bool,
    /// E: encrypt telemetry.
    pub encrypt: bool,
    /// X: stack space exhausted.
    pub stack_full: bool,
    /// Aggregation mode.
    pub mode: AggregationMode,
    /// Who verifies the telemetry.
    pub verifier: Verifier,
    /// StackLen in words.
    pub stack_len_words: u8,
    /// TOS in words.
    pub tos_words: u8,
    /// DelayHops (0..=63).
    pub delay_hops: u8,
    /// InstF bitmap (4 bits: 0x8 node ID, 0x4 node count, 0x2 ingress IF, 0x1 egress IF).
    pub inst_bitmap: u8,
    /// AF1..AF4.
    pub aggregation: [AggregationFunction; 4],
    /// Inst1..Inst4.
    pub instructions: [Instruction; 4],
    /// Source timestamp (48 bits, ns).
    pub source_timestamp: u64,
    /// Source port.
    pub source_port: u16,
}

impl MainOptionRepr {
    /// Reads a checked option.
    pub fn parse<T: AsRef<[u8]>>(m: &MainOption<T>) -> Result<Self> {
        m.check_len()?;
        Ok(MainOptionRepr {
            infrastructure: m.infrastructure(),
            discard: m.discard(),
            encrypt: m.encrypt(),
            stack_full: m.stack_full(),
            mode: m.mode(),
            verifier: m.verifier(),
            stack_len_words: m.stack_len_words(),
            tos_words: m.tos_words(),
            delay_hops: m.delay_hops(),
            inst_bitmap: m.inst_bitmap(),
            aggregation: m.aggregation_functions(),
            instructions: m.instructions(),
            source_timestamp: m.source_timestamp(),
            source_port: m.source_port(),
        })
    }

    /// Option length (type and length bytes included): 22, 34 or 46.
    pub fn buffer_len(&self) -> usize {
        match self.verifier {
            Verifier::ThirdParty { host, .. } => BASE_LEN + 8 + host.len(),
            _ => BASE_LEN,
        }
    }

    /// Checks the fields [`Self::emit`] cannot encode: DelayHops above 63, InstF above 0xf,
    /// an aggregation function without a code ([`AggregationFunction::code`]), a source
    /// timestamp of 2^48 ns or more, and a third-party verifier host that is not IPv4/IPv6.
    pub fn validate(&self) -> Result<()> {
        self.verifier_bits().map(|_| ())
    }

    /// (Vrf, VT/VL) after the checks of [`Self::validate`].
    fn verifier_bits(&self) -> Result<(u8, u8)> {
        if self.delay_hops > 63 {
            return Err(Error::invalid(Layer::IdIntMain, "DelayHops"));
        }
        if self.inst_bitmap > 0xf {
            return Err(Error::invalid(Layer::IdIntMain, "InstF"));
        }
        if self.aggregation.iter().any(|a| a.code().is_none()) {
            return Err(Error::invalid(Layer::IdIntMain, "AF"));
        }
        if self.source_timestamp >> 48 != 0 {
            return Err(Error::invalid(Layer::IdIntMain, "source timestamp"));
        }
        Ok(match self.verifier {
            Verifier::ThirdParty { host, .. } => match host.addr_type() {
                t @ (AddrType::IPV4 | AddrType::IPV6) => (0u8, t.nibble()),
                _ => {
                    return Err(Error::Unsupported {
                        layer: Layer::IdIntMain,
                        field: "VT/VL",
                    });
                }
            },
            Verifier::Destination => (1, 0),
            Verifier::Source => (2, 0),
        })
    }

    /// Writes the option to the start of `b`. Fails, writing nothing, if [`Self::validate`]
    /// does or `b` is shorter than [`Self::buffer_len`].
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        let (vrf, vtype) = self.verifier_bits()?;
        let len = self.buffer_len();
        need(Layer::IdIntMain, b, len)?;
        b[0] = opt_type::IDINT_MAIN;
        b[1] = (len - 2) as u8;
        b[2] = (u8::from(self.infrastructure) * flags::I)
            | (u8::from(self.discard) * flags::D)
            | (u8::from(self.encrypt) * flags::E)
            | (u8::from(self.stack_full) * flags::X);
        b[3] = (self.mode.bits() << 6) | (vrf << 4) | vtype;
        b[4] = self.stack_len_words;
        b[5] = self.tos_words;
        b[6] = self.delay_hops << 2;
        b[7] = 0;
        write_u16(
            b,
            8,
            (u16::from(self.inst_bitmap) << 12) | pack_3bit4(self.aggregation.map(u8::from)),
        );
        for (i, inst) in self.instructions.iter().enumerate() {
            b[10 + i] = inst.0;
        }
        write_u48(b, 14, self.source_timestamp);
        write_u16(b, 20, self.source_port);
        if let Verifier::ThirdParty { ia, host } = self.verifier {
            write_u64(b, 22, ia.to_u64());
            host.emit(&mut b[30..])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idint::RequestBuilder;

    #[test]
    fn invalid_options_emit_nothing() {
        let good = RequestBuilder::new(1).main_option();
        let mut cases = [good; 5];
        cases[0].source_timestamp = 1 << 48;
        cases[1].aggregation[0] = AggregationFunction::Unknown(2);
        cases[2].aggregation[1] = AggregationFunction::Unknown(9);
        cases[3].aggregation[3] = AggregationFunction::Unknown(0);
        cases[4].delay_hops = 64;
        let fields = ["source timestamp", "AF", "AF", "AF", "DelayHops"];
        for (r, field) in cases.iter().zip(fields) {
            let mut b = [0xa5u8; BASE_LEN];
            assert_eq!(r.emit(&mut b), Err(Error::invalid(Layer::IdIntMain, field)));
            assert_eq!(r.validate(), Err(Error::invalid(Layer::IdIntMain, field)));
            assert_eq!(b, [0xa5; BASE_LEN], "{field}");
        }
    }

    #[test]
    fn aggregation_functions_round_trip() {
        let mut r = RequestBuilder::new(1).main_option();
        for k in 0..8u8 {
            let af = AggregationFunction::from(k);
            assert_eq!(af.code(), Some(k));
            r.aggregation = [
                af,
                AggregationFunction::Unknown(5),
                af,
                AggregationFunction::Sum,
            ];
            let mut b = [0u8; BASE_LEN];
            r.emit(&mut b).unwrap();
            let back = MainOptionRepr::parse(&MainOption::new_checked(&b[..]).unwrap()).unwrap();
            assert_eq!(back, r);
        }
    }
}
