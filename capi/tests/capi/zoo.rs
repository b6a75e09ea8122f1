//! Every executable zoo model through the C API gives byte-identical outputs to `nrt-emu run`
//! with the same inputs: on the simulator, and on the driver backend under the device shim.

use std::path::Path;
use std::process::Command;

use nrt_fixtures::{zoo, GOLDEN_SEED};
use nrt_hal::Dtype;

use crate::support::{artifact, compile, have, link_flags, run, scratch, text};

fn descr(d: Dtype) -> &'static str {
    match d {
        Dtype::F32 | Dtype::F32r => "<f4",
        Dtype::F16 => "<f2",
        Dtype::Bf16 | Dtype::U16 => "<u2",
        Dtype::Fp8E3 | Dtype::Fp8E4 | Dtype::Fp8E5 | Dtype::U8 => "|u1",
        Dtype::I8 => "|i1",
        Dtype::I16 => "<i2",
        Dtype::I32 => "<i4",
        Dtype::U32 => "<u4",
        Dtype::I64 => "<i8",
        Dtype::U64 => "<u8",
    }
}

/// An `.npy` (version 1) of `data`.
fn npy(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let dims = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(data);
    out
}

/// The data bytes of an `.npy` file.
fn npy_data(bytes: &[u8]) -> &[u8] {
    assert_eq!(&bytes[..6], b"\x93NUMPY");
    let (len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        _ => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
    };
    &bytes[start + len..]
}

#[test]
fn zoo_models_through_the_c_api_match_nrt_emu_run_on_sim_and_driver() {
    if !have("cc") {
        return;
    }
    let nrt_emu = artifact("nrt-emu", "nrt-emu");
    let shim = artifact("nrt-emu-shim", "libnrt_emu_shim.so");
    let bin = compile(
        "cc",
        "zoo.c",
        "c11",
        &link_flags().iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let mut ran = 0;
    for m in zoo::all().into_iter().filter(|m| m.executable) {
        let id = m.id();
        let dir = scratch(&format!("zoo-{id}"));
        let neff = dir.join(m.file_name());
        std::fs::write(&neff, &m.neff).unwrap();
        let inputs = m.generate_inputs(GOLDEN_SEED);
        let mut args = vec![
            "run".to_string(),
            neff.display().to_string(),
            "--iterations".into(),
            "2".into(),
        ];
        for (spec, data) in m.inputs.iter().zip(&inputs) {
            std::fs::write(dir.join(format!("{}.bin", spec.name)), data).unwrap();
            let f = dir.join(format!("{}.npy", spec.name));
            std::fs::write(&f, npy(descr(spec.dtype), &spec.shape, data)).unwrap();
            args.push("--input".into());
            args.push(format!("{}={}", spec.name, f.display()));
        }
        let want_dir = dir.join("want");
        args.push("--output-dir".into());
        args.push(want_dir.display().to_string());
        let o = Command::new(&nrt_emu)
            .args(&args)
            .env_remove("NRT_EMU_BACKEND")
            .output()
            .unwrap();
        assert!(o.status.success(), "{id}: nrt-emu run: {}", text(&o));
        let target = m.target.name();
        let sim_env = [("NRT_EMU_TARGET", target)];
        let drv_env = [
            ("NRT_EMU_BACKEND", "driver"),
            ("NRT_EMU_SHIM_TARGET", target),
            ("LD_PRELOAD", shim.to_str().unwrap()),
        ];
        for (backend, env) in [("sim", &sim_env[..]), ("driver", &drv_env[..])] {
            let out_dir = dir.join(backend);
            std::fs::create_dir_all(&out_dir).unwrap();
            let o = run(
                &bin,
                &[
                    neff.to_str().unwrap(),
                    dir.to_str().unwrap(),
                    out_dir.to_str().unwrap(),
                    "2",
                ],
                env,
            );
            assert!(o.status.success(), "{id} on {backend}: {}", text(&o));
            for spec in &m.outputs {
                let got = std::fs::read(out_dir.join(format!("{}.bin", spec.name))).unwrap();
                let want = std::fs::read(want_dir.join(format!("{}.npy", spec.name)))
                    .unwrap_or_else(|e| panic!("{id}: {} of nrt-emu run: {e}", spec.name));
                assert!(
                    got == npy_data(&want),
                    "{id} on {backend}: output {} differs from nrt-emu run",
                    spec.name
                );
            }
        }
        ran += 1;
    }
    assert!(ran >= 10, "only {ran} zoo models ran");
    let _ = Path::new("");
}
