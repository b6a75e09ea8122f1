//! Model checking of the runtime's concurrency kernels with loom: every interleaving (up to a
//! preemption bound) of the production code, with loom's atomics, mutexes and condition
//! variables swapped in through `nrt_runtime`'s `sync` seam.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p nrt-runtime --release --test loom -- --nocapture --test-threads=1`.
//! `LOOM_MAX_PREEMPTIONS` overrides every model's preemption bound. Each model prints how many
//! executions loom explored and how long it took.
//!
//! | module | kernel |
//! |---|---|
//! | `tnc` | the TNC cache's Creator / Reuse / Wait / Independent rendezvous, creator failure |
//! | `xu` | the execution unit's single-producer ring: publish, complete, retire, reuse |
//! | `exec` | the `compute_req_lock` ticket, lockstep staging vs doorbells, the async hand-off |

#![cfg(loom)]

#[path = "loom/exec.rs"]
mod exec;
#[path = "loom/tnc.rs"]
mod tnc;
#[path = "loom/xu.rs"]
mod xu;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Checks `model` under loom and reports the number of executions explored. `preemptions`
/// is the model's default bound (`None`: exhaustive); `LOOM_MAX_PREEMPTIONS` overrides it.
///
/// Every actor of a model runs on a spawned thread and the model's own thread only spawns,
/// joins and checks: loom explored far fewer interleavings (down to a single one) when the
/// model's thread raced its spawned threads itself.
pub fn explore(name: &str, preemptions: Option<usize>, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = ::loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = preemptions;
    }
    let bound = builder
        .preemption_bound
        .map_or("none".to_string(), |b| b.to_string());
    let executions = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&executions);
    let start = Instant::now();
    builder.check(move || {
        counted.fetch_add(1, Ordering::Relaxed);
        model();
    });
    println!(
        "loom: {name}: {} executions explored in {:.2?} (preemption bound {bound})",
        executions.load(Ordering::Relaxed),
        start.elapsed()
    );
}
