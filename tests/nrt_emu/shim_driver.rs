//! The driver backend end to end through the real system-call path: `nrt-emu run` and
//! `nrt-emu conform` with `--backend driver` open `/dev/neuron0` with libc's `open`, `ioctl` and
//! `mmap` — answered, under `LD_PRELOAD=libnrt_emu_shim.so`, by the simulator through the
//! kernel-ABI emulation. For every executable zoo NEFF, the device-facing conformance trace and
//! the output bytes must equal those of `--backend sim`.
//!
//! (The shim's own tests, in `shim/tests/`, check that it leaves ordinary file I/O alone.)

use crate::support::CliRun;
use std::path::{Path, PathBuf};

/// `libnrt_emu_shim.so` beside the `nrt-emu` binary under test, rebuilt first so it is never
/// stale (`nrt_fixtures::artifact`).
fn shim() -> PathBuf {
    if let Some(p) = std::env::var_os("NRT_EMU_SHIM") {
        return PathBuf::from(p);
    }
    nrt_fixtures::artifact::built("nrt-emu-shim", "libnrt_emu_shim.so")
}

/// The zoo NEFFs that execute (`real_like` carries real compiler opcodes: it loads but is not
/// executable by design), with the target their name says.
fn zoo_neffs() -> Vec<(PathBuf, &'static str)> {
    let dir = nrt_fixtures::fixtures_dir().join("neffs");
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "neff"))
        .filter(|p| {
            !p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("real_like")
        })
        .map(|p| {
            let target = if p.to_string_lossy().ends_with(".trn2.neff") {
                "trn2"
            } else {
                "trn1"
            };
            (p, target)
        })
        .collect();
    v.sort();
    assert!(v.len() >= 15, "zoo not found in {}", dir.display());
    v
}

fn nrt_emu(args: &[&str], shim: Option<(&Path, &str)>) -> CliRun {
    let so = shim.map(|(so, target)| (so.to_str().expect("UTF-8 path"), target));
    let env: &[(&str, &str)] = match &so {
        Some((so, target)) => &[("LD_PRELOAD", so), ("NRT_EMU_SHIM_TARGET", target)],
        None => &[],
    };
    crate::support::nrt_emu_in(None, env, args)
        .success(&format!("{args:?} (shim: {})", shim.is_some()))
}

/// `run`'s report without what may differ: the host wall time, and where outputs were written.
fn report(out: &CliRun) -> Vec<String> {
    out.stdout
        .lines()
        .filter(|l| !l.starts_with("host wall time"))
        .map(|l| l.split(" -> ").next().unwrap_or(l).to_owned())
        .collect()
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_zoo_model_runs_identically_on_the_driver_backend_under_the_shim() {
    let so = shim();
    let scratch = std::env::temp_dir().join(format!("nrt-emu-shim-e2e-{}", std::process::id()));
    for (neff, target) in zoo_neffs() {
        let name = neff.file_name().unwrap().to_string_lossy().into_owned();
        let path = neff.to_str().unwrap();

        // The conformance trace: load and two executions, every descriptor and doorbell.
        let sim = nrt_emu(&["conform", path, "--backend", "sim"], None);
        let drv = nrt_emu(
            &["conform", path, "--backend", "driver"],
            Some((&so, target)),
        );
        assert!(!sim.stdout.is_empty());
        if sim.stdout != drv.stdout {
            let (s, d) = (&sim.stdout, &drv.stdout);
            let first = s
                .lines()
                .zip(d.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(s.lines().count().min(d.lines().count()));
            panic!(
                "{name}: the conformance traces differ from line {}:\n  sim:    {:?}\n  driver: {:?}",
                first + 1,
                s.lines().nth(first),
                d.lines().nth(first)
            );
        }

        // The outputs, written as .npy, byte for byte; and the report (dtype, shape, checksum,
        // cycles per core).
        let (ds, dd) = (
            scratch.join(format!("{name}.sim")),
            scratch.join(format!("{name}.drv")),
        );
        for d in [&ds, &dd] {
            let _ = std::fs::remove_dir_all(d);
        }
        let a = nrt_emu(
            &[
                "run",
                path,
                "--backend",
                "sim",
                "--iterations",
                "2",
                "--output-dir",
                ds.to_str().unwrap(),
            ],
            None,
        );
        let b = nrt_emu(
            &[
                "run",
                path,
                "--backend",
                "driver",
                "--iterations",
                "2",
                "--output-dir",
                dd.to_str().unwrap(),
            ],
            Some((&so, target)),
        );
        assert_eq!(report(&a), report(&b), "{name}: run reports differ");
        let (fa, fb) = (files(&ds), files(&dd));
        assert!(!fa.is_empty(), "{name}: no outputs written");
        assert_eq!(
            fa.iter().map(|f| &f.0).collect::<Vec<_>>(),
            fb.iter().map(|f| &f.0).collect::<Vec<_>>(),
            "{name}"
        );
        for ((n, x), (_, y)) in fa.iter().zip(&fb) {
            assert!(
                x == y,
                "{name}: output {n} differs between sim and driver-under-shim"
            );
        }

        // Asynchronous execution, several requests in flight: the same report.
        let args = [
            "run",
            path,
            "--iterations",
            "4",
            "--async",
            "3",
            "--backend",
        ];
        let a = nrt_emu(&[&args[..], &["sim"]].concat(), None);
        let b = nrt_emu(&[&args[..], &["driver"]].concat(), Some((&so, target)));
        assert_eq!(report(&a), report(&b), "{name}: async run reports differ");
        eprintln!("{name}: trace, outputs and sync/async reports identical");
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

#[test]
fn without_the_shim_the_driver_backend_reports_the_missing_device() {
    if Path::new("/dev/neuron0").exists() {
        eprintln!("skipped: /dev/neuron0 exists here, so the driver backend does not fail");
        return;
    }
    let neff = nrt_fixtures::fixtures_dir().join("neffs/add.trn1.neff");
    let out = crate::support::nrt_emu(&["run", neff.to_str().unwrap(), "--backend", "driver"]);
    assert!(!out.ok);
    assert!(out.stderr.contains("/dev/neuron0"), "{}", out.stderr);
}
