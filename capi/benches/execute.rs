//! `nrt_execute` through the C API next to `Runtime::execute` through the Rust API: the same
//! model (`add`, trn2: two 256 KiB f32 inputs, one output) on the simulator, device tensors,
//! one sync execution per iteration (bind, stage, doorbell, simulate, harvest). The C side is
//! the entry point the exported `nrt_execute@@NRT_2.0.0` jumps to; it adds the handle-table
//! lookups and the tensor-set translation. Goal: within 5 % of the Rust API.
//!
//! Ends with a `summary:` line measured directly (medians of 7 alternating runs of 200
//! executions each).

use std::ffi::c_void;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use nrt::api::{exec, lifecycle, model, set, tensor};
use nrt_fixtures::{zoo, GOLDEN_SEED};
use nrt_hal::{Hal, Target};
use nrt_runtime::config::RuntimeConfig;
use nrt_runtime::tensor::{Placement, TensorSet};
use nrt_runtime::Runtime;
use nrt_sim::{Sim, SimConfig};

struct CSide {
    model: *mut c_void,
    inputs: *mut c_void,
    outputs: *mut c_void,
}

fn c_side(m: &nrt_fixtures::ZooModel, inputs: &[Vec<u8>]) -> CSide {
    lifecycle::reset_for_tests();
    // SAFETY: NULL version strings are accepted; every pointer below is live and writable.
    unsafe {
        assert_eq!(
            lifecycle::nrt_init(1, std::ptr::null(), std::ptr::null()),
            0
        );
        let mut h = std::ptr::null_mut();
        assert_eq!(
            model::nrt_load(m.neff.as_ptr().cast(), m.neff.len(), 0, -1, &mut h),
            0
        );
        let (mut ins, mut outs) = (std::ptr::null_mut(), std::ptr::null_mut());
        assert_eq!(set::nrt_allocate_tensor_set(&mut ins), 0);
        assert_eq!(set::nrt_allocate_tensor_set(&mut outs), 0);
        let add = |spec: &nrt_fixtures::TensorSpec, set_: *mut c_void, data: Option<&Vec<u8>>| {
            let name = std::ffi::CString::new(spec.name.clone()).unwrap();
            let mut t = std::ptr::null_mut();
            assert_eq!(
                tensor::nrt_tensor_allocate(0, 0, spec.size(), name.as_ptr(), &mut t),
                0
            );
            if let Some(d) = data {
                assert_eq!(
                    tensor::nrt_tensor_write(t, d.as_ptr().cast(), 0, d.len()),
                    0
                );
            }
            assert_eq!(set::nrt_add_tensor_to_tensor_set(set_, name.as_ptr(), t), 0);
        };
        for (spec, d) in m.inputs.iter().zip(inputs) {
            add(spec, ins, Some(d));
        }
        for spec in &m.outputs {
            add(spec, outs, None);
        }
        CSide {
            model: h,
            inputs: ins,
            outputs: outs,
        }
    }
}

struct RustSide {
    rt: Runtime,
    id: nrt_runtime::ModelId,
    ins: TensorSet,
    outs: TensorSet,
}

fn rust_side(m: &nrt_fixtures::ZooModel, inputs: &[Vec<u8>]) -> RustSide {
    let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn2)));
    let rt = Runtime::new(sim as Arc<dyn Hal>, RuntimeConfig::default()).unwrap();
    let id = rt.load(&m.neff, 0).unwrap();
    let (mut ins, mut outs) = (TensorSet::new(), TensorSet::new());
    for (spec, d) in m.inputs.iter().zip(inputs) {
        let t = rt
            .tensor_allocate(Placement::Device, 0, spec.size() as u64, &spec.name)
            .unwrap();
        t.write(0, d).unwrap();
        ins.add(&spec.name, t);
    }
    for spec in &m.outputs {
        let t = rt
            .tensor_allocate(Placement::Device, 0, spec.size() as u64, &spec.name)
            .unwrap();
        outs.add(&spec.name, t);
    }
    RustSide { rt, id, ins, outs }
}

/// Medians of 7 alternating runs of 200 executions each (alternating, so a change in the
/// machine's load hits both sides alike).
fn per_exec(mut a: impl FnMut(), mut b: impl FnMut()) -> (Duration, Duration) {
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..200 {
            f();
        }
        t.elapsed() / 200
    };
    let (mut ra, mut rb) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        ra.push(time(&mut a));
        rb.push(time(&mut b));
    }
    ra.sort();
    rb.sort();
    (ra[3], rb[3])
}

fn execute(c: &mut Criterion) {
    let m = zoo::build("add", Target::Trn2).expect("the zoo's add model");
    let inputs = m.generate_inputs(GOLDEN_SEED);
    let cs = c_side(&m, &inputs);
    let rs = rust_side(&m, &inputs);
    let c_exec = || assert_eq!(exec::nrt_execute(cs.model, cs.inputs, cs.outputs), 0);
    let r_exec = || {
        black_box(rs.rt.execute(rs.id, &rs.ins, &rs.outs).unwrap());
    };
    let mut g = c.benchmark_group("execute_add_trn2");
    g.bench_function("c_api_nrt_execute", |b| b.iter(c_exec));
    g.bench_function("rust_api_execute", |b| b.iter(r_exec));
    g.finish();
    let (tc, tr) = per_exec(c_exec, r_exec);
    println!(
        "summary: nrt_execute (C API) {:.1} us, Runtime::execute (Rust API) {:.1} us per execution: C API at {:+.1} % of the Rust API (goal within 5 %)",
        tc.as_secs_f64() * 1e6,
        tr.as_secs_f64() * 1e6,
        (tc.as_secs_f64() / tr.as_secs_f64() - 1.0) * 100.0
    );
    lifecycle::nrt_close();
    lifecycle::reset_for_tests();
}

criterion_group!(benches, execute);
criterion_main!(benches);
