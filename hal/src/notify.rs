//! The notification-queue entry format — the reference for this platform.
//!
//! The kernel driver allocates notification queues (NQs) and programs their base and size
//! (docs/driver.md §3.6, §6) but defines **no entry format**, no phase bit and no head/tail
//! protocol. This module is that definition; the simulator writes it and the runtime reads it.
//!
//! # The queue
//!
//! A queue is a byte buffer whose size is a power of two, at least 32 bytes and at most 2^31
//! bytes (the driver's `size` is a `u32` and must be a power of two). It holds
//! `entries = size / 32` fixed-size slots. Its memory is zero when the queue is initialised; a
//! slot whose sequence number is 0 is empty.
//!
//! # Sequence numbers and the slot rule
//!
//! Each queue numbers its entries with a `u32` sequence starting at **1**. The k-th entry written
//! to a queue (k = 0, 1, 2, …) has
//!
//! * sequence `seq = (k mod (2^32 − 1)) + 1` — 1, 2, …, 2^32 − 1, then 1 again (0 is never
//!   used, it marks an empty slot);
//! * slot `k mod entries`.
//!
//! So, until the sequence wraps, **the entry with sequence `s` is written at slot
//! `(s − 1) % entries`**. The producer overwrites old entries without waiting for the reader;
//! a reader that falls a full queue behind finds a sequence number that jumped ahead and knows
//! how many entries it lost ([`NqReader::poll`]).
//!
//! Write ordering: the producer writes bytes 4..32 of an entry first and the `seq` word last, so
//! a reader that sees the new `seq` sees the whole entry.
//!
//! # The entry (32 bytes, little endian)
//!
//! | offset | size | field | meaning |
//! |---|---|---|---|
//! | 0x00 | 4 | `seq` | sequence number, 0 = empty slot |
//! | 0x04 | 1 | `kind` | [`NotificationKind`] (0 is invalid) |
//! | 0x05 | 1 | `core` | NeuronCore index |
//! | 0x06 | 1 | `unit` | engine ([`EngineKind::index`]) or DMA engine (local to the core) |
//! | 0x07 | 1 | `queue` | DMA queue |
//! | 0x08 | 8 | `compute_idx` | the execution's compute index |
//! | 0x10 | 4 | `code` | kind-specific code |
//! | 0x14 | 4 | `detail` | kind-specific detail |
//! | 0x18 | 8 | `aux` | kind-specific 64-bit value (instruction index or address) |
//!
//! Per kind (`–` = written as 0 and ignored on read):
//!
//! | kind | value | unit | queue | compute_idx | code | detail | aux |
//! |---|---|---|---|---|---|---|---|
//! | Completion | 1 | – | – | yes | 1 if the execution faulted, else 0 | – | device cycles from start to completion |
//! | ExecError | 2 | engine | – | yes | opcode | [`ExecFault`] | instruction index |
//! | DmaError | 3 | DMA engine | queue | yes | [`DmaFault`] | descriptor index | buffer address |
//! | HbmUncorrectable | 4 | – | – | yes | – | – | HBM address |
//! | NanProduced | 5 | engine | – | yes | – | – | instruction index |
//! | Notify | 6 | engine | – | yes | value | – | instruction index |
//! | Overflow | 7 | – | – | – | lost count | – | – |
//! | Deadlock | 8 | engine | – | yes | semaphore | its value | instruction index (low 32 bits) and the awaited value (high 32 bits) |
//! | DgeError | 9 | engine | – | yes | [`DmaFault`] | instruction index | address |
//!
//! `Deadlock` is written once per engine stuck on a wait when nothing on the core can change
//! any semaphore again (no engine can run, no DMA is pending); the execution then completes
//! as faulted.
//!
//! `DgeError` is a DMA an engine issued itself (`dma.direct`, a relocated Neuron `0xD4`) that
//! failed: an address outside its var, or outside memory.
//!
//! `Overflow` is the *producer* reporting that it dropped `lost` notifications it could not
//! write; a reader that is lapped detects its own loss from the sequence numbers instead
//! ([`NqError::Overflow`]).

use crate::addr::{DeviceAddr, DmaEngine, EngineKind, NcIndex, QueueId};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Size of one entry in bytes.
pub const NQ_ENTRY_SIZE: usize = 32;
/// Smallest queue, in bytes (one entry).
pub const NQ_MIN_BYTES: usize = NQ_ENTRY_SIZE;
/// Largest queue, in bytes.
pub const NQ_MAX_BYTES: usize = 1 << 31;
/// Number of distinct sequence numbers (1..=u32::MAX).
const SEQ_MODULUS: u64 = u32::MAX as u64;

/// Errors encoding, decoding or reading notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NqError {
    /// An entry whose kind byte is not a [`NotificationKind`].
    #[error("unknown notification kind {kind}")]
    UnknownKind {
        /// The kind byte.
        kind: u8,
    },
    /// An entry naming an engine index that is not an [`EngineKind`].
    #[error("unknown engine index {unit} in a {kind:?} notification")]
    UnknownEngine {
        /// The entry's kind.
        kind: NotificationKind,
        /// The unit byte.
        unit: u8,
    },
    /// An entry whose fault code is not defined for its kind.
    #[error("unknown fault code {code} in a {kind:?} notification")]
    UnknownFault {
        /// The entry's kind.
        kind: NotificationKind,
        /// The code.
        code: u32,
    },
    /// A value too large for its one-byte wire field.
    #[error("{field} = {value} does not fit the entry's one-byte field")]
    FieldRange {
        /// Which field.
        field: &'static str,
        /// The value.
        value: u32,
    },
    /// Sequence number 0 is reserved for empty slots.
    #[error("sequence number 0 marks an empty slot and cannot be written")]
    ZeroSeq,
    /// Fewer than 32 bytes were given for an entry.
    #[error("notification entry needs {NQ_ENTRY_SIZE} bytes, got {len}")]
    Truncated {
        /// Bytes available.
        len: usize,
    },
    /// A queue size that is not a power of two in `32..=2^31` bytes.
    #[error("notification queue of {bytes} bytes is not a power of two in {NQ_MIN_BYTES}..={NQ_MAX_BYTES}")]
    BadQueueSize {
        /// The rejected size.
        bytes: usize,
    },
    /// A buffer of a different size than the queue the reader or writer was made for.
    #[error("notification queue buffer is {got} bytes, expected {expected}")]
    SizeMismatch {
        /// The queue's size.
        expected: usize,
        /// The buffer's size.
        got: usize,
    },
    /// The producer lapped the reader: `lost` entries were overwritten before they were read.
    /// The reader has skipped them and continues with the oldest entry still in the queue.
    #[error("notification queue overflowed: {lost} entries lost")]
    Overflow {
        /// Entries lost.
        lost: u32,
    },
    /// A slot holds a sequence number that the slot rule does not allow there (a producer
    /// bug, or a queue whose memory was not zeroed on initialisation). The reader does not
    /// move.
    #[error("slot {slot} holds seq {found}, which cannot be there when seq {expected} is next")]
    Misplaced {
        /// The slot read.
        slot: u32,
        /// The sequence number the reader expects.
        expected: u32,
        /// The sequence number found.
        found: u32,
    },
}

/// The kind byte of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum NotificationKind {
    /// An execution completed successfully.
    Completion = 1,
    /// An engine met an instruction it could not execute.
    ExecError = 2,
    /// A DMA queue aborted on a descriptor.
    DmaError = 3,
    /// An uncorrectable HBM error.
    HbmUncorrectable = 4,
    /// An engine produced a NaN.
    NanProduced = 5,
    /// An explicit NOTIFY instruction.
    Notify = 6,
    /// The producer dropped notifications.
    Overflow = 7,
    /// An engine waits on a semaphore nothing can change any more.
    Deadlock = 8,
    /// A DMA an engine issued itself failed.
    DgeError = 9,
}

impl NotificationKind {
    /// Every kind, in value order.
    pub const ALL: [NotificationKind; 9] = [
        NotificationKind::Completion,
        NotificationKind::ExecError,
        NotificationKind::DmaError,
        NotificationKind::HbmUncorrectable,
        NotificationKind::NanProduced,
        NotificationKind::Notify,
        NotificationKind::Overflow,
        NotificationKind::Deadlock,
        NotificationKind::DgeError,
    ];

    /// The kind with wire value `v`.
    pub fn from_u8(v: u8) -> Option<NotificationKind> {
        Self::ALL.into_iter().find(|k| *k as u8 == v)
    }
}

/// Why an engine stopped on an instruction (the `detail` of an ExecError entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ExecFault {
    /// The opcode is not one the engine knows.
    UnknownOpcode = 1,
    /// The opcode is known but the instruction's fields are invalid.
    Malformed = 2,
    /// An operand addresses memory outside what the engine may touch.
    OutOfBounds = 3,
}

impl ExecFault {
    /// Every fault.
    pub const ALL: [ExecFault; 3] = [
        ExecFault::UnknownOpcode,
        ExecFault::Malformed,
        ExecFault::OutOfBounds,
    ];

    /// The fault with wire code `c`.
    pub fn from_code(c: u32) -> Option<ExecFault> {
        Self::ALL.into_iter().find(|f| *f as u32 == c)
    }
}

/// Why a DMA queue aborted (the `code` of a DmaError entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum DmaFault {
    /// A fetched descriptor carried the wrong ring id (the "prefetch ring id" error).
    RingIdMismatch = 1,
    /// A descriptor's buffer is not backed by device or host memory.
    AddressFault = 2,
    /// The engine was put into the ABORT state.
    Aborted = 3,
    /// A TX packet and its RX packet have different lengths.
    LengthMismatch = 4,
    /// A descriptor is malformed (e.g. unused bits set).
    BadDescriptor = 5,
    /// A tail increment made more descriptors pending than the ring holds.
    RingOverrun = 6,
    /// The queue was kicked but has no ring (not initialised, or reset).
    NoRing = 7,
    /// An engine-issued DMA addresses bytes outside its var.
    OutOfBounds = 8,
}

impl DmaFault {
    /// Every fault.
    pub const ALL: [DmaFault; 8] = [
        DmaFault::RingIdMismatch,
        DmaFault::AddressFault,
        DmaFault::Aborted,
        DmaFault::LengthMismatch,
        DmaFault::BadDescriptor,
        DmaFault::RingOverrun,
        DmaFault::NoRing,
        DmaFault::OutOfBounds,
    ];

    /// The fault with wire code `c`.
    pub fn from_code(c: u32) -> Option<DmaFault> {
        Self::ALL.into_iter().find(|f| *f as u32 == c)
    }
}

/// A decoded notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Notification {
    /// Execution `compute_idx` on `core` retired. A faulted execution is completed too (after
    /// its error entries), with `faulted` set, so a waiter never hangs on a detected fault.
    Completion {
        /// The core.
        core: NcIndex,
        /// The execution.
        compute_idx: u64,
        /// Device cycles from the execution's start to its completion.
        cycles: u64,
        /// Whether an error entry was written for this execution.
        faulted: bool,
    },
    /// `engine` stopped on the instruction at `instruction_index` of its stream.
    ExecError {
        /// The core.
        core: NcIndex,
        /// The engine.
        engine: EngineKind,
        /// The execution.
        compute_idx: u64,
        /// Index of the instruction in the engine's instruction stream.
        instruction_index: u64,
        /// The instruction's opcode as found.
        opcode: u32,
        /// Why it stopped.
        fault: ExecFault,
    },
    /// DMA queue `engine`.`queue` aborted on the descriptor at `descriptor_index`.
    DmaError {
        /// The core owning the engine.
        core: NcIndex,
        /// The DMA engine, local to the core.
        engine: DmaEngine,
        /// The queue.
        queue: QueueId,
        /// The execution.
        compute_idx: u64,
        /// Slot of the offending descriptor in its ring.
        descriptor_index: u32,
        /// The descriptor's buffer address.
        address: DeviceAddr,
        /// Why it aborted.
        fault: DmaFault,
    },
    /// An uncorrectable error in HBM at `address`, seen during execution `compute_idx`.
    HbmUncorrectable {
        /// The core whose execution observed it.
        core: NcIndex,
        /// The execution.
        compute_idx: u64,
        /// The failing address.
        address: DeviceAddr,
    },
    /// `engine` produced a NaN at the instruction at `instruction_index`.
    NanProduced {
        /// The core.
        core: NcIndex,
        /// The engine.
        engine: EngineKind,
        /// The execution.
        compute_idx: u64,
        /// Index of the instruction in the engine's instruction stream.
        instruction_index: u64,
    },
    /// An explicit NOTIFY instruction carrying `value`.
    Notify {
        /// The core.
        core: NcIndex,
        /// The engine that executed the NOTIFY.
        engine: EngineKind,
        /// The execution.
        compute_idx: u64,
        /// Index of the NOTIFY in the engine's instruction stream.
        instruction_index: u64,
        /// The instruction's payload.
        value: u32,
    },
    /// `engine` of `core` is stuck at the instruction at `instruction_index`, waiting for
    /// semaphore `sem` to reach `awaited` while it holds `value`, and nothing can change it.
    Deadlock {
        /// The core.
        core: NcIndex,
        /// The engine.
        engine: EngineKind,
        /// The execution.
        compute_idx: u64,
        /// Index of the waiting instruction in the engine's stream (as fetched).
        instruction_index: u32,
        /// The semaphore waited on.
        sem: u32,
        /// Its current value.
        value: i32,
        /// The value the wait needs (`sem ≥ awaited`).
        awaited: u32,
    },
    /// A DMA that `engine` of `core` issued (instruction `instruction_index`) failed with
    /// `fault` at `address`.
    DgeError {
        /// The core.
        core: NcIndex,
        /// The issuing engine.
        engine: EngineKind,
        /// The execution.
        compute_idx: u64,
        /// Index of the issuing instruction in the engine's stream (as fetched).
        instruction_index: u32,
        /// Why.
        fault: DmaFault,
        /// The first offending address (or the slot, when the slot itself is bad).
        address: DeviceAddr,
    },
    /// The producer dropped `lost` notifications of `core`.
    Overflow {
        /// The core.
        core: NcIndex,
        /// Notifications dropped.
        lost: u32,
    },
}

/// The raw 32-byte entry.
///
/// The zerocopy derives give in-place views in host byte order (little endian on every platform
/// this project runs on); [`NqEntry::to_bytes`] and [`NqEntry::from_bytes`] convert explicitly.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct NqEntry {
    /// Sequence number; 0 = empty slot.
    pub seq: u32,
    /// [`NotificationKind`] value.
    pub kind: u8,
    /// NeuronCore index.
    pub core: u8,
    /// Engine index or DMA engine.
    pub unit: u8,
    /// DMA queue.
    pub queue: u8,
    /// The execution's compute index.
    pub compute_idx: u64,
    /// Kind-specific code.
    pub code: u32,
    /// Kind-specific detail.
    pub detail: u32,
    /// Kind-specific 64-bit value.
    pub aux: u64,
}

const _: () = assert!(core::mem::size_of::<NqEntry>() == NQ_ENTRY_SIZE);
const _: () = assert!(core::mem::offset_of!(NqEntry, seq) == 0x00);
const _: () = assert!(core::mem::offset_of!(NqEntry, kind) == 0x04);
const _: () = assert!(core::mem::offset_of!(NqEntry, core) == 0x05);
const _: () = assert!(core::mem::offset_of!(NqEntry, unit) == 0x06);
const _: () = assert!(core::mem::offset_of!(NqEntry, queue) == 0x07);
const _: () = assert!(core::mem::offset_of!(NqEntry, compute_idx) == 0x08);
const _: () = assert!(core::mem::offset_of!(NqEntry, code) == 0x10);
const _: () = assert!(core::mem::offset_of!(NqEntry, detail) == 0x14);
const _: () = assert!(core::mem::offset_of!(NqEntry, aux) == 0x18);

impl NqEntry {
    /// The 32 little-endian wire bytes.
    pub fn to_bytes(&self) -> [u8; NQ_ENTRY_SIZE] {
        let mut b = [0u8; NQ_ENTRY_SIZE];
        b[0x00..0x04].copy_from_slice(&self.seq.to_le_bytes());
        b[0x04] = self.kind;
        b[0x05] = self.core;
        b[0x06] = self.unit;
        b[0x07] = self.queue;
        b[0x08..0x10].copy_from_slice(&self.compute_idx.to_le_bytes());
        b[0x10..0x14].copy_from_slice(&self.code.to_le_bytes());
        b[0x14..0x18].copy_from_slice(&self.detail.to_le_bytes());
        b[0x18..0x20].copy_from_slice(&self.aux.to_le_bytes());
        b
    }

    /// Reads an entry from its 32 wire bytes.
    pub fn from_bytes(b: &[u8; NQ_ENTRY_SIZE]) -> NqEntry {
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| u64::from(u32_at(o)) | u64::from(u32_at(o + 4)) << 32;
        NqEntry {
            seq: u32_at(0x00),
            kind: b[0x04],
            core: b[0x05],
            unit: b[0x06],
            queue: b[0x07],
            compute_idx: u64_at(0x08),
            code: u32_at(0x10),
            detail: u32_at(0x14),
            aux: u64_at(0x18),
        }
    }

    /// Reads an entry from the first 32 bytes of `bytes`; an error if there are fewer.
    pub fn from_slice(bytes: &[u8]) -> Result<NqEntry, NqError> {
        let head: &[u8; NQ_ENTRY_SIZE] = bytes
            .get(..NQ_ENTRY_SIZE)
            .and_then(|b| b.try_into().ok())
            .ok_or(NqError::Truncated { len: bytes.len() })?;
        Ok(NqEntry::from_bytes(head))
    }

    /// Whether the slot is empty (`seq == 0`).
    pub const fn is_empty(&self) -> bool {
        self.seq == 0
    }
}

fn byte(field: &'static str, value: u32) -> Result<u8, NqError> {
    u8::try_from(value).map_err(|_| NqError::FieldRange { field, value })
}

fn engine_of(kind: NotificationKind, unit: u8) -> Result<EngineKind, NqError> {
    EngineKind::from_index(usize::from(unit)).ok_or(NqError::UnknownEngine { kind, unit })
}

impl Notification {
    /// The entry's kind.
    pub const fn kind(&self) -> NotificationKind {
        match self {
            Notification::Completion { .. } => NotificationKind::Completion,
            Notification::ExecError { .. } => NotificationKind::ExecError,
            Notification::DmaError { .. } => NotificationKind::DmaError,
            Notification::HbmUncorrectable { .. } => NotificationKind::HbmUncorrectable,
            Notification::NanProduced { .. } => NotificationKind::NanProduced,
            Notification::Notify { .. } => NotificationKind::Notify,
            Notification::Overflow { .. } => NotificationKind::Overflow,
            Notification::Deadlock { .. } => NotificationKind::Deadlock,
            Notification::DgeError { .. } => NotificationKind::DgeError,
        }
    }

    /// The core the notification is about.
    pub const fn core(&self) -> NcIndex {
        match *self {
            Notification::Completion { core, .. }
            | Notification::ExecError { core, .. }
            | Notification::DmaError { core, .. }
            | Notification::HbmUncorrectable { core, .. }
            | Notification::NanProduced { core, .. }
            | Notification::Notify { core, .. }
            | Notification::Overflow { core, .. }
            | Notification::Deadlock { core, .. }
            | Notification::DgeError { core, .. } => core,
        }
    }

    /// The execution the notification belongs to (none for [`Notification::Overflow`]).
    pub const fn compute_idx(&self) -> Option<u64> {
        match *self {
            Notification::Completion { compute_idx, .. }
            | Notification::ExecError { compute_idx, .. }
            | Notification::DmaError { compute_idx, .. }
            | Notification::HbmUncorrectable { compute_idx, .. }
            | Notification::NanProduced { compute_idx, .. }
            | Notification::Notify { compute_idx, .. }
            | Notification::Deadlock { compute_idx, .. }
            | Notification::DgeError { compute_idx, .. } => Some(compute_idx),
            Notification::Overflow { .. } => None,
        }
    }

    /// The raw entry with sequence number `seq` (which must not be 0). Fails if the core, DMA
    /// engine or queue index does not fit its one-byte field.
    pub fn encode(&self, seq: u32) -> Result<NqEntry, NqError> {
        if seq == 0 {
            return Err(NqError::ZeroSeq);
        }
        let mut e = NqEntry {
            seq,
            kind: self.kind() as u8,
            core: byte("core", self.core().0)?,
            compute_idx: self.compute_idx().unwrap_or(0),
            ..NqEntry::default()
        };
        match *self {
            Notification::Completion {
                cycles, faulted, ..
            } => {
                e.code = u32::from(faulted);
                e.aux = cycles;
            }
            Notification::ExecError {
                engine,
                instruction_index,
                opcode,
                fault,
                ..
            } => {
                e.unit = engine as u8;
                e.code = opcode;
                e.detail = fault as u32;
                e.aux = instruction_index;
            }
            Notification::DmaError {
                engine,
                queue,
                descriptor_index,
                address,
                fault,
                ..
            } => {
                e.unit = byte("dma engine", engine.0)?;
                e.queue = byte("queue", queue.0)?;
                e.code = fault as u32;
                e.detail = descriptor_index;
                e.aux = address.raw();
            }
            Notification::HbmUncorrectable { address, .. } => e.aux = address.raw(),
            Notification::NanProduced {
                engine,
                instruction_index,
                ..
            } => {
                e.unit = engine as u8;
                e.aux = instruction_index;
            }
            Notification::Notify {
                engine,
                instruction_index,
                value,
                ..
            } => {
                e.unit = engine as u8;
                e.code = value;
                e.aux = instruction_index;
            }
            Notification::Overflow { lost, .. } => e.code = lost,
            Notification::Deadlock {
                engine,
                instruction_index,
                sem,
                value,
                awaited,
                ..
            } => {
                e.unit = engine as u8;
                e.code = sem;
                e.detail = value as u32;
                e.aux = u64::from(instruction_index) | u64::from(awaited) << 32;
            }
            Notification::DgeError {
                engine,
                instruction_index,
                fault,
                address,
                ..
            } => {
                e.unit = engine as u8;
                e.code = fault as u32;
                e.detail = instruction_index;
                e.aux = address.raw();
            }
        }
        Ok(e)
    }

    /// Decodes an entry (its `seq` is not looked at). Fields the kind does not use are ignored.
    pub fn decode(e: &NqEntry) -> Result<Notification, NqError> {
        let kind =
            NotificationKind::from_u8(e.kind).ok_or(NqError::UnknownKind { kind: e.kind })?;
        let core = NcIndex(u32::from(e.core));
        let compute_idx = e.compute_idx;
        Ok(match kind {
            NotificationKind::Completion => Notification::Completion {
                core,
                compute_idx,
                cycles: e.aux,
                faulted: match e.code {
                    0 => false,
                    1 => true,
                    code => return Err(NqError::UnknownFault { kind, code }),
                },
            },
            NotificationKind::ExecError => Notification::ExecError {
                core,
                engine: engine_of(kind, e.unit)?,
                compute_idx,
                instruction_index: e.aux,
                opcode: e.code,
                fault: ExecFault::from_code(e.detail).ok_or(NqError::UnknownFault {
                    kind,
                    code: e.detail,
                })?,
            },
            NotificationKind::DmaError => Notification::DmaError {
                core,
                engine: DmaEngine(u32::from(e.unit)),
                queue: QueueId(u32::from(e.queue)),
                compute_idx,
                descriptor_index: e.detail,
                address: DeviceAddr::new(e.aux),
                fault: DmaFault::from_code(e.code)
                    .ok_or(NqError::UnknownFault { kind, code: e.code })?,
            },
            NotificationKind::HbmUncorrectable => Notification::HbmUncorrectable {
                core,
                compute_idx,
                address: DeviceAddr::new(e.aux),
            },
            NotificationKind::NanProduced => Notification::NanProduced {
                core,
                engine: engine_of(kind, e.unit)?,
                compute_idx,
                instruction_index: e.aux,
            },
            NotificationKind::Notify => Notification::Notify {
                core,
                engine: engine_of(kind, e.unit)?,
                compute_idx,
                instruction_index: e.aux,
                value: e.code,
            },
            NotificationKind::Overflow => Notification::Overflow { core, lost: e.code },
            NotificationKind::Deadlock => Notification::Deadlock {
                core,
                engine: engine_of(kind, e.unit)?,
                compute_idx,
                instruction_index: e.aux as u32,
                sem: e.code,
                value: e.detail as i32,
                awaited: (e.aux >> 32) as u32,
            },
            NotificationKind::DgeError => Notification::DgeError {
                core,
                engine: engine_of(kind, e.unit)?,
                compute_idx,
                instruction_index: e.detail,
                fault: DmaFault::from_code(e.code)
                    .ok_or(NqError::UnknownFault { kind, code: e.code })?,
                address: DeviceAddr::new(e.aux),
            },
        })
    }
}

/// The sequence number after `seq`: `seq + 1`, with `u32::MAX` followed by 1 (0 is skipped).
pub const fn next_seq(seq: u32) -> u32 {
    if seq == u32::MAX {
        1
    } else {
        seq + 1
    }
}

/// The sequence number of the k-th entry (k from 0) written to a queue.
pub const fn seq_for_index(k: u64) -> u32 {
    (k % SEQ_MODULUS) as u32 + 1
}

/// How many entries after `from` the entry `to` comes, modulo the 2^32 − 1 sequence numbers.
fn seq_distance(from: u32, to: u32) -> u64 {
    (u64::from(to) + SEQ_MODULUS - u64::from(from)) % SEQ_MODULUS
}

/// Number of entries in a queue of `bytes` bytes, checking the size.
pub fn queue_entries(bytes: usize) -> Result<u32, NqError> {
    if !bytes.is_power_of_two() || !(NQ_MIN_BYTES..=NQ_MAX_BYTES).contains(&bytes) {
        return Err(NqError::BadQueueSize { bytes });
    }
    Ok((bytes / NQ_ENTRY_SIZE) as u32)
}

fn check_len(entries: u32, got: usize) -> Result<(), NqError> {
    let expected = entries as usize * NQ_ENTRY_SIZE;
    if got == expected {
        Ok(())
    } else {
        Err(NqError::SizeMismatch { expected, got })
    }
}

/// The reading side of one notification queue.
///
/// [`NqReader::poll`] looks at the slot `head`:
///
/// * `seq == 0`, or a `seq` older than `expected_seq` (left from the previous lap): nothing
///   new, `Ok(None)`;
/// * `seq == expected_seq`: the next entry; the reader moves on and returns it (if it fails to
///   decode, the reader still moves past it and returns the decode error);
/// * `seq` ahead of `expected_seq` by a multiple of `entries`: the producer lapped the reader.
///   Every entry older than `seq − entries + 1` is gone; the reader skips them and moves one
///   slot on, repeating while that slot shows a further lap, so that it stops at the oldest
///   entry still in the queue. It returns [`NqError::Overflow`] with the number skipped; the
///   next poll returns that oldest survivor;
/// * any other `seq`: [`NqError::Misplaced`], and the reader stays put.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NqReader {
    entries: u32,
    head: u32,
    expected_seq: u32,
}

impl NqReader {
    /// A reader at the start of a freshly initialised (zeroed) queue of `queue_bytes` bytes.
    pub fn new(queue_bytes: usize) -> Result<NqReader, NqError> {
        Ok(NqReader {
            entries: queue_entries(queue_bytes)?,
            head: 0,
            expected_seq: 1,
        })
    }

    /// A reader that has already consumed `consumed` entries of the queue.
    pub fn resume(queue_bytes: usize, consumed: u64) -> Result<NqReader, NqError> {
        let entries = queue_entries(queue_bytes)?;
        Ok(NqReader {
            entries,
            head: (consumed % u64::from(entries)) as u32,
            expected_seq: seq_for_index(consumed),
        })
    }

    /// Number of slots in the queue.
    pub const fn entries(&self) -> u32 {
        self.entries
    }

    /// The slot read next.
    pub const fn head(&self) -> u32 {
        self.head
    }

    /// The sequence number expected at [`NqReader::head`].
    pub const fn expected_seq(&self) -> u32 {
        self.expected_seq
    }

    fn skip(&mut self, n: u64) {
        self.head = ((u64::from(self.head) + n) % u64::from(self.entries)) as u32;
        self.expected_seq = ((u64::from(self.expected_seq) - 1 + n) % SEQ_MODULUS) as u32 + 1;
    }

    /// Reads the next notification from `queue` (the whole queue buffer), if one has been
    /// written. See the type's documentation for the rules.
    pub fn poll(&mut self, queue: &[u8]) -> Result<Option<Notification>, NqError> {
        check_len(self.entries, queue.len())?;
        let off = self.head as usize * NQ_ENTRY_SIZE;
        let entry = NqEntry::from_slice(&queue[off..])?;
        if entry.seq == 0 {
            return Ok(None);
        }
        let d = seq_distance(self.expected_seq, entry.seq);
        let n = u64::from(self.entries);
        if d == 0 {
            self.skip(1);
            return Notification::decode(&entry).map(Some);
        }
        if d > SEQ_MODULUS / 2 {
            return Ok(None);
        }
        if !d.is_multiple_of(n) {
            return Err(NqError::Misplaced {
                slot: self.head,
                expected: self.expected_seq,
                found: entry.seq,
            });
        }
        // Lapped. Skip to the oldest entry that can still be in the queue; if the producer has
        // overwritten that one too, keep skipping (at most one lap), so one error reports the
        // whole loss and the next poll returns the oldest surviving entry.
        let mut lost = 0u64;
        let mut d = d;
        for _ in 0..self.entries {
            let skip = d - n + 1;
            lost += skip;
            self.skip(skip);
            let off = self.head as usize * NQ_ENTRY_SIZE;
            let seq = NqEntry::from_slice(&queue[off..])?.seq;
            d = seq_distance(self.expected_seq, seq);
            if seq == 0 || d == 0 || d > SEQ_MODULUS / 2 || !d.is_multiple_of(n) {
                break;
            }
        }
        Err(NqError::Overflow {
            lost: u32::try_from(lost).unwrap_or(u32::MAX),
        })
    }
}

/// The writing side of one notification queue (what the simulator's device does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NqWriter {
    entries: u32,
    written: u64,
}

impl NqWriter {
    /// A writer at the start of a freshly initialised queue of `queue_bytes` bytes.
    pub fn new(queue_bytes: usize) -> Result<NqWriter, NqError> {
        NqWriter::resume(queue_bytes, 0)
    }

    /// A writer that has already written `written` entries.
    pub fn resume(queue_bytes: usize, written: u64) -> Result<NqWriter, NqError> {
        Ok(NqWriter {
            entries: queue_entries(queue_bytes)?,
            written,
        })
    }

    /// Entries written so far.
    pub const fn written(&self) -> u64 {
        self.written
    }

    /// The sequence number of the next entry.
    pub const fn next_seq(&self) -> u32 {
        seq_for_index(self.written)
    }

    /// The slot of the next entry.
    pub const fn next_slot(&self) -> u32 {
        (self.written % self.entries as u64) as u32
    }

    /// Writes `n` into its slot of `queue` (body first, `seq` last) and returns its sequence
    /// number. On error nothing is written.
    pub fn push(&mut self, queue: &mut [u8], n: &Notification) -> Result<u32, NqError> {
        check_len(self.entries, queue.len())?;
        let seq = self.next_seq();
        let bytes = n.encode(seq)?.to_bytes();
        let off = self.next_slot() as usize * NQ_ENTRY_SIZE;
        let slot = &mut queue[off..off + NQ_ENTRY_SIZE];
        slot[4..].copy_from_slice(&bytes[4..]);
        slot[..4].copy_from_slice(&bytes[..4]);
        self.written += 1;
        Ok(seq)
    }
}
