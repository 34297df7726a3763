//! Paths with real hop-field MACs, built from the ASes' master secrets: what a network
//! generator writes to the paths file, for tests (one segment, travelled in construction
//! direction, as a core path is).

use std::net::SocketAddr;

use idint_wire::IsdAsn;
use idint_wire::path::{HopField, InfoField, PathMeta, ScionPathRepr};

use crate::keys::{HostKeys, KeyError};
use crate::paths::{PathEntry, PathHop};

/// The SegID the segments start with (any value works).
pub const SEG_ID: u16 = 0x1d17;
/// The largest hop-field expiry (about 24 h after the info timestamp).
pub const MAX_EXP_TIME: u8 = 255;
/// The path MTU written into fixtures.
pub const MTU: u16 = 1472;
/// Seconds a hop field with expiry `e` lives: (1 + e) * 24 h / 256.
const EXPIRY_UNIT_S: u64 = 337;

/// A one-segment path over `hops` (travel order = construction order), its hop fields
/// MACed with each AS's forwarding key, info timestamp `timestamp` (Unix s). Fails if an
/// AS's secret is missing or there are no (or too many) hops.
pub fn segment_path(
    keys: &mut HostKeys,
    name: &str,
    hops: &[PathHop],
    first_hop: SocketAddr,
    timestamp: u32,
) -> Result<PathEntry, KeyError> {
    let (Some(first), Some(last)) = (hops.first(), hops.last()) else {
        return Err(KeyError::Derive("a path needs hops".into()));
    };
    if hops.len() > crate::paths::MAX_HOPS - 1 {
        return Err(KeyError::Derive("too many hops for one segment".into()));
    }
    let mut repr = ScionPathRepr {
        meta: PathMeta {
            seg_len: [hops.len() as u8, 0, 0],
            ..PathMeta::default()
        },
        infos: [InfoField::default(); 3],
        hops: [HopField::default(); 64],
    };
    repr.infos[0] = InfoField {
        peer: false,
        cons_dir: true,
        seg_id: SEG_ID,
        timestamp,
    };
    let mut beta = SEG_ID;
    for (j, h) in hops.iter().enumerate() {
        let mut hf = HopField {
            exp_time: MAX_EXP_TIME,
            cons_ingress: h.ingress,
            cons_egress: h.egress,
            ..HopField::default()
        };
        let full = keys.hop_mac(h.ia, &hf.mac_input(beta, timestamp))?;
        hf.mac.copy_from_slice(&full[..6]);
        beta ^= u16::from_be_bytes([full[0], full[1]]);
        repr.hops[j] = hf;
    }
    let mut raw = vec![0u8; repr.buffer_len()];
    repr.emit(&mut raw)
        .map_err(|e| KeyError::Derive(e.to_string()))?;
    Ok(PathEntry {
        name: name.into(),
        src: first.ia,
        dst: last.ia,
        raw,
        first_hop: Some(first_hop),
        mtu: MTU,
        expires_unix: u64::from(timestamp) + (1 + u64::from(MAX_EXP_TIME)) * EXPIRY_UNIT_S,
        hops: hops.to_vec(),
    })
}

/// The empty (intra-AS) path of `ia`.
pub fn empty_path(name: &str, ia: IsdAsn) -> PathEntry {
    PathEntry {
        name: name.into(),
        src: ia,
        dst: ia,
        raw: Vec::new(),
        first_hop: None,
        mtu: MTU,
        expires_unix: u64::from(u32::MAX),
        hops: Vec::new(),
    }
}
