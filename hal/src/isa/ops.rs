//! The one-byte enumerations of the instruction encoding and the small validated value types
//! (queue-set names, marker labels, scalar operands).
//!
//! Every enum here has explicit `u8` codes: the code is what the record holds, and
//! `from_code` is the decoder's only way back. The codes are ours (the real encoding is not
//! public, docs/neff.md §9); names follow NKI (docs/isa.md §4) so a reader can map them to
//! `nki.isa` documentation.

use core::fmt;

/// Declares a `#[repr(u8)]` enum with explicit codes, a lower-case name per variant, `ALL`,
/// `code()`, `from_code()`, `name()` and `Display`.
macro_rules! code_enum {
    (
        $(#[$doc:meta])*
        pub enum $name:ident {
            $( $(#[$vdoc:meta])* $var:ident = $code:literal => $text:literal, )+
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(u8)]
        pub enum $name {
            $( $(#[$vdoc])* $var = $code, )+
        }

        impl $name {
            /// Every variant, in code order.
            pub const ALL: &'static [$name] = &[ $( $name::$var, )+ ];

            /// The code stored in the instruction record.
            pub const fn code(self) -> u8 {
                self as u8
            }

            /// The variant with code `code`, if there is one.
            pub const fn from_code(code: u8) -> Option<$name> {
                match code {
                    $( $code => Some($name::$var), )+
                    _ => None,
                }
            }

            /// The lower-case name used by the disassembler (NKI spelling where NKI has one).
            pub const fn name(self) -> &'static str {
                match self {
                    $( $name::$var => $text, )+
                }
            }

            /// Parses a [`Self::name`].
            pub fn from_name(name: &str) -> Option<$name> {
                Self::ALL.iter().copied().find(|v| v.name() == name)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

code_enum! {
    /// On-chip memory an access pattern addresses (AP word bits 18..=19; codes 2 and 3 are
    /// invalid).
    pub enum MemSpace {
        /// The state buffer: 128 partitions × 192 KiB (trn1) or 224 KiB (trn2).
        Sbuf = 0 => "sbuf",
        /// The partial-sum buffer: 128 partitions × 16 KiB, written by the PE array.
        Psum = 1 => "psum",
    }
}

impl MemSpace {
    /// Bytes per PSUM partition on every generation (docs/isa.md §2.2).
    pub const PSUM_PARTITION_BYTES: u32 = 16 * 1024;
    /// The largest SBUF partition of the supported generations (trn2: 224 KiB, docs/isa.md §2.2).
    pub const SBUF_MAX_PARTITION_BYTES: u32 = 224 * 1024;
}

code_enum! {
    /// The pass a `matmul.ld` starts. An fp32 matmul of the Neuron encoding is issued as two
    /// identical (load, multiply) pairs: the first computes the whole product, the second
    /// adds nothing (it only completes the pair); a single-pass matmul is one pair.
    pub enum MatmulPass {
        /// One pair computes the product.
        Single = 0 => "single",
        /// Pass 1 of a pair: computes the whole product with its own accumulate flag.
        First = 1 => "first",
        /// Pass 2: writes nothing; its operands must equal pass 1's.
        Second = 2 => "second",
    }
}

code_enum! {
    /// How `SemWait` compares the semaphore with its operand: it blocks until
    /// `semaphore <cmp> value` holds (byte 4 of `0xD1`).
    pub enum SemCmp {
        /// `sem >= value` — the usual "N completions have arrived" wait.
        Ge = 0 => "ge",
        /// `sem == value`.
        Eq = 1 => "eq",
        /// `sem > value`.
        Gt = 2 => "gt",
        /// `sem <= value`.
        Le = 3 => "le",
        /// `sem < value`.
        Lt = 4 => "lt",
        /// `sem != value`.
        Ne = 5 => "ne",
    }
}

impl SemCmp {
    /// Whether `sem <cmp> value` holds (signed, as a semaphore compares).
    pub fn holds(self, sem: i32, value: i32) -> bool {
        self.compare(sem, value)
    }

    /// Whether `word <cmp> value` holds for unsigned words (a memory wait).
    pub fn holds_u32(self, word: u32, value: u32) -> bool {
        self.compare(word, value)
    }

    fn compare<T: Ord>(self, a: T, b: T) -> bool {
        match self {
            SemCmp::Ge => a >= b,
            SemCmp::Eq => a == b,
            SemCmp::Gt => a > b,
            SemCmp::Le => a <= b,
            SemCmp::Lt => a < b,
            SemCmp::Ne => a != b,
        }
    }

    /// The comparison as an operator (`>=`, `==`, …), as the disassembler prints it.
    pub const fn symbol(self) -> &'static str {
        match self {
            SemCmp::Ge => ">=",
            SemCmp::Eq => "==",
            SemCmp::Gt => ">",
            SemCmp::Le => "<=",
            SemCmp::Lt => "<",
            SemCmp::Ne => "!=",
        }
    }
}

code_enum! {
    /// What `SemSignal` does to the semaphore (byte 4 of `0xD2`).
    pub enum SemOp {
        /// `sem += value`.
        Inc = 0 => "inc",
        /// `sem -= value`.
        Dec = 1 => "dec",
        /// `sem = value`.
        Set = 2 => "set",
    }
}

impl SemOp {
    /// The semaphore's new value; arithmetic wraps like a 32-bit hardware register.
    pub const fn apply(self, sem: i32, value: i32) -> i32 {
        match self {
            SemOp::Inc => sem.wrapping_add(value),
            SemOp::Dec => sem.wrapping_sub(value),
            SemOp::Set => value,
        }
    }

    /// The operation as an assignment operator (`+=`, `-=`, `=`).
    pub const fn symbol(self) -> &'static str {
        match self {
            SemOp::Inc => "+=",
            SemOp::Dec => "-=",
            SemOp::Set => "=",
        }
    }
}

code_enum! {
    /// The ACT engine's accumulate-reduce command (`reduce_cmd`, docs/isa.md §3): an
    /// add-reduction of each output row along the free dims into a per-partition accumulator
    /// register (byte 4 of `0xE2`).
    pub enum ReduceCmd {
        /// No accumulation.
        Idle = 0 => "idle",
        /// Zero the accumulators, do not accumulate.
        Reset = 1 => "reset",
        /// Add this instruction's outputs into the accumulators.
        Reduce = 2 => "reduce",
        /// Zero the accumulators, then accumulate this instruction's outputs.
        ResetReduce = 3 => "reset_reduce",
        /// Load the accumulators from this instruction's outputs.
        LoadReduce = 4 => "load_reduce",
    }
}

code_enum! {
    /// Activation functions of the ACT engine, `out = f(in * scale + bias)` (docs/isa.md §4;
    /// names are NKI's `nl.*`). Math is fp32.
    pub enum ActivationFunc {
        /// `f(x) = x` (NKI `copy`/`identity`).
        Identity = 0 => "identity",
        /// `max(x, 0)`.
        Relu = 1 => "relu",
        /// Exact GELU, `x · Φ(x)` with the erf-based normal CDF.
        Gelu = 2 => "gelu",
        /// GELU with the tanh approximation `0.5x(1 + tanh(√(2/π)(x + 0.044715x³)))`.
        GeluApproxTanh = 3 => "gelu_apprx_tanh",
        /// `x · sigmoid(x)`.
        Silu = 4 => "silu",
        /// `1 / (1 + e^-x)`.
        Sigmoid = 5 => "sigmoid",
        /// `tanh(x)`.
        Tanh = 6 => "tanh",
        /// `e^x`.
        Exp = 7 => "exp",
        /// `x²`.
        Square = 8 => "square",
        /// `1 / √x`.
        Rsqrt = 9 => "rsqrt",
        /// `1 / x`.
        Reciprocal = 10 => "reciprocal",
        /// `√x`.
        Sqrt = 11 => "sqrt",
        /// Natural logarithm.
        Log = 12 => "log",
        /// `ln(1 + e^x)`.
        Softplus = 13 => "softplus",
        /// `|x|`.
        Abs = 14 => "abs",
        /// `-1`, `0` or `1` by the sign of `x` (`0` for ±0).
        Sign = 15 => "sign",
        /// The error function.
        Erf = 16 => "erf",
        /// `x · tanh(softplus(x))`.
        Mish = 17 => "mish",
        /// `sin(x)` (hardware range [−π, π]).
        Sin = 18 => "sin",
        /// `atan(x)`.
        Arctan = 19 => "arctan",
        /// GELU with the sigmoid approximation `x · sigmoid(1.702x)`.
        GeluApproxSigmoid = 20 => "gelu_apprx_sigmoid",
    }
}

code_enum! {
    /// The ALU operations of the vector, scalar and GpSimd engines (docs/isa.md §4; NKI
    /// `nl.*` names). Arithmetic ops compute in fp32; bit-vector ops act on the integer bit
    /// patterns. Unary ops (`bitwise_not`, `abs`, `square`, `relu`, `rsqrt`, `reciprocal`) and
    /// `bypass` use their first operand only. Comparisons yield `1.0` or `0.0`.
    pub enum AluOp {
        /// `a` — passes the first operand through (a no-op stage of `tensor_scalar`).
        Bypass = 0 => "bypass",
        /// `a + b`.
        Add = 1 => "add",
        /// `a - b`.
        Subtract = 2 => "subtract",
        /// `a * b`.
        Multiply = 3 => "multiply",
        /// `max(a, b)`.
        Max = 4 => "max",
        /// `min(a, b)`.
        Min = 5 => "min",
        /// `a / b`.
        Divide = 6 => "divide",
        /// `a mod b`.
        Mod = 7 => "mod",
        /// `a ^ b` (power).
        Pow = 8 => "pow",
        /// `max(|a|, |b|)`.
        AbsMax = 9 => "abs_max",
        /// `min(|a|, |b|)`.
        AbsMin = 10 => "abs_min",
        /// `(a + b) / 2`.
        Average = 11 => "average",
        /// `a == b`.
        IsEqual = 12 => "is_equal",
        /// `a != b`.
        NotEqual = 13 => "not_equal",
        /// `a >= b`.
        IsGe = 14 => "is_ge",
        /// `a > b`.
        IsGt = 15 => "is_gt",
        /// `a <= b`.
        IsLe = 16 => "is_le",
        /// `a < b`.
        IsLt = 17 => "is_lt",
        /// `(a != 0) && (b != 0)`.
        LogicalAnd = 18 => "logical_and",
        /// `(a != 0) || (b != 0)`.
        LogicalOr = 19 => "logical_or",
        /// `(a != 0) ^ (b != 0)`.
        LogicalXor = 20 => "logical_xor",
        /// `!a` on the bit pattern (unary).
        BitwiseNot = 21 => "bitwise_not",
        /// `a & b` on the bit patterns.
        BitwiseAnd = 22 => "bitwise_and",
        /// `a | b` on the bit patterns.
        BitwiseOr = 23 => "bitwise_or",
        /// `a ^ b` on the bit patterns.
        BitwiseXor = 24 => "bitwise_xor",
        /// `a << b`, arithmetic.
        ArithShiftLeft = 25 => "arith_shift_left",
        /// `a >> b`, arithmetic (sign-extending).
        ArithShiftRight = 26 => "arith_shift_right",
        /// `a << b`, logical.
        LogicalShiftLeft = 27 => "logical_shift_left",
        /// `a >> b`, logical (zero-filling).
        LogicalShiftRight = 28 => "logical_shift_right",
        /// `|a|` (unary).
        Abs = 29 => "abs",
        /// `a²` (unary).
        Square = 30 => "square",
        /// `max(a, 0)` (unary).
        Relu = 31 => "relu",
        /// `1 / √a` (unary).
        Rsqrt = 32 => "rsqrt",
        /// `1 / a` (unary).
        Reciprocal = 33 => "reciprocal",
    }
}

impl AluOp {
    /// Whether `tensor_reduce` accepts this op (docs/isa.md §4: and, or, xor, add, subtract,
    /// multiply, max, min, logical and/or/xor).
    pub const fn is_legal_reduction(self) -> bool {
        matches!(
            self,
            AluOp::BitwiseAnd
                | AluOp::BitwiseOr
                | AluOp::BitwiseXor
                | AluOp::Add
                | AluOp::Subtract
                | AluOp::Multiply
                | AluOp::Max
                | AluOp::Min
                | AluOp::LogicalAnd
                | AluOp::LogicalOr
                | AluOp::LogicalXor
        )
    }

    /// Whether the op works on integer bit patterns rather than fp32 values.
    pub const fn is_bitvec(self) -> bool {
        matches!(
            self,
            AluOp::BitwiseNot
                | AluOp::BitwiseAnd
                | AluOp::BitwiseOr
                | AluOp::BitwiseXor
                | AluOp::ArithShiftLeft
                | AluOp::ArithShiftRight
                | AluOp::LogicalShiftLeft
                | AluOp::LogicalShiftRight
        )
    }

    /// Whether the op ignores its second operand.
    pub const fn is_unary(self) -> bool {
        matches!(
            self,
            AluOp::Bypass
                | AluOp::BitwiseNot
                | AluOp::Abs
                | AluOp::Square
                | AluOp::Relu
                | AluOp::Rsqrt
                | AluOp::Reciprocal
        )
    }
}

/// Why a queue-set name or marker label cannot be encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Queue-set names must have at least one character.
    #[error("the name is empty")]
    Empty,
    /// The name does not fit its field.
    #[error("the name is {len} bytes long; the field holds at most {max}")]
    TooLong {
        /// Length of the offered name.
        len: usize,
        /// Capacity of the field.
        max: usize,
    },
    /// A character outside the allowed ASCII set.
    #[error("byte {byte:#04x} at position {pos} is not allowed (printable ASCII only)")]
    BadChar {
        /// Position in the name.
        pos: usize,
        /// The offending byte.
        byte: u8,
    },
}

/// A DMA queue-set name as a `0xC1` record carries it: 1..=36 bytes of graphic ASCII
/// (`0x21..=0x7E`, no spaces, so the disassembly is unambiguous) at bytes 12..48.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QueueSetName(String);

impl QueueSetName {
    /// Capacity of the name field (bytes 12..48 of a `0xC1` record).
    pub const MAX_LEN: usize = 36;

    /// Validates a queue-set name (`def.json` `dma_queue` key, docs/neff.md §7.3).
    pub fn new(name: &str) -> Result<Self, NameError> {
        Self::from_ascii(name.as_bytes())
    }

    /// Validates a name given as raw bytes (as read from a record).
    pub fn from_ascii(name: &[u8]) -> Result<Self, NameError> {
        if name.is_empty() {
            return Err(NameError::Empty);
        }
        check_ascii(name, Self::MAX_LEN, |b| b.is_ascii_graphic()).map(QueueSetName)
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for QueueSetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A `PseudoMarker` label: 0..=40 bytes of printable ASCII (`0x20..=0x7E`) at bytes 8..48.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct MarkerLabel(String);

impl MarkerLabel {
    /// Capacity of the label field (bytes 8..48 of a `0xF2` record).
    pub const MAX_LEN: usize = 40;

    /// Validates a marker label.
    pub fn new(label: &str) -> Result<Self, NameError> {
        Self::from_ascii(label.as_bytes())
    }

    /// Validates a label given as raw bytes (as read from a record).
    pub fn from_ascii(label: &[u8]) -> Result<Self, NameError> {
        check_ascii(label, Self::MAX_LEN, |b| b == b' ' || b.is_ascii_graphic()).map(MarkerLabel)
    }

    /// The label.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for MarkerLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks length and characters, returning the text.
fn check_ascii(bytes: &[u8], max: usize, ok: impl Fn(u8) -> bool) -> Result<String, NameError> {
    if bytes.len() > max {
        return Err(NameError::TooLong {
            len: bytes.len(),
            max,
        });
    }
    match bytes.iter().position(|&b| !ok(b)) {
        Some(pos) => Err(NameError::BadChar {
            pos,
            byte: bytes[pos],
        }),
        // Every byte passed `ok`, which admits ASCII only, so this is valid UTF-8.
        None => Ok(bytes.iter().map(|&b| char::from(b)).collect()),
    }
}
