//! The Python package (`python/`) end to end: build the wheel with maturin from this test
//! build's artifacts (`python/build_wheel.py --profile <this profile> --no-cargo`), install it
//! into a fresh virtual environment (numpy, pytest and ml_dtypes come from the package index),
//! and run the package's pytest suite (`python/tests/`) and the README's example test there, on
//! both targets and both backends (`--nrt-target all --nrt-backend all`).
//!
//! The suite compares every zoo model with its golden outputs: this test writes the golden
//! inputs (the zoo's generator at `GOLDEN_SEED`) as `.npy` files for it. It skips, saying so,
//! where no `python3` with `venv` and `maturin` is installed (`.ci/run` installs them);
//! otherwise a failure anywhere — build, install, any pytest test or skip — fails it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use nrt_fixtures::{fixtures_dir, zoo, GOLDEN_SEED};
use nrt_runtime::manifest::npy_bytes;

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn run(cmd: &mut Command, what: &str) -> Output {
    let o = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(o.status.success(), "{what} failed:\n{}", text(&o));
    o
}

/// The Python to build with, if it has what the build needs (else the reason to skip).
fn python() -> Result<String, String> {
    let py = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let check = |args: &[&str]| {
        Command::new(&py)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !check(&["--version"]) {
        return Err(format!("no `{py}` on PATH"));
    }
    if !check(&["-c", "import venv, ensurepip"]) {
        return Err(format!("`{py}` has no venv/ensurepip module"));
    }
    if !check(&["-m", "maturin", "--version"]) {
        return Err(format!(
            "maturin is not installed for `{py}` (pip install maturin)"
        ));
    }
    Ok(py)
}

/// `target/<dir>` of this test binary, and the cargo profile whose artifacts land there: `dev`
/// in `target/debug` (`cargo test` builds its tests there; `--profile test` cannot be used, as
/// it builds binaries as unit-test harnesses), else the directory's name (`release`).
fn profile() -> (PathBuf, String) {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let profile = if name == "debug" { "dev".into() } else { name };
    (dir, profile)
}

/// The golden inputs of every zoo model: `<dir>/<model>.<target>/<input>.npy`.
fn write_golden_inputs(dir: &Path) {
    for m in zoo::all() {
        let d = dir.join(m.id());
        std::fs::create_dir_all(&d).unwrap();
        for (spec, bytes) in m.inputs.iter().zip(m.generate_inputs(GOLDEN_SEED)) {
            let shape: Vec<u64> = spec.shape.iter().map(|&n| n as u64).collect();
            let npy = npy_bytes(spec.dtype, &shape, &bytes).unwrap();
            std::fs::write(d.join(format!("{}.npy", spec.name)), npy).unwrap();
        }
    }
}

#[test]
fn the_wheel_installs_into_a_fresh_venv_and_passes_its_pytest_suite() {
    let py = match python() {
        Ok(py) => py,
        Err(why) => {
            println!("SKIP: the Python package is not tested: {why} (.ci/run installs python3, venv and maturin)");
            return;
        }
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let (profile_dir, profile) = profile();
    let target_dir = profile_dir.parent().unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // `cargo test` links the tests against nrt-capi's rlib and does not refresh the cdylib in
    // the profile directory: build the library and the shim the wheel ships (a no-op when fresh).
    run(
        Command::new(&cargo)
            .args([
                "build",
                "--profile",
                &profile,
                "-p",
                "nrt-capi",
                "-p",
                "nrt-emu-shim",
            ])
            .current_dir(root)
            .env("CARGO_TARGET_DIR", target_dir),
        "cargo build -p nrt-capi -p nrt-emu-shim",
    );
    let scratch = std::env::temp_dir().join(format!("nrt-emu-python-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let built = run(
        Command::new(&py)
            .arg(root.join("python/build_wheel.py"))
            .args(["--profile", &profile, "--no-cargo", "--out"])
            .arg(scratch.join("wheels"))
            .env("CARGO_TARGET_DIR", target_dir)
            .env("CARGO", &cargo),
        "python/build_wheel.py",
    );
    let stdout = String::from_utf8_lossy(&built.stdout);
    let wheel = stdout.lines().last().unwrap().trim().to_string();
    assert!(
        wheel.ends_with(".whl"),
        "build_wheel.py printed no wheel:\n{stdout}"
    );

    let venv = scratch.join("venv");
    run(
        Command::new(&py).args(["-m", "venv"]).arg(&venv),
        "python -m venv",
    );
    let vpy = venv.join("bin/python");
    run(
        Command::new(&vpy)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg(format!("{wheel}[test]")),
        "pip install the wheel",
    );

    let inputs = scratch.join("zoo-inputs");
    write_golden_inputs(&inputs);
    let mut pytest = Command::new(&vpy);
    pytest
        .args(["-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs"])
        .args(["--nrt-target", "all", "--nrt-backend", "all"])
        .arg(root.join("python/tests"))
        .arg(root.join("python/examples/test_example.py"))
        // Outside the source tree, so `nrt_emu` is the installed package.
        .current_dir(&scratch)
        .env_remove("LD_PRELOAD")
        .env_remove("LD_LIBRARY_PATH");
    for (k, _) in std::env::vars() {
        if k.starts_with("NEURON_") || k.starts_with("NRT_EMU_") {
            pytest.env_remove(k);
        }
    }
    pytest
        .env("NRT_EMU_FIXTURES", fixtures_dir())
        .env("NRT_EMU_ZOO_INPUTS", &inputs);
    let o = run(&mut pytest, "pytest python/tests");
    let out = String::from_utf8_lossy(&o.stdout);
    println!("{out}");
    let summary = out.lines().last().unwrap_or_default();
    assert!(summary.contains(" passed"), "no pytest summary:\n{out}");
    // The one skip the suite knows of: the malformed case that needs parse limits libnrt's
    // environment cannot set. Any other skip is a test that did not run.
    let skipped = out
        .lines()
        .filter(|l| l.starts_with("SKIPPED"))
        .collect::<Vec<_>>();
    assert!(
        skipped.iter().all(|l| l.contains("parse limits")),
        "unexpected skips:\n{}",
        skipped.join("\n")
    );
    let _ = std::fs::remove_dir_all(&scratch);
}
