//! The load pipeline end to end on the simulator: every zoo NEFF loads through S5 and unloads
//! back to zero device memory; every malformed NEFF is refused with its status and a message
//! naming the problem, leaving nothing allocated; concurrency, cycles and LNC rollback.

use std::sync::{Arc, Barrier};

use nrt_emu::hal::{Hal, NcIndex, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::{NrtStatus, Runtime};
use nrt_emu::sim::{FaultPlan, Sim, SimConfig};
use nrt_fixtures::malformed::{self, Stage};
use nrt_fixtures::zoo;

fn device(target: Target, faults: FaultPlan) -> Arc<Sim> {
    Arc::new(Sim::new(SimConfig::new(target).with_faults(faults)))
}

fn runtime(sim: &Arc<Sim>, cfg: RuntimeConfig) -> Runtime {
    Runtime::new(sim.clone() as Arc<dyn Hal>, cfg).expect("runtime opens")
}

/// Bytes of device memory and allocations in use, over every core.
fn in_use(sim: &Sim) -> (u64, u64) {
    crate::support::device_bytes_and_allocations(sim)
}

#[test]
fn every_zoo_neff_loads_through_s5_and_unloads_to_zero() {
    for m in zoo::all() {
        let sim = device(m.target, FaultPlan::none());
        let rt = runtime(&sim, RuntimeConfig::default());
        let id = rt
            .load(&m.neff, -1)
            .unwrap_or_else(|e| panic!("{}.{}: {e}", m.name, m.target));
        {
            let model = rt.model(id).unwrap();
            let cores = model.cores.lock().unwrap();
            let cores = cores.as_ref().unwrap();
            assert_eq!(cores.len(), model.parsed.model.subgraphs.len());
            for (c, kbin) in cores.iter().zip(&model.parsed.model.subgraphs) {
                // Every engine present got an instruction block.
                for prog in &kbin.engines {
                    assert!(
                        c.engine_addr[prog.engine.index()].is_some(),
                        "{}: {:?}",
                        m.name,
                        prog.engine
                    );
                }
                assert!(c
                    .queues
                    .iter()
                    .all(|q| q.ring_len >= 32 && q.ring_len % 16 == 0));
            }
        }
        let (bytes, allocs) = in_use(&sim);
        assert!(
            bytes > 0 && allocs > 0,
            "{}: the load allocated nothing",
            m.name
        );
        rt.unload(id).unwrap();
        assert_eq!(
            in_use(&sim),
            (0, 0),
            "{}.{} leaked device memory",
            m.name,
            m.target
        );
        assert_eq!(rt.unload(id).unwrap_err().status, NrtStatus::InvalidHandle);
    }
}

#[test]
fn pseudo_instructions_expand_and_vanish_with_patch_records() {
    let m = zoo::build("pseudo", Target::Trn1).unwrap();
    let sim = device(Target::Trn1, FaultPlan::none());
    let rt = runtime(&sim, RuntimeConfig::default());
    let id = rt.load(&m.neff, 0).unwrap();
    let model = rt.model(id).unwrap();
    let cores = model.cores.lock().unwrap();
    let core = &cores.as_ref().unwrap()[0];
    use nrt_emu::runtime::model::patch::PatchKind;
    let all: Vec<_> = core.patches.iter().flat_map(|p| p.patches.iter()).collect();
    assert!(
        all.iter().any(|p| matches!(p.kind, PatchKind::Delete)),
        "markers vanish"
    );
    assert!(
        all.iter()
            .any(|p| matches!(p.kind, PatchKind::Insert { .. })),
        "barriers/triggers expand"
    );
    // Device-IP → NEFF-IP is the identity before the first patch and accounts for every one.
    for (e, table) in core.patches.iter().enumerate() {
        let n = core.engine_len[e];
        let mut last = 0;
        for ip in 0..n {
            let neff_ip = table.device_to_neff(ip);
            assert!(neff_ip >= last, "monotone");
            last = neff_ip;
        }
    }
}

#[test]
fn every_malformed_neff_is_refused_with_its_status_and_nothing_leaks() {
    let cases = malformed::cases();
    assert!(cases.len() >= 40);
    for case in cases {
        let base_target = if case.base.ends_with("trn2") {
            Target::Trn2
        } else {
            Target::Trn1
        };
        let target = case.target(base_target);
        let needs = &case.expect.needs;
        let mut cfg = RuntimeConfig {
            validate_hash: needs.verify_hash,
            ..RuntimeConfig::default()
        };
        if let Some(c) = needs.available_cores {
            if c > 2 {
                // More cores than a logical core can have: only the S0–S3 test can express it.
                continue;
            }
            cfg.vcore_size = Some(c.max(1));
        }
        if let Some(max) = needs.max_uncompressed {
            cfg.neff_limits.max_uncompressed = max;
        }
        let sim = device(target, FaultPlan::none());
        let rt = runtime(&sim, cfg);
        let err = rt
            .load(&case.bytes, -1)
            .expect_err(&format!("{} ({}) loaded", case.name, case.description));
        assert_eq!(
            err.status.code(),
            case.expect.status,
            "{}: {err}",
            case.name
        );
        assert!(
            err.message
                .to_lowercase()
                .contains(&case.expect.message_contains.to_lowercase()),
            "{}: message {:?} does not name {:?}",
            case.name,
            err.message,
            case.expect.message_contains
        );
        assert_eq!(in_use(&sim), (0, 0), "{} leaked", case.name);
        if case.expect.stage == Stage::Load {
            eprintln!("{}: refused at staging: {err}", case.name);
        }
    }
}

#[test]
fn sixty_four_threads_loading_one_neff_parse_it_once() {
    let m = zoo::build("matmul_bias_relu", Target::Trn1).unwrap();
    let sim = device(Target::Trn1, FaultPlan::none());
    let rt = runtime(&sim, RuntimeConfig::default());
    let barrier = Barrier::new(64);
    let ids: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..64)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    rt.load(&m.neff, -1)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ids: Vec<_> = ids
        .into_iter()
        .map(|r| r.expect("every load succeeds"))
        .collect();
    assert_eq!(rt.parse_count(), 1, "the TNC cache coalesced the parses");
    let mut sorted: Vec<u32> = ids.iter().map(|i| i.0).collect();
    sorted.sort();
    assert_eq!(sorted, (0..64).collect::<Vec<_>>(), "dense H_NN handles");
    for id in ids {
        rt.unload(id).unwrap();
    }
    assert_eq!(in_use(&sim), (0, 0));
}

#[test]
fn a_thousand_load_unload_cycles_leave_nothing_allocated() {
    let m = zoo::build("add", Target::Trn1).unwrap();
    let sim = device(Target::Trn1, FaultPlan::none());
    let rt = runtime(&sim, RuntimeConfig::default());
    for i in 0..1000 {
        let id = rt.load(&m.neff, i % 2).unwrap();
        rt.unload(id).unwrap();
    }
    assert_eq!(in_use(&sim), (0, 0));
}

#[test]
fn an_lnc2_load_failing_on_core_1_leaves_core_0_clean() {
    let m = zoo::build("lnc2_add", Target::Trn2).unwrap();
    // Count the allocations a good load makes on each core, then fail one of core 1's.
    let sim = device(Target::Trn2, FaultPlan::none());
    let rt = runtime(&sim, RuntimeConfig::default());
    let id = rt.load(&m.neff, 0).unwrap();
    assert_eq!(rt.model(id).unwrap().tpbs, vec![NcIndex(0), NcIndex(1)]);
    let total = in_use(&sim).1;
    rt.unload(id).unwrap();
    // Staging runs on two threads, so which core's allocation is the N-th varies; fail every
    // allocation from the middle on, which must hit core 1 and may hit core 0 too.
    for nth in 1..=total {
        let sim = device(
            Target::Trn2,
            FaultPlan {
                fail_allocations: vec![nth],
                ..FaultPlan::default()
            },
        );
        let rt = runtime(&sim, RuntimeConfig::default());
        let err = rt.load(&m.neff, 0).unwrap_err();
        assert_eq!(err.status, NrtStatus::Resource, "{err}");
        for (nc, u) in crate::support::core_usage(&*sim).iter().enumerate() {
            assert_eq!(
                (u.device_bytes(), u.allocations),
                (0, 0),
                "core {nc} not clean after failing allocation {nth}"
            );
        }
        // The runtime is still usable: the same load now succeeds (the fault was one-shot).
        let id = rt.load(&m.neff, 0).unwrap();
        rt.unload(id).unwrap();
    }
}

#[test]
fn load_guards() {
    let m = zoo::build("add", Target::Trn1).unwrap();
    let sim = device(Target::Trn1, FaultPlan::none());
    let rt = runtime(&sim, RuntimeConfig::default());
    let e = rt.load(&m.neff, 2).unwrap_err();
    assert_eq!(e.status, NrtStatus::LoadNotEnoughNc, "{e}");
    let e = rt.load(&m.neff[..500], -1).unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
    // A trn2 NEFF on a trn1 device.
    let m2 = zoo::build("add", Target::Trn2).unwrap();
    let e = rt.load(&m2.neff, 0).unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
    assert!(e.message.contains("arch incompatible"), "{e}");
    rt.close();
    assert_eq!(rt.load(&m.neff, 0).unwrap_err().status, NrtStatus::Closed);
    assert_eq!(in_use(&sim), (0, 0));
}
