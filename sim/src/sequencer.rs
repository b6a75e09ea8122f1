//! The TPB sequencer of each core: turns a doorbell into an execution (the protocol documented
//! in `nrt_hal::target::seq`).
//!
//! Phases of one execution:
//!
//! 1. **Idle → Block.** An `INFERENCE_START` semaphore value above zero wakes the sequencer; it
//!    takes one (decrements the semaphore), stamps the start cycle and drives its hardware exec
//!    queue in block mode until the pair whose RX descriptor carries `INT_EN`. Stores during the
//!    block do the work: the request lands in the `EXEC_REQUEST` slot, the request-load event
//!    latches it, tail increments kick the IO queues (which are remembered).
//! 2. **Draining.** It waits for every queue kicked during the block to drain.
//! 3. **Running.** After `seq_start_cycles` (+ `seq_config_reload_cycles` when the request says
//!    `reload_seq_config`, + `act_dve_table_load_cycles` when it says `load_act_dve_tables`) it
//!    starts each engine whose address in the request is non-zero. Skipping a reload costs less
//!    and changes nothing else.
//! 4. **Completing.** When every started engine has retired, after `seq_complete_cycles` it
//!    increments the `COMPLETION` semaphore, advances `COMPUTE_IDX_HEAD`, and writes a
//!    completion entry carrying the execution's cycles.
//!
//! A fault anywhere in the execution (the exec queue, a kicked queue, an engine) stops the
//! engines and drops the engine-issued DMAs in flight; the execution completes with `faulted`
//! set, after the error entry, once the DMA queues it had kicked have drained (see
//! `seq_dma_idle`).

use nrt_hal::exec_request::{RequestBuffer, REQUEST_BUFFER_SIZE};
use nrt_hal::notify::{DmaFault, Notification};
use nrt_hal::target::{reserved, seq, SemWindow};
use nrt_hal::{DeviceAddr, EngineKind, NcIndex, QueueRef};

use crate::device::{AccessFault, Domain};
use crate::engine::RunState;
use crate::sched::Unit;
use crate::timeline::Track;

/// Where the sequencer is in an execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Phase {
    #[default]
    Idle,
    Block,
    Draining,
    Starting,
    Running,
    Completing,
}

/// Sequencer state of one core.
#[derive(Debug, Clone)]
pub(crate) struct Sequencer {
    pub phase: Phase,
    /// The `EXEC_REQUEST` register slot.
    pub slot: [u8; REQUEST_BUFFER_SIZE],
    /// The request latched by the request-load event.
    pub latched: Option<RequestBuffer>,
    /// Executions completed (`compute_idx_head`).
    pub head: u64,
    /// Start cycle of the current execution.
    pub start: u64,
    /// Whether the current execution faulted.
    pub faulted: bool,
    /// Queues kicked during the current block.
    pub kicked: Vec<QueueRef>,
    /// Engines started and not yet retired.
    pub running: u8,
}

impl Default for Sequencer {
    fn default() -> Self {
        Sequencer {
            phase: Phase::Idle,
            slot: [0; REQUEST_BUFFER_SIZE],
            latched: None,
            head: 0,
            start: 0,
            faulted: false,
            kicked: Vec::new(),
            running: 0,
        }
    }
}

impl Sequencer {
    /// The compute index of the execution in progress (or of the next one when idle).
    pub fn current_idx(&self) -> u64 {
        self.head
    }
}

impl Domain {
    fn exec_queue(nc: NcIndex) -> QueueRef {
        QueueRef::new(nc, reserved::HW_EXEC_ENGINE, reserved::HW_EXEC_QUEUE)
    }

    /// A store into the sequencer's register block.
    pub fn seq_store(
        &mut self,
        nc: NcIndex,
        offset: u64,
        addr: DeviceAddr,
        value: u32,
    ) -> Result<(), AccessFault> {
        let end = seq::EXEC_REQUEST + seq::EXEC_REQUEST_LEN;
        if (seq::EXEC_REQUEST..end).contains(&offset) {
            let o = (offset - seq::EXEC_REQUEST) as usize;
            self.cores[nc].seq.slot[o..o + 4].copy_from_slice(&value.to_le_bytes());
            return Ok(());
        }
        Err(AccessFault::Register {
            addr,
            reason: "store to a read-only sequencer register",
        })
    }

    /// A load from the sequencer's register block.
    pub fn seq_load(&self, nc: NcIndex, offset: u64) -> u32 {
        let s = &self.cores[nc].seq;
        let end = seq::EXEC_REQUEST + seq::EXEC_REQUEST_LEN;
        match offset {
            o if (seq::EXEC_REQUEST..end).contains(&o) => {
                let o = (o - seq::EXEC_REQUEST) as usize;
                u32::from_le_bytes([s.slot[o], s.slot[o + 1], s.slot[o + 2], s.slot[o + 3]])
            }
            seq::COMPUTE_IDX_HEAD_LO => s.head as u32,
            seq::COMPUTE_IDX_HEAD_HI => (s.head >> 32) as u32,
            seq::STATUS => match s.phase {
                Phase::Idle => 0,
                _ if s.faulted => 2,
                _ => 1,
            },
            _ => 0,
        }
    }

    /// The request-load event fired: latch the slot.
    pub fn seq_request_load(&mut self, nc: NcIndex) {
        let s = &mut self.cores[nc].seq;
        s.latched = RequestBuffer::parse(&s.slot).ok();
    }

    /// A tail increment happened on `q`: remember it if this core is running a block.
    pub fn seq_note_kick(&mut self, q: QueueRef) {
        let s = &mut self.cores[q.nc].seq;
        if s.phase == Phase::Block && q != Self::exec_queue(q.nc) && !s.kicked.contains(&q) {
            s.kicked.push(q);
        }
    }

    /// A queue of `nc` drained: the sequencer may be waiting for it.
    pub fn seq_queue_drained(&mut self, nc: NcIndex) {
        if self.seq_waits_for_dma(nc) {
            self.sched.schedule(self.now, nc.0, Unit::Sequencer);
        }
    }

    /// Whether the sequencer of `nc` waits for its DMA: for the queues kicked during the
    /// block, or — a faulted execution — for all of them.
    fn seq_waits_for_dma(&self, nc: NcIndex) -> bool {
        let s = &self.cores[nc].seq;
        s.phase == Phase::Draining || (s.phase == Phase::Completing && s.faulted)
    }

    /// Whether every DMA of `nc` has ended: each queue but the exec queue drained, and no
    /// engine-issued DMA or completion store pending.
    ///
    /// A faulted execution completes only then. On the device the transfers it had started
    /// go on after the fault and end within microseconds, long before the host acts on the
    /// error; here the device's time moves only while the host waits, so without this they
    /// would run during the host's next execution — into rings and tensors it may have freed
    /// meanwhile (an unload), and into the next execution's semaphores.
    fn seq_dma_idle(&self, nc: NcIndex) -> bool {
        let core = &self.cores[nc];
        let exec = Self::exec_queue(nc);
        let queues_idle = core.dma.iter().enumerate().all(|(e, eng)| {
            eng.queues.iter().enumerate().all(|(i, q)| {
                (e == exec.engine.index() && i == exec.queue.index()) || q.is_drained()
            })
        });
        queues_idle && !core.dge.busy()
    }

    /// The exec queue reached the end of this execution's block at cycle `t`.
    pub fn seq_block_done(&mut self, nc: NcIndex, t: u64) {
        let s = &mut self.cores[nc].seq;
        if s.phase == Phase::Block {
            s.phase = Phase::Draining;
            self.sched.schedule(t, nc.0, Unit::Sequencer);
        }
    }

    /// An engine retired at cycle `t`.
    pub fn seq_engine_retired(&mut self, nc: NcIndex, t: u64) {
        let s = &mut self.cores[nc].seq;
        s.running = s.running.saturating_sub(1);
        self.seq_maybe_complete(nc, t);
    }

    /// The engine-issued DMAs of `nc` are all done: the execution may be complete.
    pub fn seq_dge_drained(&mut self, nc: NcIndex) {
        let now = self.now;
        if self.seq_waits_for_dma(nc) {
            self.sched.schedule(now, nc.0, Unit::Sequencer);
        }
        self.seq_maybe_complete(nc, now);
    }

    /// Starts completing the running execution at `t` once every engine has retired and no
    /// engine-issued DMA is in flight.
    fn seq_maybe_complete(&mut self, nc: NcIndex, t: u64) {
        let core = &mut self.cores[nc];
        if core.seq.running == 0 && core.seq.phase == Phase::Running && !core.dge.busy() {
            core.seq.phase = Phase::Completing;
            if let Some(tr) = core.trace.as_mut().filter(|t| t.open) {
                tr.trace.window.1 = t.max(tr.trace.window.0);
            }
            let at = t + self.timing.seq_complete_cycles;
            self.sched.schedule(at, nc.0, Unit::Sequencer);
        }
    }

    /// A fault hit the execution running on `nc` (if any): stop and complete it as faulted.
    pub fn seq_fault(&mut self, nc: NcIndex) {
        let s = &mut self.cores[nc].seq;
        if s.phase == Phase::Idle || s.phase == Phase::Completing {
            return;
        }
        s.faulted = true;
        s.phase = Phase::Completing;
        s.running = 0;
        self.cores[nc].dge.clear();
        // Stop block-mode processing of the exec queue.
        let q = Self::exec_queue(nc);
        self.cores[nc].dma[q.engine.index()].queues[q.queue.index()].seq_block = false;
        self.stop_engines(nc);
        self.sched.schedule(self.now, nc.0, Unit::Sequencer);
    }

    /// Wake-up of the sequencer of `nc`.
    pub fn seq_step(&mut self, nc: NcIndex) {
        let phase = self.cores[nc].seq.phase;
        match phase {
            Phase::Idle => self.seq_begin(nc),
            Phase::Block | Phase::Running => {}
            Phase::Draining => {
                let core = &self.cores[nc];
                let drained = core
                    .seq
                    .kicked
                    .iter()
                    .all(|q| core.dma[q.engine.index()].queues[q.queue.index()].is_drained());
                if drained {
                    self.seq_start_engines(nc);
                }
            }
            Phase::Starting => self.seq_launch(nc),
            Phase::Completing if self.cores[nc].seq.faulted && !self.seq_dma_idle(nc) => {}
            Phase::Completing => self.seq_complete(nc),
        }
    }

    fn seq_begin(&mut self, nc: NcIndex) {
        if self.sem_read(nc, reserved::INFERENCE_START) <= 0 {
            return;
        }
        self.sem_op(nc, reserved::INFERENCE_START, SemWindow::Decrement, 1);
        // Model semaphores and events start from zero on every execution (hal `seq` docs).
        let core = &mut self.cores[nc];
        core.sems[..reserved::FIRST_SEMAPHORE as usize].fill(0);
        core.events[..reserved::FIRST_EVENT as usize].fill(0);
        core.profile = Default::default();
        if self.tracing {
            let hz = self.target.spec().clocks.sp;
            core.trace = Some(crate::profile::TraceRecorder::new(hz));
        } else if let Some(tr) = core.trace.as_mut() {
            tr.open = false;
        }
        let now = self.now;
        let s = &mut self.cores[nc].seq;
        s.phase = Phase::Block;
        s.start = now;
        s.faulted = false;
        s.kicked.clear();
        s.latched = None;
        s.running = 0;
        for e in &mut self.cores[nc].engines {
            e.state = RunState::Idle;
        }
        let q = Self::exec_queue(nc);
        let queue = &mut self.cores[nc].dma[q.engine.index()].queues[q.queue.index()];
        if queue.status != nrt_hal::hal::QueueStatus::Enabled || queue.tx.is_none() {
            let compute_idx = self.cores[nc].seq.current_idx();
            self.post(
                nc,
                Notification::DmaError {
                    core: nc,
                    engine: q.engine,
                    queue: q.queue,
                    compute_idx,
                    descriptor_index: 0,
                    address: DeviceAddr::ZERO,
                    fault: DmaFault::NoRing,
                },
            );
            self.seq_fault(nc);
            return;
        }
        queue.seq_block = true;
        self.dma_kick(q);
    }

    fn seq_start_engines(&mut self, nc: NcIndex) {
        let Some(req) = self.cores[nc].seq.latched else {
            // The block ended without a request being loaded.
            let compute_idx = self.cores[nc].seq.current_idx();
            self.post(
                nc,
                Notification::ExecError {
                    core: nc,
                    engine: EngineKind::Sp,
                    compute_idx,
                    instruction_index: 0,
                    opcode: 0,
                    fault: nrt_hal::notify::ExecFault::Malformed,
                },
            );
            self.seq_fault(nc);
            return;
        };
        let t = &self.timing;
        let mut cost = t.seq_start_cycles;
        if req.request.reload_seq_config != 0 {
            cost += t.seq_config_reload_cycles;
        }
        if req.request.load_act_dve_tables != 0 {
            cost += t.act_dve_table_load_cycles;
        }
        self.cores[nc].seq.phase = Phase::Starting;
        let at = self.now + cost;
        self.sched.schedule(at, nc.0, Unit::Sequencer);
    }

    fn seq_launch(&mut self, nc: NcIndex) {
        let Some(req) = self.cores[nc].seq.latched else {
            self.seq_fault(nc);
            return;
        };
        let now = self.now;
        let mut running = 0;
        // The first core of a logical core (or a core of its own), or the second of a pair
        // (cores of a clock domain of two form an LNC=2 pair, docs/simulator.md §8.1).
        let role = usize::from(self.shared.cores_per_domain >= 2 && nc.0 % 2 == 1);
        let wrapper = self.timing.runtime;
        if wrapper.is_some() {
            self.cores[nc].sems[reserved::SPARE.index()] = 0;
        }
        for kind in EngineKind::ALL {
            let pc = req.request.engine_address(kind);
            // With the runtime's instructions modelled every engine runs them, program or not.
            if pc.raw() != 0 || wrapper.is_some() {
                let w = wrapper.map(|v| &v.table().roles[role][kind.index()]);
                self.cores[nc].engines[kind.index()].start(pc, now, w);
                if let (Some(tr), Some(w)) = (self.cores[nc].trace.as_mut(), w) {
                    tr.trace.program_pc[kind.index()] = w.program_pc;
                }
                self.sched.schedule(now, nc.0, Unit::Engine(kind));
                running += 1;
            }
        }
        if let Some(tr) = self.cores[nc].trace.as_mut() {
            tr.trace.window.0 = now;
            if let Some(v) = wrapper {
                let hz = self.target.spec().clocks.sp;
                let c = |ns: u32| (u64::from(ns) * hz).div_ceil(1_000_000_000);
                for p in &v.table().dma[role] {
                    tr.dma(nrt_hal::profile::TracedDma {
                        source: nrt_hal::profile::DmaSource::Runtime { queue: p.queue },
                        bytes: p.bytes,
                        start: now + c(p.start),
                        end: now + c(p.start + p.duration),
                        hbm: (p.bytes, 0),
                        semaphore_write: false,
                    });
                }
            }
        }
        let s = &mut self.cores[nc].seq;
        s.running = running;
        if running == 0 {
            s.phase = Phase::Completing;
            let at = now + self.timing.seq_complete_cycles;
            self.sched.schedule(at, nc.0, Unit::Sequencer);
        } else {
            s.phase = Phase::Running;
        }
    }

    fn seq_complete(&mut self, nc: NcIndex) {
        let now = self.now;
        let s = &mut self.cores[nc].seq;
        let compute_idx = s.head;
        let cycles = now - s.start;
        let faulted = s.faulted;
        let start = s.start;
        s.head += 1;
        s.phase = Phase::Idle;
        s.faulted = false;
        s.kicked.clear();
        if let Some(tr) = self.cores[nc].trace.as_mut().filter(|t| t.open) {
            if tr.trace.window.1 == 0 {
                tr.trace.window.1 = now.max(tr.trace.window.0);
            }
            tr.open = false;
        }
        self.stats.executions += 1;
        let core = &mut self.cores[nc];
        let a = &mut core.activity;
        a.executions += 1;
        a.faulted += u64::from(faulted);
        a.pe_macs += core.profile.pe_macs;
        a.last_cycles = cycles;
        a.busy_cycles += cycles;
        self.timeline.record(
            Track::Sequencer(nc),
            || format!("exec #{compute_idx}"),
            start,
            now,
        );
        self.sem_op(nc, reserved::COMPLETION, SemWindow::Increment, 1);
        self.post(
            nc,
            Notification::Completion {
                core: nc,
                compute_idx,
                cycles,
                faulted,
            },
        );
        // Next queued execution, if any.
        if self.sem_read(nc, reserved::INFERENCE_START) > 0 {
            self.sched.schedule(now, nc.0, Unit::Sequencer);
        }
    }
}
