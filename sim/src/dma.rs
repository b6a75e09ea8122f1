//! DMA engines and queues (docs/driver.md §4, §9).
//!
//! Each core has 16 DMA engines of 16 queues. A queue has a TX (m2s, source) and an RX (s2m,
//! destination) ring of 16-byte UDMA descriptors in device memory. A tail increment — from
//! `DMA_QUEUE_COPY_START`, or a 4-byte store to the queue's `drtp_inc` register by a DMA or an
//! engine `Write` — makes that many more descriptors available; the engine then fetches TX and
//! RX descriptors in lock step, checks each one's ring-id phase and decodes it, checks the pair's
//! lengths agree, and moves the bytes through the device's one store path
//! ([`crate::device::Domain::transfer`]) — so a descriptor aimed at a semaphore, an event, a
//! tail-increment or sequencer register has exactly the effect of any other store.
//!
//! A bad descriptor (buffer outside memory, TX/RX length mismatch, ring overrun, wrong phase,
//! unused bits set, an HBM uncorrectable error, or an injected abort) stops that queue
//! (status Aborted) and writes an error entry; if the queue was working for an execution, the
//! sequencer aborts that execution. Nothing here can panic on descriptor contents.
//!
//! # Timing (device cycles at the SP clock)
//!
//! Each engine serves its queues one kicked batch at a time, in kick order. A descriptor pair of
//! `len` bytes costs `dma_descriptor_cycles + ⌈len · f_sp / B_engine⌉`, where `B_engine` is the
//! target's per-engine bandwidth (docs/isa.md §2.2). Pairs that touch HBM or host memory also reserve
//! the core's HBM port for `⌈len · f_sp / (B_hbm / cores)⌉` cycles; a pair ends no earlier than
//! its port reservation, which caps a core's aggregate DMA bandwidth at its share of the
//! device's HBM bandwidth. The bytes move at the start of the pair; the next pair starts when
//! this one's cost has elapsed.
//!
//! # The hardware exec queue
//!
//! The sequencer drives its exec queue in *block mode* (see `nrt_hal::target::seq`): instead of
//! a host-set tail, descriptors are available as long as their ring-id phase is current, and
//! the block ends after the pair whose RX descriptor has `INT_EN`.

use std::collections::VecDeque;

use nrt_hal::hal::{QueueState, QueueStatus};
use nrt_hal::notify::{DmaFault, Notification};
use nrt_hal::profile::{DmaSource, TracedDma};
use nrt_hal::target::{udma_regs, Direction, MmioReg, QueueReg};
use nrt_hal::udma::{LenCtrlFlags, RingCursor, RingGeometry, RxDesc, TxDesc, UdmaDesc};
use nrt_hal::{DeviceAddr, DmaEngine, MemHandle, NcIndex, QueueId, QueueRef};

use crate::compute::cost::mul_div_ceil;
use crate::device::{AccessFault, Domain};
use crate::memory::{MemFault, SlotHint};
use crate::sched::Unit;
use crate::timeline::Track;

/// One ring of a queue.
#[derive(Debug, Clone)]
pub(crate) struct Ring {
    pub base: DeviceAddr,
    pub geom: RingGeometry,
    pub cursor: RingCursor,
    /// Descriptors made available and not yet consumed.
    pub pending: u64,
    /// Tail index (head + pending, modulo the ring size).
    pub tail: u32,
}

impl Ring {
    fn new(base: DeviceAddr, geom: RingGeometry) -> Self {
        Ring {
            base,
            geom,
            cursor: RingCursor::new(geom),
            pending: 0,
            tail: 0,
        }
    }

    fn slot_addr(&self) -> DeviceAddr {
        DeviceAddr::new(self.base.raw() + self.cursor.index() as u64 * 16)
    }
}

/// One DMA queue.
#[derive(Debug, Clone)]
pub(crate) struct DmaQueue {
    pub tx: Option<Ring>,
    pub rx: Option<Ring>,
    pub status: QueueStatus,
    /// Driven by the sequencer in block mode.
    pub seq_block: bool,
    /// In its engine's run queue.
    pub queued: bool,
    /// Timeline: start cycle and pair count of the batch being processed.
    pub batch: Option<(u64, u64)>,
    /// Base and length registers of the TX and RX rings, applied at the next ring reset.
    pub staged: [RingRegs; 2],
    /// The allocations this queue's last pair touched: TX ring, RX ring, source, destination
    /// (only a guess that speeds the next lookup, see [`SlotHint`]).
    pub hints: [SlotHint; 4],
    /// The packet the last pair belongs to: where its source and destination end, its bytes,
    /// and its record in the execution trace (pairs continuing it join it).
    pub packet: Option<PacketRun>,
}

/// A DMA packet being built from consecutive pairs of one queue (docs/simulator.md §7.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PacketRun {
    src_end: u64,
    dst_end: u64,
    /// The last pair's length.
    len: u64,
    bytes: u64,
    trace: Option<usize>,
}

/// The largest packet consecutive pairs are gathered into.
const MAX_PACKET: u64 = 32 << 10;

/// A ring's programming registers (`drbp_low/high`, `drl`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RingRegs {
    pub base: u64,
    pub length: u32,
}

impl RingRegs {
    fn of(base: &DeviceAddr, geom: RingGeometry) -> Self {
        RingRegs {
            base: base.raw(),
            length: geom.count(),
        }
    }
}

impl DmaQueue {
    fn new() -> Self {
        DmaQueue {
            tx: None,
            rx: None,
            status: QueueStatus::Disabled,
            seq_block: false,
            queued: false,
            batch: None,
            staged: [RingRegs::default(); 2],
            hints: [SlotHint::default(); 4],
            packet: None,
        }
    }

    /// Whether the queue has nothing left to do (drained, stopped or never started).
    pub fn is_drained(&self) -> bool {
        if self.status != QueueStatus::Enabled {
            return true;
        }
        if self.seq_block {
            return false;
        }
        let tx = self.tx.as_ref().map_or(0, |r| r.pending);
        let rx = self.rx.as_ref().map_or(0, |r| r.pending);
        tx == 0 || rx == 0
    }
}

/// One DMA engine: its queues and the run queue of queues with work.
#[derive(Debug, Clone)]
pub(crate) struct DmaEngineState {
    pub queues: Vec<DmaQueue>,
    pub runq: VecDeque<u32>,
    pub free_at: u64,
}

impl DmaEngineState {
    pub fn new(queues: u32) -> Self {
        DmaEngineState {
            queues: (0..queues).map(|_| DmaQueue::new()).collect(),
            runq: VecDeque::new(),
            free_at: 0,
        }
    }
}

/// The bandwidth terms of a pair's cost for the last length costed: the pairs of a queue
/// (rows of one tensor) mostly share a length, and the terms are two divisions each.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PairCyclesMemo(Option<(u64, u64, u64)>);

/// Why a pair failed, for the error entry.
struct PairFault {
    fault: DmaFault,
    index: u32,
    address: DeviceAddr,
    uncorrectable: Option<DeviceAddr>,
}

impl PairFault {
    fn access(e: AccessFault, index: u32) -> Self {
        let uncorrectable = match e {
            AccessFault::Mem(MemFault::Uncorrectable { addr }) => Some(addr),
            _ => None,
        };
        PairFault {
            fault: DmaFault::AddressFault,
            index,
            address: e.addr(),
            uncorrectable,
        }
    }
}

impl Domain {
    #[inline]
    fn queue(&self, q: QueueRef) -> Option<&DmaQueue> {
        self.cores
            .get(q.nc)?
            .dma
            .get(q.engine.index())?
            .queues
            .get(q.queue.index())
    }

    #[inline]
    fn queue_mut(&mut self, q: QueueRef) -> &mut DmaQueue {
        &mut self.cores[q.nc].dma[q.engine.index()].queues[q.queue.index()]
    }

    /// `DMA_QUEUE_INIT`: attaches rings (already validated by the caller) and resets the queue.
    pub fn dma_queue_init(
        &mut self,
        q: QueueRef,
        tx: (MemHandle, DeviceAddr, RingGeometry),
        rx: (MemHandle, DeviceAddr, RingGeometry),
    ) {
        let eng = &mut self.cores[q.nc].dma[q.engine.index()];
        eng.runq.retain(|&x| x != q.queue.0);
        let queue = &mut eng.queues[q.queue.index()];
        *queue = DmaQueue::new();
        queue.tx = Some(Ring::new(tx.1, tx.2));
        queue.rx = Some(Ring::new(rx.1, rx.2));
        queue.staged = [RingRegs::of(&tx.1, tx.2), RingRegs::of(&rx.1, rx.2)];
        queue.status = QueueStatus::Enabled;
    }

    /// A store to a ring-programming register (see `nrt_hal::target::QueueReg`).
    pub fn queue_register_store(&mut self, q: QueueRef, dir: Direction, reg: QueueReg, value: u32) {
        if !self.target.has_core(q.nc) || self.queue(q).is_none() {
            return;
        }
        let d = match dir {
            Direction::Tx => 0,
            Direction::Rx => 1,
        };
        let staged = &mut self.queue_mut(q).staged[d];
        match reg {
            QueueReg::BaseLow => staged.base = (staged.base & !0xFFFF_FFFF) | value as u64,
            QueueReg::BaseHigh => staged.base = (staged.base & 0xFFFF_FFFF) | (value as u64) << 32,
            QueueReg::Length => staged.length = value & 0xFF_FFFF,
            QueueReg::SwCtrl => {
                if value & udma_regs::Q_SW_CTRL_RESET != 0 {
                    self.queue_reset_ring(q, dir);
                }
            }
        }
    }

    /// Resets one ring of `q` from its staged registers: head, tail and pending to 0, phase 1.
    fn queue_reset_ring(&mut self, q: QueueRef, dir: Direction) {
        let eng = &mut self.cores[q.nc].dma[q.engine.index()];
        eng.runq.retain(|&x| x != q.queue.0);
        let queue = &mut eng.queues[q.queue.index()];
        queue.queued = false;
        queue.seq_block = false;
        queue.batch = None;
        let d = match dir {
            Direction::Tx => 0,
            Direction::Rx => 1,
        };
        let staged = queue.staged[d];
        let base = DeviceAddr::new(staged.base);
        let ring = RingGeometry::new(staged.length)
            .ok()
            .filter(|g| g.check_placement(base).is_ok())
            .map(|g| Ring::new(base, g));
        let ok = ring.is_some();
        match dir {
            Direction::Tx => queue.tx = ring,
            Direction::Rx => queue.rx = ring,
        }
        if !ok {
            self.queue_fault(
                q,
                PairFault {
                    fault: DmaFault::NoRing,
                    index: 0,
                    address: base,
                    uncorrectable: None,
                },
            );
            return;
        }
        let queue = self.queue_mut(q);
        if queue.tx.is_some() && queue.rx.is_some() {
            queue.status = QueueStatus::Enabled;
        }
    }

    /// `DMA_QUEUE_GET_STATE`.
    pub fn dma_queue_state(&self, q: QueueRef) -> Option<QueueState> {
        let queue = self.queue(q)?;
        let (tx_head, tx_tail) = queue
            .tx
            .as_ref()
            .map_or((0, 0), |r| (r.cursor.index(), r.tail));
        let (rx_head, rx_tail) = queue
            .rx
            .as_ref()
            .map_or((0, 0), |r| (r.cursor.index(), r.tail));
        Some(QueueState {
            status: queue.status,
            tx_head,
            tx_tail,
            rx_head,
            rx_tail,
        })
    }

    /// A tail increment of `n` descriptors on one ring of `q`.
    pub fn tail_increment(&mut self, q: QueueRef, dir: Direction, n: u32) {
        if !self.target.has_core(q.nc) || self.queue(q).is_none() {
            return;
        }
        self.seq_note_kick(q);
        let queue = self.queue_mut(q);
        if queue.status == QueueStatus::Aborted {
            return;
        }
        let ring = match dir {
            Direction::Tx => queue.tx.as_mut(),
            Direction::Rx => queue.rx.as_mut(),
        };
        let Some(ring) = ring else {
            let idx = 0;
            self.queue_fault(
                q,
                PairFault {
                    fault: DmaFault::NoRing,
                    index: idx,
                    address: DeviceAddr::ZERO,
                    uncorrectable: None,
                },
            );
            return;
        };
        ring.pending += n as u64;
        let count = ring.geom.count();
        ring.tail = ((ring.tail as u64 + n as u64) % count as u64) as u32;
        if ring.pending > count as u64 {
            let index = ring.tail;
            let address = ring.base;
            self.queue_fault(
                q,
                PairFault {
                    fault: DmaFault::RingOverrun,
                    index,
                    address,
                    uncorrectable: None,
                },
            );
            return;
        }
        if n > 0 {
            self.dma_kick(q);
        }
    }

    /// Puts `q` on its engine's run queue and wakes the engine.
    pub fn dma_kick(&mut self, q: QueueRef) {
        let now = self.now;
        let eng = &mut self.cores[q.nc].dma[q.engine.index()];
        let queue = &mut eng.queues[q.queue.index()];
        if queue.queued || queue.status != QueueStatus::Enabled {
            return;
        }
        queue.queued = true;
        let block = queue.seq_block;
        eng.runq.push_back(q.queue.0);
        // A queue kicked during an execution starts moving after the queue-start latency
        // (docs/simulator.md §7.3); the sequencer's own block and host-driven queues do not
        // wait.
        let running = self.cores[q.nc].seq.phase == crate::sequencer::Phase::Running;
        let latency = if running && !block {
            self.timing.dma_queue_start_cycles
        } else {
            0
        };
        let eng = &mut self.cores[q.nc].dma[q.engine.index()];
        let at = (now + latency).max(eng.free_at);
        self.sched.schedule(at, q.nc.0, Unit::Dma(q.engine.0));
    }

    /// Stops `q` with `f`, writes the error entry, and aborts the execution it served.
    fn queue_fault(&mut self, q: QueueRef, f: PairFault) {
        let queue = self.queue_mut(q);
        queue.status = QueueStatus::Aborted;
        queue.seq_block = false;
        match f.uncorrectable {
            Some(address) => self.post_hbm_uncorrectable(q.nc, address),
            None => {
                let compute_idx = self.cores[q.nc].seq.current_idx();
                self.post(
                    q.nc,
                    Notification::DmaError {
                        core: q.nc,
                        engine: q.engine,
                        queue: q.queue,
                        compute_idx,
                        descriptor_index: f.index,
                        address: f.address,
                        fault: f.fault,
                    },
                );
            }
        }
        self.seq_fault(q.nc);
    }

    /// Wake-up of DMA engine `eng` of core `nc`: serve run-queue batches.
    pub fn dma_step(&mut self, nc: NcIndex, eng: u32) {
        let mut t = self.now;
        loop {
            let e = &mut self.cores[nc].dma[eng as usize];
            let Some(&qid) = e.runq.front() else {
                return;
            };
            let q = QueueRef::new(nc, DmaEngine(eng), QueueId(qid));
            let queue = &e.queues[qid as usize];
            let ready =
                queue.status == QueueStatus::Enabled && (queue.seq_block || !queue.is_drained());
            if !ready {
                self.dma_retire_batch(q, t);
                continue;
            }
            match self.dma_pair(q, t) {
                Ok((cost, block_end)) => {
                    t += cost;
                    self.cores[nc].dma[eng as usize].free_at = t;
                    if let Some(b) = &mut self.queue_mut(q).batch {
                        b.1 += 1;
                    } else {
                        self.queue_mut(q).batch = Some((t - cost, 1));
                    }
                    if block_end {
                        self.queue_mut(q).seq_block = false;
                        self.dma_retire_batch(q, t);
                        self.seq_block_done(nc, t);
                    }
                }
                Err(f) => {
                    self.dma_retire_batch(q, t);
                    self.queue_fault(q, f);
                    continue;
                }
            }
            if !self.may_run_ahead(t, nc, Unit::Dma(eng)) {
                self.sched.schedule(t, nc.0, Unit::Dma(eng));
                return;
            }
            self.now = t;
        }
    }

    /// Takes `q` off its engine's run queue, records its batch span, and tells the sequencer.
    fn dma_retire_batch(&mut self, q: QueueRef, t: u64) {
        let e = &mut self.cores[q.nc].dma[q.engine.index()];
        if e.runq.front() == Some(&q.queue.0) {
            e.runq.pop_front();
        } else {
            e.runq.retain(|&x| x != q.queue.0);
        }
        let queue = &mut e.queues[q.queue.index()];
        queue.queued = false;
        queue.packet = None;
        if let Some((start, n)) = queue.batch.take() {
            self.timeline
                .record(Track::DmaQueue(q), || format!("dma x{n}"), start, t);
        }
        // Work may have arrived for this queue while it was being served.
        let more_work = self
            .queue(q)
            .is_some_and(|x| !x.seq_block && !x.is_drained());
        if more_work {
            self.dma_kick(q);
        } else {
            self.seq_queue_drained(q.nc);
        }
    }

    /// Performs the next descriptor pair of `q` at cycle `t`; returns its cost and whether it
    /// ended a sequencer block.
    fn dma_pair(&mut self, q: QueueRef, t: u64) -> Result<(u64, bool), PairFault> {
        let queue = self.queue(q).expect("dma_step only serves existing queues");
        let (Some(tx), Some(rx)) = (queue.tx.clone(), queue.rx.clone()) else {
            return Err(PairFault {
                fault: DmaFault::NoRing,
                index: 0,
                address: DeviceAddr::ZERO,
                uncorrectable: None,
            });
        };
        let index = tx.cursor.index();
        if let Some(i) = self.faults.abort_queues.iter().position(|x| *x == q) {
            // One-shot: the queue aborts the first time it processes a descriptor.
            self.faults.abort_queues.remove(i);
            return Err(PairFault {
                fault: DmaFault::Aborted,
                index,
                address: tx.slot_addr(),
                uncorrectable: None,
            });
        }
        let [mut tx_hint, mut rx_hint, src_hint, dst_hint] = queue.hints;
        let txd = self.fetch_desc(&tx, &mut tx_hint)?;
        let rxd = self.fetch_desc(&rx, &mut rx_hint)?;
        let bad = |ring: &Ring| PairFault {
            fault: DmaFault::BadDescriptor,
            index: ring.cursor.index(),
            address: ring.slot_addr(),
            uncorrectable: None,
        };
        let txd = TxDesc::decode(&txd).map_err(|_| bad(&tx))?;
        let rxd = RxDesc::decode(&rxd).map_err(|_| bad(&rx))?;
        let conversion = txd.meta().conversion();
        let lengths_agree = match conversion {
            None => txd.len() == rxd.len(),
            Some((from, to)) => {
                let (ss, ds) = (from.size() as u32, to.size() as u32);
                txd.len() % ss == 0 && rxd.len() % ds == 0 && txd.len() / ss == rxd.len() / ds
            }
        };
        if !lengths_agree {
            return Err(PairFault {
                fault: DmaFault::LengthMismatch,
                index,
                address: txd.src(),
                uncorrectable: None,
            });
        }
        let len = txd.len() as u64;
        let (src, dst) = (txd.src(), rxd.dst());
        // Advance first: a store in this pair may kick this very queue again.
        {
            let queue = self.queue_mut(q);
            let block = queue.seq_block;
            queue.hints[..2].copy_from_slice(&[tx_hint, rx_hint]);
            for ring in [queue.tx.as_mut(), queue.rx.as_mut()].into_iter().flatten() {
                ring.cursor.advance();
                if !block {
                    ring.pending = ring.pending.saturating_sub(1);
                }
            }
        }
        // Each address is decoded once for the move, its cost and the profile.
        let (src_mmio, dst_mmio) = (self.target.decode_mmio(src), self.target.decode_mmio(dst));
        let mut data_hints = [src_hint, dst_hint];
        let touches_hbm = src_mmio.is_none() || dst_mmio.is_none();
        let sem_dst = matches!(dst_mmio, Some(MmioReg::Semaphore { .. }));
        // A pair continuing the queue's packet — the next piece of the same transfer: its
        // source or destination picks up where the last pair's ended, or it is as long as the
        // last pair (the next row of a strided pattern) — is one more segment of that packet,
        // not a new descriptor. A semaphore write ends the packet (and the DMA block).
        let run = self.queue(q).and_then(|x| x.packet);
        let continues = !sem_dst
            && run.is_some_and(|r| {
                (r.src_end == src.raw() || r.dst_end == dst.raw() || r.len == len)
                    && r.bytes + u64::from(rxd.len()) <= MAX_PACKET
            });
        let cost = self.dma_cost(q.nc, touches_hbm, len, t, continues);
        // A store into a semaphore (a DMA block's completion) lands when the DMA's completion
        // is reported (docs/simulator.md §7.3).
        let semaphore =
            sem_dst && len == 4 && conversion.is_none() && self.timing.dma_completion_cycles > 0;
        if semaphore {
            let value = self.load32(src).map_err(|e| PairFault::access(e, index))?;
            let at = t + cost + self.timing.dma_completion_cycles;
            self.dge_defer_store(q.nc, dst, value, at);
        } else {
            match conversion {
                None => self.transfer(src, src_mmio, dst, dst_mmio, len, &mut data_hints),
                Some((from, to)) => self.transfer_converting(src, dst, from, to, len),
            }
            .map_err(|e| PairFault::access(e, index))?;
        }
        self.queue_mut(q).hints[2..].copy_from_slice(&data_hints);
        self.stats.descriptors += 1;
        self.stats.dma_bytes += len;
        self.profile_pair(q.nc, &src_mmio, &dst_mmio, len, rxd.len() as u64, t, cost);
        let wlen = rxd.len() as u64;
        let mut trace_at = None;
        if let Some(tr) = self.cores[q.nc].trace.as_mut().filter(|t| t.open) {
            let hbm = (
                if src_mmio.is_none() { len } else { 0 },
                if dst_mmio.is_none() { wlen } else { 0 },
            );
            match run.and_then(|r| r.trace).filter(|_| continues) {
                Some(i) if i < tr.trace.dma.len() => {
                    let d = &mut tr.trace.dma[i];
                    d.bytes += wlen;
                    d.end = t + cost;
                    d.hbm.0 += hbm.0;
                    d.hbm.1 += hbm.1;
                    trace_at = Some(i);
                }
                _ => {
                    trace_at = Some(tr.trace.dma.len());
                    tr.dma(TracedDma {
                        source: DmaSource::Queue(q),
                        bytes: wlen,
                        start: t,
                        end: t + cost,
                        hbm,
                        semaphore_write: sem_dst,
                    });
                }
            }
        }
        let next = PacketRun {
            src_end: src.raw() + len,
            dst_end: dst.raw() + wlen,
            len,
            bytes: if continues {
                run.map_or(0, |r| r.bytes) + wlen
            } else {
                wlen
            },
            trace: trace_at,
        };
        self.queue_mut(q).packet = (!sem_dst).then_some(next);
        let block_end = self.queue(q).is_some_and(|x| x.seq_block)
            && rxd.flags().contains(LenCtrlFlags::INT_EN);
        Ok((cost, block_end))
    }

    /// Reads and phase-checks the descriptor in `ring`'s next slot (`hint`: the ring's
    /// allocation).
    #[inline(always)]
    fn fetch_desc(&self, ring: &Ring, hint: &mut SlotHint) -> Result<UdmaDesc, PairFault> {
        let mut b = [0u8; 16];
        self.shared
            .mem()
            .read_hinted(hint, ring.slot_addr(), &mut b)
            .map_err(|e| PairFault::access(AccessFault::Mem(e), ring.cursor.index()))?;
        let d = UdmaDesc::from_bytes(&b);
        ring.cursor.check(&d).map_err(|_| PairFault {
            fault: DmaFault::RingIdMismatch,
            index: ring.cursor.index(),
            address: ring.slot_addr(),
            uncorrectable: None,
        })?;
        Ok(d)
    }

    /// Counts one pair in the core's execution profile: `src_len` bytes read, `dst_len`
    /// written, busy from `t` for `cost` cycles.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn profile_pair(
        &mut self,
        nc: NcIndex,
        s: &Option<MmioReg>,
        d: &Option<MmioReg>,
        src_len: u64,
        dst_len: u64,
        t: u64,
        cost: u64,
    ) {
        let onchip =
            |m: &Option<MmioReg>| matches!(m, Some(MmioReg::Sbuf { .. } | MmioReg::Psum { .. }));
        let p = &mut self.cores[nc].profile;
        p.dma_pairs += 1;
        p.dma_queue_cycles += cost;
        p.dma_busy.add(t, cost);
        match s {
            None => p.hbm_read_bytes += src_len,
            m if onchip(m) => p.sbuf_read_bytes += src_len,
            _ => {}
        }
        match d {
            None => p.hbm_write_bytes += dst_len,
            m if onchip(m) => p.sbuf_write_bytes += dst_len,
            _ => return,
        }
        p.dma_bytes += dst_len;
    }

    /// Cost in device cycles of one pair of `len` bytes starting at `t`, `touches_hbm` when its
    /// source or destination is memory (see module docs).
    #[inline]
    fn dma_cost(&mut self, nc: NcIndex, touches_hbm: bool, len: u64, t: u64, segment: bool) -> u64 {
        let (engine_bytes, hbm) = self.pair_bandwidth_cycles(len);
        let fixed = if segment {
            self.timing.dma_segment_cycles
        } else {
            self.timing.dma_descriptor_cycles
        };
        let engine = fixed + engine_bytes;
        if !touches_hbm {
            return engine;
        }
        let core = &mut self.cores[nc];
        let start = core.hbm_free_at.max(t);
        core.hbm_free_at = start + hbm;
        (t + engine).max(core.hbm_free_at) - t
    }

    /// The cycles `len` bytes take at one DMA engine's bandwidth and at the core's share of
    /// the HBM bandwidth (see module docs), memoised for the last length.
    fn pair_bandwidth_cycles(&mut self, len: u64) -> (u64, u64) {
        if let Some((l, engine, hbm)) = self.pair_cycles.0 {
            if l == len {
                return (engine, hbm);
            }
        }
        let spec = self.target.spec();
        let f = spec.clocks.sp;
        let engine = mul_div_ceil(len, f, spec.dma_engine_bandwidth);
        let hbm = mul_div_ceil(len, f, spec.hbm_bandwidth / spec.nc_count as u64);
        self.pair_cycles = PairCyclesMemo(Some((len, engine, hbm)));
        (engine, hbm)
    }
}
