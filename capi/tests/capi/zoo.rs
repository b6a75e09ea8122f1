//! Every executable zoo model through the C API gives byte-identical outputs to `nrt-emu run`
//! with the same inputs: on the simulator, and on the driver backend under the device shim.

use std::path::Path;
use std::process::Command;

use nrt_fixtures::{zoo, GOLDEN_SEED};
use nrt_runtime::manifest::{npy_bytes, npy_data_range};

use crate::support::{artifact, compile, have, link_flags, run, scratch};
use nrt_fixtures::artifact::describe;

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
            let shape: Vec<u64> = spec.shape.iter().map(|&d| d as u64).collect();
            std::fs::write(&f, npy_bytes(spec.dtype, &shape, data).unwrap()).unwrap();
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
        assert!(o.status.success(), "{id}: nrt-emu run: {}", describe(&o));
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
            assert!(o.status.success(), "{id} on {backend}: {}", describe(&o));
            for spec in &m.outputs {
                let got = std::fs::read(out_dir.join(format!("{}.bin", spec.name))).unwrap();
                let want = std::fs::read(want_dir.join(format!("{}.npy", spec.name)))
                    .unwrap_or_else(|e| panic!("{id}: {} of nrt-emu run: {e}", spec.name));
                let data = npy_data_range(&spec.name, &want)
                    .unwrap()
                    .expect("a plain .npy");
                assert!(
                    got == want[data],
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
