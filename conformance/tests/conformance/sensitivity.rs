//! The snapshots catch a changed descriptor field.
//!
//! The runtime cannot be edited from here, so [`Mutator`] stands in for a changed runtime: a HAL
//! layer between the runtime and the recorder that alters one field of what the runtime
//! writes — the write-barrier bit of one TX descriptor, or a skip-config flag of the exec
//! request. The recorder sees exactly what a runtime with that change would write, and the run
//! is compared with the committed snapshot the way `snapshots.rs` compares it: it must
//! differ, first at the altered descriptor.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use std::collections::HashMap;

use nrt_conformance::{first_difference, run_on, Phase, RunOptions};
use nrt_fixtures::zoo;
use nrt_hal::abi::MemAllocCategory;
use nrt_hal::exec_request::REQUEST_BUFFER_SIZE;
use nrt_hal::hal::AllocRequest;
use nrt_hal::udma::TxMeta;
use nrt_hal::{Hal, HalResult, MemHandle, Target};
use nrt_sim::{Sim, SimConfig};

/// What the mutator alters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mutation {
    /// The write-barrier bit of TX descriptor 0 of the first whole ring the runtime writes (a
    /// model queue's ring, consumed through a re-point).
    BarrierInModelRing,
    /// The write-barrier bit of the first TX descriptor of the first batch the runtime appends
    /// (the IO queue's first swap pair).
    BarrierInAppendedPair,
    /// `reload_seq_config = 1` in every exec request (disables the skip-config path).
    AlwaysReloadSeqConfig,
}

struct Mutator {
    inner: Arc<dyn Hal>,
    mutation: Mutation,
    categories: Mutex<HashMap<MemHandle, MemAllocCategory>>,
    done: AtomicBool,
}

impl Mutator {
    fn alter(&self, handle: MemHandle, offset: u64, src: &[u8]) -> Vec<u8> {
        let mut b = src.to_vec();
        let cat = self.categories.lock().unwrap().get(&handle).copied();
        let tx_meta = |b: &[u8]| nrt_hal::le::u32_at(b, 4);
        let barrier = match (self.mutation, cat) {
            // A whole ring is at least 32 descriptors (512 bytes); the runtime appends pairs to
            // its exec and IO queues in smaller batches.
            (Mutation::BarrierInModelRing, Some(MemAllocCategory::DmaRingsDevice)) => {
                b.len() >= 512 && offset == 0 && tx_meta(&b) != 0
            }
            (Mutation::BarrierInAppendedPair, Some(MemAllocCategory::DmaRingsDevice)) => {
                b.len() < 512 && tx_meta(&b) != 0
            }
            (Mutation::AlwaysReloadSeqConfig, Some(MemAllocCategory::MiscDevice)) => {
                if b.len() == REQUEST_BUFFER_SIZE + 4 {
                    b[0x2C..0x30].copy_from_slice(&1u32.to_le_bytes());
                }
                false
            }
            _ => false,
        };
        if barrier && !self.done.swap(true, Ordering::SeqCst) {
            let m = tx_meta(&b) | TxMeta::WRITE_BARRIER.bits();
            b[4..8].copy_from_slice(&m.to_le_bytes());
        }
        b
    }
}

impl nrt_hal::HalLayer for Mutator {
    type Inner = dyn Hal;
    fn inner(&self) -> &Self::Inner {
        &*self.inner
    }
    fn mem_alloc(&self, req: &AllocRequest) -> HalResult<MemHandle> {
        let h = self.inner.mem_alloc(req)?;
        self.categories.lock().unwrap().insert(h, req.category);
        Ok(h)
    }
    fn mem_free(&self, handle: MemHandle) -> HalResult<()> {
        self.categories.lock().unwrap().remove(&handle);
        self.inner.mem_free(handle)
    }
    fn copy_to_device(&self, handle: MemHandle, offset: u64, src: &[u8]) -> HalResult<()> {
        let b = self.alter(handle, offset, src);
        self.inner.copy_to_device(handle, offset, &b)
    }
}

/// The body of a committed snapshot (what follows insta's `---` header).
fn committed(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.snap"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rest = text.strip_prefix("---\n").expect("an insta header");
    let at = rest.find("\n---\n").expect("the end of the insta header");
    rest[at + 5..].to_string()
}

/// Runs add.trn1 with `mutation` and returns each phase's text.
fn run(mutation: Option<Mutation>) -> Vec<(Phase, String)> {
    let m = zoo::build("add", Target::Trn1).unwrap();
    let sim: Arc<dyn Hal> = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
    let wrap = |h: Arc<dyn Hal>| -> Arc<dyn Hal> {
        match mutation {
            None => h,
            Some(mutation) => Arc::new(Mutator {
                inner: h,
                mutation,
                categories: Mutex::new(HashMap::new()),
                done: AtomicBool::new(false),
            }),
        }
    };
    let c = run_on(sim, &m.neff, &RunOptions::default(), &wrap).unwrap();
    c.phases.iter().map(|p| (p.phase, p.text())).collect()
}

/// The first difference between the committed snapshot of `phase` and `text`.
fn diff(phase: Phase, text: &str) -> Option<String> {
    first_difference(&committed(&format!("add.trn1.{}", phase.name())), text, 3)
}

#[test]
fn the_unaltered_runtime_matches_the_committed_snapshots() {
    for (phase, text) in run(None) {
        assert_eq!(diff(phase, &text), None, "{phase:?}");
    }
}

/// The `+` (actual) line at the first difference.
fn first_actual_line(report: &str) -> &str {
    report
        .lines()
        .find(|l| l.starts_with('+'))
        .expect("an actual side")
}

#[test]
fn a_write_barrier_bit_in_a_model_ring_fails_the_check() {
    let runs = run(Some(Mutation::BarrierInModelRing));
    // Load writes no ring contents for add (its one queue is dynamic), so load still matches;
    // both executions consume the altered ring through the re-point.
    assert_eq!(diff(Phase::Load, &runs[0].1), None);
    for (phase, text) in &runs[1..] {
        let d = diff(*phase, text).unwrap_or_else(|| panic!("{phase:?} did not change"));
        let line = first_actual_line(&d);
        assert!(
            line.contains("q e0.q0 tx[0] len=2048 id=1 FIRST|LAST meta=m2m|write_barrier"),
            "{phase:?}: {d}"
        );
        assert!(text.contains("host result ok"), "the device still ran it");
    }
}

#[test]
fn a_write_barrier_bit_in_an_appended_pair_fails_the_check() {
    let runs = run(Some(Mutation::BarrierInAppendedPair));
    let d = diff(Phase::Exec1, &runs[1].1).expect("exec1 changed");
    assert!(
        first_actual_line(&d)
            .contains("q e0.q12 tx[0] len=4 id=1 FIRST|LAST meta=m2m|write_barrier"),
        "{d}"
    );
    assert_eq!(
        diff(Phase::Exec2, &runs[2].1),
        None,
        "only one descriptor was altered"
    );
}

#[test]
fn losing_the_skip_config_path_fails_the_check() {
    let runs = run(Some(Mutation::AlwaysReloadSeqConfig));
    assert_eq!(diff(Phase::Exec1, &runs[1].1), None, "exec1 reloads anyway");
    let d = diff(Phase::Exec2, &runs[2].1).expect("exec2 changed");
    assert!(first_actual_line(&d).contains("reload_seq_config=1"), "{d}");
}
