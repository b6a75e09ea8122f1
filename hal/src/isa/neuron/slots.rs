//! The slot types of the Neuron encoding (the [`Slot`] trait of [`crate::isa::layout`]): each
//! reads its field, accepting only the values the encoding is known to use, and names the byte
//! and the rule when it refuses one.

use core::ops::Range;

use crate::addr::SemaphoreId;
use crate::dtype::Dtype;
use crate::isa::codec::Record;
use crate::isa::layout::{get, le_slots, put, Slot};
use crate::isa::ops::QueueSetName;

use super::operand::{
    check_address_word, ActFunc, DmaAddr, DmaAddrKind, DmaPattern, NeuronAlu, NeuronAp,
};
use super::{NeuronError, PeTail, Sync, SyncWait, UPDATE_INC, WAIT_GE};

fn field(
    r: &Record,
    offset: usize,
    field: &'static str,
    value: u64,
    why: &'static str,
) -> NeuronError {
    NeuronError::Field {
        opcode: r.0[0],
        offset,
        field,
        value,
        why,
    }
}

/// A raw little-endian integer or float; any value is accepted.
pub(crate) struct Le(pub usize);

le_slots!(Le, NeuronError, NeuronError; u8, u16, u32, i32, f32);

/// A byte that must hold one of `allowed`.
pub(crate) struct OneOf(pub usize, pub &'static str, pub &'static [u8]);

impl Slot<u8> for OneOf {
    type DecodeError = NeuronError;
    type EncodeError = NeuronError;
    fn read(&self, r: &Record) -> Result<u8, NeuronError> {
        let v = r.0[self.0];
        if !self.2.contains(&v) {
            return Err(field(
                r,
                self.0,
                self.1,
                u64::from(v),
                "a value this field is not known to take",
            ));
        }
        Ok(v)
    }
    fn write(&self, r: &mut Record, v: &u8) -> Result<(), NeuronError> {
        r.0[self.0] = *v;
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 1
    }
}

/// A byte that is 0 or 1.
pub(crate) struct Flag(pub usize, pub &'static str);

impl Slot<bool> for Flag {
    type DecodeError = NeuronError;
    type EncodeError = NeuronError;
    fn read(&self, r: &Record) -> Result<bool, NeuronError> {
        match r.0[self.0] {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(field(r, self.0, self.1, u64::from(v), "must be 0 or 1")),
        }
    }
    fn write(&self, r: &mut Record, v: &bool) -> Result<(), NeuronError> {
        r.0[self.0] = u8::from(*v);
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 1
    }
}

/// The partition count of an operation (`channels`): 1..=128.
pub(crate) struct Partitions(pub usize);

impl Slot<u8> for Partitions {
    type DecodeError = NeuronError;
    type EncodeError = NeuronError;
    fn read(&self, r: &Record) -> Result<u8, NeuronError> {
        let p = r.0[self.0];
        if p == 0 || p > 128 {
            return Err(field(
                r,
                self.0,
                "partitions",
                u64::from(p),
                "must be 1..=128",
            ));
        }
        Ok(p)
    }
    fn write(&self, r: &mut Record, v: &u8) -> Result<(), NeuronError> {
        r.0[self.0] = *v;
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 1
    }
}

/// Which part of a byte a dtype code occupies.
#[derive(Clone, Copy)]
pub(crate) enum Part {
    /// The whole byte.
    Byte,
    /// Bits 0–3.
    Low,
    /// Bits 4–7.
    High,
}

/// A dtype code (`nrt_dtype_t`) in a byte or nibble.
pub(crate) struct Dt(pub usize, pub Part, pub &'static str);

impl Slot<Dtype> for Dt {
    type DecodeError = NeuronError;
    type EncodeError = NeuronError;
    fn read(&self, r: &Record) -> Result<Dtype, NeuronError> {
        let b = r.0[self.0];
        let code = match self.1 {
            Part::Byte => b,
            Part::Low => b & 0xF,
            Part::High => b >> 4,
        };
        Dtype::from_code(code).ok_or_else(|| {
            field(
                r,
                self.0,
                self.2,
                u64::from(code),
                "not an nrt_dtype_t code",
            )
        })
    }
    fn write(&self, r: &mut Record, v: &Dtype) -> Result<(), NeuronError> {
        let c = v.code();
        let b = &mut r.0[self.0];
        match self.1 {
            Part::Byte => *b = c,
            Part::Low => *b = (*b & 0xF0) | (c & 0xF),
            Part::High => *b = (*b & 0x0F) | (c << 4),
        }
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 1
    }
}

/// An ALU operation code.
pub(crate) struct Alu(pub usize, pub &'static str);

impl Slot<NeuronAlu> for Alu {
    type DecodeError = NeuronError;
    type EncodeError = NeuronError;
    fn read(&self, r: &Record) -> Result<NeuronAlu, NeuronError> {
        let v = r.0[self.0];
        NeuronAlu::from_code(v).ok_or_else(|| {
            field(
                r,
                self.0,
                self.1,
                u64::from(v),
                "only 0x00 (bypass), 0x04 (add), 0x06 (multiply) and 0x08 (max) are known",
            )
        })
    }
    fn write(&self, r: &mut Record, v: &NeuronAlu) -> Result<(), NeuronError> {
        r.0[self.0] = v.code();
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 1
    }
}

/// An activation function id.
pub(crate) struct Func(pub usize);

impl Slot<ActFunc> for Func {
    type DecodeError = NeuronError;
    type EncodeError = NeuronError;
    fn read(&self, r: &Record) -> Result<ActFunc, NeuronError> {
        let v = r.0[self.0];
        ActFunc::from_code(v).ok_or_else(|| {
            field(
                r,
                self.0,
                "activation function",
                u64::from(v),
                "not a function id of the activation tables this platform implements",
            )
        })
    }
    fn write(&self, r: &mut Record, v: &ActFunc) -> Result<(), NeuronError> {
        r.0[self.0] = v.code();
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 1
    }
}

/// An access pattern of `N` dims: its address word must be one the encoding uses and every
/// count at least 1.
pub(crate) struct Ap(pub usize, pub &'static str);

impl<const N: usize> Slot<NeuronAp<N>> for Ap {
    type DecodeError = NeuronError;
    type EncodeError = NeuronError;
    fn read(&self, r: &Record) -> Result<NeuronAp<N>, NeuronError> {
        let at = self.0;
        let addr = u32::from_le_bytes(get(r, at));
        check_address_word(addr).map_err(|why| field(r, at, self.1, u64::from(addr), why))?;
        let mut ap = NeuronAp {
            addr,
            steps: [0; N],
            nums: [0; N],
        };
        for i in 0..N {
            ap.steps[i] = i16::from_le_bytes(get(r, at + 4 + 2 * i));
            let num_at = at + 4 + 2 * N + 2 * i;
            ap.nums[i] = u16::from_le_bytes(get(r, num_at));
            if ap.nums[i] == 0 {
                return Err(field(
                    r,
                    num_at,
                    "access-pattern num",
                    0,
                    "every dimension has num ≥ 1",
                ));
            }
        }
        Ok(ap)
    }
    fn write(&self, r: &mut Record, v: &NeuronAp<N>) -> Result<(), NeuronError> {
        put(r, self.0, &v.addr.to_le_bytes());
        for i in 0..N {
            put(r, self.0 + 4 + 2 * i, &v.steps[i].to_le_bytes());
            put(r, self.0 + 4 + 2 * N + 2 * i, &v.nums[i].to_le_bytes());
        }
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 4 + 4 * N
    }
}

/// The sync block (bytes 4–11): an optional wait "until semaphore ≥ value" and an optional
/// "+1 on completion"; `second` adds `0xA0`'s second wait at bytes 32, 33 and 36–37.
pub(crate) struct SyncBlock {
    pub wait: bool,
    pub wait_required: bool,
    pub update: bool,
    pub second: bool,
}

impl SyncBlock {
    /// May wait, may update.
    pub const BOTH: SyncBlock = SyncBlock {
        wait: true,
        wait_required: false,
        update: true,
        second: false,
    };
    /// May wait, never updates.
    pub const WAIT: SyncBlock = SyncBlock {
        wait: true,
        wait_required: false,
        update: false,
        second: false,
    };
    /// Always waits, never updates.
    pub const WAIT_ONLY: SyncBlock = SyncBlock {
        wait: true,
        wait_required: true,
        update: false,
        second: false,
    };
    /// Always waits, with an optional second wait.
    pub const TWO_WAITS: SyncBlock = SyncBlock {
        wait: true,
        wait_required: true,
        update: false,
        second: true,
    };
}

impl Slot<Sync> for SyncBlock {
    type DecodeError = NeuronError;
    type EncodeError = NeuronError;
    fn read(&self, r: &Record) -> Result<Sync, NeuronError> {
        let b = &r.0;
        let wait = match b[4] {
            0 => None,
            WAIT_GE if self.wait => Some(SyncWait {
                sem: SemaphoreId(u32::from(b[5])),
                value: u32::from_le_bytes(get(r, 8)),
            }),
            WAIT_GE => {
                return Err(field(
                    r,
                    4,
                    "wait mode",
                    u64::from(WAIT_GE),
                    "this opcode never waits",
                ))
            }
            v => {
                return Err(field(
                    r,
                    4,
                    "wait mode",
                    u64::from(v),
                    "only 0x00 (none) and 0x05 (until semaphore ≥ value) are known",
                ))
            }
        };
        if self.wait_required && wait.is_none() {
            return Err(field(r, 4, "wait mode", 0, "this opcode always waits"));
        }
        let signal = match b[6] {
            0 => None,
            UPDATE_INC if self.update => Some(SemaphoreId(u32::from(b[7]))),
            UPDATE_INC => {
                return Err(field(
                    r,
                    6,
                    "update mode",
                    u64::from(UPDATE_INC),
                    "this opcode never updates a semaphore",
                ))
            }
            v => {
                return Err(field(
                    r,
                    6,
                    "update mode",
                    u64::from(v),
                    "only 0x00 (none) and 0x13 (+1 on completion) are known",
                ))
            }
        };
        let second = if self.second {
            match b[32] {
                0 => None,
                WAIT_GE => Some(SyncWait {
                    sem: SemaphoreId(u32::from(b[33])),
                    value: u32::from(u16::from_le_bytes(get(r, 36))),
                }),
                v => {
                    return Err(field(
                        r,
                        32,
                        "second wait mode",
                        u64::from(v),
                        "only 0x00 and 0x05 are known",
                    ))
                }
            }
        } else {
            None
        };
        Ok(Sync {
            waits: [wait, second],
            signal,
        })
    }
    fn write(&self, r: &mut Record, s: &Sync) -> Result<(), NeuronError> {
        let sem_byte = |sem: SemaphoreId| {
            u8::try_from(sem.0).map_err(|_| {
                NeuronError::NotEncodable(format!("semaphore {} does not fit a byte", sem.0))
            })
        };
        if let Some(w) = s.waits[0] {
            r.0[4] = WAIT_GE;
            r.0[5] = sem_byte(w.sem)?;
            put(r, 8, &w.value.to_le_bytes());
        }
        if let Some(w) = s.waits[1] {
            let value = u16::try_from(w.value).map_err(|_| {
                NeuronError::NotEncodable(format!(
                    "second wait value {} does not fit 16 bits",
                    w.value
                ))
            })?;
            r.0[32] = WAIT_GE;
            r.0[33] = sem_byte(w.sem)?;
            put(r, 36, &value.to_le_bytes());
        }
        if let Some(sem) = s.signal {
            r.0[6] = UPDATE_INC;
            r.0[7] = sem_byte(sem)?;
        }
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        4..12
    }
}

/// LoadStationary bytes 44–47 (three known values).
pub(crate) struct Tail(pub usize);

impl Slot<PeTail> for Tail {
    type DecodeError = NeuronError;
    type EncodeError = NeuronError;
    fn read(&self, r: &Record) -> Result<PeTail, NeuronError> {
        let b: [u8; 4] = get(r, self.0);
        PeTail::ALL
            .into_iter()
            .find(|t| t.bytes() == b)
            .ok_or_else(|| {
                field(
                    r,
                    self.0,
                    "PE tail",
                    u64::from(u32::from_le_bytes(b)),
                    "only 0F 0F 00 00, 0F 0F 02 00, 0F 0F 0F 00 are known",
                )
            })
    }
    fn write(&self, r: &mut Record, v: &PeTail) -> Result<(), NeuronError> {
        put(r, self.0, &v.bytes());
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 4
    }
}

/// The `0xC1` queue-set name: graphic ASCII, NUL-padded, in `len` bytes from `at`.
pub(crate) struct QueueName(pub usize, pub usize);

impl Slot<QueueSetName> for QueueName {
    type DecodeError = NeuronError;
    type EncodeError = NeuronError;
    fn read(&self, r: &Record) -> Result<QueueSetName, NeuronError> {
        let f = &r.0[self.0..self.0 + self.1];
        let len = f.iter().position(|&c| c == 0).unwrap_or(f.len());
        QueueSetName::from_ascii(&f[..len]).map_err(|_| {
            field(
                r,
                self.0,
                "queue-set name",
                len as u64,
                "1..=32 graphic ASCII characters, NUL-padded",
            )
        })
    }
    fn write(&self, r: &mut Record, v: &QueueSetName) -> Result<(), NeuronError> {
        let b = v.as_str().as_bytes();
        if b.len() > self.1 {
            return Err(NeuronError::NotEncodable(format!(
                "queue-set name {v} is longer than {} bytes",
                self.1
            )));
        }
        put(r, self.0, b);
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + self.1
    }
}

/// A `0xD4` address: u32 offset (or register), index byte, two zero bytes, kind byte.
pub(crate) struct Addr(pub usize);

impl Slot<DmaAddr> for Addr {
    type DecodeError = NeuronError;
    type EncodeError = NeuronError;
    fn read(&self, r: &Record) -> Result<DmaAddr, NeuronError> {
        let kind_at = self.0 + 7;
        let kind = DmaAddrKind::from_code(r.0[kind_at]).ok_or_else(|| {
            field(
                r,
                kind_at,
                "address kind",
                u64::from(r.0[kind_at]),
                "only 0x10 (immediate), 0x20 (DGE table) and 0x28 (DGE table + register) are known",
            )
        })?;
        Ok(DmaAddr {
            offset: u32::from_le_bytes(get(r, self.0)),
            index: r.0[self.0 + 4],
            kind,
        })
    }
    fn write(&self, r: &mut Record, v: &DmaAddr) -> Result<(), NeuronError> {
        put(r, self.0, &v.offset.to_le_bytes());
        r.0[self.0 + 4] = v.index;
        r.0[self.0 + 7] = v.kind.code();
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 8
    }
}

/// A `0xD4` pattern: two i32 steps at `steps`, two u16 counts at `nums` (each ≥ 1).
pub(crate) struct Pattern {
    pub steps: usize,
    pub nums: usize,
}

impl Slot<DmaPattern> for Pattern {
    type DecodeError = NeuronError;
    type EncodeError = NeuronError;
    fn read(&self, r: &Record) -> Result<DmaPattern, NeuronError> {
        DmaPattern::read_at(r, self.steps, self.nums)
            .map_err(|at| field(r, at, "pattern num", 0, "every dimension has num ≥ 1"))
    }
    fn write(&self, r: &mut Record, v: &DmaPattern) -> Result<(), NeuronError> {
        v.write_at(r, self.steps, self.nums);
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.steps..self.steps + 12
    }
}

/// A little-endian integer that must equal one known value.
pub(crate) struct Exactly<T>(pub usize, pub &'static str, pub T);

macro_rules! exactly_slot {
    ($($t:ty),*) => {$(
        impl Slot<$t> for Exactly<$t> {
            type DecodeError = NeuronError;
            type EncodeError = NeuronError;
            fn read(&self, r: &Record) -> Result<$t, NeuronError> {
                let v = <$t>::from_le_bytes(get(r, self.0));
                if v != self.2 {
                    return Err(field(r, self.0, self.1, v as u64, "only one value is known"));
                }
                Ok(v)
            }
            fn write(&self, r: &mut Record, v: &$t) -> Result<(), NeuronError> {
                put(r, self.0, &v.to_le_bytes());
                Ok(())
            }
            fn span(&self) -> Range<usize> {
                self.0..self.0 + core::mem::size_of::<$t>()
            }
        }
    )*};
}
exactly_slot!(u16, u64);

/// Four consecutive 16-bit words (a pattern's steps or counts), innermost first.
pub(crate) struct Words(pub usize);

macro_rules! words_slot {
    ($($t:ty),*) => {$(
        impl Slot<[$t; 4]> for Words {
            type DecodeError = NeuronError;
            type EncodeError = NeuronError;
            fn read(&self, r: &Record) -> Result<[$t; 4], NeuronError> {
                let mut v = [0; 4];
                for (i, x) in v.iter_mut().enumerate() {
                    *x = <$t>::from_le_bytes(get(r, self.0 + 2 * i));
                }
                Ok(v)
            }
            fn write(&self, r: &mut Record, v: &[$t; 4]) -> Result<(), NeuronError> {
                for (i, x) in v.iter().enumerate() {
                    put(r, self.0 + 2 * i, &x.to_le_bytes());
                }
                Ok(())
            }
            fn span(&self) -> Range<usize> {
                self.0..self.0 + 8
            }
        }
    )*};
}
words_slot!(i16, u16);

/// A register number (u32): one of an engine's [`REGISTERS`](super::REGISTERS).
pub(crate) struct Register(pub usize);

impl Slot<u32> for Register {
    type DecodeError = NeuronError;
    type EncodeError = NeuronError;
    fn read(&self, r: &Record) -> Result<u32, NeuronError> {
        let v = u32::from_le_bytes(get(r, self.0));
        if v >= super::REGISTERS {
            return Err(field(
                r,
                self.0,
                "register",
                u64::from(v),
                "beyond the engine's registers",
            ));
        }
        Ok(v)
    }
    fn write(&self, r: &mut Record, v: &u32) -> Result<(), NeuronError> {
        put(r, self.0, &v.to_le_bytes());
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 4
    }
}
