//! Typed load errors: every one names the file, and where it applies the field and the reason.

use std::fmt;
use std::path::PathBuf;

use drkey::keyfile::KeyFileError;

/// What is wrong with one field of a topology file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldError {
    /// The field is required but absent (or `null`).
    Missing,
    /// The field has the wrong JSON type; the expected type is named.
    WrongType(&'static str),
    /// The value has the right type but is not acceptable; the reason is given.
    Invalid(String),
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldError::Missing => f.write_str("missing"),
            FieldError::WrongType(t) => write!(f, "expected {t}"),
            FieldError::Invalid(why) => f.write_str(why),
        }
    }
}

/// Why a topology or key file could not be turned into a router configuration.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// The file could not be read.
    #[error("{}: cannot read: {source}", file.display())]
    Io {
        /// The file.
        file: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{}: not valid JSON: {reason}", file.display())]
    Json {
        /// The file.
        file: PathBuf,
        /// The parser's message (with line and column).
        reason: String,
    },
    /// A field is missing, has the wrong type or an unacceptable value.
    #[error("{}: field `{field}`: {reason}", file.display())]
    Field {
        /// The file.
        file: PathBuf,
        /// Dotted path of the field, e.g. `border_routers.br1a.interfaces.2.link_to`.
        field: String,
        /// What is wrong with it.
        reason: FieldError,
    },
    /// No border router with the requested id.
    #[error("{}: no border router {id:?} (the file has: {known})", file.display())]
    UnknownRouter {
        /// The file.
        file: PathBuf,
        /// The id asked for.
        id: String,
        /// The ids the file defines, comma-separated.
        known: String,
    },
    /// A master key file is not valid.
    #[error("{}: {reason}", file.display())]
    Key {
        /// The key file.
        file: PathBuf,
        /// Why it was rejected.
        reason: KeyFileError,
    },
    /// A master key file is not usable as such: not a regular file, a dangling symbolic link,
    /// too large, too short a secret, or non-canonical base64.
    #[error("{}: {reason}", file.display())]
    KeyFile {
        /// The key file.
        file: PathBuf,
        /// Why it was rejected.
        reason: String,
    },
    /// The file is valid but router `id` cannot run with it: the underlay addresses of its own
    /// links conflict (see [`crate::Topology::check_router`]).
    #[error("{}: router {id} cannot run with this file: field `{field}`: {reason}", file.display())]
    Unusable {
        /// The topology file.
        file: PathBuf,
        /// The router id.
        id: String,
        /// Dotted path of the conflicting field.
        field: String,
        /// What it conflicts with.
        reason: String,
    },
    /// The router's configuration is inconsistent (e.g. a core link on a non-core AS).
    #[error("{}: router {id}: {reason}", file.display())]
    Config {
        /// The topology file.
        file: PathBuf,
        /// The router id.
        id: String,
        /// The data plane's objection.
        reason: String,
    },
}

impl TopologyError {
    /// The file the error is about.
    pub fn file(&self) -> &std::path::Path {
        match self {
            TopologyError::Io { file, .. }
            | TopologyError::Json { file, .. }
            | TopologyError::Field { file, .. }
            | TopologyError::UnknownRouter { file, .. }
            | TopologyError::Key { file, .. }
            | TopologyError::KeyFile { file, .. }
            | TopologyError::Unusable { file, .. }
            | TopologyError::Config { file, .. } => file,
        }
    }
}
