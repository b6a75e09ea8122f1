//! [`Sim`]: the simulated device as a [`Hal`] backend.
//!
//! The device is a set of *clock domains* (`crate::device::Domain`, docs/simulator.md §8.1),
//! each a group of cores with its own clock, event scheduler and lock, and the device memory
//! they all read and write at once (its layout changes only with every domain locked, see
//! `crate::device::Shared`). HAL calls that start device work (a tail increment, a semaphore
//! increment) only queue it at the domain's current cycle; **time advances only in
//! [`Hal::wait`]**, which runs the event loop of the domain its condition names until the
//! condition holds. There is no background thread, so a run is a pure
//! function of the HAL calls made: memory contents, notification entries, cycle counts and the
//! timeline are identical run to run.
//!
//! # Host threads (docs/simulator.md §8.1)
//!
//! - **Domains in parallel.** A wait locks only its own domain, so waits on cores of
//!   different domains (two models on the two cores of a trn1 device) simulate on different
//!   host threads at once. Memory copies of the HAL take no domain's lock, and a doorbell
//!   that finds its domain busy is queued in the domain's inbox instead of waiting.
//! - **Hand-over.** A wait simulates with its domain's lock held, but every other HAL call
//!   queued for that lock registers as a *contender*; between two events the wait hands the
//!   lock to the contenders and takes it back, so a submit (queue starts, semaphore reads, the
//!   doorbell) waits for one event, never for a whole simulation. A contender spins for the
//!   lock before it sleeps on it: a sleeping one would cost the wait a futex wake-up and
//!   itself a reschedule per call. A waiting call is not a contender.
//! - **Helping.** A wait whose own domain has nothing left to do (its condition is false and
//!   no event is pending) steps another domain that has work and no waiter of its own, a
//!   batch of events at a time, before it sleeps: a store from that domain may be what it
//!   waits for. Which thread steps a domain never changes what the domain does.
//! - **Why host timing cannot leak in.** Domains share no timing state (each core has its own
//!   sequencer, engines, DMA engines and HBM port), an execution's cycles run from its doorbell
//!   being taken to its completion on its own core, and an arrival (a host call, or a store
//!   from another domain) only queues work at the receiving domain's current cycle. Where a
//!   hand-over lets a call in changes only idle gaps between executions.
//!
//! When a wait's condition is false and nothing it can reach has work left, nothing can change
//! it but another thread's HAL call: the wait then sleeps (woken by every state-changing call)
//! until its host-time timeout, and returns [`HalError::Timeout`]. That is how a hung engine
//! surfaces to the runtime.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use nrt_hal::check::{self, Probe};
use nrt_hal::hal::{
    AllocRequest, CoreMemUsage, DeviceInfo, Mapping, MemInfo, NotificationQueue, NqRequest,
    QueueState, RingSpec, WaitCondition,
};
use nrt_hal::profile::{ExecProfile, ExecTrace, Profiler};
use nrt_hal::target::SemWindow;
use nrt_hal::{
    EventId, Hal, HalError, HalResult, MemHandle, NcIndex, QueueRef, SemaphoreId, Target,
};

use crate::config::SimConfig;
use crate::device::{lock, notification_request, Arrival, Domain, HostMem, Shared, SimStats};
use crate::memory::DeviceMemory;
use crate::timeline::Timeline;

/// How many times a contender tries a domain lock before sleeping on it (each try a
/// compare-and-swap and a spin hint: tens of microseconds in all).
const CONTENDER_SPINS: u32 = 2000;

/// Events a wait runs in another domain it helps before looking at its own again.
const HELP_BATCH: u32 = 256;

/// A domain's lock guard.
type DomainGuard<'a> = MutexGuard<'a, Box<Domain>>;

/// One clock domain behind its lock, with the counters its hand-over uses.
///
/// Layout matters here: a contender spins on the mutex word while the lock holder simulates,
/// so the word shares its cache line with nothing the simulation touches. The domain itself is
/// boxed (its hot fields live elsewhere), and the hand-over counters sit on a line of their own.
#[repr(align(128))]
struct DomainCell {
    dev: Mutex<Box<Domain>>,
    counters: HandOverCounters,
}

/// The counters of a domain's hand-over (see [`DomainCell`]).
#[repr(align(128))]
struct HandOverCounters {
    /// HAL calls other than `wait` queued for the lock: a simulating `wait` hands the lock
    /// over to them between two events (see the module docs).
    contenders: AtomicUsize,
    /// How many times a contender got the lock (what a handing-over `wait` watches).
    handoffs: AtomicU64,
    /// Waits on this domain's condition (a helping wait leaves the domain to them).
    waiters: AtomicUsize,
}

impl DomainCell {
    /// The lock for a HAL call that is not a wait: registered as a contender, so a wait that
    /// is simulating hands the lock over at its next event boundary.
    fn lock(&self) -> DomainGuard<'_> {
        if let Ok(g) = self.dev.try_lock() {
            return g;
        }
        self.counters.contenders.fetch_add(1, Ordering::SeqCst);
        let g = self.lock_contended();
        self.counters.handoffs.fetch_add(1, Ordering::SeqCst);
        self.counters.contenders.fetch_sub(1, Ordering::SeqCst);
        g
    }

    /// The lock for a registered contender: a simulating wait releases it within one event
    /// (well under a microsecond), so spin for it a while before sleeping on the mutex — a
    /// sleeping contender costs the wait a futex wake-up and the contender a reschedule per
    /// HAL call, which is what serialised async submission with simulation.
    fn lock_contended(&self) -> DomainGuard<'_> {
        for _ in 0..CONTENDER_SPINS {
            match self.dev.try_lock() {
                Ok(g) => return g,
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(TryLockError::WouldBlock) => std::hint::spin_loop(),
            }
        }
        self.lock_for_wait()
    }

    /// The lock, not registered as a contender (for waits, which simulate).
    fn lock_for_wait(&self) -> DomainGuard<'_> {
        lock(&self.dev)
    }

    /// The lock if it is free now.
    fn try_lock(&self) -> Option<DomainGuard<'_>> {
        match self.dev.try_lock() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Between two events of a simulating wait: if other HAL calls are queued for the lock,
    /// release it until one of them has had it, and take it back.
    fn hand_over<'a>(&'a self, d: DomainGuard<'a>) -> DomainGuard<'a> {
        if self.counters.contenders.load(Ordering::SeqCst) == 0 {
            return d;
        }
        let seen = self.counters.handoffs.load(Ordering::SeqCst);
        drop(d);
        let mut spins = 0u32;
        while self.counters.handoffs.load(Ordering::SeqCst) == seen
            && self.counters.contenders.load(Ordering::SeqCst) > 0
        {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        self.lock_for_wait()
    }
}

/// Counts a wait on a domain for as long as it lives.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(n: &'a AtomicUsize) -> Self {
        n.fetch_add(1, Ordering::SeqCst);
        Waiting(n)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A simulated Neuron device.
pub struct Sim {
    target: Target,
    shared: Arc<Shared>,
    domains: Box<[DomainCell]>,
    /// `mem_alloc` calls so far (`FaultPlan::fail_allocations` counts them).
    alloc_calls: AtomicU64,
    fail_allocations: Vec<u64>,
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("target", &self.target)
            .field("domains", &self.domains.len())
            .finish()
    }
}

impl Sim {
    /// A fresh device.
    pub fn new(cfg: SimConfig) -> Self {
        let nc_count = cfg.target.spec().nc_count;
        let per = cfg.cores_per_domain.clamp(1, nc_count);
        let shared = Shared::new(&cfg, per);
        let domains = (0..shared.domains())
            .map(|i| DomainCell {
                dev: Mutex::new(Box::new(Domain::new(&cfg, Arc::clone(&shared), i))),
                counters: HandOverCounters {
                    contenders: AtomicUsize::new(0),
                    handoffs: AtomicU64::new(0),
                    waiters: AtomicUsize::new(0),
                },
            })
            .collect();
        Sim {
            target: cfg.target,
            shared,
            domains,
            alloc_calls: AtomicU64::new(0),
            fail_allocations: cfg.faults.fail_allocations.clone(),
        }
    }

    /// The simulated generation.
    pub fn target(&self) -> Target {
        self.target
    }

    /// How many clock domains the device is simulated as (`SimConfig::cores_per_domain`).
    pub fn clock_domains(&self) -> usize {
        self.domains.len()
    }

    fn cell(&self, nc: NcIndex) -> &DomainCell {
        &self.domains[self.shared.domain_of(nc)]
    }

    /// The domain of core `nc` (which the caller has checked exists), for a HAL call that is
    /// not a wait, with the stores other domains sent it applied.
    fn core(&self, nc: NcIndex) -> DomainGuard<'_> {
        let mut d = self.cell(nc).lock();
        d.apply_arrivals();
        d
    }

    /// Runs `f` on the domain of core `nc` and wakes sleeping waits.
    fn mutate<T>(&self, nc: NcIndex, f: impl FnOnce(&mut Domain) -> HalResult<T>) -> HalResult<T> {
        let r = f(&mut self.core(nc));
        self.notify();
        r
    }

    /// The device memory for a host-side call (no domain lock needed).
    fn mem(&self) -> HostMem<'_> {
        self.shared.host_mem()
    }

    /// Writes device memory from the host and wakes sleeping waits (a `Memory32` wait may be
    /// watching it).
    fn write_mem<T>(&self, f: impl FnOnce(&DeviceMemory) -> HalResult<T>) -> HalResult<T> {
        let r = f(&self.mem());
        self.notify();
        r
    }

    /// Allocates, frees or poisons: takes every domain's lock (in index order, as contenders,
    /// so simulating waits hand them over), then changes the memory's layout.
    fn change_layout<T>(&self, f: impl FnOnce(&mut DeviceMemory) -> T) -> T {
        let r = self.with_domains_locked(0, || {
            // SAFETY: `with_domains_locked` holds every domain's lock, and this thread holds
            // no borrow of the memory.
            unsafe { self.shared.change_layout(f) }
        });
        self.notify();
        r
    }

    /// Runs `f` holding the locks of domains `i..` (taken in index order).
    fn with_domains_locked<T>(&self, i: usize, f: impl FnOnce() -> T) -> T {
        match self.domains.get(i) {
            None => f(),
            Some(cell) => {
                let _g = cell.lock();
                self.with_domains_locked(i + 1, f)
            }
        }
    }

    fn notify(&self) {
        self.shared.signal.notify();
    }

    fn check_nc(&self, op: &'static str, nc: NcIndex) -> HalResult<()> {
        check::core(self.target, op, nc)
    }

    fn check_sem(&self, op: &'static str, nc: NcIndex, sem: SemaphoreId) -> HalResult<()> {
        check::semaphore(self.target, op, nc, sem)
    }

    /// Every domain in turn, locked as a HAL call (not a wait).
    fn each_domain(&self, mut f: impl FnMut(&mut Domain)) {
        for cell in self.domains.iter() {
            let mut d = cell.lock();
            d.apply_arrivals();
            f(&mut d);
        }
    }

    /// The device cycle: the furthest any clock domain has advanced.
    pub fn now(&self) -> u64 {
        let mut now = 0;
        self.each_domain(|d| now = now.max(d.now));
        now
    }

    /// Work counters, summed over the clock domains.
    pub fn stats(&self) -> SimStats {
        let mut s = SimStats::default();
        self.each_domain(|d| s += &d.stats);
        s
    }

    /// What core `nc` did during its current or last execution (reset when one begins).
    pub fn exec_profile(&self, nc: NcIndex) -> ExecProfile {
        if !self.target.has_core(nc) {
            return Default::default();
        }
        self.core(nc).cores[nc].profile.clone()
    }

    /// Starts or stops recording executions instruction by instruction (from the next one
    /// begun).
    pub fn set_tracing(&self, enabled: bool) {
        self.each_domain(|d| d.tracing = enabled);
    }

    /// The instruction-level record of core `nc`'s last execution begun while tracing was on.
    pub fn exec_trace(&self, nc: NcIndex) -> Option<ExecTrace> {
        if !self.target.has_core(nc) {
            return None;
        }
        self.core(nc).cores[nc]
            .trace
            .as_ref()
            .map(|t| t.trace.clone())
    }

    /// Core `nc`'s executions since the device was created (zero for a core the device
    /// lacks).
    pub fn core_activity(&self, nc: NcIndex) -> crate::profile::CoreActivity {
        if !self.target.has_core(nc) {
            return Default::default();
        }
        self.core(nc).cores[nc].activity
    }

    /// The clock domains' timelines as one (see [`Timeline::merged`]).
    fn timeline(&self) -> Timeline {
        let guards: Vec<_> = self.domains.iter().map(|c| c.lock()).collect();
        Timeline::merged(guards.iter().map(|d| &d.timeline))
    }

    /// The timeline as Chrome / Perfetto trace JSON (empty unless the config enabled it).
    pub fn timeline_json(&self) -> String {
        self.timeline().to_chrome_json(self.target)
    }

    /// Starts or stops recording the timeline (a device made without it starts recording now).
    pub fn set_timeline(&self, enabled: bool) {
        self.each_domain(|d| d.timeline.set_enabled(enabled));
    }

    /// Forgets the timeline recorded so far.
    pub fn clear_timeline(&self) {
        self.each_domain(|d| d.timeline.clear());
    }

    /// The timeline's spans: each clock domain's in recording order, domain after domain.
    pub fn timeline_spans(&self) -> Vec<crate::timeline::Span> {
        self.timeline().spans().to_vec()
    }

    /// Notifications core `nc` had no queue for.
    pub fn dropped_notifications(&self, nc: NcIndex) -> u64 {
        if !self.target.has_core(nc) {
            return 0;
        }
        self.core(nc).cores[nc].dropped_notifications
    }

    /// Runs at most `max_events` pending wake-ups (fewer if the device runs out of work) and
    /// returns how many ran, clock domain after clock domain. For backends that let the device
    /// run by itself between host calls (the kernel-ABI emulation of the `nrt-kabi` crate);
    /// the HAL's own time advance is [`Hal::wait`].
    pub fn advance(&self, max_events: usize) -> usize {
        let mut n = 0;
        for cell in self.domains.iter() {
            let mut d = cell.lock();
            while n < max_events && d.step() {
                n += 1;
            }
        }
        if n > 0 {
            self.notify();
        }
        n
    }

    /// The live allocation containing device address `addr` and the offset of `addr` inside
    /// it (the lookup the driver's `mmap` does with its offset, docs/driver.md §7).
    pub fn lookup(&self, addr: nrt_hal::DeviceAddr) -> Option<(MemHandle, u64)> {
        self.mem().lookup(addr)
    }

    /// Runs the device until no clock domain has anything left to do; returns the furthest
    /// cycle reached.
    pub fn run_until_idle(&self) -> u64 {
        loop {
            let mut ran = false;
            for cell in self.domains.iter() {
                let mut d = cell.lock();
                while d.step() {
                    ran = true;
                }
            }
            if !ran {
                break;
            }
        }
        self.notify();
        self.now()
    }

    /// The domain a device address's side effects belong to: the core of a register or
    /// on-chip window, or the first domain for plain memory.
    fn domain_of_addr(&self, addr: nrt_hal::DeviceAddr) -> &DomainCell {
        match self.target.decode_mmio(addr) {
            Some(reg) => self.cell(crate::device::reg_core(reg)),
            None => &self.domains[0],
        }
    }

    /// Stores a 4-byte value at a device address through the device's one store path, exactly
    /// as a DMA descriptor or an engine `Write` would (for tests and tools; the runtime uses
    /// the HAL).
    pub fn store32(&self, addr: nrt_hal::DeviceAddr, value: u32) -> HalResult<()> {
        let r = {
            let mut d = self.domain_of_addr(addr).lock();
            d.apply_arrivals();
            d.store32(addr, value)
        };
        self.notify();
        r.map_err(|e| HalError::DeviceFault {
            nc: None,
            reason: e.to_string(),
        })
    }

    /// Loads a 4-byte value from a device address through the device's decoder.
    pub fn load32(&self, addr: nrt_hal::DeviceAddr) -> HalResult<u32> {
        let mut d = self.domain_of_addr(addr).lock();
        d.apply_arrivals();
        d.load32(addr).map_err(|e| HalError::DeviceFault {
            nc: None,
            reason: e.to_string(),
        })
    }

    /// Marks a device byte as holding an uncorrectable HBM error from now on (fault injection
    /// at run time; [`crate::FaultPlan::hbm_uncorrectable`] does the same at construction).
    pub fn inject_hbm_uncorrectable(&self, addr: nrt_hal::DeviceAddr) {
        self.change_layout(|m| m.poison(addr));
    }

    /// Reads on-chip SBUF bytes of core `nc` (for tests and tools).
    pub fn read_sbuf(
        &self,
        nc: NcIndex,
        partition: u32,
        offset: u32,
        dst: &mut [u8],
    ) -> HalResult<()> {
        self.check_nc("read_sbuf", nc)?;
        self.core(nc).cores[nc]
            .onchip
            .read(crate::memory::OnChipSpace::Sbuf, partition, offset, dst)
            .map_err(|e| check::invalid("read_sbuf", e.to_string()))
    }

    /// Host bytes committed to the on-chip memory (SBUF and PSUM) of every core: only pages
    /// written since creation or a core's reset count (docs/simulator.md §2.4); `None` where the
    /// host cannot tell.
    pub fn onchip_committed_bytes(&self) -> Option<u64> {
        let mut total = Some(0u64);
        self.each_domain(|d| {
            for c in d.cores.iter() {
                total = total.zip(c.onchip.committed_bytes()).map(|(a, b)| a + b);
            }
        });
        total
    }

    /// Whether `cond` holds; `d` is the domain of a semaphore condition's core.
    fn condition_holds(&self, d: Option<&Domain>, cond: &WaitCondition) -> HalResult<bool> {
        cond.holds(|probe| match probe {
            Probe::Semaphore { nc, sem } => Ok(match d {
                Some(d) => d.sem_read(nc, sem),
                None => self.core(nc).sem_read(nc, sem),
            } as u32),
            Probe::Word { handle, offset } => {
                let mut b = [0u8; 4];
                self.mem().read_at(handle, offset, &mut b)?;
                Ok(u32::from_le_bytes(b))
            }
        })
    }

    /// A wait on a semaphore of domain `i`: steps that domain until the condition holds
    /// (helping other domains while it has nothing to do, sleeping when nothing has).
    fn wait_domain(&self, i: usize, cond: &WaitCondition, deadline: Instant) -> HalResult<bool> {
        let cell = &self.domains[i];
        let _waiting = Waiting::new(&cell.counters.waiters);
        let mut d = cell.lock_for_wait();
        let mut steps = 0u32;
        loop {
            d.apply_arrivals();
            if self.condition_holds(Some(&d), cond)? {
                drop(d);
                self.notify();
                return Ok(true);
            }
            if d.step() {
                steps = steps.wrapping_add(1);
                if steps.is_multiple_of(1024) {
                    // A device that never runs out of events (a program that keeps itself
                    // busy) must still time out.
                    if Instant::now() >= deadline {
                        return Ok(false);
                    }
                    // Let other waits in now and then: their conditions are checked only by
                    // their own threads.
                    drop(d);
                    std::thread::yield_now();
                    d = cell.lock_for_wait();
                    continue;
                }
                // Let other threads' HAL calls in between two events (they are stamped with
                // the domain's current cycle, as any arrival is).
                d = cell.hand_over(d);
                continue;
            }
            drop(d);
            if self.help(i) {
                d = cell.lock_for_wait();
                continue;
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            let epoch = self.shared.signal.register();
            d = cell.lock_for_wait();
            d.apply_arrivals();
            if d.has_work() || self.condition_holds(Some(&d), cond)? {
                self.shared.signal.unregister();
                continue;
            }
            drop(d);
            self.shared.signal.sleep(epoch, deadline - now);
            d = cell.lock_for_wait();
        }
    }

    /// Steps, for a batch of events, the first other domain (after `i`) that has work, no
    /// waiter of its own and a free lock. Returns whether it ran anything.
    fn help(&self, i: usize) -> bool {
        let n = self.domains.len();
        for k in 1..n {
            let cell = &self.domains[(i + k) % n];
            if cell.counters.waiters.load(Ordering::SeqCst) > 0 {
                continue;
            }
            let Some(mut d) = cell.try_lock() else {
                continue;
            };
            let mut ran = 0;
            while ran < HELP_BATCH && !self.shared.has_arrivals(i) && d.step() {
                ran += 1;
                d = cell.hand_over(d);
            }
            drop(d);
            if ran > 0 {
                self.notify();
                return true;
            }
        }
        false
    }

    /// A wait on a memory word: steps every domain in turn until the word compares as asked.
    fn wait_memory(&self, cond: &WaitCondition, deadline: Instant) -> HalResult<bool> {
        let mut rounds = 0u32;
        loop {
            if self.condition_holds(None, cond)? {
                self.notify();
                return Ok(true);
            }
            let mut ran = false;
            for cell in self.domains.iter() {
                let mut d = cell.lock_for_wait();
                for _ in 0..HELP_BATCH {
                    if !d.step() {
                        break;
                    }
                    ran = true;
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            if ran {
                rounds = rounds.wrapping_add(1);
                if rounds.is_multiple_of(64) {
                    std::thread::yield_now();
                }
                continue;
            }
            let epoch = self.shared.signal.register();
            let busy = self.domains.iter().any(|c| c.lock_for_wait().has_work());
            if busy || self.condition_holds(None, cond)? {
                self.shared.signal.unregister();
                continue;
            }
            self.shared.signal.sleep(epoch, deadline - now);
        }
    }
}

/// The simulator's profiling capability: its timeline and per-core activity counters.
impl Profiler for Sim {
    fn set_recording(&self, enabled: bool) {
        self.set_timeline(enabled);
    }
    fn clear(&self) {
        self.clear_timeline();
    }
    fn timeline_json(&self) -> String {
        Sim::timeline_json(self)
    }
    fn exec_profile(&self, nc: NcIndex) -> ExecProfile {
        Sim::exec_profile(self, nc)
    }
    fn set_tracing(&self, enabled: bool) {
        Sim::set_tracing(self, enabled);
    }
    fn exec_trace(&self, nc: NcIndex) -> Option<ExecTrace> {
        Sim::exec_trace(self, nc)
    }
}

impl Hal for Sim {
    fn device_info(&self) -> HalResult<DeviceInfo> {
        let s = self.target.spec();
        Ok(DeviceInfo {
            target: self.target,
            revision: nrt_hal::abi::REVISION_EMULATOR,
            nc_count: s.nc_count,
            abi_version_range: s.abi_version_range,
        })
    }

    fn mem_alloc(&self, req: &AllocRequest) -> HalResult<MemHandle> {
        self.change_layout(|m| {
            let call = self.alloc_calls.fetch_add(1, Ordering::SeqCst) + 1;
            if self.fail_allocations.contains(&call) {
                return Err(HalError::OutOfMemory {
                    requested: req.size,
                    location: req.location,
                });
            }
            m.alloc(req)
        })
    }

    fn mem_free(&self, handle: MemHandle) -> HalResult<()> {
        self.change_layout(|m| m.free(handle))
    }

    fn mem_info(&self, handle: MemHandle) -> HalResult<MemInfo> {
        self.mem().info(handle)
    }

    fn copy_to_device(&self, handle: MemHandle, offset: u64, src: &[u8]) -> HalResult<()> {
        self.write_mem(|m| m.write_at(handle, offset, src))
    }

    fn copy_from_device(&self, handle: MemHandle, offset: u64, dst: &mut [u8]) -> HalResult<()> {
        self.mem().read_at(handle, offset, dst)
    }

    fn memset(&self, handle: MemHandle, offset: u64, value: u8, size: u64) -> HalResult<()> {
        self.write_mem(|m| m.fill_at(handle, offset, value, size))
    }

    unsafe fn map(&self, handle: MemHandle) -> HalResult<Mapping> {
        let (ptr, len) = self.mem().chunk_ptr(handle)?;
        Ok(Mapping { handle, ptr, len })
    }

    unsafe fn unmap(&self, mapping: Mapping) -> HalResult<()> {
        // The mapping is the allocation's own backing store; nothing to tear down. Check the
        // handle still names the same memory so a stale mapping is reported.
        let (ptr, _) = self.mem().chunk_ptr(mapping.handle)?;
        if ptr != mapping.ptr {
            return Err(check::invalid(
                "unmap",
                "mapping does not belong to this allocation",
            ));
        }
        Ok(())
    }

    fn dma_queue_init(&self, queue: QueueRef, tx: RingSpec, rx: RingSpec) -> HalResult<()> {
        const OP: &str = "DMA_QUEUE_INIT";
        check::queue(self.target, OP, queue)?;
        let geoms = check::rings(OP, tx, rx)?;
        let mut rings = Vec::with_capacity(2);
        for ((name, spec), geom) in [("tx", tx), ("rx", rx)].into_iter().zip(geoms) {
            let info = self.mem().info(spec.handle)?;
            geom.check_placement(info.pa)
                .map_err(|e| check::invalid(OP, format!("{name} ring: {e}")))?;
            rings.push((spec.handle, info.pa, geom));
        }
        self.mutate(queue.nc, |d| {
            d.dma_queue_init(queue, rings[0], rings[1]);
            Ok(())
        })
    }

    fn dma_queue_copy_start(&self, queue: QueueRef, tx_count: u32, rx_count: u32) -> HalResult<()> {
        const OP: &str = "DMA_QUEUE_COPY_START";
        check::queue(self.target, OP, queue)?;
        // The driver hits a kernel BUG_ON here (ABI appendix, hazard 5); refuse instead.
        check::copy_start(OP, rx_count)?;
        self.mutate(queue.nc, |d| {
            let st = d
                .dma_queue_state(queue)
                .ok_or_else(|| check::invalid(OP, format!("queue {queue} out of range")))?;
            if st.status == nrt_hal::hal::QueueStatus::Disabled {
                return Err(check::invalid(
                    OP,
                    format!("queue {queue} is not initialised"),
                ));
            }
            // RX tail first, then TX (docs/driver.md §4.5).
            d.tail_increment(queue, nrt_hal::target::Direction::Rx, rx_count);
            if tx_count > 0 {
                d.tail_increment(queue, nrt_hal::target::Direction::Tx, tx_count);
            }
            Ok(())
        })
    }

    fn dma_queue_state(&self, queue: QueueRef) -> HalResult<QueueState> {
        check::queue(self.target, "DMA_QUEUE_GET_STATE", queue)?;
        self.core(queue.nc)
            .dma_queue_state(queue)
            .ok_or_else(|| check::invalid("DMA_QUEUE_GET_STATE", "queue out of range"))
    }

    fn semaphore_read(&self, nc: NcIndex, sem: SemaphoreId) -> HalResult<i32> {
        self.check_sem("SEMAPHORE_READ", nc, sem)?;
        Ok(self.core(nc).sem_read(nc, sem))
    }

    fn semaphore_write(&self, nc: NcIndex, sem: SemaphoreId, value: i32) -> HalResult<()> {
        self.check_sem("SEMAPHORE_WRITE", nc, sem)?;
        self.mutate(nc, |d| {
            d.sem_op(nc, sem, SemWindow::Set, value as u32);
            Ok(())
        })
    }

    fn semaphore_increment(&self, nc: NcIndex, sem: SemaphoreId, amount: u32) -> HalResult<()> {
        self.check_sem("SEMAPHORE_INCREMENT", nc, sem)?;
        // The doorbell of every submit. When a wait is simulating the domain, queue the
        // increment in the domain's inbox instead of waiting for a hand-over: the stepping
        // thread applies it at its next event, at the domain's clock, exactly as a handed-over
        // call would have been stamped (docs/simulator.md §8.1).
        let cell = self.cell(nc);
        match cell.try_lock() {
            Some(mut d) => {
                d.apply_arrivals();
                d.sem_op(nc, sem, SemWindow::Increment, amount);
            }
            None => {
                let addr = self
                    .target
                    .semaphore_addr(nc, sem, SemWindow::Increment)
                    .ok_or_else(|| check::invalid("SEMAPHORE_INCREMENT", "no such semaphore"))?;
                let a = Arrival::Word {
                    addr,
                    value: amount,
                };
                self.shared.send(self.shared.domain_of(nc), a);
            }
        }
        self.notify();
        Ok(())
    }

    fn semaphore_decrement(&self, nc: NcIndex, sem: SemaphoreId, amount: u32) -> HalResult<()> {
        self.check_sem("SEMAPHORE_DECREMENT", nc, sem)?;
        self.mutate(nc, |d| {
            d.sem_op(nc, sem, SemWindow::Decrement, amount);
            Ok(())
        })
    }

    fn event_set(&self, nc: NcIndex, event: EventId, value: u32) -> HalResult<()> {
        check::event(self.target, "EVENT_SET", nc, event)?;
        self.mutate(nc, |d| {
            d.event_set(nc, event, value);
            Ok(())
        })
    }

    fn event_get(&self, nc: NcIndex, event: EventId) -> HalResult<u32> {
        check::event(self.target, "EVENT_GET", nc, event)?;
        self.core(nc).cores[nc]
            .events
            .get(event.index())
            .copied()
            .ok_or_else(|| check::invalid("EVENT_GET", format!("event {} out of range", event.0)))
    }

    fn notification_init(&self, req: &NqRequest) -> HalResult<NotificationQueue> {
        const OP: &str = "NOTIFICATIONS_INIT_V2";
        check::notification(self.target, OP, req)?;
        let (nc, ty, index) = (req.nc, req.nq_type, req.engine_index);
        if let Some(q) = self.core(nc).notification_queue(nc, ty, index) {
            return Ok(q);
        }
        let queue = self.change_layout(|m| {
            let handle = m.alloc(&notification_request(nc, req.size, req.location))?;
            let pa = m.info(handle)?.pa;
            HalResult::Ok(NotificationQueue {
                handle,
                pa,
                size: req.size,
            })
        })?;
        let attached = self.mutate(nc, |d| Ok(d.notification_attach(nc, ty, index, queue)))?;
        if attached != queue {
            // Another thread attached one first: keep that one.
            self.change_layout(|m| m.free(queue.handle))?;
        }
        Ok(attached)
    }

    fn nc_reset(&self, nc_mask: u32) -> HalResult<()> {
        for n in 0..self.target.spec().nc_count {
            if nc_mask & (1 << n) != 0 {
                let nqs = self.mutate(NcIndex(n), |d| Ok(d.reset_core(NcIndex(n))))?;
                self.change_layout(|m| {
                    for h in nqs {
                        let _ = m.free(h);
                    }
                });
            }
        }
        Ok(())
    }

    fn wait(&self, cond: &WaitCondition, timeout: Duration) -> HalResult<()> {
        check::wait(self.target, cond)?;
        let deadline = Instant::now() + timeout;
        let held = match *cond {
            WaitCondition::Semaphore { nc, .. } => {
                self.wait_domain(self.shared.domain_of(nc), cond, deadline)?
            }
            WaitCondition::Memory32 { .. } => self.wait_memory(cond, deadline)?,
        };
        if held {
            Ok(())
        } else {
            Err(HalError::Timeout {
                what: format!("{cond:?}"),
                waited: timeout,
            })
        }
    }

    fn memory_usage(&self, nc: NcIndex) -> HalResult<CoreMemUsage> {
        self.check_nc("memory_usage", nc)?;
        Ok(self.mem().usage(nc))
    }

    fn profiler(&self) -> Option<&dyn Profiler> {
        Some(self)
    }
}
