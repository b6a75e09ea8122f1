//! The device state and its one store path.
//!
//! [`Device`] is the whole simulated device behind the HAL's lock: memory, per-core semaphores,
//! events, DMA queues, engines, sequencer and notification queues, plus the event scheduler and
//! the timeline. It owns:
//!
//! - **the single address decoder for stores and loads** ([`Device::store32`],
//!   [`Device::load32`], [`Device::transfer`]): every byte a DMA descriptor, an engine `Write`
//!   or a HAL call moves goes through [`nrt_hal::Target::decode_mmio`] here, so semaphore,
//!   event, tail-increment and sequencer side effects happen the same way whoever stores;
//! - **the event loop** ([`Device::step`]): pops the earliest wake-up and lets its unit run;
//! - **notification posting** ([`Device::post`]) in the `nrt_hal::notify` format.
//!
//! The DMA engines, compute engines and sequencer live in their own modules as `impl Device`
//! blocks: `dma.rs`, `engine.rs`, `sequencer.rs`.

use std::collections::BTreeMap;

use nrt_hal::abi::NqType;
use nrt_hal::hal::{MemLocation, NotificationQueue};
use nrt_hal::isa::SemCmp;
use nrt_hal::notify::{Notification, NQ_ENTRY_SIZE};
use nrt_hal::target::{reserved, MmioReg, SemWindow};
use nrt_hal::{DeviceAddr, Dtype, EventId, MemHandle, NcIndex, SemaphoreId, Target};

use crate::config::{SimConfig, TimingConfig};
use crate::dma::DmaEngineState;
use crate::engine::EngineUnit;
use crate::faults::FaultPlan;
use crate::memory::{DeviceMemory, MemFault, OnChipAddr};
use crate::sched::{Scheduler, Unit};
use crate::sequencer::Sequencer;
use crate::timeline::Timeline;

/// Why a device-side access failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AccessFault {
    /// Memory refused it (unmapped, uncorrectable, outside an on-chip partition).
    #[error(transparent)]
    Mem(#[from] MemFault),
    /// A register access that is not allowed (a load from a write-only register, a store to a
    /// read-only one, an unaligned or partial register access).
    #[error("register access at {addr} not allowed: {reason}")]
    Register {
        /// The address.
        addr: DeviceAddr,
        /// Why.
        reason: &'static str,
    },
}

impl AccessFault {
    /// The faulting address, for error entries (0 for on-chip faults, which name a partition).
    pub fn addr(&self) -> DeviceAddr {
        match *self {
            AccessFault::Mem(m) => m.addr().unwrap_or(DeviceAddr::ZERO),
            AccessFault::Register { addr, .. } => addr,
        }
    }
}

/// A notification queue the device writes into.
#[derive(Debug, Clone)]
pub(crate) struct NqState {
    pub queue: NotificationQueue,
    pub written: u64,
}

/// Per-core state.
#[derive(Debug)]
pub(crate) struct Core {
    pub sems: Vec<i32>,
    pub events: Vec<u32>,
    pub dma: Vec<DmaEngineState>,
    pub engines: Vec<EngineUnit>,
    pub seq: Sequencer,
    pub nqs: BTreeMap<(u32, u32), NqState>,
    /// Cycle at which the core's HBM port is next free (per-core HBM bandwidth cap).
    pub hbm_free_at: u64,
    /// Entries that had no queue to go to.
    pub dropped_notifications: u64,
    /// Activity of the current (or last) execution.
    pub profile: crate::profile::ExecProfile,
}

impl Core {
    fn new(target: Target) -> Self {
        let s = target.spec();
        Core {
            sems: vec![0; s.semaphores_per_core as usize],
            events: vec![0; s.events_per_core as usize],
            dma: (0..s.dma_engines_per_core)
                .map(|_| DmaEngineState::new(s.queues_per_engine))
                .collect(),
            engines: (0..5).map(|_| EngineUnit::default()).collect(),
            seq: Sequencer::default(),
            nqs: BTreeMap::new(),
            hbm_free_at: 0,
            profile: Default::default(),
            dropped_notifications: 0,
        }
    }
}

/// Counters of work done, for benchmarks and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimStats {
    /// DMA descriptor pairs processed.
    pub descriptors: u64,
    /// Bytes moved by DMA.
    pub dma_bytes: u64,
    /// Engine instructions retired.
    pub instructions: u64,
    /// Executions completed (including faulted ones).
    pub executions: u64,
    /// Notifications written.
    pub notifications: u64,
}

/// The simulated device.
pub(crate) struct Device {
    pub target: Target,
    pub timing: TimingConfig,
    pub now: u64,
    pub mem: DeviceMemory,
    pub cores: Vec<Core>,
    pub sched: Scheduler,
    pub faults: FaultPlan,
    pub alloc_calls: u64,
    pub completions_written: u64,
    pub timeline: Timeline,
    pub stats: SimStats,
    /// Reused staging buffer for transfers that cannot copy memory to memory directly.
    pub scratch: Vec<u8>,
}

impl Device {
    pub fn new(cfg: &SimConfig) -> Self {
        let target = cfg.target;
        let mut mem = DeviceMemory::new(target, cfg.memory);
        for a in &cfg.faults.hbm_uncorrectable {
            mem.poison(*a);
        }
        Device {
            target,
            timing: cfg.timing.clone(),
            now: 0,
            mem,
            cores: (0..target.spec().nc_count)
                .map(|_| Core::new(target))
                .collect(),
            sched: Scheduler::new(target.spec().nc_count),
            faults: cfg.faults.clone(),
            alloc_calls: 0,
            completions_written: 0,
            timeline: Timeline::new(cfg.timeline, cfg.timeline_limit),
            stats: SimStats::default(),
            scratch: Vec::new(),
        }
    }

    /// Runs the earliest pending wake-up. Returns false when nothing is pending.
    pub fn step(&mut self) -> bool {
        let Some(w) = self.sched.pop() else {
            return self.detect_deadlocks();
        };
        self.now = self.now.max(w.time);
        let nc = NcIndex(w.nc);
        match w.unit {
            Unit::Sequencer => self.seq_step(nc),
            Unit::Engine(e) => self.engine_step(nc, e),
            Unit::Dma(d) => self.dma_step(nc, d),
        }
        true
    }

    /// Whether a unit may keep running inline until `t` without overtaking a pending wake-up
    /// that sorts before (t, nc, unit).
    pub fn may_run_ahead(&mut self, t: u64, nc: NcIndex, unit: Unit) -> bool {
        match self.sched.peek() {
            None => true,
            Some(w) => (t, nc.0, unit) < (w.time, w.nc, w.unit),
        }
    }

    // ---- semaphores and events -------------------------------------------------------------

    /// Applies a semaphore operation and wakes whoever waits on it.
    pub fn sem_op(&mut self, nc: NcIndex, id: SemaphoreId, op: SemWindow, value: u32) {
        let Some(s) = self.cores[nc.index()].sems.get_mut(id.index()) else {
            return;
        };
        match op {
            SemWindow::Read => return,
            SemWindow::Set => *s = value as i32,
            SemWindow::Increment => *s = s.wrapping_add(value as i32),
            SemWindow::Decrement => *s = s.wrapping_sub(value as i32),
        }
        self.sem_changed(nc, id);
    }

    fn sem_changed(&mut self, nc: NcIndex, id: SemaphoreId) {
        let value = self.cores[nc.index()].sems[id.index()];
        // A doorbell wakes an idle sequencer only: a busy one takes the next execution when it
        // completes the current one (`seq_complete`). Waking it mid-execution would run a
        // timed phase (start, completion) at the doorbell's arrival cycle instead of its own,
        // letting host timing into the execution's cycles (docs/simulator.md §8.1).
        let idle = self.cores[nc.index()].seq.phase == crate::sequencer::Phase::Idle;
        if id == reserved::INFERENCE_START && value > 0 && idle {
            self.sched.schedule(self.now, nc.0, Unit::Sequencer);
        }
        self.wake_engines(nc, |w| match *w {
            crate::engine::Wait::Semaphore {
                sem, cmp, value: v, ..
            } => sem == id && cmp.holds(value, v),
            _ => false,
        });
    }

    /// Sets an event and wakes whoever waits on it.
    pub fn event_set(&mut self, nc: NcIndex, id: EventId, value: u32) {
        let value = u32::from(value != 0);
        let Some(e) = self.cores[nc.index()].events.get_mut(id.index()) else {
            return;
        };
        *e = value;
        if id == reserved::HW_EXEC_QUEUE_REQUEST_LOAD && value == 1 {
            self.seq_request_load(nc);
        }
        self.wake_engines(nc, |w| match *w {
            crate::engine::Wait::Event { event, value: v } => event == id && v == value,
            _ => false,
        });
    }

    /// Reads a semaphore.
    pub fn sem_read(&self, nc: NcIndex, id: SemaphoreId) -> i32 {
        self.cores[nc.index()].sems[id.index()]
    }

    /// Whether `sem <cmp> value` holds now.
    pub fn sem_holds(&self, nc: NcIndex, id: SemaphoreId, cmp: SemCmp, value: i32) -> bool {
        cmp.holds(self.sem_read(nc, id), value)
    }

    // ---- the one store path ----------------------------------------------------------------

    /// A 4-byte store to any device address, with its side effects.
    pub fn store32(&mut self, addr: DeviceAddr, value: u32) -> Result<(), AccessFault> {
        match self.target.decode_mmio(addr) {
            None => Ok(self.mem.write(addr, &value.to_le_bytes())?),
            Some(reg @ (MmioReg::Sbuf { .. } | MmioReg::Psum { .. })) => {
                self.onchip_write(reg, &value.to_le_bytes())
            }
            Some(MmioReg::Semaphore { nc, id, op }) => {
                if op == SemWindow::Read {
                    return Err(AccessFault::Register {
                        addr,
                        reason: "store to the semaphore READ window",
                    });
                }
                self.sem_op(nc, id, op, value);
                Ok(())
            }
            Some(MmioReg::Event { nc, id }) => {
                self.event_set(nc, id, value);
                Ok(())
            }
            Some(MmioReg::TailIncrement { queue, dir }) => {
                self.tail_increment(queue, dir, value & 0xFF_FFFF);
                Ok(())
            }
            Some(MmioReg::QueueRegister { queue, dir, reg }) => {
                self.queue_register_store(queue, dir, reg, value);
                Ok(())
            }
            Some(MmioReg::Sequencer { nc, offset }) => self.seq_store(nc, offset, addr, value),
        }
    }

    /// A 4-byte load from any device address.
    pub fn load32(&mut self, addr: DeviceAddr) -> Result<u32, AccessFault> {
        let mut b = [0u8; 4];
        match self.target.decode_mmio(addr) {
            None => self.mem.read(addr, &mut b)?,
            Some(reg @ (MmioReg::Sbuf { .. } | MmioReg::Psum { .. })) => {
                self.onchip_read(reg, &mut b)?
            }
            Some(MmioReg::Semaphore { nc, id, op }) => {
                if op != SemWindow::Read {
                    return Err(AccessFault::Register {
                        addr,
                        reason: "load from a write-only semaphore window",
                    });
                }
                return Ok(self.sem_read(nc, id) as u32);
            }
            Some(MmioReg::Event { nc, id }) => return Ok(self.cores[nc.index()].events[id.index()]),
            Some(MmioReg::TailIncrement { .. }) | Some(MmioReg::QueueRegister { .. }) => {
                return Err(AccessFault::Register {
                    addr,
                    reason: "load from a write-only DMA queue register",
                })
            }
            Some(MmioReg::Sequencer { nc, offset }) => return Ok(self.seq_load(nc, offset)),
        }
        Ok(u32::from_le_bytes(b))
    }

    /// The on-chip location an SBUF/PSUM window address names.
    fn onchip_addr(reg: MmioReg) -> Option<(NcIndex, OnChipAddr)> {
        match reg {
            MmioReg::Sbuf {
                nc,
                partition,
                offset,
            } => Some((nc, OnChipAddr::sbuf(partition, offset))),
            MmioReg::Psum {
                nc,
                partition,
                offset,
            } => Some((nc, OnChipAddr::psum(partition, offset))),
            _ => None,
        }
    }

    fn onchip_write(&mut self, reg: MmioReg, src: &[u8]) -> Result<(), AccessFault> {
        let (nc, a) = Self::onchip_addr(reg).expect("callers pass SBUF/PSUM registers");
        Ok(self
            .mem
            .onchip_mut(nc)?
            .write(a.space, a.partition, a.offset, src)?)
    }

    fn onchip_read(&mut self, reg: MmioReg, dst: &mut [u8]) -> Result<(), AccessFault> {
        let (nc, a) = Self::onchip_addr(reg).expect("callers pass SBUF/PSUM registers");
        Ok(self
            .mem
            .onchip(nc)?
            .read(a.space, a.partition, a.offset, dst)?)
    }

    /// Moves `len` bytes from `src` to `dst` the way a DMA descriptor pair does: memory to
    /// memory directly; anything touching on-chip memory or registers through the decoder
    /// (register traffic as 4-byte little-endian stores and loads).
    ///
    /// The caller passes each address with its decoding (`decode_mmio`), which it needs anyway
    /// for the pair's cost.
    pub fn transfer(
        &mut self,
        src: DeviceAddr,
        src_mmio: Option<MmioReg>,
        dst: DeviceAddr,
        dst_mmio: Option<MmioReg>,
        len: u64,
    ) -> Result<(), AccessFault> {
        // Memory and on-chip memory move directly, without a bounce buffer.
        match (src_mmio, dst_mmio.and_then(Self::onchip_addr)) {
            (None, None) if dst_mmio.is_none() => return Ok(self.mem.copy(src, dst, len)?),
            (None, Some((nc, d))) => return Ok(self.mem.copy_to_onchip(src, nc, d, len)?),
            (Some(s), d) => match (Self::onchip_addr(s), d) {
                (Some((snc, sa)), None) if dst_mmio.is_none() => {
                    return Ok(self.mem.copy_from_onchip(snc, sa, dst, len)?)
                }
                (Some((snc, sa)), Some((dnc, da))) => {
                    return Ok(self.mem.copy_onchip(snc, sa, dnc, da, len)?)
                }
                _ => {}
            },
            _ => {}
        }
        let n = usize::try_from(len).map_err(|_| MemFault::Unmapped { addr: src, len })?;
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        buf.resize(n, 0);
        let r = self.transfer_staged(src, src_mmio, dst, dst_mmio, &mut buf);
        self.scratch = buf;
        r
    }

    /// A converting copy (the platform's own descriptor kind, `nrt_hal::udma` "Converting
    /// copies"): reads `len` bytes of `from` elements at `src`, writes them as `to` elements
    /// at `dst`.
    pub fn transfer_converting(
        &mut self,
        src: DeviceAddr,
        dst: DeviceAddr,
        from: Dtype,
        to: Dtype,
        len: u64,
    ) -> Result<(), AccessFault> {
        let n = usize::try_from(len).map_err(|_| MemFault::Unmapped { addr: src, len })?;
        let mut raw = vec![0u8; n];
        self.read_any(src, &mut raw)?;
        let count = n / from.size();
        let mut out = vec![0u8; count * to.size()];
        crate::compute::convert::convert_elements(from, &raw, to, &mut out);
        self.write_any(dst, &out)
    }

    /// Reads bytes from any device address (memory, on-chip memory or registers).
    fn read_any(&mut self, addr: DeviceAddr, buf: &mut [u8]) -> Result<(), AccessFault> {
        let mmio = self.target.decode_mmio(addr);
        self.transfer_staged_read(addr, mmio, buf)
    }

    /// Writes bytes to any device address.
    fn write_any(&mut self, addr: DeviceAddr, buf: &[u8]) -> Result<(), AccessFault> {
        let mmio = self.target.decode_mmio(addr);
        self.transfer_staged_write(addr, mmio, buf)
    }

    fn transfer_staged(
        &mut self,
        src: DeviceAddr,
        src_mmio: Option<MmioReg>,
        dst: DeviceAddr,
        dst_mmio: Option<MmioReg>,
        buf: &mut [u8],
    ) -> Result<(), AccessFault> {
        self.transfer_staged_read(src, src_mmio, buf)?;
        self.transfer_staged_write(dst, dst_mmio, buf)
    }

    fn transfer_staged_read(
        &mut self,
        src: DeviceAddr,
        src_mmio: Option<MmioReg>,
        buf: &mut [u8],
    ) -> Result<(), AccessFault> {
        let len = buf.len() as u64;
        match src_mmio {
            None => self.mem.read(src, buf)?,
            Some(reg @ (MmioReg::Sbuf { .. } | MmioReg::Psum { .. })) => {
                self.onchip_read(reg, buf)?
            }
            Some(_) => {
                if !len.is_multiple_of(4) {
                    return Err(AccessFault::Register {
                        addr: src,
                        reason: "register reads must be whole 4-byte words",
                    });
                }
                for (i, w) in buf.chunks_exact_mut(4).enumerate() {
                    let a = src
                        .checked_add(4 * i as u64)
                        .map_err(|_| MemFault::Unmapped { addr: src, len })?;
                    w.copy_from_slice(&self.load32(a)?.to_le_bytes());
                }
            }
        }
        Ok(())
    }

    fn transfer_staged_write(
        &mut self,
        dst: DeviceAddr,
        dst_mmio: Option<MmioReg>,
        buf: &[u8],
    ) -> Result<(), AccessFault> {
        let len = buf.len() as u64;
        match dst_mmio {
            None => self.mem.write(dst, buf)?,
            Some(reg @ (MmioReg::Sbuf { .. } | MmioReg::Psum { .. })) => {
                self.onchip_write(reg, buf)?
            }
            Some(_) => {
                if !len.is_multiple_of(4) {
                    return Err(AccessFault::Register {
                        addr: dst,
                        reason: "register writes must be whole 4-byte words",
                    });
                }
                for (i, w) in buf.chunks_exact(4).enumerate() {
                    let a = dst
                        .checked_add(4 * i as u64)
                        .map_err(|_| MemFault::Unmapped { addr: dst, len })?;
                    self.store32(a, u32::from_le_bytes([w[0], w[1], w[2], w[3]]))?;
                }
            }
        }
        Ok(())
    }

    // ---- notifications ---------------------------------------------------------------------

    /// The queue every entry of core `nc` goes to: its NOTIFY-type queue with index 0 (our
    /// choice; the driver defines none).
    pub const ENTRY_QUEUE: (NqType, u32) = (NqType::Notify, 0);

    /// Writes a notification to core `nc`'s entry queue (dropped and counted if there is none).
    pub fn post(&mut self, nc: NcIndex, n: Notification) {
        let key = (Self::ENTRY_QUEUE.0 as u32, Self::ENTRY_QUEUE.1);
        let core = &mut self.cores[nc.index()];
        let Some(q) = core.nqs.get_mut(&key) else {
            core.dropped_notifications += 1;
            return;
        };
        let entries = (q.queue.size as usize / NQ_ENTRY_SIZE) as u64;
        let k = q.written;
        let seq = nrt_hal::notify::seq_for_index(k);
        let slot = k % entries;
        let Ok(entry) = n.encode(seq) else {
            core.dropped_notifications += 1;
            return;
        };
        let mut bytes = entry.to_bytes();
        if let Notification::Completion { .. } = n {
            self.completions_written += 1;
            if self
                .faults
                .corrupt_completions
                .contains(&self.completions_written)
            {
                bytes[4] = 0xEE; // an invalid kind byte
            }
        }
        let handle = q.queue.handle;
        q.written += 1;
        // Body first, sequence number last (the reader's publication rule).
        let off = slot * NQ_ENTRY_SIZE as u64;
        let ok = self.mem.write_at(handle, off + 4, &bytes[4..]).is_ok()
            && self.mem.write_at(handle, off, &bytes[..4]).is_ok();
        if ok {
            self.stats.notifications += 1;
        } else {
            self.cores[nc.index()].dropped_notifications += 1;
        }
    }

    /// Creates or returns the notification queue (core, type, index).
    pub fn notification_init(
        &mut self,
        nc: NcIndex,
        nq_type: NqType,
        index: u32,
        size: u32,
        location: MemLocation,
    ) -> nrt_hal::HalResult<NotificationQueue> {
        let key = (nq_type as u32, index);
        if let Some(q) = self.cores[nc.index()].nqs.get(&key) {
            // The driver reuses the existing queue's memory even if the size differs (docs/driver.md §6).
            return Ok(q.queue);
        }
        let handle = self.mem.alloc(&nrt_hal::hal::AllocRequest {
            size: size as u64,
            align: match location {
                MemLocation::Host => 0,
                MemLocation::Device { .. } => size as u64,
            },
            location,
            nc,
            category: if location == MemLocation::Host {
                nrt_hal::abi::MemAllocCategory::NotificationHost
            } else {
                nrt_hal::abi::MemAllocCategory::NotificationDevice
            },
        })?;
        let info = self.mem.info(handle)?;
        let queue = NotificationQueue {
            handle,
            pa: info.pa,
            size,
        };
        self.cores[nc.index()]
            .nqs
            .insert(key, NqState { queue, written: 0 });
        Ok(queue)
    }

    /// Returns core `nc` to its power-on state (queues, semaphores, events, engines,
    /// sequencer, on-chip memory); frees its notification queues, like the driver's NC reset.
    pub fn reset_core(&mut self, nc: NcIndex) {
        self.sched.cancel_core(nc.0);
        let nqs: Vec<MemHandle> = self.cores[nc.index()]
            .nqs
            .values()
            .map(|q| q.queue.handle)
            .collect();
        for h in nqs {
            let _ = self.mem.free(h);
        }
        self.cores[nc.index()] = Core::new(self.target);
        if let Ok(oc) = self.mem.onchip_mut(nc) {
            oc.reset();
        }
    }
}
