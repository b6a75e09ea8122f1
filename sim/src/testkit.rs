//! A small kit for driving the simulated device directly through the HAL, the way the
//! runtime does, without the runtime: DMA rings filled from the host, the sequencer protocol
//! of `nrt_hal::target::seq`, notification queues read with `NqReader`. The device tests and
//! the benchmarks use it.
//!
//! It is test support: every helper panics (with the failing call named) when the device
//! refuses, which is what a test wants.

use std::time::Duration;

use crate::{Sim, SimConfig};
use nrt_hal::abi::{MemAllocCategory, NqType};
use nrt_hal::exec_request::{DeviceExecRequest, RequestBuffer};
use nrt_hal::hal::{
    AllocRequest, MemLocation, NotificationQueue, NqRequest, RingSpec, WaitCondition,
};
use nrt_hal::isa::{encode_stream, Instruction, SemCmp};
use nrt_hal::notify::{Notification, NqReader};
use nrt_hal::target::{reserved, seq, Direction};
use nrt_hal::udma::{M2mCopy, QueueProducer, RingGeometry, RxDesc, TxDesc};
use nrt_hal::{
    DeviceAddr, DmaEngine, EngineKind, Hal, MemHandle, NcIndex, QueueId, QueueRef, Target,
};

/// Host-time bound of every wait the kit makes.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// A simulated device and its generation.
pub struct Dev {
    /// The device.
    pub sim: Sim,
    /// Its generation.
    pub target: Target,
}

impl Dev {
    /// A fresh device of `target` with the default configuration.
    pub fn new(target: Target) -> Self {
        Self::with(SimConfig::new(target))
    }

    /// A fresh device with configuration `cfg`.
    pub fn with(cfg: SimConfig) -> Self {
        let target = cfg.target;
        Dev {
            sim: Sim::new(cfg),
            target,
        }
    }

    /// Allocates `size` bytes of device memory on `nc`'s HBM channel.
    pub fn alloc(&self, nc: NcIndex, size: u64) -> MemHandle {
        self.sim
            .mem_alloc(&AllocRequest {
                size,
                align: 0,
                location: MemLocation::Device {
                    channel: self.target.hbm_channel_of(nc),
                },
                nc,
                category: MemAllocCategory::TensorsDevice,
            })
            .expect("allocation")
    }

    /// The device address of an allocation.
    pub fn pa(&self, h: MemHandle) -> DeviceAddr {
        self.sim.mem_info(h).unwrap().pa
    }

    /// Copies `bytes` into an allocation at `off`.
    pub fn write(&self, h: MemHandle, off: u64, bytes: &[u8]) {
        self.sim.copy_to_device(h, off, bytes).unwrap();
    }

    /// Reads `len` bytes of an allocation at `off`.
    pub fn read(&self, h: MemHandle, off: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        self.sim.copy_from_device(h, off, &mut v).unwrap();
        v
    }

    /// A word of device memory holding `value`, for 4-byte pokes.
    pub fn word(&self, nc: NcIndex, value: u32) -> DeviceAddr {
        let h = self.alloc(nc, 4096);
        self.write(h, 0, &value.to_le_bytes());
        self.pa(h)
    }

    /// Encodes `instrs` into a fresh allocation and returns its address.
    pub fn program(&self, nc: NcIndex, instrs: &[Instruction]) -> DeviceAddr {
        let bytes = encode_stream(instrs).expect("program encodes");
        let h = self.alloc(nc, bytes.len() as u64);
        self.write(h, 0, &bytes);
        self.pa(h)
    }

    /// Waits until semaphore `sem` of `nc` is at least `value`.
    pub fn wait_sem(&self, nc: NcIndex, sem: nrt_hal::SemaphoreId, value: i32) {
        self.sim
            .wait(
                &WaitCondition::Semaphore {
                    nc,
                    sem,
                    cmp: SemCmp::Ge,
                    value,
                },
                TIMEOUT,
            )
            .expect("semaphore reached");
    }
}

/// One DMA queue with host-filled rings.
pub struct Queue {
    /// The queue.
    pub q: QueueRef,
    /// Its TX ring's memory.
    pub tx: MemHandle,
    /// Its RX ring's memory.
    pub rx: MemHandle,
    /// The host's producer state of both rings.
    pub prod: QueueProducer,
    /// Descriptors per ring.
    pub count: u32,
}

impl Queue {
    /// Allocates two rings of `count` descriptors and initialises queue `q` on them.
    pub fn new(dev: &Dev, q: QueueRef, count: u32) -> Self {
        let geom = RingGeometry::new(count).unwrap();
        let tx = dev.alloc(q.nc, geom.byte_size());
        let rx = dev.alloc(q.nc, geom.byte_size());
        dev.sim
            .dma_queue_init(
                q,
                RingSpec { handle: tx, count },
                RingSpec { handle: rx, count },
            )
            .unwrap();
        Queue {
            q,
            tx,
            rx,
            prod: QueueProducer::new(geom, geom),
            count,
        }
    }

    /// [`Queue::new`] for queue `queue` of engine `engine` of core `nc`.
    pub fn at(dev: &Dev, nc: u32, engine: u32, queue: u32, count: u32) -> Self {
        Self::new(
            dev,
            QueueRef::new(NcIndex(nc), DmaEngine(engine), QueueId(queue)),
            count,
        )
    }

    /// Writes a copy's descriptor pairs at the producer's slots; returns the pair count.
    pub fn push(&mut self, dev: &Dev, copy: M2mCopy) -> u32 {
        let (ts, rs) = (self.prod.tx.index(), self.prod.rx.index());
        let pairs = copy.build(&mut self.prod).unwrap();
        for (i, p) in pairs.iter().enumerate() {
            let i = i as u32;
            self.put(
                dev,
                (ts + i) % self.count,
                p.tx,
                (rs + i) % self.count,
                p.rx,
            );
        }
        pairs.len() as u32
    }

    /// Writes one TX and one RX descriptor at ring slots `ts` and `rs`.
    pub fn put(&self, dev: &Dev, ts: u32, tx: TxDesc, rs: u32, rx: RxDesc) {
        dev.write(self.tx, ts as u64 * 16, &tx.to_bytes());
        dev.write(self.rx, rs as u64 * 16, &rx.to_bytes());
    }

    /// A 4-byte poke of the word at `src` into `dst` (a semaphore, event or register).
    pub fn poke(&mut self, dev: &Dev, src: DeviceAddr, dst: DeviceAddr) -> u32 {
        self.push(dev, M2mCopy::new(src, dst, 4))
    }

    /// Makes `n` more TX and RX descriptors available (`dma_queue_copy_start`).
    pub fn start(&self, dev: &Dev, n: u32) {
        dev.sim.dma_queue_copy_start(self.q, n, n).unwrap();
    }

    /// The tail-increment register of the queue's ring in direction `dir`.
    pub fn tail_inc(&self, dev: &Dev, dir: Direction) -> DeviceAddr {
        dev.target.tail_inc_addr(self.q, dir).unwrap()
    }
}

/// A core's notification queue (NOTIFY type, index 0) and a reader for it.
pub struct Nq {
    /// The queue.
    pub q: NotificationQueue,
    /// The reader's position in it.
    pub reader: NqReader,
}

impl Nq {
    /// Creates (or returns the existing) NOTIFY queue 0 of `nc`, in host memory.
    pub fn new(dev: &Dev, nc: NcIndex, size: u32) -> Self {
        let q = dev
            .sim
            .notification_init(&NqRequest {
                nc,
                nq_type: NqType::Notify,
                engine_index: 0,
                size,
                location: MemLocation::Host,
            })
            .unwrap();
        // An existing queue is returned as it is, whatever size was asked for.
        Nq {
            q,
            reader: NqReader::new(q.size as usize).unwrap(),
        }
    }

    /// Reads the entries written since the last drain.
    pub fn drain(&mut self, dev: &Dev) -> Vec<Notification> {
        let bytes = dev.read(self.q.handle, 0, self.q.size as usize);
        let mut out = Vec::new();
        while let Some(n) = self.reader.poll(&bytes).expect("well-formed entries") {
            out.push(n);
        }
        out
    }
}

/// Drives executions on one core through the sequencer protocol.
pub struct Exec {
    /// The core.
    pub nc: NcIndex,
    /// The hardware exec queue the sequencer fetches from.
    pub exec_q: Queue,
    /// The exec-request buffer.
    pub req: MemHandle,
    /// A word holding 1 (the source of event and semaphore pokes).
    pub one: DeviceAddr,
    /// The core's notification queue.
    pub nq: Nq,
    /// Executions submitted so far.
    pub submitted: i32,
}

impl Exec {
    /// Sets up core `nc`'s hardware exec queue, a request buffer and a notification queue.
    pub fn new(dev: &Dev, nc: NcIndex) -> Self {
        let exec_q = Queue::new(
            dev,
            QueueRef::new(nc, reserved::HW_EXEC_ENGINE, reserved::HW_EXEC_QUEUE),
            64,
        );
        let req = dev.alloc(nc, 4096);
        let one = dev.word(nc, 1);
        let nq = Nq::new(dev, nc, 4096);
        Exec {
            nc,
            exec_q,
            req,
            one,
            nq,
            submitted: 0,
        }
    }

    /// Stages one execution starting the given engines, plus `extra` pairs (e.g. IO kicks)
    /// before the end-of-block marker, and rings the doorbell.
    pub fn submit(
        &mut self,
        dev: &Dev,
        engines: &[(EngineKind, DeviceAddr)],
        reload: bool,
        tables: bool,
        extra: &[M2mCopy],
    ) {
        let mut r = DeviceExecRequest::new(false, reload, tables);
        for (e, a) in engines {
            r.set_engine_address(*e, *a);
        }
        let buf = RequestBuffer {
            request: r,
            cc_dma_increment: 0,
        };
        dev.write(self.req, 0, &buf.to_bytes());
        let slot = dev.target.seq_addr(self.nc, seq::EXEC_REQUEST).unwrap();
        let req_pa = dev.pa(self.req);
        self.exec_q.push(dev, M2mCopy::new(req_pa, slot, 56));
        let evt = dev
            .target
            .event_addr(self.nc, reserved::HW_EXEC_QUEUE_REQUEST_LOAD)
            .unwrap();
        self.exec_q.push(dev, M2mCopy::new(self.one, evt, 4));
        for c in extra {
            self.exec_q.push(dev, *c);
        }
        // End of block: a harmless 4-byte copy with INT_EN on its RX descriptor.
        let scratch = dev.word(self.nc, 0);
        self.exec_q
            .push(dev, M2mCopy::new(self.one, scratch, 4).with_rx_int_en(true));
        dev.sim
            .semaphore_increment(self.nc, reserved::INFERENCE_START, 1)
            .unwrap();
        self.submitted += 1;
    }

    /// Waits for every submitted execution to complete and returns the new notifications.
    pub fn wait(&mut self, dev: &Dev) -> Vec<Notification> {
        dev.wait_sem(self.nc, reserved::COMPLETION, self.submitted);
        self.nq.drain(dev)
    }
}

pub use nrt_hal::le::{bytes_f32, f32_bytes};
