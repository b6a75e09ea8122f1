//! [`Sim`]: the simulated device as a [`Hal`] backend.
//!
//! The whole device sits behind one mutex. HAL calls that start device work (a tail increment,
//! a semaphore increment) only queue it at the device's current cycle; **time advances only in
//! [`Hal::wait`]**, which runs the event loop until its condition holds. There is no background
//! thread, so a run is a pure function of the HAL calls made: memory contents, notification
//! entries, cycle counts and the timeline are identical run to run.
//!
//! # Host threads (docs/simulator.md §8.1)
//!
//! - **Hand-over.** A wait simulates with the lock held, but every other HAL call queued for
//!   the lock registers as a *contender*; between two events the wait hands the lock to the
//!   contenders and takes it back, so a submit (copies, queue starts, semaphore reads, the
//!   doorbell) waits for one event, never for a whole simulation. A contender spins for the
//!   lock before it sleeps on it: a sleeping one would cost the wait a futex wake-up and
//!   itself a reschedule per call. A waiting call is not a
//!   contender: waits on different cores do not trade the lock, whichever holds it advances
//!   the device for both.
//! - **Why host timing cannot leak in.** Cores share no timing state (each has its own
//!   sequencer, engines, DMA engines and HBM port), an execution's cycles run from its doorbell
//!   being taken to its completion on its own core, and an arrival only queues work at the
//!   current cycle. Where a hand-over lets a call in changes only idle gaps between executions.
//! - **Per-core clock domains** (designed in docs/simulator.md §8.1, not built yet): each
//!   core's sequencer, engines, DMA engines and scheduler under its own lock and clock, HBM
//!   behind a lock taken per access, SBUF/PSUM owned by their core, the two cores of a logical
//!   core sharing one domain. What it needs: `Device` split into a shared part (memory,
//!   allocator, fault plan, stats, timeline) and per-domain parts; every `impl Device` unit
//!   (`dma`, `engine`, `sequencer`) reaching memory through the shared lock and other cores only
//!   through a cross-domain store; `memory::DeviceMemory` giving each core's `OnChip` to its
//!   domain; waits that step one domain; `run_until_idle` / `advance` stepping every domain.
//!
//! When a wait's condition is false and the device has nothing left to do, nothing can change
//! it but another thread's HAL call: the wait then sleeps on a condition variable (woken by
//! every state-changing call) until its host-time timeout, and returns [`HalError::Timeout`].
//! That is how a hung engine surfaces to the runtime.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use nrt_hal::abi::MemAllocCategory;
use nrt_hal::check::{self, Probe};
use nrt_hal::hal::{
    AllocRequest, CoreMemUsage, DeviceInfo, Mapping, MemInfo, MemLocation, NotificationQueue,
    NqRequest, QueueState, RingSpec, WaitCondition,
};
use nrt_hal::target::SemWindow;
use nrt_hal::{
    EventId, Hal, HalError, HalResult, MemHandle, NcIndex, QueueRef, SemaphoreId, Target,
};

use crate::config::SimConfig;
use crate::device::{Device, SimStats};

/// How many times a contender tries the device lock before sleeping on it (each try a
/// compare-and-swap and a spin hint: tens of microseconds in all).
const CONTENDER_SPINS: u32 = 2000;

/// A simulated Neuron device.
pub struct Sim {
    target: Target,
    dev: Mutex<Device>,
    changed: Condvar,
    /// Threads sleeping in `wait` (so state changes notify only when someone listens).
    sleepers: AtomicUsize,
    /// HAL calls other than `wait` queued for the device lock: a simulating `wait` hands the
    /// lock over to them between two events (see the module docs).
    contenders: AtomicUsize,
    /// How many times a contender got the lock (what a handing-over `wait` watches).
    handoffs: AtomicU64,
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim").field("target", &self.target).finish()
    }
}

impl Sim {
    /// A fresh device.
    pub fn new(cfg: SimConfig) -> Self {
        Sim {
            target: cfg.target,
            dev: Mutex::new(Device::new(&cfg)),
            changed: Condvar::new(),
            sleepers: AtomicUsize::new(0),
            contenders: AtomicUsize::new(0),
            handoffs: AtomicU64::new(0),
        }
    }

    /// The simulated generation.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The device lock for a HAL call that is not a wait: registered as a contender, so a
    /// wait that is simulating hands the lock over at its next event boundary.
    fn lock(&self) -> MutexGuard<'_, Device> {
        if let Ok(g) = self.dev.try_lock() {
            return g;
        }
        self.contenders.fetch_add(1, Ordering::SeqCst);
        let g = self.lock_contended();
        self.handoffs.fetch_add(1, Ordering::SeqCst);
        self.contenders.fetch_sub(1, Ordering::SeqCst);
        g
    }

    /// The device lock for a registered contender: a simulating wait releases it within one
    /// event (well under a microsecond), so spin for it a while before sleeping on the mutex —
    /// a sleeping contender costs the wait a futex wake-up and the contender a reschedule per
    /// HAL call, which is what serialised async submission with simulation.
    fn lock_contended(&self) -> MutexGuard<'_, Device> {
        for _ in 0..CONTENDER_SPINS {
            match self.dev.try_lock() {
                Ok(g) => return g,
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(TryLockError::WouldBlock) => std::hint::spin_loop(),
            }
        }
        self.lock_for_wait()
    }

    /// The device lock, not registered as a contender (for waits, which simulate).
    fn lock_for_wait(&self) -> MutexGuard<'_, Device> {
        // A panic while holding the lock would be a simulator bug; keep serving rather than
        // cascading it into every later call.
        self.dev.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Between two events of a simulating wait: if other HAL calls are queued for the lock,
    /// release it until one of them has had it, and take it back.
    fn hand_over<'a>(&'a self, d: MutexGuard<'a, Device>) -> MutexGuard<'a, Device> {
        if self.contenders.load(Ordering::SeqCst) == 0 {
            return d;
        }
        let seen = self.handoffs.load(Ordering::SeqCst);
        drop(d);
        let mut spins = 0u32;
        while self.handoffs.load(Ordering::SeqCst) == seen
            && self.contenders.load(Ordering::SeqCst) > 0
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

    fn mutate<T>(&self, f: impl FnOnce(&mut Device) -> HalResult<T>) -> HalResult<T> {
        let r = f(&mut self.lock());
        self.notify();
        r
    }

    fn notify(&self) {
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            self.changed.notify_all();
        }
    }

    fn check_nc(&self, op: &'static str, nc: NcIndex) -> HalResult<()> {
        check::core(self.target, op, nc)
    }

    fn check_sem(&self, op: &'static str, nc: NcIndex, sem: SemaphoreId) -> HalResult<()> {
        check::semaphore(self.target, op, nc, sem)
    }

    /// The current device cycle.
    pub fn now(&self) -> u64 {
        self.lock().now
    }

    /// Work counters.
    pub fn stats(&self) -> SimStats {
        self.lock().stats.clone()
    }

    /// What core `nc` did during its current or last execution (reset when one begins).
    pub fn exec_profile(&self, nc: NcIndex) -> crate::profile::ExecProfile {
        self.lock()
            .cores
            .get(nc.index())
            .map(|c| c.profile.clone())
            .unwrap_or_default()
    }

    /// The timeline as Chrome / Perfetto trace JSON (empty unless the config enabled it).
    pub fn timeline_json(&self) -> String {
        let d = self.lock();
        d.timeline.to_chrome_json(self.target)
    }

    /// Starts or stops recording the timeline (a device made without it starts recording now).
    pub fn set_timeline(&self, enabled: bool) {
        self.lock().timeline.set_enabled(enabled);
    }

    /// Forgets the timeline recorded so far.
    pub fn clear_timeline(&self) {
        self.lock().timeline.clear();
    }

    /// The timeline's spans.
    pub fn timeline_spans(&self) -> Vec<crate::timeline::Span> {
        self.lock().timeline.spans().to_vec()
    }

    /// Notifications core `nc` had no queue for.
    pub fn dropped_notifications(&self, nc: NcIndex) -> u64 {
        self.lock()
            .cores
            .get(nc.index())
            .map_or(0, |c| c.dropped_notifications)
    }

    /// Runs at most `max_events` pending wake-ups (fewer if the device runs out of work) and
    /// returns how many ran. For backends that let the device run by itself between host calls
    /// (the kernel-ABI emulation of the `nrt-kabi` crate); the HAL's own time advance is [`Hal::wait`].
    pub fn advance(&self, max_events: usize) -> usize {
        let ran = {
            let mut d = self.lock();
            let mut n = 0;
            while n < max_events && d.step() {
                n += 1;
            }
            n
        };
        if ran > 0 {
            self.notify();
        }
        ran
    }

    /// The live allocation containing device address `addr` and the offset of `addr` inside
    /// it (the lookup the driver's `mmap` does with its offset, docs/driver.md §7).
    pub fn lookup(&self, addr: nrt_hal::DeviceAddr) -> Option<(MemHandle, u64)> {
        self.lock().mem.lookup(addr)
    }

    /// Runs the device until it has nothing left to do; returns the cycle reached.
    pub fn run_until_idle(&self) -> u64 {
        let now = {
            let mut d = self.lock();
            while d.step() {}
            d.now
        };
        self.notify();
        now
    }

    /// Stores a 4-byte value at a device address through the device's one store path, exactly
    /// as a DMA descriptor or an engine `Write` would (for tests and tools; the runtime uses
    /// the HAL).
    pub fn store32(&self, addr: nrt_hal::DeviceAddr, value: u32) -> HalResult<()> {
        self.mutate(|d| {
            d.store32(addr, value).map_err(|e| HalError::DeviceFault {
                nc: None,
                reason: e.to_string(),
            })
        })
    }

    /// Loads a 4-byte value from a device address through the device's decoder.
    pub fn load32(&self, addr: nrt_hal::DeviceAddr) -> HalResult<u32> {
        self.mutate(|d| {
            d.load32(addr).map_err(|e| HalError::DeviceFault {
                nc: None,
                reason: e.to_string(),
            })
        })
    }

    /// Marks a device byte as holding an uncorrectable HBM error from now on (fault injection
    /// at run time; [`crate::FaultPlan::hbm_uncorrectable`] does the same at construction).
    pub fn inject_hbm_uncorrectable(&self, addr: nrt_hal::DeviceAddr) {
        self.lock().mem.poison(addr);
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
        self.lock()
            .mem
            .onchip(nc)
            .and_then(|oc| oc.read(crate::memory::OnChipSpace::Sbuf, partition, offset, dst))
            .map_err(|e| check::invalid("read_sbuf", e.to_string()))
    }

    /// Host bytes committed to the on-chip memory (SBUF and PSUM) of every core: only pages
    /// written since creation or a core's reset count (docs/simulator.md §2.4); `None` where the
    /// host cannot tell.
    pub fn onchip_committed_bytes(&self) -> Option<u64> {
        self.lock().mem.onchip_committed_bytes()
    }

    fn condition_holds(d: &mut Device, cond: &WaitCondition) -> HalResult<bool> {
        cond.holds(|probe| match probe {
            Probe::Semaphore { nc, sem } => Ok(d.sem_read(nc, sem) as u32),
            Probe::Word { handle, offset } => {
                let mut b = [0u8; 4];
                d.mem.read_at(handle, offset, &mut b)?;
                Ok(u32::from_le_bytes(b))
            }
        })
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
        self.mutate(|d| {
            d.alloc_calls += 1;
            if d.faults.fail_allocations.contains(&d.alloc_calls) {
                return Err(HalError::OutOfMemory {
                    requested: req.size,
                    location: req.location,
                });
            }
            d.mem.alloc(req)
        })
    }

    fn mem_free(&self, handle: MemHandle) -> HalResult<()> {
        self.mutate(|d| d.mem.free(handle))
    }

    fn mem_info(&self, handle: MemHandle) -> HalResult<MemInfo> {
        self.lock().mem.info(handle)
    }

    fn copy_to_device(&self, handle: MemHandle, offset: u64, src: &[u8]) -> HalResult<()> {
        self.mutate(|d| d.mem.write_at(handle, offset, src))
    }

    fn copy_from_device(&self, handle: MemHandle, offset: u64, dst: &mut [u8]) -> HalResult<()> {
        self.lock().mem.read_at(handle, offset, dst)
    }

    fn memset(&self, handle: MemHandle, offset: u64, value: u8, size: u64) -> HalResult<()> {
        self.mutate(|d| d.mem.fill_at(handle, offset, value, size))
    }

    unsafe fn map(&self, handle: MemHandle) -> HalResult<Mapping> {
        let (ptr, len) = self.lock().mem.chunk_ptr(handle)?;
        Ok(Mapping { handle, ptr, len })
    }

    unsafe fn unmap(&self, mapping: Mapping) -> HalResult<()> {
        // The mapping is the allocation's own backing store; nothing to tear down. Check the
        // handle still names the same memory so a stale mapping is reported.
        let (ptr, _) = self.lock().mem.chunk_ptr(mapping.handle)?;
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
        self.mutate(|d| {
            let mut rings = Vec::with_capacity(2);
            for ((name, spec), geom) in [("tx", tx), ("rx", rx)].into_iter().zip(geoms) {
                let info = d.mem.info(spec.handle)?;
                geom.check_placement(info.pa)
                    .map_err(|e| check::invalid(OP, format!("{name} ring: {e}")))?;
                rings.push((spec.handle, info.pa, geom));
            }
            d.dma_queue_init(queue, rings[0], rings[1]);
            Ok(())
        })
    }

    fn dma_queue_copy_start(&self, queue: QueueRef, tx_count: u32, rx_count: u32) -> HalResult<()> {
        const OP: &str = "DMA_QUEUE_COPY_START";
        check::queue(self.target, OP, queue)?;
        // The driver hits a kernel BUG_ON here (ABI appendix, hazard 5); refuse instead.
        check::copy_start(OP, rx_count)?;
        self.mutate(|d| {
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
        self.lock()
            .dma_queue_state(queue)
            .ok_or_else(|| check::invalid("DMA_QUEUE_GET_STATE", "queue out of range"))
    }

    fn semaphore_read(&self, nc: NcIndex, sem: SemaphoreId) -> HalResult<i32> {
        self.check_sem("SEMAPHORE_READ", nc, sem)?;
        Ok(self.lock().sem_read(nc, sem))
    }

    fn semaphore_write(&self, nc: NcIndex, sem: SemaphoreId, value: i32) -> HalResult<()> {
        self.check_sem("SEMAPHORE_WRITE", nc, sem)?;
        self.mutate(|d| {
            d.sem_op(nc, sem, SemWindow::Set, value as u32);
            Ok(())
        })
    }

    fn semaphore_increment(&self, nc: NcIndex, sem: SemaphoreId, amount: u32) -> HalResult<()> {
        self.check_sem("SEMAPHORE_INCREMENT", nc, sem)?;
        self.mutate(|d| {
            d.sem_op(nc, sem, SemWindow::Increment, amount);
            Ok(())
        })
    }

    fn semaphore_decrement(&self, nc: NcIndex, sem: SemaphoreId, amount: u32) -> HalResult<()> {
        self.check_sem("SEMAPHORE_DECREMENT", nc, sem)?;
        self.mutate(|d| {
            d.sem_op(nc, sem, SemWindow::Decrement, amount);
            Ok(())
        })
    }

    fn event_set(&self, nc: NcIndex, event: EventId, value: u32) -> HalResult<()> {
        check::event(self.target, "EVENT_SET", nc, event)?;
        self.mutate(|d| {
            d.event_set(nc, event, value);
            Ok(())
        })
    }

    fn event_get(&self, nc: NcIndex, event: EventId) -> HalResult<u32> {
        check::event(self.target, "EVENT_GET", nc, event)?;
        self.lock().cores[nc.index()]
            .events
            .get(event.index())
            .copied()
            .ok_or_else(|| check::invalid("EVENT_GET", format!("event {} out of range", event.0)))
    }

    fn notification_init(&self, req: &NqRequest) -> HalResult<NotificationQueue> {
        const OP: &str = "NOTIFICATIONS_INIT_V2";
        check::notification(self.target, OP, req)?;
        self.mutate(|d| {
            d.notification_init(
                req.nc,
                req.nq_type,
                req.engine_index,
                req.size,
                req.location,
            )
        })
    }

    fn nc_reset(&self, nc_mask: u32) -> HalResult<()> {
        self.mutate(|d| {
            for n in 0..self.target.spec().nc_count {
                if nc_mask & (1 << n) != 0 {
                    d.reset_core(NcIndex(n));
                }
            }
            Ok(())
        })
    }

    fn wait(&self, cond: &WaitCondition, timeout: Duration) -> HalResult<()> {
        check::wait(self.target, cond)?;
        let deadline = Instant::now() + timeout;
        let mut d = self.lock_for_wait();
        let mut steps = 0u32;
        loop {
            if Self::condition_holds(&mut d, cond)? {
                drop(d);
                self.notify();
                return Ok(());
            }
            if d.step() {
                steps = steps.wrapping_add(1);
                if steps.is_multiple_of(1024) {
                    // A device that never runs out of events (a program that keeps itself
                    // busy) must still time out.
                    if Instant::now() >= deadline {
                        return Err(HalError::Timeout {
                            what: format!("{cond:?}"),
                            waited: timeout,
                        });
                    }
                    // Let other waits in now and then: their conditions are checked only by
                    // their own threads.
                    drop(d);
                    std::thread::yield_now();
                    d = self.lock_for_wait();
                    continue;
                }
                // Let other threads' HAL calls in between two events (they are stamped with
                // the device's current cycle, as any arrival is).
                d = self.hand_over(d);
                continue;
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(HalError::Timeout {
                    what: format!("{cond:?}"),
                    waited: timeout,
                });
            }
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            d = self
                .changed
                .wait_timeout(d, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn memory_usage(&self, nc: NcIndex) -> HalResult<CoreMemUsage> {
        self.check_nc("memory_usage", nc)?;
        Ok(self.lock().mem.usage(nc))
    }
}

// Keep the category type in the public surface of this module's docs.
#[allow(dead_code)]
fn _category_is_public(_: MemAllocCategory, _: MemLocation) {}
