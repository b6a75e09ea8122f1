//! The libc names of the variadic entry points. Each is a naked function — no prologue, no
//! epilogue — that tail-jumps to its C implementation in `src/variadic.c`, leaving every
//! argument register, the stack and (on x86-64) `%al`, the count of vector registers a variadic
//! call sets, exactly as the program's call left them. The C function therefore receives the
//! program's variadic call itself and reads its optional argument with `va_arg`.
//!
//! Why not export the C functions directly: rustc's cdylib version script makes every symbol
//! that Rust does not define local, and adding a second version script works with lld but not
//! with GNU ld. A naked Rust function is a Rust-defined symbol, exported like any `#[no_mangle]`
//! item, on every linker. Why not write them in Rust: stable Rust cannot define a C-variadic
//! function (`c_variadic` is unstable), and a fixed-arity definition would not be the function
//! the C prototype declares.

use std::ffi::{c_char, c_int, c_ulong};

extern "C" {
    fn nrt_emu_shim_c_open(path: *const c_char, flags: c_int, ...) -> c_int;
    fn nrt_emu_shim_c_open64(path: *const c_char, flags: c_int, ...) -> c_int;
    fn nrt_emu_shim_c_openat(dirfd: c_int, path: *const c_char, flags: c_int, ...) -> c_int;
    fn nrt_emu_shim_c_openat64(dirfd: c_int, path: *const c_char, flags: c_int, ...) -> c_int;
    fn nrt_emu_shim_c_fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
    fn nrt_emu_shim_c_fcntl64(fd: c_int, cmd: c_int, ...) -> c_int;
    fn nrt_emu_shim_c_ioctl(fd: c_int, request: c_ulong, ...) -> c_int;
}

#[cfg(target_arch = "x86_64")]
macro_rules! tail_jump {
    ($target:ident) => {
        core::arch::naked_asm!("jmp {}", sym $target)
    };
}

#[cfg(target_arch = "aarch64")]
macro_rules! tail_jump {
    ($target:ident) => {
        core::arch::naked_asm!("b {}", sym $target)
    };
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("nrt-emu-shim's trampolines are written for x86_64 and aarch64");

macro_rules! trampolines {
    ($($(#[$doc:meta])* $name:ident => $target:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As the libc function of this name (a C variadic function; call it from C).
        #[unsafe(naked)]
        #[no_mangle]
        pub unsafe extern "C" fn $name() {
            tail_jump!($target)
        }
    )*};
}

trampolines! {
    /// `int open(const char *path, int flags, ...)`.
    open => nrt_emu_shim_c_open;
    /// `int open64(const char *path, int flags, ...)`.
    open64 => nrt_emu_shim_c_open64;
    /// `int openat(int dirfd, const char *path, int flags, ...)`.
    openat => nrt_emu_shim_c_openat;
    /// `int openat64(int dirfd, const char *path, int flags, ...)`.
    openat64 => nrt_emu_shim_c_openat64;
    /// `int fcntl(int fd, int cmd, ...)`.
    fcntl => nrt_emu_shim_c_fcntl;
    /// `int fcntl64(int fd, int cmd, ...)`.
    fcntl64 => nrt_emu_shim_c_fcntl64;
    /// `int ioctl(int fd, unsigned long request, ...)`.
    ioctl => nrt_emu_shim_c_ioctl;
}
