//! `nrt-emu install [--prefix DIR] [--force] [--tools]`: lays out the drop-in libnrt as the
//! `aws-neuronx-runtime-lib` package does —
//!
//! ```text
//! DIR/lib/libnrt.so.1               the library (from this binary's build directory)
//! DIR/lib/libnrt.so -> libnrt.so.1  the -lnrt link name
//! DIR/include/nrt/*.h, DIR/include/ndl/*.h
//! ```
//!
//! and with `--tools`, where `aws-neuronx-tools` puts its commands, the one nrt-emu provides:
//!
//! ```text
//! DIR/bin/nrt-emu                   a copy of this binary
//! DIR/bin/neuron-ls -> nrt-emu      run under that name, it is `nrt-emu ls` (docs/driver.md §13.4)
//! ```
//!
//! Without `--tools` nothing is installed under a name of AWS's tools. An existing
//! `DIR/bin/neuron-ls` that is not nrt-emu's (AWS's own) is only replaced with `--force`.
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
    /// Replace a libnrt (or, with --tools, a neuron-ls) that is not nrt-emu's.
    #[arg(long)]
    pub force: bool,
    /// Also install bin/neuron-ls (this binary under that name) and bin/nrt-emu.
    #[arg(long)]
    pub tools: bool,
}

/// Whether `path` (a file or link in `DIR/bin`) is nrt-emu's: a link to `nrt-emu`, or a
/// binary that carries nrt-emu's identification.
fn is_our_tool(path: &Path) -> Result<bool, String> {
    let md = path
        .symlink_metadata()
        .map_err(|e| format!("cannot inspect {}: {e}", path.display()))?;
    if md.file_type().is_symlink() {
        let to = std::fs::read_link(path)
            .map_err(|e| format!("cannot read the link {}: {e}", path.display()))?;
        return Ok(to.file_name().is_some_and(|n| n == "nrt-emu"));
    }
    is_ours(path)
}

/// Installs `DIR/bin/nrt-emu` and the `DIR/bin/neuron-ls` link (module docs).
fn install_tools(prefix: &Path) -> Result<(), String> {
    let bin = prefix.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("cannot create {}: {e}", bin.display()))?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate this binary: {e}"))?;
    let dst = bin.join("nrt-emu");
    let same = dst
        .canonicalize()
        .is_ok_and(|d| exe.canonicalize().is_ok_and(|e| e == d));
    if !same {
        replace_file(&exe, &dst)?;
    }
    println!("installed {} (from {})", dst.display(), exe.display());
    relink(&bin.join("neuron-ls"), "nrt-emu")
}

/// Copies `src` to `dst` under a temporary name in `dst`'s directory and renames it into
/// place, so a program running from the old file keeps it.
fn replace_file(src: &Path, dst: &Path) -> Result<(), String> {
    let name = dst.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dst.with_file_name(format!(".{name}.nrt-emu-install"));
    std::fs::copy(src, &tmp)
        .map_err(|e| format!("cannot copy {} to {}: {e}", src.display(), tmp.display()))?;
    std::fs::rename(&tmp, dst).map_err(|e| format!("cannot write {}: {e}", dst.display()))
}

/// Makes `link` a symbolic link to `to` (relative to its directory), replacing what was there.
fn relink(link: &Path, to: &str) -> Result<(), String> {
    if link.symlink_metadata().is_ok() {
        std::fs::remove_file(link)
            .map_err(|e| format!("cannot replace {}: {e}", link.display()))?;
    }
    std::os::unix::fs::symlink(to, link)
        .map_err(|e| format!("cannot link {}: {e}", link.display()))?;
    println!("linked    {} -> {to}", link.display());
    Ok(())
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
    let tool = args.prefix.join("bin/neuron-ls");
    if args.tools && tool.symlink_metadata().is_ok() && !args.force && !is_our_tool(&tool)? {
        return Err(format!(
            "{} is not nrt-emu's (AWS's neuron-ls?); not replacing it without --force",
            tool.display()
        ));
    }
    let mkdir = |d: &Path| {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))
    };
    mkdir(&lib)?;
    replace_file(&src, &target)?;
    println!("installed {} (from {})", target.display(), src.display());
    relink(&lib.join("libnrt.so"), "libnrt.so.1")?;
    for (rel, text) in nrt::headers::HEADERS {
        let path = args.prefix.join("include").join(rel);
        if let Some(d) = path.parent() {
            mkdir(d)?;
        }
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("installed {}", path.display());
    }
    if args.tools {
        install_tools(&args.prefix)?;
    }
    println!(
        "build: cc app.c -I{inc} -L{lib} -lnrt -pthread; run: LD_LIBRARY_PATH={lib} ./app",
        inc = args.prefix.join("include").display(),
        lib = lib.display()
    );
    Ok(())
}
