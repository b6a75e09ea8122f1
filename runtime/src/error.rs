//! The runtime's error type: an [`NrtStatus`] plus a message that names the problem (the file,
//! key, var, queue or call concerned). Every failure of the runtime is one of these; the status
//! is what the `nrt.h`-style API returns, the message what it logs.

use crate::status::NrtStatus;

/// A runtime failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub struct Error {
    /// The public status code.
    pub status: NrtStatus,
    /// What went wrong, naming the file, key or object concerned.
    pub message: String,
}

/// Result of a runtime operation.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error with `status` and `message`.
    pub fn new(status: NrtStatus, message: impl Into<String>) -> Self {
        Error {
            status,
            message: message.into(),
        }
    }

    /// `NRT_INVALID`: bad input (a malformed NEFF, a wrong tensor, …).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(NrtStatus::Invalid, message)
    }

    /// `NRT_RESOURCE`: an allocation failed.
    pub fn resource(message: impl Into<String>) -> Self {
        Self::new(NrtStatus::Resource, message)
    }

    /// `NRT_FAILURE`: anything else.
    pub fn failure(message: impl Into<String>) -> Self {
        Self::new(NrtStatus::Failure, message)
    }

    /// The same error with `context: ` prefixed to its message.
    pub fn context(mut self, context: impl std::fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

impl From<nrt_hal::HalError> for Error {
    fn from(e: nrt_hal::HalError) -> Self {
        use nrt_hal::HalError as H;
        let status = match &e {
            H::OutOfMemory { .. } => NrtStatus::Resource,
            H::Timeout { .. } => NrtStatus::Timeout,
            H::DeviceFault { .. } | H::DeviceLost(_) => NrtStatus::HwError,
            H::InvalidArgument { .. } | H::Unsupported { .. } | H::Os { .. } => NrtStatus::Failure,
        };
        Error::new(status, e.to_string())
    }
}
