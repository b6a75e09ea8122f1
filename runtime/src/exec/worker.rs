//! The execute path's shared half: staging under the execution unit's funnel, completion, and
//! the asynchronous mode's per-vcore worker threads (docs/runtime.md §4.1 async fork, docs/runtime.md §4.4).
//!
//! Async mode (`NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS` > 0) stages and rings the doorbell
//! inline — the submit returns a request handle at once — and a worker thread per logical core
//! waits for each execution in order, harvests its notifications and publishes its result. A
//! submit finding the in-flight limit reached waits for the worker to retire one (backpressure,
//! not failure). The real runtime passes the inverted exec mode (`workers == NULL ? 1 : 0`, so 0 is
//! async) into its bind stage; here the mode is the [`ExecMode`] enum, whose discriminants keep
//! that inversion for anyone comparing traces.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nrt_hal::hal::WaitCondition;
use nrt_hal::isa::SemCmp;
use nrt_hal::notify::Notification;
use nrt_hal::target::reserved;
use nrt_hal::{EngineKind, Hal, HalError, NcIndex, Target};

use super::handoff::Handoff;
use super::ticket::{stage_lockstep, ComputeReqLock};
use super::{status_of, CoreExec, ExecReport, REQ_SLOTS};
use crate::config::RuntimeConfig;
use crate::error::{Error, Result};
use crate::model::LoadedModel;
use crate::status::NrtStatus;
use crate::tensor::TensorSet;
use crate::xu::ExecutionUnit;

/// The real runtime's `kmgr_exec_mode_t`: note the inversion — async is 0, sync is 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecMode {
    /// `KMGR_EXEC_MODE_ASYNC` (0).
    Async = 0,
    /// Synchronous (1).
    Sync = 1,
}

pub use super::ticket::MAX_VCORE;

/// A staged execution awaiting completion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ticket {
    /// Execution-unit sequence id.
    pub seq_id: u64,
    /// The vcore's compute index.
    pub compute_idx: u64,
    /// (core, its execution index) for each core of the model.
    pub cores: [(NcIndex, u64); MAX_VCORE],
    /// How many entries of `cores` are used.
    pub n: usize,
}

/// An asynchronous request handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExecRequest {
    /// The logical core.
    pub vnc: u32,
    /// The execution unit's sequence id.
    pub seq_id: u64,
}

/// One vcore's async queue and worker.
#[derive(Default)]
pub struct AsyncQueue {
    handoff: Handoff<(Arc<LoadedModel>, Ticket, Option<TensorSet>), Result<ExecReport>>,
    worker: Mutex<Option<JoinHandle<()>>>,
    /// Whether `worker` holds a running worker: set (after the spawn, under the `worker`
    /// lock) and cleared (at shutdown) so that a submit finds its worker with one load.
    started: AtomicBool,
}

/// Everything the execute path shares between API threads and workers.
pub struct ExecShared {
    /// The device.
    pub hal: Arc<dyn Hal>,
    /// The generation.
    pub target: Target,
    /// Settings.
    pub cfg: RuntimeConfig,
    /// Per physical core: the `compute_req_lock` and the execution state it guards (created at
    /// the core's first execution).
    pub cores: Vec<ComputeReqLock<CoreExec>>,
    /// Per logical core: the execution unit.
    pub xus: Vec<ExecutionUnit>,
    /// Per logical core: the async queue.
    pub queues: Vec<AsyncQueue>,
    /// Per logical core: held while [`ExecShared::recover`] decides and resets, so a concurrent
    /// load of the same core cannot stage between the decision and the reset (issue #8). It
    /// guards the number of loads past that point — staging, loaded, or being unloaded — on the
    /// core.
    pub(super) recovery: Vec<Mutex<u32>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl ExecShared {
    /// The execute path of a device of `target` with `nc_count` physical cores grouped into
    /// `vcores` logical ones. Each execution unit holds at most
    /// `NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS` unfinished executions when that is set, and
    /// never more than [`REQ_SLOTS`].
    pub fn new(
        hal: Arc<dyn Hal>,
        target: Target,
        cfg: RuntimeConfig,
        nc_count: u32,
        vcores: u32,
    ) -> ExecShared {
        let capacity = if cfg.async_max_inflight > 0 {
            cfg.async_max_inflight.min(REQ_SLOTS as u32)
        } else {
            REQ_SLOTS as u32
        };
        ExecShared {
            hal,
            target,
            cfg,
            cores: (0..nc_count).map(|_| ComputeReqLock::new()).collect(),
            xus: (0..vcores)
                .map(|v| ExecutionUnit::new(v as u16, capacity))
                .collect(),
            queues: (0..vcores).map(|_| AsyncQueue::default()).collect(),
            recovery: (0..vcores).map(|_| Mutex::new(0)).collect(),
        }
    }

    /// Binds, stages and rings the doorbell of one execution (through the vcore's execution
    /// unit, which serialises submitters and poisons itself on a staging or doorbell failure).
    pub fn submit(
        &self,
        model: &LoadedModel,
        inputs: &TensorSet,
        outputs: &TensorSet,
    ) -> Result<Ticket> {
        let v = model.vnc as usize;
        let xu = &self.xus[v];
        let mut ticket = Ticket::default();
        let hal = &*self.hal;
        let sub = xu.submit(model.id.0, |switch| {
            let n = model.tpbs.len().min(MAX_VCORE);
            let cores_guard = lock(&model.cores);
            let cores = cores_guard.as_ref().ok_or_else(|| {
                Error::new(NrtStatus::InvalidHandle, "the model is being unloaded")
            })?;
            let mut caches = lock(&model.exec.caches);
            // compute_req_lock: the first core's, then the others in order; stage every core,
            // then one INFERENCE_START increment each (the doorbells).
            let tickets = stage_lockstep(
                model.tpbs[..n].iter().map(|nc| &self.cores[nc.index()]),
                |i| CoreExec::new(hal, model.tpbs[i]),
                |i, index, ce| {
                    let core = &cores[i];
                    let io_pa = |var: u32| {
                        let io = core.io_vars.get(&var)?;
                        let set = if io.is_input { inputs } else { outputs };
                        set.get(&io.name)?.device_addr()
                    };
                    ce.stage(
                        index,
                        hal,
                        self.target,
                        core,
                        &io_pa,
                        &mut caches[i],
                        model.exec.config[i],
                        switch,
                        self.cfg.skip_config_optimization,
                    )
                },
                |i| {
                    hal.semaphore_increment(model.tpbs[i], reserved::INFERENCE_START, 1)
                        .map_err(Error::from)
                },
            )?;
            for ((slot, &nc), idx) in ticket.cores.iter_mut().zip(&model.tpbs[..n]).zip(tickets) {
                *slot = (nc, idx);
            }
            ticket.n = n;
            // Counted while the model's cores are still locked, so an unload (which takes them
            // under that lock, then drains `in_flight`) cannot miss this execution.
            model.exec.in_flight.fetch_add(1, Ordering::SeqCst);
            Ok(ticket.cores[0].1)
        })?;
        ticket.seq_id = sub.seq_id;
        ticket.compute_idx = sub.compute_idx;
        Ok(ticket)
    }

    /// Waits for `ticket` on every core, harvests its notifications and retires it.
    pub fn complete(&self, model: &LoadedModel, ticket: &Ticket) -> Result<ExecReport> {
        let result = self.complete_inner(model, ticket);
        let xu = &self.xus[model.vnc as usize];
        let status = match &result {
            Ok(_) => NrtStatus::Success,
            Err(e) => e.status,
        };
        if matches!(
            status,
            NrtStatus::Timeout
                | NrtStatus::ExecHwErrDmaAbort
                | NrtStatus::ExecHwErrHbmUe
                | NrtStatus::ExecSwNqOverflow
                | NrtStatus::ExecUnitUnrecoverable
                | NrtStatus::HwError
        ) {
            // The device needs a reset before this unit can run again.
            xu.poison();
        }
        let _ = xu.complete(ticket.seq_id, status);
        xu.retire();
        model.exec.in_flight.fetch_sub(1, Ordering::SeqCst);
        result
    }

    fn complete_inner(&self, model: &LoadedModel, ticket: &Ticket) -> Result<ExecReport> {
        let hal = &*self.hal;
        let mut report = ExecReport {
            compute_idx: ticket.compute_idx,
            seq_id: ticket.seq_id,
            cycles: Vec::with_capacity(ticket.n),
        };
        let mut worst: Option<Error> = None;
        for (i, &(nc, idx)) in ticket.cores[..ticket.n].iter().enumerate() {
            let cond = WaitCondition::Semaphore {
                nc,
                sem: reserved::COMPLETION,
                cmp: SemCmp::Ge,
                value: (idx + 1) as i32,
            };
            match hal.wait(&cond, self.cfg.exec_timeout) {
                Ok(()) => {}
                Err(HalError::Timeout { .. }) => {
                    return Err(Error::new(
                        NrtStatus::Timeout,
                        format!(
                            "execution {} of model {} did not complete on {nc} within {:?} (NEURON_RT_EXEC_TIMEOUT)",
                            ticket.compute_idx, model.id.0, self.cfg.exec_timeout
                        ),
                    ))
                }
                Err(e) => return Err(e.into()),
            }
            let entries = {
                let mut g = self.cores[nc.index()].lock();
                let ce = g
                    .state_mut()
                    .ok_or_else(|| Error::failure("core state vanished"))?;
                ce.take(hal, idx)?
            };
            let Some(entries) = entries else {
                return Err(Error::new(
                    NrtStatus::ExecSwNqOverflow,
                    format!("{nc}: execution {idx} completed but its completion entry is missing"),
                ));
            };
            for n in &entries {
                if let Notification::Completion { cycles, .. } = n {
                    report.cycles.push(*cycles);
                }
            }
            // The generation read when the runtime opened the device (no HAL call per core
            // per execution).
            let describe = |n: &Notification| describe(model, i, nc, self.target, n);
            if let Some(e) = status_of(&entries, &describe) {
                if worst
                    .as_ref()
                    .is_none_or(|w| severity(e.status) < severity(w.status))
                {
                    worst = Some(e);
                }
            }
        }
        match worst {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }

    /// The async queue of `vnc`, with its worker started.
    pub fn async_queue(self: &Arc<Self>, vnc: u32) -> &AsyncQueue {
        let q = &self.queues[vnc as usize];
        if q.started.load(Ordering::Acquire) {
            return q;
        }
        let mut w = lock(&q.worker);
        if w.is_none() {
            q.handoff
                .reserve(self.cfg.async_max_inflight.max(1) as usize + 1);
            // +1: a retire frees a slot just before the worker pops its entry, so a submitter
            // can push while the finished entry is still queued.
            let shared = Arc::clone(self);
            *w = Some(
                std::thread::Builder::new()
                    .name(format!("nrt-async-vnc{vnc}"))
                    .spawn(move || shared.worker(vnc))
                    .expect("spawning an async worker thread"),
            );
            q.started.store(true, Ordering::Release);
        }
        q
    }

    fn worker(&self, vnc: u32) {
        let q = &self.queues[vnc as usize];
        while let Some((model, ticket, outputs)) = q.handoff.next() {
            let r = self.complete(&model, &ticket);
            let written = r.is_ok()
                || r.as_ref()
                    .is_err_and(|e| e.status == NrtStatus::ExecCompletedWithNumErr);
            if written {
                for (_, t) in outputs.iter().flat_map(|o| o.iter()) {
                    t.completed_as_output();
                }
            }
            // Released before the result is published: a waiter that frees its tensors next
            // must find their memory freed, not still held by this copy of the set.
            drop(outputs);
            q.handoff.finish(ticket.seq_id, r);
        }
    }

    /// Queues a staged async execution for its worker; `outputs`, if given, count the
    /// completion.
    pub fn enqueue(
        self: &Arc<Self>,
        model: Arc<LoadedModel>,
        ticket: Ticket,
        outputs: Option<TensorSet>,
    ) {
        let q = self.async_queue(model.vnc);
        q.handoff.push((model, ticket, outputs));
    }

    /// Blocks until fewer than the in-flight limit are pending on `vnc`. The limit is
    /// `NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS`, capped at the execution unit's ring capacity
    /// ([`REQ_SLOTS`]): a larger setting would otherwise let submits through to a
    /// full ring and fail with `NRT_QUEUE_FULL` instead of waiting (issue #8).
    pub fn backpressure(self: &Arc<Self>, vnc: u32) -> Result<()> {
        let xu = &self.xus[vnc as usize];
        let limit = (self.cfg.async_max_inflight.max(1) as u64).min(xu.capacity() as u64);
        if xu.in_flight() < limit {
            return Ok(());
        }
        let q = self.async_queue(vnc);
        // The worker publishes after each retire; the recheck covers retires by other paths.
        if q.handoff.wait_until(
            || xu.in_flight() < limit,
            self.cfg.exec_timeout,
            Duration::from_millis(50),
        ) {
            Ok(())
        } else {
            Err(Error::new(
                NrtStatus::Timeout,
                "no in-flight execution retired in time",
            ))
        }
    }

    /// Waits (up to `NEURON_RT_EXEC_TIMEOUT`) until `vnc`'s execution unit has a free ring slot.
    /// Sync executions retire in order, so one slow waiter can hold back the retirement of the
    /// executions behind it and fill the ring although few are really running; a sync submit
    /// that finds the ring full waits here and retries rather than failing with
    /// `NRT_QUEUE_FULL` (issue #8).
    pub fn wait_for_slot(&self, vnc: u32) -> Result<()> {
        let xu = &self.xus[vnc as usize];
        let deadline = Instant::now() + self.cfg.exec_timeout;
        while xu.in_flight() >= u64::from(xu.capacity()) {
            if Instant::now() >= deadline {
                return Err(Error::new(
                    NrtStatus::Timeout,
                    format!(
                        "execution unit {vnc}: no in-flight execution retired within {:?}",
                        self.cfg.exec_timeout
                    ),
                ));
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        Ok(())
    }

    /// The result of async request `req`, waiting up to `timeout`.
    pub fn wait(self: &Arc<Self>, req: ExecRequest, timeout: Duration) -> Result<ExecReport> {
        let q = self.async_queue(req.vnc);
        q.handoff.wait(req.seq_id, timeout).unwrap_or_else(|| {
            Err(Error::new(
                NrtStatus::Timeout,
                format!(
                    "async request {:#x} not complete after {timeout:?}",
                    req.seq_id
                ),
            ))
        })
    }

    /// The result of `req` if it is complete.
    pub fn poll(self: &Arc<Self>, req: ExecRequest) -> Option<Result<ExecReport>> {
        let q = self.async_queue(req.vnc);
        q.handoff.poll(req.seq_id)
    }

    /// Stops and joins every worker.
    pub fn shutdown(&self) {
        for q in &self.queues {
            q.handoff.shutdown();
            let handle = {
                let mut w = lock(&q.worker);
                q.started.store(false, Ordering::Release);
                w.take()
            };
            if let Some(h) = handle {
                let _ = h.join();
            }
        }
        for xu in &self.xus {
            xu.close();
        }
    }
}

fn severity(s: NrtStatus) -> u32 {
    match s {
        NrtStatus::ExecHwErrHbmUe => 0,
        NrtStatus::ExecHwErrDmaAbort => 1,
        NrtStatus::ExecCompletedWithErr => 2,
        NrtStatus::ExecCompletedWithNumErr => 3,
        _ => 4,
    }
}

/// Why the NEFF record at `neff_ip` of `engine`'s stream cannot execute, as far as its own
/// bytes (and, for a Neuron matmul, the record before it) tell: the decoder's message and the
/// record in hex; for a Neuron record that decodes and pairs correctly, the operand that
/// reaches outside SBUF/PSUM. `None` when none of that explains the fault.
fn record_reason(
    model: &LoadedModel,
    sg: usize,
    engine: EngineKind,
    neff_ip: u32,
    target: Target,
) -> Option<String> {
    let prog = model.parsed.model.subgraphs.get(sg)?.engine(engine)?;
    let i = neff_ip as usize;
    let rec = prog.records.get(i)?;
    let err = match nrt_hal::isa::neuron::decode_any(rec) {
        Err(e) => e.to_string(),
        Ok(nrt_hal::isa::neuron::Decoded::Neuron(n)) => {
            let prev = i.checked_sub(1).and_then(|p| prog.records.get(p));
            match nrt_hal::isa::neuron::check_pe_pair(prev, rec) {
                Err(e) => e.to_string(),
                Ok(()) => match n.model()? {
                    Ok(instr) => out_of_bounds(target, &instr)?,
                    Err(e) => e.to_string(),
                },
            }
        }
        Ok(_) => return None,
    };
    Some(format!(" — {err} (record {})", rec.to_hex()))
}

/// The first operand of `instr` that reaches outside its partition of SBUF or PSUM on
/// `target`, described.
fn out_of_bounds(target: Target, instr: &nrt_hal::isa::Instruction) -> Option<String> {
    let spec = target.spec();
    instr.patterns().into_iter().find_map(|(name, ap)| {
        let bytes = match ap.space() {
            nrt_hal::isa::MemSpace::Sbuf => spec.sbuf.partition_bytes,
            nrt_hal::isa::MemSpace::Psum => spec.psum.partition_bytes,
        };
        ap.check_bounds(bytes)
            .err()
            .map(|e| format!("operand {name} ({ap}): {e}"))
    })
}

/// The vars an engine-issued DMA (Neuron `0xD4`) reads and writes, named: `source X,
/// destination Y`, a DGE-table entry resolved through the subgraph's table.
fn dma_ends(k: &crate::kbin::Kbin, rec: &nrt_hal::isa::Record) -> Option<String> {
    use nrt_hal::isa::neuron::{DmaAddrKind, NeuronInstr};
    let NeuronInstr::DmaDirect2d { src, dst, .. } = NeuronInstr::decode(rec).ok()? else {
        return None;
    };
    let table = k.vars.values().find_map(|v| match &v.kind {
        crate::kbin::VarKind::DgeTable { list } => Some(list),
        _ => None,
    });
    let name = |a: nrt_hal::isa::neuron::DmaAddr| -> String {
        let id = match a.kind {
            DmaAddrKind::Immediate => Some(u32::from(a.index)),
            _ => table.and_then(|l| l.get(usize::from(a.index)).copied()),
        };
        id.and_then(|id| k.vars.get(&id))
            .map_or_else(|| format!("var ? ({a:?})"), |v| v.name.clone())
    };
    Some(format!("source {}, destination {}", name(src), name(dst)))
}

/// A message naming what an error entry reports, in NEFF terms.
fn describe(
    model: &LoadedModel,
    sg: usize,
    nc: NcIndex,
    target: Target,
    n: &Notification,
) -> String {
    let cores = lock(&model.cores);
    let core = cores.as_ref().and_then(|c| c.get(sg));
    // Where a device instruction index is in the NEFF: its NEFF index, stream and subgraph.
    let locate = |engine: EngineKind, instruction_index: u32| {
        let neff_ip = core
            .map(|c| c.patches[engine.index()].device_to_neff(instruction_index))
            .unwrap_or(instruction_index);
        let kbin = model.parsed.model.subgraphs.get(sg);
        let bin = kbin
            .and_then(|k| k.engine(engine))
            .map(|p| p.bin_member.clone())
            .unwrap_or_default();
        let sg_name = kbin.map_or("?", |k| k.name.as_str());
        (neff_ip, bin, sg_name)
    };
    match *n {
        Notification::ExecError {
            engine,
            compute_idx,
            instruction_index,
            opcode,
            fault,
            ..
        } => {
            let (neff_ip, bin, sg_name) = locate(engine, instruction_index as u32);
            let why = core
                .and_then(|c| {
                    c.unsupported_triggers
                        .iter()
                        .find(|(e, ip, _)| *e == engine && *ip == neff_ip)
                        .map(|t| format!(" — {}", t.2))
                })
                .or_else(|| record_reason(model, sg, engine, neff_ip, target))
                .unwrap_or_default();
            format!(
                "execution {compute_idx} on {nc}: subgraph {sg_name}, engine {engine} stopped at instruction {instruction_index} (NEFF instruction {neff_ip} of {bin}): {fault:?}, opcode {opcode:#04x}{why}"
            )
        }
        Notification::DgeError {
            engine,
            compute_idx,
            instruction_index,
            fault,
            address,
            ..
        } => {
            let (neff_ip, bin, sg_name) = locate(engine, instruction_index);
            let text = model
                .parsed
                .model
                .subgraphs
                .get(sg)
                .and_then(|k| {
                    let rec = k.engine(engine)?.records.get(neff_ip as usize)?;
                    let line = nrt_hal::isa::disassemble_neuron(&rec.0, &k.names());
                    let line = line.trim_end();
                    let line = line.split_once(": ").map_or(line, |l| l.1);
                    Some(format!(": {line}; {}", dma_ends(k, rec)?))
                })
                .unwrap_or_default();
            let what = match fault {
                nrt_hal::notify::DmaFault::OutOfBounds => "reaches outside the tensor it addresses",
                _ => "names an address outside device memory",
            };
            format!(
                "execution {compute_idx} on {nc}: subgraph {sg_name}, engine {engine}: the DMA issued by instruction {instruction_index} (NEFF instruction {neff_ip} of {bin}{text}) {what} (at {address}, {fault:?}); nothing was written"
            )
        }
        Notification::Deadlock {
            engine,
            instruction_index,
            sem,
            value,
            awaited,
            ..
        } => {
            let neff_ip = core
                .map(|c| c.patches[engine.index()].device_to_neff(instruction_index))
                .unwrap_or(instruction_index);
            let opcode = model
                .parsed
                .model
                .subgraphs
                .get(sg)
                .and_then(|k| k.engine(engine))
                .and_then(|p| p.records.get(neff_ip as usize))
                .map_or(0, |r| r.opcode());
            format!(
                "engine {engine} at NEFF instruction {neff_ip} (opcode {opcode:#04x}) waits for {} >= {awaited}, which holds {value}",
                nrt_hal::SemaphoreId(sem)
            )
        }
        Notification::DmaError {
            engine,
            queue,
            descriptor_index,
            address,
            fault,
            compute_idx,
            ..
        } => format!(
            "execution {compute_idx} on {nc}: DMA queue {engine}.{queue} aborted at descriptor {descriptor_index} (buffer {address}): {fault:?}"
        ),
        Notification::HbmUncorrectable {
            address,
            compute_idx,
            ..
        } => format!("execution {compute_idx} on {nc}: uncorrectable HBM error at {address}"),
        Notification::NanProduced {
            engine,
            instruction_index,
            compute_idx,
            ..
        } => format!(
            "execution {compute_idx} on {nc}: engine {engine} produced NaN at instruction {instruction_index}"
        ),
        Notification::Completion { compute_idx, .. } => {
            format!("execution {compute_idx} on {nc} completed with an error")
        }
        ref other => format!("{other:?}"),
    }
}
