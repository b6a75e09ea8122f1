//! The shim seen from a program that preloads it. Each test here re-runs this test binary with
//! `LD_PRELOAD=libnrt_emu_shim.so` and asks it (by an environment variable) to play one role:
//! the child does its checks under the shim and exits non-zero on the first failure; the parent
//! checks the exit status and what the child printed.
//!
//! Roles:
//! * `file-io`: ordinary file, pipe, `dup*`/`fcntl` and memory-mapping I/O of the process works
//!   exactly as without the shim, through both Rust's std and the libc calls the shim interposes
//!   (including the variadic `open(…, O_CREAT, mode)` whose mode must arrive intact);
//! * `device`: `/dev/neuron0` appears — `open`, variadic `ioctl`, `dup`/`fcntl(F_DUPFD)` sharing
//!   the open file, `close` semantics, `mmap`/`munmap` of device memory through the real driver
//!   backend (`DriverHal` over `RealSyscalls`, i.e. the process's libc), errors for a node that
//!   does not exist and for requests the driver refuses.

use crate::errno;
use std::ffi::CString;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use nrt_hal::abi::{self, Ioctl};
use nrt_hal::driver::{DriverHal, RealSyscalls};
use nrt_hal::hal::{AllocRequest, MemLocation};
use nrt_hal::{Hal, NcIndex, Target};
use zerocopy::IntoBytes;

const ROLE: &str = "NRT_EMU_SHIM_TEST_ROLE";

/// Runs test `name` of this module as role `role` under the shim, with `env`.
fn run_child(name: &str, role: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    crate::run_child(&format!("under_shim::{name}"), (ROLE, role), env)
}

fn role() -> Option<String> {
    std::env::var(ROLE).ok()
}

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

fn scratch_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nrt-emu-shim-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn ordinary_file_io_is_untouched() {
    if role().as_deref() == Some("file-io") {
        return file_io_child();
    }
    if role().is_some() {
        return;
    }
    let (ok, stdout, stderr) = run_child("ordinary_file_io_is_untouched", "file-io", &[]);
    assert!(ok, "child failed under the shim:\n{stdout}\n{stderr}");
    assert!(stdout.contains("file-io: all checks passed"), "{stdout}");
}

/// Runs as the child: everything below must behave as without the shim.
///
/// Longer than the ~120-line guideline on purpose: one checklist of libc
/// calls, each a few lines, in the order a program makes them.
fn file_io_child() {
    let dir = scratch_dir("io");
    // std: create, write, read back, append, seek, metadata, rename, remove.
    let a = dir.join("a.txt");
    std::fs::write(&a, b"hello shim\n").unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), b"hello shim\n");
    let mut f = std::fs::OpenOptions::new().append(true).open(&a).unwrap();
    f.write_all(b"second line\n").unwrap();
    drop(f);
    let mut f = std::fs::File::open(&a).unwrap();
    f.seek(SeekFrom::Start(6)).unwrap();
    let mut s = String::new();
    f.read_to_string(&mut s).unwrap();
    assert_eq!(s, "shim\nsecond line\n");
    assert_eq!(std::fs::metadata(&a).unwrap().len(), 23);
    let b = dir.join("b.txt");
    std::fs::rename(&a, &b).unwrap();
    assert!(!a.exists() && b.exists());

    // libc open with O_CREAT: the variadic mode argument must reach the kernel intact.
    let c = dir.join("c.bin");
    // SAFETY: NUL-terminated path; O_CREAT with its mode argument.
    let fd = unsafe { libc::open(cstr(&c).as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o640) };
    assert!(fd >= 0, "open O_CREAT: errno {}", errno());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&c).unwrap().permissions().mode() & 0o777;
    // The umask can only clear bits.
    assert_eq!(mode & !0o640, 0, "mode {mode:o}");
    assert!(mode & 0o600 == 0o600, "mode {mode:o}");
    // SAFETY: fd is open; the buffer is valid for its length.
    let written = unsafe { libc::write(fd, b"0123456789".as_ptr().cast(), 10) };
    assert_eq!(written, 10);

    // dup, dup2, dup3 and fcntl(F_DUPFD_CLOEXEC) of a real file share its offset.
    // SAFETY: plain descriptor calls on descriptors this function owns.
    unsafe {
        let d1 = libc::dup(fd);
        assert!(d1 > fd);
        assert_eq!(libc::lseek(d1, 2, libc::SEEK_SET), 2);
        let d2 = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 100);
        assert!(d2 >= 100, "F_DUPFD_CLOEXEC: {d2} errno {}", errno());
        assert_eq!(
            libc::fcntl(d2, libc::F_GETFD) & libc::FD_CLOEXEC,
            libc::FD_CLOEXEC
        );
        let mut byte = 0u8;
        assert_eq!(libc::read(d2, (&mut byte as *mut u8).cast(), 1), 1);
        assert_eq!(byte, b'2');
        assert_eq!(libc::dup2(d1, 150), 150);
        assert_eq!(libc::dup3(d1, 151, libc::O_CLOEXEC), 151);
        assert_eq!(libc::read(151, (&mut byte as *mut u8).cast(), 1), 1);
        assert_eq!(byte, b'3');
        assert_eq!(
            libc::fcntl(fd, libc::F_GETFL) & libc::O_ACCMODE,
            libc::O_RDWR
        );
        for d in [d1, d2, 150, 151] {
            assert_eq!(libc::close(d), 0);
        }
        assert_eq!(libc::close(fd), 0);
        assert_eq!(libc::close(fd), -1);
        assert_eq!(errno(), libc::EBADF);
    }

    // openat relative to a directory descriptor.
    let dirf = std::fs::File::open(&dir).unwrap();
    // SAFETY: valid descriptor and NUL-terminated relative path.
    let fd = unsafe { libc::openat(dirf.as_raw_fd(), c"b.txt".as_ptr(), libc::O_RDONLY) };
    assert!(fd >= 0, "openat: errno {}", errno());
    // SAFETY: fd was just opened and is owned here.
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut s = String::new();
    f.read_to_string(&mut s).unwrap();
    assert_eq!(s, "hello shim\nsecond line\n");
    drop(f);

    // A shared file mapping: writes through it reach the file; an anonymous mapping works.
    let m = dir.join("m.bin");
    std::fs::write(&m, vec![0u8; 8192]).unwrap();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&m)
        .unwrap();
    // SAFETY: a fresh shared mapping of a file this function owns, used only below.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            8192,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            4096,
        );
        assert_ne!(p, libc::MAP_FAILED, "file mmap: errno {}", errno());
        std::ptr::write_bytes(p.cast::<u8>(), 0xAB, 4096);
        assert_eq!(libc::munmap(p, 8192), 0);
        let a = libc::mmap(
            std::ptr::null_mut(),
            1 << 20,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(a, libc::MAP_FAILED);
        *a.cast::<u64>() = 7;
        assert_eq!(libc::munmap(a, 1 << 20), 0);
    }
    drop(f);
    let bytes = std::fs::read(&m).unwrap();
    assert!(bytes[..4096].iter().all(|&b| b == 0) && bytes[4096..].iter().all(|&b| b == 0xAB));

    // A pipe, and an ioctl on a real descriptor (FIONREAD) through the variadic ioctl.
    let mut fds = [0; 2];
    // SAFETY: fds has room for two descriptors; the buffers are valid.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        assert_eq!(libc::write(fds[1], b"abc".as_ptr().cast(), 3), 3);
        let mut n: libc::c_int = 0;
        assert_eq!(libc::ioctl(fds[0], libc::FIONREAD, &mut n), 0);
        assert_eq!(n, 3);
        libc::close(fds[0]);
        libc::close(fds[1]);
    }

    // A child process inherits the preload and still does ordinary I/O.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "echo from-sh > '{0}/sh.txt' && cat '{0}/sh.txt'",
            dir.display()
        ))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout, b"from-sh\n");

    std::fs::remove_dir_all(&dir).unwrap();
    println!("file-io: all checks passed");
}

#[test]
fn device_node_appears_under_the_shim() {
    match role().as_deref() {
        Some("device") => return device_child(Target::Trn1),
        Some("device-trn2") => return device_child(Target::Trn2),
        Some(_) => return,
        None => {}
    }
    let (ok, stdout, stderr) = run_child("device_node_appears_under_the_shim", "device", &[]);
    assert!(ok, "child failed under the shim:\n{stdout}\n{stderr}");
    assert!(stdout.contains("device: all checks passed"), "{stdout}");
    let (ok, stdout, stderr) = run_child(
        "device_node_appears_under_the_shim",
        "device-trn2",
        &[
            ("NRT_EMU_SHIM_TARGET", "trn2"),
            ("NRT_EMU_SHIM_LOG", "1"),
            ("NRT_EMU_SHIM_DEVICES", "2"),
        ],
    );
    assert!(ok, "child failed under the shim:\n{stdout}\n{stderr}");
    assert!(stdout.contains("device: all checks passed"), "{stdout}");
    // The log names the calls it answered.
    assert!(
        stderr.contains("ioctl(") && stderr.contains("DEVICE_BASIC_INFO"),
        "{stderr}"
    );
}

fn device_child(target: Target) {
    let arch = match target {
        Target::Trn1 => abi::Arch::V2,
        Target::Trn2 => abi::Arch::V3,
    };
    // SAFETY: descriptor calls on descriptors this function owns (the whole block); each
    // ioctl's argument is a properly sized, initialised struct of that request.
    unsafe {
        let fd = libc::open(c"/dev/neuron0".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        assert!(fd >= 0, "open /dev/neuron0: errno {}", errno());
        assert_eq!(
            libc::fcntl(fd, libc::F_GETFD) & libc::FD_CLOEXEC,
            libc::FD_CLOEXEC
        );
        let mut info = abi::DeviceBasicInfo::default();
        let req = Ioctl::DeviceBasicInfo.request() as libc::c_ulong;
        assert_eq!(libc::ioctl(fd, req, info.as_mut_bytes().as_mut_ptr()), 0);
        assert_eq!(info.architecture, arch as u32);

        // A duplicate shares the open file and outlives the original.
        let d = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0);
        assert!(d >= 0);
        assert_eq!(libc::close(fd), 0);
        let mut info = abi::DeviceBasicInfo::default();
        assert_eq!(libc::ioctl(d, req, info.as_mut_bytes().as_mut_ptr()), 0);
        assert_eq!(info.architecture, arch as u32);
        // An unknown request number: the driver's EINVAL.
        assert_eq!(libc::ioctl(d, 0xDEAD_BEEF, std::ptr::null_mut::<u8>()), -1);
        assert_eq!(errno(), libc::EINVAL);
        assert_eq!(libc::close(d), 0);
        // Closed: EBADF, from the real kernel now.
        assert_eq!(libc::ioctl(d, req, info.as_mut_bytes().as_mut_ptr()), -1);
        assert_eq!(errno(), libc::EBADF);
    }
    // Discovery sees the configured number of nodes (one by default; the shim hides any real
    // device); a node beyond them does not exist.
    let count: u32 = std::env::var("NRT_EMU_SHIM_DEVICES").map_or(1, |s| s.parse().unwrap());
    assert_eq!(
        nrt_hal::driver::discover(&RealSyscalls),
        (0..count).collect::<Vec<_>>()
    );
    // The nodes exist for stat/statx/access too, as character devices; the next one does not.
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    for i in 0..count {
        let md = std::fs::metadata(format!("/dev/neuron{i}")).unwrap();
        assert!(md.file_type().is_char_device());
        assert_eq!(md.rdev() & 0xff, u64::from(i));
    }
    assert!(!Path::new(&format!("/dev/neuron{count}")).exists());
    // SAFETY: NUL-terminated path.
    let access = unsafe { libc::access(c"/dev/neuron0".as_ptr(), libc::R_OK | libc::W_OK) };
    assert_eq!(access, 0);
    let sh = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "test -c /dev/neuron0 && ! test -e /dev/neuron{count}"
        ))
        .status()
        .unwrap();
    assert!(sh.success(), "a child shell sees the nodes");
    let beyond = CString::new(format!("/dev/neuron{count}")).unwrap();
    // SAFETY: NUL-terminated path, no O_CREAT.
    assert_eq!(unsafe { libc::open(beyond.as_ptr(), libc::O_RDWR) }, -1);
    assert_eq!(errno(), libc::ENOENT);

    // The driver backend over the process's own libc: allocate, map, write through the
    // mapping, read back with MEM_BUF_COPY64, free.
    let hal = DriverHal::open(0, Arc::new(RealSyscalls)).expect("driver backend opens");
    assert_eq!(hal.device_info().unwrap().target, target);
    let h = hal
        .mem_alloc(&AllocRequest {
            size: 3 * 4096,
            align: 0,
            location: MemLocation::Device { channel: 0 },
            nc: NcIndex(0),
            category: abi::MemAllocCategory::TensorsDevice,
        })
        .unwrap();
    // SAFETY: no device work touches this allocation; the mapping is used only here.
    let m = unsafe { hal.map(h) }.unwrap();
    assert_eq!(m.len, 3 * 4096);
    // SAFETY: within the mapping, nothing else accesses it.
    unsafe { std::ptr::write_bytes(m.ptr.as_ptr().add(4096), 0x5A, 4096) };
    let mut back = vec![0u8; 4096];
    hal.copy_from_device(h, 4096, &mut back).unwrap();
    assert!(back.iter().all(|&b| b == 0x5A));
    // Copy bounds are the driver's: past the end is refused.
    assert!(hal.copy_from_device(h, 3 * 4096 - 8, &mut back).is_err());
    // SAFETY: the mapping came from `map` and is not used afterwards.
    unsafe { hal.unmap(m) }.unwrap();
    hal.mem_free(h).unwrap();
    assert!(hal.mem_free(h).is_err(), "double free is refused");
    drop(hal);
    println!("device: all checks passed");
}

#[test]
fn a_bad_shim_configuration_fails_the_open_clearly() {
    match role().as_deref() {
        Some("bad-config") => {
            // SAFETY: NUL-terminated path, no O_CREAT.
            let fd = unsafe { libc::open(c"/dev/neuron0".as_ptr(), libc::O_RDWR) };
            assert_eq!(fd, -1);
            assert_eq!(errno(), libc::ENODEV);
            // Ordinary files still work.
            assert!(std::fs::read(std::env::current_exe().unwrap()).is_ok());
            println!("bad-config: all checks passed");
            return;
        }
        Some(_) => return,
        None => {}
    }
    let (ok, stdout, stderr) = run_child(
        "a_bad_shim_configuration_fails_the_open_clearly",
        "bad-config",
        &[("NRT_EMU_SHIM_TARGET", "trn9")],
    );
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("bad-config: all checks passed"), "{stdout}");
    assert!(
        stderr.contains("NRT_EMU_SHIM_TARGET=\"trn9\" is not a target"),
        "{stderr}"
    );
}
