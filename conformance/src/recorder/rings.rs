//! The recorder's shadow model of each DMA queue: where each ring lives, which slot the device
//! consumes next and the ring id it expects there (a [`RingCursor`] of `nrt_hal::udma`, so the
//! ring-id phases are the HAL's), the ring-register stores that take effect at a ring reset,
//! and the decoding of what a queue consumes (following stores into registers, tail increments
//! and exec requests).

use nrt_hal::exec_request::{RequestBuffer, REQUEST_BUFFER_SIZE};
use nrt_hal::target::{seq, udma_regs, Direction, MmioReg, QueueReg};
use nrt_hal::udma::{LenCtrlFlags, RingCursor, RingGeometry, UdmaDesc, DESC_SIZE};
use nrt_hal::{DeviceAddr, Hal, MemHandle, QueueRef};

use super::symbols::State;
use super::{queue_stream, Recorder};
use crate::render::{self, Region, Symbols};
use crate::trace::Core;

/// One ring of a tracked queue: where it is and where the consumer stands.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ring {
    /// The allocation holding it (`None` once freed, or if re-pointed somewhere unknown).
    pub(super) handle: Option<MemHandle>,
    /// Byte offset of slot 0 inside the allocation.
    offset: u64,
    /// The next slot the device consumes, its expected ring id, and the ring's size.
    cursor: RingCursor,
    /// Descriptors made available and not yet decoded.
    pub(super) pending: u32,
}

impl Ring {
    pub(super) fn new(handle: MemHandle, geom: RingGeometry) -> Ring {
        Ring {
            handle: Some(handle),
            offset: 0,
            cursor: RingCursor::new(geom),
            pending: 0,
        }
    }

    /// Descriptors in the ring.
    pub(super) fn count(&self) -> u32 {
        self.cursor.geometry().count()
    }
}

/// Ring-register stores seen since the ring's last reset (they take effect at the reset).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Shadow {
    lo: Option<u32>,
    hi: Option<u32>,
    len: Option<u32>,
    reset: bool,
}

/// A queue as the recorder tracks it.
#[derive(Debug, Clone, Copy)]
pub(super) struct QueueTrack {
    /// TX then RX.
    pub(super) rings: [Ring; 2],
    shadow: [Shadow; 2],
}

impl QueueTrack {
    /// A queue just initialised on rings `tx` and `rx`.
    pub(super) fn new(tx: Ring, rx: Ring) -> QueueTrack {
        QueueTrack {
            rings: [tx, rx],
            shadow: [Shadow::default(); 2],
        }
    }

    /// Makes `tx` and `rx` more descriptors available and returns how many whole pairs are
    /// now pending (and no longer counted as pending).
    pub(super) fn make_available(&mut self, tx: u32, rx: u32) -> u32 {
        self.rings[0].pending += tx;
        self.rings[1].pending += rx;
        let k = self.rings[0].pending.min(self.rings[1].pending);
        self.rings[0].pending -= k;
        self.rings[1].pending -= k;
        k
    }
}

fn di(dir: Direction) -> usize {
    match dir {
        Direction::Tx => 0,
        Direction::Rx => 1,
    }
}

/// What a store into a register does to a tracked queue.
pub(super) enum Action {
    TailInc(QueueRef, Direction, u32),
    Reg(QueueRef, Direction, QueueReg, u32),
}

/// Reads `len` bytes at device address `addr` through the backend, if a live allocation holds
/// them all.
pub(super) fn read_addr(inner: &dyn Hal, st: &State, addr: u64, len: usize) -> Option<Vec<u8>> {
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
    while at < ring.count() {
        let n = CHUNK.min(ring.count() - at);
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

impl Recorder {
    /// The store a pair makes, followed through: the suffix for the RX line (the value stored
    /// into a register), extra lines (a decoded request), and what the store does to a queue.
    pub(super) fn store_effect(
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
    pub(super) fn consume(&self, st: &mut State, q: QueueRef, count: Option<u32>, depth: u32) {
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
        let max = count.unwrap_or(track.rings[0].count());
        let mut touched: Vec<QueueRef> = Vec::new();
        for _ in 0..max {
            let t = st.queues[&q];
            let (tx, rx) = (t.rings[0], t.rings[1]);
            let (Some(td), Some(rd)) = (
                read_desc(inner, &tx, tx.cursor.index()),
                read_desc(inner, &rx, rx.cursor.index()),
            ) else {
                st.emit(core, stream, "<ring memory unreadable>".into());
                break;
            };
            if tx.cursor.check(&td).is_err() || rx.cursor.check(&rd).is_err() {
                st.emit(
                    core,
                    stream,
                    format!(
                        "<not staged: tx[{}] ring id {} (expected {}), rx[{}] ring id {} (expected {})>",
                        tx.cursor.index(),
                        td.ring_id(),
                        tx.cursor.expected_ring_id(),
                        rx.cursor.index(),
                        rd.ring_id(),
                        rx.cursor.expected_ring_id()
                    ),
                );
                break;
            }
            let (suffix, extra, action) =
                self.store_effect(st, q.nc.0, td.buf_ptr, rd.buf_ptr, rd.byte_len());
            let v = st.view(q.nc.0);
            let tx_text = render::tx_line(&tx.cursor.index().to_string(), &td, &v);
            let rx_text = format!(
                "{}{suffix}",
                render::rx_line(&rx.cursor.index().to_string(), &rd, &v)
            );
            st.emit(core, stream, tx_text);
            st.emit(core, stream, rx_text);
            for e in extra {
                st.emit(core, stream, format!("  {e}"));
            }
            if let Some(t) = st.queues.get_mut(&q) {
                t.rings[0].cursor.advance();
                t.rings[1].cursor.advance();
            }
            match action {
                Some(Action::TailInc(q2, dir, n)) if depth < 4 => {
                    if let Some(t2) = st.queues.get_mut(&q2) {
                        let k = match dir {
                            Direction::Tx => t2.make_available(n, 0),
                            Direction::Rx => t2.make_available(0, n),
                        };
                        if k > 0 {
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
            let mut geom = r.cursor.geometry();
            if let Some(len) = s.len {
                // A length the udma rules refuse leaves a ring the device cannot use.
                match RingGeometry::new(len) {
                    Ok(g) => geom = g,
                    Err(_) => r.handle = None,
                }
            }
            r.cursor = RingCursor::new(geom);
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
        line.push_str(&format!(" count={}", t.rings[0].count()));
        if t.rings[1].count() != t.rings[0].count() {
            line.push_str(&format!(" rx_count={}", t.rings[1].count()));
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
    pub(super) fn ring_contents(
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
