//! The crate's error type: a small `Copy` value that says what is wrong and where.

use core::fmt;

/// The header (or part of a header) an [`Error`] refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Layer {
    /// SCION common header (first 12 bytes).
    Common,
    /// SCION address header (ISD-ASes and host addresses).
    Address,
    /// The path header as a whole (length bookkeeping, path type).
    Path,
    /// SCION path meta header.
    PathMeta,
    /// SCION path info field.
    InfoField,
    /// SCION path hop field.
    HopField,
    /// OneHop path.
    OneHop,
    /// EPIC-HP path.
    Epic,
    /// Hop-by-hop options extension header.
    HopByHop,
    /// End-to-end options extension header.
    EndToEnd,
    /// A TLV option inside an extension header.
    Option,
    /// SCION Packet Authenticator Option.
    Spao,
    /// ID-INT main option (HBH option 253).
    IdIntMain,
    /// ID-INT telemetry stack entry (HBH option 254).
    IdIntEntry,
    /// ID-INT telemetry stack (the pre-allocated space as a whole).
    IdIntStack,
    /// SCION/UDP header.
    Udp,
    /// SCMP message.
    Scmp,
    /// Layer-4 payload after the SCION headers.
    Payload,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Layer::Common => "SCION common header",
            Layer::Address => "SCION address header",
            Layer::Path => "path header",
            Layer::PathMeta => "path meta header",
            Layer::InfoField => "info field",
            Layer::HopField => "hop field",
            Layer::OneHop => "OneHop path",
            Layer::Epic => "EPIC-HP path",
            Layer::HopByHop => "hop-by-hop extension",
            Layer::EndToEnd => "end-to-end extension",
            Layer::Option => "extension option",
            Layer::Spao => "packet authenticator option",
            Layer::IdIntMain => "ID-INT main option",
            Layer::IdIntEntry => "ID-INT stack entry",
            Layer::IdIntStack => "ID-INT telemetry stack",
            Layer::Udp => "SCION/UDP header",
            Layer::Scmp => "SCMP message",
            Layer::Payload => "payload",
        };
        f.write_str(name)
    }
}

/// What went wrong while parsing or emitting a header.
///
/// Every variant names the [`Layer`]; the router maps these to drop reasons and SCMP
/// parameter-problem codes, so they must stay cheap (`Copy`, no allocation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Error {
    /// The buffer holds fewer bytes than the header needs.
    Truncated {
        /// Header being read or written.
        layer: Layer,
        /// Bytes needed.
        required: usize,
        /// Bytes available.
        actual: usize,
    },
    /// A field holds a value the specification does not allow (or that contradicts another
    /// field, such as a length that does not match the buffer).
    InvalidField {
        /// Header the field belongs to.
        layer: Layer,
        /// Field name as in the specification.
        field: &'static str,
    },
    /// A well-formed value this implementation does not support (for example the COLIBRI path
    /// type or a reserved address type where an address must be interpreted).
    Unsupported {
        /// Header the field belongs to.
        layer: Layer,
        /// Field name as in the specification.
        field: &'static str,
    },
    /// There is not enough room left, for example in a pre-allocated ID-INT stack.
    NoSpace {
        /// Structure that is full.
        layer: Layer,
        /// Bytes needed.
        required: usize,
        /// Bytes left.
        available: usize,
    },
}

impl Error {
    /// The layer the error refers to.
    pub const fn layer(&self) -> Layer {
        match *self {
            Error::Truncated { layer, .. }
            | Error::InvalidField { layer, .. }
            | Error::Unsupported { layer, .. }
            | Error::NoSpace { layer, .. } => layer,
        }
    }

    /// Shorthand for [`Error::Truncated`].
    pub const fn truncated(layer: Layer, required: usize, actual: usize) -> Self {
        Error::Truncated {
            layer,
            required,
            actual,
        }
    }

    /// Shorthand for [`Error::InvalidField`].
    pub const fn invalid(layer: Layer, field: &'static str) -> Self {
        Error::InvalidField { layer, field }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated {
                layer,
                required,
                actual,
            } => {
                write!(f, "{layer} truncated: need {required} bytes, have {actual}")
            }
            Error::InvalidField { layer, field } => write!(f, "{layer}: invalid {field}"),
            Error::Unsupported { layer, field } => write!(f, "{layer}: unsupported {field}"),
            Error::NoSpace {
                layer,
                required,
                available,
            } => {
                write!(f, "{layer} full: need {required} bytes, {available} left")
            }
        }
    }
}

impl core::error::Error for Error {}

/// Result type of this crate.
pub type Result<T> = core::result::Result<T, Error>;

/// Returns `Err(Truncated)` unless `buf` holds at least `required` bytes.
#[inline]
pub(crate) const fn need(layer: Layer, buf: &[u8], required: usize) -> Result<()> {
    if buf.len() < required {
        Err(Error::truncated(layer, required, buf.len()))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_layer_and_sizes() {
        extern crate std;
        use std::string::ToString;
        let e = Error::truncated(Layer::HopField, 12, 7);
        assert_eq!(e.to_string(), "hop field truncated: need 12 bytes, have 7");
        assert_eq!(e.layer(), Layer::HopField);
        let e = Error::invalid(Layer::PathMeta, "SegLen");
        assert_eq!(e.to_string(), "path meta header: invalid SegLen");
        assert!(need(Layer::Udp, &[0; 7], 8).is_err());
        assert!(need(Layer::Udp, &[0; 8], 8).is_ok());
    }
}
