//! libnrt's console log: one line per message on stderr, in libnrt's layout
//! (docs/c-api.md "log format"):
//!
//! ```text
//! 2024-Oct-21 20:15:03.169020  7340:7340   INFO   NRT:nrt_init                                Neuron Runtime …
//! ```
//!
//! date, time with microseconds (UTC: the library does not read the time zone database), pid
//! right-aligned and tid left-aligned in 5 columns, the level and the module right-aligned in 5,
//! `:`, the C function padded to 40 columns, the message. `NEURON_RT_LOG_LEVEL` (ERROR default,
//! WARN/WARNING, INFO, DEBUG, TRACE; QUIET = nothing) is read at the first message and again at
//! every `nrt_init`. The function column is the C entry point the calling thread is in.
//!
//! Where lines go (docs/c-api.md §6.2), read at the same times: `NEURON_RT_LOG_LOCATION` =
//! `CONSOLE` (stderr, the default) or `SYSLOG` for every module, and
//! `NEURON_RT_LOG_LOCATION_<MODULE>` (`NRT`, `SIM`) = `CONSOLE`, `SYSLOG` or a file path (lines
//! appended) for one. A value that names neither and a file that cannot be opened keep the
//! console and say so in one WARN line.
//!
//! The runtime's own `tracing` events are printed the same way through [`Bridge`], installed
//! as the process's global subscriber at the first `nrt_init` (unless the host program already
//! has one).

use std::cell::Cell;
use std::ffi::CString;
use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// Message levels, most severe first (`Quiet` only as a threshold).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Nothing is printed.
    Quiet = 0,
    /// `ERROR`.
    Error = 1,
    /// `WARN`.
    Warn = 2,
    /// `INFO`.
    Info = 3,
    /// `DEBUG`.
    Debug = 4,
    /// `TRACE`.
    Trace = 5,
}

impl Level {
    fn token(self) -> &'static str {
        match self {
            Level::Quiet => "",
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
            Level::Trace => "TRACE",
        }
    }

    /// The level a `NEURON_RT_LOG_LEVEL` value names.
    pub fn parse(v: &str) -> Option<Level> {
        Some(match v.trim().to_ascii_uppercase().as_str() {
            "QUIET" => Level::Quiet,
            "ERROR" => Level::Error,
            "WARN" | "WARNING" => Level::Warn,
            "INFO" => Level::Info,
            "DEBUG" => Level::Debug,
            "TRACE" => Level::Trace,
            _ => return None,
        })
    }

    fn from_u8(v: u8) -> Level {
        match v {
            0 => Level::Quiet,
            1 => Level::Error,
            2 => Level::Warn,
            3 => Level::Info,
            4 => Level::Debug,
            _ => Level::Trace,
        }
    }
}

const UNSET: u8 = u8::MAX;
static THRESHOLD: AtomicU8 = AtomicU8::new(UNSET);

thread_local! {
    static FUNCTION: Cell<&'static str> = const { Cell::new("nrt") };
    /// Lines this thread emits while [`capture`] runs (instead of writing them).
    static CAPTURED: std::cell::RefCell<Option<Vec<String>>> = const { std::cell::RefCell::new(None) };
}

/// Where a module's lines go.
#[derive(Clone, Default)]
enum Sink {
    /// stderr.
    #[default]
    Console,
    /// `syslog(3)`.
    Syslog,
    /// Appended to a file.
    File(Arc<File>),
}

/// The modules that log (each may have its own `NEURON_RT_LOG_LOCATION_<MODULE>`).
const MODULES: [&str; 2] = ["NRT", "SIM"];

/// The sink of every module (default) and of the modules that name their own.
struct Sinks {
    default: Sink,
    modules: Vec<(&'static str, Sink)>,
}

static SINKS: RwLock<Sinks> = RwLock::new(Sinks {
    default: Sink::Console,
    modules: Vec::new(),
});

/// The sink a `NEURON_RT_LOG_LOCATION*` value names; `Err` is the WARN line to print.
fn sink_of(var: &str, value: &str, files: bool) -> Result<Sink, String> {
    match value.trim().to_ascii_uppercase().as_str() {
        "" | "CONSOLE" => return Ok(Sink::Console),
        "SYSLOG" => return Ok(Sink::Syslog),
        _ => {}
    }
    if !files {
        return Err(format!(
            "{var}={value:?} is not CONSOLE or SYSLOG (a file path is given per module: {var}_NRT); using the console"
        ));
    }
    File::options()
        .append(true)
        .create(true)
        .open(value.trim())
        .map(|f| Sink::File(Arc::new(f)))
        .map_err(|e| format!("{var}={value:?}: cannot open the file ({e}); using the console"))
}

/// Re-reads the `NEURON_RT_LOG_LOCATION*` variables; returns the WARN lines for bad values.
fn configure_sinks() -> Vec<String> {
    let mut warnings = Vec::new();
    let mut read = |var: &str, files: bool| {
        let v = std::env::var(var).ok()?;
        sink_of(var, &v, files).map_err(|w| warnings.push(w)).ok()
    };
    let default = read("NEURON_RT_LOG_LOCATION", false).unwrap_or_default();
    let modules = MODULES
        .iter()
        .filter_map(|m| Some((*m, read(&format!("NEURON_RT_LOG_LOCATION_{m}"), true)?)))
        .collect();
    *SINKS.write().unwrap_or_else(|p| p.into_inner()) = Sinks { default, modules };
    warnings
}

fn sink(module: &str) -> Sink {
    let sinks = SINKS.read().unwrap_or_else(|p| p.into_inner());
    sinks
        .modules
        .iter()
        .find(|(m, _)| *m == module)
        .map_or(&sinks.default, |(_, s)| s)
        .clone()
}

/// Re-reads `NEURON_RT_LOG_LEVEL` (an unknown value keeps ERROR and says so) and where the
/// lines go. These two WARN lines are printed at every level but QUIET.
pub fn configure() {
    let mut warnings = configure_sinks();
    let level = match std::env::var("NEURON_RT_LOG_LEVEL") {
        Ok(v) => Level::parse(&v).unwrap_or_else(|| {
            warnings.push(format!(
                "NEURON_RT_LOG_LEVEL={v:?} is not a log level; using ERROR"
            ));
            Level::Error
        }),
        Err(_) => Level::Error,
    };
    if level != Level::Quiet && !warnings.is_empty() {
        THRESHOLD.store(level.max(Level::Warn) as u8, Ordering::Relaxed);
        for w in warnings {
            emit(Level::Warn, "NRT", &w);
        }
    }
    THRESHOLD.store(level as u8, Ordering::Relaxed);
}

fn threshold() -> Level {
    let v = THRESHOLD.load(Ordering::Relaxed);
    if v == UNSET {
        configure();
        return Level::from_u8(THRESHOLD.load(Ordering::Relaxed));
    }
    Level::from_u8(v)
}

/// Whether a message at `level` is printed.
pub fn enabled(level: Level) -> bool {
    level != Level::Quiet && level <= threshold()
}

/// Sets the function column for this thread until the returned guard drops.
pub fn enter(function: &'static str) -> FunctionGuard {
    FunctionGuard(FUNCTION.with(|f| f.replace(function)))
}

/// Restores the previous function column.
pub struct FunctionGuard(&'static str);

impl Drop for FunctionGuard {
    fn drop(&mut self) {
        FUNCTION.with(|f| f.set(self.0));
    }
}

/// Prints `msg` at `level` from module `module` (`NRT`, `TDRV`, …) if the level is enabled.
pub fn emit(level: Level, module: &str, msg: &str) {
    if !enabled(level) {
        return;
    }
    let line = format_line(
        SystemTime::now(),
        level,
        module,
        FUNCTION.with(Cell::get),
        msg,
    );
    let line = match CAPTURED.with(|c| c.borrow_mut().as_mut().map(|v| v.push(line.clone()))) {
        Some(()) => return,
        None => line,
    };
    write_line(&sink(module), level, &line);
}

/// Runs `f` and returns, with its result, the lines this thread emitted meanwhile (at the
/// levels enabled), which are then not written anywhere. For tests that check what a call
/// logged, independent of other threads and of where lines go.
pub fn capture<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    let previous = CAPTURED.with(|c| c.borrow_mut().replace(Vec::new()));
    let r = f();
    let lines = CAPTURED.with(|c| std::mem::replace(&mut *c.borrow_mut(), previous));
    (r, lines.unwrap_or_default())
}

/// Writes one line to `sink`: one write per line, so lines from concurrent threads do not
/// interleave.
fn write_line(sink: &Sink, level: Level, line: &str) {
    match sink {
        Sink::Console => {
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
        Sink::File(f) => {
            let _ = (&**f).write_all(line.as_bytes());
        }
        Sink::Syslog => {
            let priority = match level {
                Level::Quiet | Level::Error => libc::LOG_ERR,
                Level::Warn => libc::LOG_WARNING,
                Level::Info => libc::LOG_INFO,
                Level::Debug | Level::Trace => libc::LOG_DEBUG,
            };
            // A line holds no NUL unless the message did; such a line is dropped.
            if let Ok(text) = CString::new(line.trim_end()) {
                // SAFETY: both strings are NUL-terminated and live across the call; the
                // format consumes exactly the one string argument given.
                unsafe { libc::syslog(libc::LOG_USER | priority, c"%s".as_ptr(), text.as_ptr()) };
            }
        }
    }
}

/// An ERROR line.
pub fn error(msg: &str) {
    emit(Level::Error, "NRT", msg);
}

/// A WARN line.
pub fn warn(msg: &str) {
    emit(Level::Warn, "NRT", msg);
}

/// An INFO line.
pub fn info(msg: &str) {
    emit(Level::Info, "NRT", msg);
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// (year, month 1–12, day) of a day count since 1970-01-01 (proleptic Gregorian calendar).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// One log line (with its newline).
pub fn format_line(
    now: SystemTime,
    level: Level,
    module: &str,
    function: &str,
    msg: &str,
) -> String {
    let d = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (y, m, day) = civil_from_days(secs.div_euclid(86_400));
    let tod = secs.rem_euclid(86_400);
    let mut line = String::with_capacity(96 + msg.len());
    let _ = write!(
        line,
        "{y:04}-{}-{day:02} {:02}:{:02}:{:02}.{:06} {:>5}:{:<5} {:>5} {:>5}:{:<40}{msg}",
        MONTHS[(m - 1) as usize],
        tod / 3600,
        tod / 60 % 60,
        tod % 60,
        d.subsec_micros(),
        std::process::id(),
        thread_id(),
        level.token(),
        module,
        function,
    );
    line.push('\n');
    line
}

fn thread_id() -> i64 {
    // SAFETY: gettid has no preconditions and cannot fail.
    i64::from(unsafe { libc::gettid() })
}

/// Prints the runtime's `tracing` events as libnrt log lines.
pub struct Bridge;

struct Message(String);

impl tracing::field::Visit for Message {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.record_debug(field, &format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, "{}={value:?}", field.name());
        }
    }
}

fn level_of(l: &tracing::Level) -> Level {
    match *l {
        tracing::Level::ERROR => Level::Error,
        tracing::Level::WARN => Level::Warn,
        tracing::Level::INFO => Level::Info,
        tracing::Level::DEBUG => Level::Debug,
        _ => Level::Trace,
    }
}

impl tracing::Subscriber for Bridge {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        enabled(level_of(metadata.level()))
    }

    fn new_span(&self, _span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _span: &tracing::span::Id, _values: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _span: &tracing::span::Id, _follows: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let mut m = Message(String::new());
        event.record(&mut m);
        let module = if event.metadata().target().starts_with("nrt_sim") {
            "SIM"
        } else {
            "NRT"
        };
        emit(level_of(event.metadata().level()), module, &m.0);
    }

    fn enter(&self, _span: &tracing::span::Id) {}

    fn exit(&self, _span: &tracing::span::Id) {}
}

/// Installs [`Bridge`] as the global `tracing` subscriber (once; a host program's own
/// subscriber wins).
pub fn install_bridge() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = tracing::subscriber::set_global_default(Bridge);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_line_layout_is_libnrts() {
        // 2024-10-21 20:15:03.169020 UTC
        let t = UNIX_EPOCH + Duration::from_micros(1_729_541_703_169_020);
        let line = format_line(t, Level::Info, "NRT", "nrt_init", "hello");
        let pid = std::process::id();
        let tid = thread_id();
        let want = format!(
            "2024-Oct-21 20:15:03.169020 {pid:>5}:{tid:<5}  INFO   NRT:nrt_init{}hello\n",
            " ".repeat(32)
        );
        assert_eq!(line, want);
        let head = line.find("NRT:").unwrap() + 4;
        assert_eq!(
            &line[head + 40..],
            "hello\n",
            "the message starts 40 columns after ':'"
        );
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }

    #[test]
    fn log_locations() {
        assert!(matches!(
            sink_of("V", " console ", false),
            Ok(Sink::Console)
        ));
        assert!(matches!(sink_of("V", "syslog", true), Ok(Sink::Syslog)));
        let e = sink_of("NEURON_RT_LOG_LOCATION", "/tmp/x.log", false)
            .err()
            .unwrap();
        assert!(e.contains("NEURON_RT_LOG_LOCATION_NRT"), "{e}");
        let e = sink_of("V", "/nonexistent-dir/x.log", true).err().unwrap();
        assert!(e.contains("cannot open"), "{e}");
        let path = std::env::temp_dir().join(format!("nrt-log-{}.log", std::process::id()));
        let sink = sink_of("V", path.to_str().unwrap(), true).unwrap();
        write_line(&sink, Level::Error, "one\n");
        write_line(&sink, Level::Error, "two\n");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn levels_parse() {
        assert_eq!(Level::parse("warning"), Some(Level::Warn));
        assert_eq!(Level::parse(" QUIET "), Some(Level::Quiet));
        assert_eq!(Level::parse("loud"), None);
    }
}
