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
