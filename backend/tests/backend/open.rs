//! What each backend opens.

use nrt_backend::{open, Backend, FaultPlan, Settings, DRIVER_DEVICE};
use nrt_hal::driver::device_path;
use nrt_hal::{NcIndex, Target};
use nrt_runtime::NrtStatus;

#[test]
fn the_simulator_is_the_generation_asked_for_and_offers_profiling() {
    let d = open(&Settings::new(Backend::Sim)).unwrap();
    assert_eq!((d.target, d.backend), (Target::Trn2, Backend::Sim));
    assert_eq!(d.hal.device_info().unwrap().target, Target::Trn2);
    let d = open(&Settings::new(Backend::Sim).with_target(Target::Trn1, "--target")).unwrap();
    assert_eq!(d.target, Target::Trn1);
    assert_eq!(d.hal.device_info().unwrap().target, Target::Trn1);
    let p = d.profiler().expect("the simulator records a timeline");
    assert!(p.timeline_json().contains("traceEvents"));
    assert_eq!(p.exec_profile(NcIndex(0)), Default::default());
    // Faults reach the simulator it builds.
    let d = open(&Settings::new(Backend::Sim).with_faults(Some(FaultPlan::none()))).unwrap();
    assert!(d.profiler().is_some());
}

#[test]
fn the_driver_backend_fails_clearly_without_a_device() {
    if std::path::Path::new(&device_path(DRIVER_DEVICE)).exists() {
        return; // a real Neuron host: nothing to check here
    }
    let e = open(&Settings::new(Backend::Driver).with_sim_hint("use --backend sim")).unwrap_err();
    assert_eq!(e.status, NrtStatus::Failure);
    assert!(
        e.message
            .contains("the driver backend cannot open /dev/neuron0"),
        "{e}"
    );
    assert!(e.message.contains("use --backend sim"), "{e}");
}
