//! Shared helpers: the built artifacts, an installed prefix, compiling and running programs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// `file` of `package` in the profile directory, rebuilt first (see `nrt_fixtures::artifact`).
pub fn artifact(package: &str, file: &str) -> PathBuf {
    nrt_fixtures::artifact::built(package, file)
}

/// The library under test.
pub fn libnrt() -> PathBuf {
    artifact("nrt-capi", "libnrt.so")
}

/// A scratch directory for this test process.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nrt-capi-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A prefix laid out as `nrt-emu install` does (lib/libnrt.so.1, lib/libnrt.so, include/).
pub fn prefix() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let p = scratch("prefix");
        let lib = p.join("lib");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::copy(libnrt(), lib.join("libnrt.so.1")).unwrap();
        std::os::unix::fs::symlink("libnrt.so.1", lib.join("libnrt.so")).unwrap();
        for (rel, text) in nrt::headers::HEADERS {
            let f = p.join("include").join(rel);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, text).unwrap();
        }
        p
    })
}

/// Whether a C compiler is installed (else the caller skips, saying so).
pub fn have(compiler: &str) -> bool {
    let ok = Command::new(compiler)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("SKIP: no `{compiler}` on PATH (.ci/run installs one)");
    }
    ok
}

/// The C/C++ test program `src` (under capi/tests/c/), compiled against the prefix.
pub fn compile(compiler: &str, src: &str, std: &str, extra: &[&str]) -> PathBuf {
    let p = prefix();
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(src);
    let out = p.join(format!("{src}.{compiler}.bin"));
    let mut cmd = Command::new(compiler);
    cmd.arg(format!("-std={std}"))
        .args(["-Wall", "-Wextra", "-Werror"]);
    if !std.starts_with("gnu") {
        cmd.arg("-pedantic-errors");
    }
    cmd.arg(format!("-I{}", p.join("include").display()))
        .arg(&source)
        .arg("-o")
        .arg(&out)
        .args(extra);
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{compiler} {src} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// The flags that link the prefix's library.
pub fn link_flags() -> Vec<String> {
    let lib = prefix().join("lib");
    vec![
        format!("-L{}", lib.display()),
        "-lnrt".into(),
        "-pthread".into(),
    ]
}

/// Runs `program` with the prefix on the library path, a clean nrt-emu environment and `env`.
pub fn run(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env("LD_LIBRARY_PATH", prefix().join("lib"))
        .env_remove("LD_PRELOAD");
    for (k, _) in std::env::vars() {
        if k.starts_with("NEURON_") || k.starts_with("NRT_EMU_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied());
    cmd.output().unwrap()
}

/// A zoo NEFF on disk.
pub fn neff(name: &str) -> PathBuf {
    nrt_fixtures::fixtures_dir().join("neffs").join(name)
}
