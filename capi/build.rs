//! Link settings of `libnrt.so`: the SONAME `libnrt.so.1`, and the version script that defines
//! the `NRT_2.0.0` node the exported functions are bound to (see src/export.rs).
//!
//! rustc already passes an anonymous version script for a cdylib. lld (this toolchain's default
//! linker on x86_64-unknown-linux-gnu) accepts a second, named one; GNU ld refuses the
//! combination ("anonymous version tag cannot be combined with other version tags"), so a build
//! that switches the linker back to GNU ld fails at link time with that message.

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=nrt.map");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnrt.so.1");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/nrt.map");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags.contains("linker-features=-lld") {
        println!(
            "cargo:warning=libnrt.so needs lld: GNU ld rejects the NRT_2.0.0 version script next to rustc's own"
        );
    }
}
