//! Compiles the shim's variadic C entry points (src/variadic.c) and exports them from the cdylib.

fn main() {
    println!("cargo:rerun-if-changed=src/variadic.c");
    println!("cargo:rerun-if-changed=exports.map");
    cc::Build::new()
        .file("src/variadic.c")
        .warnings(true)
        .extra_warnings(true)
        .compile("nrt_emu_shim_variadic");
    // rustc hides every symbol of a cdylib that is not a Rust `#[no_mangle]` item; a second
    // version script makes the C entry points global. `--undefined` keeps their object in the
    // link even though no Rust code references them.
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/exports.map");
    for sym in [
        "open", "open64", "openat", "openat64", "fcntl", "fcntl64", "ioctl",
    ] {
        println!("cargo:rustc-cdylib-link-arg=-Wl,--undefined={sym}");
    }
}
