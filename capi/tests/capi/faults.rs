//! Failed executions through the C API, on a simulated device that injects a fault (a hung
//! engine, so an execution never completes and times out): the explicit async API's
//! `NRT_QUEUE_FULL` and `NRT_EXEC_UNIT_UNRECOVERABLE`, and the inspect-on-fail dump.

use std::ffi::c_void;
use std::time::{Duration, Instant};

use nrt::api::{lifecycle, model, nrta, set, tensor};
use nrt_hal::{EngineKind, NcIndex};
use nrt_sim::FaultPlan;

const QUEUE_FULL: u32 = 7;
const TIMEOUT: u32 = 5;
const UNRECOVERABLE: u32 = 101;

fn hung_dve() -> FaultPlan {
    FaultPlan {
        hung_engines: vec![(NcIndex(0), EngineKind::Dve)],
        ..FaultPlan::default()
    }
}

/// A session on a trn1 simulator injecting `plan`, with `env` set while `nrt_init` reads it;
/// the `add` model loaded on core 0 and its input and output sets.
fn session(plan: FaultPlan, env: &[(&str, &str)]) -> (*mut c_void, *mut c_void, *mut c_void) {
    lifecycle::reset_for_tests();
    nrt::session::inject_faults(Some(plan));
    for (k, v) in env {
        std::env::set_var(k, v);
    }
    std::env::set_var("NRT_EMU_TARGET", "trn1");
    // SAFETY: NULL strings are accepted as empty.
    let st = unsafe { lifecycle::nrt_init(1, std::ptr::null(), std::ptr::null()) };
    for (k, _) in env {
        std::env::remove_var(k);
    }
    std::env::remove_var("NRT_EMU_TARGET");
    nrt::session::inject_faults(None);
    assert_eq!(st, 0);
    let neff = std::fs::read(crate::support::neff("add.trn1.neff")).unwrap();
    let mut m: *mut c_void = std::ptr::null_mut();
    let (mut ins, mut outs): (*mut c_void, *mut c_void) =
        (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: live buffers, writable handles, NUL-terminated names.
    unsafe {
        assert_eq!(
            model::nrt_load(neff.as_ptr().cast(), neff.len(), 0, -1, &mut m),
            0
        );
        assert_eq!(set::nrt_allocate_tensor_set(&mut ins), 0);
        assert_eq!(set::nrt_allocate_tensor_set(&mut outs), 0);
        for (name, s) in [(c"a", ins), (c"b", ins), (c"out", outs)] {
            let mut t: *mut c_void = std::ptr::null_mut();
            assert_eq!(
                tensor::nrt_tensor_allocate(0, 0, 128 * 512 * 4, name.as_ptr(), &mut t),
                0
            );
            assert_eq!(set::nrt_add_tensor_to_tensor_set(s, name.as_ptr(), t), 0);
        }
    }
    (m, ins, outs)
}

fn end() {
    lifecycle::nrt_close();
    lifecycle::reset_for_tests();
}

#[test]
fn nrta_execute_schedule_is_queue_full_at_the_limit_and_unrecoverable_after_a_failure() {
    let _g = crate::inprocess::SERIAL
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    // The hung execution holds the unit's one slot until its 3 s timeout.
    let (m, ins, outs) = session(
        hung_dve(),
        &[
            ("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", "1"),
            ("NEURON_RT_EXEC_TIMEOUT", "3"),
        ],
    );
    let mut tracker: *mut c_void = std::ptr::null_mut();
    let (mut first, mut seq) = (0u64, 0u64);
    // SAFETY: live handles and writable out-parameters.
    unsafe {
        assert_eq!(nrta::nrta_error_tracker_create(0, &mut tracker), 0);
        assert_eq!(
            nrta::nrta_execute_schedule(m, ins, outs, 0, tracker, &mut first),
            0
        );
        let (st, lines) =
            nrt::log::capture(|| nrta::nrta_execute_schedule(m, ins, outs, 0, tracker, &mut seq));
        assert_eq!(
            st, QUEUE_FULL,
            "the unit already holds its 1 unfinished request"
        );
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("NRT_QUEUE_FULL"), "{lines:?}");
        assert_eq!(seq, 0, "a refused request gets no sequence id");
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut done = false;
        while !done {
            assert!(
                Instant::now() < deadline,
                "the hung execution never timed out"
            );
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(nrta::nrta_is_completed(first, &mut done), 0);
        }
        let mut list: *const nrt::types::NrtaError = std::ptr::null();
        let mut n = 0usize;
        assert_eq!(
            nrta::nrta_error_tracker_get_list(tracker, &mut list, &mut n),
            0
        );
        assert_eq!(n, 1);
        assert_eq!((*list).seq_id, first);
        assert_eq!((*list).error_code, u64::from(TIMEOUT));
        for _ in 0..3 {
            let (st, lines) = nrt::log::capture(|| {
                nrta::nrta_execute_schedule(m, ins, outs, 0, tracker, &mut seq)
            });
            assert_eq!(st, UNRECOVERABLE, "after the unit failed: {lines:?}");
            assert_eq!(lines.len(), 1, "{lines:?}");
            assert!(
                lines[0].contains("NRT_EXEC_UNIT_UNRECOVERABLE"),
                "{lines:?}"
            );
        }
    }
    end();
}

#[test]
fn inspect_on_fail_writes_the_capture_when_an_execution_fails() {
    let _g = crate::inprocess::SERIAL
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let dir = crate::support::scratch("inspect-on-fail");
    let (m, ins, outs) = session(
        hung_dve(),
        &[
            ("NEURON_RT_INSPECT_ON_FAIL", "1"),
            ("NEURON_RT_INSPECT_OUTPUT_DIR", dir.to_str().unwrap()),
            ("NEURON_RT_EXEC_TIMEOUT", "0.3"),
        ],
    );
    let failure = dir.join("session_1").join("failure_1");
    assert!(!failure.exists());
    let (st, lines) = nrt::log::capture(|| nrt::api::exec::nrt_execute(m, ins, outs));
    assert_eq!(st, TIMEOUT);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("inspect on fail") && l.contains("failure_1")),
        "{lines:?}"
    );
    let device = std::fs::read_to_string(failure.join("device_profile.json")).unwrap();
    assert!(device.contains("traceEvents"), "{device}");
    let system = std::fs::read_to_string(failure.join("system_profile.json")).unwrap();
    assert!(
        system.contains("nc_exec") && system.contains("NRT_TIMEOUT"),
        "{system}"
    );
    // The next failure gets its own directory.
    assert_eq!(nrt::api::exec::nrt_execute(m, ins, outs), UNRECOVERABLE);
    assert!(dir.join("session_1/failure_2/device_profile.json").exists());
    end();
    // Without the variable nothing is written.
    let dir2 = crate::support::scratch("inspect-off");
    let (m, ins, outs) = session(
        hung_dve(),
        &[
            ("NEURON_RT_INSPECT_OUTPUT_DIR", dir2.to_str().unwrap()),
            ("NEURON_RT_EXEC_TIMEOUT", "0.3"),
        ],
    );
    assert_eq!(nrt::api::exec::nrt_execute(m, ins, outs), TIMEOUT);
    assert!(!dir2.join("session_1").exists());
    end();
}
