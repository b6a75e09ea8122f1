//! The slot types of the platform encoding: where each kind of field sits in a record and how
//! it is read, checked and written (the [`Slot`] trait of [`crate::isa::layout`]).

use core::ops::Range;

use crate::addr::{DeviceAddr, EventId, SemaphoreId};
use crate::dtype::Dtype;
use crate::isa::ap::{AccessPattern, ApError, IotaDim, IotaPattern, ScalarOperand, ShortOperand};
use crate::isa::codec::{DecodeError, EncodeError, Record, RECORD_SIZE};
use crate::isa::dma::{DmaEnd, DmaPattern};
use crate::isa::instr::TensorOperand;
use crate::isa::layout::{get, le_slots, put, Slot};
use crate::isa::ops::{
    ActivationFunc, AluOp, MarkerLabel, MatmulPass, QueueSetName, ReduceCmd, SemCmp, SemOp,
};

/// A little-endian integer or float of fixed width at an offset.
pub(crate) struct Le(pub usize);

le_slots!(Le, DecodeError, EncodeError; u8, u16, u32, i32, u64, f32);

impl Slot<DeviceAddr> for Le {
    type DecodeError = DecodeError;
    type EncodeError = EncodeError;
    fn read(&self, r: &Record) -> Result<DeviceAddr, DecodeError> {
        Ok(DeviceAddr::new(u64::from_le_bytes(get(r, self.0))))
    }
    fn write(&self, r: &mut Record, v: &DeviceAddr) -> Result<(), EncodeError> {
        put(r, self.0, &v.raw().to_le_bytes());
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 8
    }
}

/// A semaphore or event id stored as a u16 (`field` names it in an encode error).
pub(crate) struct Id16(pub usize, pub &'static str);

macro_rules! id_slot {
    ($($t:ident),*) => {$(
        impl Slot<$t> for Id16 {
            type DecodeError = DecodeError;
            type EncodeError = EncodeError;
            fn read(&self, r: &Record) -> Result<$t, DecodeError> {
                Ok($t(u32::from(u16::from_le_bytes(get(r, self.0)))))
            }
            fn write(&self, r: &mut Record, v: &$t) -> Result<(), EncodeError> {
                let v = u16::try_from(v.0).map_err(|_| EncodeError::FieldOutOfRange {
                    field: self.1,
                    value: u64::from(v.0),
                    range: "0..=65535",
                })?;
                put(r, self.0, &v.to_le_bytes());
                Ok(())
            }
            fn span(&self) -> Range<usize> {
                self.0..self.0 + 2
            }
        }
    )*};
}
id_slot!(SemaphoreId, EventId);

/// A boolean stored as a u32 that must be 0 or 1.
pub(crate) struct Bool32(pub usize, pub &'static str);

impl Slot<bool> for Bool32 {
    type DecodeError = DecodeError;
    type EncodeError = EncodeError;
    fn read(&self, r: &Record) -> Result<bool, DecodeError> {
        match u32::from_le_bytes(get(r, self.0)) {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(DecodeError::FieldOutOfRange {
                field: self.1,
                offset: self.0,
                value: u64::from(v),
                range: "0 or 1",
            }),
        }
    }
    fn write(&self, r: &mut Record, v: &bool) -> Result<(), EncodeError> {
        put(r, self.0, &u32::from(*v).to_le_bytes());
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 4
    }
}

/// One bit of a flags byte: `Bit(byte, bit)`.
pub(crate) struct Bit(pub usize, pub u8);

impl Slot<bool> for Bit {
    type DecodeError = DecodeError;
    type EncodeError = EncodeError;
    fn read(&self, r: &Record) -> Result<bool, DecodeError> {
        Ok(r.0[self.0] & (1 << self.1) != 0)
    }
    fn write(&self, r: &mut Record, v: &bool) -> Result<(), EncodeError> {
        r.0[self.0] |= u8::from(*v) << self.1;
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 1
    }
}

/// A one-byte enumeration code (`field` names it in a decode error).
pub(crate) struct Code(pub usize, pub &'static str);

macro_rules! code_slot {
    ($($t:ty),*) => {$(
        impl Slot<$t> for Code {
            type DecodeError = DecodeError;
            type EncodeError = EncodeError;
            fn read(&self, r: &Record) -> Result<$t, DecodeError> {
                let value = r.0[self.0];
                <$t>::from_code(value).ok_or(DecodeError::BadEnum {
                    field: self.1,
                    offset: self.0,
                    value,
                })
            }
            fn write(&self, r: &mut Record, v: &$t) -> Result<(), EncodeError> {
                r.0[self.0] = v.code();
                Ok(())
            }
            fn span(&self) -> Range<usize> {
                self.0..self.0 + 1
            }
        }
    )*};
}
code_slot!(ActivationFunc, AluOp, MatmulPass, ReduceCmd, SemCmp, SemOp);

/// `tensor_reduce`'s op: an [`AluOp`] code that must be a legal reduction.
pub(crate) struct ReduceOp(pub usize);

impl Slot<AluOp> for ReduceOp {
    type DecodeError = DecodeError;
    type EncodeError = EncodeError;
    fn read(&self, r: &Record) -> Result<AluOp, DecodeError> {
        let op: AluOp = Code(self.0, "ALU op").read(r)?;
        if !op.is_legal_reduction() {
            return Err(DecodeError::IllegalReduction(op));
        }
        Ok(op)
    }
    fn write(&self, r: &mut Record, v: &AluOp) -> Result<(), EncodeError> {
        if !v.is_legal_reduction() {
            return Err(EncodeError::IllegalReduction(*v));
        }
        Code(self.0, "ALU op").write(r, v)
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 1
    }
}

/// A byte that must lie in `1..=4` (reduce axes).
pub(crate) struct OneToFour(pub usize, pub &'static str);

impl Slot<u8> for OneToFour {
    type DecodeError = DecodeError;
    type EncodeError = EncodeError;
    fn read(&self, r: &Record) -> Result<u8, DecodeError> {
        let v = r.0[self.0];
        if !(1..=4).contains(&v) {
            return Err(DecodeError::FieldOutOfRange {
                field: self.1,
                offset: self.0,
                value: u64::from(v),
                range: "1..=4",
            });
        }
        Ok(v)
    }
    fn write(&self, r: &mut Record, v: &u8) -> Result<(), EncodeError> {
        if !(1..=4).contains(v) {
            return Err(EncodeError::FieldOutOfRange {
                field: self.1,
                value: u64::from(*v),
                range: "1..=4",
            });
        }
        r.0[self.0] = *v;
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 1
    }
}

/// A 22-byte access pattern.
pub(crate) struct Ap(pub usize);

impl Slot<AccessPattern> for Ap {
    type DecodeError = DecodeError;
    type EncodeError = EncodeError;
    fn read(&self, r: &Record) -> Result<AccessPattern, DecodeError> {
        AccessPattern::decode(&get(r, self.0)).map_err(|reason| DecodeError::BadAccessPattern {
            offset: self.0,
            reason,
        })
    }
    fn write(&self, r: &mut Record, v: &AccessPattern) -> Result<(), EncodeError> {
        put(r, self.0, &v.encode());
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + AccessPattern::ENCODED_LEN
    }
}

fn read_short(r: &Record, at: usize) -> Result<ShortOperand, DecodeError> {
    ShortOperand::from_word(u32::from_le_bytes(get(r, at)))
        .map_err(|reason| DecodeError::BadAccessPattern { offset: at, reason })
}

/// `tensor_tensor`'s second input: a short operand borrowing the first input's shape. A full
/// pattern (from the Neuron encoding) has no slot here.
pub(crate) struct Borrowed(pub usize);

impl Slot<TensorOperand> for Borrowed {
    type DecodeError = DecodeError;
    type EncodeError = EncodeError;
    fn read(&self, r: &Record) -> Result<TensorOperand, DecodeError> {
        read_short(r, self.0).map(TensorOperand::Borrowed)
    }
    fn write(&self, r: &mut Record, v: &TensorOperand) -> Result<(), EncodeError> {
        match v {
            TensorOperand::Borrowed(s) => {
                put(r, self.0, &s.to_word().to_le_bytes());
                Ok(())
            }
            TensorOperand::Pattern(_) => Err(EncodeError::NotEncodable {
                what: "tensor_tensor with a full in1 pattern (the platform's in1 is a short operand borrowing in0's shape)",
            }),
        }
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 4
    }
}

/// A scalar operand at `at`: an f32 immediate, or a `[P, 1]` vector (a short operand) when the
/// flag bit `vector` is set.
pub(crate) struct Scalar {
    pub at: usize,
    pub vector: Bit,
}

impl Slot<ScalarOperand> for Scalar {
    type DecodeError = DecodeError;
    type EncodeError = EncodeError;
    fn read(&self, r: &Record) -> Result<ScalarOperand, DecodeError> {
        Ok(if self.vector.read(r)? {
            ScalarOperand::Vector(read_short(r, self.at)?)
        } else {
            ScalarOperand::Imm(f32::from_le_bytes(get(r, self.at)))
        })
    }
    fn write(&self, r: &mut Record, v: &ScalarOperand) -> Result<(), EncodeError> {
        self.vector.write(r, &v.is_vector())?;
        match v {
            ScalarOperand::Imm(x) => put(r, self.at, &x.to_bits().to_le_bytes()),
            ScalarOperand::Vector(s) => put(r, self.at, &s.to_word().to_le_bytes()),
        }
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.at..self.at + 4
    }
}

/// `act`'s optional bias at `at`: a `[P, 1]` vector (a short operand) when flag bit `vector`
/// is set, an f32 immediate when flag bit `imm` is set; none when neither is.
pub(crate) struct Bias {
    pub at: usize,
    pub vector: Bit,
    pub imm: Bit,
}

impl Slot<Option<ScalarOperand>> for Bias {
    type DecodeError = DecodeError;
    type EncodeError = EncodeError;
    fn read(&self, r: &Record) -> Result<Option<ScalarOperand>, DecodeError> {
        match (self.vector.read(r)?, self.imm.read(r)?) {
            (false, false) => Ok(None),
            (true, false) => read_short(r, self.at).map(|s| Some(ScalarOperand::Vector(s))),
            (false, true) => Ok(Some(ScalarOperand::Imm(f32::from_le_bytes(get(
                r, self.at,
            ))))),
            (true, true) => Err(DecodeError::ReservedFlagBits {
                offset: self.imm.0,
                bits: 1 << self.imm.1,
            }),
        }
    }
    fn write(&self, r: &mut Record, v: &Option<ScalarOperand>) -> Result<(), EncodeError> {
        match v {
            None => {}
            Some(ScalarOperand::Vector(s)) => {
                self.vector.write(r, &true)?;
                put(r, self.at, &s.to_word().to_le_bytes());
            }
            Some(ScalarOperand::Imm(x)) => {
                self.imm.write(r, &true)?;
                put(r, self.at, &x.to_bits().to_le_bytes());
            }
        }
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.at..self.at + 4
    }
}

/// The text of a name field: the bytes from `at` up to the first NUL or `at + max`.
fn text(r: &Record, at: usize, max: usize) -> &[u8] {
    let field = &r.0[at..(at + max).min(RECORD_SIZE)];
    let len = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    &field[..len]
}

/// The `0xC1` queue-set name: graphic ASCII from `at`, NUL-terminated or filling the field.
pub(crate) struct QueueName(pub usize);

impl Slot<QueueSetName> for QueueName {
    type DecodeError = DecodeError;
    type EncodeError = EncodeError;
    fn read(&self, r: &Record) -> Result<QueueSetName, DecodeError> {
        QueueSetName::from_ascii(text(r, self.0, QueueSetName::MAX_LEN))
            .map_err(DecodeError::BadQueueName)
    }
    fn write(&self, r: &mut Record, v: &QueueSetName) -> Result<(), EncodeError> {
        put(r, self.0, v.as_str().as_bytes());
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + QueueSetName::MAX_LEN
    }
}

/// The `0xF2` label: printable ASCII from `at`, NUL-padded.
pub(crate) struct Label(pub usize);

impl Slot<MarkerLabel> for Label {
    type DecodeError = DecodeError;
    type EncodeError = EncodeError;
    fn read(&self, r: &Record) -> Result<MarkerLabel, DecodeError> {
        MarkerLabel::from_ascii(text(r, self.0, MarkerLabel::MAX_LEN))
            .map_err(DecodeError::BadLabel)
    }
    fn write(&self, r: &mut Record, v: &MarkerLabel) -> Result<(), EncodeError> {
        put(r, self.0, v.as_str().as_bytes());
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + MarkerLabel::MAX_LEN
    }
}

/// The iota value pattern: its dimension count at `ndims` (1..=4), four i32 steps at `steps`
/// and four u16 counts at `counts`, outermost first, unused dimensions as step 0, count 1.
pub(crate) struct Iota {
    pub ndims: usize,
    pub steps: usize,
    pub counts: usize,
}

impl Slot<IotaPattern> for Iota {
    type DecodeError = DecodeError;
    type EncodeError = EncodeError;
    fn read(&self, r: &Record) -> Result<IotaPattern, DecodeError> {
        let ndims = usize::from(r.0[self.ndims]);
        if !(1..=4).contains(&ndims) {
            return Err(DecodeError::FieldOutOfRange {
                field: "iota ndims",
                offset: self.ndims,
                value: ndims as u64,
                range: "1..=4",
            });
        }
        let mut dims = [IotaDim::UNUSED; 4];
        for (i, d) in dims.iter_mut().enumerate() {
            *d = IotaDim::new(
                i32::from_le_bytes(get(r, self.steps + 4 * i)),
                u16::from_le_bytes(get(r, self.counts + 2 * i)),
            );
            if i >= ndims && *d != IotaDim::UNUSED {
                return Err(DecodeError::BadIotaPattern(
                    ApError::NonCanonicalUnusedDim {
                        dim: i,
                        step: d.step,
                        count: d.count,
                    },
                ));
            }
        }
        IotaPattern::new(&dims[..ndims]).map_err(DecodeError::BadIotaPattern)
    }
    fn write(&self, r: &mut Record, v: &IotaPattern) -> Result<(), EncodeError> {
        r.0[self.ndims] = v.dims().len() as u8;
        let mut dims = [IotaDim::UNUSED; 4];
        dims[..v.dims().len()].copy_from_slice(v.dims());
        for (i, d) in dims.iter().enumerate() {
            put(r, self.steps + 4 * i, &d.step.to_le_bytes());
            put(r, self.counts + 2 * i, &d.count.to_le_bytes());
        }
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.steps..self.counts + 8
    }
}

/// A dtype code (`nrt_dtype_t`) in a byte.
pub(crate) struct DtypeCode(pub usize, pub &'static str);

impl Slot<Dtype> for DtypeCode {
    type DecodeError = DecodeError;
    type EncodeError = EncodeError;
    fn read(&self, r: &Record) -> Result<Dtype, DecodeError> {
        let value = r.0[self.0];
        Dtype::from_code(value).ok_or(DecodeError::BadEnum {
            field: self.1,
            offset: self.0,
            value,
        })
    }
    fn write(&self, r: &mut Record, v: &Dtype) -> Result<(), EncodeError> {
        r.0[self.0] = v.code();
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.0..self.0 + 1
    }
}

/// One side of a `dma.direct`: its mode in a nibble of byte `modes` (`shift` 0 or 4), a u64
/// address at `addr` and a u32 offset or register number at `offset`.
pub(crate) struct End {
    pub modes: usize,
    pub shift: u8,
    pub addr: usize,
    pub offset: usize,
}

impl Slot<DmaEnd> for End {
    type DecodeError = DecodeError;
    type EncodeError = EncodeError;
    fn read(&self, r: &Record) -> Result<DmaEnd, DecodeError> {
        let mode = (r.0[self.modes] >> self.shift) & 0xF;
        let addr = DeviceAddr::new(u64::from_le_bytes(get(r, self.addr)));
        let offset = u32::from_le_bytes(get(r, self.offset));
        match mode {
            0 => Ok(DmaEnd::Absolute(addr)),
            1 => Ok(DmaEnd::Slot { slot: addr, offset }),
            2 => Ok(DmaEnd::SlotRegister {
                slot: addr,
                register: u8::try_from(offset).map_err(|_| DecodeError::FieldOutOfRange {
                    field: "dma register",
                    offset: self.offset,
                    value: u64::from(offset),
                    range: "0..=255",
                })?,
            }),
            m => Err(DecodeError::BadEnum {
                field: "dma address mode",
                offset: self.modes,
                value: m,
            }),
        }
    }
    fn write(&self, r: &mut Record, v: &DmaEnd) -> Result<(), EncodeError> {
        let (mode, addr, offset) = match *v {
            DmaEnd::Absolute(a) => (0u8, a, 0u32),
            DmaEnd::Slot { slot, offset } => (1, slot, offset),
            DmaEnd::SlotRegister { slot, register } => (2, slot, u32::from(register)),
        };
        r.0[self.modes] |= mode << self.shift;
        put(r, self.addr, &addr.raw().to_le_bytes());
        put(r, self.offset, &offset.to_le_bytes());
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.addr..self.addr + 8
    }
}

/// A `dma.direct` pattern: two i32 steps at `steps`, two u16 counts at `nums` (each ≥ 1).
pub(crate) struct Chunks {
    pub steps: usize,
    pub nums: usize,
}

impl Slot<DmaPattern> for Chunks {
    type DecodeError = DecodeError;
    type EncodeError = EncodeError;
    fn read(&self, r: &Record) -> Result<DmaPattern, DecodeError> {
        DmaPattern::read_at(r, self.steps, self.nums).map_err(|at| DecodeError::FieldOutOfRange {
            field: "dma pattern count",
            offset: at,
            value: 0,
            range: "1..=65535",
        })
    }
    fn write(&self, r: &mut Record, v: &DmaPattern) -> Result<(), EncodeError> {
        v.write_at(r, self.steps, self.nums);
        Ok(())
    }
    fn span(&self) -> Range<usize> {
        self.steps..self.steps + 8
    }
}
