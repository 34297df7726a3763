//! The ID-INT instruction table (`idint.md` §6.1, the published specification's table) as one
//! data table, and the instruction byte encoding `llriiiii` (data length 2/4/6/8 bytes from the
//! top two bits; 0x00 = NOP with no data).

/// Where along the router pipeline an instruction's value is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// At the ingress border router / ingress interface.
    Ingress,
    /// At the egress border router / egress interface.
    Egress,
}

/// One row of the instruction table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstructionInfo {
    /// Instruction code.
    pub code: u8,
    /// Data length in bytes.
    pub size: u8,
    /// Measured at ingress or egress.
    pub stage: Stage,
    /// Short name.
    pub name: &'static str,
    /// Unit or encoding of the value.
    pub unit: &'static str,
}

const fn row(code: u8, stage: Stage, name: &'static str, unit: &'static str) -> InstructionInfo {
    InstructionInfo {
        code,
        size: Instruction(code).data_len() as u8,
        stage,
        name,
        unit,
    }
}

use Stage::{Egress as E, Ingress as I};

/// Every instruction of the specification's table, NOP excluded.
pub const INSTRUCTIONS: &[InstructionInfo] = &[
    row(0x01, I, "ISD", "ISD number"),
    row(0x02, I, "BR link type", "ingress and egress link type"),
    row(0x03, I, "device type/role", "MSB role, LSB type"),
    row(
        0x04,
        I,
        "CPU/memory usage",
        "byte0 CPU/255, byte1 memory/255",
    ),
    row(0x05, I, "CPU temperature", "K"),
    row(0x06, I, "ASIC temperature", "K"),
    row(0x07, I, "fan speed", "RPM"),
    row(0x08, I, "total power draw", "W"),
    row(
        0x09,
        I,
        "energy mix",
        "byte0 renewable/255, byte1 nuclear/255",
    ),
    row(0x41, I, "device vendor", "Ethernet OUI"),
    row(0x42, I, "device model", "vendor-assigned"),
    row(0x43, I, "software version", "major(10) minor(10) patch(12)"),
    row(0x44, I, "node IPv4 address", "IPv4"),
    row(0x45, I, "ingress IF speed", "Mbit/s"),
    row(0x46, I, "egress IF speed", "Mbit/s"),
    row(0x47, I, "GPS latitude", "degrees, f32"),
    row(0x48, I, "GPS longitude", "degrees, f32"),
    row(0x49, I, "uptime", "s"),
    row(0x4a, E, "forwarding energy", "nJ"),
    row(0x4b, E, "CO2 per packet", "pg"),
    row(0x4c, I, "ingress link RX utilisation", "kbit/s"),
    row(0x4d, E, "egress link TX utilisation", "kbit/s"),
    row(0x4e, E, "queue ID", "id"),
    row(0x4f, E, "instantaneous queue length", "packets"),
    row(0x50, E, "average queue length", "packets"),
    row(0x51, E, "buffer ID", "id"),
    row(0x52, E, "instantaneous buffer occupancy", "packets"),
    row(0x53, E, "average buffer occupancy", "packets"),
    row(0x81, I, "ASN", "AS number"),
    row(0x82, I, "ingress timestamp", "ns"),
    row(0x83, E, "egress timestamp", "ns"),
    row(0x84, I, "ingress SCION-IF packet count", "packets"),
    row(0x85, E, "egress SCION-IF packet count", "packets"),
    row(0x86, I, "ingress SCION-IF drop count", "packets"),
    row(0x87, E, "egress SCION-IF drop count", "packets"),
    row(0x88, I, "ingress SCION-IF byte count", "bytes"),
    row(0x89, E, "egress SCION-IF byte count", "bytes"),
    row(0x8a, I, "ingress total packet count", "packets"),
    row(0x8b, E, "egress total packet count", "packets"),
    row(0x8c, I, "ingress total drop count", "packets"),
    row(0x8d, E, "egress total drop count", "packets"),
    row(0x8e, I, "ingress total byte count", "bytes"),
    row(0x8f, E, "egress total byte count", "bytes"),
    row(0xc1, I, "node IPv6 address (high)", "IPv6 bytes 0-7"),
    row(0xc2, I, "node IPv6 address (low)", "IPv6 bytes 8-15"),
];

/// An instruction code as carried in Inst1..Inst4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Instruction(pub u8);

impl Instruction {
    /// No operation (no data).
    pub const NOP: Instruction = Instruction(0);

    /// Data length in bytes: 0 for NOP, otherwise 2, 4, 6 or 8 from the top two bits.
    pub const fn data_len(self) -> usize {
        if self.0 == 0 {
            0
        } else {
            2 * ((self.0 >> 6) as usize + 1)
        }
    }

    /// The table row, if the code is assigned.
    pub fn info(self) -> Option<&'static InstructionInfo> {
        INSTRUCTIONS.iter().find(|r| r.code == self.0)
    }

    /// Whether the reserved bit (0x20) is set, which makes the code invalid.
    pub const fn reserved_bit(self) -> bool {
        self.0 & 0x20 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_consistent() {
        for (i, r) in INSTRUCTIONS.iter().enumerate() {
            assert_eq!(usize::from(r.size), Instruction(r.code).data_len());
            assert!(!Instruction(r.code).reserved_bit());
            assert!(
                INSTRUCTIONS[i + 1..].iter().all(|o| o.code != r.code),
                "duplicate {:#x}",
                r.code
            );
        }
        assert_eq!(Instruction(0x82).info().unwrap().stage, Stage::Ingress);
        assert_eq!(Instruction(0x83).info().unwrap().size, 6);
        assert_eq!(Instruction(0xc1).data_len(), 8);
        assert_eq!(Instruction(0x03).data_len(), 2);
        assert_eq!(Instruction::NOP.data_len(), 0);
        assert!(Instruction(0x3f).info().is_none());
    }
}
