//! The five compute engines of a core (PE, ACT, POOL, DVE, SP) running their instruction
//! streams (the encoding of `nrt_hal::isa`).
//!
//! An engine started by the sequencer fetches 64-byte records from device memory at its
//! program counter, decodes them (a record fetched again, unchanged, at the same place and
//! instruction index reuses its earlier decoding), and executes them in order: compute
//! instructions through [`crate::compute`], `Write` through the device's one store path (how an
//! engine starts a DMA or pokes an event), semaphore and event waits and signals, and `End`,
//! which retires the engine for this execution. A wait that does not hold parks the engine
//! until a store changes the semaphore or event.
//!
//! Anything the engine cannot execute — an undecodable or unknown record (including real
//! Neuron opcodes this platform does not implement), a pseudo-instruction the runtime did not
//! relocate, a compute instruction on an engine that lacks it, an operand outside on-chip
//! memory, a fetch from unmapped memory — writes an `ExecError` entry naming the core, engine,
//! opcode and instruction index, and aborts the execution. A compute result containing NaN
//! writes a `NanProduced` entry (once per engine per execution) and execution continues.
//!
//! Timing: compute instructions cost [`crate::compute::cost`] cycles of the engine's clock,
//! converted to device cycles; control instructions cost `sync_instruction_cycles`.

use std::collections::VecDeque;

use nrt_hal::isa::neuron::{check_pe_pair, decode_any, AnyDecodeError, Decoded, NeuronInstr, Sync};
use nrt_hal::isa::{Instruction, Record, SemCmp, SemOp, RECORD_SIZE};
use nrt_hal::notify::{ExecFault, Notification};
use nrt_hal::profile::RuntimeInstr;
use nrt_hal::target::{reserved, SemWindow};
use nrt_hal::{DeviceAddr, EngineKind, EventId, NcIndex, SemaphoreId};

use crate::compute::{self, EngineState, InstrTiming, OnChipView};
use crate::device::{AccessFault, Domain};
use crate::memory::MemFault;
use crate::sched::Unit;
use crate::timeline::Track;
use crate::wrapper::{self, Kind, Then};

/// What a parked engine waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// `sem <cmp> value`; `sync` marks a wait of an instruction's sync block (the Neuron
    /// encoding), which only the device itself can satisfy.
    Semaphore {
        sem: SemaphoreId,
        cmp: SemCmp,
        value: i32,
        sync: bool,
    },
    /// `event == value`.
    Event { event: EventId, value: u32 },
}

/// Engine run state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum RunState {
    /// Not part of a running execution.
    #[default]
    Idle,
    /// Executing.
    Running,
    /// Parked on a wait since the given cycle.
    Waiting(Wait, u64),
    /// Reached `End` but never retires (injected fault).
    Hung,
    /// Retired for this execution.
    Retired,
}

/// One engine of a core.
#[derive(Debug, Default)]
pub(crate) struct EngineUnit {
    pub state: RunState,
    pub pc: u64,
    pub index: u64,
    pub nan_reported: bool,
    pub compute: EngineState,
    /// Cycle at which the next instruction may issue.
    pub next_issue: u64,
    /// PE: cycle at which the array's moving-operand stream is free for the next matmul.
    pub stream_free: u64,
    /// Latest completion of any instruction issued so far (retirement waits for it).
    pub busy_until: u64,
    /// Semaphore updates of issued instructions, due at their completion (sync block
    /// updates, the runtime's barriers), in time order.
    pub signals: VecDeque<Signal>,
    /// Where the engine is in the runtime's instructions around its program.
    pub phase: Phase,
    /// The runtime's instructions around the program (none: the program alone).
    pub wrapper: Option<&'static wrapper::Engine>,
    /// Cycle the engine was launched.
    pub launch: u64,
    /// End of the last instruction issued.
    pub last_end: u64,
    /// Cycle since which the current instruction has waited (a runtime barrier's trace starts
    /// there, as the device reports one).
    pub stalled_since: Option<u64>,
    /// Whether the engine has a program this execution (without one it runs only the
    /// runtime's instructions).
    pub has_program: bool,
    /// The previous record executed (matmul pairing checks of the Neuron encoding).
    pub prev: Option<Record>,
    /// Records decoded so far, by instruction index (see [`EngineUnit::decode`]).
    decoded: Vec<Option<DecodedRecord>>,
    /// The register file (Neuron register instructions, register-addressed DMAs): zeroed to
    /// [`REGISTERS`](nrt_hal::isa::neuron::REGISTERS) values when the engine starts.
    pub registers: Vec<u32>,
}

/// A semaphore update due at an instruction's completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Signal {
    /// Device cycle.
    pub at: u64,
    /// The semaphore.
    pub sem: SemaphoreId,
    /// Increment or set.
    pub op: SemWindow,
    /// By or to.
    pub value: u32,
}

/// Where an engine is in the runtime's instructions around its program
/// (docs/simulator.md §7.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Phase {
    /// Running preamble step `i`.
    Pre(u16),
    /// Running the program.
    #[default]
    Program,
    /// Running postamble step `i`.
    Post(u16),
    /// Past the postamble: retiring.
    Done,
}

/// A record the engine decoded: where, its bytes, and what it executes.
#[derive(Debug)]
struct DecodedRecord {
    pc: u64,
    record: Record,
    decoded: Executable,
}

/// What a record executes: its sync block and its operation, the Neuron encoding's records
/// already mapped onto the shared model where their row has a model.
#[derive(Debug, Clone)]
pub(crate) struct Executable {
    /// Waits before, signal after (none for platform records).
    pub sync: Sync,
    /// Whether the record is of the Neuron encoding (its MATMULs pair with their LDWEIGHTS).
    pub neuron: bool,
    /// The operation.
    pub op: Operation,
}

/// The operation of an [`Executable`].
#[derive(Debug, Clone)]
pub(crate) enum Operation {
    /// An instruction of the shared model.
    Model(Instruction),
    /// A Neuron record with semantics of its own ([`crate::neuron`]).
    Native(NeuronInstr),
}

/// Why a record cannot execute on an engine.
#[derive(Debug)]
enum Refusal {
    /// It does not decode.
    Decode(AnyDecodeError),
    /// Its model form is invalid.
    Model,
    /// The engine does not run its opcode.
    Engine,
}

impl Executable {
    fn from_record(record: &Record, engine: EngineKind) -> Result<Executable, Refusal> {
        match decode_any(record).map_err(Refusal::Decode)? {
            Decoded::Platform(i) => Ok(Executable {
                sync: Sync::NONE,
                neuron: false,
                op: Operation::Model(i),
            }),
            Decoded::Neuron(n) => {
                if !n.opcode().runs_on(engine) {
                    return Err(Refusal::Engine);
                }
                let op = match n.model() {
                    Some(m) => Operation::Model(m.map_err(|_| Refusal::Model)?),
                    None => Operation::Native(n.clone()),
                };
                Ok(Executable {
                    sync: n.sync(),
                    neuron: true,
                    op,
                })
            }
        }
    }
}

/// Instruction indices whose decoding an engine keeps (a stream's first records; the rest are
/// decoded every time).
const DECODED_RECORDS: usize = 4096;

impl EngineUnit {
    /// `record`, fetched at `pc` as the current instruction, decoded. Decoding is a pure
    /// function of the bytes, so a record fetched again at the same place with the same bytes
    /// (the same program executed again) reuses the earlier result; a changed record is
    /// decoded afresh. Records that fail to decode are not kept.
    fn decode(
        &mut self,
        pc: u64,
        record: &Record,
        engine: EngineKind,
    ) -> Result<Executable, Refusal> {
        let i = self.index as usize;
        if let Some(Some(c)) = self.decoded.get(i) {
            if c.pc == pc && c.record == *record {
                return Ok(c.decoded.clone());
            }
        }
        let decoded = Executable::from_record(record, engine)?;
        if i < DECODED_RECORDS {
            if self.decoded.len() <= i {
                self.decoded.resize_with(i + 1, || None);
            }
            self.decoded[i] = Some(DecodedRecord {
                pc,
                record: *record,
                decoded: decoded.clone(),
            });
        }
        Ok(decoded)
    }

    /// Queues a semaphore update for its cycle.
    fn push_signal(&mut self, s: Signal) {
        let i = self.signals.partition_point(|x| x.at <= s.at);
        self.signals.insert(i, s);
    }

    /// The phase after the runtime step the engine is at.
    fn next_phase(&self) -> Phase {
        let Some(w) = self.wrapper else {
            return Phase::Program;
        };
        match self.phase {
            Phase::Pre(i) if usize::from(i) + 1 < w.pre.len() => Phase::Pre(i + 1),
            Phase::Pre(_) if self.has_program => Phase::Program,
            Phase::Pre(_) if !w.post.is_empty() => Phase::Post(0),
            Phase::Pre(_) => Phase::Done,
            Phase::Post(i) if usize::from(i) + 1 < w.post.len() => Phase::Post(i + 1),
            Phase::Post(_) | Phase::Done => Phase::Done,
            Phase::Program => Phase::Program,
        }
    }

    /// Starts the engine at `pc` for a new execution, at cycle `now`, with the runtime's
    /// instructions `wrapper` around its program.
    pub fn start(&mut self, pc: DeviceAddr, now: u64, wrapper: Option<&'static wrapper::Engine>) {
        self.state = RunState::Running;
        self.has_program = pc.raw() != 0;
        self.next_issue = now;
        self.stream_free = now;
        self.busy_until = now;
        self.launch = now;
        self.last_end = now;
        self.stalled_since = None;
        self.wrapper = wrapper;
        self.phase = match wrapper {
            Some(w) if !w.pre.is_empty() => Phase::Pre(0),
            Some(w) if !self.has_program && !w.post.is_empty() => Phase::Post(0),
            _ => Phase::Program,
        };
        self.pc = pc.raw();
        self.index = 0;
        self.nan_reported = false;
        self.signals.clear();
        self.prev = None;
        self.registers.clear();
        self.registers
            .resize(nrt_hal::isa::neuron::REGISTERS as usize, 0);
    }
}

/// What one instruction did.
enum Step {
    /// Issued: the engine goes on after `timing.issue` cycles, the instruction completes after
    /// `timing.latency`.
    Next(InstrTiming),
    /// Not issued: a resource it needs (the PE's moving stream) is busy until this cycle.
    Delay(u64),
    /// One of the runtime's instructions issued.
    Runtime(InstrTiming, RuntimeInstr),
    /// Parked on a wait; the instruction is done (a `sem.wait` or `event.wait`).
    Park(Wait),
    /// Stalled on a sync-block wait; the record executes once it holds.
    Stall(Wait),
    /// Retired (or hung).
    Retire,
}

impl Domain {
    /// Wakes every engine of `nc` whose wait `satisfied` accepts.
    pub fn wake_engines(&mut self, nc: NcIndex, satisfied: impl Fn(&Wait) -> bool) {
        let now = self.now;
        for kind in EngineKind::ALL {
            let unit = &mut self.cores[nc].engines[kind.index()];
            if let RunState::Waiting(w, since) = unit.state {
                if satisfied(&w) {
                    unit.state = RunState::Running;
                    if unit.phase == Phase::Program {
                        let wake = now + compute::cost::wake_cycles(kind);
                        unit.next_issue = unit.next_issue.max(wake);
                    }
                    let name = || match w {
                        Wait::Semaphore { sem, .. } => format!("wait {sem}"),
                        Wait::Event { event, .. } => format!("wait {event}"),
                    };
                    self.timeline
                        .record(Track::Engine(nc, kind), name, since, now);
                    self.sched.schedule(now, nc.0, Unit::Engine(kind));
                }
            }
        }
    }

    /// Called when no unit of any core has work scheduled: a core whose execution still has
    /// engines parked, all on sync-block waits (which only the device's own engines and DMAs
    /// can satisfy), can never finish. Each such engine gets a `Deadlock` entry naming its
    /// instruction, semaphore, the semaphore's value and the value awaited, and the execution
    /// completes as faulted. Returns whether any core was deadlocked.
    pub fn detect_deadlocks(&mut self) -> bool {
        let mut found = false;
        for nc in self.cores.indices() {
            if self.cores[nc].seq.phase != crate::sequencer::Phase::Running {
                continue;
            }
            let mut stuck = Vec::new();
            let mut others = false;
            for kind in EngineKind::ALL {
                let unit = &self.cores[nc].engines[kind.index()];
                match unit.state {
                    RunState::Waiting(
                        Wait::Semaphore {
                            sem,
                            value,
                            sync: true,
                            ..
                        },
                        _,
                    ) => stuck.push((kind, unit.index, sem, value)),
                    RunState::Idle | RunState::Retired => {}
                    _ => others = true,
                }
            }
            if others || stuck.is_empty() {
                continue;
            }
            let compute_idx = self.cores[nc].seq.current_idx();
            for (engine, index, sem, awaited) in stuck {
                let value = self.sem_read(nc, sem);
                self.post(
                    nc,
                    Notification::Deadlock {
                        core: nc,
                        engine,
                        compute_idx,
                        instruction_index: index as u32,
                        sem: sem.0,
                        value,
                        awaited: awaited as u32,
                    },
                );
            }
            self.seq_fault(nc);
            found = true;
        }
        found
    }

    /// Stops every engine of `nc` (execution aborted or core reset).
    pub fn stop_engines(&mut self, nc: NcIndex) {
        for unit in &mut self.cores[nc].engines {
            unit.state = RunState::Idle;
            unit.signals.clear();
        }
    }

    /// Wake-up of engine `kind` of core `nc`: land the semaphore updates of instructions that
    /// completed, and issue instructions until it parks, retires, or another unit's wake-up
    /// comes first. An instruction issues at the engine's `next_issue` cycle (once its waits
    /// hold) and completes `latency` cycles later, when its sync-block update lands; the
    /// engine goes on after its `issue` cycles, so instructions overlap where the engine
    /// pipelines (docs/simulator.md §7.2).
    pub fn engine_step(&mut self, nc: NcIndex, kind: EngineKind) {
        loop {
            let now = self.now;
            self.engine_land_signals(nc, kind, now);
            let unit = &self.cores[nc].engines[kind.index()];
            let next_signal = unit.signals.front().map(|s| s.at);
            if unit.state != RunState::Running {
                if let Some(t) = next_signal {
                    self.sched.schedule(t, nc.0, Unit::Engine(kind));
                }
                return;
            }
            let issue = unit.next_issue.max(now);
            let t = match next_signal {
                Some(s) if s < issue => s,
                _ => issue,
            };
            if t > now {
                if !self.may_run_ahead(t, nc, Unit::Engine(kind)) {
                    self.sched.schedule(t, nc.0, Unit::Engine(kind));
                    return;
                }
                self.now = t;
                continue;
            }
            let step = match self.engine_execute_one(nc, kind) {
                Ok(s) => s,
                Err((fault, opcode)) => {
                    self.engine_fault(nc, kind, fault, opcode);
                    return;
                }
            };
            let unit = &mut self.cores[nc].engines[kind.index()];
            match step {
                Step::Next(timing) => {
                    let index = unit.index;
                    unit.pc += RECORD_SIZE as u64;
                    unit.index += 1;
                    unit.next_issue = now + timing.issue;
                    if timing.stream > 0 {
                        unit.stream_free = now + timing.stream;
                    }
                    let end = now + timing.latency;
                    unit.busy_until = unit.busy_until.max(end);
                    unit.last_end = end;
                    unit.stalled_since = None;
                    self.stats.instructions += 1;
                    let core = &mut self.cores[nc];
                    core.profile.engine(kind, now, timing.latency);
                    if let Some(tr) = core.trace.as_mut() {
                        tr.instruction(kind, index as u32, now, end);
                    }
                }
                Step::Runtime(timing, what) => {
                    unit.next_issue = now + timing.issue;
                    let end = now + timing.latency;
                    unit.busy_until = unit.busy_until.max(end);
                    unit.last_end = end;
                    let start = unit.stalled_since.take().unwrap_or(now);
                    unit.phase = unit.next_phase();
                    self.stats.instructions += 1;
                    let core = &mut self.cores[nc];
                    if what.opcode == "EVENT_SEMAPHORE" {
                        core.profile.engine_instructions[kind.index()] += 1;
                    } else {
                        core.profile.engine(kind, now, timing.latency);
                    }
                    if let Some(tr) = core.trace.as_mut() {
                        tr.runtime(kind, what, start, end);
                    }
                }
                Step::Delay(until) => unit.next_issue = until,
                Step::Park(w) => {
                    let index = unit.index;
                    unit.state = RunState::Waiting(w, now);
                    unit.pc += RECORD_SIZE as u64;
                    unit.index += 1;
                    self.stats.instructions += 1;
                    if let Some(tr) = self.cores[nc].trace.as_mut() {
                        tr.instruction(kind, index as u32, now, now);
                    }
                }
                Step::Stall(w) => {
                    unit.state = RunState::Waiting(w, now);
                    unit.stalled_since.get_or_insert(now);
                }
                Step::Retire => {
                    if unit.phase == Phase::Program
                        && unit.wrapper.is_some_and(|w| !w.post.is_empty())
                    {
                        // The program ends; the runtime's postamble follows.
                        self.stats.instructions += 1;
                        unit.phase = Phase::Post(0);
                        continue;
                    }
                    let last_signal = unit.signals.back().map_or(0, |s| s.at);
                    if unit.busy_until > now || last_signal > now {
                        // The engine retires when its last instruction has completed and its
                        // semaphore updates have landed.
                        unit.next_issue = unit.busy_until.max(last_signal);
                        continue;
                    }
                    if unit.phase != Phase::Done {
                        self.stats.instructions += 1;
                    }
                    let hung = self.faults.hung_engines.contains(&(nc, kind));
                    let unit = &mut self.cores[nc].engines[kind.index()];
                    if hung {
                        unit.state = RunState::Hung;
                        return;
                    }
                    unit.state = RunState::Retired;
                    self.seq_engine_retired(nc, now);
                    return;
                }
            }
        }
    }

    /// Lands the semaphore updates of engine `kind`'s instructions that completed by `now`.
    fn engine_land_signals(&mut self, nc: NcIndex, kind: EngineKind, now: u64) {
        while let Some(&s) = self.cores[nc].engines[kind.index()].signals.front() {
            if s.at > now {
                return;
            }
            self.cores[nc].engines[kind.index()].signals.pop_front();
            self.sem_op(nc, s.sem, s.op, s.value);
        }
    }

    /// Issues (or waits with) the runtime's instruction the engine is at
    /// (docs/simulator.md §7.6).
    fn engine_runtime_step(&mut self, nc: NcIndex, kind: EngineKind) -> Step {
        let now = self.now;
        let hz = self.target.spec().clocks.sp;
        let cycles = |ns: u32| (u64::from(ns) * hz).div_ceil(1_000_000_000);
        let unit = &self.cores[nc].engines[kind.index()];
        let (Some(w), Phase::Pre(i) | Phase::Post(i)) = (unit.wrapper, unit.phase) else {
            return Step::Retire;
        };
        let step = match unit.phase {
            Phase::Pre(_) => w.pre[usize::from(i)],
            _ => w.post[usize::from(i)],
        };
        let mut earliest = unit.last_end + cycles(step.gap);
        if step.not_before > 0 {
            earliest = earliest.max(unit.launch + cycles(step.not_before));
        }
        if step.kind == Kind::Drain {
            earliest = earliest.max(unit.busy_until);
        }
        if earliest > now {
            return Step::Delay(earliest);
        }
        let sem = reserved::SPARE;
        if let Kind::Barrier(Some(v), _) = step.kind {
            if self.sem_read(nc, sem) != v {
                return Step::Stall(Wait::Semaphore {
                    sem,
                    cmp: SemCmp::Eq,
                    value: v,
                    sync: true,
                });
            }
        }
        let unit = &mut self.cores[nc].engines[kind.index()];
        let mut latency = cycles(step.cost);
        if let Kind::Until(t) = step.kind {
            latency = latency.max((unit.launch + cycles(t)).saturating_sub(now));
        }
        if let Kind::Barrier(_, then) = step.kind {
            let (op, value) = match then {
                Then::Inc => (SemWindow::Increment, 1),
                Then::Zero => (SemWindow::Set, 0),
            };
            unit.push_signal(Signal {
                at: now + latency,
                sem,
                op,
                value,
            });
        }
        Step::Runtime(
            InstrTiming::fixed(latency),
            RuntimeInstr {
                opcode: step.opcode,
                operands: step.operands,
                pc: step.pc,
            },
        )
    }

    fn engine_wait_holds(&self, nc: NcIndex, w: &Wait) -> bool {
        match *w {
            Wait::Semaphore {
                sem, cmp, value, ..
            } => self.sem_holds(nc, sem, cmp, value),
            Wait::Event { event, value } => {
                self.cores[nc].events.get(event.index()) == Some(&value)
            }
        }
    }

    /// Fetches, decodes and executes the record at the engine's pc: its sync waits first (a
    /// wait that does not hold stalls the engine on this record), then the instruction, then
    /// its semaphore update is queued for the instruction's completion.
    fn engine_execute_one(
        &mut self,
        nc: NcIndex,
        kind: EngineKind,
    ) -> Result<Step, (ExecFault, u32)> {
        let unit = &self.cores[nc].engines[kind.index()];
        if unit.phase != Phase::Program {
            return Ok(self.engine_runtime_step(nc, kind));
        }
        if !unit.has_program {
            return Ok(Step::Retire);
        }
        let pc = DeviceAddr::new(self.cores[nc].engines[kind.index()].pc);
        let mut raw = [0u8; RECORD_SIZE];
        let fetched = self.shared.mem().read(pc, &mut raw);
        if let Err(e) = fetched {
            if let MemFault::Uncorrectable { addr } = e {
                self.post_hbm_uncorrectable(nc, addr);
            }
            return Err((ExecFault::OutOfBounds, 0));
        }
        let rec = Record(raw);
        let opcode = u32::from(raw[0]);
        let d = self.cores[nc].engines[kind.index()]
            .decode(pc.raw(), &rec, kind)
            .map_err(|e| match e {
                Refusal::Decode(e) if e.is_unknown_opcode() => (ExecFault::UnknownOpcode, opcode),
                _ => (ExecFault::Malformed, opcode),
            })?;
        if d.neuron {
            let unit = &self.cores[nc].engines[kind.index()];
            check_pe_pair(unit.prev.as_ref(), &rec).map_err(|_| (ExecFault::Malformed, opcode))?;
        }
        let sems = self.target.spec().semaphores_per_core;
        for w in d.sync.waits.iter().flatten() {
            let value = i32::try_from(w.value).map_err(|_| (ExecFault::Malformed, opcode))?;
            if w.sem.0 >= sems {
                return Err((ExecFault::OutOfBounds, opcode));
            }
            let wait = Wait::Semaphore {
                sem: w.sem,
                cmp: SemCmp::Ge,
                value,
                sync: true,
            };
            if !self.engine_wait_holds(nc, &wait) {
                return Ok(Step::Stall(wait));
            }
        }
        if d.sync.signal.is_some_and(|s| s.0 >= sems) {
            return Err((ExecFault::OutOfBounds, opcode));
        }
        if let Some(until) = self.engine_resource_delay(nc, kind, &d.op) {
            return Ok(Step::Delay(until));
        }
        let mut step = match &d.op {
            Operation::Model(i) => self.engine_instruction(nc, kind, i, opcode)?,
            Operation::Native(n) => Step::Next(self.engine_native(nc, kind, n, opcode)?),
        };
        if let (true, Step::Next(t)) = (d.neuron, &mut step) {
            if let Some(f) = compute::cost::neuron_fixed(raw[0], kind) {
                *t = InstrTiming::of(f, kind, self.target);
            }
        }
        let now = self.now;
        let unit = &mut self.cores[nc].engines[kind.index()];
        if let (Some(sem), Step::Next(timing)) = (d.sync.signal, &step) {
            unit.push_signal(Signal {
                at: now + timing.latency + compute::cost::SIGNAL_DELAY,
                sem,
                op: SemWindow::Increment,
                value: 1,
            });
        }
        unit.prev = Some(rec);
        Ok(step)
    }

    /// Executes one decoded instruction (its sync waits hold).
    fn engine_instruction(
        &mut self,
        nc: NcIndex,
        kind: EngineKind,
        instr: &Instruction,
        opcode: u32,
    ) -> Result<Step, (ExecFault, u32)> {
        let sync = InstrTiming::fixed(self.timing.sync_instruction_cycles);
        let spec = self.target.spec();
        let step = match *instr {
            Instruction::StreamHeader | Instruction::Nop => Step::Next(sync),
            Instruction::Write { addr, value } => {
                self.store32(addr, value)
                    .map_err(|e| self.engine_access_fault(nc, e, opcode))?;
                let t = InstrTiming::fixed(self.timing.write_cycles);
                self.record_span(nc, kind, "write", t.latency);
                Step::Next(t)
            }
            Instruction::SemSignal { sem, op, value } => {
                if sem.0 >= spec.semaphores_per_core {
                    return Err((ExecFault::OutOfBounds, opcode));
                }
                let window = match op {
                    SemOp::Inc => SemWindow::Increment,
                    SemOp::Dec => SemWindow::Decrement,
                    SemOp::Set => SemWindow::Set,
                };
                self.sem_op(nc, sem, window, value as u32);
                Step::Next(sync)
            }
            Instruction::SemWait { sem, cmp, value } => {
                if sem.0 >= spec.semaphores_per_core {
                    return Err((ExecFault::OutOfBounds, opcode));
                }
                let w = Wait::Semaphore {
                    sem,
                    cmp,
                    value,
                    sync: false,
                };
                if self.engine_wait_holds(nc, &w) {
                    Step::Next(sync)
                } else {
                    Step::Park(w)
                }
            }
            Instruction::EventSet { event, value } => {
                if event.0 >= spec.events_per_core {
                    return Err((ExecFault::OutOfBounds, opcode));
                }
                self.event_set(nc, event, u32::from(value));
                Step::Next(sync)
            }
            Instruction::EventWait { event, value } => {
                if event.0 >= spec.events_per_core {
                    return Err((ExecFault::OutOfBounds, opcode));
                }
                let w = Wait::Event {
                    event,
                    value: u32::from(value),
                };
                if self.engine_wait_holds(nc, &w) {
                    Step::Next(sync)
                } else {
                    Step::Park(w)
                }
            }
            Instruction::End => Step::Retire,
            Instruction::DmaDirect {
                sem,
                increment,
                src_dtype,
                dst_dtype,
                src,
                dst,
                src_pattern,
                dst_pattern,
                src_elem_size,
                dst_elem_size,
            } => {
                if sem.0 >= spec.semaphores_per_core {
                    return Err((ExecFault::OutOfBounds, opcode));
                }
                let r = crate::dge::Request {
                    sem,
                    increment: u32::from(increment),
                    src: (src, src_pattern, src_elem_size, src_dtype),
                    dst: (dst, dst_pattern, dst_elem_size, dst_dtype),
                };
                let index = self.cores[nc].engines[kind.index()].index as u32;
                let now = self.now;
                self.dge_issue(nc, kind, index, now, &r);
                let t = compute::cost::dma_direct_timing(src_pattern.chunks(), kind);
                Step::Next(InstrTiming::of(t, kind, self.target))
            }
            ref i if i.is_pseudo() => return Err((ExecFault::Malformed, opcode)),
            ref i => Step::Next(self.engine_compute(nc, kind, i, opcode)?),
        };
        Ok(step)
    }

    /// Runs a compute instruction against the core's on-chip memory; returns its cost in
    /// device cycles.
    fn engine_compute(
        &mut self,
        nc: NcIndex,
        kind: EngineKind,
        i: &Instruction,
        opcode: u32,
    ) -> Result<InstrTiming, (ExecFault, u32)> {
        let target = self.target;
        let spec = target.spec();
        let (instruction_index, first_nan) = {
            let core = &mut self.cores[nc];
            let unit = &mut core.engines[kind.index()];
            let (sbuf, psum) = core.onchip.split_mut();
            let mut view = OnChipView {
                sbuf,
                sbuf_partition_bytes: spec.sbuf.partition_bytes as usize,
                psum,
                psum_partition_bytes: spec.psum.partition_bytes as usize,
            };
            let outcome = compute::execute(i, kind, &mut view, &mut unit.compute)
                .map_err(|e| (compute::classify(&e), opcode))?;
            let first_nan = outcome.produced_nan && !unit.nan_reported;
            unit.nan_reported |= outcome.produced_nan;
            core.profile.pe_macs += outcome.pe_macs;
            (unit.index, first_nan)
        };
        if first_nan {
            let compute_idx = self.cores[nc].seq.current_idx();
            self.post(
                nc,
                Notification::NanProduced {
                    core: nc,
                    engine: kind,
                    compute_idx,
                    instruction_index,
                },
            );
        }
        let timing = compute::timing(i, kind, target);
        if matches!(i, Instruction::MatmulMoving { .. }) {
            self.cores[nc].profile.matmul_instructions += 1;
        }
        self.record_span(nc, kind, i.opcode().mnemonic(), timing.latency);
        Ok(timing)
    }

    /// The cycle until which a resource `op` needs on engine `kind` is busy, if it is busy
    /// now: a PE matmul streams its moving operand only once the previous one's has passed.
    fn engine_resource_delay(&self, nc: NcIndex, kind: EngineKind, op: &Operation) -> Option<u64> {
        let unit = &self.cores[nc].engines[kind.index()];
        let streams = matches!(op, Operation::Model(Instruction::MatmulMoving { .. }));
        (streams && unit.stream_free > self.now).then_some(unit.stream_free)
    }

    fn record_span(&mut self, nc: NcIndex, kind: EngineKind, name: &str, cost: u64) {
        if self.timeline.enabled() {
            let now = self.now;
            self.timeline
                .record(Track::Engine(nc, kind), || name, now, now + cost);
        }
    }

    fn engine_access_fault(
        &mut self,
        nc: NcIndex,
        e: AccessFault,
        opcode: u32,
    ) -> (ExecFault, u32) {
        if let AccessFault::Mem(MemFault::Uncorrectable { addr }) = e {
            self.post_hbm_uncorrectable(nc, addr);
        }
        (ExecFault::OutOfBounds, opcode)
    }

    /// Posts the `HbmUncorrectable` entry of the execution `nc` is running: a read hit an
    /// address with an injected uncorrectable error (an engine's fetch or operand, or a DMA).
    pub(crate) fn post_hbm_uncorrectable(&mut self, nc: NcIndex, address: DeviceAddr) {
        let compute_idx = self.cores[nc].seq.current_idx();
        self.post(
            nc,
            Notification::HbmUncorrectable {
                core: nc,
                compute_idx,
                address,
            },
        );
    }

    /// Writes the `ExecError` entry for the engine's current instruction and aborts.
    fn engine_fault(&mut self, nc: NcIndex, kind: EngineKind, fault: ExecFault, opcode: u32) {
        let unit = &self.cores[nc].engines[kind.index()];
        let instruction_index = unit.index;
        let compute_idx = self.cores[nc].seq.current_idx();
        self.post(
            nc,
            Notification::ExecError {
                core: nc,
                engine: kind,
                compute_idx,
                instruction_index,
                opcode,
                fault,
            },
        );
        self.seq_fault(nc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_decoded_again_when_its_bytes_or_place_change() {
        let nop = Instruction::Nop.encode().unwrap();
        let end = Instruction::End.encode().unwrap();
        let mut unit = EngineUnit::default();
        let at =
            |unit: &mut EngineUnit, pc: u64, r: &Record| match unit.decode(pc, r, EngineKind::Pe) {
                Ok(Executable {
                    op: Operation::Model(i),
                    ..
                }) => Ok(i),
                _ => Err(()),
            };
        assert_eq!(at(&mut unit, 0x1000, &nop), Ok(Instruction::Nop));
        assert_eq!(at(&mut unit, 0x1000, &nop), Ok(Instruction::Nop));
        // Same index and place, new bytes (the program was rewritten).
        assert_eq!(at(&mut unit, 0x1000, &end), Ok(Instruction::End));
        // Same index, another program.
        assert_eq!(at(&mut unit, 0x2000, &nop), Ok(Instruction::Nop));
        // A record that does not decode fails every time and leaves the cache as it was.
        let bad = Record([0xFF; RECORD_SIZE]);
        assert!(unit.decode(0x2000, &bad, EngineKind::Pe).is_err());
        assert!(unit.decode(0x2000, &bad, EngineKind::Pe).is_err());
        assert_eq!(at(&mut unit, 0x2000, &nop), Ok(Instruction::Nop));
        unit.index = 1;
        assert_eq!(at(&mut unit, 0x2040, &end), Ok(Instruction::End));
        assert_eq!(unit.decoded.len(), 2);
    }
}
