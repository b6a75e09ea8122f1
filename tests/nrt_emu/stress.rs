//! Concurrency stress of the runtime on the simulator (issue #8, part 3).
//!
//! Eight worker threads drive one simulated device per phase — trn1 (2 logical cores, sync
//! execution mode) and trn2 (4 logical cores of 2 physical cores each, async mode with 4
//! requests in flight) — with a random mix of `load`, `unload`, `execute`, `execute_async` +
//! `wait`/`poll`, tensor allocation, and executions of models pooled between threads (so
//! executions race with other threads' unloads), while the simulator injects faults from a
//! seeded [`FaultPlan`]: failed allocations, aborted DMA queues, corrupted completion entries,
//! (trn2) a hung engine, and HBM errors injected into inputs at run time.
//! `NRT_STRESS_FAULTS` (comma-separated `alloc,abort,hang,corrupt,ue`; empty for none) picks a
//! subset. (Aborts, corrupted entries and HBM errors used to be off: with them an execution
//! queued behind a faulted one on the same core occasionally reported success with wrong
//! outputs; see `fault_recovery`.)
//!
//! Each worker's schedule comes from its own splitmix64 stream of the run's seed, printed at the
//! start; `NRT_STRESS_SEED=<n>` replays a seed, `NRT_STRESS_OPS=<n>` changes the operations per
//! worker and phase.
//!
//! What it checks:
//!
//! - **Documented statuses only.** Every call returns `Ok` or a status on that operation's
//!   explicit allow-list (see `allowed` and the table above it), never a panic.
//! - **No deadlock.** A watchdog fails the test (aborts the process) when no worker finished an
//!   operation for [`STALL_LIMIT`], after printing what each worker was doing and for how long,
//!   and every thread's kernel state (`/proc/self/task/*`: name, state, `wchan`, `syscall`).
//! - **Correct results.** Every successful execution's outputs equal the model's f64 reference
//!   (the zoo's reference implementation, within the model's documented tolerance); outputs are
//!   filled with NaN bytes before each execution so a stale buffer cannot pass.
//! - **No leak.** After each phase, once everything is unloaded and freed, each core's device
//!   memory accounting (bytes per category and live allocations) equals its value before the
//!   phase, and the process's thread count (`/proc/self/status`) is back to its starting value
//!   (so the test runs alone in a child process of the test binary, `alloc_count::run_alone`).
//!
//! At the end it prints the operation counts by kind and outcome, and the faults injected.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nrt_emu::hal::{DmaEngine, EngineKind, Hal, NcIndex, QueueId, QueueRef, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::exec::worker::ExecRequest;
use nrt_emu::runtime::tensor::{Placement, TensorSet};
use nrt_emu::runtime::{Error, ModelId, NrtStatus, Runtime};
use nrt_emu::sim::{FaultPlan, Sim, SimConfig};
use nrt_fixtures::{decode_values, zoo, ZooModel};

/// Fail the run when no worker finished an operation for this long. The longest single
/// operation is bounded by a few execution timeouts (an unload draining a hung execution, a
/// backpressure wait), far below it.
const STALL_LIMIT: Duration = Duration::from_secs(20);
/// `NEURON_RT_EXEC_TIMEOUT` for the runs: short, so hung executions cost little.
const EXEC_TIMEOUT: Duration = Duration::from_millis(400);
const WORKERS: usize = 8;
/// Operations per worker and phase (overridable with `NRT_STRESS_OPS`).
const DEFAULT_OPS: u64 = 300;
/// Input seeds per model: executions use one at random, so a stale output of another would show.
const INPUT_SEEDS: u64 = 3;
/// Models a worker holds at most.
const MAX_OWNED: usize = 3;

// ---------------------------------------------------------------------------------------------
// Seeded randomness
// ---------------------------------------------------------------------------------------------

/// Every schedule and fault plan comes from the zoo's SplitMix64, seeded from the run's seed.
use nrt_fixtures::rng::SplitMix64 as Rng;

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

// ---------------------------------------------------------------------------------------------
// Models and their expected outputs
// ---------------------------------------------------------------------------------------------

/// One input set (bytes per input) and its reference outputs (values per output).
type Run = (Vec<Vec<u8>>, Vec<Vec<f64>>);

struct Case {
    m: ZooModel,
    /// Per input seed: the input bytes and the reference outputs.
    runs: Vec<Run>,
}

impl Case {
    fn new(name: &str, target: Target) -> Arc<Case> {
        let m = zoo::build(name, target).expect("a zoo model");
        let runs = (0..INPUT_SEEDS)
            .map(|s| {
                let inputs = m.generate_inputs(0x57E5_5000 + s);
                let want = m.reference_outputs(&inputs);
                (inputs, want)
            })
            .collect();
        Arc::new(Case { m, runs })
    }

    /// Checks output bytes against run `run`'s reference within the model's tolerance.
    fn check(&self, run: usize, outs: &TensorSet) -> Result<(), String> {
        let want = &self.runs[run].1;
        for (spec, want) in self.m.outputs.iter().zip(want) {
            let t = outs.get(&spec.name).ok_or("output tensor missing")?;
            let bytes = t.to_vec().map_err(|e| e.to_string())?;
            let got = decode_values(spec.dtype, &bytes);
            for (i, (g, w)) in got.iter().zip(want).enumerate() {
                // NaN compares false, so a NaN output is out of tolerance.
                let within = (g - w).abs() <= self.m.tolerance * w.abs().max(1.0);
                if !within {
                    return Err(format!(
                        "{} run {run}: output {}[{i}] = {g}, reference {w}",
                        self.m.id(),
                        spec.name
                    ));
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Operations, their allow-lists, and the statistics
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Op {
    Load,
    /// An execute of a pooled model (another worker may unload it meanwhile).
    ExecutePooled,
    /// An execute_async of a pooled model.
    ExecuteAsyncPooled,
    Unload,
    TensorAllocate,
    Execute,
    ExecuteAsync,
    Wait,
    Poll,
    InjectHbmUe,
}

/// The statuses each operation may return besides success, and why:
///
/// | op | status | when |
/// |---|---|---|
/// | load | `NRT_RESOURCE` (4) | an injected allocation failure, or the core's DMA queues are all taken |
/// | load | `NRT_HW_ERROR` (6)? no: loads make no device wait; not allowed |
/// | tensor_allocate | `NRT_RESOURCE` | an injected allocation failure |
/// | execute, wait | `NRT_RESOURCE` | an injected failure of a per-execution allocation (host-tensor staging copy, the core's exec state) |
/// | execute, wait | `NRT_TIMEOUT` (5) | the hung engine (the execution never completes) |
/// | execute, wait | `NRT_EXEC_UNIT_UNRECOVERABLE` (101) | the logical core was poisoned by an earlier fault and not yet recovered by a reload, or the execution ran on a core behind a faulted one |
/// | execute, wait | `NRT_EXEC_HW_ERR_HBM_UE` (1201) | an input tensor holds an injected HBM error |
/// | execute, wait | `NRT_EXEC_HW_ERR_DMA_ABORT` (1203) | an injected DMA queue abort |
/// | execute, wait | `NRT_EXEC_SW_NQ_OVERFLOW` (1204) | an injected corrupted completion entry |
/// | execute_async | as execute, plus `NRT_TIMEOUT` for backpressure that saw no retirement within the timeout |
/// | wait | `NRT_TIMEOUT` for a request that is not complete within the caller's timeout |
/// | execute, execute_async of a pooled model | as above, plus `NRT_INVALID_HANDLE` (3): another worker unloaded it first |
/// | unload | none |
/// | poll | (no status: `None` or a result, checked as wait's) |
fn pooled_op(op: Op, pooled: bool) -> Op {
    match (op, pooled) {
        (Op::Execute, true) => Op::ExecutePooled,
        (Op::ExecuteAsync, true) => Op::ExecuteAsyncPooled,
        _ => op,
    }
}

fn allowed(op: Op, s: NrtStatus) -> bool {
    use NrtStatus as S;
    let exec = [
        S::Resource,
        S::Timeout,
        S::ExecUnitUnrecoverable,
        S::ExecHwErrHbmUe,
        S::ExecHwErrDmaAbort,
        S::ExecSwNqOverflow,
    ];
    match op {
        Op::Load | Op::TensorAllocate => s == S::Resource,
        Op::Execute | Op::ExecuteAsync | Op::Wait | Op::Poll => exec.contains(&s),
        Op::ExecutePooled | Op::ExecuteAsyncPooled => exec.contains(&s) || s == S::InvalidHandle,
        Op::Unload | Op::InjectHbmUe => false,
    }
}

#[derive(Default)]
struct Stats {
    /// (op, outcome) → count; the outcome is "ok" or the status name.
    counts: BTreeMap<(Op, &'static str), u64>,
}

impl Stats {
    fn add(&mut self, op: Op, outcome: &'static str) {
        *self.counts.entry((op, outcome)).or_default() += 1;
    }
    fn merge(&mut self, o: &Stats) {
        for (k, v) in &o.counts {
            *self.counts.entry(*k).or_default() += v;
        }
    }
    fn total(&self) -> u64 {
        self.counts.values().sum()
    }
    fn of(&self, op: Op) -> u64 {
        self.counts
            .iter()
            .filter(|((o, _), _)| *o == op)
            .map(|(_, v)| v)
            .sum()
    }
    fn ok(&self, op: Op) -> u64 {
        self.counts.get(&(op, "ok")).copied().unwrap_or(0)
    }
}

// ---------------------------------------------------------------------------------------------
// The watchdog's view of the workers
// ---------------------------------------------------------------------------------------------

struct Board {
    /// Per worker: what it is doing and since when (`None` between operations).
    doing: Vec<Mutex<Option<(String, Instant)>>>,
    /// Operations finished by all workers.
    progress: AtomicU64,
    done: AtomicBool,
}

impl Board {
    fn new(n: usize) -> Board {
        Board {
            doing: (0..n).map(|_| Mutex::new(None)).collect(),
            progress: AtomicU64::new(0),
            done: AtomicBool::new(false),
        }
    }
    fn start(&self, w: usize, what: String) {
        *self.doing[w].lock().unwrap() = Some((what, Instant::now()));
    }
    fn finish(&self, w: usize) {
        *self.doing[w].lock().unwrap() = None;
        self.progress.fetch_add(1, Ordering::SeqCst);
    }
}

/// Every thread of the process with its kernel state: name, state letter, the kernel function
/// it sleeps in and the syscall it is blocked in.
fn thread_dump() -> String {
    let mut out = String::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return "(no /proc/self/task)".into();
    };
    let mut tids: Vec<_> = dir
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    tids.sort();
    for tid in tids {
        let read = |f: &str| {
            std::fs::read_to_string(format!("/proc/self/task/{tid}/{f}"))
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        let stat = read("stat");
        // The state letter follows the parenthesised name.
        let state = stat
            .rsplit_once(") ")
            .and_then(|(_, r)| r.split(' ').next())
            .unwrap_or("?")
            .to_string();
        out += &format!(
            "  tid {tid} [{}] state {state} wchan {} syscall {}\n",
            read("comm"),
            read("wchan"),
            read("syscall")
        );
    }
    out
}

fn spawn_watchdog(board: Arc<Board>, phase: &'static str) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("stress-watchdog".into())
        .spawn(move || {
            let mut last = board.progress.load(Ordering::SeqCst);
            let mut since = Instant::now();
            while !board.done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(100));
                let now = board.progress.load(Ordering::SeqCst);
                if now != last {
                    last = now;
                    since = Instant::now();
                    continue;
                }
                if since.elapsed() < STALL_LIMIT {
                    continue;
                }
                let mut msg = format!(
                    "\nSTRESS WATCHDOG ({phase}): no operation finished for {STALL_LIMIT:?} ({now} finished so far) — deadlock?\nworkers:\n"
                );
                for (i, d) in board.doing.iter().enumerate() {
                    let what = match d.try_lock() {
                        Ok(g) => match &*g {
                            Some((op, t)) => format!("{op} (for {:?})", t.elapsed()),
                            None => "between operations".into(),
                        },
                        Err(_) => "(status locked)".into(),
                    };
                    msg += &format!("  worker {i}: {what}\n");
                }
                msg += "threads (/proc/self/task):\n";
                msg += &thread_dump();
                eprintln!("{msg}");
                // A deadlocked worker can never be joined: end the process, failing the test.
                std::process::abort();
            }
        })
        .expect("spawning the watchdog")
}

// ---------------------------------------------------------------------------------------------
// Accounting
// ---------------------------------------------------------------------------------------------

fn thread_count() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    s.lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("a Threads: line")
}

// ---------------------------------------------------------------------------------------------
// One worker
// ---------------------------------------------------------------------------------------------

struct Phase {
    rt: Runtime,
    sim: Arc<Sim>,
    cases: Vec<Arc<Case>>,
    /// Models any worker may execute or unload (published by the worker that loaded them), so
    /// executions race with other threads' unloads of the same model.
    pool: Mutex<Vec<(Arc<Case>, ModelId)>>,
    board: Arc<Board>,
    ops: u64,
    async_mode: bool,
    /// Whether workers inject HBM errors into their inputs (`NRT_STRESS_FAULTS` without `ue`
    /// turns it off).
    inject_ue: bool,
}

struct Owned {
    case: Arc<Case>,
    id: ModelId,
}

struct Pending {
    req: ExecRequest,
    case: Arc<Case>,
    run: usize,
    /// Kept alive until the result is in: the device reads and writes them.
    sets: (TensorSet, TensorSet),
}

struct Worker<'a> {
    p: &'a Phase,
    w: usize,
    rng: Rng,
    owned: Vec<Owned>,
    pending: Vec<Pending>,
    /// Tensors holding an injected HBM error: kept until every worker of the phase is done, so
    /// no later allocation reuses the poisoned address (the simulator never clears it).
    quarantine: Vec<TensorSet>,
    stats: Stats,
    failures: Vec<String>,
}

impl Worker<'_> {
    fn outcome(&mut self, op: Op, r: &Result<(), Error>, what: &str) {
        match r {
            Ok(()) => self.stats.add(op, "ok"),
            Err(e) => {
                self.stats.add(op, e.status.name());
                if !allowed(op, e.status) {
                    self.failures.push(format!(
                        "worker {} {what}: {op:?} returned undocumented {e}",
                        self.w
                    ));
                }
                if e.message.is_empty() {
                    self.failures.push(format!(
                        "worker {} {what}: {op:?} error without message",
                        self.w
                    ));
                }
            }
        }
    }

    /// Device tensor sets for `case` on `vnc` holding run `run`'s inputs, outputs NaN-filled.
    /// `placement` applies to sync executions (host and virtual tensors are staged).
    fn sets(
        &mut self,
        case: &Case,
        vnc: u32,
        run: usize,
        placement: Placement,
    ) -> Option<(TensorSet, TensorSet)> {
        let rt = &self.p.rt;
        let mut ins = TensorSet::new();
        let mut outs = TensorSet::new();
        let specs = case.m.inputs.iter().map(|s| (s, true));
        let specs = specs.chain(case.m.outputs.iter().map(|s| (s, false)));
        let mut input_i = 0;
        for (spec, is_input) in specs {
            let r = rt.tensor_allocate(placement, vnc, spec.size() as u64, &spec.name);
            let t = match r {
                Ok(t) => {
                    self.stats.add(Op::TensorAllocate, "ok");
                    t
                }
                Err(e) => {
                    self.outcome(Op::TensorAllocate, &Err(e), &case.m.id());
                    return None;
                }
            };
            if is_input {
                t.write(0, &case.runs[run].0[input_i]).expect("input write");
                input_i += 1;
                ins.add(&spec.name, t);
            } else {
                t.memset(0, 0xFF, t.size()).expect("output fill");
                outs.add(&spec.name, t);
            }
        }
        Some((ins, outs))
    }

    /// A model to execute: one of ours, or one of the pool (`true`: another worker may unload
    /// it at any moment, so `NRT_INVALID_HANDLE` is a documented answer for it), with its
    /// logical core.
    fn pick_model(&mut self) -> Option<(Arc<Case>, ModelId, bool, u32)> {
        let pool = self.p.pool.lock().unwrap().clone();
        let n = self.owned.len() + pool.len();
        if n == 0 {
            return None;
        }
        let i = self.rng.below(n as u64) as usize;
        let (case, id, pooled) = if i < pool.len() {
            let (c, id) = &pool[i];
            (c.clone(), *id, true)
        } else {
            let o = &self.owned[i - pool.len()];
            (o.case.clone(), o.id, false)
        };
        match self.p.rt.model(id) {
            Ok(m) => Some((case, id, pooled, m.vnc)),
            Err(e) if pooled => {
                self.stats.add(Op::Execute, e.status.name());
                None
            }
            Err(e) => {
                self.failures.push(format!(
                    "worker {}: own model {} vanished: {e}",
                    self.w, id.0
                ));
                None
            }
        }
    }

    fn check_result(&mut self, op: Op, case: &Case, run: usize, outs: &TensorSet, what: &str) {
        if let Err(e) = case.check(run, outs) {
            self.failures.push(format!(
                "worker {} {what}: {op:?} succeeded with wrong outputs: {e}",
                self.w
            ));
        }
    }

    fn op_load(&mut self) {
        if self.owned.len() >= MAX_OWNED {
            return self.op_unload();
        }
        let case = self.p.cases[self.rng.below(self.p.cases.len() as u64) as usize].clone();
        let rt = &self.p.rt;
        let vcores = rt.vcore_count();
        let mut vnc = if self.rng.chance(30) {
            -1
        } else {
            self.rng.below(vcores as u64) as i32
        };
        // A poisoned core recovers at a load only when no other model is on it. Loads that
        // keep landing on it while other workers' models are still there keep it poisoned,
        // so a load goes to a poisoned core only when it is empty (and will recover it);
        // otherwise to a healthy core, or nowhere. `heal` empties poisoned cores.
        if (0..vcores).any(|v| rt.is_poisoned(v)) {
            let models = rt.models();
            let usable = |v: u32| {
                !rt.is_poisoned(v)
                    || !models
                        .iter()
                        .any(|&id| rt.model(id).is_ok_and(|m| m.vnc == v))
            };
            if vnc < 0 || !usable(vnc as u32) {
                let ok: Vec<u32> = (0..vcores).filter(|&v| usable(v)).collect();
                if ok.is_empty() {
                    return;
                }
                vnc = ok[self.rng.below(ok.len() as u64) as usize] as i32;
            }
        }
        let what = format!("load {} on vnc {vnc}", case.m.id());
        self.p.board.start(self.w, what.clone());
        let r = self.p.rt.load(&case.m.neff, vnc);
        self.p.board.finish(self.w);
        match r {
            Ok(id) => {
                self.stats.add(Op::Load, "ok");
                let mut pool = self.p.pool.lock().unwrap();
                if pool.len() < 2 * MAX_OWNED && self.rng.chance(30) {
                    pool.push((case, id));
                } else {
                    drop(pool);
                    self.owned.push(Owned { case, id });
                }
            }
            Err(e) => self.outcome(Op::Load, &Err(e), &what),
        }
    }

    fn op_unload(&mut self) {
        if self.rng.chance(30) {
            let mut pool = self.p.pool.lock().unwrap();
            if !pool.is_empty() {
                let i = self.rng.below(pool.len() as u64) as usize;
                let (case, id) = pool.swap_remove(i);
                drop(pool);
                let what = format!("unload pooled {} (model {})", case.m.id(), id.0);
                self.p.board.start(self.w, what.clone());
                let r = self.p.rt.unload(id);
                self.p.board.finish(self.w);
                return self.outcome(Op::Unload, &r, &what);
            }
        }
        if self.owned.is_empty() {
            return self.op_load();
        }
        let i = self.rng.below(self.owned.len() as u64) as usize;
        let o = self.owned.swap_remove(i);
        let what = format!("unload {} (model {})", o.case.m.id(), o.id.0);
        self.p.board.start(self.w, what.clone());
        let r = self.p.rt.unload(o.id);
        self.p.board.finish(self.w);
        self.outcome(Op::Unload, &r, &what);
    }

    fn op_execute(&mut self) {
        let Some((case, id, pooled, vnc)) = self.pick_model() else {
            return self.op_load();
        };
        let run = self.rng.below(INPUT_SEEDS) as usize;
        let placement = if self.p.async_mode {
            Placement::Device
        } else {
            [
                Placement::Device,
                Placement::Device,
                Placement::Host,
                Placement::Virtual,
            ][self.rng.below(4) as usize]
        };
        let Some((ins, outs)) = self.sets(&case, vnc, run, placement) else {
            return;
        };
        let what = format!(
            "execute {} (model {}, vnc {vnc}, {placement:?})",
            case.m.id(),
            id.0
        );
        self.p.board.start(self.w, what.clone());
        let r = self.p.rt.execute(id, &ins, &outs).map(|_| ());
        self.p.board.finish(self.w);
        if r.is_ok() {
            self.check_result(Op::Execute, &case, run, &outs, &what);
        }
        self.outcome(pooled_op(Op::Execute, pooled), &r, &what);
    }

    fn op_execute_async(&mut self) {
        let Some((case, id, pooled, vnc)) = self.pick_model() else {
            return self.op_load();
        };
        let run = self.rng.below(INPUT_SEEDS) as usize;
        let Some(sets) = self.sets(&case, vnc, run, Placement::Device) else {
            return;
        };
        let what = format!("execute_async {} (model {}, vnc {vnc})", case.m.id(), id.0);
        self.p.board.start(self.w, what.clone());
        let r = self.p.rt.execute_async(id, &sets.0, &sets.1);
        self.p.board.finish(self.w);
        match r {
            Ok(req) => {
                self.stats.add(Op::ExecuteAsync, "ok");
                self.pending.push(Pending {
                    req,
                    case,
                    run,
                    sets,
                });
                // Half the time wait at once; otherwise the request stays pending for a later
                // wait or poll (and possibly an unload of its model first).
                if self.rng.chance(50) {
                    self.op_wait();
                }
            }
            Err(e) => self.outcome(pooled_op(Op::ExecuteAsync, pooled), &Err(e), &what),
        }
    }

    fn op_wait(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let i = self.rng.below(self.pending.len() as u64) as usize;
        // Mostly generous; sometimes short enough to time out on a request still running.
        let timeout = if self.rng.chance(15) {
            Duration::from_millis(1)
        } else {
            Duration::from_secs(10)
        };
        let req = self.pending[i].req;
        let what = format!("wait {:#x} ({timeout:?})", req.seq_id);
        self.p.board.start(self.w, what.clone());
        let r = self.p.rt.wait(req, timeout);
        self.p.board.finish(self.w);
        match r {
            Err(e) if e.status == NrtStatus::Timeout && timeout < EXEC_TIMEOUT => {
                // Still running: keep it for later.
                self.stats.add(Op::Wait, "NRT_TIMEOUT(caller)");
            }
            r => {
                let p = self.pending.swap_remove(i);
                if r.is_ok() {
                    self.check_result(Op::Wait, &p.case, p.run, &p.sets.1, &what);
                }
                self.outcome(Op::Wait, &r.map(|_| ()), &what);
            }
        }
    }

    fn op_poll(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let i = self.rng.below(self.pending.len() as u64) as usize;
        let req = self.pending[i].req;
        let what = format!("poll {:#x}", req.seq_id);
        self.p.board.start(self.w, what.clone());
        let r = self.p.rt.poll(req);
        self.p.board.finish(self.w);
        match r {
            None => self.stats.add(Op::Poll, "pending"),
            Some(r) => {
                let p = self.pending.swap_remove(i);
                if r.is_ok() {
                    self.check_result(Op::Poll, &p.case, p.run, &p.sets.1, &what);
                }
                self.outcome(Op::Poll, &r.map(|_| ()), &what);
            }
        }
    }

    /// Poisons one of a fresh input tensor's bytes with an HBM uncorrectable error, executes,
    /// and requires exactly `NRT_EXEC_HW_ERR_HBM_UE` (or 101 on an already poisoned core, or
    /// a timeout on the hung core).
    fn op_inject_hbm_ue(&mut self) {
        let Some((case, id, pooled, vnc)) = self.pick_model() else {
            return;
        };
        let Some((ins, outs)) = self.sets(&case, vnc, 0, Placement::Device) else {
            return;
        };
        let (_, t) = ins.iter().next().expect("an input");
        let addr = t.device_addr().expect("a device tensor");
        let off = self.rng.below(t.size());
        self.p
            .sim
            .inject_hbm_uncorrectable(addr.checked_add(off).expect("in the tensor"));
        self.stats.add(Op::InjectHbmUe, "ok");
        let what = format!("execute {} with an HBM error in its input", case.m.id());
        self.p.board.start(self.w, what.clone());
        let r = self.p.rt.execute(id, &ins, &outs);
        self.p.board.finish(self.w);
        match &r {
            Ok(_) => self.failures.push(format!(
                "worker {} {what}: succeeded despite the uncorrectable error",
                self.w
            )),
            Err(e) => {
                self.stats.add(Op::Execute, e.status.name());
                let ok = matches!(
                    e.status,
                    NrtStatus::ExecHwErrHbmUe
                        | NrtStatus::ExecUnitUnrecoverable
                        | NrtStatus::Timeout
                        | NrtStatus::Resource
                        | NrtStatus::ExecHwErrDmaAbort
                        | NrtStatus::ExecSwNqOverflow
                ) || (pooled && e.status == NrtStatus::InvalidHandle);
                if !ok {
                    self.failures
                        .push(format!("worker {} {what}: undocumented {e}", self.w));
                }
            }
        }
        self.quarantine.push(ins);
    }

    /// A poisoned logical core answers 101 until it is reloaded with nothing else on it: a
    /// worker that sees its core poisoned unloads its models there, so recovery can happen.
    fn heal(&mut self) {
        let rt = &self.p.rt;
        let poisoned: Vec<usize> = self
            .owned
            .iter()
            .enumerate()
            .filter(|(_, o)| rt.model(o.id).is_ok_and(|m| rt.is_poisoned(m.vnc)))
            .map(|(i, _)| i)
            .collect();
        let mut ids: Vec<ModelId> = poisoned
            .into_iter()
            .rev()
            .map(|i| self.owned.swap_remove(i).id)
            .collect();
        {
            let mut pool = self.p.pool.lock().unwrap();
            pool.retain(|(_, id)| {
                let sick = rt.model(*id).is_ok_and(|m| rt.is_poisoned(m.vnc));
                if sick {
                    ids.push(*id);
                }
                !sick
            });
        }
        for id in ids {
            let what = format!("unload model {} (poisoned core)", id.0);
            self.p.board.start(self.w, what.clone());
            let r = rt.unload(id);
            self.p.board.finish(self.w);
            self.outcome(Op::Unload, &r, &what);
        }
    }

    fn run(&mut self) {
        for _ in 0..self.p.ops {
            match self.rng.below(100) {
                0..=14 => self.op_load(),
                15..=24 => self.op_unload(),
                25..=59 => self.op_execute(),
                60..=79 => self.op_execute_async(),
                80..=89 => self.op_wait(),
                90..=97 => self.op_poll(),
                _ if self.p.inject_ue => self.op_inject_hbm_ue(),
                _ => self.op_execute(),
            }
            // After every operation: with faults on, cores are poisoned often, and a core
            // only recovers once every model on it is unloaded.
            self.heal();
        }
        // Drain: every outstanding request gets a result.
        while let Some(p) = self.pending.pop() {
            let what = format!("final wait {:#x}", p.req.seq_id);
            self.p.board.start(self.w, what.clone());
            let r = self.p.rt.wait(p.req, Duration::from_secs(10));
            self.p.board.finish(self.w);
            if r.is_ok() {
                self.check_result(Op::Wait, &p.case, p.run, &p.sets.1, &what);
            }
            self.outcome(Op::Wait, &r.map(|_| ()), &what);
        }
        for o in std::mem::take(&mut self.owned) {
            let what = format!("final unload {}", o.case.m.id());
            self.p.board.start(self.w, what.clone());
            let r = self.p.rt.unload(o.id);
            self.p.board.finish(self.w);
            self.outcome(Op::Unload, &r, &what);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A phase
// ---------------------------------------------------------------------------------------------

/// The faults of a phase: a few failed allocations, aborted queues among those the runtime
/// hands out first, corrupted completions, and on trn2 one hung engine.
fn fault_plan(rng: &mut Rng, target: Target) -> FaultPlan {
    let spec = target.spec();
    let mut plan = FaultPlan::none();
    for _ in 0..6 {
        plan.fail_allocations.push(1 + rng.below(3000));
    }
    for _ in 0..4 {
        plan.abort_queues.push(QueueRef::new(
            NcIndex(rng.below(spec.nc_count as u64) as u32),
            DmaEngine(rng.below(2) as u32),
            QueueId(rng.below(8) as u32),
        ));
    }
    for _ in 0..4 {
        plan.corrupt_completions.push(1 + rng.below(1500));
    }
    if target == Target::Trn2 {
        plan.hung_engines.push((
            NcIndex(rng.below(spec.nc_count as u64) as u32),
            EngineKind::ALL[rng.below(5) as usize],
        ));
    }
    plan.fail_allocations.sort_unstable();
    plan.corrupt_completions.sort_unstable();
    plan
}

/// Brings the runtime to a state comparable before and after a phase: on every logical core a
/// model is loaded (recovering the core if it is poisoned), executed once (creating the
/// per-core execution state — exec and IO rings, request page, notification queue — that lives
/// as long as the runtime) and unloaded. The execution's result does not matter, as long as it
/// was staged: an injected allocation failure while staging (`NRT_RESOURCE`) poisons the core
/// before its execution state exists, and a poisoned core answers 101 without staging, so on
/// either the model is unloaded and loaded again (which recovers the core) and the execution
/// retried.
fn settle(rt: &Runtime, case: &Case) {
    for v in 0..rt.vcore_count() {
        for _ in 0..20 {
            // Retried: an injected allocation failure fires once.
            let id = (0..10)
                .find_map(|_| rt.load(&case.m.neff, v as i32).ok())
                .expect("a load for settling");
            let mut ins = TensorSet::new();
            let mut outs = TensorSet::new();
            let mut ok = true;
            for (i, spec) in case.m.inputs.iter().chain(&case.m.outputs).enumerate() {
                match rt.tensor_allocate(Placement::Device, v, spec.size() as u64, &spec.name) {
                    Ok(t) if i < case.m.inputs.len() => ins.add(&spec.name, t),
                    Ok(t) => outs.add(&spec.name, t),
                    Err(_) => ok = false,
                }
            }
            let staged = ok
                && !rt.execute(id, &ins, &outs).is_err_and(|e| {
                    matches!(
                        e.status,
                        NrtStatus::Resource | NrtStatus::ExecUnitUnrecoverable
                    )
                });
            rt.unload(id).expect("unload while settling");
            if staged {
                break;
            }
        }
    }
}

/// `NRT_STRESS_FAULTS`, or the default fault kinds.
fn fault_kinds() -> String {
    std::env::var("NRT_STRESS_FAULTS").unwrap_or_else(|_| "alloc,abort,hang,corrupt,ue".into())
}

/// Drops the faults of `plan` whose kind [`fault_kinds`] does not name.
fn keep_fault_kinds(plan: &mut FaultPlan) {
    // Which fault kinds to inject (comma-separated: alloc, abort, hang, corrupt, ue; empty for
    // none); all by default.
    let keep = fault_kinds();
    let has = |k: &str| keep.split(',').any(|x| x.trim() == k);
    if !has("alloc") {
        plan.fail_allocations.clear();
    }
    if !has("abort") {
        plan.abort_queues.clear();
    }
    if !has("hang") {
        plan.hung_engines.clear();
    }
    if !has("corrupt") {
        plan.corrupt_completions.clear();
    }
}

/// The models a phase of `target` loads and executes; the last one spans every core of a
/// logical core (lnc2_add on trn2).
fn phase_cases(target: Target) -> Vec<Arc<Case>> {
    let mut names = vec![
        "add",
        "matmul_bias_relu",
        "mlp2",
        "transpose",
        "reduce",
        "many_queues",
    ];
    if target == Target::Trn2 {
        names.push("lnc2_add");
    }
    names.iter().map(|n| Case::new(n, target)).collect()
}

/// What one worker hands back: its counts, its failures and the output sets it quarantined.
type Outcome = (Stats, Vec<String>, Vec<TensorSet>);

/// Runs the phase's `WORKERS` workers to completion, each with its own seeded stream.
fn run_workers(phase: &Phase, seed: u64, target: Target) -> Vec<Outcome> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..WORKERS)
            .map(|w| {
                let rng = Rng::new(seed ^ ((w as u64 + 1) << 32) ^ target as u64);
                std::thread::Builder::new()
                    .name(format!("stress-w{w}"))
                    .spawn_scoped(s, move || {
                        let mut worker = Worker {
                            p: phase,
                            w,
                            rng,
                            owned: Vec::new(),
                            pending: Vec::new(),
                            quarantine: Vec::new(),
                            stats: Stats::default(),
                            failures: Vec::new(),
                        };
                        worker.run();
                        (worker.stats, worker.failures, worker.quarantine)
                    })
                    .expect("spawning a worker")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| panic!("a worker panicked")))
            .collect()
    })
}

fn run_phase(
    name: &'static str,
    target: Target,
    async_mode: bool,
    seed: u64,
    ops: u64,
) -> (Stats, FaultPlan) {
    let mut rng = Rng::new(seed ^ target as u64);
    let mut plan = fault_plan(&mut rng, target);
    keep_fault_kinds(&mut plan);
    eprintln!("[{name}] faults: {plan:?}");
    let threads_before = thread_count();
    let sim = Arc::new(Sim::new(SimConfig::new(target).with_faults(plan.clone())));
    let cfg = RuntimeConfig {
        exec_timeout: EXEC_TIMEOUT,
        async_max_inflight: if async_mode { 4 } else { 0 },
        ..RuntimeConfig::default()
    };
    let rt = Runtime::new(sim.clone() as Arc<dyn Hal>, cfg).expect("runtime");
    let cases = phase_cases(target);
    // The settling model spans every core of a logical core (lnc2_add on trn2).
    let settler = cases.last().expect("cases").clone();
    settle(&rt, &settler);
    let usage_before = crate::support::core_usage(&*sim);
    let board = Arc::new(Board::new(WORKERS));
    let phase = Phase {
        rt,
        sim: sim.clone(),
        cases,
        pool: Mutex::new(Vec::new()),
        board: board.clone(),
        ops,
        async_mode,
        inject_ue: fault_kinds().split(',').any(|x| x.trim() == "ue"),
    };
    let dog = spawn_watchdog(board.clone(), name);
    let started = Instant::now();
    let results = run_workers(&phase, seed, target);
    board.done.store(true, Ordering::SeqCst);
    dog.join().expect("watchdog");
    let elapsed = started.elapsed();
    let mut stats = Stats::default();
    let mut failures = Vec::new();
    for (s, f, _) in &results {
        stats.merge(s);
        failures.extend(f.iter().cloned());
    }
    drop(results);
    for (_, id) in phase.pool.lock().unwrap().drain(..) {
        phase.rt.unload(id).expect("unloading a pooled model");
    }
    settle(&phase.rt, &settler);
    let usage_after = crate::support::core_usage(&*sim);
    drop(phase);
    eprintln!(
        "[{name}] {} operations in {elapsed:?}: {:#?}",
        stats.total(),
        stats.counts
    );
    assert!(
        failures.is_empty(),
        "[{name}] {} failures (seed {seed:#x}):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(
        usage_after, usage_before,
        "[{name}] device memory accounting after the phase differs from before (seed {seed:#x})"
    );
    assert_eq!(
        thread_count(),
        threads_before,
        "[{name}] thread count after the phase differs from before"
    );
    // The phase did real work. (Which kinds succeed depends on how often faults left cores
    // poisoned, so every kind is required over the whole run, below.)
    for op in [Op::Load, Op::Unload] {
        assert!(stats.ok(op) > 0, "[{name}] no successful {op:?}");
    }
    assert!(
        stats.ok(Op::Execute) + stats.ok(Op::ExecutePooled) + stats.ok(Op::Wait) > 0,
        "[{name}] no successful execution"
    );
    (stats, plan)
}

#[test]
fn eight_threads_mix_load_unload_execute_under_faults() {
    // The process's thread count must see this test alone.
    if !crate::alloc_count::run_alone("stress::eight_threads_mix_load_unload_execute_under_faults")
    {
        return;
    }
    let seed = env_u64("NRT_STRESS_SEED").unwrap_or(0x5713_E550);
    let ops = env_u64("NRT_STRESS_OPS").unwrap_or(DEFAULT_OPS);
    eprintln!(
        "stress seed {seed:#x} (NRT_STRESS_SEED), {ops} operations per worker (NRT_STRESS_OPS)"
    );
    let t0 = Instant::now();
    let (s1, f1) = run_phase("trn1/sync", Target::Trn1, false, seed, ops);
    let (s2, f2) = run_phase("trn2/async", Target::Trn2, true, seed, ops);
    let mut all = Stats::default();
    all.merge(&s1);
    all.merge(&s2);
    let mut by_kind: BTreeMap<Op, u64> = BTreeMap::new();
    for ((op, _), n) in &all.counts {
        *by_kind.entry(*op).or_default() += n;
    }
    eprintln!(
        "stress total: {} operations in {:?}; by kind: {by_kind:?}",
        all.total(),
        t0.elapsed()
    );
    eprintln!("faults injected: trn1 {f1:?}; trn2 {f2:?}");
    // The run did real work on every kind of operation.
    for op in [
        Op::Load,
        Op::Unload,
        Op::Execute,
        Op::ExecutePooled,
        Op::ExecuteAsync,
        Op::Wait,
    ] {
        assert!(all.ok(op) > 0, "no successful {op:?}");
    }
    assert!(all.of(Op::Poll) > 0, "no poll");
}
