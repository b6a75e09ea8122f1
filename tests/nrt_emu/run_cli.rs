//! End-to-end tests of `nrt-emu run`: the binary loads a zoo NEFF on the simulator, executes it
//! and reports (and writes) its outputs.

use std::path::{Path, PathBuf};

use npyz::WriterBuilder;
use sha2::{Digest, Sha256};

use crate::support::CliRun as Out;

fn neff(name: &str) -> String {
    nrt_fixtures::fixtures_dir()
        .join("neffs")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

/// A fresh, empty scratch directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nrt-emu-run-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `nrt-emu run ARGS…`.
fn run_in(dir: Option<&Path>, env: &[(&str, &str)], args: &[&str]) -> Out {
    let args: Vec<&str> = std::iter::once("run").chain(args.iter().copied()).collect();
    crate::support::nrt_emu_in(dir, env, &args)
}

fn run(args: &[&str]) -> Out {
    run_in(None, &[], args)
}

fn run_ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(
        o.ok,
        "nrt-emu run {args:?} failed:\n{}{}",
        o.stdout, o.stderr
    );
    o.stdout
}

/// The `output NAME: …` lines of a report.
fn output_lines(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| l.starts_with("output "))
        .collect()
}

/// The checksum printed for output `name`.
fn printed_checksum(stdout: &str, name: &str) -> String {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("output {name}:")))
        .unwrap_or_else(|| panic!("no output line for {name}:\n{stdout}"));
    let at = line.find("sha256 ").expect("a checksum") + "sha256 ".len();
    line[at..at + 16].to_string()
}

fn write_f32_npy(path: &Path, shape: &[u64], data: &[f32]) {
    let bytes = nrt_emu::runtime::manifest::npy_bytes(
        nrt_emu::hal::Dtype::F32,
        shape,
        &nrt_emu::hal::le::f32_bytes(data),
    )
    .unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Deterministic test data with a fractional part, different per `salt`.
fn data(n: usize, salt: u32) -> Vec<f32> {
    (0..n as u32)
        .map(|i| ((i.wrapping_mul(2_654_435_761) ^ salt) % 2001) as f32 / 1000.0 - 1.0)
        .collect()
}

#[test]
fn add_writes_a_plus_b_and_prints_the_checksum_of_the_written_data() {
    let dir = scratch("add");
    let (a, b) = (data(128 * 512, 1), data(128 * 512, 7));
    write_f32_npy(&dir.join("a.npy"), &[128, 512], &a);
    write_f32_npy(&dir.join("b.npy"), &[128, 512], &b);
    let outdir = dir.join("out");
    let stdout = run_ok(&[
        &neff("add.trn1.neff"),
        "--input",
        &format!("a={}", dir.join("a.npy").display()),
        "--input",
        &format!("b={}", dir.join("b.npy").display()),
        "--output-dir",
        outdir.to_str().unwrap(),
    ]);
    assert!(
        stdout.contains("output out: f32 [128, 512] sha256 "),
        "{stdout}"
    );
    assert!(stdout.contains("cycles per iteration: nc0 "), "{stdout}");
    assert!(stdout.contains("iterations: 1"), "{stdout}");
    assert!(stdout.contains("host wall time: "), "{stdout}");

    let bytes = std::fs::read(outdir.join("out.npy")).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    assert_eq!(npy.shape(), &[128, 512]);
    assert_eq!(npy.dtype().descr(), "'<f4'");
    let got: Vec<f32> = npy.into_vec().unwrap();
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    assert_eq!(got, want);

    let raw: Vec<u8> = got.iter().flat_map(|v| v.to_le_bytes()).collect();
    let sha: String = Sha256::digest(&raw)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(printed_checksum(&stdout, "out"), sha[..16]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn iterations_and_async_print_the_same_checksum_as_one_sync_run() {
    let f = neff("matmul_bias_relu.trn1.neff");
    let once = run_ok(&[&f]);
    let three = run_ok(&[&f, "--iterations", "3"]);
    let async4 = run_ok(&[&f, "--async", "4", "--iterations", "6"]);
    assert!(!output_lines(&once).is_empty(), "{once}");
    assert_eq!(output_lines(&once), output_lines(&three));
    assert_eq!(output_lines(&once), output_lines(&async4));
    assert!(three.contains("iterations: 3 (sync)"), "{three}");
    assert!(
        async4.contains("iterations: 6 (async, 4 in flight)"),
        "{async4}"
    );
}

#[test]
fn seeded_inputs_are_deterministic_and_seed_dependent() {
    let f = neff("add.trn1.neff");
    let s0 = run_ok(&[&f]);
    assert!(
        s0.contains("input a: f32 [128, 512] seeded (seed 0)"),
        "{s0}"
    );
    assert_eq!(
        printed_checksum(&s0, "out"),
        printed_checksum(&run_ok(&[&f, "--seed", "0"]), "out")
    );
    assert_ne!(
        printed_checksum(&s0, "out"),
        printed_checksum(&run_ok(&[&f, "--seed", "1"]), "out")
    );
}

#[test]
fn nothing_is_written_without_output_dir() {
    let dir = scratch("nowrite");
    let o = run_in(Some(&dir), &[], &[&neff("add.trn1.neff")]);
    assert!(o.ok, "{}", o.stderr);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn trace_writes_chrome_json_with_trace_events() {
    let dir = scratch("trace");
    let trace = dir.join("t.json");
    run_ok(&[&neff("add.trn1.neff"), "--trace", trace.to_str().unwrap()]);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().expect("a traceEvents array");
    assert!(events.iter().any(|e| e["ph"] == "X"), "no spans in {v}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `add.trn1` with input `name` bound to `file`, which must fail.
fn add_refuses_input(name: &str, file: &Path) -> Out {
    let o = run(&[
        &neff("add.trn1.neff"),
        "--input",
        &format!("{name}={}", file.display()),
    ]);
    assert!(!o.ok, "add.trn1 ran with --input {name}={}", file.display());
    o
}

#[test]
fn a_mismatched_input_fails_naming_the_tensor_and_file() {
    let dir = scratch("badinput");
    let a = dir.join("a.npy");
    write_f32_npy(&a, &[128, 256], &data(128 * 256, 3));
    let o = add_refuses_input("a", &a);
    assert!(
        o.stderr.starts_with("nrt-emu: NRT_INVALID(2): "),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("input \"a\""), "{}", o.stderr);
    assert!(o.stderr.contains("a.npy"), "{}", o.stderr);
    assert!(
        o.stderr
            .contains("has shape [128, 256], the model expects [128, 512]"),
        "{}",
        o.stderr
    );

    // Right shape, wrong dtype.
    let f = std::io::BufWriter::new(std::fs::File::create(&a).unwrap());
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[128, 512])
        .writer(f)
        .begin_nd()
        .unwrap();
    w.extend(std::iter::repeat_n(0f64, 128 * 512)).unwrap();
    w.finish().unwrap();
    let o = add_refuses_input("a", &a);
    assert!(
        o.stderr
            .contains("has dtype <f8, the model expects f32 (<f4)"),
        "{}",
        o.stderr
    );

    // A tensor the model does not have.
    let o = add_refuses_input("c", &a);
    assert!(
        o.stderr.contains("the model has no input \"c\""),
        "{}",
        o.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_broken_neff_fails_with_its_nrt_status() {
    let dir = scratch("broken");
    let bytes = std::fs::read(neff("add.trn1.neff")).unwrap();
    let f = dir.join("cut.neff");
    std::fs::write(&f, &bytes[..bytes.len() / 2]).unwrap();
    let o = run(&[f.to_str().unwrap()]);
    assert!(!o.ok);
    assert!(o.stderr.starts_with("nrt-emu: NRT_"), "{}", o.stderr);
    assert!(o.stdout.is_empty(), "{}", o.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_driver_backend_fails_clearly_without_a_device_by_flag_or_environment() {
    // This machine has no Neuron device: the driver backend must say so, not pretend.
    const MSG: &str = "the driver backend cannot open /dev/neuron0";
    let f = neff("add.trn1.neff");
    let o = run(&[&f, "--backend", "driver"]);
    assert!(!o.ok);
    assert!(o.stderr.contains(MSG), "{}", o.stderr);
    assert!(o.stdout.is_empty(), "{}", o.stdout);

    let o = run_in(None, &[("NRT_EMU_BACKEND", "driver")], &[&f]);
    assert!(!o.ok);
    assert!(o.stderr.contains(MSG), "{}", o.stderr);

    // The flag wins over the environment.
    let o = run_in(
        None,
        &[("NRT_EMU_BACKEND", "driver")],
        &[&f, "--backend", "sim"],
    );
    assert!(o.ok, "{}", o.stderr);
    let o = run_in(None, &[("NRT_EMU_BACKEND", "fpga")], &[&f]);
    assert!(!o.ok);
    assert!(o.stderr.contains("NRT_EMU_BACKEND"), "{}", o.stderr);
}

#[test]
fn an_lnc2_model_runs_on_two_cores_of_a_trn2() {
    let stdout = run_ok(&[&neff("lnc2_add.trn2.neff")]);
    assert!(stdout.contains("target trn2"), "{stdout}");
    let cycles = stdout
        .lines()
        .find(|l| l.starts_with("cycles per iteration: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    let per_core: Vec<u64> = cycles["cycles per iteration: ".len()..]
        .split(", ")
        .map(|c| {
            let (count, time) = c.split_once(' ').unwrap().1.split_once(' ').unwrap();
            assert!(time.starts_with('(') && time.ends_with(" µs)"), "{c}");
            count.parse().unwrap()
        })
        .collect();
    assert_eq!(per_core.len(), 2, "{cycles}");
    assert!(per_core.iter().all(|c| *c > 0), "{cycles}");
    assert!(
        cycles.contains("nc0 ") && cycles.contains("nc1 "),
        "{cycles}"
    );
}
