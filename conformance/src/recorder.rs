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

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use nrt_hal::abi::MemAllocCategory;
use nrt_hal::exec_request::{RequestBuffer, REQUEST_BUFFER_SIZE};
use nrt_hal::hal::{
    AllocRequest, CoreMemUsage, DeviceInfo, Mapping, MemInfo, MemLocation, NotificationQueue,
    NqRequest, QueueState, QueueStatus, RingSpec, WaitCondition,
};
use nrt_hal::isa::RECORD_SIZE;
use nrt_hal::target::{reserved, seq, udma_regs, Direction, MmioReg, QueueReg};
use nrt_hal::udma::{next_ring_id, LenCtrlFlags, UdmaDesc, DESC_SIZE, INITIAL_RING_ID};
use nrt_hal::{
    DeviceAddr, EventId, Hal, HalError, HalResult, MemHandle, NcIndex, QueueRef, SemaphoreId,
    Target,
};

use crate::render::{self, Region, Symbols};
use crate::trace::{Core, Event, Stream, Trace};

/// A live allocation as the recorder knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocRecord {
    /// The core it is accounted to.
    pub nc: NcIndex,
    /// Its symbolic id on that core (`#id`).
    pub id: u32,
    /// Its physical address (never rendered; exposed for tests of address independence).
    pub pa: DeviceAddr,
    /// Its size in bytes as the backend reports it.
    pub size: u64,
    /// Its accounting category, `None` for a notification queue the backend allocated.
    pub category: Option<MemAllocCategory>,
}

#[derive(Debug, Clone, Copy)]
struct Alloc {
    rec: AllocRecord,
    handle: MemHandle,
}

/// One ring of a tracked queue: where it is and where the consumer stands.
#[derive(Debug, Clone, Copy)]
struct Ring {
    /// The allocation holding it (`None` once freed, or if re-pointed somewhere unknown).
    handle: Option<MemHandle>,
    /// Byte offset of slot 0 inside the allocation.
    offset: u64,
    count: u32,
    /// Next slot the device consumes.
    index: u32,
    /// Ring id of the current pass.
    ring_id: u8,
    /// Descriptors made available and not yet decoded.
    pending: u32,
}

impl Ring {
    fn new(handle: MemHandle, count: u32) -> Ring {
        Ring {
            handle: Some(handle),
            offset: 0,
            count,
            index: 0,
            ring_id: INITIAL_RING_ID,
            pending: 0,
        }
    }

    fn advance(&mut self) {
        self.index += 1;
        if self.index >= self.count.max(1) {
            self.index = 0;
            self.ring_id = next_ring_id(self.ring_id);
        }
    }
}

/// Ring-register stores seen since the ring's last reset (they take effect at the reset).
#[derive(Debug, Clone, Copy, Default)]
struct Shadow {
    lo: Option<u32>,
    hi: Option<u32>,
    len: Option<u32>,
    reset: bool,
}

#[derive(Debug, Clone, Copy)]
struct QueueTrack {
    /// TX then RX.
    rings: [Ring; 2],
    shadow: [Shadow; 2],
}

fn di(dir: Direction) -> usize {
    match dir {
        Direction::Tx => 0,
        Direction::Rx => 1,
    }
}

enum Action {
    TailInc(QueueRef, Direction, u32),
    Reg(QueueRef, Direction, QueueReg, u32),
}

#[derive(Debug)]
struct State {
    target: Target,
    by_pa: BTreeMap<u64, Alloc>,
    by_handle: HashMap<MemHandle, u64>,
    next_id: HashMap<u32, u32>,
    seq: HashMap<(Core, Stream), u64>,
    events: Vec<Event>,
    queues: BTreeMap<QueueRef, QueueTrack>,
    calls: BTreeMap<&'static str, u64>,
}

/// The symbols of a [`State`] as seen from one core.
struct View<'a> {
    st: &'a State,
    nc: u32,
}

impl Symbols for View<'_> {
    fn sym(&self, addr: u64) -> String {
        if let Some(a) = self.st.alloc_at(addr) {
            return format!(
                "{}+{:#x}",
                self.st.alloc_name(a, self.nc),
                addr - a.rec.pa.raw()
            );
        }
        match self.st.target.decode_mmio(DeviceAddr::new(addr)) {
            Some(r) => r.to_string(),
            None => format!("?{addr:#x}"),
        }
    }

    fn region(&self, addr: u64) -> Region {
        if let Some(a) = self.st.alloc_at(addr) {
            return Region::Alloc(a.rec.pa.raw());
        }
        match self.st.target.decode_mmio(DeviceAddr::new(addr)) {
            Some(MmioReg::Sbuf { nc, .. }) => Region::Sbuf(nc.0),
            Some(MmioReg::Psum { nc, .. }) => Region::Psum(nc.0),
            Some(_) => Region::Register,
            None => Region::Unknown,
        }
    }
}

impl State {
    fn view(&self, nc: u32) -> View<'_> {
        View { st: self, nc }
    }

    fn alloc_at(&self, addr: u64) -> Option<&Alloc> {
        let (_, a) = self.by_pa.range(..=addr).next_back()?;
        (addr - a.rec.pa.raw() < a.rec.size).then_some(a)
    }

    fn alloc_of(&self, h: MemHandle) -> Option<&Alloc> {
        self.by_handle.get(&h).and_then(|pa| self.by_pa.get(pa))
    }

    fn alloc_name(&self, a: &Alloc, from: u32) -> String {
        if a.rec.nc.0 == from {
            format!("#{}", a.rec.id)
        } else {
            format!("{}#{}", a.rec.nc, a.rec.id)
        }
    }

    /// `#N` of a handle from core `from`'s point of view, `?` if unknown.
    fn handle_name(&self, h: MemHandle, from: u32) -> String {
        self.alloc_of(h)
            .map(|a| self.alloc_name(a, from))
            .unwrap_or_else(|| "?".to_string())
    }

    /// The core an allocation belongs to and its `#N` name from that core (`dev` and `?` for
    /// a handle the recorder does not know).
    fn handle_ref(&self, h: MemHandle) -> (Core, String) {
        match self.alloc_of(h) {
            Some(a) => (Core::Nc(a.rec.nc.0), format!("#{}", a.rec.id)),
            None => (Core::Device, "?".to_string()),
        }
    }

    fn insert(
        &mut self,
        nc: NcIndex,
        handle: MemHandle,
        pa: u64,
        size: u64,
        category: Option<MemAllocCategory>,
    ) -> u32 {
        // Anything the new allocation overlaps is stale (freed behind our back, e.g. a
        // notification queue released by a core reset).
        let stale: Vec<u64> = self
            .by_pa
            .range(..pa.saturating_add(size.max(1)))
            .filter(|(_, a)| a.rec.pa.raw() + a.rec.size > pa)
            .map(|(k, _)| *k)
            .collect();
        for k in stale {
            if let Some(a) = self.by_pa.remove(&k) {
                if self.by_handle.get(&a.handle) == Some(&k) {
                    self.by_handle.remove(&a.handle);
                }
            }
        }
        if let Some(old) = self.by_handle.remove(&handle) {
            self.by_pa.remove(&old);
        }
        let next = self.next_id.entry(nc.0).or_insert(0);
        *next += 1;
        let id = *next;
        self.by_pa.insert(
            pa,
            Alloc {
                rec: AllocRecord {
                    nc,
                    id,
                    pa: DeviceAddr::new(pa),
                    size,
                    category,
                },
                handle,
            },
        );
        self.by_handle.insert(handle, pa);
        id
    }

    fn emit(&mut self, core: Core, stream: Stream, text: String) -> usize {
        let n = self.seq.entry((core, stream)).or_insert(0);
        let seq = *n;
        *n += 1;
        self.events.push(Event {
            core,
            stream,
            seq,
            text,
        });
        self.events.len() - 1
    }

    fn count(&mut self, call: &'static str) {
        *self.calls.entry(call).or_insert(0) += 1;
    }
}

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

/// Reads `len` bytes at device address `addr` through the backend, if a live allocation holds
/// them all.
fn read_addr(inner: &dyn Hal, st: &State, addr: u64, len: usize) -> Option<Vec<u8>> {
    let a = st.alloc_at(addr)?;
    let off = addr - a.rec.pa.raw();
    if off + len as u64 > a.rec.size {
        return None;
    }
    let mut buf = vec![0u8; len];
    inner.copy_from_device(a.handle, off, &mut buf).ok()?;
    Some(buf)
}

fn read_desc(inner: &dyn Hal, ring: &Ring, index: u32) -> Option<UdmaDesc> {
    let mut b = [0u8; DESC_SIZE];
    inner
        .copy_from_device(
            ring.handle?,
            ring.offset + index as u64 * DESC_SIZE as u64,
            &mut b,
        )
        .ok()?;
    Some(UdmaDesc::from_bytes(&b))
}

/// A ring's descriptors from slot 0 up to (not including) its first all-zero slot.
fn read_until_empty(inner: &dyn Hal, ring: &Ring) -> Vec<UdmaDesc> {
    const CHUNK: u32 = 64;
    let mut out = Vec::new();
    let Some(h) = ring.handle else {
        return out;
    };
    let mut at = 0u32;
    while at < ring.count {
        let n = CHUNK.min(ring.count - at);
        let mut buf = vec![0u8; n as usize * DESC_SIZE];
        if inner
            .copy_from_device(h, ring.offset + at as u64 * DESC_SIZE as u64, &mut buf)
            .is_err()
        {
            break;
        }
        for c in buf.chunks_exact(DESC_SIZE) {
            if c.iter().all(|b| *b == 0) {
                return out;
            }
            out.push(UdmaDesc::from_bytes(c.try_into().expect("16 bytes")));
        }
        at += n;
    }
    out
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

    /// The wrapped backend.
    pub fn inner(&self) -> &Arc<dyn Hal> {
        &self.inner
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

    /// The store a pair makes, followed through: the suffix for the RX line (the value stored
    /// into a register), extra lines (a decoded request), and what the store does to a queue.
    fn store_effect(
        &self,
        st: &State,
        nc: u32,
        src: u64,
        dst: u64,
        len: u32,
    ) -> (String, Vec<String>, Option<Action>) {
        let inner = &*self.inner;
        let reg = self.target.decode_mmio(DeviceAddr::new(dst));
        match reg {
            Some(MmioReg::Sequencer { offset, .. })
                if offset == seq::EXEC_REQUEST && len as usize == REQUEST_BUFFER_SIZE =>
            {
                let line = read_addr(inner, st, src, REQUEST_BUFFER_SIZE)
                    .and_then(|b| RequestBuffer::parse(&b).ok())
                    .map(|b| render::exec_request(&b, &st.view(nc)))
                    .unwrap_or_else(|| "exec_request <unreadable source>".into());
                (String::new(), vec![line], None)
            }
            Some(
                r @ (MmioReg::Event { .. }
                | MmioReg::Semaphore { .. }
                | MmioReg::Sequencer { .. }
                | MmioReg::TailIncrement { .. }
                | MmioReg::QueueRegister { .. }),
            ) if len == 4 => {
                let Some(v) = read_addr(inner, st, src, 4)
                    .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
                else {
                    return (" <- ?".into(), Vec::new(), None);
                };
                match r {
                    MmioReg::TailIncrement { queue, dir } => (
                        format!(" <- {v:#x}"),
                        Vec::new(),
                        Some(Action::TailInc(queue, dir, v)),
                    ),
                    MmioReg::QueueRegister { queue, dir, reg } => {
                        // Base halves are halves of a physical address: the `repoint` line
                        // that follows the reset names the ring symbolically instead.
                        let suffix = match reg {
                            QueueReg::BaseLow | QueueReg::BaseHigh => String::new(),
                            _ => format!(" <- {v:#x}"),
                        };
                        (suffix, Vec::new(), Some(Action::Reg(queue, dir, reg, v)))
                    }
                    _ => (format!(" <- {v:#x}"), Vec::new(), None),
                }
            }
            _ => (String::new(), Vec::new(), None),
        }
    }

    /// Decodes what queue `q` consumes: `count` pairs, or (`count == None`) one sequencer
    /// block — pairs up to the first RX descriptor with `INT_EN`.
    fn consume(&self, st: &mut State, q: QueueRef, count: Option<u32>, depth: u32) {
        let inner = &*self.inner;
        let core = Core::Nc(q.nc.0);
        let stream = queue_stream(q);
        let Some(track) = st.queues.get(&q).copied() else {
            st.emit(
                core,
                stream,
                "<queue not initialised: nothing to consume>".into(),
            );
            return;
        };
        let max = count.unwrap_or(track.rings[0].count);
        let mut touched: Vec<QueueRef> = Vec::new();
        for _ in 0..max {
            let t = st.queues[&q];
            let (tx, rx) = (t.rings[0], t.rings[1]);
            let (Some(td), Some(rd)) = (
                read_desc(inner, &tx, tx.index),
                read_desc(inner, &rx, rx.index),
            ) else {
                st.emit(core, stream, "<ring memory unreadable>".into());
                break;
            };
            if td.ring_id() != tx.ring_id || rd.ring_id() != rx.ring_id {
                st.emit(
                    core,
                    stream,
                    format!(
                        "<not staged: tx[{}] ring id {} (expected {}), rx[{}] ring id {} (expected {})>",
                        tx.index,
                        td.ring_id(),
                        tx.ring_id,
                        rx.index,
                        rd.ring_id(),
                        rx.ring_id
                    ),
                );
                break;
            }
            let (suffix, extra, action) =
                self.store_effect(st, q.nc.0, td.buf_ptr, rd.buf_ptr, rd.byte_len());
            let v = st.view(q.nc.0);
            let tx_text = render::tx_line(&tx.index.to_string(), &td, &v);
            let rx_text = format!(
                "{}{suffix}",
                render::rx_line(&rx.index.to_string(), &rd, &v)
            );
            st.emit(core, stream, tx_text);
            st.emit(core, stream, rx_text);
            for e in extra {
                st.emit(core, stream, format!("  {e}"));
            }
            if let Some(t) = st.queues.get_mut(&q) {
                t.rings[0].advance();
                t.rings[1].advance();
            }
            match action {
                Some(Action::TailInc(q2, dir, n)) if depth < 4 => {
                    if let Some(t2) = st.queues.get_mut(&q2) {
                        t2.rings[di(dir)].pending += n;
                        let k = t2.rings[0].pending.min(t2.rings[1].pending);
                        if k > 0 {
                            t2.rings[0].pending -= k;
                            t2.rings[1].pending -= k;
                            self.consume(st, q2, Some(k), depth + 1);
                        }
                    }
                }
                Some(Action::Reg(q2, dir, reg, value)) => {
                    if let Some(t2) = st.queues.get_mut(&q2) {
                        let s = &mut t2.shadow[di(dir)];
                        match reg {
                            QueueReg::BaseLow => s.lo = Some(value),
                            QueueReg::BaseHigh => s.hi = Some(value),
                            QueueReg::Length => s.len = Some(value),
                            QueueReg::SwCtrl => {
                                if value & udma_regs::Q_SW_CTRL_RESET != 0 {
                                    s.reset = true;
                                    if !touched.contains(&q2) {
                                        touched.push(q2);
                                    }
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
            if count.is_none()
                && LenCtrlFlags::from_bits_truncate(rd.len_ctrl).contains(LenCtrlFlags::INT_EN)
            {
                break;
            }
        }
        for q2 in touched {
            self.flush_resets(st, q2);
        }
    }

    /// Applies the ring resets stored to `q`'s registers: rewinds, and re-points (whose new
    /// ring contents are decoded).
    fn flush_resets(&self, st: &mut State, q: QueueRef) {
        let core = Core::Nc(q.nc.0);
        let stream = queue_stream(q);
        let Some(mut t) = st.queues.get(&q).copied() else {
            return;
        };
        let mut rewound = Vec::new();
        let mut repointed: Vec<(Direction, String)> = Vec::new();
        for dir in [Direction::Tx, Direction::Rx] {
            let d = di(dir);
            let s = t.shadow[d];
            if !s.reset {
                continue;
            }
            rewound.push(dir.to_string());
            let r = &mut t.rings[d];
            if let (Some(lo), Some(hi)) = (s.lo, s.hi) {
                let base = DeviceAddr::from_lo_hi(lo, hi).raw();
                match st.alloc_at(base) {
                    Some(a) => {
                        r.handle = Some(a.handle);
                        r.offset = base - a.rec.pa.raw();
                    }
                    None => r.handle = None,
                }
                repointed.push((dir, st.view(q.nc.0).sym(base)));
            }
            if let Some(len) = s.len {
                r.count = len;
            }
            r.index = 0;
            r.ring_id = INITIAL_RING_ID;
            r.pending = 0;
            t.shadow[d] = Shadow::default();
        }
        st.queues.insert(q, t);
        st.emit(core, stream, format!("rewind {}", rewound.join(" ")));
        if repointed.is_empty() {
            return;
        }
        let mut line = String::from("repoint");
        for (dir, sym) in &repointed {
            line.push_str(&format!(" {dir}={sym}"));
        }
        line.push_str(&format!(" count={}", t.rings[0].count));
        if t.rings[1].count != t.rings[0].count {
            line.push_str(&format!(" rx_count={}", t.rings[1].count));
        }
        st.emit(core, stream, line);
        let has = |d: Direction| repointed.iter().any(|(x, _)| *x == d);
        let lines = self.ring_contents(
            st,
            q.nc.0,
            has(Direction::Tx).then_some(t.rings[0]),
            has(Direction::Rx).then_some(t.rings[1]),
        );
        for l in lines {
            st.emit(core, stream, l);
        }
    }

    /// The contents of a queue's rings from slot 0 up to the first empty slot, as lines:
    /// arithmetic runs of three or more pairs as one line per ring (`tx[0..=127] … step=+0x800`),
    /// other pairs one line per descriptor, register stores with the value stored.
    fn ring_contents(
        &self,
        st: &State,
        nc: u32,
        tx: Option<Ring>,
        rx: Option<Ring>,
    ) -> Vec<String> {
        let inner = &*self.inner;
        let txd = tx.map(|r| read_until_empty(inner, &r));
        let rxd = rx.map(|r| read_until_empty(inner, &r));
        let v = st.view(nc);
        let sides: Vec<(&[UdmaDesc], bool)> = [(txd.as_deref(), true), (rxd.as_deref(), false)]
            .into_iter()
            .filter_map(|(d, is_tx)| d.map(|d| (d, is_tx)))
            .collect();
        let n = sides.iter().map(|(d, _)| d.len()).max().unwrap_or(0);
        let runnable = |d: &UdmaDesc| {
            matches!(
                v.region(d.buf_ptr),
                Region::Alloc(_) | Region::Sbuf(_) | Region::Psum(_)
            )
        };
        // Whether pair `j` continues the run that starts at `i` on every side.
        let continues = |i: usize, j: usize| {
            sides.iter().all(|(d, _)| {
                if j >= d.len() || !runnable(&d[j]) {
                    return false;
                }
                let (a, b) = (&d[i], &d[j]);
                if a.len_ctrl != b.len_ctrl
                    || a.meta_ctrl != b.meta_ctrl
                    || v.region(a.buf_ptr) != v.region(b.buf_ptr)
                {
                    return false;
                }
                j < i + 2 || {
                    let s0 = d[i + 1].buf_ptr as i128 - d[i].buf_ptr as i128;
                    let s = d[j].buf_ptr as i128 - d[j - 1].buf_ptr as i128;
                    s == s0
                }
            })
        };
        let mut out = Vec::new();
        let mut i = 0;
        while i < n {
            let mut j = i + 1;
            if sides.iter().all(|(d, _)| i < d.len() && runnable(&d[i])) {
                while j < n && continues(i, j) {
                    j += 1;
                }
            }
            if j - i >= 3 {
                let label = format!("{i}..={}", j - 1);
                for (d, is_tx) in &sides {
                    let s = render::step(d[i + 1].buf_ptr as i128 - d[i].buf_ptr as i128);
                    let line = if *is_tx {
                        render::tx_line(&label, &d[i], &v)
                    } else {
                        render::rx_line(&label, &d[i], &v)
                    };
                    out.push(format!("{line} step={s}"));
                }
                i = j;
                continue;
            }
            let label = i.to_string();
            let src = txd.as_ref().and_then(|d| d.get(i)).map(|d| d.buf_ptr);
            for (d, is_tx) in &sides {
                let Some(desc) = d.get(i) else { continue };
                if *is_tx {
                    out.push(render::tx_line(&label, desc, &v));
                } else {
                    let mut line = render::rx_line(&label, desc, &v);
                    if let Some(src) = src {
                        if v.region(desc.buf_ptr) == Region::Register {
                            line.push_str(
                                &self
                                    .store_effect(st, nc, src, desc.buf_ptr, desc.byte_len())
                                    .0,
                            );
                        }
                    }
                    out.push(line);
                }
            }
            i += 1;
        }
        out
    }
}

impl Hal for Recorder {
    fn device_info(&self) -> HalResult<DeviceInfo> {
        self.lock().count("device_info");
        self.inner.device_info()
    }

    fn mem_alloc(&self, req: &AllocRequest) -> HalResult<MemHandle> {
        let mut st = self.lock();
        st.count("mem_alloc");
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
        st.count("mem_free");
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

    fn mem_info(&self, handle: MemHandle) -> HalResult<MemInfo> {
        self.lock().count("mem_info");
        self.inner.mem_info(handle)
    }

    fn copy_to_device(&self, handle: MemHandle, offset: u64, src: &[u8]) -> HalResult<()> {
        let mut st = self.lock();
        st.count("copy_to_device");
        let r = self.inner.copy_to_device(handle, offset, src);
        self.record_write(&mut st, handle, offset, src, &outcome(&r));
        r
    }

    fn copy_from_device(&self, handle: MemHandle, offset: u64, dst: &mut [u8]) -> HalResult<()> {
        let mut st = self.lock();
        st.count("copy_from_device");
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
        st.count("memset");
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
        st.count("map");
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
        st.count("unmap");
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
        st.count("dma_queue_init");
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
        if r.is_ok() {
            let t = QueueTrack {
                rings: [
                    Ring::new(tx.handle, tx.count),
                    Ring::new(rx.handle, rx.count),
                ],
                shadow: [Shadow::default(); 2],
            };
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
        st.count("dma_queue_copy_start");
        let core = Core::Nc(queue.nc.0);
        let at = st.emit(
            core,
            queue_stream(queue),
            format!("copy_start tx+={tx_count} rx+={rx_count}"),
        );
        // Decode before the device may start (ring memory does not change, but be exact).
        if let Some(t) = st.queues.get_mut(&queue) {
            t.rings[0].pending += tx_count;
            t.rings[1].pending += rx_count;
            let k = t.rings[0].pending.min(t.rings[1].pending);
            if k > 0 {
                t.rings[0].pending -= k;
                t.rings[1].pending -= k;
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
        st.count("dma_queue_state");
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
        st.count("semaphore_read");
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
        st.count("semaphore_write");
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
        st.count("semaphore_increment");
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
        st.count("semaphore_decrement");
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
        st.count("event_set");
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
        st.count("event_get");
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
        st.count("notification_init");
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
        st.count("nc_reset");
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
        self.lock().count("wait");
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
            WaitCondition::Idle { nc: Some(nc) } => (Core::Nc(nc.0), "idle".to_string()),
            WaitCondition::Idle { nc: None } => (Core::Device, "idle".to_string()),
        };
        let res = match &r {
            Ok(()) => " -> ok".to_string(),
            Err(_) => outcome(&r),
        };
        st.emit(core, Stream::Wait, format!("{what}{res}"));
        r
    }

    fn memory_usage(&self, nc: NcIndex) -> HalResult<CoreMemUsage> {
        self.lock().count("memory_usage");
        self.inner.memory_usage(nc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrt_hal::udma::{RxDesc, TxDesc, TxMeta};
    use nrt_hal::{DmaEngine, QueueId};
    use nrt_sim::{Sim, SimConfig};

    fn recorder(target: Target) -> Recorder {
        Recorder::new(Arc::new(Sim::new(SimConfig::new(target)))).unwrap()
    }

    fn alloc(r: &Recorder, nc: u32, size: u64, category: MemAllocCategory) -> MemHandle {
        r.mem_alloc(&AllocRequest {
            size,
            align: 0,
            location: MemLocation::Device { channel: nc },
            nc: NcIndex(nc),
            category,
        })
        .unwrap()
    }

    fn pair(r: &Recorder, tx: MemHandle, rx: MemHandle, slot: u64, src: u64, dst: u64, len: u64) {
        let t = TxDesc::new(
            len,
            1,
            LenCtrlFlags::FIRST | LenCtrlFlags::LAST,
            TxMeta::M2M,
            DeviceAddr::new(src),
        )
        .unwrap();
        let d = RxDesc::new(len, 1, LenCtrlFlags::empty(), DeviceAddr::new(dst)).unwrap();
        r.copy_to_device(tx, slot * 16, &t.to_bytes()).unwrap();
        r.copy_to_device(rx, slot * 16, &d.to_bytes()).unwrap();
    }

    fn pa(r: &Recorder, h: MemHandle) -> u64 {
        r.mem_info(h).unwrap().pa.raw()
    }

    #[test]
    fn static_rings_are_decoded_at_init_and_at_copy_start() {
        let r = recorder(Target::Trn1);
        let t = Target::Trn1;
        let one = alloc(&r, 0, 4096, MemAllocCategory::MiscDevice);
        r.copy_to_device(one, 0, &1u32.to_le_bytes()).unwrap();
        let src = alloc(&r, 0, 4096, MemAllocCategory::TensorsDevice);
        let dst = alloc(&r, 0, 4096, MemAllocCategory::TensorsDevice);
        let tx = alloc(&r, 0, 512, MemAllocCategory::DmaRingsDevice);
        let rx = alloc(&r, 0, 512, MemAllocCategory::DmaRingsDevice);
        let (s, d) = (pa(&r, src), pa(&r, dst));
        for i in 0..3 {
            pair(&r, tx, rx, i, s + 0x100 * i, d + 0x100 * i, 0x100);
        }
        let inc = t
            .semaphore_addr(
                NcIndex(0),
                SemaphoreId(5),
                nrt_hal::target::SemWindow::Increment,
            )
            .unwrap();
        pair(&r, tx, rx, 3, pa(&r, one), inc.raw(), 4);
        let q = QueueRef::new(NcIndex(0), DmaEngine(1), QueueId(2));
        r.dma_queue_init(
            q,
            RingSpec {
                handle: tx,
                count: 32,
            },
            RingSpec {
                handle: rx,
                count: 32,
            },
        )
        .unwrap();
        r.dma_queue_copy_start(q, 4, 4).unwrap();
        r.wait(
            &WaitCondition::Idle {
                nc: Some(NcIndex(0)),
            },
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(r.semaphore_read(NcIndex(0), SemaphoreId(5)).unwrap(), 1);
        let text = r.take().text();
        let q_lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("nc0 q e1.q2 "))
            .collect();
        assert_eq!(
            q_lines,
            vec![
                "nc0 q e1.q2 init tx=#4 rx=#5 count=32",
                "nc0 q e1.q2 tx[0..=2] len=256 id=1 FIRST|LAST meta=m2m src=#2+0x0 step=+0x100",
                "nc0 q e1.q2 rx[0..=2] len=256 id=1 dst=#3+0x0 step=+0x100",
                "nc0 q e1.q2 tx[3] len=4 id=1 FIRST|LAST meta=m2m src=#1+0x0",
                "nc0 q e1.q2 rx[3] len=4 id=1 dst=sem_inc[nc0:5] <- 0x1",
                "nc0 q e1.q2 copy_start tx+=4 rx+=4",
                "nc0 q e1.q2 tx[0] len=256 id=1 FIRST|LAST meta=m2m src=#2+0x0",
                "nc0 q e1.q2 rx[0] len=256 id=1 dst=#3+0x0",
                "nc0 q e1.q2 tx[1] len=256 id=1 FIRST|LAST meta=m2m src=#2+0x100",
                "nc0 q e1.q2 rx[1] len=256 id=1 dst=#3+0x100",
                "nc0 q e1.q2 tx[2] len=256 id=1 FIRST|LAST meta=m2m src=#2+0x200",
                "nc0 q e1.q2 rx[2] len=256 id=1 dst=#3+0x200",
                "nc0 q e1.q2 tx[3] len=4 id=1 FIRST|LAST meta=m2m src=#1+0x0",
                "nc0 q e1.q2 rx[3] len=4 id=1 dst=sem_inc[nc0:5] <- 0x1",
            ]
        );
        assert!(text.contains("nc0 wait idle -> ok\n"), "{text}");
        assert!(text.contains("nc0 sem sem[nc0:5] read -> 1\n"), "{text}");
        assert!(text.contains("nc0 mem write #1+0x0 [0x1]\n"), "{text}");
        assert!(
            text.contains("nc0 mem write #4+0x30 len=0x10 descriptors\n"),
            "{text}"
        );
        assert!(!text.contains('?'), "{text}");
    }

    #[test]
    fn a_doorbell_with_nothing_staged_says_so() {
        let r = recorder(Target::Trn1);
        let tx = alloc(&r, 0, 512, MemAllocCategory::DmaRingsDevice);
        let rx = alloc(&r, 0, 512, MemAllocCategory::DmaRingsDevice);
        let q = QueueRef::new(
            NcIndex(0),
            reserved::HW_EXEC_ENGINE,
            reserved::HW_EXEC_QUEUE,
        );
        r.dma_queue_init(
            q,
            RingSpec {
                handle: tx,
                count: 32,
            },
            RingSpec {
                handle: rx,
                count: 32,
            },
        )
        .unwrap();
        r.semaphore_increment(NcIndex(0), reserved::INFERENCE_START, 1)
            .unwrap();
        let text = r.take().text();
        assert!(text.contains("nc0 doorbell +1\n"), "{text}");
        assert!(
            text.contains("nc0 q e0.q13 <not staged: tx[0] ring id 0 (expected 1), rx[0] ring id 0 (expected 1)>\n"),
            "{text}"
        );
    }

    #[test]
    fn every_other_call_is_rendered_without_handles_or_addresses() {
        let r = recorder(Target::Trn1);
        let nc = NcIndex(1);
        let h = alloc(&r, 1, 100, MemAllocCategory::TensorsDevice);
        let mut buf = [0u8; 8];
        r.copy_from_device(h, 8, &mut buf).unwrap();
        r.memset(h, 0, 0xab, 16).unwrap();
        // SAFETY: the mapping is unmapped at once and never dereferenced.
        let m = unsafe { r.map(h) }.unwrap();
        // SAFETY: `m` came from `map` above.
        unsafe { r.unmap(m) }.unwrap();
        r.semaphore_write(nc, SemaphoreId(3), 7).unwrap();
        r.semaphore_increment(nc, SemaphoreId(3), 2).unwrap();
        r.semaphore_decrement(nc, SemaphoreId(3), 1).unwrap();
        r.event_set(nc, EventId(4), 1).unwrap();
        assert_eq!(r.event_get(nc, EventId(4)).unwrap(), 1);
        let req = NqRequest {
            nc,
            nq_type: nrt_hal::abi::NqType::Notify,
            engine_index: 0,
            size: 4096,
            location: MemLocation::Host,
        };
        let a = r.notification_init(&req).unwrap();
        let b = r.notification_init(&req).unwrap();
        assert_eq!(a, b);
        r.wait(
            &WaitCondition::Semaphore {
                nc,
                sem: SemaphoreId(3),
                cmp: nrt_hal::isa::SemCmp::Ge,
                value: 8,
            },
            Duration::from_millis(1),
        )
        .unwrap();
        let e = r.wait(
            &WaitCondition::Memory32 {
                handle: h,
                offset: 0,
                cmp: nrt_hal::isa::SemCmp::Eq,
                value: 5,
            },
            Duration::from_millis(1),
        );
        assert!(e.is_err());
        r.nc_reset(0b10).unwrap();
        r.mem_free(h).unwrap();
        assert!(r.mem_free(h).is_err());
        let text = r.take().text();
        for line in [
            "nc1 mem alloc #1 tensors_device ch1 size=0x64",
            "nc1 mem read #1+0x8 len=0x8",
            "nc1 mem memset #1+0x0 len=0x10 value=0xab",
            "nc1 mem map #1",
            "nc1 mem unmap #1",
            "nc1 mem free #1",
            "nc1 nq init notify[0] host size=0x1000 -> #2",
            "nc1 nq init notify[0] host size=0x1000 -> #2 (existing)",
            "nc1 sem sem[nc1:3] = 7",
            "nc1 sem sem[nc1:3] += 2",
            "nc1 sem sem[nc1:3] -= 1",
            "nc1 evt evt[nc1:4] = 1",
            "nc1 evt evt[nc1:4] read -> 1",
            "nc1 wait sem[nc1:3] >= 8 -> ok",
            "nc1 wait [#1+0x0] == 0x5 -> err timeout",
            "nc1 reset nc_reset",
            "dev mem free ? -> err invalid_argument(mem_free)",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in:\n{text}"
            );
        }
        let calls = r.calls();
        assert_eq!(calls["mem_free"], 2);
        assert_eq!(calls["notification_init"], 2);
    }

    #[test]
    fn threads_on_different_cores_cannot_reorder_the_trace() {
        let run = || {
            let r = Arc::new(recorder(Target::Trn1));
            std::thread::scope(|s| {
                for nc in 0..2u32 {
                    let r = r.clone();
                    s.spawn(move || {
                        for i in 0..50u32 {
                            let h = alloc(&r, nc, 4096, MemAllocCategory::TensorsDevice);
                            r.copy_to_device(h, 0, &i.to_le_bytes()).unwrap();
                            r.semaphore_increment(NcIndex(nc), SemaphoreId(i % 7), 1)
                                .unwrap();
                        }
                    });
                }
            });
            r.take().text()
        };
        let first = run();
        assert_eq!(first.lines().count(), 2 * 50 * 3);
        for _ in 0..5 {
            assert_eq!(run(), first);
        }
    }
}
