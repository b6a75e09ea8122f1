//! The driver backend end to end: the runtime loads and executes zoo models over
//! `DriverHal` + the in-process kernel-ABI emulation (`EmulatedDriver` on a `Sim`), and gets the
//! same output bytes as over the simulator directly — and the model's reference.

use crate::support;

use std::sync::Arc;

use nrt_emu::hal::driver::DriverHal;
use nrt_emu::hal::{Hal, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::tensor::TensorSet;
use nrt_emu::runtime::Runtime;
use nrt_emu::sim::{Sim, SimConfig};
use nrt_fixtures::{zoo, ZooModel, GOLDEN_SEED};
use nrt_kabi::EmulatedDriver;

/// What one run produced: output bytes of two executions, per-core cycles of the first, and
/// the device's memory accounting of core 0 after unload.
struct Run {
    outputs: Vec<Vec<u8>>,
    again: Vec<Vec<u8>>,
    cycles: Vec<u64>,
}

fn run(m: &ZooModel, hal: Arc<dyn Hal>) -> Run {
    let rt = Runtime::new(hal, RuntimeConfig::default()).unwrap();
    let id = rt.load(&m.neff, -1).unwrap();
    let vnc = rt.model(id).unwrap().vnc;
    let inputs = m.generate_inputs(GOLDEN_SEED);
    let (ins, outs) = support::device_io(&rt, m, vnc, &inputs);
    let read = |outs: &TensorSet| support::read_outputs(m, outs);
    let report = rt
        .execute(id, &ins, &outs)
        .unwrap_or_else(|e| panic!("{}.{}: {e}", m.name, m.target));
    let outputs = read(&outs);
    m.check_outputs(&inputs, &outputs)
        .unwrap_or_else(|e| panic!("{}.{}: {e}", m.name, m.target));
    outs.iter()
        .for_each(|(_, t)| t.memset(0, 0, t.size()).unwrap());
    rt.execute(id, &ins, &outs).unwrap();
    let again = read(&outs);
    drop((ins, outs));
    rt.unload(id).unwrap();
    Run {
        outputs,
        again,
        cycles: report.cycles,
    }
}

#[test]
fn every_zoo_model_gives_the_same_outputs_over_the_emulated_driver() {
    let models: Vec<_> = zoo::all().into_iter().filter(|m| m.executable).collect();
    assert!(!models.is_empty());
    for m in &models {
        let direct = run(m, Arc::new(Sim::new(SimConfig::new(m.target))));

        let sim = Arc::new(Sim::new(SimConfig::new(m.target)));
        let drv = Arc::new(EmulatedDriver::single(sim.clone()));
        let hal = Arc::new(DriverHal::open(0, drv.clone()).unwrap());
        assert_eq!(hal.device_info().unwrap().target, m.target);
        let over_driver = run(m, hal.clone());

        let what = format!("{}.{}", m.name, m.target);
        assert_eq!(over_driver.outputs, direct.outputs, "{what}");
        assert_eq!(over_driver.again, direct.again, "{what}: second execution");
        // The device's own timeline is deterministic whoever drives it: each execution's
        // cycle count is the same however the host polled.
        assert_eq!(over_driver.cycles, direct.cycles, "{what}: cycles");
        // The backend's own accounting agrees with the device's after unload.
        assert_eq!(
            support::core_usage(&*hal),
            support::core_usage(&*sim),
            "{what}"
        );
        // Dropping the backend closes the device: the process's allocations are freed, only
        // device-lifespan notification queues remain.
        drop(hal);
        assert_eq!(drv.open_fds(), 0);
        for (nc, u) in support::core_usage(&*sim).iter().enumerate() {
            let nq = u.by_category[nrt_emu::hal::abi::MemAllocCategory::NotificationHost as usize]
                + u.by_category[nrt_emu::hal::abi::MemAllocCategory::NotificationDevice as usize];
            assert_eq!(u.host_bytes() + u.device_bytes(), nq, "{what}: nc{nc}");
        }
    }
    // Both generations are covered.
    for t in [Target::Trn1, Target::Trn2] {
        assert!(models.iter().any(|m| m.target == t));
    }
}

#[test]
fn discovery_finds_every_emulated_device_node_and_leaves_nothing_open() {
    let sims = (0..3)
        .map(|_| Arc::new(Sim::new(SimConfig::new(Target::Trn1))))
        .collect();
    let emu = EmulatedDriver::new(sims);
    assert_eq!(nrt_emu::hal::driver::discover(&emu), vec![0, 1, 2]);
    assert_eq!(emu.open_fds(), 0, "probe descriptors are closed");
    let none = EmulatedDriver::new(Vec::new());
    assert!(nrt_emu::hal::driver::discover(&none).is_empty());
}
