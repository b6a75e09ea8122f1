//! Host-written DMA rings: the hardware exec queue and the IO queue of each core, whose
//! descriptors the runtime appends per execution (docs/exec.md §3). A [`HostRing`] tracks the
//! producer slot and ring-id phase of both rings of its queue and writes each appended pair
//! straight into ring memory, with no allocation on the way. [`TriggerAddrs`] are the four
//! destinations the hardware exec queue's pairs of every execution write to.

use nrt_hal::abi::MemAllocCategory;
use nrt_hal::hal::{AllocRequest, MemLocation, RingSpec};
use nrt_hal::target::{reserved, seq, Direction};
use nrt_hal::udma::{
    LenCtrl, LenCtrlFlags, QueueProducer, RingGeometry, TxMeta, UdmaDesc, DESC_SIZE,
};
use nrt_hal::{DeviceAddr, Hal, MemHandle, NcIndex, QueueRef, Target};

use crate::error::{Error, Result};
use crate::model::queue::IO_QUEUE;

/// The `len_ctrl` words of one copy pair's TX and RX descriptors without their ring ids:
/// the length and flags, checked once when built so that appending a pair only adds the ring
/// ids its slots carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairCtrl {
    tx: u32,
    rx: u32,
}

impl PairCtrl {
    /// A pair copying `len` (1..=65536) bytes: TX `FIRST | LAST`; RX `INT_EN` when
    /// `end_of_block` (the sequencer's end-of-block marker), else no flag.
    pub fn new(len: u32, end_of_block: bool) -> Result<PairCtrl> {
        let bad = |e: nrt_hal::udma::UdmaError| {
            Error::failure(format!("building a {len}-byte descriptor pair: {e}"))
        };
        let rx_flags = if end_of_block {
            LenCtrlFlags::INT_EN
        } else {
            LenCtrlFlags::empty()
        };
        Ok(PairCtrl {
            tx: LenCtrl::encode(u64::from(len), 0, LenCtrlFlags::FIRST | LenCtrlFlags::LAST)
                .map_err(bad)?,
            rx: LenCtrl::encode(u64::from(len), 0, rx_flags).map_err(bad)?,
        })
    }
}

/// One host-filled DMA queue. Appended pairs are gathered in two fixed staging buffers (sized
/// at construction for the largest batch, so appending never allocates) and written to ring memory by [`HostRing::flush`]
/// — one copy per ring (two when the append wraps) instead of one per descriptor.
#[derive(Debug)]
pub struct HostRing {
    /// The hardware queue.
    pub queue: QueueRef,
    tx: MemHandle,
    rx: MemHandle,
    prod: QueueProducer,
    count: u32,
    /// Staged TX then RX descriptor bytes: `staged` descriptors of each, up to the batch.
    tx_buf: Box<[u8]>,
    rx_buf: Box<[u8]>,
    staged: usize,
    tx_start: u32,
    rx_start: u32,
}

impl HostRing {
    /// Allocates both rings of `queue` (`count` descriptors each) and initialises the queue.
    /// `max_batch` is the most pairs appended between two flushes.
    pub fn new(hal: &dyn Hal, queue: QueueRef, count: u32, max_batch: u32) -> Result<HostRing> {
        let geom = RingGeometry::new(count).map_err(|e| Error::failure(e.to_string()))?;
        let channel = hal.device_info()?.target.hbm_channel_of(queue.nc);
        let alloc = |hal: &dyn Hal| {
            hal.mem_alloc(&AllocRequest {
                size: geom.byte_size(),
                align: 0,
                location: MemLocation::Device { channel },
                nc: queue.nc,
                category: MemAllocCategory::DmaRingsDevice,
            })
        };
        let tx = alloc(hal)?;
        let rx = match alloc(hal) {
            Ok(h) => h,
            Err(e) => {
                let _ = hal.mem_free(tx);
                return Err(e.into());
            }
        };
        if let Err(e) = hal.dma_queue_init(
            queue,
            RingSpec { handle: tx, count },
            RingSpec { handle: rx, count },
        ) {
            let _ = hal.mem_free(tx);
            let _ = hal.mem_free(rx);
            return Err(e.into());
        }
        let batch = max_batch.min(count) as usize * DESC_SIZE;
        Ok(HostRing {
            queue,
            tx,
            rx,
            prod: QueueProducer::new(geom, geom),
            count,
            tx_buf: vec![0; batch].into_boxed_slice(),
            rx_buf: vec![0; batch].into_boxed_slice(),
            staged: 0,
            tx_start: 0,
            rx_start: 0,
        })
    }

    /// Descriptors per ring.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Appends one copy pair whose length and flags `ctrl` holds (checked when it was built),
    /// encoded straight into the staging buffers.
    pub fn push(&mut self, src: DeviceAddr, dst: DeviceAddr, ctrl: PairCtrl) -> Result<()> {
        let at = self.staged * DESC_SIZE;
        let (Some(tx_slot), Some(rx_slot)) = (
            self.tx_buf.get_mut(at..at + DESC_SIZE),
            self.rx_buf.get_mut(at..at + DESC_SIZE),
        ) else {
            return Err(Error::failure(format!(
                "{}: more pairs appended than the batch reserved",
                self.queue
            )));
        };
        let t = self.prod.tx.reserve();
        let r = self.prod.rx.reserve();
        if self.staged == 0 {
            self.tx_start = t.index;
            self.rx_start = r.index;
        }
        let tx = UdmaDesc {
            len_ctrl: LenCtrl::with_ring_id(ctrl.tx, t.ring_id),
            meta_ctrl: TxMeta::M2M.bits(),
            buf_ptr: src.raw(),
        };
        let rx = UdmaDesc {
            len_ctrl: LenCtrl::with_ring_id(ctrl.rx, r.ring_id),
            meta_ctrl: 0,
            buf_ptr: dst.raw(),
        };
        tx_slot.copy_from_slice(&tx.to_bytes());
        rx_slot.copy_from_slice(&rx.to_bytes());
        self.staged += 1;
        Ok(())
    }

    /// Forgets pairs appended since the last flush (the error edge of a staging).
    pub fn discard(&mut self) {
        self.staged = 0;
    }

    /// Writes the pairs appended since the last flush into ring memory.
    pub fn flush(&mut self, hal: &dyn Hal) -> Result<()> {
        let bytes = self.staged * DESC_SIZE;
        if bytes == 0 {
            return Ok(());
        }
        for (handle, buf, start) in [
            (self.tx, &self.tx_buf, self.tx_start),
            (self.rx, &self.rx_buf, self.rx_start),
        ] {
            let buf = &buf[..bytes];
            let room = (self.count - start) as usize * DESC_SIZE;
            let (head, tail) = buf.split_at(room.min(buf.len()));
            hal.copy_to_device(handle, start as u64 * DESC_SIZE as u64, head)?;
            if !tail.is_empty() {
                hal.copy_to_device(handle, 0, tail)?;
            }
        }
        self.staged = 0;
        Ok(())
    }

    /// Frees the ring memory.
    pub fn release(self, hal: &dyn Hal) {
        let _ = hal.mem_free(self.tx);
        let _ = hal.mem_free(self.rx);
    }
}

/// The destinations of the four hardware-exec-queue pairs of core `nc` (docs/exec.md §3.2): the
/// sequencer's `EXEC_REQUEST` window, the request-load event, and the IO queue's RX and TX
/// tail-increment registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TriggerAddrs {
    /// `EXEC_REQUEST` window of the sequencer.
    pub request: DeviceAddr,
    /// Event `HW_EXEC_QUEUE_REQUEST_LOAD`.
    pub load_event: DeviceAddr,
    /// The IO queue's RX tail increment.
    pub rx_tail: DeviceAddr,
    /// The IO queue's TX tail increment.
    pub tx_tail: DeviceAddr,
}

impl TriggerAddrs {
    /// The addresses of core `nc` of `target`.
    pub fn new(target: Target, nc: NcIndex) -> Result<TriggerAddrs> {
        let io = QueueRef::new(nc, reserved::HW_EXEC_ENGINE, IO_QUEUE);
        Ok(TriggerAddrs {
            request: target
                .seq_addr(nc, seq::EXEC_REQUEST)
                .ok_or_else(|| Error::failure("no sequencer window"))?,
            load_event: target
                .event_addr(nc, reserved::HW_EXEC_QUEUE_REQUEST_LOAD)
                .ok_or_else(|| Error::failure("no request-load event"))?,
            rx_tail: target
                .tail_inc_addr(io, Direction::Rx)
                .ok_or_else(|| Error::failure("no IO queue"))?,
            tx_tail: target
                .tail_inc_addr(io, Direction::Tx)
                .ok_or_else(|| Error::failure("no IO queue"))?,
        })
    }
}
