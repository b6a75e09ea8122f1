//! Dropping a `Runtime` gives the device back: created and dropped repeatedly on one simulated
//! device — each time executing on every core (creating each core's execution state: exec and
//! IO rings, request page, notification queue), running asynchronously (an async worker), and
//! leaving a model loaded — the device's memory accounting returns to its value before the
//! first `Runtime::new`.
//!
//! (Not in `leak`: that test counts the whole process's heap, in a child process of its own so
//! that no concurrently running test disturbs it.)

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use nrt_emu::hal::{Hal, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::Runtime;
use nrt_emu::sim::{Sim, SimConfig};
use nrt_fixtures::zoo;

#[test]
fn create_use_and_drop_a_runtime_repeatedly_returns_device_memory_to_its_baseline() {
    for (target, model) in [(Target::Trn1, "add"), (Target::Trn2, "lnc2_add")] {
        let sim = Arc::new(Sim::new(SimConfig::new(target)));
        let m = zoo::build(model, target).unwrap();
        let inputs = m.generate_inputs(0xD809);
        let base = support::core_usage(&*sim);
        for round in 0..4 {
            let async_mode = round % 2 == 1;
            let cfg = RuntimeConfig {
                async_max_inflight: if async_mode { 2 } else { 0 },
                ..RuntimeConfig::default()
            };
            let rt = Runtime::new(sim.clone() as Arc<dyn Hal>, cfg).unwrap();
            let mut ids = Vec::new();
            for vnc in 0..rt.vcore_count() {
                let id = rt.load(&m.neff, vnc as i32).unwrap();
                let (ins, outs) = support::device_io(&rt, &m, vnc, &inputs);
                if async_mode {
                    let r = rt.execute_async(id, &ins, &outs).unwrap();
                    rt.wait(r, Duration::from_secs(30)).unwrap();
                } else {
                    rt.execute(id, &ins, &outs).unwrap();
                }
                support::check_outputs(&m, &inputs, &outs);
                ids.push(id);
            }
            // The runtime's own state is visible on the device while it lives.
            assert_ne!(support::core_usage(&*sim), base, "{target:?} round {round}");
            // One model unloaded, the others left loaded for the drop to release.
            rt.unload(ids[0]).unwrap();
            drop(rt);
            assert_eq!(
                support::core_usage(&*sim),
                base,
                "{target:?} round {round}: device memory after dropping the runtime"
            );
        }
    }
}
