//! The integration tests of nrt-emu-shim, gathered into one test binary so that a
//! fresh clone compiles and links one executable for the crate instead of one per file.
//! Each module is one former test file; its own docs say what it covers.

#![deny(clippy::undocumented_unsafe_blocks)]

mod listing;
mod under_shim;

use std::path::PathBuf;
use std::process::Command;

/// The shim next to this test binary (`target/<profile>/deps/`, or its parent where cargo
/// uplifts it).
pub(crate) fn shim_path() -> PathBuf {
    if let Some(p) = std::env::var_os("NRT_EMU_SHIM") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    [
        deps.join("libnrt_emu_shim.so"),
        deps.parent().unwrap().join("libnrt_emu_shim.so"),
    ]
    .into_iter()
    .find(|p| p.exists())
    .expect("libnrt_emu_shim.so is built with this test (cargo test -p nrt-emu-shim)")
}

/// Runs test `path` of this binary (its module path, `listing::dev_child`) under the shim, with
/// the variable `role.0` set to `role.1` and `env`; returns whether it passed and its stdout
/// and stderr.
pub(crate) fn run_child(
    path: &str,
    role: (&str, &str),
    env: &[(&str, &str)],
) -> (bool, String, String) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args([path, "--exact", "--nocapture", "--test-threads=1"])
        .env("LD_PRELOAD", shim_path())
        .env(role.0, role.1)
        .env_remove("NRT_EMU_SHIM_TARGET")
        .env_remove("NRT_EMU_SHIM_DEVICES")
        .envs(env.iter().copied());
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The calling thread's `errno`.
pub(crate) fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap()
}
