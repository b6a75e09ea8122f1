//! `nrt-emu conform`: records a NEFF's device-facing trace — load, then two executions with
//! seeded inputs, under the recording HAL decorator of `nrt-conformance` — and prints it, or
//! compares it with a snapshot document, or (`--update`) writes that document.
//!
//! Exit status: 0 when the trace was printed, matches the snapshot or was written; 1 when it
//! differs from the snapshot (the first differing lines are printed with three lines of
//! context and their line numbers); 2 when the run could not be made (unreadable file, no
//! Neuron device for `--backend driver`, a runtime setup error).
//!
//! The device comes from the platform's one opener (`nrt_emu::backend::open`): on the
//! simulator, a fresh one of the generation `--target` or the NEFF names; with `--backend
//! driver`, `/dev/neuron0` through the driver backend, checked against `--target` when given.
//! The trace is the same text as on the simulator (the conformance tests check this over the
//! simulator's kernel-ABI emulation), so a trace recorded on silicon can be compared with a
//! simulator run through `--snapshot`, and vice versa.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use nrt_emu::backend::{Backend, Settings};
use nrt_emu::conformance::harness::neff_target;
use nrt_emu::conformance::{first_difference, run_on, RunOptions};
use nrt_emu::hal::Target;

/// What `conform` was asked to do.
#[derive(Debug, Clone)]
pub struct ConformArgs {
    /// The NEFF file.
    pub file: PathBuf,
    /// The backend.
    pub backend: Backend,
    /// The generation, if not the NEFF's own.
    pub target: Option<Target>,
    /// The snapshot document to compare with or write.
    pub snapshot: Option<PathBuf>,
    /// Write the snapshot instead of comparing.
    pub update: bool,
    /// Seed of the inputs.
    pub seed: u64,
}

/// How a `conform` run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The trace was printed (no snapshot given).
    Printed,
    /// The trace equals the snapshot.
    Matches,
    /// The snapshot was written.
    Updated,
    /// The trace differs from the snapshot; the report was printed.
    Differs,
}

impl Outcome {
    /// The process exit status of this outcome.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Outcome::Differs => ExitCode::from(1),
            _ => ExitCode::SUCCESS,
        }
    }
}

/// Runs `conform`, writing the trace or the comparison report to `out`.
pub fn conform(args: &ConformArgs, out: &mut dyn Write) -> Result<Outcome, String> {
    let io = |e: std::io::Error| format!("writing output: {e}");
    let neff = crate::read_input(&args.file)?;
    let opts = RunOptions {
        target: args.target,
        seed: args.seed,
        alloc_base_offset: 0,
    };
    let shown = args.file.display();
    let mut settings =
        Settings::new(args.backend).with_sim_hint("record on the simulator with --backend sim");
    match (args.target, args.backend) {
        (Some(t), _) => settings = settings.with_target(t, "--target"),
        // The simulator runs the generation the NEFF names; the driver records whatever its
        // device is.
        (None, Backend::Sim) => {
            let t = neff_target(&neff)
                .ok_or_else(|| format!("{shown}: the NEFF names no known target; pass one"))?;
            settings = settings.with_target(t, "the NEFF");
        }
        (None, Backend::Driver) => {}
    }
    let device = nrt_emu::backend::open(&settings).map_err(|e| e.message)?;
    let run = run_on(device.hal, &neff, &opts, &|h| h).map_err(|e| format!("{shown}: {e}"))?;
    let doc = run.document();
    let Some(path) = &args.snapshot else {
        out.write_all(doc.as_bytes()).map_err(io)?;
        return Ok(Outcome::Printed);
    };
    if args.update {
        write_snapshot(path, &doc)?;
        writeln!(
            out,
            "wrote {} ({} lines)",
            path.display(),
            doc.lines().count()
        )
        .map_err(io)?;
        return Ok(Outcome::Updated);
    }
    let want = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read snapshot {}: {e}", path.display()))?;
    match first_difference(&want, &doc, 3) {
        None => {
            writeln!(
                out,
                "matches {} ({} lines)",
                path.display(),
                doc.lines().count()
            )
            .map_err(io)?;
            Ok(Outcome::Matches)
        }
        Some(report) => {
            writeln!(
                out,
                "{}: the trace of {} differs from the snapshot ('-' snapshot, '+' this run)",
                path.display(),
                args.file.display()
            )
            .map_err(io)?;
            out.write_all(report.as_bytes()).map_err(io)?;
            Ok(Outcome::Differs)
        }
    }
}

fn write_snapshot(path: &Path, doc: &str) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    std::fs::write(path, doc).map_err(|e| format!("writing {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrt_emu::conformance::DEFAULT_SEED;

    fn repo(p: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(p)
    }

    fn args(snapshot: Option<PathBuf>, update: bool) -> ConformArgs {
        ConformArgs {
            file: repo("fixtures/neffs/add.trn1.neff"),
            backend: Backend::Sim,
            target: None,
            snapshot,
            update,
            seed: DEFAULT_SEED,
        }
    }

    fn run(a: &ConformArgs) -> (Result<Outcome, String>, String) {
        let mut out = Vec::new();
        let r = conform(a, &mut out);
        (r, String::from_utf8(out).unwrap())
    }

    /// The body of a committed insta snapshot of nrt-conformance.
    fn committed(name: &str) -> String {
        let text =
            std::fs::read_to_string(repo(&format!("conformance/tests/snapshots/{name}.snap")))
                .unwrap();
        let rest = text.strip_prefix("---\n").unwrap();
        let at = rest.find("\n---\n").unwrap();
        rest[at + 5..].to_string()
    }

    #[test]
    fn the_printed_document_is_the_committed_snapshots() {
        let (r, out) = run(&args(None, false));
        assert_eq!(r, Ok(Outcome::Printed));
        let mut want = String::new();
        for phase in ["load", "exec1", "exec2"] {
            want.push_str(&format!("## {phase}\n"));
            want.push_str(&committed(&format!("add.trn1.{phase}")));
            if !want.ends_with('\n') {
                want.push('\n');
            }
        }
        assert_eq!(first_difference(&want, &out, 3), None);
    }

    #[test]
    fn update_then_compare_then_detect_a_change() {
        let dir = std::env::temp_dir().join(format!("nrt-emu-conform-{}", std::process::id()));
        let snap = dir.join("add.trn1.trace");
        let (r, out) = run(&args(Some(snap.clone()), true));
        assert_eq!(r, Ok(Outcome::Updated));
        assert!(out.starts_with("wrote "));
        let (r, out) = run(&args(Some(snap.clone()), false));
        assert_eq!(r, Ok(Outcome::Matches), "{out}");
        // Alter one descriptor field in the snapshot: the run now differs there.
        let text = std::fs::read_to_string(&snap).unwrap();
        let line = text
            .lines()
            .position(|l| l.contains("q e0.q13 tx[0] ") && l.contains("meta=m2m "))
            .expect("the exec queue's first TX descriptor");
        let altered: Vec<String> = text
            .lines()
            .enumerate()
            .map(|(i, l)| {
                if i == line {
                    l.replace("meta=m2m ", "meta=m2m|write_barrier ")
                } else {
                    l.to_string()
                }
            })
            .collect();
        std::fs::write(&snap, altered.join("\n") + "\n").unwrap();
        let (r, out) = run(&args(Some(snap.clone()), false));
        assert_eq!(r, Ok(Outcome::Differs));
        assert_eq!(Outcome::Differs.exit_code(), ExitCode::from(1));
        assert!(
            out.contains(&format!("first difference at line {}", line + 1)),
            "{out}"
        );
        assert!(out.contains("meta=m2m|write_barrier"), "{out}");
        assert!(
            out.lines()
                .filter(|l| l.starts_with("  ") && !l.trim().is_empty())
                .count()
                >= 3,
            "three lines of context: {out}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_driver_backend_fails_clearly_without_a_device() {
        use nrt_emu::backend::DRIVER_DEVICE;
        use nrt_emu::hal::driver::device_path;
        if std::path::Path::new(&device_path(DRIVER_DEVICE)).exists() {
            return; // a real Neuron host: nothing to check here
        }
        let mut a = args(None, false);
        a.backend = Backend::Driver;
        let (r, _) = run(&a);
        let e = r.unwrap_err();
        assert!(
            e.contains("the driver backend cannot open /dev/neuron0"),
            "{e}"
        );
        assert!(e.contains("--backend sim"), "{e}");
    }

    #[test]
    fn a_missing_file_is_an_error() {
        let mut a = args(None, false);
        a.file = repo("no/such.neff");
        assert!(run(&a).0.unwrap_err().contains("cannot read"));
    }
}
