//! Target `sim_dma`: the simulator's DMA engines fed descriptor rings built from fuzz bytes.
//!
//! The input is a program of operations ([`Op`], decoded with [`crate::input::Input`]) on a
//! fresh trn1 simulator, through the HAL and the device's MMIO store path only: allocate and
//! free memory, write raw bytes (garbage descriptors) or well-formed m2m copy pairs into rings,
//! initialise queues (ring counts and placements unchecked by the harness), start copies with
//! `dma_queue_copy_start` or with 4-byte stores to the tail-increment registers, reprogram ring
//! registers, poke semaphores, events and arbitrary addresses, set up notification queues,
//! reset cores, and let the device run a bounded number of events. Addresses come from
//! [`AddrSel`]: inside, across the end of, or far outside allocations, MMIO registers, SBUF and
//! PSUM, or raw 64-bit values. A bad descriptor must become a queue fault and an error
//! notification; nothing may panic, and every notification queue must stay readable.
//!
//! Bounds (host resources, not device behaviour): at most [`MAX_OPS`] operations, allocations
//! of at most [`MAX_ALLOC`] bytes, copies of at most 256 KiB, notification queues of at most
//! 64 KiB, and [`EVENT_BUDGET`] device events per `Advance` (plus one final drain).

use std::collections::BTreeMap;

use nrt_hal::abi::{MemAllocCategory, NqType};
use nrt_hal::hal::{AllocRequest, MemLocation, NotificationQueue, NqRequest, RingSpec};
use nrt_hal::notify::NqReader;
use nrt_hal::target::{Direction, QueueReg, SemWindow};
use nrt_hal::udma::{Barrier, M2mCopy, QueueProducer, RingGeometry};
use nrt_hal::{
    DeviceAddr, DmaEngine, EventId, Hal, MemHandle, NcIndex, QueueId, QueueRef, SemaphoreId, Target,
};
use nrt_sim::{Sim, SimConfig};

use crate::input::{Input, Out};

/// Most operations one input runs.
pub const MAX_OPS: usize = 256;
/// Largest allocation (bytes).
pub const MAX_ALLOC: u64 = 1 << 20;
/// Device events one `Advance` may run; the final drain runs at most 4× this.
pub const EVENT_BUDGET: usize = 20_000;
/// The generation the target simulates.
pub const TARGET: Target = Target::Trn1;

/// Operation tags (the first byte of each operation, modulo [`OP_COUNT`]).
pub mod op {
    /// Allocate host or device memory on a core.
    pub const ALLOC: u8 = 0;
    /// Free an allocation of the harness.
    pub const FREE: u8 = 1;
    /// Write raw bytes (garbage descriptors) into an allocation.
    pub const WRITE: u8 = 2;
    /// Initialise a DMA queue on two allocations, ring counts and placement unchecked.
    pub const QUEUE_INIT: u8 = 3;
    /// Push a well-formed m2m copy between two selected addresses onto a queue.
    pub const COPY: u8 = 4;
    /// Write one raw descriptor at a ring index.
    pub const RAW_DESC: u8 = 5;
    /// Start descriptors with `dma_queue_copy_start`.
    pub const COPY_START: u8 = 6;
    /// Start descriptors with a 4-byte store to a tail-increment register.
    pub const TAIL_STORE: u8 = 7;
    /// Store a 4-byte value at a selected address through the MMIO store path.
    pub const STORE32: u8 = 8;
    /// Load a 4-byte value from a selected address.
    pub const LOAD32: u8 = 9;
    /// Let the device run a bounded number of events.
    pub const ADVANCE: u8 = 10;
    /// Read, set, increment or decrement a semaphore (or an id out of range).
    pub const SEMAPHORE: u8 = 11;
    /// Set up a notification queue.
    pub const NQ_INIT: u8 = 12;
    /// Reset the cores of a mask.
    pub const RESET: u8 = 13;
    /// Read a queue's state and its core's memory usage.
    pub const STATE: u8 = 14;
    /// Read bytes back from an allocation.
    pub const READ: u8 = 15;
    /// Fill bytes of an allocation.
    pub const MEMSET: u8 = 16;
    /// Reprogram a ring through its queue registers.
    pub const QUEUE_REG: u8 = 17;
    /// Write half of a selected device address into memory (exec requests hold addresses as two words).
    pub const WRITE_ADDR: u8 = 18;
}
/// Number of operation kinds.
pub const OP_COUNT: u8 = 19;

/// Address selector tags (first byte of an address, modulo 9).
pub mod addr {
    /// `slot: u8, offset: u32` — inside (or past) an allocation.
    pub const ALLOC: u8 = 0;
    /// `u64` raw.
    pub const RAW: u8 = 1;
    /// `nc: u8, sem: u16, window: u8`.
    pub const SEMAPHORE: u8 = 2;
    /// `nc: u8, event: u16`.
    pub const EVENT: u8 = 3;
    /// queue, `dir: u8`.
    pub const TAIL_INC: u8 = 4;
    /// queue, `dir: u8, reg: u8`.
    pub const QUEUE_REG: u8 = 5;
    /// `nc: u8, partition: u8, offset: u32`.
    pub const SBUF: u8 = 6;
    /// `nc: u8, partition: u8, offset: u32`.
    pub const PSUM: u8 = 7;
    /// `slot: u8, back: u8` — straddling the end of an allocation.
    pub const ALLOC_END: u8 = 8;
    /// `nc: u8, offset: u16` — a sequencer register.
    pub const SEQ: u8 = 9;
}
/// Number of address selector kinds.
pub const ADDR_COUNT: u8 = 10;

struct QueueRings {
    tx: MemHandle,
    rx: MemHandle,
    tx_count: u32,
    rx_count: u32,
    prod: QueueProducer,
}

struct Rig {
    sim: Sim,
    target: Target,
    allocs: Vec<(MemHandle, u64)>,
    queues: BTreeMap<QueueRef, QueueRings>,
    nqs: Vec<NotificationQueue>,
}

fn dir_of(b: u8) -> Direction {
    if b & 1 == 0 {
        Direction::Tx
    } else {
        Direction::Rx
    }
}

impl Rig {
    fn new() -> Rig {
        Rig {
            sim: Sim::new(SimConfig::new(TARGET)),
            target: TARGET,
            allocs: Vec::new(),
            queues: BTreeMap::new(),
            nqs: Vec::new(),
        }
    }

    /// A core index, sometimes one past the device's cores.
    fn nc(&self, inp: &mut Input<'_>) -> NcIndex {
        NcIndex(u32::from(inp.u8()) % (self.target.spec().nc_count + 1))
    }

    /// A queue, each coordinate sometimes one past its range.
    fn queue(&self, inp: &mut Input<'_>) -> QueueRef {
        let s = self.target.spec();
        let nc = self.nc(inp);
        let e = u32::from(inp.u8()) % (s.dma_engines_per_core + 1);
        let q = u32::from(inp.u8()) % (s.queues_per_engine + 1);
        QueueRef::new(nc, DmaEngine(e), QueueId(q))
    }

    fn alloc_at(&self, slot: u8) -> Option<(MemHandle, u64)> {
        if self.allocs.is_empty() {
            None
        } else {
            Some(self.allocs[slot as usize % self.allocs.len()])
        }
    }

    /// The device address of an allocation (none once it is freed).
    fn pa(&self, h: MemHandle) -> DeviceAddr {
        self.sim.mem_info(h).map_or(DeviceAddr::ZERO, |i| i.pa)
    }

    fn addr(&self, inp: &mut Input<'_>) -> DeviceAddr {
        let t = self.target;
        let zero = DeviceAddr::ZERO;
        match inp.u8() % ADDR_COUNT {
            addr::ALLOC => {
                let (slot, off) = (inp.u8(), u64::from(inp.u32()));
                match self.alloc_at(slot) {
                    Some((h, _)) => DeviceAddr::new(self.pa(h).raw().wrapping_add(off)),
                    None => DeviceAddr::new(off),
                }
            }
            addr::RAW => DeviceAddr::new(inp.u64()),
            addr::SEMAPHORE => {
                let nc = self.nc(inp);
                let sem = SemaphoreId(u32::from(inp.u16()) % 300);
                let w = [
                    SemWindow::Read,
                    SemWindow::Set,
                    SemWindow::Increment,
                    SemWindow::Decrement,
                ][inp.u8() as usize % 4];
                t.semaphore_addr(nc, sem, w).unwrap_or(zero)
            }
            addr::EVENT => {
                let nc = self.nc(inp);
                let ev = EventId(u32::from(inp.u16()) % 300);
                t.event_addr(nc, ev).unwrap_or(zero)
            }
            addr::TAIL_INC => {
                let q = self.queue(inp);
                t.tail_inc_addr(q, dir_of(inp.u8())).unwrap_or(zero)
            }
            addr::QUEUE_REG => {
                let q = self.queue(inp);
                let d = dir_of(inp.u8());
                t.queue_reg_addr(q, d, queue_reg(inp.u8())).unwrap_or(zero)
            }
            tag @ (addr::SBUF | addr::PSUM) => {
                let nc = self.nc(inp);
                let (p, off) = (u32::from(inp.u8()) % 130, inp.u32());
                let a = if tag == addr::SBUF {
                    t.sbuf_addr(nc, p, off)
                } else {
                    t.psum_addr(nc, p, off)
                };
                a.unwrap_or(zero)
            }
            addr::SEQ => {
                let nc = self.nc(inp);
                t.seq_addr(nc, u64::from(inp.u16())).unwrap_or(zero)
            }
            _ => {
                let (slot, back) = (inp.u8(), u64::from(inp.u8()));
                match self.alloc_at(slot) {
                    Some((h, size)) => {
                        DeviceAddr::new(self.pa(h).raw().wrapping_add(size).wrapping_sub(back))
                    }
                    None => zero,
                }
            }
        }
    }
}

fn queue_reg(b: u8) -> QueueReg {
    [
        QueueReg::BaseLow,
        QueueReg::BaseHigh,
        QueueReg::Length,
        QueueReg::SwCtrl,
    ][b as usize % 4]
}

impl Rig {
    fn step(&mut self, inp: &mut Input<'_>) {
        let sim = &self.sim;
        match inp.u8() % OP_COUNT {
            op::ALLOC => self.op_alloc(inp),
            op::FREE => {
                if let Some((h, _)) = self.alloc_at(inp.u8()) {
                    let _ = sim.mem_free(h);
                }
            }
            op::WRITE => {
                let (slot, off) = (inp.u8(), u64::from(inp.u32()));
                let len = inp.u8() as usize;
                let bytes = inp.bytes(len);
                if let Some((h, _)) = self.alloc_at(slot) {
                    let _ = sim.copy_to_device(h, off, bytes);
                }
            }
            op::QUEUE_INIT => self.op_queue_init(inp),
            op::COPY => self.op_copy(inp),
            op::RAW_DESC => self.op_raw_desc(inp),
            op::COPY_START => {
                let q = self.queue(inp);
                let (tx, rx) = (u32::from(inp.u16()), u32::from(inp.u16()));
                let _ = sim.dma_queue_copy_start(q, tx, rx);
            }
            op::TAIL_STORE => {
                let q = self.queue(inp);
                let dir = dir_of(inp.u8());
                let n = inp.u32();
                if let Some(a) = self.target.tail_inc_addr(q, dir) {
                    let _ = sim.store32(a, n);
                }
            }
            op::STORE32 => {
                let a = self.addr(inp);
                let v = inp.u32();
                let _ = sim.store32(a, v);
            }
            op::LOAD32 => {
                let a = self.addr(inp);
                let _ = sim.load32(a);
            }
            op::ADVANCE => {
                let n = inp.u16() as usize;
                sim.advance(n.min(EVENT_BUDGET));
            }
            op::SEMAPHORE => {
                let nc = self.nc(inp);
                let id = u32::from(inp.u16()) % 300;
                let (kind, value) = (inp.u8(), inp.u32());
                let sem = SemaphoreId(id);
                let _ = match kind % 6 {
                    0 => sim.semaphore_read(nc, sem).map(drop),
                    1 => sim.semaphore_write(nc, sem, value as i32),
                    2 => sim.semaphore_increment(nc, sem, value),
                    3 => sim.semaphore_decrement(nc, sem, value),
                    4 => sim.event_set(nc, EventId(id), value),
                    _ => sim.event_get(nc, EventId(id)).map(drop),
                };
            }
            op::NQ_INIT => self.op_nq_init(inp),
            op::RESET => {
                let _ = sim.nc_reset(u32::from(inp.u8()));
            }
            op::STATE => {
                let q = self.queue(inp);
                let _ = sim.dma_queue_state(q);
                let _ = sim.memory_usage(q.nc);
            }
            op::READ => {
                let (slot, off) = (inp.u8(), u64::from(inp.u32()));
                let len = (inp.u16() & 0xFFF) as usize;
                if let Some((h, _)) = self.alloc_at(slot) {
                    let mut buf = vec![0u8; len];
                    let _ = sim.copy_from_device(h, off, &mut buf);
                }
            }
            op::MEMSET => {
                let (slot, off, v) = (inp.u8(), u64::from(inp.u32()), inp.u8());
                let size = u64::from(inp.u32()) % (MAX_ALLOC + 1);
                if let Some((h, _)) = self.alloc_at(slot) {
                    let _ = sim.memset(h, off, v, size);
                }
            }
            op::WRITE_ADDR => {
                // Half of a device address into memory (exec requests hold engine addresses
                // as low and high words).
                let (slot, off, high) = (inp.u8(), u64::from(inp.u32()), inp.bool());
                let a = self.addr(inp).raw();
                let word = if high { (a >> 32) as u32 } else { a as u32 };
                if let Some((h, _)) = self.alloc_at(slot) {
                    let _ = sim.copy_to_device(h, off, &word.to_le_bytes());
                }
            }
            _ => {
                // op::QUEUE_REG: reprogram a ring through its registers.
                let q = self.queue(inp);
                let dir = dir_of(inp.u8());
                let reg = queue_reg(inp.u8());
                let v = inp.u32();
                if let Some(a) = self.target.queue_reg_addr(q, dir, reg) {
                    let _ = sim.store32(a, v);
                }
                // Rings reprogrammed behind the harness's back: forget its producer.
                self.queues.remove(&q);
            }
        }
    }

    /// The `ALLOC` operation (see [`op`]).
    fn op_alloc(&mut self, inp: &mut Input<'_>) {
        let sim = &self.sim;
        let nc = self.nc(inp);
        let host = inp.bool();
        let size = u64::from(inp.u32()) % (MAX_ALLOC + 1);
        let location = if host {
            MemLocation::Host
        } else {
            MemLocation::Device {
                channel: self.target.hbm_channel_of(nc),
            }
        };
        let req = AllocRequest {
            size,
            align: 0,
            location,
            nc,
            category: MemAllocCategory::TensorsDevice,
        };
        if let Ok(h) = sim.mem_alloc(&req) {
            let size = sim.mem_info(h).map_or(0, |i| i.size);
            self.allocs.push((h, size));
        }
    }

    /// The `QUEUE_INIT` operation (see [`op`]).
    fn op_queue_init(&mut self, inp: &mut Input<'_>) {
        let sim = &self.sim;
        let q = self.queue(inp);
        let (txs, tx_count, rxs, rx_count) = (inp.u8(), inp.u16(), inp.u8(), inp.u16());
        let (tx_count, rx_count) = (u32::from(tx_count), u32::from(rx_count));
        let (Some((tx, _)), Some((rx, _))) = (self.alloc_at(txs), self.alloc_at(rxs)) else {
            return;
        };
        let r = sim.dma_queue_init(
            q,
            RingSpec {
                handle: tx,
                count: tx_count,
            },
            RingSpec {
                handle: rx,
                count: rx_count,
            },
        );
        if r.is_ok() {
            let geom = |n| RingGeometry::new(n).expect("dma_queue_init accepted the count");
            self.queues.insert(
                q,
                QueueRings {
                    tx,
                    rx,
                    tx_count,
                    rx_count,
                    prod: QueueProducer::new(geom(tx_count), geom(rx_count)),
                },
            );
        }
    }

    /// The `COPY` operation (see [`op`]).
    fn op_copy(&mut self, inp: &mut Input<'_>) {
        let sim = &self.sim;
        let q = self.queue(inp);
        let src = self.addr(inp);
        let dst = self.addr(inp);
        let len = u64::from(inp.u32() & 0x3_FFFF);
        let flags = inp.u8();
        let mut copy = M2mCopy::new(src, dst, len).with_rx_int_en(flags & 1 != 0);
        if flags & 4 != 0 {
            copy = copy.with_barrier(Barrier::WriteBarrier);
        }
        let Some(r) = self.queues.get_mut(&q) else {
            return;
        };
        let (ts, rs) = (r.prod.tx.index(), r.prod.rx.index());
        let Ok(pairs) = copy.build(&mut r.prod) else {
            return;
        };
        for (i, p) in pairs.iter().enumerate() {
            let i = i as u32;
            let t = u64::from((ts + i) % r.tx_count) * 16;
            let x = u64::from((rs + i) % r.rx_count) * 16;
            let _ = sim.copy_to_device(r.tx, t, &p.tx.to_bytes());
            let _ = sim.copy_to_device(r.rx, x, &p.rx.to_bytes());
        }
        if flags & 2 != 0 && !pairs.is_empty() {
            let n = pairs.len() as u32;
            let _ = sim.dma_queue_copy_start(q, n, n);
        }
    }

    /// The `RAW_DESC` operation (see [`op`]).
    fn op_raw_desc(&mut self, inp: &mut Input<'_>) {
        let sim = &self.sim;
        let q = self.queue(inp);
        let dir = dir_of(inp.u8());
        let index = u32::from(inp.u16());
        let (len_ctrl, meta) = (inp.u32(), inp.u32());
        let ptr = self.addr(inp);
        let Some(r) = self.queues.get(&q) else {
            return;
        };
        let (h, count) = match dir {
            Direction::Tx => (r.tx, r.tx_count),
            Direction::Rx => (r.rx, r.rx_count),
        };
        let mut b = [0u8; 16];
        nrt_hal::le::put_u32(&mut b, 0, len_ctrl);
        nrt_hal::le::put_u32(&mut b, 4, meta);
        nrt_hal::le::put_u64(&mut b, 8, ptr.raw());
        let _ = sim.copy_to_device(h, u64::from(index % count) * 16, &b);
    }

    /// The `NQ_INIT` operation (see [`op`]).
    fn op_nq_init(&mut self, inp: &mut Input<'_>) {
        let sim = &self.sim;
        let nc = self.nc(inp);
        let nq_type = NqType::from_raw(u32::from(inp.u8() % 6)).unwrap_or(NqType::Error);
        let engine_index = u32::from(inp.u8() % 17);
        let size = 1u32 << (inp.u8() % 17);
        let location = if inp.bool() {
            MemLocation::Host
        } else {
            MemLocation::Device {
                channel: self.target.hbm_channel_of(nc),
            }
        };
        let req = NqRequest {
            nc,
            nq_type,
            engine_index,
            size,
            location,
        };
        if let Ok(q) = sim.notification_init(&req) {
            self.nqs.push(q);
        }
    }

    /// Lets the device finish (bounded) and reads every notification queue.
    fn finish(&self) {
        self.sim.advance(4 * EVENT_BUDGET);
        for q in &self.nqs {
            let mut bytes = vec![0u8; q.size as usize];
            if self.sim.copy_from_device(q.handle, 0, &mut bytes).is_err() {
                continue; // freed by the program (its handle may even be reused)
            }
            let mut reader = NqReader::new(bytes.len()).expect("the simulator accepted the size");
            for _ in 0..bytes.len() / 32 + 1 {
                match reader.poll(&bytes) {
                    Ok(Some(_)) => {}
                    // The program may have DMA'd garbage over the queue: an error, not a panic.
                    Ok(None) | Err(_) => break,
                }
            }
        }
        let _ = self.sim.stats();
    }
}

/// `sim_dma`: runs the program in `data` on a fresh simulator (see the module docs).
pub fn sim_dma(data: &[u8]) {
    run(data);
}

/// [`sim_dma`], returning the simulator's work counters at the end.
pub fn run(data: &[u8]) -> nrt_sim::SimStats {
    let mut rig = Rig::new();
    let mut inp = Input::new(data);
    let mut n = 0;
    while !inp.is_empty() && n < MAX_OPS {
        rig.step(&mut inp);
        n += 1;
    }
    rig.finish();
    rig.sim.stats()
}

// ---------------------------------------------------------------------------------------------
// Seeds.

/// Writer of `sim_dma` programs (for seeds and tests).
#[derive(Debug, Default)]
pub struct Program(pub Out);

impl Program {
    /// Allocates `size` bytes of device memory on core 0 (the next slot).
    pub fn alloc(&mut self, size: u32) -> &mut Self {
        self.0.u8(op::ALLOC).u8(0).bool(false).u32(size);
        self
    }
    /// Initialises queue (0, `engine`, `queue`) with rings in slots `tx` / `rx`.
    pub fn queue_init(
        &mut self,
        engine: u8,
        queue: u8,
        tx: u8,
        txn: u16,
        rx: u8,
        rxn: u16,
    ) -> &mut Self {
        self.0.u8(op::QUEUE_INIT).u8(0).u8(engine).u8(queue);
        self.0.u8(tx).u16(txn).u8(rx).u16(rxn);
        self
    }
    /// A copy on queue (0, `engine`, `queue`) from `src` to `dst` (address selectors written by
    /// the closures), optionally started.
    pub fn copy(
        &mut self,
        engine: u8,
        queue: u8,
        src: impl Fn(&mut Out),
        dst: impl Fn(&mut Out),
        len: u32,
        flags: u8,
    ) -> &mut Self {
        self.0.u8(op::COPY).u8(0).u8(engine).u8(queue);
        src(&mut self.0);
        dst(&mut self.0);
        self.0.u32(len).u8(flags);
        self
    }
    /// A raw descriptor `(len_ctrl, meta_ctrl, buf_ptr)` at `index` of the TX or RX ring of
    /// queue (0, `engine`, `queue`).
    pub fn raw_desc(
        &mut self,
        (engine, queue): (u8, u8),
        rx: bool,
        index: u16,
        (len_ctrl, meta): (u32, u32),
        ptr: impl Fn(&mut Out),
    ) -> &mut Self {
        self.0
            .u8(op::RAW_DESC)
            .u8(0)
            .u8(engine)
            .u8(queue)
            .bool(rx)
            .u16(index);
        self.0.u32(len_ctrl).u32(meta);
        ptr(&mut self.0);
        self
    }
    /// `dma_queue_copy_start`.
    pub fn start(&mut self, engine: u8, queue: u8, tx: u16, rx: u16) -> &mut Self {
        self.0
            .u8(op::COPY_START)
            .u8(0)
            .u8(engine)
            .u8(queue)
            .u16(tx)
            .u16(rx);
        self
    }
    /// A store of `n` to a tail-increment register.
    pub fn tail(&mut self, engine: u8, queue: u8, rx: bool, n: u32) -> &mut Self {
        self.0
            .u8(op::TAIL_STORE)
            .u8(0)
            .u8(engine)
            .u8(queue)
            .bool(rx)
            .u32(n);
        self
    }
    /// Core 0's entry queue (NOTIFY, index 0: where the simulator posts DMA errors).
    pub fn entry_nq(&mut self) -> &mut Self {
        self.0
            .u8(op::NQ_INIT)
            .u8(0)
            .u8(NqType::Notify as u8)
            .u8(0)
            .u8(12)
            .bool(true);
        self
    }
    /// Runs up to `n` device events.
    pub fn advance(&mut self, n: u16) -> &mut Self {
        self.0.u8(op::ADVANCE).u16(n);
        self
    }
    /// Raw bytes into allocation `slot` at `off` (at most 255).
    pub fn write(&mut self, slot: u8, off: u32, bytes: &[u8]) -> &mut Self {
        self.0
            .u8(op::WRITE)
            .u8(slot)
            .u32(off)
            .u8(bytes.len() as u8)
            .bytes(bytes);
        self
    }
    /// The low or high word of an address into allocation `slot` at `off`.
    pub fn write_addr(
        &mut self,
        slot: u8,
        off: u32,
        high: bool,
        a: impl Fn(&mut Out),
    ) -> &mut Self {
        self.0.u8(op::WRITE_ADDR).u8(slot).u32(off).bool(high);
        a(&mut self.0);
        self
    }
    /// Any other operation, raw.
    pub fn raw(&mut self, f: impl Fn(&mut Out)) -> &mut Self {
        f(&mut self.0);
        self
    }
    /// The bytes.
    pub fn bytes(&self) -> Vec<u8> {
        self.0 .0.clone()
    }
}

/// Address selector: `off` bytes into allocation `slot`.
pub fn at(slot: u8, off: u32) -> impl Fn(&mut Out) {
    move |o: &mut Out| {
        o.u8(addr::ALLOC).u8(slot).u32(off);
    }
}

/// Address selector: a raw address.
pub fn raw(a: u64) -> impl Fn(&mut Out) {
    move |o: &mut Out| {
        o.u8(addr::RAW).u64(a);
    }
}

/// Address selector: semaphore `sem` of core 0 through its increment window.
pub fn sem_incr(sem: u16) -> impl Fn(&mut Out) {
    move |o: &mut Out| {
        o.u8(addr::SEMAPHORE).u8(0).u16(sem).u8(2);
    }
}

/// Address selector: the tail-increment register of queue (0, `engine`, `queue`).
pub fn tail_inc(engine: u8, queue: u8, rx: bool) -> impl Fn(&mut Out) {
    move |o: &mut Out| {
        o.u8(addr::TAIL_INC).u8(0).u8(engine).u8(queue).bool(rx);
    }
}

/// Address selector: the sequencer register at `offset` of core 0.
pub fn seq_reg(offset: u16) -> impl Fn(&mut Out) {
    move |o: &mut Out| {
        o.u8(addr::SEQ).u8(0).u16(offset);
    }
}

/// Address selector: event `id` of core 0.
pub fn event(id: u16) -> impl Fn(&mut Out) {
    move |o: &mut Out| {
        o.u8(addr::EVENT).u8(0).u16(id);
    }
}

/// An execution through the hardware exec queue, the way the runtime stages one (request copy,
/// request-load event, end of block), with an engine program in slot 5; the doorbell is an
/// increment of INFERENCE_START.
fn exec_seed() -> Program {
    use nrt_hal::exec_request::{DeviceExecRequest, RequestBuffer};
    use nrt_hal::isa::{encode_stream, Instruction};
    use nrt_hal::target::{reserved, seq};
    use nrt_hal::EngineKind;
    let (eng, q) = (
        reserved::HW_EXEC_ENGINE.0 as u8,
        reserved::HW_EXEC_QUEUE.0 as u8,
    );
    // Slots: 0 tx ring, 1 rx ring, 2 request, 3 a word holding 1, 4 scratch, 5 program.
    let mut p = Program::default();
    for _ in 0..6 {
        p.alloc(4096);
    }
    p.entry_nq().queue_init(eng, q, 0, 64, 1, 64);
    p.write(3, 0, &1u32.to_le_bytes());
    let prog = encode_stream(&[
        Instruction::StreamHeader,
        Instruction::Nop,
        Instruction::End,
    ])
    .expect("a valid program");
    p.write(5, 0, &prog);
    // Locate the POOL engine address words in the request by a marker.
    let mut r = DeviceExecRequest::new(false, true, true);
    r.set_engine_address(EngineKind::Pool, DeviceAddr::new(0x1357_9BDF_2468_ACE0));
    let buf = RequestBuffer {
        request: r,
        cc_dma_increment: 0,
    }
    .to_bytes();
    let find = |w: u32| {
        buf.windows(4)
            .position(|x| x == w.to_le_bytes())
            .expect("marker word in the request") as u32
    };
    let (lo, hi) = (find(0x2468_ACE0), find(0x1357_9BDF));
    p.write(2, 0, &buf);
    p.write_addr(2, lo, false, at(5, 0));
    p.write_addr(2, hi, true, at(5, 0));
    let len = buf.len() as u32;
    p.copy(eng, q, at(2, 0), seq_reg(seq::EXEC_REQUEST as u16), len, 0);
    let load = reserved::HW_EXEC_QUEUE_REQUEST_LOAD.0 as u16;
    p.copy(eng, q, at(3, 0), event(load), 4, 0);
    p.copy(eng, q, at(3, 0), at(4, 0), 4, 1);
    let start = reserved::INFERENCE_START.0 as u16;
    p.raw(|o| {
        o.u8(op::SEMAPHORE).u8(0).u16(start).u8(2).u32(1);
    });
    p.advance(5000);
    p
}

/// Hand-made `sim_dma` seeds: valid copies, and each kind of bad descriptor.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    // Slots: 0 tx ring, 1 rx ring, 2 source, 3 destination, 4 a word holding 1.
    let base = || {
        let mut p = Program::default();
        p.alloc(4096)
            .alloc(4096)
            .alloc(262_144)
            .alloc(262_144)
            .alloc(4096);
        p.entry_nq().queue_init(0, 0, 0, 64, 1, 64);
        p
    };
    let mut out = Vec::new();
    let mut add = |name: &str, p: &Program| out.push((format!("sim_dma-{name}"), p.bytes()));

    let mut p = base();
    p.raw(|o| {
        o.u8(op::WRITE)
            .u8(2)
            .u32(0)
            .u8(16)
            .bytes(b"0123456789abcdef");
    });
    p.copy(0, 0, at(2, 0), at(3, 0), 4096, 2).advance(1000);
    add("copy", &p);

    let mut p = base();
    p.copy(0, 0, at(2, 0), at(3, 0), 200_000, 2).advance(5000);
    add("copy_multi_pair", &p);

    let mut p = base();
    p.copy(0, 0, at(2, 0), at(3, 262_000), 4096, 2)
        .advance(1000);
    add("dst_past_end", &p);

    let mut p = base();
    p.copy(0, 0, raw(0xdead_0000_0000), at(3, 0), 64, 2)
        .advance(1000);
    add("src_unmapped", &p);

    let mut p = base();
    p.copy(0, 0, at(4, 0), sem_incr(3), 4, 2).advance(1000);
    add("sem_poke", &p);

    let mut p = base();
    p.copy(0, 0, at(2, 0), at(3, 0), 64, 0);
    p.raw(|o| {
        o.u8(op::WRITE).u8(4).u32(0).u8(4).u32(1);
    });
    p.copy(0, 1, at(4, 0), tail_inc(0, 0, true), 4, 0);
    p.copy(0, 1, at(4, 0), tail_inc(0, 0, false), 4, 0);
    p.queue_init(0, 1, 0, 64, 1, 64).advance(10);
    add("tail_via_dma", &p);

    let mut p = base();
    let lc = nrt_hal::udma::LenCtrl::encode(64, 1, nrt_hal::udma::LenCtrlFlags::empty())
        .expect("valid len_ctrl");
    p.raw_desc((0, 0), false, 0, (lc, 0), at(2, 0));
    p.raw_desc((0, 0), true, 0, (lc ^ 0x20, 0), at(3, 0));
    p.start(0, 0, 1, 1).advance(1000);
    add("length_mismatch", &p);

    let mut p = base();
    p.raw_desc((0, 0), false, 0, (0xFFFF_FFFF, 0xFFFF_FFFF), raw(u64::MAX));
    p.raw_desc((0, 0), true, 0, (0xFFFF_FFFF, 0), raw(u64::MAX));
    p.start(0, 0, 1, 1).advance(1000);
    add("garbage_desc", &p);

    let mut p = base();
    p.start(0, 0, 64, 64)
        .tail(0, 0, true, 1000)
        .tail(0, 0, false, 1000)
        .advance(1000);
    add("overrun", &p);

    let mut p = base();
    p.queue_init(0, 2, 0, 7, 1, 0)
        .start(0, 2, 1, 1)
        .start(0, 3, 1, 1)
        .advance(10);
    add("bad_geometry", &p);

    let mut p = base();
    p.copy(0, 0, at(2, 0), at(3, 0), 64, 2);
    p.raw(|o| {
        o.u8(op::FREE).u8(3).u8(op::ADVANCE).u16(1000);
    });
    add("free_under_dma", &p);

    add("exec", &exec_seed());
    out
}
