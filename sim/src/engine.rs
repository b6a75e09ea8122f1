//! The five compute engines of a core (PE, ACT, POOL, DVE, SP) running their instruction
//! streams (the encoding of `nrt_hal::isa`).
//!
//! An engine started by the sequencer fetches 64-byte records from device memory at its
//! program counter, decodes them, and executes them in order: compute instructions through
//! [`crate::compute`], `Write` through the device's one store path (how an engine starts a DMA
//! or pokes an event), semaphore and event waits and signals, and `End`, which retires the
//! engine for this execution. A wait that does not hold parks the engine until a store changes
//! the semaphore or event.
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

use nrt_hal::isa::{DecodeError, Instruction, Record, SemCmp, SemOp, RECORD_SIZE};
use nrt_hal::notify::{ExecFault, Notification};
use nrt_hal::target::SemWindow;
use nrt_hal::{DeviceAddr, EngineKind, EventId, NcIndex, SemaphoreId};

use crate::compute::{self, EngineState, OnChipView};
use crate::device::{AccessFault, Device};
use crate::memory::MemFault;
use crate::sched::Unit;
use crate::timeline::Track;

/// What a parked engine waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// `sem <cmp> value`.
    Semaphore {
        sem: SemaphoreId,
        cmp: SemCmp,
        value: i32,
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
}

impl EngineUnit {
    /// Starts the engine at `pc` for a new execution.
    pub fn start(&mut self, pc: DeviceAddr) {
        self.state = RunState::Running;
        self.pc = pc.raw();
        self.index = 0;
        self.nan_reported = false;
    }
}

/// What one instruction did.
enum Step {
    /// Continue after `cost` cycles.
    Next(u64),
    /// Parked on a wait.
    Park(Wait),
    /// Retired (or hung).
    Retire,
}

impl Device {
    /// Wakes every engine of `nc` whose wait `satisfied` accepts.
    pub fn wake_engines(&mut self, nc: NcIndex, satisfied: impl Fn(&Wait) -> bool) {
        let now = self.now;
        for kind in EngineKind::ALL {
            let unit = &mut self.cores[nc.index()].engines[kind.index()];
            if let RunState::Waiting(w, since) = unit.state {
                if satisfied(&w) {
                    unit.state = RunState::Running;
                    let name = match w {
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

    /// Stops every engine of `nc` (execution aborted or core reset).
    pub fn stop_engines(&mut self, nc: NcIndex) {
        for unit in &mut self.cores[nc.index()].engines {
            unit.state = RunState::Idle;
        }
    }

    /// Wake-up of engine `kind` of core `nc`: run instructions until it parks, retires, or
    /// another unit's wake-up comes first.
    pub fn engine_step(&mut self, nc: NcIndex, kind: EngineKind) {
        let mut t = self.now;
        loop {
            if self.cores[nc.index()].engines[kind.index()].state != RunState::Running {
                return;
            }
            let step = match self.engine_execute_one(nc, kind) {
                Ok(s) => s,
                Err((fault, opcode)) => {
                    self.engine_fault(nc, kind, fault, opcode);
                    return;
                }
            };
            let unit = &mut self.cores[nc.index()].engines[kind.index()];
            match step {
                Step::Next(cost) => {
                    unit.pc += RECORD_SIZE as u64;
                    unit.index += 1;
                    self.stats.instructions += 1;
                    t += cost;
                }
                Step::Park(w) => {
                    unit.state = RunState::Waiting(w, t);
                    unit.pc += RECORD_SIZE as u64;
                    unit.index += 1;
                    self.stats.instructions += 1;
                    return;
                }
                Step::Retire => {
                    self.stats.instructions += 1;
                    let hung = self.faults.hung_engines.contains(&(nc, kind));
                    let unit = &mut self.cores[nc.index()].engines[kind.index()];
                    if hung {
                        unit.state = RunState::Hung;
                        return;
                    }
                    unit.state = RunState::Retired;
                    self.seq_engine_retired(nc, t);
                    return;
                }
            }
            if !self.may_run_ahead(t, nc, Unit::Engine(kind)) {
                self.sched.schedule(t, nc.0, Unit::Engine(kind));
                return;
            }
            self.now = t;
        }
    }

    fn engine_wait_holds(&self, nc: NcIndex, w: &Wait) -> bool {
        match *w {
            Wait::Semaphore { sem, cmp, value } => self.sem_holds(nc, sem, cmp, value),
            Wait::Event { event, value } => {
                self.cores[nc.index()].events.get(event.index()) == Some(&value)
            }
        }
    }

    /// Fetches, decodes and executes the instruction at the engine's pc.
    fn engine_execute_one(
        &mut self,
        nc: NcIndex,
        kind: EngineKind,
    ) -> Result<Step, (ExecFault, u32)> {
        let pc = DeviceAddr::new(self.cores[nc.index()].engines[kind.index()].pc);
        let mut raw = [0u8; RECORD_SIZE];
        if let Err(e) = self.mem.read(pc, &mut raw) {
            if let MemFault::Uncorrectable { addr } = e {
                let compute_idx = self.cores[nc.index()].seq.current_idx();
                self.post(
                    nc,
                    Notification::HbmUncorrectable {
                        core: nc,
                        compute_idx,
                        address: addr,
                    },
                );
            }
            return Err((ExecFault::OutOfBounds, 0));
        }
        let rec = Record(raw);
        let opcode = u32::from(raw[0]);
        let instr = Instruction::decode(&rec).map_err(|e| match e {
            DecodeError::UnknownOpcode(_) => (ExecFault::UnknownOpcode, opcode),
            _ => (ExecFault::Malformed, opcode),
        })?;
        let sync = self.timing.sync_instruction_cycles;
        let record = |dev: &mut Device, name: &str, cost: u64| {
            if dev.timeline.enabled() {
                let now = dev.now;
                dev.timeline
                    .record(Track::Engine(nc, kind), name.to_string(), now, now + cost);
            }
        };
        let step = match instr {
            Instruction::StreamHeader | Instruction::Nop => Step::Next(sync),
            Instruction::Write { addr, value } => {
                self.store32(addr, value)
                    .map_err(|e| self.engine_access_fault(nc, e, opcode))?;
                record(self, "write", sync);
                Step::Next(sync)
            }
            Instruction::SemSignal { sem, op, value } => {
                if sem.0 >= self.target.spec().semaphores_per_core {
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
                if sem.0 >= self.target.spec().semaphores_per_core {
                    return Err((ExecFault::OutOfBounds, opcode));
                }
                let w = Wait::Semaphore { sem, cmp, value };
                if self.engine_wait_holds(nc, &w) {
                    Step::Next(sync)
                } else {
                    Step::Park(w)
                }
            }
            Instruction::EventSet { event, value } => {
                if event.0 >= self.target.spec().events_per_core {
                    return Err((ExecFault::OutOfBounds, opcode));
                }
                self.event_set(nc, event, u32::from(value));
                Step::Next(sync)
            }
            Instruction::EventWait { event, value } => {
                if event.0 >= self.target.spec().events_per_core {
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
            ref i if i.is_pseudo() => return Err((ExecFault::Malformed, opcode)),
            ref i => {
                let target = self.target;
                let spec = target.spec();
                let (outcome, instruction_index, first_nan) = {
                    let unit = &mut self.cores[nc.index()].engines[kind.index()];
                    let Ok(oc) = self.mem.onchip_mut(nc) else {
                        return Err((ExecFault::OutOfBounds, opcode));
                    };
                    let (sbuf, psum) = oc.split_mut();
                    let mut view = OnChipView {
                        sbuf,
                        sbuf_partition_bytes: spec.sbuf.partition_bytes as usize,
                        psum,
                        psum_partition_bytes: spec.psum.partition_bytes as usize,
                    };
                    let outcome = compute::execute(i, kind, &mut view, &mut unit.compute)
                        .map_err(|e| (classify_compute_error(&e), opcode))?;
                    let first_nan = outcome.produced_nan && !unit.nan_reported;
                    unit.nan_reported |= outcome.produced_nan;
                    (outcome, unit.index, first_nan)
                };
                let _ = outcome.elements;
                if first_nan {
                    let compute_idx = self.cores[nc.index()].seq.current_idx();
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
                let cycles =
                    compute::to_device_cycles(compute::cost(i, kind, target), kind, target);
                record(self, i.opcode().mnemonic(), cycles);
                Step::Next(cycles)
            }
        };
        Ok(step)
    }

    fn engine_access_fault(
        &mut self,
        nc: NcIndex,
        e: AccessFault,
        opcode: u32,
    ) -> (ExecFault, u32) {
        if let AccessFault::Mem(MemFault::Uncorrectable { addr }) = e {
            let compute_idx = self.cores[nc.index()].seq.current_idx();
            self.post(
                nc,
                Notification::HbmUncorrectable {
                    core: nc,
                    compute_idx,
                    address: addr,
                },
            );
        }
        (ExecFault::OutOfBounds, opcode)
    }

    /// Writes the `ExecError` entry for the engine's current instruction and aborts.
    fn engine_fault(&mut self, nc: NcIndex, kind: EngineKind, fault: ExecFault, opcode: u32) {
        let unit = &self.cores[nc.index()].engines[kind.index()];
        let instruction_index = unit.index;
        let compute_idx = self.cores[nc.index()].seq.current_idx();
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

fn classify_compute_error(e: &compute::ComputeError) -> ExecFault {
    match e {
        compute::ComputeError::OutOfBounds { .. } => ExecFault::OutOfBounds,
        _ => ExecFault::Malformed,
    }
}
