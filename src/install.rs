//! `nrt-emu install [--prefix DIR] [--force]`: lays out the drop-in libnrt as the
//! `aws-neuronx-runtime-lib` package does —
//!
//! ```text
//! DIR/lib/libnrt.so.1               the library (from this binary's build directory)
//! DIR/lib/libnrt.so -> libnrt.so.1  the -lnrt link name
//! DIR/include/nrt/*.h, DIR/include/ndl/*.h
//! ```
//!
//! The library is the `libnrt.so` that `cargo build --release --workspace` put next to this
//! binary, or, for the binary a wheel installed (`pip install nrt-emu`), the wheel's
//! `nrt_emu/lib/libnrt.so.1`; the headers are embedded in the binary. An existing `DIR/lib/libnrt.so.1` that is not
//! nrt-emu's (it lacks [`nrt::IDENT`]) is a real libnrt and is only replaced with `--force`.

use std::path::{Path, PathBuf};

use clap::Args;

/// Arguments of `nrt-emu install`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Where to install.
    #[arg(long, default_value = "/opt/aws/neuron")]
    pub prefix: PathBuf,
    /// Replace a libnrt that is not nrt-emu's.
    #[arg(long)]
    pub force: bool,
}

/// Whether the file at `path` is an nrt-emu libnrt.
pub fn is_ours(path: &Path) -> Result<bool, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let ident = nrt::IDENT.as_bytes();
    Ok(bytes.windows(ident.len()).any(|w| w == ident))
}

/// The libraries of a wheel installed into the Python environment whose scripts directory holds
/// this binary (`pip install nrt-emu`): `<env>/bin/nrt-emu` and
/// `<env>/lib/python3.X/{site,dist}-packages/nrt_emu/lib/libnrt.so.1`, in name order.
fn wheel_libraries(exe: &Path) -> Vec<PathBuf> {
    let Some(lib) = exe.parent().and_then(Path::parent).map(|p| p.join("lib")) else {
        return Vec::new();
    };
    let mut pythons: Vec<PathBuf> = std::fs::read_dir(&lib)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .map(|e| e.path())
        .collect();
    pythons.sort();
    pythons
        .iter()
        .flat_map(|py| ["site-packages", "dist-packages"].map(|d| py.join(d)))
        .map(|d| d.join("nrt_emu/lib/libnrt.so.1"))
        .filter(|so| so.is_file())
        .collect()
}

/// The library to install: the `libnrt.so` next to this binary (a cargo build), else the one
/// of the wheel this binary came with.
fn library() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate this binary: {e}"))?;
    let so = exe.with_file_name("libnrt.so");
    let so = if so.is_file() {
        so
    } else if let Some(wheel) = wheel_libraries(&exe).into_iter().next() {
        wheel
    } else {
        return Err(format!(
            "{} does not exist: build the library with `cargo build --release --workspace` (it is written next to {}), or install the nrt-emu wheel",
            so.display(),
            exe.display()
        ));
    };
    if !is_ours(&so)? {
        return Err(format!("{} is not nrt-emu's libnrt", so.display()));
    }
    Ok(so)
}

/// Runs `nrt-emu install`.
pub fn command(args: &InstallArgs) -> Result<(), String> {
    let src = library()?;
    let lib = args.prefix.join("lib");
    let target = lib.join("libnrt.so.1");
    if target.exists() && !args.force && !is_ours(&target)? {
        return Err(format!(
            "{} is not nrt-emu's libnrt (a real Neuron runtime?); not replacing it without --force",
            target.display()
        ));
    }
    let mkdir = |d: &Path| {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))
    };
    mkdir(&lib)?;
    // Write to a temporary name and rename, so a program running from the old file keeps it.
    let tmp = lib.join(".libnrt.so.1.nrt-emu-install");
    std::fs::copy(&src, &tmp)
        .map_err(|e| format!("cannot copy {} to {}: {e}", src.display(), tmp.display()))?;
    std::fs::rename(&tmp, &target)
        .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    println!("installed {} (from {})", target.display(), src.display());
    let link = lib.join("libnrt.so");
    if link.symlink_metadata().is_ok() {
        std::fs::remove_file(&link)
            .map_err(|e| format!("cannot replace {}: {e}", link.display()))?;
    }
    std::os::unix::fs::symlink("libnrt.so.1", &link)
        .map_err(|e| format!("cannot link {}: {e}", link.display()))?;
    println!("linked    {} -> libnrt.so.1", link.display());
    for (rel, text) in nrt::headers::HEADERS {
        let path = args.prefix.join("include").join(rel);
        if let Some(d) = path.parent() {
            mkdir(d)?;
        }
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("installed {}", path.display());
    }
    println!(
        "build: cc app.c -I{inc} -L{lib} -lnrt -pthread; run: LD_LIBRARY_PATH={lib} ./app",
        inc = args.prefix.join("include").display(),
        lib = lib.display()
    );
    Ok(())
}
