//! Configured telemetry figures: what the router reports without measuring it.

/// Configured energy figures (instructions 0x08 power draw, 0x4a/0x4b energy and CO2 per
/// packet); absent values stay unmeasured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EnergyFigures {
    /// Power draw of the router, W.
    pub power_w: Option<u16>,
    /// Energy per forwarded packet, nJ.
    pub energy_per_packet_nj: Option<u32>,
    /// CO2 per forwarded packet, pg.
    pub co2_per_packet_pg: Option<u32>,
}
