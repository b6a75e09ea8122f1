//! Compiles the shim's variadic C entry points (src/variadic.c); src/trampoline.rs exports them
//! under their libc names.

fn main() {
    println!("cargo:rerun-if-changed=src/variadic.c");
    cc::Build::new()
        .file("src/variadic.c")
        .warnings(true)
        .extra_warnings(true)
        .compile("nrt_emu_shim_variadic");
}
