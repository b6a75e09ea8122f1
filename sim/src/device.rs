//! A clock domain of the device, what the domains share, and the one store path.
//!
//! The device is split into *clock domains* (docs/simulator.md §8.1): each [`Domain`] holds a
//! group of cores — their semaphores, events, DMA queues, engines, sequencer, notification
//! queues and on-chip memory (SBUF, PSUM) — with its own clock, event scheduler, timeline,
//! counters and fault-plan state, behind its own lock in `Sim`. What the domains share is
//! [`Shared`]: the device memory (HBM and host DMA memory, read and written by every domain at
//! once; its layout changes only while every domain is locked), an inbox per domain for stores
//! that cross domains, and the signal that wakes sleeping waits. Lock order: domains in index
//! order, then the memory layout lock or an inbox; never the other way.
//!
//! A domain owns:
//!
//! - **the single address decoder for stores and loads** ([`Domain::store32`],
//!   [`Domain::load32`], [`Domain::transfer`]): every byte a DMA descriptor, an engine `Write`
//!   or a HAL call moves goes through [`nrt_hal::Target::decode_mmio`] here, so semaphore,
//!   event, tail-increment and sequencer side effects happen the same way whoever stores. A
//!   store to a register or on-chip memory of a core in another domain goes to that domain's
//!   inbox and takes effect at the receiver's clock, like a host arrival; a load from one is
//!   refused (an access fault naming the address);
//! - **the event loop** ([`Domain::step`]): applies inbox arrivals, pops the earliest wake-up
//!   and lets its unit run;
//! - **notification posting** ([`Domain::post`]) in the `nrt_hal::notify` format.
//!
//! The DMA engines, compute engines and sequencer live in their own modules as `impl Domain`
//! blocks: `dma.rs`, `engine.rs`, `sequencer.rs`.

use std::cell::UnsafeCell;
use std::collections::BTreeMap;
use std::ops::{Index, IndexMut};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard};

use nrt_hal::abi::NqType;
use nrt_hal::hal::{MemLocation, NotificationQueue};
use nrt_hal::isa::SemCmp;
use nrt_hal::notify::{Notification, NQ_ENTRY_SIZE};
use nrt_hal::target::{reserved, MmioReg, SemWindow};
use nrt_hal::{DeviceAddr, Dtype, EventId, MemHandle, NcIndex, SemaphoreId, Target};

use crate::config::{SimConfig, TimingConfig};
use crate::dma::{DmaEngineState, PairCyclesMemo};
use crate::engine::EngineUnit;
use crate::faults::FaultPlan;
use crate::memory::{DeviceMemory, MemFault, OnChip, OnChipAddr, SlotHint};
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
    /// The core's SBUF and PSUM.
    pub onchip: OnChip,
    /// DMAs the core's engines issued themselves.
    pub dge: crate::dge::Dge,
    /// The instruction-level record of the current (or last) execution, when tracing.
    pub trace: Option<crate::profile::TraceRecorder>,
    /// Executions since the device was created (survives [`Domain::reset_core`]).
    pub activity: crate::profile::CoreActivity,
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
            onchip: OnChip::new(target),
            dge: Default::default(),
            trace: None,
            activity: Default::default(),
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
    /// Stores that crossed clock domains and failed at the receiving core (docs/simulator.md
    /// §8.1): the sender had already gone on, so they are counted here.
    pub failed_cross_domain_stores: u64,
}

impl std::ops::AddAssign<&SimStats> for SimStats {
    fn add_assign(&mut self, o: &SimStats) {
        self.descriptors += o.descriptors;
        self.dma_bytes += o.dma_bytes;
        self.instructions += o.instructions;
        self.executions += o.executions;
        self.notifications += o.notifications;
        self.failed_cross_domain_stores += o.failed_cross_domain_stores;
    }
}

/// The cores of one domain, indexed by their device-wide [`NcIndex`].
#[derive(Debug)]
pub(crate) struct Cores {
    base: u32,
    cores: Vec<Core>,
}

impl Cores {
    /// Whether core `nc` is one of these.
    pub fn owns(&self, nc: NcIndex) -> bool {
        nc.0.checked_sub(self.base)
            .is_some_and(|i| (i as usize) < self.cores.len())
    }

    /// Core `nc`, if it is one of these.
    pub fn get(&self, nc: NcIndex) -> Option<&Core> {
        self.cores.get(nc.0.checked_sub(self.base)? as usize)
    }

    /// The device-wide indices of these cores, in order.
    pub fn indices(&self) -> impl Iterator<Item = NcIndex> {
        let base = self.base;
        (0..self.cores.len() as u32).map(move |i| NcIndex(base + i))
    }

    /// The cores, in index order.
    pub fn iter(&self) -> impl Iterator<Item = &Core> {
        self.cores.iter()
    }
}

impl Index<NcIndex> for Cores {
    type Output = Core;
    fn index(&self, nc: NcIndex) -> &Core {
        &self.cores[(nc.0 - self.base) as usize]
    }
}

impl IndexMut<NcIndex> for Cores {
    fn index_mut(&mut self, nc: NcIndex) -> &mut Core {
        &mut self.cores[(nc.0 - self.base) as usize]
    }
}

/// A store that reached a clock domain from outside it (another domain, or a host call that
/// found the domain busy), waiting in the receiver's inbox.
#[derive(Debug)]
pub(crate) enum Arrival {
    /// A 4-byte store (a register write): no allocation, so a doorbell stays allocation-free.
    Word { addr: DeviceAddr, value: u32 },
    /// Any other store (on-chip memory of another domain's core).
    Bytes { addr: DeviceAddr, bytes: Vec<u8> },
}

/// How many arrivals an inbox holds before its buffer grows: doorbells come one per submit
/// and are applied at the receiver's next event, so a handful are pending at most; the room is
/// reserved up front so a submit's doorbell never allocates.
const INBOX_ROOM: usize = 64;

/// The stores other domains (and host calls finding the domain busy) sent to one domain.
#[derive(Debug)]
pub(crate) struct Inbox {
    pending: AtomicBool,
    stores: Mutex<Vec<Arrival>>,
}

impl Default for Inbox {
    fn default() -> Self {
        Inbox {
            pending: AtomicBool::new(false),
            stores: Mutex::new(Vec::with_capacity(INBOX_ROOM)),
        }
    }
}

/// Wakes waits sleeping until some state changes (docs/simulator.md §8).
#[derive(Debug, Default)]
pub(crate) struct Signal {
    sleepers: AtomicUsize,
    epoch: Mutex<u64>,
    changed: Condvar,
}

impl Signal {
    /// Something changed: wake every sleeping wait.
    pub fn notify(&self) {
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            *lock(&self.epoch) += 1;
            self.changed.notify_all();
        }
    }

    /// Registers a wait about to re-check its condition before sleeping; the returned epoch
    /// goes to [`Signal::sleep`]. Every `register` is followed by one `sleep` or `unregister`.
    pub fn register(&self) -> u64 {
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        *lock(&self.epoch)
    }

    /// Sleeps until a change after `epoch` or `timeout`, then unregisters.
    pub fn sleep(&self, epoch: u64, timeout: std::time::Duration) {
        let g = lock(&self.epoch);
        if *g == epoch {
            drop(
                self.changed
                    .wait_timeout(g, timeout)
                    .unwrap_or_else(|p| p.into_inner()),
            );
        }
        self.unregister();
    }

    /// Unregisters without sleeping.
    pub fn unregister(&self) {
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A lock, recovered if a panicking thread poisoned it (a simulator bug; keep serving rather
/// than cascading it into every later call).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the clock domains of one device share.
///
/// **The memory's two kinds of access.** Byte accesses (reads, writes, copies, fills) take
/// `&DeviceMemory` and go through raw pointers (`memory::backing`), so any number of threads
/// may make them at once. The *layout* — the allocation table, placement and the poisoned-byte
/// set — changes only in [`Shared::change_layout`], whose caller holds every domain's lock;
/// that also takes `layout` for writing, which the HAL's host-side byte accesses hold for
/// reading. So a thread holding a domain's lock reads the memory without any further lock
/// ([`Shared::mem`]), a host call holds `layout` for reading ([`Shared::host_mem`]), and
/// neither ever sees the layout change under it.
///
/// The fields host calls write (the layout lock, the wake-up signal) sit on cache lines of
/// their own, apart from the memory's fields every simulated access reads.
pub(crate) struct Shared {
    mem: CacheLine<UnsafeCell<DeviceMemory>>,
    layout: CacheLine<RwLock<()>>,
    inboxes: Box<[CacheLine<Inbox>]>,
    /// Cores per domain (domain `i` holds cores `i·n .. (i+1)·n`).
    pub cores_per_domain: u32,
    pub signal: CacheLine<Signal>,
}

/// A value alone on its cache line(s), so writes to it do not slow readers of its neighbours.
#[repr(align(128))]
#[derive(Debug, Default)]
pub(crate) struct CacheLine<T>(T);

impl<T> std::ops::Deref for CacheLine<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

// SAFETY: the memory in the `UnsafeCell` is only mutated through `change_layout`, under every
// domain lock and the `layout` write lock, while shared access requires a domain lock
// (`mem`) or the `layout` read lock (`host_mem`); see the type's docs. `DeviceMemory` itself
// is `Send + Sync` (its byte accesses are raw-pointer copies and its caches atomics).
unsafe impl Sync for Shared {}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("domains", &self.inboxes.len())
            .field("cores_per_domain", &self.cores_per_domain)
            .finish()
    }
}

/// The device memory for a host-side HAL call: the layout cannot change while it lives.
pub(crate) struct HostMem<'a> {
    _layout: RwLockReadGuard<'a, ()>,
    mem: &'a DeviceMemory,
}

impl std::ops::Deref for HostMem<'_> {
    type Target = DeviceMemory;
    fn deref(&self) -> &DeviceMemory {
        self.mem
    }
}

impl Shared {
    /// The device memory, for code running under a domain's lock (a [`Domain`] is only
    /// reachable through its lock once the device is built).
    pub fn mem(&self) -> &DeviceMemory {
        // SAFETY: the caller holds a domain lock, so `change_layout` (which needs every domain
        // lock) is not running and cannot start while the returned borrow, tied to the
        // domain's, lives; all other access is shared.
        unsafe { &*self.mem.get() }
    }

    /// The device memory, for a HAL call on the host side that holds no domain lock.
    pub fn host_mem(&self) -> HostMem<'_> {
        let g = self.layout.read().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the `layout` read lock, held as long as the returned value, excludes
        // `change_layout`; all other access is shared.
        let mem = unsafe { &*self.mem.get() };
        HostMem { _layout: g, mem }
    }

    /// Runs `f` with the memory exclusively, to allocate, free or poison.
    ///
    /// # Safety
    ///
    /// The caller holds the lock of every domain of this device (and no `&DeviceMemory` from
    /// [`Shared::mem`] is live in its own thread).
    pub unsafe fn change_layout<T>(&self, f: impl FnOnce(&mut DeviceMemory) -> T) -> T {
        let _g = self.layout.write().unwrap_or_else(|p| p.into_inner());
        // SAFETY: every domain lock (caller) and the layout write lock (here) are held, so no
        // other reference to the memory exists (see the type's docs).
        f(unsafe { &mut *self.mem.get() })
    }

    /// The domain core `nc` belongs to.
    pub fn domain_of(&self, nc: NcIndex) -> usize {
        (nc.0 / self.cores_per_domain) as usize
    }

    /// Whether another domain has sent domain `i` stores it has not applied yet.
    pub fn has_arrivals(&self, i: usize) -> bool {
        self.inboxes[i].pending.load(Ordering::Acquire)
    }

    /// Queues `a` for domain `to`, which applies it at its own clock the next time it runs.
    pub fn send(&self, to: usize, a: Arrival) {
        let inbox = &self.inboxes[to];
        {
            let mut stores = lock(&inbox.stores);
            stores.push(a);
            inbox.pending.store(true, Ordering::Release);
        }
        self.signal.notify();
    }

    /// Swaps domain `i`'s queued arrivals into `batch` (empty on entry), keeping both
    /// buffers' capacity, so steady traffic allocates nothing.
    fn take_into(&self, i: usize, batch: &mut Vec<Arrival>) {
        let inbox = &self.inboxes[i];
        let mut stores = lock(&inbox.stores);
        inbox.pending.store(false, Ordering::Release);
        std::mem::swap(&mut *stores, batch);
    }
}

/// The core a register or on-chip window address belongs to.
pub(crate) fn reg_core(reg: MmioReg) -> NcIndex {
    match reg {
        MmioReg::Sbuf { nc, .. }
        | MmioReg::Psum { nc, .. }
        | MmioReg::Semaphore { nc, .. }
        | MmioReg::Event { nc, .. }
        | MmioReg::Sequencer { nc, .. } => nc,
        MmioReg::TailIncrement { queue, .. } | MmioReg::QueueRegister { queue, .. } => queue.nc,
    }
}

/// One clock domain: a group of cores with its own clock and event scheduler.
pub(crate) struct Domain {
    pub target: Target,
    pub timing: TimingConfig,
    /// This domain's clock (device cycles); it stands still while the domain has no events.
    pub now: u64,
    /// Which domain this is.
    pub index: usize,
    pub shared: Arc<Shared>,
    pub cores: Cores,
    pub sched: Scheduler,
    /// This domain's copy of the fault plan (one-shot entries are consumed per domain).
    pub faults: FaultPlan,
    /// Completion entries written by this domain's cores (`FaultPlan::corrupt_completions`).
    pub completions_written: u64,
    pub timeline: Timeline,
    pub stats: SimStats,
    /// Reused staging buffer for transfers that cannot copy memory to memory directly.
    pub scratch: Vec<u8>,
    /// Reused buffer for applying inbox arrivals.
    arrivals: Vec<Arrival>,
    /// The bandwidth terms of the last DMA pair length costed (`dma.rs`).
    pub pair_cycles: PairCyclesMemo,
    /// Record executions instruction by instruction ([`crate::profile::TraceRecorder`]).
    pub tracing: bool,
}

impl Shared {
    /// The memory and inboxes of a device made from `cfg`, with `cores_per_domain` cores in
    /// each clock domain.
    pub fn new(cfg: &SimConfig, cores_per_domain: u32) -> Arc<Self> {
        let mut mem = DeviceMemory::new(cfg.target, cfg.memory);
        for a in &cfg.faults.hbm_uncorrectable {
            mem.poison(*a);
        }
        let domains = cfg.target.spec().nc_count.div_ceil(cores_per_domain);
        Arc::new(Shared {
            mem: CacheLine(UnsafeCell::new(mem)),
            layout: CacheLine(RwLock::new(())),
            inboxes: (0..domains).map(|_| CacheLine::default()).collect(),
            cores_per_domain,
            signal: CacheLine::default(),
        })
    }

    /// How many clock domains the device has.
    pub fn domains(&self) -> usize {
        self.inboxes.len()
    }
}

impl Domain {
    /// Domain `index` of the device `shared` was made for.
    pub fn new(cfg: &SimConfig, shared: Arc<Shared>, index: usize) -> Self {
        let target = cfg.target;
        let per = shared.cores_per_domain;
        let base = index as u32 * per;
        let count = per.min(target.spec().nc_count - base);
        Domain {
            target,
            timing: cfg.timing.clone(),
            now: 0,
            index,
            shared,
            cores: Cores {
                base,
                cores: (0..count).map(|_| Core::new(target)).collect(),
            },
            sched: Scheduler::new(base, count),
            faults: cfg.faults.clone(),
            completions_written: 0,
            timeline: Timeline::new(cfg.timeline, cfg.timeline_limit),
            stats: SimStats::default(),
            scratch: Vec::new(),
            arrivals: Vec::with_capacity(INBOX_ROOM),
            pair_cycles: PairCyclesMemo::default(),
            tracing: false,
        }
    }

    /// Whether the domain has anything to do: a pending wake-up or an unapplied arrival.
    pub fn has_work(&mut self) -> bool {
        self.sched.has_pending() || self.shared.has_arrivals(self.index)
    }

    /// Applies the stores other domains sent this one, at this domain's clock and in the order
    /// they arrived (docs/simulator.md §8.1). Checked before every event, so the check (one
    /// atomic load) is inline and the work out of line.
    #[inline]
    pub fn apply_arrivals(&mut self) {
        if self.shared.has_arrivals(self.index) {
            self.apply_pending_arrivals();
        }
    }

    #[cold]
    #[inline(never)]
    fn apply_pending_arrivals(&mut self) {
        let mut batch = std::mem::take(&mut self.arrivals);
        self.shared.take_into(self.index, &mut batch);
        for a in batch.drain(..) {
            let ok = match a {
                Arrival::Word { addr, value } => self.store32(addr, value).is_ok(),
                Arrival::Bytes { addr, bytes } => {
                    let mmio = self.target.decode_mmio(addr);
                    self.transfer_staged_write(addr, mmio, &bytes).is_ok()
                }
            };
            if !ok {
                self.stats.failed_cross_domain_stores += 1;
            }
        }
        self.arrivals = batch;
    }

    /// Runs the earliest pending wake-up. Returns false when nothing is pending.
    pub fn step(&mut self) -> bool {
        self.apply_arrivals();
        let Some(w) = self.sched.pop() else {
            return self.detect_deadlocks();
        };
        self.now = self.now.max(w.time);
        let nc = NcIndex(w.nc);
        match w.unit {
            Unit::Sequencer => self.seq_step(nc),
            Unit::Engine(e) => self.engine_step(nc, e),
            Unit::Dma(d) => self.dma_step(nc, d),
            Unit::Dge => self.dge_step(nc),
        }
        true
    }

    /// Whether a unit may keep running inline until `t` without overtaking a pending wake-up
    /// that sorts before (t, nc, unit).
    pub fn may_run_ahead(&mut self, t: u64, nc: NcIndex, unit: Unit) -> bool {
        self.sched.runs_before(t, nc.0, unit)
    }

    // ---- semaphores and events -------------------------------------------------------------

    /// Applies a semaphore operation and wakes whoever waits on it.
    pub fn sem_op(&mut self, nc: NcIndex, id: SemaphoreId, op: SemWindow, value: u32) {
        let Some(s) = self.cores[nc].sems.get_mut(id.index()) else {
            return;
        };
        match op {
            SemWindow::Read => return,
            SemWindow::Set => *s = value as i32,
            SemWindow::Increment => *s = s.wrapping_add(value as i32),
            SemWindow::Decrement => *s = s.wrapping_sub(value as i32),
        }
        let now = self.now;
        let core = &mut self.cores[nc];
        if let Some(tr) = core.trace.as_mut() {
            if id.0 < reserved::FIRST_SEMAPHORE || id == reserved::SPARE {
                tr.semaphore(id.0, core.sems[id.index()], now);
            }
        }
        self.sem_changed(nc, id);
    }

    fn sem_changed(&mut self, nc: NcIndex, id: SemaphoreId) {
        let value = self.cores[nc].sems[id.index()];
        // A doorbell wakes an idle sequencer only: a busy one takes the next execution when it
        // completes the current one (`seq_complete`). Waking it mid-execution would run a
        // timed phase (start, completion) at the doorbell's arrival cycle instead of its own,
        // letting host timing into the execution's cycles (docs/simulator.md §8.1).
        let idle = self.cores[nc].seq.phase == crate::sequencer::Phase::Idle;
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
        let Some(e) = self.cores[nc].events.get_mut(id.index()) else {
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
        self.cores[nc].sems[id.index()]
    }

    /// Whether `sem <cmp> value` holds now.
    pub fn sem_holds(&self, nc: NcIndex, id: SemaphoreId, cmp: SemCmp, value: i32) -> bool {
        cmp.holds(self.sem_read(nc, id), value)
    }

    // ---- the one store path ----------------------------------------------------------------

    /// A 4-byte store to any device address, with its side effects.
    pub fn store32(&mut self, addr: DeviceAddr, value: u32) -> Result<(), AccessFault> {
        let mmio = self.target.decode_mmio(addr);
        if let Some(reg) = mmio {
            if !self.cores.owns(reg_core(reg)) {
                return self.send(addr, reg, &value.to_le_bytes());
            }
        }
        match mmio {
            None => Ok(self.shared.mem().write(addr, &value.to_le_bytes())?),
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
        let mmio = self.target.decode_mmio(addr);
        if let Some(reg) = mmio {
            self.check_local_load(addr, reg)?;
        }
        match mmio {
            None => self.shared.mem().read(addr, &mut b)?,
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
            Some(MmioReg::Event { nc, id }) => return Ok(self.cores[nc].events[id.index()]),
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

    /// A store to a register or on-chip memory of a core in another domain: checked here as
    /// far as the address alone allows, then sent to that domain's inbox.
    fn send(&mut self, addr: DeviceAddr, reg: MmioReg, bytes: &[u8]) -> Result<(), AccessFault> {
        if let MmioReg::Semaphore {
            op: SemWindow::Read,
            ..
        } = reg
        {
            return Err(AccessFault::Register {
                addr,
                reason: "store to the semaphore READ window",
            });
        }
        let to = self.shared.domain_of(reg_core(reg));
        let a = match <[u8; 4]>::try_from(bytes) {
            Ok(w) => Arrival::Word {
                addr,
                value: u32::from_le_bytes(w),
            },
            Err(_) => Arrival::Bytes {
                addr,
                bytes: bytes.to_vec(),
            },
        };
        self.shared.send(to, a);
        Ok(())
    }

    /// Loads see only this domain's cores: another domain's registers and on-chip memory run
    /// on a clock this one does not share (docs/simulator.md §8.1).
    fn check_local_load(&self, addr: DeviceAddr, reg: MmioReg) -> Result<(), AccessFault> {
        if self.cores.owns(reg_core(reg)) {
            Ok(())
        } else {
            Err(AccessFault::Register {
                addr,
                reason: "load from a core of another clock domain",
            })
        }
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

    /// Callers pass SBUF/PSUM registers of this domain's cores.
    fn onchip_write(&mut self, reg: MmioReg, src: &[u8]) -> Result<(), AccessFault> {
        let (nc, a) = Self::onchip_addr(reg).expect("callers pass SBUF/PSUM registers");
        Ok(self.cores[nc]
            .onchip
            .write(a.space, a.partition, a.offset, src)?)
    }

    /// Callers pass SBUF/PSUM registers of this domain's cores.
    fn onchip_read(&mut self, reg: MmioReg, dst: &mut [u8]) -> Result<(), AccessFault> {
        let (nc, a) = Self::onchip_addr(reg).expect("callers pass SBUF/PSUM registers");
        Ok(self.cores[nc]
            .onchip
            .read(a.space, a.partition, a.offset, dst)?)
    }

    /// The on-chip location `mmio` names, if it is on-chip memory of this domain's cores.
    fn local_onchip(&self, mmio: Option<MmioReg>) -> Option<(NcIndex, OnChipAddr)> {
        mmio.and_then(Self::onchip_addr)
            .filter(|&(nc, _)| self.cores.owns(nc))
    }

    /// Moves `len` bytes from `src` to `dst` the way a DMA descriptor pair does: memory to
    /// memory directly; anything touching on-chip memory or registers through the decoder
    /// (register traffic as 4-byte little-endian stores and loads).
    ///
    /// The caller passes each address with its decoding (`decode_mmio`), which it needs anyway
    /// for the pair's cost, and the [`SlotHint`]s of the source's and the destination's
    /// allocation (updated here).
    pub fn transfer(
        &mut self,
        src: DeviceAddr,
        src_mmio: Option<MmioReg>,
        dst: DeviceAddr,
        dst_mmio: Option<MmioReg>,
        len: u64,
        hints: &mut [SlotHint; 2],
    ) -> Result<(), AccessFault> {
        // Memory and this domain's on-chip memory move directly, without a bounce buffer.
        match (src_mmio, self.local_onchip(dst_mmio)) {
            (None, None) if dst_mmio.is_none() => {
                return Ok(self.shared.mem().copy_hinted(hints, src, dst, len)?)
            }
            (None, Some((nc, d))) => {
                let oc = &mut self.cores[nc].onchip;
                let mem = self.shared.mem();
                return Ok(mem.copy_to_onchip_hinted(&mut hints[0], src, oc, d, len)?);
            }
            (Some(_), d) => match (self.local_onchip(src_mmio), d) {
                (Some((snc, sa)), None) if dst_mmio.is_none() => {
                    let oc = &self.cores[snc].onchip;
                    let mem = self.shared.mem();
                    return Ok(mem.copy_from_onchip_hinted(&mut hints[1], oc, sa, dst, len)?);
                }
                (Some((snc, sa)), Some((dnc, da))) => {
                    return self.copy_onchip(snc, sa, dnc, da, len)
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

    /// DMA between on-chip memories of this domain's cores (memmove semantics inside one space
    /// of one core).
    fn copy_onchip(
        &mut self,
        src_nc: NcIndex,
        src: OnChipAddr,
        dst_nc: NcIndex,
        dst: OnChipAddr,
        len: u64,
    ) -> Result<(), AccessFault> {
        if src_nc == dst_nc {
            return Ok(self.cores[src_nc].onchip.copy(src, dst, len)?);
        }
        // Two distinct cores of this domain: stage through the scratch buffer.
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        let r = self.cores[src_nc]
            .onchip
            .slice(src.space, src.partition, src.offset, len)
            .map(|s| buf.extend_from_slice(s))
            .and_then(|()| {
                self.cores[dst_nc]
                    .onchip
                    .write(dst.space, dst.partition, dst.offset, &buf)
            });
        self.scratch = buf;
        Ok(r?)
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
        if let Some(reg) = src_mmio {
            self.check_local_load(src, reg)?;
        }
        match src_mmio {
            None => self.shared.mem().read(src, buf)?,
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
            None => self.shared.mem().write(dst, buf)?,
            Some(reg @ (MmioReg::Sbuf { .. } | MmioReg::Psum { .. })) => {
                if !self.cores.owns(reg_core(reg)) {
                    return self.send(dst, reg, buf);
                }
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
        let core = &mut self.cores[nc];
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
        let ok = {
            let mem = self.shared.mem();
            mem.write_at(handle, off + 4, &bytes[4..]).is_ok()
                && mem.write_at(handle, off, &bytes[..4]).is_ok()
        };
        if ok {
            self.stats.notifications += 1;
        } else {
            self.cores[nc].dropped_notifications += 1;
        }
    }

    /// The notification queue (core, type, index), if it exists.
    pub fn notification_queue(
        &self,
        nc: NcIndex,
        nq_type: NqType,
        index: u32,
    ) -> Option<NotificationQueue> {
        let key = (nq_type as u32, index);
        self.cores[nc].nqs.get(&key).map(|q| q.queue)
    }

    /// Attaches `queue` as the notification queue (core, type, index) unless one exists
    /// already; returns the queue in force (the driver reuses an existing queue's memory even
    /// if the size differs, docs/driver.md §6).
    pub fn notification_attach(
        &mut self,
        nc: NcIndex,
        nq_type: NqType,
        index: u32,
        queue: NotificationQueue,
    ) -> NotificationQueue {
        let key = (nq_type as u32, index);
        self.cores[nc]
            .nqs
            .entry(key)
            .or_insert(NqState { queue, written: 0 })
            .queue
    }

    /// Returns core `nc` to its power-on state (queues, semaphores, events, engines,
    /// sequencer, on-chip memory), like the driver's NC reset. Returns the core's notification
    /// queues, which the caller frees (freeing changes the memory's layout, which a domain
    /// cannot do on its own, see [`Shared`]).
    pub fn reset_core(&mut self, nc: NcIndex) -> Vec<MemHandle> {
        self.sched.cancel_core(nc.0);
        let nqs = self.cores[nc]
            .nqs
            .values()
            .map(|q| q.queue.handle)
            .collect();
        // A fresh core, on-chip memory included (its pages are materialised on first touch);
        // its running totals carry over, like the driver's counters.
        let activity = self.cores[nc].activity;
        self.cores[nc] = Core::new(self.target);
        self.cores[nc].activity = activity;
        nqs
    }
}

/// The allocation request of a notification queue of `size` bytes for core `nc`.
pub(crate) fn notification_request(
    nc: NcIndex,
    size: u32,
    location: MemLocation,
) -> nrt_hal::hal::AllocRequest {
    nrt_hal::hal::AllocRequest {
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
    }
}
