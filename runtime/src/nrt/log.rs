//! Where a session's own messages go. The session reports what no caller gets as a status — an
//! async execution that failed after its call returned, an inspect-on-fail dump — through
//! [`Log`]; the front end prints it (the C library in libnrt's log format, with the function
//! column of the call in progress).

/// The front end's log.
pub trait Log: Send + Sync {
    /// An ERROR line.
    fn error(&self, msg: &str);
    /// An INFO line.
    fn info(&self, msg: &str);
}
