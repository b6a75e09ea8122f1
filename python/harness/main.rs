//! The Python package (`python/`) end to end, built the way a user builds it: the standard
//! PEP 517 build, `pip wheel python/` (its backend, `python/build_backend.py`, has cargo build
//! the library and the shim and maturin pack them with the `nrt-emu` command) from this test
//! build's profile; the wheel installed into the harness's own virtual environment; the
//! package's pytest suite (`python/tests/`) and the README's example test run there, on both
//! targets and both backends (`--nrt-target all --nrt-backend all`).
//!
//! **The environment.** `target/python-harness/venv`, made on the first run from `$PYTHON`
//! (else `python3`) with its `venv` module and given, from the package index, what
//! `python/pyproject.toml` asks for: maturin (`[build-system] requires`), numpy (the package's
//! dependencies) and pytest and ml_dtypes (its `test` extra). Later runs reuse it as long as
//! those requirements stay the same. The wheel is built with that maturin
//! (`--no-build-isolation`, the one difference from a user's `pip wheel python/`, which
//! installs maturin into a throwaway environment each time; and stored rather than deflated),
//! then reinstalled. The backend's cargo builds select what they selected the last time, so on
//! a warm run they do nothing: what remains is packing and installing the wheel (about 5 s here).
//!
//! Nothing is skipped: where the environment cannot be made — no Python, no `venv` module, no
//! package index on the first run — the test fails, saying why; so does a failed build or
//! install, and any pytest failure or skip but those the suite knows of.
//!
//! The suite compares every zoo model with its golden outputs: this test writes the golden
//! inputs (the zoo's generator at `GOLDEN_SEED`) as `.npy` files for it. It also runs the
//! current-compiler development set (`test_current_neffs.py`) from the folder the Rust tests
//! read (`NRT_EMU_CURRENT_NEFFS`, else `../shared/current-neffs` beside the repository), passed
//! on as an absolute path; where that folder is absent, its skips are the expected ones.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use nrt_fixtures::{artifact::describe, fixtures_dir, zoo, GOLDEN_SEED};
use nrt_runtime::manifest::npy_bytes;

/// Runs `cmd`; on failure panics with `why` and the command's output.
fn run(cmd: &mut Command, why: &str) -> Output {
    let o = cmd
        .output()
        .unwrap_or_else(|e| panic!("{why}: cannot start {:?}: {e}", cmd.get_program()));
    assert!(o.status.success(), "{why}:\n{}", describe(&o));
    o
}

/// `python -m pip <command>`, quietly.
fn pip(python: &Path, command: &str) -> Command {
    let mut cmd = Command::new(python);
    cmd.args([
        "-m",
        "pip",
        command,
        "--quiet",
        "--disable-pip-version-check",
    ]);
    cmd
}

fn succeeds(cmd: &mut Command) -> bool {
    cmd.output().is_ok_and(|o| o.status.success())
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

/// The requirement strings of list `key` in `[section]` of `pyproject.toml` (a one-line list).
fn toml_list(pyproject: &str, section: &str, key: &str) -> Vec<String> {
    let header = format!("[{section}]");
    let line = pyproject
        .lines()
        .skip_while(|l| l.trim() != header)
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .find(|l| l.split('=').next().is_some_and(|k| k.trim() == key))
        .unwrap_or_else(|| panic!("python/pyproject.toml: no one-line {key} in {header}"));
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

/// What the harness's environment needs, from `python/pyproject.toml`: maturin (the
/// `[build-system] requires`), the package's dependencies and its `test` extra.
fn requirements(root: &Path) -> Vec<String> {
    let pyproject = std::fs::read_to_string(root.join("python/pyproject.toml")).unwrap();
    [
        ("build-system", "requires"),
        ("project", "dependencies"),
        ("project.optional-dependencies", "test"),
    ]
    .iter()
    .flat_map(|(section, key)| toml_list(&pyproject, section, key))
    .collect()
}

/// The harness's virtual environment (`dir/venv`) with `requires` installed: as a previous run
/// left it when it has them, else made (from `$PYTHON`, else `python3`) and provisioned now.
/// Panics, saying why, where it cannot be.
fn venv(dir: &Path, requires: &[String]) -> PathBuf {
    let venv = dir.join("venv");
    let python = venv.join("bin/python");
    let stamp = venv.join("nrt-emu-harness-requires");
    let want = requires.join("\n");
    let works = succeeds(Command::new(&python).args(["-c", ""]));
    if works && std::fs::read_to_string(&stamp).is_ok_and(|s| s == want) {
        return venv;
    }
    if !works {
        let base = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        assert!(
            succeeds(Command::new(&base).arg("--version")),
            "the Python package cannot be tested: no `{base}` on PATH (install Python 3.9 or \
             later with its venv module, or point $PYTHON at one)"
        );
        assert!(
            succeeds(Command::new(&base).args(["-c", "import venv, ensurepip"])),
            "the Python package cannot be tested: `{base}` has no venv/ensurepip module (on \
             Debian/Ubuntu: apt-get install python3-venv)"
        );
        run(
            Command::new(&base)
                .args(["-m", "venv", "--clear"])
                .arg(&venv),
            &format!("`{base} -m venv` cannot make {}", venv.display()),
        );
    }
    run(
        pip(&python, "install").args(requires),
        &format!(
            "the Python package cannot be tested: {} cannot be installed into {} from the package \
             index (needed once; is it reachable?)",
            requires.join(", "),
            venv.display()
        ),
    );
    std::fs::write(&stamp, want).unwrap();
    venv
}

/// The current-compiler NEFFs' folder, absolute: `$NRT_EMU_CURRENT_NEFFS` (relative to the
/// working directory) or `../shared/current-neffs` beside the repository — present or not.
fn current_neffs(root: &Path) -> PathBuf {
    let dir = std::env::var_os("NRT_EMU_CURRENT_NEFFS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/current-neffs"));
    std::path::absolute(&dir).unwrap_or(dir)
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
fn pip_builds_the_complete_wheel_which_installs_and_passes_its_pytest_suite() {
    let t0 = Instant::now();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let (profile_dir, profile) = profile();
    let target_dir = profile_dir.parent().unwrap();
    let dir = target_dir.join("python-harness");
    std::fs::create_dir_all(&dir).unwrap();
    let venv = venv(&dir, &requirements(root));
    let python = venv.join("bin/python");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let t_venv = t0.elapsed();

    // The standard PEP 517 build; the wheel stored rather than deflated (it goes no further
    // than this venv: half the time to pack and to install).
    let wheels = dir.join("wheels");
    let _ = std::fs::remove_dir_all(&wheels);
    run(
        pip(&python, "wheel")
            .args(["--no-deps", "--no-build-isolation", "--wheel-dir"])
            .arg(&wheels)
            .arg(root.join("python"))
            .env(
                "MATURIN_PEP517_ARGS",
                format!("--profile {profile} --compression-method stored"),
            )
            .env("CARGO_TARGET_DIR", target_dir)
            .env("CARGO", &cargo),
        "pip wheel python/",
    );
    let built: Vec<PathBuf> = std::fs::read_dir(&wheels)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(
        built.len() == 1 && built[0].extension().is_some_and(|e| e == "whl"),
        "pip wheel python/ made {built:?}, not one wheel"
    );
    let wheel = built[0].to_str().unwrap();
    let t_wheel = t0.elapsed();

    // Reinstalled: the same version with new contents (its dependencies are in the venv).
    run(
        pip(&python, "install").args(["--no-deps", "--force-reinstall", wheel]),
        "pip install the wheel",
    );
    let t_install = t0.elapsed();

    let inputs = dir.join("zoo-inputs");
    write_golden_inputs(&inputs);
    let mut pytest = Command::new(&python);
    pytest
        .args(["-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs"])
        .args(["--nrt-target", "all", "--nrt-backend", "all"])
        .arg(root.join("python/tests"))
        .arg(root.join("python/examples/test_example.py"))
        // Outside the source tree, so `nrt_emu` is the installed package.
        .current_dir(&dir)
        .env_remove("LD_PRELOAD")
        .env_remove("LD_LIBRARY_PATH");
    for (k, _) in std::env::vars() {
        if k.starts_with("NEURON_") || k.starts_with("NRT_EMU_") {
            pytest.env_remove(k);
        }
    }
    let current = current_neffs(root);
    pytest
        .env("NRT_EMU_FIXTURES", fixtures_dir())
        .env("NRT_EMU_ZOO_INPUTS", &inputs)
        .env("NRT_EMU_CURRENT_NEFFS", &current);
    let o = run(&mut pytest, "pytest python/tests");
    let out = String::from_utf8_lossy(&o.stdout);
    println!("{out}");
    println!(
        "python harness: venv {:.1?}, pip wheel {:.1?}, install {:.1?}, pytest {:.1?}",
        t_venv,
        t_wheel - t_venv,
        t_install - t_wheel,
        t0.elapsed() - t_install
    );
    let summary = out.lines().last().unwrap_or_default();
    assert!(summary.contains(" passed"), "no pytest summary:\n{out}");
    // The skips the suite knows of: the malformed case that needs parse limits libnrt's
    // environment cannot set, and the current-compiler NEFFs where their folder is absent. Any
    // other skip is a test that did not run.
    let without_current = !current.is_dir();
    if without_current {
        println!(
            "SKIP current-neffs in the Python suite: {} not found (set NRT_EMU_CURRENT_NEFFS or put it at ../shared/current-neffs)",
            current.display()
        );
    }
    let skipped = out
        .lines()
        .filter(|l| l.starts_with("SKIPPED"))
        .collect::<Vec<_>>();
    assert!(
        skipped.iter().all(|l| l.contains("parse limits")
            || (without_current && l.contains("current-neffs: folder"))),
        "unexpected skips:\n{}",
        skipped.join("\n")
    );
}
