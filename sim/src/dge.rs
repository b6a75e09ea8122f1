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

/// A store a DMA makes into a semaphore, landing when the DMA's completion is reported.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeferredStore {
    /// Cycle it lands.
    pub at: u64,
    /// The semaphore register.
    pub addr: DeviceAddr,
    /// The value stored.
    pub value: u32,
}

/// A core's engine-issued DMAs.
#[derive(Debug, Default)]
pub(crate) struct Dge {
    /// Issued DMAs, in completion order.
    jobs: VecDeque<Job>,
    /// Per DMA engine (lane), the cycle it is next free for a packet of an issued DMA.
    lanes: Vec<u64>,
    /// Semaphore stores of DMA queues waiting for their completion report, in time order.
    stores: VecDeque<DeferredStore>,
    /// The cycle the software descriptor-generation ring takes the next POOL-issued DMA.
    sw_free: u64,
}

impl Dge {
    /// Whether DMAs are in flight.
    pub fn busy(&self) -> bool {
        !self.jobs.is_empty() || !self.stores.is_empty()
    }

    /// Drops every DMA in flight (the execution was aborted).
    pub fn clear(&mut self) {
        self.jobs.clear();
        self.stores.clear();
    }

    /// The earliest pending event.
    fn next_due(&self) -> Option<u64> {
        let j = self.jobs.front().map(|j| j.done);
        let s = self.stores.front().map(|s| s.at);
        match (j, s) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
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
        let touches = (
            self.target.decode_mmio(src.base).is_none(),
            self.target.decode_mmio(dst.base).is_none(),
        );
        let done = self.dge_schedule(nc, engine, index, r, &src, &dst, t, touches);
        let dge = &mut self.cores[nc].dge;
        let job = Job {
            done,
            start: t,
            engine,
            instruction_index: index,
            sem: r.sem,
            increment: r.increment,
            src,
            dst,
        };
        let i = dge.jobs.partition_point(|j| j.done <= done);
        dge.jobs.insert(i, job);
        let bytes = src.pattern.chunks() * u64::from(src.elem);
        let p = &mut self.cores[nc].profile;
        p.dma_bytes += dst.pattern.chunks() * u64::from(dst.elem);
        if touches.0 {
            p.hbm_read_bytes += bytes;
        }
        self.sched.schedule(done, nc.0, Unit::Dge);
        true
    }

    /// Schedules the packets of a DMA engine `engine` issued at cycle `t` on the core's DMA
    /// engines (docs/simulator.md §7.3) and returns the cycle its semaphore is incremented.
    ///
    /// The DMA starts moving `dge_hw_start_cycles` after its issue when the descriptors are
    /// generated by hardware (SP, ACT), `dge_sw_start_cycles` plus the POOL's descriptor
    /// writing when software generates them (POOL), and then no sooner than
    /// `dge_sw_service_cycles` after the POOL's DMA before it started. Its chunks travel in
    /// packets — one chunk each (hardware, or a converting DMA), up to 8 chunks and 4 KiB each
    /// (software) — each taken by the DMA engine free first and costing a descriptor pair of its
    /// bytes (docs/simulator.md §7.3); then every engine writes its share of the semaphore
    /// increment, and the increment lands `dma_completion_cycles` after the last write.
    #[allow(clippy::too_many_arguments)]
    fn dge_schedule(
        &mut self,
        nc: NcIndex,
        engine: EngineKind,
        index: u32,
        r: &Request,
        src: &Side,
        dst: &Side,
        t: u64,
        hbm: (bool, bool),
    ) -> u64 {
        let spec = self.target.spec();
        let lanes = spec.dma_engines_per_core.max(1) as usize;
        let timing = &self.timing;
        let chunks = src.pattern.chunks();
        let software = engine == EngineKind::Pool;
        let mut ready = t + if software {
            timing.dge_sw_start_cycles
                + crate::compute::to_device_cycles(
                    crate::compute::EngineCycles(chunks.saturating_mul(5)),
                    engine,
                    self.target,
                )
        } else {
            timing.dge_hw_start_cycles
        };
        if software {
            // Software-generated DMAs are taken one at a time.
            let dge = &mut self.cores[nc].dge;
            ready = ready.max(dge.sw_free);
            dge.sw_free = ready + timing.dge_sw_service_cycles;
        }
        let per_packet = if software && src.dtype == dst.dtype {
            (4096 / u64::from(dst.elem.max(1))).clamp(1, 8)
        } else {
            1
        };
        let (sb, db) = (u64::from(src.elem), u64::from(dst.elem));
        let f = spec.clocks.sp;
        let desc = timing.dma_descriptor_cycles;
        let cost = |bytes: u64| desc + mul_div_ceil(bytes, f, spec.dma_engine_bandwidth);
        let completion = timing.dma_completion_cycles;
        let tracing = self.cores[nc].trace.is_some();
        let dge = &mut self.cores[nc].dge;
        if dge.lanes.len() != lanes {
            dge.lanes = vec![0; lanes];
        }
        let mut packets = Vec::new();
        let mut left = chunks;
        while left > 0 {
            let n = left.min(per_packet);
            left -= n;
            let lane = (0..lanes).min_by_key(|&l| (dge.lanes[l], l)).unwrap_or(0);
            let start = dge.lanes[lane].max(ready);
            let end = start + cost(n * db);
            dge.lanes[lane] = end;
            if tracing {
                let h = (
                    if hbm.0 { n * sb } else { 0 },
                    if hbm.1 { n * db } else { 0 },
                );
                packets.push((lane as u32, n * db, start, end, h, false));
            }
        }
        let mut last = ready;
        for lane in 0..lanes.min(r.increment.max(1) as usize) {
            let start = dge.lanes[lane].max(ready);
            let end = start + cost(4);
            dge.lanes[lane] = end;
            last = last.max(end);
            if tracing {
                packets.push((lane as u32, 4, start, end, (0, 0), true));
            }
        }
        if let Some(tr) = self.cores[nc].trace.as_mut() {
            for (lane, bytes, start, end, hbm, sem) in packets {
                tr.dma(nrt_hal::profile::TracedDma {
                    source: nrt_hal::profile::DmaSource::Engine {
                        engine,
                        index,
                        semaphore: r.sem.0,
                        lane,
                    },
                    bytes,
                    start,
                    end,
                    hbm,
                    semaphore_write: sem,
                });
            }
        }
        last + completion
    }

    /// A DMA queue's store of `value` into semaphore register `addr`, landing `at`.
    pub fn dge_defer_store(&mut self, nc: NcIndex, addr: DeviceAddr, value: u32, at: u64) {
        let dge = &mut self.cores[nc].dge;
        let i = dge.stores.partition_point(|s| s.at <= at);
        dge.stores.insert(i, DeferredStore { at, addr, value });
        self.sched.schedule(at, nc.0, Unit::Dge);
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

    /// Wake-up of the DGE unit of `nc`: complete every DMA, and land every deferred semaphore
    /// store, due by now.
    pub fn dge_step(&mut self, nc: NcIndex) {
        let now = self.now;
        while let Some(s) = self.cores[nc].dge.stores.front().copied() {
            if s.at > now {
                break;
            }
            self.cores[nc].dge.stores.pop_front();
            // The store was checked when the DMA made it: a semaphore register of this core.
            let _ = self.store32(s.addr, s.value);
        }
        while let Some(job) = self.cores[nc].dge.jobs.front().copied() {
            if job.done > now {
                break;
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
        match self.cores[nc].dge.next_due() {
            Some(t) => self.sched.schedule(t, nc.0, Unit::Dge),
            None => self.seq_dge_drained(nc),
        }
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
