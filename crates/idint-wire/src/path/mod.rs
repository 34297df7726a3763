//! SCION path types: Empty (0), SCION (1), OneHop (2) and EPIC-HP (3).

pub mod epic;
pub mod onehop;
pub mod scion;

pub use epic::{EpicPath, EpicPathRepr};
pub use onehop::{ONEHOP_LEN, OneHopPath};
pub use scion::{HopField, InfoField, PathMeta, ScionPath, ScionPathRepr};

use crate::error::{Error, Layer, Result};
use crate::scion::PathType;

/// An owned path of any supported type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathRepr {
    /// Empty path: no bytes.
    Empty,
    /// SCION path.
    Scion(ScionPathRepr),
    /// OneHop path.
    OneHop(OneHopPath),
    /// EPIC-HP path.
    Epic(EpicPathRepr),
}

impl PathRepr {
    /// Parses a path of type `path_type` from `b` (the bytes between the address header and
    /// `HdrLen * 4`). Surplus bytes after a SCION path are ignored as SCION does; COLIBRI and
    /// unknown types are [`Error::Unsupported`].
    pub fn parse(path_type: PathType, b: &[u8]) -> Result<Self> {
        match path_type {
            PathType::Empty => Ok(PathRepr::Empty),
            PathType::Scion => ScionPathRepr::parse(b).map(PathRepr::Scion),
            PathType::OneHop => OneHopPath::parse(b).map(PathRepr::OneHop),
            PathType::Epic => EpicPathRepr::parse(b).map(PathRepr::Epic),
            PathType::Colibri | PathType::Unknown(_) => Err(Error::Unsupported {
                layer: Layer::Path,
                field: "PathType",
            }),
        }
    }

    /// The path type.
    pub const fn path_type(&self) -> PathType {
        match self {
            PathRepr::Empty => PathType::Empty,
            PathRepr::Scion(_) => PathType::Scion,
            PathRepr::OneHop(_) => PathType::OneHop,
            PathRepr::Epic(_) => PathType::Epic,
        }
    }

    /// Bytes needed to emit.
    pub const fn buffer_len(&self) -> usize {
        match self {
            PathRepr::Empty => 0,
            PathRepr::Scion(p) => p.buffer_len(),
            PathRepr::OneHop(p) => p.buffer_len(),
            PathRepr::Epic(p) => p.buffer_len(),
        }
    }

    /// Writes the path to the start of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        match self {
            PathRepr::Empty => Ok(()),
            PathRepr::Scion(p) => p.emit(b),
            PathRepr::OneHop(p) => p.emit(b),
            PathRepr::Epic(p) => p.emit(b),
        }
    }
}
