//! End-to-end tests of the `nrt-emu` command line.

fn nrt_emu(args: &[&str]) -> (bool, String, String) {
    let r = crate::support::nrt_emu(args);
    (r.ok, r.stdout, r.stderr)
}

#[test]
fn help_lists_subcommands() {
    let (ok, out, _) = nrt_emu(&["--help"]);
    assert!(ok);
    for cmd in ["target", "disasm", "mmio"] {
        assert!(out.contains(cmd), "--help does not mention {cmd}:\n{out}");
    }
}

#[test]
fn target_tables_print_as_text_and_json() {
    let (ok, out, _) = nrt_emu(&["target", "--target", "trn2"]);
    assert!(ok);
    assert!(out.contains("cayman"), "{out}");
    assert!(out.contains("sbuf: 128 partitions x 224 KiB"), "{out}");
    let (ok, out, _) = nrt_emu(&["target", "--target", "trn1", "--json"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["nc_count"], 2);
    assert_eq!(v["sbuf"]["partition_bytes"], 192 * 1024);
    assert_eq!(v["hbm"][1]["base"], 0x10_0000_0000u64);
}

#[test]
fn mmio_names_registers_and_refuses_unmapped() {
    let (ok, out, _) = nrt_emu(&["mmio", "0xFFFC2701814"]);
    assert!(ok);
    assert_eq!(out.trim(), "sem_inc[nc0:5]");
    let (ok, out, _) = nrt_emu(&["mmio", "0x1001000"]);
    assert!(ok);
    assert_eq!(out.trim(), "hbm[ch0+0x1001000]");
    let (ok, _, err) = nrt_emu(&["mmio", "0x7000000000000"]);
    assert!(!ok);
    assert!(err.contains("not mapped"), "{err}");
}

#[test]
fn disasm_rejects_a_partial_record() {
    let dir = std::env::temp_dir().join(format!("nrt-emu-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.bin");
    std::fs::write(&f, [0xB1u8, 0x10, 0, 0]).unwrap();
    let (ok, _, err) = nrt_emu(&["disasm", f.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("not a whole number"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn disasm_prints_one_line_per_record() {
    use nrt_emu::hal::isa::{encode_stream, Instruction};
    use nrt_emu::hal::DeviceAddr;
    let bytes = encode_stream(&[
        Instruction::StreamHeader,
        Instruction::Write {
            addr: DeviceAddr::new(0xFFF_C270_1814),
            value: 1,
        },
        Instruction::End,
    ])
    .unwrap();
    let dir = std::env::temp_dir().join(format!("nrt-emu-cli-ok-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("SP.bin");
    std::fs::write(&f, bytes).unwrap();
    let (ok, out, err) = nrt_emu(&["disasm", f.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(
        out,
        "0000: header\n0001: write [0xfffc2701814] <- 0x1\n0002: end\n"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_and_inspect_refuse_non_regular_files_at_once() {
    for (cmd, path) in [
        ("run", "/dev/zero"),
        ("inspect", "/dev/urandom"),
        ("conform", "/dev/zero"),
    ] {
        let t = std::time::Instant::now();
        let (ok, _, err) = nrt_emu(&[cmd, path]);
        assert!(!ok, "{cmd} {path}");
        assert!(
            err.contains(path) && err.contains("not a regular file"),
            "{cmd}: {err}"
        );
        assert!(
            t.elapsed() < std::time::Duration::from_secs(10),
            "{cmd} {path} read the device"
        );
    }
    let dir = std::env::temp_dir().join(format!("nrt-cli-limit-{}", std::process::id()));
    std::fs::write(&dir, vec![0u8; 4096]).unwrap();
    let out = crate::support::nrt_emu_in(
        None,
        &[("NRT_EMU_MAX_NEFF_FILE_BYTES", "1000")],
        &["inspect", dir.to_str().unwrap()],
    );
    assert!(
        !out.ok && out.stderr.contains("more than the limit of 1000 bytes"),
        "{}",
        out.stderr
    );
    std::fs::remove_file(&dir).unwrap();
}

/// `libnrt.so` beside the binary under test, rebuilt first (`nrt_fixtures::artifact`).
fn libnrt() -> std::path::PathBuf {
    nrt_fixtures::artifact::built("nrt-capi", "libnrt.so")
}

#[test]
fn install_lays_out_the_library_and_headers_and_guards_a_real_libnrt() {
    libnrt();
    let prefix = std::env::temp_dir().join(format!("nrt-cli-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&prefix);
    let p = prefix.to_str().unwrap();
    let (ok, out, err) = nrt_emu(&["install", "--prefix", p]);
    assert!(ok, "{err}");
    let lib = prefix.join("lib");
    assert!(
        out.contains(&lib.join("libnrt.so.1").display().to_string()),
        "{out}"
    );
    assert_eq!(
        std::fs::read_link(lib.join("libnrt.so")).unwrap(),
        std::path::Path::new("libnrt.so.1")
    );
    for h in [
        "nrt/nrt.h",
        "nrt/nrt_async.h",
        "ndl/neuron_driver_shared_tensor_batch_op.h",
    ] {
        assert!(prefix.join("include").join(h).is_file(), "{h}");
        assert!(out.contains(h), "{out}");
    }
    // Reinstalling over our own library is fine; over someone else's needs --force.
    assert!(nrt_emu(&["install", "--prefix", p]).0);
    std::fs::write(lib.join("libnrt.so.1"), b"\x7fELF a real runtime").unwrap();
    let (ok, _, err) = nrt_emu(&["install", "--prefix", p]);
    assert!(
        !ok && err.contains("not nrt-emu's libnrt") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(lib.join("libnrt.so.1")).unwrap(),
        b"\x7fELF a real runtime"
    );
    assert!(nrt_emu(&["install", "--prefix", p, "--force"]).0);
    assert!(std::fs::metadata(lib.join("libnrt.so.1")).unwrap().len() > 1 << 20);
    std::fs::remove_dir_all(&prefix).unwrap();
}

#[test]
fn conform_takes_its_backend_from_the_environment_like_run() {
    let neff = nrt_fixtures::fixtures_dir().join("neffs/add.trn1.neff");
    let neff = neff.to_str().unwrap();
    for cmd in ["run", "conform"] {
        let sim = crate::support::nrt_emu_in(None, &[("NRT_EMU_BACKEND", "sim")], &[cmd, neff]);
        assert!(sim.ok, "{cmd}: {}", sim.stderr);
        // No Neuron device here: the driver backend is what the environment chose.
        let drv = crate::support::nrt_emu_in(None, &[("NRT_EMU_BACKEND", "driver")], &[cmd, neff]);
        assert!(!drv.ok, "{cmd} ran on a driver device");
        assert!(drv.stderr.contains("/dev/neuron0"), "{cmd}: {}", drv.stderr);
        // The flag wins over the environment.
        let flag = crate::support::nrt_emu_in(
            None,
            &[("NRT_EMU_BACKEND", "driver")],
            &[cmd, neff, "--backend", "sim"],
        );
        assert!(flag.ok, "{cmd}: {}", flag.stderr);
        let bad = crate::support::nrt_emu_in(None, &[("NRT_EMU_BACKEND", "bogus")], &[cmd, neff]);
        assert!(
            !bad.ok && bad.stderr.contains("NRT_EMU_BACKEND"),
            "{cmd}: {}",
            bad.stderr
        );
    }
}
