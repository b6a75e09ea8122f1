//! The real libc functions the shim forwards to, found with `dlsym(RTLD_NEXT, name)` on first
//! use and cached. A name libc does not have yields `None`; the caller fails that call with
//! `ENOSYS` rather than aborting the program.

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

pub type OpenFn = unsafe extern "C" fn(*const c_char, c_int, ...) -> c_int;
pub type OpenatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, ...) -> c_int;
pub type Open2Fn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
pub type Openat2Fn = unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int;
pub type FcntlFn = unsafe extern "C" fn(c_int, c_int, ...) -> c_int;
pub type IoctlFn = unsafe extern "C" fn(c_int, c_ulong, ...) -> c_int;
pub type CloseFn = unsafe extern "C" fn(c_int) -> c_int;
pub type DupFn = unsafe extern "C" fn(c_int) -> c_int;
pub type Dup2Fn = unsafe extern "C" fn(c_int, c_int) -> c_int;
pub type Dup3Fn = unsafe extern "C" fn(c_int, c_int, c_int) -> c_int;
pub type MmapFn =
    unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, c_int, libc::off_t) -> *mut c_void;
pub type MunmapFn = unsafe extern "C" fn(*mut c_void, usize) -> c_int;
pub type StatFn = unsafe extern "C" fn(*const c_char, *mut libc::stat) -> c_int;
pub type FstatatFn = unsafe extern "C" fn(c_int, *const c_char, *mut libc::stat, c_int) -> c_int;
pub type StatxFn =
    unsafe extern "C" fn(c_int, *const c_char, c_int, c_uint, *mut libc::statx) -> c_int;
pub type AccessFn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
pub type FstatFn = unsafe extern "C" fn(c_int, *mut libc::stat) -> c_int;
pub type FaccessatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, c_int) -> c_int;
pub type OpendirFn = unsafe extern "C" fn(*const c_char) -> *mut libc::DIR;
pub type FdopendirFn = unsafe extern "C" fn(c_int) -> *mut libc::DIR;
pub type ReaddirFn = unsafe extern "C" fn(*mut libc::DIR) -> *mut libc::dirent64;
pub type ClosedirFn = unsafe extern "C" fn(*mut libc::DIR) -> c_int;
pub type RewinddirFn = unsafe extern "C" fn(*mut libc::DIR);
/// `scandir`/`scandir64` (the filter and comparison as opaque pointers, passed on unchanged).
pub type ScandirFn = unsafe extern "C" fn(
    *const c_char,
    *mut *mut *mut libc::dirent64,
    *const c_void,
    *const c_void,
) -> c_int;
/// `glob`/`glob64` (the error callback as an opaque pointer, passed on unchanged).
pub type GlobFn = unsafe extern "C" fn(*const c_char, c_int, *const c_void, *mut c_void) -> c_int;
pub type ReadlinkFn = unsafe extern "C" fn(*const c_char, *mut c_char, usize) -> isize;
pub type ReadlinkatFn = unsafe extern "C" fn(c_int, *const c_char, *mut c_char, usize) -> isize;
pub type GetxattrFn =
    unsafe extern "C" fn(*const c_char, *const c_char, *mut c_void, usize) -> isize;
pub type ListxattrFn = unsafe extern "C" fn(*const c_char, *mut c_char, usize) -> isize;
pub type ChdirFn = unsafe extern "C" fn(*const c_char) -> c_int;
pub type FchdirFn = unsafe extern "C" fn(c_int) -> c_int;
pub type GetcwdFn = unsafe extern "C" fn(*mut c_char, usize) -> *mut c_char;
pub type FopenFn = unsafe extern "C" fn(*const c_char, *const c_char) -> *mut libc::FILE;

/// One cached `dlsym(RTLD_NEXT, …)` lookup.
struct Slot(AtomicPtr<c_void>);

impl Slot {
    const fn new() -> Slot {
        Slot(AtomicPtr::new(std::ptr::null_mut()))
    }

    fn get(&self, name: &CStr) -> Option<*mut c_void> {
        let p = self.0.load(Ordering::Acquire);
        if !p.is_null() {
            return Some(p);
        }
        // SAFETY: `RTLD_NEXT` with a NUL-terminated name is dlsym's documented use; two threads
        // racing here both store the same address.
        let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
        if p.is_null() {
            return None;
        }
        self.0.store(p, Ordering::Release);
        Some(p)
    }
}

macro_rules! real {
    ($($fn_name:ident: $ty:ty = $sym:literal;)*) => {$(
        pub fn $fn_name() -> Option<$ty> {
            static SLOT: Slot = Slot::new();
            // SAFETY: the symbol of that name in the next object (libc) is the libc function,
            // whose C prototype `$ty` spells out.
            SLOT.get($sym).map(|p| unsafe { std::mem::transmute::<*mut c_void, $ty>(p) })
        }
    )*};
}

real! {
    open: OpenFn = c"open";
    open64: OpenFn = c"open64";
    openat: OpenatFn = c"openat";
    openat64: OpenatFn = c"openat64";
    open_2: Open2Fn = c"__open_2";
    open64_2: Open2Fn = c"__open64_2";
    openat_2: Openat2Fn = c"__openat_2";
    openat64_2: Openat2Fn = c"__openat64_2";
    fcntl: FcntlFn = c"fcntl";
    fcntl64: FcntlFn = c"fcntl64";
    ioctl: IoctlFn = c"ioctl";
    close: CloseFn = c"close";
    dup: DupFn = c"dup";
    dup2: Dup2Fn = c"dup2";
    dup3: Dup3Fn = c"dup3";
    mmap: MmapFn = c"mmap";
    mmap64: MmapFn = c"mmap64";
    munmap: MunmapFn = c"munmap";
    stat: StatFn = c"stat";
    stat64: StatFn = c"stat64";
    lstat: StatFn = c"lstat";
    lstat64: StatFn = c"lstat64";
    fstatat: FstatatFn = c"fstatat";
    fstatat64: FstatatFn = c"fstatat64";
    statx: StatxFn = c"statx";
    access: AccessFn = c"access";
    faccessat: FaccessatFn = c"faccessat";
    opendir: OpendirFn = c"opendir";
    fdopendir: FdopendirFn = c"fdopendir";
    readdir: ReaddirFn = c"readdir";
    readdir64: ReaddirFn = c"readdir64";
    closedir: ClosedirFn = c"closedir";
    rewinddir: RewinddirFn = c"rewinddir";
    scandir: ScandirFn = c"scandir";
    scandir64: ScandirFn = c"scandir64";
    glob: GlobFn = c"glob";
    glob64: GlobFn = c"glob64";
    readlink: ReadlinkFn = c"readlink";
    readlinkat: ReadlinkatFn = c"readlinkat";
    fopen: FopenFn = c"fopen";
    fopen64: FopenFn = c"fopen64";
    fstat: FstatFn = c"fstat";
    fstat64: FstatFn = c"fstat64";
    chdir: ChdirFn = c"chdir";
    fchdir: FchdirFn = c"fchdir";
    getcwd: GetcwdFn = c"getcwd";
    getxattr: GetxattrFn = c"getxattr";
    lgetxattr: GetxattrFn = c"lgetxattr";
    listxattr: ListxattrFn = c"listxattr";
    llistxattr: ListxattrFn = c"llistxattr";
}

/// Sets the calling thread's `errno`.
pub fn set_errno(e: c_int) {
    // SAFETY: `__errno_location` returns the calling thread's errno slot, always valid.
    unsafe { *libc::__errno_location() = e };
}

/// Opens a placeholder descriptor (`/dev/null`) through the real `openat`, reserving a
/// descriptor number for an emulated device file.
pub fn open_placeholder(cloexec: bool) -> c_int {
    let Some(f) = openat() else {
        set_errno(libc::ENOSYS);
        return -1;
    };
    let flags = libc::O_RDWR | if cloexec { libc::O_CLOEXEC } else { 0 };
    // SAFETY: a NUL-terminated path and flags without O_CREAT, so no mode argument.
    unsafe { f(libc::AT_FDCWD, c"/dev/null".as_ptr(), flags) }
}

/// Closes a descriptor through the real `close`.
pub fn close_fd(fd: c_int) -> c_int {
    match close() {
        // SAFETY: close takes a plain integer.
        Some(f) => unsafe { f(fd) },
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    }
}

/// `mode_t` as the variadic open functions receive it (promoted to `unsigned int`).
pub type Mode = c_uint;
