//! The crate's error type: every bad input is one of these, naming what was wrong and where.

use std::path::Path;

/// What went wrong reading, building or comparing a profile.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The JSON text is not a profile (syntax, or a key with a value of the wrong type).
    #[error("profile JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// A file's content is bad; `source` says how.
    #[error("{path}: {source}")]
    InFile {
        /// The file.
        path: String,
        /// What is wrong with it.
        source: Box<ProfileError>,
    },
    /// The device trace is malformed.
    #[error("NTFF: {0}")]
    Ntff(#[from] NtffError),
    /// A record given to the builder is inconsistent.
    #[error("profile builder: {0}")]
    Builder(String),
    /// The profiles cannot be compared.
    #[error("comparison: {0}")]
    Compare(String),
}

impl ProfileError {
    /// This error, attributed to the file `path`.
    pub fn in_file(self, path: &Path) -> ProfileError {
        ProfileError::InFile {
            path: path.display().to_string(),
            source: Box::new(self),
        }
    }
}

/// What is malformed in an NTFF trace. Offsets are byte offsets into the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NtffError {
    /// The file ends before a structure it announces.
    #[error("truncated: {what} needs bytes {start}..{end}, the file has {len}")]
    Truncated {
        /// The structure.
        what: String,
        /// Its first byte.
        start: u64,
        /// One past its last byte.
        end: u64,
        /// The file length.
        len: u64,
    },
    /// Byte 0 is not a version this reader knows.
    #[error("unsupported format version {0} (byte 0; known: 5, 6)")]
    Version(u8),
    /// The protobuf message is malformed.
    #[error("protobuf {context} at byte {offset}: {problem}")]
    Protobuf {
        /// Which message was being read.
        context: String,
        /// File offset of the bad field.
        offset: u64,
        /// What is wrong.
        problem: String,
    },
    /// A required field is absent.
    #[error("missing {0}")]
    Missing(String),
    /// A field has a value the format does not allow.
    #[error("invalid {what}: {problem}")]
    Invalid {
        /// The field.
        what: String,
        /// Why.
        problem: String,
    },
}
