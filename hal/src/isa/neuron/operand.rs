//! The operand forms of the Neuron encoding, kept as the record holds them (docs/neuron-isa.md
//! §5, §13): access patterns with their raw address word, the DMA address and pattern of
//! `0xD4`, and the small enumerations (ALU op, activation function, fp32 pass mode).

use core::fmt;

use crate::dtype::Dtype;
use crate::isa::ap::{AccessPattern, ApError, Dim, ShortOperand};
use crate::isa::ops::{ActivationFunc, AluOp, MemSpace};

pub use crate::isa::dma::DmaPattern;

/// Bit 25 of an address word: the operand is in PSUM.
pub const PSUM_BIT: u32 = 1 << 25;
/// Offset bits of an SBUF address word (bits 0–17; bits 18–24 are the start partition).
pub const SBUF_OFFSET_MASK: u32 = (1 << 18) - 1;
/// Offset bits of a PSUM address word.
pub const PSUM_OFFSET_MASK: u32 = (1 << 14) - 1;
/// Shift of the start partition in an SBUF address word.
pub const PARTITION_SHIFT: u32 = 18;
/// Bytes between consecutive partitions in a flat state-buffer address (`p · 2¹⁸ + offset`).
pub const PARTITION_STRIDE: u64 = 1 << PARTITION_SHIFT;

/// Why an address word is not one the encoding is known to use.
pub(crate) fn check_address_word(w: u32) -> Result<(), &'static str> {
    let known = if w & PSUM_BIT != 0 {
        PSUM_BIT | PSUM_OFFSET_MASK
    } else {
        (1 << 25) - 1
    };
    if w & !known != 0 {
        return Err(if w & PSUM_BIT != 0 {
            "PSUM address with bits set outside its 14-bit offset (a PSUM start partition has no known encoding)"
        } else {
            "address bits above 24 are set (bits 0-17 are the offset, 18-24 the start partition)"
        });
    }
    Ok(())
}

/// An access pattern of `N` dimensions as a record holds it: the address word (memory, start
/// partition, byte offset), then steps (in elements) and counts, innermost first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NeuronAp<const N: usize> {
    /// The address word: bit 25 PSUM; SBUF offset in bits 0–17 and start partition in 18–24;
    /// PSUM offset in bits 0–13.
    pub addr: u32,
    /// Steps in elements, innermost first.
    pub steps: [i16; N],
    /// Counts, innermost first, each ≥ 1.
    pub nums: [u16; N],
}

impl<const N: usize> NeuronAp<N> {
    /// Encoded size: the address word, `N` steps and `N` counts.
    pub const LEN: usize = 4 + 4 * N;

    /// A contiguous pattern of `n` elements at address word `addr`.
    pub fn contiguous(addr: u32, n: u16) -> Self {
        let mut steps = [0; N];
        let mut nums = [1; N];
        steps[0] = 1;
        nums[0] = n;
        NeuronAp { addr, steps, nums }
    }

    /// SBUF or PSUM.
    pub const fn space(&self) -> MemSpace {
        if self.addr & PSUM_BIT != 0 {
            MemSpace::Psum
        } else {
            MemSpace::Sbuf
        }
    }

    /// The first partition (SBUF only; PSUM patterns start at 0).
    pub const fn start_partition(&self) -> u32 {
        match self.space() {
            MemSpace::Sbuf => (self.addr >> PARTITION_SHIFT) & 0x7F,
            MemSpace::Psum => 0,
        }
    }

    /// Byte offset inside each partition.
    pub const fn offset(&self) -> u32 {
        match self.space() {
            MemSpace::Sbuf => self.addr & SBUF_OFFSET_MASK,
            MemSpace::Psum => self.addr & PSUM_OFFSET_MASK,
        }
    }

    /// Elements per partition (the product of the counts).
    pub fn elements(&self) -> u64 {
        self.nums.iter().map(|&n| u64::from(n)).product()
    }

    /// The pattern in the shared model: `partitions` partitions of `dtype` from this pattern's
    /// start partition, its dims listed outermost first.
    pub fn pattern(&self, dtype: Dtype, partitions: u32) -> Result<AccessPattern, ApError> {
        let base = ShortOperand::new(self.space(), self.start_partition(), self.offset(), dtype)?;
        let dims: Vec<Dim> = (0..N)
            .rev()
            .map(|i| Dim::new(self.steps[i], self.nums[i]))
            .collect();
        AccessPattern::new(base, partitions, &dims)
    }

    /// The model's pattern written back (start partition, offset, dims innermost first); `None`
    /// when it has more than `N` dims or a form the address word cannot hold.
    pub fn from_pattern(p: &AccessPattern) -> Option<Self> {
        let dims = p.dims();
        if dims.len() > N {
            return None;
        }
        let addr = match p.space() {
            MemSpace::Sbuf if p.offset() <= SBUF_OFFSET_MASK => {
                p.offset() | p.start_partition() << PARTITION_SHIFT
            }
            MemSpace::Psum if p.offset() <= PSUM_OFFSET_MASK && p.start_partition() == 0 => {
                p.offset() | PSUM_BIT
            }
            _ => return None,
        };
        let mut steps = [0i16; N];
        let mut nums = [1u16; N];
        for (i, d) in dims.iter().rev().enumerate() {
            steps[i] = d.step;
            nums[i] = d.count;
        }
        Some(NeuronAp { addr, steps, nums })
    }
}

impl<const N: usize> fmt::Display for NeuronAp<N> {
    /// `0x<address word>[steps…][counts…]`, the profiler's form without the dtype.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.addr)?;
        list(f, &self.steps)?;
        list(f, &self.nums)
    }
}

/// `[a,b,…]`.
pub(crate) fn list<T: fmt::Display>(f: &mut dyn fmt::Write, v: &[T]) -> fmt::Result {
    f.write_char('[')?;
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            f.write_char(',')?;
        }
        write!(f, "{x}")?;
    }
    f.write_char(']')
}

/// How a `0xD4` address is formed (byte 7 of the 8-byte address).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DmaAddrKind {
    /// `0x10`: the var `index` (a def.json `var_id`; 0 is the state buffer) plus `offset`.
    Immediate,
    /// `0x20`: entry `index` of the subgraph's DGE table, plus `offset`.
    Table,
    /// `0x28`: entry `index` of the DGE table plus the value of register `offset`.
    TableRegister,
}

impl DmaAddrKind {
    /// The byte.
    pub const fn code(self) -> u8 {
        match self {
            DmaAddrKind::Immediate => 0x10,
            DmaAddrKind::Table => 0x20,
            DmaAddrKind::TableRegister => 0x28,
        }
    }

    /// The kind with byte `b`.
    pub const fn from_code(b: u8) -> Option<Self> {
        match b {
            0x10 => Some(DmaAddrKind::Immediate),
            0x20 => Some(DmaAddrKind::Table),
            0x28 => Some(DmaAddrKind::TableRegister),
            _ => None,
        }
    }
}

/// A `0xD4` source or destination address: bytes 0–3 an offset (or a register number), byte 4
/// an index (var id or DGE-table entry), bytes 5–6 zero, byte 7 the kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DmaAddr {
    /// Byte offset into the var (kinds `0x10`, `0x20`) or the register holding it (`0x28`).
    pub offset: u32,
    /// Var id (`0x10`) or DGE-table entry (`0x20`, `0x28`).
    pub index: u8,
    /// How the address is formed.
    pub kind: DmaAddrKind,
}

/// Declares a byte-coded enumeration of the Neuron encoding with its profiler names.
macro_rules! neuron_code {
    ($(#[$doc:meta])* pub enum $name:ident { $( $(#[$vdoc:meta])* $var:ident = $code:literal => $text:literal, )+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $( $(#[$vdoc])* $var, )+ }

        impl $name {
            /// Every value.
            pub const ALL: &'static [$name] = &[ $( $name::$var, )+ ];
            /// The byte.
            pub const fn code(self) -> u8 {
                match self { $( $name::$var => $code, )+ }
            }
            /// The value with byte `b`.
            pub const fn from_code(b: u8) -> Option<$name> {
                match b { $( $code => Some($name::$var), )+ _ => None }
            }
            /// The profiler's name.
            pub const fn name(self) -> &'static str {
                match self { $( $name::$var => $text, )+ }
            }
        }
    };
}

neuron_code! {
    /// ALU operation codes (`0x41` byte 14, `0x42` byte 36, `0x43` bytes 36–37, `0xA8` byte 12).
    pub enum NeuronAlu {
        /// Pass the input through.
        Bypass = 0x00 => "BYPASS",
        /// `a + b`.
        Add = 0x04 => "ADD",
        /// `a · b`.
        Multiply = 0x06 => "MULTIPLY",
        /// `max(a, b)`.
        Max = 0x08 => "MAX",
    }
}

impl NeuronAlu {
    /// The shared model's op.
    pub const fn op(self) -> AluOp {
        match self {
            NeuronAlu::Bypass => AluOp::Bypass,
            NeuronAlu::Add => AluOp::Add,
            NeuronAlu::Multiply => AluOp::Multiply,
            NeuronAlu::Max => AluOp::Max,
        }
    }
}

neuron_code! {
    /// Activation function ids (`0x21` byte 35): the `func_id`s of the NEFF's activation tables
    /// (`profile_meta_data[].func_id`). Names are the profiler's where a profile shows them
    /// (`EXP`), else the table's function name in upper case.
    pub enum ActFunc {
        /// `x`.
        Identity = 0x01 => "IDENTITY",
        /// `max(x, 0)`.
        Relu = 0x02 => "RELU",
        /// `tanh(x)`.
        Tanh = 0x06 => "TANH",
        /// `eˣ`.
        Exp = 0x07 => "EXP",
        /// `ln(x)`.
        Ln = 0x0A => "NATURAL_LOG",
        /// `sin(x)`.
        Sin = 0x13 => "SIN",
        /// `1/√x`.
        Rsqrt = 0x1D => "RECIPROCAL_SQRT",
        /// `x²`.
        Square = 0x1E => "SQUARE",
        /// `sign(x)`.
        Sign = 0x1F => "SIGN",
        /// `|x|`.
        Abs = 0x21 => "ABS",
        /// `x · sigmoid(x)`.
        Silu = 0x24 => "SILU",
        /// `x` (the form compilers use for copies and lowered `tensor_scalar`s).
        Copy = 0x80 => "COPY",
    }
}

impl ActFunc {
    /// The shared model's function (the copy is the identity: both compute
    /// `in · scale + bias`).
    pub const fn func(self) -> ActivationFunc {
        match self {
            ActFunc::Identity | ActFunc::Copy => ActivationFunc::Identity,
            ActFunc::Relu => ActivationFunc::Relu,
            ActFunc::Tanh => ActivationFunc::Tanh,
            ActFunc::Exp => ActivationFunc::Exp,
            ActFunc::Ln => ActivationFunc::Log,
            ActFunc::Sin => ActivationFunc::Sin,
            ActFunc::Rsqrt => ActivationFunc::Rsqrt,
            ActFunc::Square => ActivationFunc::Square,
            ActFunc::Sign => ActivationFunc::Sign,
            ActFunc::Abs => ActivationFunc::Abs,
            ActFunc::Silu => ActivationFunc::Silu,
        }
    }
}

/// The profiler's name of a dtype (`fp32`, `bfloat16`, …).
pub fn dtype_name(d: Dtype) -> &'static str {
    match d {
        Dtype::F32 | Dtype::F32r => "fp32",
        Dtype::Bf16 => "bfloat16",
        Dtype::F16 => "fp16",
        Dtype::I32 => "int32",
        Dtype::U32 => "uint32",
        Dtype::I16 => "int16",
        Dtype::U16 => "uint16",
        Dtype::I8 => "int8",
        Dtype::U8 => "uint8",
        Dtype::I64 => "int64",
        Dtype::U64 => "uint64",
        Dtype::Fp8E3 => "fp8e3",
        Dtype::Fp8E4 => "fp8e4",
        Dtype::Fp8E5 => "fp8e5",
    }
}
