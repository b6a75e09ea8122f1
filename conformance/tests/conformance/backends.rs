//! The same trace from two backends: every zoo model recorded on the simulator directly and on
//! the driver backend (`DriverHal`, the `/dev/neuron` ioctl/mmap ABI) over the in-process
//! kernel-ABI emulation of the simulator gives the same document, byte for byte — the property
//! that lets a trace captured on silicon be checked against the simulator.

use std::sync::Arc;

use nrt_conformance::{first_difference, run_on, run_sim, RunOptions};
use nrt_fixtures::zoo;
use nrt_hal::driver::DriverHal;
use nrt_hal::Hal;
use nrt_kabi::EmulatedDriver;
use nrt_sim::{Sim, SimConfig};

#[test]
fn the_driver_backend_gives_the_simulator_trace() {
    for m in zoo::all() {
        let opts = RunOptions::default();
        let direct = run_sim(&m.neff, &opts).unwrap().document();
        let sim = Arc::new(Sim::new(SimConfig::new(m.target)));
        let drv = Arc::new(EmulatedDriver::single(sim));
        let hal: Arc<dyn Hal> = Arc::new(DriverHal::open(0, drv).unwrap());
        let over_driver = run_on(hal, &m.neff, &opts, &|h| h).unwrap().document();
        assert!(
            direct == over_driver,
            "{}: {}",
            m.id(),
            first_difference(&direct, &over_driver, 3).unwrap_or_default()
        );
    }
}
