//! The recording HAL decorator: [`Recorder`] wraps any backend, forwards every call, and turns
//! each device-facing call into canonical trace events.
//!
//! # What is recorded
//!
//! | call | stream | rendered as |
//! |---|---|---|
//! | `mem_alloc` / `mem_free` | `mem` | `alloc #7 tensors_device ch0 size=0x40000`, `free #7` |
//! | `copy_to_device` into code memory | `code` | one disassembled line per instruction record |
//! | `copy_to_device` into ring memory | `mem` | `write #12+0x40 len=0x10 descriptors` (contents at consumption, below) |
//! | `copy_to_device` of a request slot | `mem` | the decoded exec request |
//! | other `copy_to_device` | `mem` | words (≤ 64 bytes, embedded addresses symbolised) or length + FNV-1a digest |
//! | `copy_from_device`, `memset`, `map`, `unmap` | `mem` | `read #7+0x0 len=0x40`, … |
//! | `dma_queue_init` | `q eE.qQ` | `init tx=#12 rx=#13 count=32`, then the ring contents the queue will consume |
//! | `dma_queue_copy_start` | `q eE.qQ` | `copy_start tx+=2 rx+=2`, then the descriptors made available |
//! | `semaphore_increment` of `INFERENCE_START` | `doorbell` | `doorbell +1`, and the blocks the sequencer will run (below) |
//! | other semaphore calls | `sem` | `sem[nc0:5] += 1`, `sem[nc0:254] read -> 1` |
//! | `event_set` / `event_get` | `evt` | `evt[nc0:3] = 1` |
//! | `notification_init` | `nq` | `init notify[0] host size=0x10000 -> #15` |
//! | `wait` | `wait` | the condition and the outcome, never a timeout value |
//! | `nc_reset` | `reset` | one line per core reset |
//!
//! `device_info`, `mem_info`, `memory_usage` and `dma_queue_state` are pure queries: they are
//! counted ([`Recorder::calls`]) — `dma_queue_state` is also rendered — but `mem_info` is not,
//! since its answer is a physical address.
//!
//! # Descriptors the device consumes
//!
//! The recorder decodes descriptors from **ring memory**, read back through the wrapped backend
//! at the moment the device is asked to consume them, so it works whether the runtime wrote the
//! rings with `copy_to_device` or through a mapping, and on any backend:
//!
//! - at `dma_queue_init`, each ring's contents up to its first empty slot (a model's static
//!   rings, written before the queue is initialised);
//! - at a doorbell, the hardware exec queue's blocks (pairs up to the RX descriptor with
//!   `INT_EN`), one per increment; each pair's store is followed through: the 56-byte request
//!   is decoded, register stores show the value stored, a store to a tail-increment register
//!   consumes that many descriptors of the queue it names (the IO queue), and stores to a
//!   queue's ring registers re-point or rewind it — a re-pointed ring's contents are decoded;
//! - at `dma_queue_copy_start`, the descriptors made available.
//!
//! Descriptors that an engine kicks with a `write` to a tail-increment register during an
//! execution are the model's static or re-pointed rings, already rendered at init or re-point.
//!
//! # Symbolic addresses
//!
//! Allocations are numbered per core in allocation order, from 1 (`#N`; ids are never reused);
//! notification queues the backend allocates count as allocations of their core. An address
//! inside a live allocation renders `#N+0xOFF` (`nc1#N+0xOFF` if the allocation belongs to
//! another core than the event); register and on-chip addresses render by name
//! ([`nrt_hal::target::MmioReg`]); anything else renders `?0x…`, which a correct trace never
//! contains.
//!
//! # Determinism
//!
//! Each event carries (core, stream, per-stream sequence number); a [`Trace`] sorts by that
//! key. The per-stream order is the order of calls on the stream, so the trace is independent
//! of thread interleaving **provided one stream is driven by one thread at a time** — true of
//! the runtime: an LNC load stages each core on its own thread, and executions stage and ring
//! the doorbells of a logical core's cores in order under the core locks. Allocation ids are
//! assigned per core, so they too only depend on each core's own sequence of allocations.
//!
//! The recorder holds its state lock across every forwarded call except [`Hal::wait`] (which
//! may block until another thread's call), so the allocation table always matches the backend's.

mod rings;
mod symbols;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use nrt_hal::abi::MemAllocCategory;
use nrt_hal::exec_request::{RequestBuffer, REQUEST_BUFFER_SIZE};
use nrt_hal::hal::{
    AllocRequest, Mapping, MemLocation, NotificationQueue, NqRequest, QueueState, QueueStatus,
    RingSpec, WaitCondition,
};
use nrt_hal::isa::RECORD_SIZE;
use nrt_hal::target::reserved;
use nrt_hal::udma::RingGeometry;
use nrt_hal::{
    EventId, Hal, HalError, HalResult, MemHandle, NcIndex, QueueRef, SemaphoreId, Target,
};

use crate::render;
use crate::trace::{Core, Stream, Trace};
use rings::{QueueTrack, Ring};
pub use symbols::AllocRecord;
use symbols::State;

fn queue_stream(q: QueueRef) -> Stream {
    Stream::Queue {
        engine: q.engine.0,
        queue: q.queue.0,
    }
}

/// ` -> err <kind>` for a failed call, empty for a successful one. Only the error's kind (and
/// the refusing operation) is shown: messages may carry physical addresses or host times.
fn outcome<T>(r: &HalResult<T>) -> String {
    match r {
        Ok(_) => String::new(),
        Err(e) => format!(" -> err {}", error_kind(e)),
    }
}

fn error_kind(e: &HalError) -> String {
    match e {
        HalError::OutOfMemory { .. } => "out_of_memory".into(),
        HalError::InvalidArgument { op, .. } => format!("invalid_argument({op})"),
        HalError::DeviceFault { .. } => "device_fault".into(),
        HalError::Timeout { .. } => "timeout".into(),
        HalError::Unsupported { op } => format!("unsupported({op})"),
        HalError::Os { ioctl, errno, .. } => format!("os({ioctl}, errno {errno})"),
        HalError::DeviceLost(_) => "device_lost".into(),
    }
}

fn location(l: MemLocation) -> String {
    match l {
        MemLocation::Device { channel } => format!("ch{channel}"),
        MemLocation::Host => "host".into(),
    }
}

fn sem_name(nc: NcIndex, sem: SemaphoreId) -> String {
    format!("sem[{nc}:{}]", sem.0)
}

fn evt_name(nc: NcIndex, e: EventId) -> String {
    format!("evt[{nc}:{}]", e.0)
}

/// The recording HAL decorator. See the module docs.
pub struct Recorder {
    inner: Arc<dyn Hal>,
    target: Target,
    state: Mutex<State>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// Wraps `inner`. Asks it for its device info (not recorded) to learn the target's address
    /// map.
    pub fn new(inner: Arc<dyn Hal>) -> HalResult<Recorder> {
        let target = inner.device_info()?.target;
        Ok(Recorder {
            inner,
            target,
            state: Mutex::new(State {
                target,
                by_pa: BTreeMap::new(),
                by_handle: HashMap::new(),
                next_id: HashMap::new(),
                seq: HashMap::new(),
                events: Vec::new(),
                queues: BTreeMap::new(),
                calls: BTreeMap::new(),
            }),
        })
    }

    /// The device generation.
    pub fn target(&self) -> Target {
        self.target
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the events recorded since the last call, in canonical order. The allocation table
    /// and queue positions carry over, so consecutive phases (load, executions) keep their
    /// symbols.
    pub fn take(&self) -> Trace {
        Trace::new(std::mem::take(&mut self.lock().events))
    }

    /// How many times each HAL method was called (every call, rendered or not).
    pub fn calls(&self) -> BTreeMap<&'static str, u64> {
        self.lock().calls.clone()
    }

    /// The live allocations, by core then id.
    pub fn allocations(&self) -> Vec<AllocRecord> {
        let mut v: Vec<AllocRecord> = self.lock().by_pa.values().map(|a| a.rec).collect();
        v.sort_by_key(|a| (a.nc, a.id));
        v
    }

    /// Renders a `copy_to_device` into `h` (after it succeeded or failed with `res`).
    fn record_write(&self, st: &mut State, h: MemHandle, offset: u64, src: &[u8], res: &str) {
        let Some(a) = st.alloc_of(h).copied() else {
            st.emit(
                Core::Device,
                Stream::Mem,
                format!("write ?+{offset:#x} len={:#x}{res}", src.len()),
            );
            return;
        };
        let nc = a.rec.nc.0;
        let core = Core::Nc(nc);
        let name = st.alloc_name(&a, nc);
        let at = format!("{name}+{offset:#x}");
        match a.rec.category {
            Some(MemAllocCategory::CodeDevice | MemAllocCategory::CodeHost) => {
                let n = src.len() / RECORD_SIZE;
                st.emit(
                    core,
                    Stream::Code,
                    format!("write {at} len={:#x} records={n}{res}", src.len()),
                );
                let lines = render::code_lines(&name, offset, src, &st.view(nc));
                for l in lines {
                    st.emit(core, Stream::Code, l);
                }
            }
            Some(MemAllocCategory::DmaRingsDevice | MemAllocCategory::DmaRingsHost) => {
                st.emit(
                    core,
                    Stream::Mem,
                    format!("write {at} len={:#x} descriptors{res}", src.len()),
                );
            }
            Some(MemAllocCategory::MiscDevice | MemAllocCategory::MiscHost)
                if src.len() == REQUEST_BUFFER_SIZE + 4 =>
            {
                // A request slot: the request buffer and the IO-queue descriptor count word.
                let text = match RequestBuffer::parse(src) {
                    Ok(buf) => {
                        let count = u32::from_le_bytes(
                            src[REQUEST_BUFFER_SIZE..].try_into().expect("4 bytes"),
                        );
                        format!(
                            "write {at} {} io_pairs={count}",
                            render::exec_request(&buf, &st.view(nc))
                        )
                    }
                    Err(_) => format!("write {at} {}", render::data(src, &st.view(nc))),
                };
                st.emit(core, Stream::Mem, format!("{text}{res}"));
            }
            _ => {
                let text = format!("write {at} {}{res}", render::data(src, &st.view(nc)));
                st.emit(core, Stream::Mem, text);
            }
        }
    }
}

// Implemented by path, not imported, so that calls on a `Recorder` in this module and its tests
// resolve to `Hal` alone.
impl nrt_hal::HalLayer for Recorder {
    type Inner = dyn Hal;

    fn inner(&self) -> &Self::Inner {
        &*self.inner
    }

    fn on_call(&self, method: &'static str) {
        *self.lock().calls.entry(method).or_insert(0) += 1;
    }

    fn mem_alloc(&self, req: &AllocRequest) -> HalResult<MemHandle> {
        let mut st = self.lock();
        let r = self.inner.mem_alloc(req);
        let core = Core::Nc(req.nc.0);
        let mut what = format!(
            "{} {} size={:#x}",
            render::category(req.category),
            location(req.location),
            req.size
        );
        if req.align != 0 {
            what.push_str(&format!(" align={:#x}", req.align));
        }
        match r {
            Ok(h) => match self.inner.mem_info(h) {
                Ok(info) => {
                    let id = st.insert(req.nc, h, info.pa.raw(), info.size, Some(req.category));
                    st.emit(core, Stream::Mem, format!("alloc #{id} {what}"));
                }
                Err(e) => {
                    st.emit(
                        core,
                        Stream::Mem,
                        format!("alloc ? {what} (mem_info failed: {})", error_kind(&e)),
                    );
                }
            },
            Err(ref e) => {
                st.emit(
                    core,
                    Stream::Mem,
                    format!("alloc {what} -> err {}", error_kind(e)),
                );
            }
        }
        r
    }

    fn mem_free(&self, handle: MemHandle) -> HalResult<()> {
        let mut st = self.lock();
        let r = self.inner.mem_free(handle);
        let known = st.alloc_of(handle).copied();
        match known {
            Some(a) => {
                let res = outcome(&r);
                st.emit(
                    Core::Nc(a.rec.nc.0),
                    Stream::Mem,
                    format!("free #{}{res}", a.rec.id),
                );
                if r.is_ok() {
                    st.by_pa.remove(&a.rec.pa.raw());
                    st.by_handle.remove(&handle);
                    for t in st.queues.values_mut() {
                        for ring in &mut t.rings {
                            if ring.handle == Some(handle) {
                                ring.handle = None;
                            }
                        }
                    }
                }
            }
            None => {
                let res = outcome(&r);
                st.emit(Core::Device, Stream::Mem, format!("free ?{res}"));
            }
        }
        r
    }

    fn copy_to_device(&self, handle: MemHandle, offset: u64, src: &[u8]) -> HalResult<()> {
        let mut st = self.lock();
        let r = self.inner.copy_to_device(handle, offset, src);
        self.record_write(&mut st, handle, offset, src, &outcome(&r));
        r
    }

    fn copy_from_device(&self, handle: MemHandle, offset: u64, dst: &mut [u8]) -> HalResult<()> {
        let mut st = self.lock();
        let r = self.inner.copy_from_device(handle, offset, dst);
        let (core, name) = st.handle_ref(handle);
        let res = outcome(&r);
        st.emit(
            core,
            Stream::Mem,
            format!("read {name}+{offset:#x} len={:#x}{res}", dst.len()),
        );
        r
    }

    fn memset(&self, handle: MemHandle, offset: u64, value: u8, size: u64) -> HalResult<()> {
        let mut st = self.lock();
        let r = self.inner.memset(handle, offset, value, size);
        let (core, name) = st.handle_ref(handle);
        let res = outcome(&r);
        st.emit(
            core,
            Stream::Mem,
            format!("memset {name}+{offset:#x} len={size:#x} value={value:#x}{res}"),
        );
        r
    }

    unsafe fn map(&self, handle: MemHandle) -> HalResult<Mapping> {
        let mut st = self.lock();
        // SAFETY: forwarded unchanged; the caller upholds `Hal::map`'s contract for the
        // wrapped backend exactly as it would for this one.
        let r = unsafe { self.inner.map(handle) };
        let (core, name) = st.handle_ref(handle);
        let res = outcome(&r);
        st.emit(core, Stream::Mem, format!("map {name}{res}"));
        r
    }

    unsafe fn unmap(&self, mapping: Mapping) -> HalResult<()> {
        let mut st = self.lock();
        let handle = mapping.handle;
        // SAFETY: `mapping` came from `map` on this recorder, which returned the wrapped
        // backend's mapping unchanged.
        let r = unsafe { self.inner.unmap(mapping) };
        let (core, name) = st.handle_ref(handle);
        let res = outcome(&r);
        st.emit(core, Stream::Mem, format!("unmap {name}{res}"));
        r
    }

    fn dma_queue_init(&self, queue: QueueRef, tx: RingSpec, rx: RingSpec) -> HalResult<()> {
        let mut st = self.lock();
        let r = self.inner.dma_queue_init(queue, tx, rx);
        let core = Core::Nc(queue.nc.0);
        let stream = queue_stream(queue);
        let n = queue.nc.0;
        let counts = if tx.count == rx.count {
            format!("count={}", tx.count)
        } else {
            format!("tx_count={} rx_count={}", tx.count, rx.count)
        };
        let line = format!(
            "init tx={} rx={} {counts}{}",
            st.handle_name(tx.handle, n),
            st.handle_name(rx.handle, n),
            outcome(&r)
        );
        st.emit(core, stream, line);
        // The backend accepted the rings, so their sizes follow the udma rules.
        if let (Ok(true), Ok(tg), Ok(rg)) = (
            r.as_ref().map(|_| true),
            RingGeometry::new(tx.count),
            RingGeometry::new(rx.count),
        ) {
            let t = QueueTrack::new(Ring::new(tx.handle, tg), Ring::new(rx.handle, rg));
            st.queues.insert(queue, t);
            let lines = self.ring_contents(&st, n, Some(t.rings[0]), Some(t.rings[1]));
            for l in lines {
                st.emit(core, stream, l);
            }
        }
        r
    }

    fn dma_queue_copy_start(&self, queue: QueueRef, tx_count: u32, rx_count: u32) -> HalResult<()> {
        let mut st = self.lock();
        let core = Core::Nc(queue.nc.0);
        let at = st.emit(
            core,
            queue_stream(queue),
            format!("copy_start tx+={tx_count} rx+={rx_count}"),
        );
        // Decode before the device may start (ring memory does not change, but be exact).
        if let Some(t) = st.queues.get_mut(&queue) {
            let k = t.make_available(tx_count, rx_count);
            if k > 0 {
                self.consume(&mut st, queue, Some(k), 0);
            }
        }
        let r = self.inner.dma_queue_copy_start(queue, tx_count, rx_count);
        let res = outcome(&r);
        st.events[at].text.push_str(&res);
        r
    }

    fn dma_queue_state(&self, queue: QueueRef) -> HalResult<QueueState> {
        let mut st = self.lock();
        let r = self.inner.dma_queue_state(queue);
        let text = match &r {
            Ok(s) => {
                let status = match s.status {
                    QueueStatus::Disabled => "disabled",
                    QueueStatus::Enabled => "enabled",
                    QueueStatus::Aborted => "aborted",
                };
                format!(
                    "state -> {status} tx {}..{} rx {}..{}",
                    s.tx_head, s.tx_tail, s.rx_head, s.rx_tail
                )
            }
            Err(_) => format!("state{}", outcome(&r)),
        };
        st.emit(Core::Nc(queue.nc.0), queue_stream(queue), text);
        r
    }

    fn semaphore_read(&self, nc: NcIndex, sem: SemaphoreId) -> HalResult<i32> {
        let mut st = self.lock();
        let r = self.inner.semaphore_read(nc, sem);
        let text = match &r {
            Ok(v) => format!("{} read -> {v}", sem_name(nc, sem)),
            Err(_) => format!("{} read{}", sem_name(nc, sem), outcome(&r)),
        };
        st.emit(Core::Nc(nc.0), Stream::Sem, text);
        r
    }

    fn semaphore_write(&self, nc: NcIndex, sem: SemaphoreId, value: i32) -> HalResult<()> {
        let mut st = self.lock();
        let r = self.inner.semaphore_write(nc, sem, value);
        let res = outcome(&r);
        st.emit(
            Core::Nc(nc.0),
            Stream::Sem,
            format!("{} = {value}{res}", sem_name(nc, sem)),
        );
        r
    }

    fn semaphore_increment(&self, nc: NcIndex, sem: SemaphoreId, amount: u32) -> HalResult<()> {
        let mut st = self.lock();
        if sem == reserved::INFERENCE_START {
            // The doorbell: decode the blocks the sequencer will run before it can run them.
            let q = QueueRef::new(nc, reserved::HW_EXEC_ENGINE, reserved::HW_EXEC_QUEUE);
            for _ in 0..amount {
                self.consume(&mut st, q, None, 0);
            }
            let r = self.inner.semaphore_increment(nc, sem, amount);
            let res = outcome(&r);
            st.emit(Core::Nc(nc.0), Stream::Doorbell, format!("+{amount}{res}"));
            return r;
        }
        let r = self.inner.semaphore_increment(nc, sem, amount);
        let res = outcome(&r);
        st.emit(
            Core::Nc(nc.0),
            Stream::Sem,
            format!("{} += {amount}{res}", sem_name(nc, sem)),
        );
        r
    }

    fn semaphore_decrement(&self, nc: NcIndex, sem: SemaphoreId, amount: u32) -> HalResult<()> {
        let mut st = self.lock();
        let r = self.inner.semaphore_decrement(nc, sem, amount);
        let res = outcome(&r);
        st.emit(
            Core::Nc(nc.0),
            Stream::Sem,
            format!("{} -= {amount}{res}", sem_name(nc, sem)),
        );
        r
    }

    fn event_set(&self, nc: NcIndex, event: EventId, value: u32) -> HalResult<()> {
        let mut st = self.lock();
        let r = self.inner.event_set(nc, event, value);
        let res = outcome(&r);
        st.emit(
            Core::Nc(nc.0),
            Stream::Evt,
            format!("{} = {value}{res}", evt_name(nc, event)),
        );
        r
    }

    fn event_get(&self, nc: NcIndex, event: EventId) -> HalResult<u32> {
        let mut st = self.lock();
        let r = self.inner.event_get(nc, event);
        let text = match &r {
            Ok(v) => format!("{} read -> {v}", evt_name(nc, event)),
            Err(_) => format!("{} read{}", evt_name(nc, event), outcome(&r)),
        };
        st.emit(Core::Nc(nc.0), Stream::Evt, text);
        r
    }

    fn notification_init(&self, req: &NqRequest) -> HalResult<NotificationQueue> {
        let mut st = self.lock();
        let r = self.inner.notification_init(req);
        let what = format!(
            "init {}[{}] {} size={:#x}",
            format!("{:?}", req.nq_type).to_ascii_lowercase(),
            req.engine_index,
            location(req.location),
            req.size
        );
        let text = match &r {
            Ok(q) => {
                let existing = st
                    .alloc_of(q.handle)
                    .is_some_and(|a| a.rec.pa == q.pa && a.rec.category.is_none());
                if existing {
                    format!(
                        "{what} -> {} (existing)",
                        st.handle_name(q.handle, req.nc.0)
                    )
                } else {
                    let size = self
                        .inner
                        .mem_info(q.handle)
                        .map(|i| i.size)
                        .unwrap_or(q.size as u64);
                    let id = st.insert(req.nc, q.handle, q.pa.raw(), size, None);
                    format!("{what} -> #{id}")
                }
            }
            Err(_) => format!("{what}{}", outcome(&r)),
        };
        st.emit(Core::Nc(req.nc.0), Stream::Nq, text);
        r
    }

    fn nc_reset(&self, nc_mask: u32) -> HalResult<()> {
        let mut st = self.lock();
        let r = self.inner.nc_reset(nc_mask);
        let res = outcome(&r);
        for n in 0..32 {
            if nc_mask & (1 << n) != 0 {
                st.emit(Core::Nc(n), Stream::Reset, format!("nc_reset{res}"));
                if r.is_ok() {
                    st.queues.retain(|q, _| q.nc.0 != n);
                }
            }
        }
        r
    }

    fn wait(&self, cond: &WaitCondition, timeout: Duration) -> HalResult<()> {
        // Not under the lock: a wait may need another thread's call to complete.
        let r = self.inner.wait(cond, timeout);
        let mut st = self.lock();
        let (core, what) = match *cond {
            WaitCondition::Semaphore {
                nc,
                sem,
                cmp,
                value,
            } => (
                Core::Nc(nc.0),
                format!("{} {} {value}", sem_name(nc, sem), cmp.symbol()),
            ),
            WaitCondition::Memory32 {
                handle,
                offset,
                cmp,
                value,
            } => {
                let (core, name) = st.handle_ref(handle);
                (
                    core,
                    format!("[{name}+{offset:#x}] {} {value:#x}", cmp.symbol()),
                )
            }
        };
        let res = match &r {
            Ok(()) => " -> ok".to_string(),
            Err(_) => outcome(&r),
        };
        st.emit(core, Stream::Wait, format!("{what}{res}"));
        r
    }
}
