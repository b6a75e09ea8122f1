//! What a program sees around the device nodes under the shim (docs/driver.md §13): listings of
//! `/dev` through every listing function (`opendir`/`readdir`/`readdir64`, `fdopendir`,
//! `scandir`, `glob`, Rust's `read_dir`, `ls` and a shell's `*`) show exactly the configured
//! nodes, and `fstatat` relative to a `/dev` descriptor finds them; the sysfs tree describes the
//! devices (core count, architecture, device name, connected devices, driver version), with
//! directories, class links, read-only attribute files and `find`/`ls -R` walking it; and
//! programs that touch no Neuron path print exactly what they print without the shim.
//!
//! As in `under_shim`, each test re-runs this binary under `LD_PRELOAD` in a role.

use crate::{errno, shim_path};
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::process::Command;

const ROLE: &str = "NRT_EMU_SHIM_LISTING_ROLE";

/// A private directory for published counters (so other test processes cannot interfere).
fn state_dir(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("nrt-emu-shim-state-{tag}-{}", std::process::id()))
}

/// Runs test `name` of this module as `role` under the shim with `env`, with a state
/// directory of its own.
fn run_child(name: &str, role: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    let state = state_dir(role);
    let state_var = ("NRT_EMU_SHIM_STATE_DIR", state.to_str().unwrap());
    let env: Vec<_> = [state_var].into_iter().chain(env.iter().copied()).collect();
    let r = crate::run_child(&format!("listing::{name}"), (ROLE, role), &env);
    let _ = std::fs::remove_dir_all(&state);
    r
}

fn role() -> Option<String> {
    std::env::var(ROLE).ok()
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// Names a `readdir`-style loop returns for a stream.
///
/// # Safety
///
/// `dir` is a live stream, closed here; `next` is `readdir` or `readdir64`.
unsafe fn drain(
    dir: *mut libc::DIR,
    next: unsafe extern "C" fn(*mut libc::DIR) -> *mut libc::dirent64,
) -> Vec<(String, u8)> {
    assert!(!dir.is_null(), "opendir: errno {}", errno());
    let mut v = Vec::new();
    loop {
        // SAFETY: the caller's stream.
        let e = unsafe { next(dir) };
        if e.is_null() {
            break;
        }
        // SAFETY: a returned entry has a NUL-terminated name.
        let name = unsafe { CStr::from_ptr((*e).d_name.as_ptr()) };
        // SAFETY: as above.
        v.push((name.to_string_lossy().into_owned(), unsafe { (*e).d_type }));
    }
    // SAFETY: closed once.
    unsafe { libc::closedir(dir) };
    v
}

extern "C" {
    fn readdir(dir: *mut libc::DIR) -> *mut libc::dirent64;
    fn readdir64(dir: *mut libc::DIR) -> *mut libc::dirent64;
    fn scandir(
        dir: *const libc::c_char,
        list: *mut *mut *mut libc::dirent64,
        filter: Option<unsafe extern "C" fn(*const libc::dirent64) -> libc::c_int>,
        compar: Option<
            unsafe extern "C" fn(
                *mut *const libc::dirent64,
                *mut *const libc::dirent64,
            ) -> libc::c_int,
        >,
    ) -> libc::c_int;
    fn alphasort64(a: *mut *const libc::dirent64, b: *mut *const libc::dirent64) -> libc::c_int;
}

fn neuron_names(v: &[(String, u8)]) -> Vec<String> {
    let mut n: Vec<String> = v
        .iter()
        .filter(|(n, _)| n.starts_with("neuron"))
        .map(|(n, _)| n.clone())
        .collect();
    n.sort();
    n
}

fn glob_paths(pattern: &str, flags: libc::c_int) -> Result<Vec<String>, libc::c_int> {
    // SAFETY: all-zero is a valid empty glob_t.
    let mut g: libc::glob_t = unsafe { std::mem::zeroed() };
    let p = c(pattern);
    // SAFETY: a NUL-terminated pattern and a glob_t this function frees below.
    let r = unsafe { libc::glob(p.as_ptr(), flags, None, &mut g) };
    let out = if r == 0 {
        Ok((0..g.gl_pathc)
            .map(|i| {
                // SAFETY: glob filled gl_pathc NUL-terminated paths.
                unsafe { CStr::from_ptr(*g.gl_pathv.add(i)) }
                    .to_string_lossy()
                    .into_owned()
            })
            .collect())
    } else {
        Err(r)
    };
    // SAFETY: freeing what glob allocated, once.
    unsafe { libc::globfree(&mut g) };
    out
}

fn sh(script: &str) -> String {
    let o = Command::new("sh").arg("-c").arg(script).output().unwrap();
    assert!(
        o.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn every_way_of_listing_dev_shows_the_nodes() {
    match role().as_deref() {
        Some("dev") => return dev_child(),
        Some(_) => return,
        None => {}
    }
    // The real listing, for the child to compare with (without any Neuron node).
    let real: Vec<String> = std::fs::read_dir("/dev")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("neuron"))
        .collect();
    let list = std::env::temp_dir().join(format!("nrt-emu-shim-devlist-{}", std::process::id()));
    std::fs::write(&list, real.join("\n")).unwrap();
    let (ok, stdout, stderr) = run_child(
        "every_way_of_listing_dev_shows_the_nodes",
        "dev",
        &[
            ("NRT_EMU_SHIM_DEVICES", "3"),
            ("NRT_EMU_SHIM_DEV_LIST", list.to_str().unwrap()),
        ],
    );
    let _ = std::fs::remove_file(&list);
    assert!(ok, "child failed under the shim:\n{stdout}\n{stderr}");
    assert!(stdout.contains("dev: all checks passed"), "{stdout}");
}

fn dev_child() {
    let want = vec!["neuron0", "neuron1", "neuron2"];
    // opendir/readdir and readdir64, however /dev is named.
    for path in ["/dev", "/dev/", "//dev", "/dev/."] {
        // SAFETY: a NUL-terminated path; the stream is drained and closed.
        let v = unsafe { drain(libc::opendir(c(path).as_ptr()), readdir) };
        assert_eq!(neuron_names(&v), want, "{path}");
        assert!(
            v.iter()
                .filter(|(n, _)| n.starts_with("neuron"))
                .all(|(_, t)| *t == libc::DT_CHR),
            "{path}: {v:?}"
        );
    }
    // SAFETY: as above.
    let v = unsafe { drain(libc::opendir(c("/dev").as_ptr()), readdir64) };
    assert_eq!(neuron_names(&v), want);
    // Everything else is the real listing.
    let real = std::fs::read_to_string(std::env::var("NRT_EMU_SHIM_DEV_LIST").unwrap()).unwrap();
    let mut real: Vec<&str> = real.lines().collect();
    real.sort();
    let mut others: Vec<&str> = v
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| !n.starts_with("neuron") && *n != "." && *n != "..")
        .collect();
    others.sort();
    assert_eq!(others, real, "the rest of /dev is untouched");

    // fdopendir of a descriptor of /dev, and fstatat relative to it.
    // SAFETY: a NUL-terminated path, no O_CREAT.
    let fd = unsafe { libc::open(c("/dev").as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
    assert!(fd >= 0);
    // SAFETY: all-zero is a valid struct stat; a descriptor this function owns.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        assert_eq!(libc::fstatat(fd, c("neuron2").as_ptr(), &mut st, 0), 0);
        assert_eq!(st.st_mode & libc::S_IFMT, libc::S_IFCHR);
        assert_eq!(libc::minor(st.st_rdev), 2);
        assert_eq!(libc::fstatat(fd, c("neuron3").as_ptr(), &mut st, 0), -1);
        assert_eq!(errno(), libc::ENOENT);
        // A real entry still resolves through the kernel.
        assert_eq!(libc::fstatat(fd, c("null").as_ptr(), &mut st, 0), 0);
        assert_eq!(st.st_rdev, libc::makedev(1, 3));
        let d = libc::fdopendir(fd);
        assert_eq!(neuron_names(&drain(d, readdir)), want);
    }

    // scandir with alphasort, and with a filter.
    let mut list: *mut *mut libc::dirent64 = std::ptr::null_mut();
    // SAFETY: a NUL-terminated path and an out-pointer; the entries are freed below.
    let n = unsafe { scandir(c("/dev").as_ptr(), &mut list, None, Some(alphasort64)) };
    assert!(n > 3, "scandir: {n} errno {}", errno());
    let names: Vec<String> = (0..n as usize)
        .map(|i| {
            // SAFETY: scandir returned `n` entries.
            let e = unsafe { *list.add(i) };
            // SAFETY: a returned entry has a NUL-terminated name.
            let s = unsafe { CStr::from_ptr((*e).d_name.as_ptr()) }
                .to_string_lossy()
                .into_owned();
            // SAFETY: each entry is the caller's to free, once.
            unsafe { libc::free(e.cast()) };
            s
        })
        .collect();
    // SAFETY: the array is the caller's to free.
    unsafe { libc::free(list.cast()) };
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "alphasort order");
    assert_eq!(
        neuron_names(&names.iter().map(|n| (n.clone(), 0)).collect::<Vec<_>>()),
        want
    );
    unsafe extern "C" fn only_neuron(e: *const libc::dirent64) -> libc::c_int {
        // SAFETY: scandir passes entries with NUL-terminated names.
        let n = unsafe { CStr::from_ptr((*e).d_name.as_ptr()) };
        n.to_bytes().starts_with(b"neuron") as libc::c_int
    }
    // SAFETY: as above.
    let n = unsafe {
        scandir(
            c("/dev").as_ptr(),
            &mut list,
            Some(only_neuron),
            Some(alphasort64),
        )
    };
    assert_eq!(n, 3);
    for i in 0..3 {
        // SAFETY: three entries, each freed once, then the array.
        unsafe { libc::free((*list.add(i)).cast()) };
    }
    // SAFETY: as above.
    unsafe { libc::free(list.cast()) };

    // glob(3).
    assert_eq!(
        glob_paths("/dev/neuron*", 0).unwrap(),
        ["/dev/neuron0", "/dev/neuron1", "/dev/neuron2"]
    );
    assert_eq!(
        glob_paths("/dev/neuron[12]", libc::GLOB_MARK).unwrap(),
        ["/dev/neuron1", "/dev/neuron2"]
    );
    assert_eq!(glob_paths("/dev/neuron3*", 0), Err(libc::GLOB_NOMATCH));
    assert!(glob_paths("/dev/nul*", 0)
        .unwrap()
        .contains(&"/dev/null".to_string()));

    // Rust's read_dir, ls, and a shell's glob.
    let mut rs: Vec<String> = std::fs::read_dir("/dev")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("neuron"))
        .collect();
    rs.sort();
    assert_eq!(rs, want);
    assert_eq!(
        sh("ls /dev/neuron*"),
        "/dev/neuron0\n/dev/neuron1\n/dev/neuron2\n"
    );
    assert_eq!(
        sh("ls /dev | grep '^neuron'"),
        "neuron0\nneuron1\nneuron2\n"
    );
    assert_eq!(sh("cd /dev && echo neuron*"), "neuron0 neuron1 neuron2\n");
    // Relative to a working directory of /dev, in this process and in a shell's children.
    let long = sh("cd /dev && ls -l neuron2 && test -c neuron1 && ! test -e neuron3 && echo ok");
    assert!(
        long.starts_with("crw-rw-rw-") && long.ends_with("ok\n"),
        "{long}"
    );
    let long = sh("ls -l /dev/neuron1");
    assert!(
        long.starts_with("crw-rw-rw-") && long.contains("240, 1"),
        "{long}"
    );
    assert_eq!(
        sh("find /dev -maxdepth 1 -name 'neuron*' | sort"),
        "/dev/neuron0\n/dev/neuron1\n/dev/neuron2\n"
    );
    println!("dev: all checks passed");
}

#[test]
fn the_sysfs_tree_describes_the_devices() {
    match role().as_deref() {
        Some("sysfs") => return sysfs_child(),
        Some(_) => return,
        None => {}
    }
    let (ok, stdout, stderr) = run_child(
        "the_sysfs_tree_describes_the_devices",
        "sysfs",
        &[
            ("NRT_EMU_SHIM_DEVICES", "2"),
            ("NRT_EMU_SHIM_TARGET", "trn2"),
        ],
    );
    assert!(ok, "child failed under the shim:\n{stdout}\n{stderr}");
    assert!(stdout.contains("sysfs: all checks passed"), "{stdout}");
}

fn read(p: &str) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn sysfs_child() {
    let d1 = "/sys/devices/virtual/neuron_device/neuron1";
    assert_eq!(read(&format!("{d1}/core_count")), "8");
    assert_eq!(read(&format!("{d1}/connected_devices")), "0\n");
    assert_eq!(read(&format!("{d1}/dev")), "240:1\n");
    assert_eq!(
        read(&format!("{d1}/info/architecture/device_name")),
        "Trainium2\n"
    );
    assert_eq!(read(&format!("{d1}/info/architecture/arch_type")), "NDv3\n");
    assert_eq!(
        read(&format!("{d1}/info/architecture/instance_type")),
        "Trn2\n"
    );
    assert_eq!(
        read(&format!("{d1}/neuron_core7/info/architecture/arch_type")),
        "NCv3\n"
    );
    assert_eq!(read("/sys/module/neuron/version"), "2.24.7.0\n");
    assert_eq!(read(&format!("{d1}/info/runtime_version")), "2.30.50.0\n");
    assert_eq!(
        read("/sys/class/neuron_device/neuron0/neuron_core3/stats/memory_usage/device_mem/total"),
        "0\n"
    );
    // The class links.
    let link = Path::new("/sys/class/neuron_device/neuron1");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert!(link.is_dir());
    assert_eq!(
        std::fs::read_link(link).unwrap(),
        Path::new("../../devices/virtual/neuron_device/neuron1")
    );
    // Listings: the parents gain the tree's entry; the tree's directories list their entries.
    let names = |p: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(p)
            .unwrap_or_else(|e| panic!("{p}: {e}"))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    if Path::new("/sys/class").is_dir() {
        assert!(names("/sys/class").contains(&"neuron_device".to_string()));
        assert!(names("/sys/module").contains(&"neuron".to_string()));
    }
    assert_eq!(names("/sys/class/neuron_device"), ["neuron0", "neuron1"]);
    assert_eq!(names("/sys/module/neuron"), ["initstate", "version"]);
    let cores = names(d1)
        .into_iter()
        .filter(|n| n.starts_with("neuron_core"))
        .count();
    assert_eq!(cores, 8);
    assert!(names(&format!("{d1}/neuron_core0/stats/status")).contains(&"success".to_string()));
    // Files are read-only; nothing can be created; missing paths are missing.
    let counter = format!("{d1}/neuron_core0/stats/status/success/total");
    let e = std::fs::OpenOptions::new()
        .write(true)
        .open(&counter)
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EACCES));
    let e = std::fs::write(format!("{d1}/new_file"), "x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EACCES));
    let e = std::fs::read_to_string(format!("{d1}/neuron_core8/info")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
    let e = std::fs::read_to_string(format!("{d1}/core_count/x")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOTDIR));
    // SAFETY: NUL-terminated paths.
    unsafe {
        assert_eq!(libc::access(c(&counter).as_ptr(), libc::R_OK), 0);
        assert_eq!(libc::access(c(&counter).as_ptr(), libc::W_OK), -1);
    }
    // stdio reads a file too.
    let p = c(&format!("{d1}/core_count"));
    // SAFETY: NUL-terminated path and mode; the stream is read and closed here.
    unsafe {
        let f = libc::fopen(p.as_ptr(), c"r".as_ptr());
        assert!(!f.is_null(), "fopen: errno {}", errno());
        let mut buf = [0u8; 16];
        let n = libc::fread(buf.as_mut_ptr().cast(), 1, buf.len(), f);
        assert_eq!(&buf[..n], b"8");
        libc::fclose(f);
        assert!(libc::fopen(p.as_ptr(), c"w".as_ptr()).is_null());
    }
    // Shell tools walk it.
    assert_eq!(sh("cat /sys/class/neuron_device/neuron0/core_count"), "8");
    let status_files = sh(&format!(
        "find {d1}/neuron_core0/stats/status -name total | wc -l"
    ));
    assert_eq!(status_files.trim(), "24");
    let all = sh("find /sys/class/neuron_device/neuron0/ | wc -l");
    assert!(all.trim().parse::<u32>().unwrap() > 500, "{all}");
    let l = sh("ls -l /sys/class/neuron_device/");
    assert!(
        l.contains("neuron1 -> ../../devices/virtual/neuron_device/neuron1"),
        "{l}"
    );
    let r = sh("ls -R /sys/module/neuron");
    assert!(r.contains("initstate") && r.contains("version"), "{r}");
    assert_eq!(
        sh("test -d /sys/devices/virtual/neuron_device/neuron1 && test -f /sys/module/neuron/version && test -L /sys/class/neuron_device/neuron0 && echo ok"),
        "ok\n"
    );
    // A working directory in the tree: relative paths, getcwd, and a shell's children.
    let here = std::env::current_dir().unwrap();
    std::env::set_current_dir("/sys/class/neuron_device/neuron1/neuron_core2").unwrap();
    assert_eq!(
        std::env::current_dir().unwrap(),
        PathBuf::from(format!("{d1}/neuron_core2"))
    );
    assert_eq!(read("info/architecture/arch_type"), "NCv3\n");
    assert_eq!(read("../core_count"), "8");
    assert_eq!(
        std::fs::read_dir("stats").unwrap().count(),
        3,
        "status, memory_usage, other_info"
    );
    std::env::set_current_dir(&here).unwrap();
    assert_eq!(std::env::current_dir().unwrap(), here);
    assert_eq!(
        sh("cd /sys/class/neuron_device/neuron1 && cat core_count && echo && pwd -P && cat neuron_core0/info/architecture/arch_type && ls | grep -c neuron_core"),
        format!("8\n{d1}\nNCv3\n8\n")
    );
    println!("sysfs: all checks passed");
}

/// Commands that list and read ordinary paths, whose output must not change under the shim.
fn ordinary_commands(dir: &Path) -> Vec<String> {
    let d = dir.display();
    let mut v = vec![
        format!("ls -la {d}"),
        format!("ls -laR {d}"),
        format!("find {d} | sort"),
        format!("cd {d} && echo * sub/*"),
        format!("stat -c '%n %s %F %a' {d}/a.txt {d}/sub {d}/link"),
        format!("readlink {d}/link; cat {d}/sub/b.txt"),
        "ls -1 /etc | head -50".to_string(),
        "ls /usr/bin | wc -l".to_string(),
    ];
    if Command::new("python3").arg("--version").output().is_ok() {
        v.push(format!(
            "python3 -c 'import os, glob; d={d:?}; print(sorted(os.listdir(d)), sorted(glob.glob(d + \"/**\", recursive=True)), sorted(e.name for e in os.scandir(d)), os.path.realpath(d + \"/link\"))'"
        ));
    }
    v
}

#[test]
fn programs_that_touch_no_neuron_path_see_no_difference() {
    if role().is_some() {
        return;
    }
    // Inside a private parent: `ls -la` shows `..`'s link count, which another process
    // creating a directory in /tmp between the two runs would change.
    let parent = std::env::temp_dir().join(format!("nrt-emu-shim-plain-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&parent);
    let dir = parent.join("tree");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(dir.join("sub/b.txt"), "beta\n").unwrap();
    std::os::unix::fs::symlink("sub/b.txt", dir.join("link")).unwrap();
    let state = state_dir("plain");
    for cmd in ordinary_commands(&dir) {
        let run = |shim: bool| {
            let mut c = Command::new("sh");
            c.arg("-c").arg(&cmd).env("NRT_EMU_SHIM_STATE_DIR", &state);
            if shim {
                c.env("LD_PRELOAD", shim_path());
            } else {
                c.env_remove("LD_PRELOAD");
            }
            let o = c.output().unwrap();
            (o.status.code(), o.stdout, o.stderr)
        };
        let (without, with) = (run(false), run(true));
        assert_eq!(
            with,
            without,
            "{cmd}: differs under the shim\nwith:\n{}\nwithout:\n{}",
            String::from_utf8_lossy(&with.1),
            String::from_utf8_lossy(&without.1)
        );
        assert_eq!(
            without.0,
            Some(0),
            "{cmd}: {}",
            String::from_utf8_lossy(&without.2)
        );
    }
    // No process emulated a device, so nothing was published.
    assert!(!state.exists(), "{} was created", state.display());
    std::fs::remove_dir_all(&parent).unwrap();
}
