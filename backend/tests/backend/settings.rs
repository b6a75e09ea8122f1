//! Settings from the environment and flags, checked strictly.

use nrt_backend::{Backend, Settings};
use nrt_hal::Target;

fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |k| vars.iter().find(|v| v.0 == k).map(|v| v.1.to_string())
}

#[test]
fn device_variables() {
    let c = Settings::from_env(&env(&[])).unwrap();
    assert_eq!(
        (c.backend, c.target_unopened()),
        (Backend::Sim, Some(Target::Trn2))
    );
    let c = Settings::from_env(&env(&[
        ("NRT_EMU_TARGET", "TRN1"),
        ("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2"),
    ]))
    .unwrap();
    assert_eq!(c.target, Some(Target::Trn1));
    let e = Settings::from_env(&env(&[("NRT_EMU_BACKEND", "gpu")])).unwrap_err();
    assert!(e.message.contains("NRT_EMU_BACKEND"), "{e}");
    let e = Settings::from_env(&env(&[("NEURON_PLATFORM_TARGET_OVERRIDE", "inf9")])).unwrap_err();
    assert!(e.message.contains("NEURON_PLATFORM_TARGET_OVERRIDE"), "{e}");
}

#[test]
fn backend_names_and_precedence() {
    assert_eq!(Backend::parse(" Driver "), Some(Backend::Driver));
    assert_eq!(Backend::parse("sim"), Some(Backend::Sim));
    assert_eq!(Backend::parse("fpga"), None);
    for b in Backend::ALL {
        assert_eq!(Backend::parse(b.name()), Some(b));
        assert_eq!(b.to_string(), b.name());
    }
    // The flag wins over the environment; a blank variable is unset; no setting is sim.
    let drv = [("NRT_EMU_BACKEND", "driver")];
    assert_eq!(
        Backend::from_flag_or_env(Some(Backend::Sim), &env(&drv)).unwrap(),
        Backend::Sim
    );
    assert_eq!(
        Backend::from_flag_or_env(None, &env(&drv)).unwrap(),
        Backend::Driver
    );
    assert_eq!(
        Backend::from_flag_or_env(None, &env(&[("NRT_EMU_BACKEND", " ")])).unwrap(),
        Backend::Sim
    );
    assert_eq!(
        Backend::from_flag_or_env(None, &env(&[])).unwrap(),
        Backend::Sim
    );
    let e = Backend::from_flag_or_env(None, &env(&[("NRT_EMU_BACKEND", "fpga")])).unwrap_err();
    assert!(e.message.contains("NRT_EMU_BACKEND"), "{e}");
    assert_eq!(Settings::new(Backend::Driver).target_unopened(), None);
}
