//! The committed snapshots: every zoo model × {trn1, trn2} × {load, exec1, exec2}, one insta
//! snapshot each (`tests/snapshots/<model>.<target>.<phase>.snap`).
//!
//! Any change to a model's device-facing behaviour — a descriptor field, a doorbell, a semaphore
//! or event operation, an instruction, an allocation, an output byte — changes a snapshot and
//! fails this test until the new snapshot is reviewed and committed. With `CI=true` insta never
//! writes snapshots; locally it writes `.snap.new` files for review, and
//! `INSTA_UPDATE=always cargo test -p nrt-conformance --test conformance snapshots` accepts every
//! change (the snapshot tests are the `snapshots` module of the `conformance` test binary).

use nrt_conformance::harness::seeded_inputs;
use nrt_conformance::{run_sim, Phase, RunOptions, DEFAULT_SEED};
use nrt_fixtures::{zoo, GOLDEN_SEED};
use nrt_hal::Target;

/// Records `name` on `target` and checks its three phases against the committed snapshots.
fn check(name: &str, target: Target) {
    let m = zoo::build(name, target).expect("a zoo model");
    let c = run_sim(&m.neff, &RunOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", m.id()));
    assert_eq!(c.target, target);
    assert_eq!(DEFAULT_SEED, GOLDEN_SEED);
    let doc = c.document();
    for bad in [
        "?0x",
        "<not staged",
        "<ring memory unreadable",
        "<queue not initialised",
        "<unreadable",
    ] {
        assert!(
            !doc.contains(bad),
            "{}: trace contains {bad:?}:\n{doc}",
            m.id()
        );
    }
    let text = |p: Phase| {
        c.phase(p)
            .unwrap_or_else(|| panic!("{}: no {p:?}", m.id()))
            .text()
    };
    if m.executable {
        // The seeded inputs are the zoo's golden inputs, and the outputs are right.
        let inputs = m.generate_inputs(GOLDEN_SEED);
        for p in [Phase::Exec1, Phase::Exec2] {
            let rec = c.phase(p).unwrap();
            assert_eq!(rec.result, "ok", "{} {p:?}", m.id());
            let got: Vec<Vec<u8>> = rec.outputs.iter().map(|(_, b)| b.clone()).collect();
            m.check_outputs(&inputs, &got)
                .unwrap_or_else(|e| panic!("{} {p:?}: {e}", m.id()));
        }
        // The first execution loads the configuration; the second takes the skip-config path.
        assert!(text(Phase::Exec1).contains("reload_seq_config=1 load_act_dve_tables=1"));
        assert!(text(Phase::Exec2)
            .contains("do_model_switch=0 reload_seq_config=0 load_act_dve_tables=0"));
        assert!(!text(Phase::Exec2).contains("reload_seq_config=1"));
    }
    assert_snapshots(&c, &m.id(), &format!("zoo model `{name}` on {target}"));
}

/// Checks each phase of `c` against its committed snapshot `tests/snapshots/<id>.<phase>.snap`,
/// described as the trace of `what`.
fn assert_snapshots(c: &nrt_conformance::Conformance, id: &str, what: &str) {
    let mut settings = insta::Settings::clone_current();
    // The snapshots stay in tests/snapshots/, next to this binary's directory.
    settings.set_snapshot_path("../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    for p in Phase::ALL {
        settings.set_description(format!(
            "nrt-conformance trace of {what}, phase {}",
            p.name()
        ));
        let snap = format!("{id}.{}", p.name());
        let body = c
            .phase(p)
            .unwrap_or_else(|| panic!("{id}: no {p:?}"))
            .text();
        settings.bind(|| insta::assert_snapshot!(snap, body));
    }
}

macro_rules! snapshot_tests {
    ($($test:ident: $name:literal on $target:ident;)*) => {
        $(
            #[test]
            fn $test() {
                check($name, Target::$target);
            }
        )*

        #[test]
        fn every_zoo_model_has_a_snapshot_test() {
            let covered: Vec<String> = vec![$(format!("{}.{}", $name, Target::$target.name())),*];
            let all: Vec<String> = zoo::all().iter().map(|m| m.id()).collect();
            assert_eq!(covered, all);
        }
    };
}

snapshot_tests! {
    add_trn1: "add" on Trn1;
    add_trn2: "add" on Trn2;
    matmul_bias_relu_trn1: "matmul_bias_relu" on Trn1;
    matmul_bias_relu_trn2: "matmul_bias_relu" on Trn2;
    mlp2_trn1: "mlp2" on Trn1;
    mlp2_trn2: "mlp2" on Trn2;
    transpose_trn1: "transpose" on Trn1;
    transpose_trn2: "transpose" on Trn2;
    reduce_trn1: "reduce" on Trn1;
    reduce_trn2: "reduce" on Trn2;
    lnc2_add_trn2: "lnc2_add" on Trn2;
    many_queues_trn1: "many_queues" on Trn1;
    many_queues_trn2: "many_queues" on Trn2;
    pseudo_trn1: "pseudo" on Trn1;
    pseudo_trn2: "pseudo" on Trn2;
    real_like_trn1: "real_like" on Trn1;
    real_like_trn2: "real_like" on Trn2;
    neuron_add_trn1: "neuron_add" on Trn1;
    neuron_add_trn2: "neuron_add" on Trn2;
    neuron_matmul_bias_act_trn1: "neuron_matmul_bias_act" on Trn1;
    neuron_matmul_bias_act_trn2: "neuron_matmul_bias_act" on Trn2;
    neuron_conv_pool_trn1: "neuron_conv_pool" on Trn1;
    neuron_conv_pool_trn2: "neuron_conv_pool" on Trn2;
    neuron_transpose_trn1: "neuron_transpose" on Trn1;
    neuron_transpose_trn2: "neuron_transpose" on Trn2;
    neuron_gather_trn1: "neuron_gather" on Trn1;
    neuron_gather_trn2: "neuron_gather" on Trn2;
}

#[test]
fn seeded_inputs_are_the_zoo_golden_inputs() {
    use nrt_runtime::tensor::{TensorInfo, TensorUsage};
    for m in zoo::all() {
        let infos: Vec<TensorInfo> = m
            .inputs
            .iter()
            .map(|t| TensorInfo {
                name: t.name.clone(),
                usage: TensorUsage::Input,
                size: t.size() as u64,
                dtype: t.dtype,
                shape: t.shape.iter().map(|d| *d as u64).collect(),
            })
            .collect();
        let ours: Vec<Vec<u8>> = seeded_inputs(&infos, GOLDEN_SEED)
            .into_iter()
            .map(|(_, b)| b)
            .collect();
        assert_eq!(ours, m.generate_inputs(GOLDEN_SEED), "{}", m.id());
    }
}

/// The current-compiler NEFF with a snapshot: nkipy's matmul (compiler 2.23, both cores of an
/// LNC=2 trn2; its DMAs issued by Pool and SP instructions through a DGE table). Read from
/// `../shared/current-neffs` (or `$NRT_EMU_CURRENT_NEFFS`); without it the test prints a skip
/// line. The trace names the var slots symbolically, so it must not move with the allocator.
#[test]
fn current_neff_matmul_small() {
    let dir = std::env::var_os("NRT_EMU_CURRENT_NEFFS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/current-neffs")
        });
    let path = dir.join("aws-neuron+nkipy--matmul_small.neff");
    let Ok(neff) = std::fs::read(&path) else {
        println!("SKIP current-neffs: {} not found", path.display());
        return;
    };
    let c = run_sim(&neff, &RunOptions::default()).unwrap();
    assert_eq!(c.target, Target::Trn2);
    let shifted = run_sim(
        &neff,
        &RunOptions {
            alloc_base_offset: 0x20_0000,
            ..RunOptions::default()
        },
    )
    .unwrap();
    assert_eq!(c.document(), shifted.document());
    let doc = c.document();
    assert!(!doc.contains("?0x"), "{doc}");
    assert!(
        doc.contains("dma.direct") && doc.contains("[slot #"),
        "{doc}"
    );
    for p in [Phase::Exec1, Phase::Exec2] {
        assert_eq!(c.phase(p).unwrap().result, "ok", "{p:?}");
    }
    assert_snapshots(
        &c,
        "current.matmul_small.trn2",
        "the current-compiler NEFF aws-neuron+nkipy--matmul_small on trn2",
    );
}
