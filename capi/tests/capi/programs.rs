//! C, C++ and Python programs against the installed prefix: the layout test, every function
//! on success and error paths, C++17, dlopen by SONAME, ctypes.

use crate::support::{compile, have, link_flags, neff, prefix, run, scratch};
use nrt_fixtures::artifact::describe;

fn flags() -> Vec<String> {
    link_flags()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn every_header_compiles_alone_as_c11_and_cxx17() {
    if !have("cc") || !have("c++") {
        return;
    }
    let dir = scratch("headers");
    for (rel, _) in nrt::headers::HEADERS {
        for (compiler, std, ext) in [("cc", "c11", "c"), ("c++", "c++17", "cpp")] {
            let src = dir.join(format!("{}.{ext}", rel.replace('/', "_")));
            std::fs::write(
                &src,
                format!("#include \"{rel}\"\nint main(void) {{ return 0; }}\n"),
            )
            .unwrap();
            let o = std::process::Command::new(compiler)
                .arg(format!("-std={std}"))
                .args([
                    "-Wall",
                    "-Wextra",
                    "-Werror",
                    "-pedantic-errors",
                    "-fsyntax-only",
                ])
                .arg(format!("-I{}", prefix().join("include").display()))
                .arg(&src)
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{rel} as {std}:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
}

#[test]
fn struct_layouts_and_enum_values_match_the_abi_in_c_and_cxx() {
    if !have("cc") || !have("c++") {
        return;
    }
    for (compiler, std) in [("cc", "c11"), ("c++", "c++17")] {
        let bin = if compiler == "cc" {
            compile(compiler, "layout.c", std, &[])
        } else {
            compile(compiler, "layout.c", std, &["-x", "c++"])
        };
        let o = run(&bin, &[], &[]);
        assert!(o.status.success(), "{compiler}: {}", describe(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("layout ok"));
    }
}

#[test]
fn every_function_on_success_and_error_paths_from_c() {
    if !have("cc") {
        return;
    }
    let f = flags();
    let bin = compile("cc", "api.c", "c11", &refs(&f));
    for (model, target) in [("add.trn1.neff", "trn1"), ("add.trn2.neff", "trn2")] {
        let dir = scratch(&format!("api-{target}"));
        let o = run(
            &bin,
            &[neff(model).to_str().unwrap(), dir.to_str().unwrap()],
            &[("NRT_EMU_TARGET", target)],
        );
        assert!(o.status.success(), "{target}: {}", describe(&o));
        let stderr = String::from_utf8_lossy(&o.stderr);
        // Each refused call logs one line in libnrt's format, naming the function.
        assert!(
            stderr
                .lines()
                .all(|l| l.contains("  NRT:") || l.contains("  SIM:")),
            "{stderr}"
        );
        assert!(stderr.contains("ERROR   NRT:nrt_tensor_free"), "{stderr}");
        assert!(stderr.contains("already freed"), "{stderr}");
    }
}

#[test]
fn bad_environment_fails_nrt_init_naming_the_variable() {
    if !have("cc") {
        return;
    }
    let f = flags();
    let bin = compile("cc", "zoo.c", "c11", &refs(&f));
    let dir = scratch("badenv");
    let d = dir.to_str().unwrap();
    let model = neff("add.trn1.neff");
    for (var, value) in [
        ("NRT_EMU_BACKEND", "gpu"),
        ("NRT_EMU_TARGET", "trn9"),
        ("NEURON_PLATFORM_TARGET_OVERRIDE", "inf1"),
        ("NEURON_RT_VISIBLE_CORES", "0,2"),
        ("NEURON_RT_NUM_CORES", "64"),
        ("NEURON_RT_EXEC_TIMEOUT", "soon"),
        ("NEURON_RT_VIRTUAL_CORE_SIZE", "3"),
    ] {
        let o = run(&bin, &[model.to_str().unwrap(), d, d, "1"], &[(var, value)]);
        assert!(!o.status.success(), "{var}={value}: {}", describe(&o));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains("ERROR   NRT:nrt_init"), "{var}: {stderr}");
        let named = stderr.contains(var)
            || (var == "NEURON_RT_NUM_CORES" && stderr.contains("not available"));
        assert!(named, "{var}: {stderr}");
    }
}

#[test]
fn visible_cores_are_renumbered_from_zero() {
    if !have("cc") {
        return;
    }
    let src = scratch("visible").join("visible.c");
    std::fs::write(
        &src,
        "#include \"nrt/nrt.h\"\n#include <stdio.h>\nint main(void){uint32_t t=0,v=0;\
         if(nrt_get_visible_vnc_count(&v)) return 1; if(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW,\"\",\"\")) return 1;\
         nrt_get_total_vnc_count(&t); uint32_t v2=0; nrt_get_visible_vnc_count(&v2);\
         nrt_tensor_t *x=NULL; int ok0=nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE,(int)v2-1,16,\"x\",&x);\
         int bad=nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE,(int)v2,16,\"y\",&x);\
         printf(\"%u %u %u %d %d\\n\",t,v,v2,ok0,bad); nrt_close(); return 0;}\n",
    )
    .unwrap();
    let bin = prefix().join("visible.bin");
    let f = flags();
    let o = std::process::Command::new("cc")
        .arg(format!("-I{}", prefix().join("include").display()))
        .arg(&src)
        .arg("-o")
        .arg(&bin)
        .args(refs(&f))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (env, want) in [
        (vec![("NRT_EMU_TARGET", "trn1")], "2 2 2 0 2"),
        (
            vec![("NRT_EMU_TARGET", "trn1"), ("NEURON_RT_VISIBLE_CORES", "1")],
            "2 1 1 0 2",
        ),
        (vec![("NEURON_RT_VISIBLE_CORES", "1-2")], "4 2 2 0 2"),
        (vec![("NEURON_RT_NUM_CORES", "3")], "4 3 3 0 2"),
        (vec![("NEURON_RT_VIRTUAL_CORE_SIZE", "1")], "8 8 8 0 2"),
    ] {
        let o = run(&bin, &[], &env);
        assert!(o.status.success(), "{env:?}: {}", describe(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), want, "{env:?}");
    }
}

#[test]
fn a_cxx17_program_uses_every_header() {
    if !have("c++") {
        return;
    }
    let f = flags();
    let bin = compile("c++", "api.cpp", "c++17", &refs(&f));
    let o = run(&bin, &[], &[]);
    assert!(o.status.success(), "{}", describe(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("c++ ok"));
}

#[test]
fn dlopen_by_soname_and_dlvsym_at_nrt_2_0_0() {
    if !have("cc") {
        return;
    }
    let bin = compile("cc", "dlopen.c", "gnu11", &["-ldl"]);
    let o = run(&bin, &[], &[]);
    assert!(o.status.success(), "{}", describe(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("dlopen ok: nrt-emu libnrt"));
}

#[test]
fn python_ctypes_drives_a_model() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/ctypes_test.py");
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("SKIP: no python3 on PATH (.ci/run installs one)");
        return;
    }
    let o = run(
        std::path::Path::new("python3"),
        &[
            script.to_str().unwrap(),
            neff("add.trn2.neff").to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", describe(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("ctypes ok: 3 tensors"));
}

#[test]
fn the_readme_example_builds_and_runs() {
    if !have("cc") {
        return;
    }
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/libnrt_infer.c");
    let bin = prefix().join("libnrt_infer.bin");
    let o = std::process::Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
        .arg(format!("-I{}", prefix().join("include").display()))
        .arg(&src)
        .arg("-o")
        .arg(&bin)
        .args(refs(&flags()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(
        &bin,
        &[neff("mlp2.trn1.neff").to_str().unwrap()],
        &[("NRT_EMU_TARGET", "trn1")],
    );
    assert!(o.status.success(), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("output "),
        "{}",
        describe(&o)
    );
}

#[test]
fn legacy_async_mode_returns_at_once_and_calls_back_for_every_execution() {
    if !have("cc") {
        return;
    }
    let f = flags();
    let bin = compile("cc", "zoo.c", "c11", &refs(&f));
    let m = nrt_fixtures::zoo::build("add", nrt_hal::Target::Trn1).unwrap();
    let dir = scratch("legacy");
    let neff_path = dir.join("add.neff");
    std::fs::write(&neff_path, &m.neff).unwrap();
    for (spec, data) in m
        .inputs
        .iter()
        .zip(m.generate_inputs(nrt_fixtures::GOLDEN_SEED))
    {
        std::fs::write(dir.join(format!("{}.bin", spec.name)), data).unwrap();
    }
    let mut outputs = Vec::new();
    for (mode, env) in [
        ("sync", vec![("NRT_EMU_TARGET", "trn1")]),
        (
            "async",
            vec![
                ("NRT_EMU_TARGET", "trn1"),
                ("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", "3"),
            ],
        ),
    ] {
        let out = dir.join(mode);
        std::fs::create_dir_all(&out).unwrap();
        let d = dir.to_str().unwrap();
        let o = run(
            &bin,
            &[neff_path.to_str().unwrap(), d, out.to_str().unwrap(), "5"],
            &env,
        );
        assert!(o.status.success(), "{mode}: {}", describe(&o));
        let stdout = String::from_utf8_lossy(&o.stdout);
        let want = if mode == "async" {
            "callbacks 5"
        } else {
            "callbacks 0"
        };
        assert!(stdout.contains(want), "{mode}: {stdout}");
        outputs.push(std::fs::read(out.join("out.bin")).unwrap());
    }
    assert!(outputs[0] == outputs[1], "async outputs differ from sync");
    let inputs = m.generate_inputs(nrt_fixtures::GOLDEN_SEED);
    m.check_outputs(&inputs, &outputs[1..]).unwrap();
}

/// What the version programs print, for the values docs/c-api.md §8.3 documents.
fn expected_version_line() -> String {
    let [a, b, c, d] = nrt::NRT_API_VERSION;
    assert_eq!(
        [a, b],
        [2, 30],
        "the API level of the shipped (SDK 2.28.0) headers"
    );
    format!(
        "version {a}.{b}.{c}.{d} | nrt-emu libnrt {v} (Neuron Runtime API {a}.{b}.{c}.{d}) | nrt-emu-{v}",
        v = env!("CARGO_PKG_VERSION")
    )
}

#[test]
fn nrt_get_version_reports_the_api_level_and_names_nrt_emu_from_c() {
    if !have("cc") {
        return;
    }
    let f = flags();
    let bin = compile("cc", "version.c", "c11", &refs(&f));
    let o = run(&bin, &[], &[]);
    assert!(o.status.success(), "{}", describe(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        expected_version_line()
    );
}

#[test]
fn nrt_get_version_reports_the_api_level_through_ctypes() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("SKIP: no python3 on PATH (.ci/run installs one)");
        return;
    }
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/version_ctypes.py");
    let o = run(
        std::path::Path::new("python3"),
        &[script.to_str().unwrap()],
        &[],
    );
    assert!(o.status.success(), "{}", describe(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        expected_version_line()
    );
}
