//! DMAs the engines issue themselves: the platform's `dma.direct` (what the runtime relocates a
//! Neuron `0xD4` DMA_DIRECT2D into), the descriptor-generation path of docs/simulator.md §4.1.
//!
//! An engine issuing a `dma.direct` resolves both ends at once — an absolute address, or a
//! var *slot* (16 bytes the runtime filled with the var's device address and size) plus an
//! immediate offset or the value of one of the engine's registers — checks that every chunk
//! of the pattern lies inside its var, and goes on with its next instruction. The core's DGE
//! unit serves the issued DMAs in issue order: each takes `dge_issue_cycles` plus its bytes
//! over the 16 DMA engines of the core working in parallel (capped, when it touches HBM, by
//! the core's share of HBM bandwidth); its chunks move when it completes, then its semaphore
//! gains the instruction's increment. An execution is not complete while DMAs are in flight.
//!
//! A chunk outside its var, a slot that is not readable, or a chunk that leaves memory ends the
//! execution with a `DgeError` entry naming the engine, the instruction and the address; no
//! byte outside the device's memories is ever touched.

use std::collections::VecDeque;

use nrt_hal::isa::{DmaEnd, DmaPattern};
use nrt_hal::notify::{DmaFault, Notification};
use nrt_hal::target::SemWindow;
use nrt_hal::{DeviceAddr, Dtype, EngineKind, NcIndex, SemaphoreId};

use crate::compute::cost::mul_div_ceil;
use crate::device::Domain;
use crate::memory::SlotHint;
use crate::sched::Unit;
use crate::timeline::Track;

/// One side of an issued DMA, resolved.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Side {
    pub base: DeviceAddr,
    pub pattern: DmaPattern,
    pub elem: u16,
    pub dtype: Dtype,
}

/// An issued DMA.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Job {
    /// Cycle it completes.
    done: u64,
    /// Cycle it started being served.
    start: u64,
    engine: EngineKind,
    instruction_index: u32,
    sem: SemaphoreId,
    increment: u32,
    src: Side,
    dst: Side,
}

/// A core's engine-issued DMAs.
#[derive(Debug, Default)]
pub(crate) struct Dge {
    jobs: VecDeque<Job>,
    /// Cycle the unit is next free.
    free_at: u64,
}

impl Dge {
    /// Whether DMAs are in flight.
    pub fn busy(&self) -> bool {
        !self.jobs.is_empty()
    }

    /// Drops every DMA in flight (the execution was aborted).
    pub fn clear(&mut self) {
        self.jobs.clear();
    }
}

/// What a `dma.direct` asks for, as the engine decoded it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request {
    pub sem: SemaphoreId,
    pub increment: u32,
    pub src: (DmaEnd, DmaPattern, u16, Dtype),
    pub dst: (DmaEnd, DmaPattern, u16, Dtype),
}

/// Why a DMA cannot be issued or completed.
struct Failure {
    fault: DmaFault,
    address: DeviceAddr,
}

impl Domain {
    /// Engine `engine` of `nc`, at its instruction `index` and cycle `t`, issues `r`. Returns
    /// `false` when the DMA failed (its error is posted and the execution aborted).
    pub fn dge_issue(
        &mut self,
        nc: NcIndex,
        engine: EngineKind,
        index: u32,
        t: u64,
        r: &Request,
    ) -> bool {
        let resolved = self
            .dge_side(nc, engine, r.src)
            .and_then(|src| Ok((src, self.dge_side(nc, engine, r.dst)?)));
        let (src, dst) = match resolved {
            Ok(x) => x,
            Err(f) => {
                self.dge_fail(nc, engine, index, f);
                return false;
            }
        };
        let bytes = src.pattern.chunks() * u64::from(src.elem);
        let touches_hbm = self.target.decode_mmio(src.base).is_none()
            || self.target.decode_mmio(dst.base).is_none();
        let spec = self.target.spec();
        let f = spec.clocks.sp;
        let engines = u64::from(spec.dma_engines_per_core.max(1));
        let mut cost = self.timing.dge_issue_cycles
            + mul_div_ceil(bytes, f, spec.dma_engine_bandwidth * engines);
        if touches_hbm {
            cost = cost.max(mul_div_ceil(
                bytes,
                f,
                spec.hbm_bandwidth / spec.nc_count as u64,
            ));
        }
        let dge = &mut self.cores[nc].dge;
        let start = dge.free_at.max(t);
        let done = start + cost;
        dge.free_at = done;
        dge.jobs.push_back(Job {
            done,
            start,
            engine,
            instruction_index: index,
            sem: r.sem,
            increment: r.increment,
            src,
            dst,
        });
        if self.cores[nc].trace.is_some() {
            self.trace_engine_dma(nc, engine, index, r, &src, &dst, start, done);
        }
        let p = &mut self.cores[nc].profile;
        p.dma_busy.add(start, cost);
        p.dma_bytes += dst.pattern.chunks() * u64::from(dst.elem);
        if touches_hbm {
            p.hbm_read_bytes += if self.target.decode_mmio(src.base).is_none() {
                bytes
            } else {
                0
            };
        }
        self.sched.schedule(done, nc.0, Unit::Dge);
        true
    }

    /// Records the packets of an issued DMA served from `start` to `done`: one per chunk,
    /// dealt round-robin to the core's DMA engines, each engine's in turn over the span, then
    /// one semaphore write per engine (the increment is spread over them, as the device's
    /// queues each add their share).
    #[allow(clippy::too_many_arguments)]
    fn trace_engine_dma(
        &mut self,
        nc: NcIndex,
        engine: EngineKind,
        index: u32,
        r: &Request,
        src: &Side,
        dst: &Side,
        start: u64,
        done: u64,
    ) {
        let lanes = u64::from(self.target.spec().dma_engines_per_core.max(1));
        let chunks = src.pattern.chunks();
        let hbm = (
            self.target.decode_mmio(src.base).is_none(),
            self.target.decode_mmio(dst.base).is_none(),
        );
        let (rb, wb) = (u64::from(src.elem), u64::from(dst.elem));
        let per_lane = chunks.div_ceil(lanes).max(1);
        let slot = (done - start) / per_lane;
        let Some(tr) = self.cores[nc].trace.as_mut() else {
            return;
        };
        for c in 0..chunks {
            let (lane, k) = (c % lanes, c / lanes);
            let s = start + k * slot;
            tr.engine_dma(
                engine,
                index,
                r.sem.0,
                lane as u32,
                wb,
                s,
                s + slot,
                (if hbm.0 { rb } else { 0 }, if hbm.1 { wb } else { 0 }),
            );
        }
        for lane in 0..lanes.min(u64::from(r.increment.max(1))) {
            tr.dma(nrt_hal::profile::TracedDma {
                source: nrt_hal::profile::DmaSource::Engine {
                    engine,
                    index,
                    semaphore: r.sem.0,
                    lane: lane as u32,
                },
                bytes: 4,
                start: done,
                end: done,
                hbm: (0, 0),
                semaphore_write: true,
            });
        }
    }

    /// Resolves one end: its base address, after checking every chunk lies inside its var.
    fn dge_side(
        &mut self,
        nc: NcIndex,
        engine: EngineKind,
        (end, pattern, elem, dtype): (DmaEnd, DmaPattern, u16, Dtype),
    ) -> Result<Side, Failure> {
        let (slot, offset) = match end {
            DmaEnd::Absolute(base) => {
                return Ok(Side {
                    base,
                    pattern,
                    elem,
                    dtype,
                })
            }
            DmaEnd::Slot { slot, offset } => (slot, u64::from(offset)),
            DmaEnd::SlotRegister { slot, register } => (
                slot,
                u64::from(self.cores[nc].engines[engine.index()].registers[usize::from(register)]),
            ),
        };
        let mut b = [0u8; 16];
        let mut hint = SlotHint::default();
        self.shared
            .mem()
            .read_hinted(&mut hint, slot, &mut b)
            .map_err(|_| Failure {
                fault: DmaFault::AddressFault,
                address: slot,
            })?;
        let var = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
        let size = u64::from_le_bytes(b[8..].try_into().expect("8 bytes"));
        let (lo, hi) = pattern.extent(u64::from(elem));
        let first = offset as i64 + lo;
        let end = offset as i64 + hi;
        if first < 0 || end as u64 > size {
            return Err(Failure {
                fault: DmaFault::OutOfBounds,
                address: DeviceAddr::new(var.wrapping_add_signed(first.max(end - 1))),
            });
        }
        Ok(Side {
            base: DeviceAddr::new(var + offset),
            pattern,
            elem,
            dtype,
        })
    }

    fn dge_fail(&mut self, nc: NcIndex, engine: EngineKind, index: u32, f: Failure) {
        let compute_idx = self.cores[nc].seq.current_idx();
        self.post(
            nc,
            Notification::DgeError {
                core: nc,
                engine,
                compute_idx,
                instruction_index: index,
                fault: f.fault,
                address: f.address,
            },
        );
        self.seq_fault(nc);
    }

    /// Wake-up of the DGE unit of `nc`: complete every DMA due by now.
    pub fn dge_step(&mut self, nc: NcIndex) {
        let now = self.now;
        while let Some(job) = self.cores[nc].dge.jobs.front().copied() {
            if job.done > now {
                self.sched.schedule(job.done, nc.0, Unit::Dge);
                return;
            }
            self.cores[nc].dge.jobs.pop_front();
            if let Err(f) = self.dge_move(&job) {
                self.dge_fail(nc, job.engine, job.instruction_index, f);
                return;
            }
            self.timeline.record(
                Track::Engine(nc, job.engine),
                || "dma.direct".to_string(),
                job.start,
                job.done,
            );
            self.sem_op(nc, job.sem, SemWindow::Increment, job.increment);
        }
        self.seq_dge_drained(nc);
    }

    /// Moves a DMA's chunks, converting when the dtypes differ.
    fn dge_move(&mut self, job: &Job) -> Result<(), Failure> {
        let (s, d) = (&job.src, &job.dst);
        let convert = s.dtype != d.dtype;
        for (so, dof) in s.pattern.offsets().zip(d.pattern.offsets()) {
            let src = DeviceAddr::new(s.base.raw().wrapping_add_signed(so));
            let dst = DeviceAddr::new(d.base.raw().wrapping_add_signed(dof));
            let r = if convert {
                self.transfer_converting(src, dst, s.dtype, d.dtype, u64::from(s.elem))
            } else {
                let (sm, dm) = (self.target.decode_mmio(src), self.target.decode_mmio(dst));
                let mut hints = [SlotHint::default(); 2];
                self.transfer(src, sm, dst, dm, u64::from(s.elem), &mut hints)
            };
            r.map_err(|e| Failure {
                fault: DmaFault::AddressFault,
                address: match e.addr() {
                    a if a == DeviceAddr::ZERO => dst,
                    a => a,
                },
            })?;
            self.stats.dma_bytes += u64::from(d.elem);
        }
        Ok(())
    }
}
