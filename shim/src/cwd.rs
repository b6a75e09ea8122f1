//! The working directory, when it is one the shim answers for (docs/driver.md §13.2): `/dev`, or a
//! directory of the sysfs tree. Then a path relative to it (`cd /sys/class/neuron_device/neuron0
//! && cat core_count`, `cd /dev && ls -l neuron0`) resolves as an absolute one would.
//!
//! `chdir` into a directory of the tree really changes to the private empty directory behind
//! the tree's descriptors ([`crate::dirs`]), so the kernel's view stays consistent (a relative
//! call the shim does not see fails with `ENOENT`), and records the tree's path; `getcwd`
//! reports it. A child process starts in that directory with the shell's `PWD`: the first
//! relative path it uses adopts `PWD` when the kernel cannot name the working directory (it is
//! removed) and `PWD` is a directory of the tree — or when `PWD` is `/dev` and `.` is `/dev`.
//! Any other `chdir` or `fchdir` forgets it. With the working directory anywhere else, a
//! relative path costs one atomic load.

use std::ffi::{c_char, c_int, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use nrt_kabi::sysfs::{Layout, Node};

use crate::real::{self, set_errno};
use crate::vfs::{self, Found};

/// Whether [`CWD`] may hold a path (checked before the lock).
static SET: AtomicBool = AtomicBool::new(false);
/// The working directory when it is `/dev` or a directory of the tree.
static CWD: Mutex<Option<String>> = Mutex::new(None);

fn set(path: Option<String>) {
    let mut c = CWD.lock().unwrap_or_else(|e| e.into_inner());
    SET.store(path.is_some(), Ordering::Release);
    *c = path;
}

/// The working directory, if it is `/dev` or a directory of the tree.
pub fn get() -> Option<String> {
    inherit();
    if !SET.load(Ordering::Acquire) {
        return None;
    }
    CWD.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Once per process: adopts `PWD` as described in the module docs.
fn inherit() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        // SAFETY: getenv with a NUL-terminated name; the value is read at once.
        let pwd = unsafe { libc::getenv(c"PWD".as_ptr()) };
        if pwd.is_null() {
            return;
        }
        // SAFETY: a non-null environment value is NUL-terminated.
        let pwd = unsafe { CStr::from_ptr(pwd) }.to_bytes();
        // Nothing to do (and nothing allocated) unless PWD is under /dev or /sys.
        let n = pwd.iter().take_while(|&&c| c == b'/').count();
        if n == 0 || !(pwd[n..].starts_with(b"dev") || pwd[n..].starts_with(b"sys")) {
            return;
        }
        let Ok(pwd) = std::str::from_utf8(pwd) else {
            return;
        };
        let Some(parts) = nrt_kabi::sysfs::components(pwd) else {
            return;
        };
        let pwd = format!("/{}", parts.join("/"));
        if pwd == "/dev" {
            if crate::dirs::is_dev(c".") {
                set(Some(pwd));
            }
            return;
        }
        if !Layout::owns(&pwd) {
            return;
        }
        // The physical path, as the kernel's getcwd would give it (PWD may go through the
        // class links).
        let Some(Ok((pwd, Node::Dir(_)))) = crate::device::layout().map(|l| l.resolve(&pwd, true))
        else {
            return;
        };
        let Some(real_getcwd) = real::getcwd() else {
            return;
        };
        let mut buf = [0u8; 4096];
        // SAFETY: a writable buffer of the size given (the real getcwd: this module's would
        // come back here).
        let real_cwd = unsafe { real_getcwd(buf.as_mut_ptr().cast(), buf.len()) };
        if real_cwd.is_null() && errno() == libc::ENOENT {
            set(Some(pwd));
        }
    });
}

fn errno() -> c_int {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn fail(e: c_int) -> c_int {
    set_errno(e);
    -1
}

/// Interposed `chdir`.
///
/// # Safety
///
/// As `chdir(2)`.
#[no_mangle]
pub unsafe extern "C" fn chdir(path: *const c_char) -> c_int {
    // SAFETY: chdir's contract: a NUL-terminated path.
    match unsafe { vfs::lookup(libc::AT_FDCWD, path, true) } {
        Some(Found::Sys(Ok((canon, Node::Dir(_))))) => {
            let fd = crate::dirs::open_virtual_dir(&canon, true);
            if fd < 0 {
                return -1;
            }
            let r = match real::fchdir() {
                // SAFETY: a directory descriptor this function owns.
                Some(f) => unsafe { f(fd) },
                None => fail(libc::ENOSYS),
            };
            let e = errno();
            crate::dirs::forget_fd(fd);
            real::close_fd(fd);
            if r != 0 {
                return fail(e);
            }
            set(Some(canon));
            0
        }
        Some(Found::Sys(Ok(_))) | Some(Found::Device(Ok(_))) => fail(libc::ENOTDIR),
        Some(Found::Sys(Err(e))) | Some(Found::Device(Err(e))) => fail(e),
        None => {
            let r = match real::chdir() {
                // SAFETY: forwarded unchanged.
                Some(f) => unsafe { f(path) },
                None => fail(libc::ENOSYS),
            };
            if r == 0 {
                // SAFETY: the path was NUL-terminated (chdir succeeded on it).
                let is_dev = crate::dirs::is_dev(unsafe { CStr::from_ptr(path) });
                set(is_dev.then(|| "/dev".to_string()));
            }
            r
        }
    }
}

/// Interposed `fchdir`: into a directory descriptor of the tree, the tree's directory.
///
/// # Safety
///
/// As `fchdir(2)`.
#[no_mangle]
pub unsafe extern "C" fn fchdir(fd: c_int) -> c_int {
    let r = match real::fchdir() {
        // SAFETY: forwarded unchanged.
        Some(f) => unsafe { f(fd) },
        None => fail(libc::ENOSYS),
    };
    if r == 0 {
        set(crate::dirs::dir_path(fd));
    }
    r
}

/// Interposed `getcwd`: the tree's directory when the working directory is one.
///
/// # Safety
///
/// As `getcwd(3)` (a null `buf` asks for a `malloc`ed copy, glibc's extension).
#[no_mangle]
pub unsafe extern "C" fn getcwd(buf: *mut c_char, size: usize) -> *mut c_char {
    let tree = get().filter(|p| p != "/dev");
    let Some(path) = tree else {
        return match real::getcwd() {
            // SAFETY: forwarded unchanged.
            Some(f) => unsafe { f(buf, size) },
            None => {
                set_errno(libc::ENOSYS);
                std::ptr::null_mut()
            }
        };
    };
    let n = path.len() + 1;
    let out = if buf.is_null() {
        // SAFETY: plain allocation, the caller frees it (glibc's contract for a null buffer).
        let p = unsafe { libc::malloc(n.max(size)) }.cast::<c_char>();
        if p.is_null() {
            set_errno(libc::ENOMEM);
            return p;
        }
        p
    } else if size < n {
        set_errno(libc::ERANGE);
        return std::ptr::null_mut();
    } else {
        buf
    };
    // SAFETY: `out` holds at least `n` bytes (checked or allocated above).
    unsafe {
        std::ptr::copy_nonoverlapping(path.as_ptr(), out.cast::<u8>(), path.len());
        *out.add(path.len()) = 0;
    }
    out
}
