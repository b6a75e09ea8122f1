//! The typed instruction set: [`Opcode`], [`Instruction`], which engine may run what, operand
//! rules, and the load-time lowering of pseudo-instructions.

use crate::addr::{AddrOverflow, DeviceAddr, EngineKind};

use super::ap::{AccessPattern, ScalarOperand, ShortOperand};
use super::ops::{AluOp, MemSpace, QueueSetName, SemCmp, SemOp};

/// The opcodes of the 2.18/2.21 compilers' output (docs/neff.md §9, ~420k records); the
/// current compilers add more, all in the Neuron table ([`is_real_neff_opcode`]).
pub const REAL_NEFF_OPCODES: [u8; 14] = [
    0x01, 0x02, 0x21, 0x23, 0x41, 0x42, 0x46, 0x47, 0x49, 0xA0, 0xA4, 0xB1, 0xC1, 0xCC,
];

/// Whether `byte` is an opcode of real NEFFs: one of the Neuron encoding's table
/// ([`NeuronOpcode`](super::neuron::NeuronOpcode)).
pub fn is_real_neff_opcode(byte: u8) -> bool {
    super::neuron::NeuronOpcode::from_byte(byte).is_some()
}

pub use super::platform::{Instruction, Opcode};

impl Opcode {
    /// The disassembler's mnemonic.
    pub const fn mnemonic(self) -> &'static str {
        self.name()
    }

    /// Whether real NEFFs use this opcode with this meaning (`0xB1`, `0xC1`).
    pub const fn is_real_neff(self) -> bool {
        matches!(self, Opcode::StreamHeader | Opcode::PseudoDmaTrigger)
    }

    /// Whether the opcode is one of the platform's own (`0xD0..=0xFF`, never used by real
    /// NEFFs).
    pub const fn is_ours(self) -> bool {
        self.byte() >= 0xD0
    }

    /// Whether the opcode is a pseudo-instruction, rewritten by the runtime at load and never
    /// executed.
    pub const fn is_pseudo(self) -> bool {
        matches!(
            self,
            Opcode::PseudoDmaTrigger
                | Opcode::PseudoWriteVar
                | Opcode::PseudoBarrier
                | Opcode::PseudoMarker
        )
    }

    /// Whether the opcode is a compute instruction (`0xE0..=0xE9`).
    pub const fn is_compute(self) -> bool {
        matches!(self.byte(), 0xE0..=0xE9)
    }
}

/// What a pseudo-instruction becomes when the runtime loads the stream; see
/// [`Instruction::lower`].
#[derive(Debug, Clone, PartialEq)]
pub enum Lowered<'a> {
    /// Not a pseudo-instruction: it occupies one slot as it is.
    Unchanged,
    /// The pseudo-instruction is replaced by these instructions (possibly none).
    Replaced(Vec<Instruction>),
    /// A `0xC1` DMA trigger: the runtime, which assigned hardware queues to queue sets, must
    /// replace it by one `Write` of the block's descriptor count to that queue's
    /// tail-increment register.
    DmaTrigger {
        /// Queue-set name.
        queue: &'a QueueSetName,
        /// DMA block id.
        block_id: u32,
    },
}

/// Why a pseudo-instruction could not be lowered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LowerError {
    /// The resolver knows no variable with this id.
    #[error("pseudo.write_var names var {0}, which has no device address")]
    UnknownVar(u32),
    /// `var address + offset` overflows.
    #[error("pseudo.write_var target overflows: {0}")]
    Overflow(#[from] AddrOverflow),
}

/// Why an instruction's operands break the rules of docs/isa.md §3 (as opposed to the
/// encoding rules the decoder checks).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OperandError {
    /// An operand is in the wrong memory.
    #[error("{opcode}: {operand} must be in {expected}")]
    WrongSpace {
        /// Mnemonic of the instruction.
        opcode: &'static str,
        /// Which operand.
        operand: &'static str,
        /// The required memory.
        expected: MemSpace,
    },
    /// A shape limit or shape agreement is violated.
    #[error("{opcode}: {what}")]
    Shape {
        /// Mnemonic of the instruction.
        opcode: &'static str,
        /// Description of the violated rule with the values found.
        what: String,
    },
    /// An access pattern or a borrowed-shape operand is invalid.
    #[error("{opcode}: {operand}: {source}")]
    Pattern {
        /// Mnemonic of the instruction.
        opcode: &'static str,
        /// Which operand.
        operand: &'static str,
        /// The problem.
        source: super::ap::ApError,
    },
    /// `tensor_scalar` mixes a bit-vector op with an arithmetic op.
    #[error("tensor_scalar: op0 {op0} and op1 {op1} must both be bit-vector or both arithmetic")]
    MixedOpKinds {
        /// First op.
        op0: AluOp,
        /// Second op.
        op1: AluOp,
    },
}

impl Instruction {
    /// The access patterns of the instruction's operands, by operand name (a borrowed
    /// `tensor_tensor` `in1` resolved against `in0`, `[P, 1]` vectors for the partitions of
    /// the main input); empty for non-compute instructions. Operands whose pattern cannot be
    /// formed are left out (`check_operands` reports them).
    pub fn patterns(&self) -> Vec<(&'static str, AccessPattern)> {
        let vector = |s: &ShortOperand, main: &AccessPattern| s.as_vector(main.partitions()).ok();
        let mut v = Vec::new();
        match self {
            Instruction::MatmulLoadStationary { stationary, .. } => {
                v.push(("stationary", *stationary))
            }
            Instruction::MatmulMoving { dst, moving, .. } => {
                v.extend([("moving", *moving), ("dst", *dst)])
            }
            Instruction::Activation {
                out,
                input,
                scale,
                bias,
                ..
            } => {
                v.extend([("in", *input), ("out", *out)]);
                if let ScalarOperand::Vector(s) = scale {
                    v.extend(vector(s, input).map(|p| ("scale", p)));
                }
                if let Some(ScalarOperand::Vector(b)) = bias {
                    v.extend(vector(b, input).map(|p| ("bias", p)));
                }
            }
            Instruction::TensorTensor { out, in0, in1, .. } => {
                v.push(("in0", *in0));
                v.extend(in1.resolve(in0).ok().map(|p| ("in1", p)));
                v.push(("out", *out));
            }
            Instruction::TensorScalar {
                out,
                input,
                operand0,
                operand1,
                ..
            } => {
                v.extend([("in", *input), ("out", *out)]);
                for (name, s) in [("operand0", operand0), ("operand1", operand1)] {
                    if let ScalarOperand::Vector(s) = s {
                        v.extend(vector(s, input).map(|p| (name, p)));
                    }
                }
            }
            Instruction::TensorCopy { out, input }
            | Instruction::TensorReduce { out, input, .. }
            | Instruction::Transpose { out, input } => v.extend([("in", *input), ("out", *out)]),
            Instruction::Memset { out, .. } | Instruction::Iota { out, .. } => {
                v.push(("out", *out))
            }
            _ => {}
        }
        v
    }

    /// Whether this is a pseudo-instruction (must be lowered before execution).
    pub const fn is_pseudo(&self) -> bool {
        self.opcode().is_pseudo()
    }

    /// Whether an engine of kind `engine` may execute this instruction (docs/isa.md §2.1,
    /// §3):
    ///
    /// | engine | compute instructions it runs |
    /// |---|---|
    /// | PE | `matmul.ld`, `matmul.mm`, `transpose` |
    /// | ACT | `act`, `tensor_scalar`, `tensor_copy` |
    /// | DVE | `tensor_tensor`, `tensor_scalar`, `tensor_copy`, `tensor_reduce`, `memset`, `transpose` |
    /// | POOL | `tensor_tensor`, `tensor_scalar`, `tensor_copy`, `tensor_reduce`, `memset`, `iota` |
    /// | SP | none |
    ///
    /// Every engine runs the header, `write`, semaphore and event instructions, `end` and
    /// `nop`; pseudo-instructions are accepted on every engine too (they are lowered before
    /// execution; real compilers put `0xC1` on SP, ACT and Pool).
    pub fn allowed_on(&self, engine: EngineKind) -> bool {
        self.opcode().runs_on(engine)
    }

    /// Number of instruction slots this occupies after load: 0 for `pseudo.marker`, 2 for
    /// `pseudo.barrier`, 1 otherwise (a DMA trigger becomes one `write`).
    pub const fn slots_after_lowering(&self) -> usize {
        match self {
            Instruction::PseudoMarker { .. } => 0,
            Instruction::PseudoBarrier { .. } => 2,
            _ => 1,
        }
    }

    /// What this instruction becomes at load. `resolve_var` maps a var id to the physical
    /// address of its allocation.
    ///
    /// - `pseudo.write_var {var, offset, value}` → `write {addr(var) + offset, value}`;
    /// - `pseudo.barrier {sem, count}` → `sem.signal sem += 1`, `sem.wait sem >= count`;
    /// - `pseudo.marker` → nothing;
    /// - `pseudo.dma_trigger` → [`Lowered::DmaTrigger`], for the runtime to translate;
    /// - anything else → [`Lowered::Unchanged`].
    pub fn lower(
        &self,
        mut resolve_var: impl FnMut(u32) -> Option<DeviceAddr>,
    ) -> Result<Lowered<'_>, LowerError> {
        Ok(match self {
            Instruction::PseudoWriteVar {
                var_id,
                offset,
                value,
            } => {
                let base = resolve_var(*var_id).ok_or(LowerError::UnknownVar(*var_id))?;
                Lowered::Replaced(vec![Instruction::Write {
                    addr: base.checked_add(*offset)?,
                    value: *value,
                }])
            }
            Instruction::PseudoBarrier { sem, count } => Lowered::Replaced(vec![
                Instruction::SemSignal {
                    sem: *sem,
                    op: SemOp::Inc,
                    value: 1,
                },
                Instruction::SemWait {
                    sem: *sem,
                    cmp: SemCmp::Ge,
                    value: *count,
                },
            ]),
            Instruction::PseudoMarker { .. } => Lowered::Replaced(Vec::new()),
            Instruction::PseudoDmaTrigger { queue, block_id } => Lowered::DmaTrigger {
                queue,
                block_id: *block_id,
            },
            _ => Lowered::Unchanged,
        })
    }

    /// Checks the operand rules of docs/isa.md §3 that the encoding itself does not enforce
    /// (memories, shape limits, shape agreement between operands). The decoder accepts any
    /// well-formed record; an engine calls this before executing. SBUF/PSUM bounds depend on
    /// the target and are checked with [`AccessPattern::check_bounds`].
    ///
    /// Rules: `matmul.ld` stationary in SBUF with `M ≤ 128` elements; `matmul.mm` moving in
    /// SBUF with `N ≤ 512` elements, dst in PSUM with `N` elements; elementwise instructions
    /// (`act`, `tensor_tensor`, `tensor_scalar`, `tensor_copy`) need equal partition counts
    /// and equal elements per partition on input and output, and `[P, 1]` vector operands
    /// must fit from their start partition; `tensor_tensor` inputs may not both be in PSUM;
    /// `tensor_scalar` ops must both be bit-vector or both arithmetic (`bypass` goes with
    /// either); `tensor_reduce` reduces at most the input's dims, and its output has the
    /// input's partitions and the product of the kept dims as elements; `iota`'s pattern
    /// produces exactly `out`'s elements per partition; `transpose` takes `[P ≤ 128, F ≤ 128]`
    /// to `[F, P]`.
    ///
    /// Longer than the ~120-line guideline on purpose: it is the table of operand rules, one
    /// arm per instruction with that instruction's checks, in the order listed above.
    pub fn check_operands(&self) -> Result<(), OperandError> {
        let mn = self.opcode().mnemonic();
        let shape = |what: String| Err(OperandError::Shape { opcode: mn, what });
        let space = |operand, ap: &AccessPattern, expected| {
            if ap.space() == expected {
                Ok(())
            } else {
                Err(OperandError::WrongSpace {
                    opcode: mn,
                    operand,
                    expected,
                })
            }
        };
        let same_shape = |out: &AccessPattern, input: &AccessPattern| {
            if out.partitions() != input.partitions()
                || out.elements_per_partition() != input.elements_per_partition()
            {
                return shape(format!(
                    "output is {}×{} elements but input is {}×{}",
                    out.partitions(),
                    out.elements_per_partition(),
                    input.partitions(),
                    input.elements_per_partition()
                ));
            }
            Ok(())
        };
        let vector = |operand, s: &ScalarOperand, partitions| match s {
            ScalarOperand::Vector(v) => {
                v.as_vector(partitions)
                    .map(|_| ())
                    .map_err(|source| OperandError::Pattern {
                        opcode: mn,
                        operand,
                        source,
                    })
            }
            ScalarOperand::Imm(_) => Ok(()),
        };
        match self {
            Instruction::MatmulLoadStationary { stationary, .. } => {
                space("stationary", stationary, MemSpace::Sbuf)?;
                let m = stationary.elements_per_partition();
                if m > 128 {
                    return shape(format!("stationary has M = {m} elements (max 128)"));
                }
            }
            Instruction::MatmulMoving { dst, moving, .. } => {
                space("moving", moving, MemSpace::Sbuf)?;
                space("dst", dst, MemSpace::Psum)?;
                let n = moving.elements_per_partition();
                if n > 512 {
                    return shape(format!("moving has N = {n} elements (max 512)"));
                }
                if dst.elements_per_partition() != n {
                    return shape(format!(
                        "dst has {} elements per partition, moving has N = {n}",
                        dst.elements_per_partition()
                    ));
                }
            }
            Instruction::Activation {
                out,
                input,
                scale,
                bias,
                ..
            } => {
                same_shape(out, input)?;
                vector("scale", scale, input.partitions())?;
                if let Some(b) = bias {
                    vector("bias", b, input.partitions())?;
                }
            }
            Instruction::TensorTensor { out, in0, in1, .. } => {
                same_shape(out, in0)?;
                let in1 = in1.resolve(in0).map_err(|source| OperandError::Pattern {
                    opcode: mn,
                    operand: "in1",
                    source,
                })?;
                same_shape(in0, &in1)?;
                if in0.space() == MemSpace::Psum && in1.space() == MemSpace::Psum {
                    return shape("in0 and in1 may not both be in PSUM".into());
                }
            }
            Instruction::TensorScalar {
                out,
                input,
                op0,
                operand0,
                op1,
                operand1,
                ..
            } => {
                same_shape(out, input)?;
                vector("operand0", operand0, input.partitions())?;
                vector("operand1", operand1, input.partitions())?;
                let kinds_agree = op0.is_bitvec() == op1.is_bitvec()
                    || *op0 == AluOp::Bypass
                    || *op1 == AluOp::Bypass;
                if !kinds_agree {
                    return Err(OperandError::MixedOpKinds {
                        op0: *op0,
                        op1: *op1,
                    });
                }
            }
            Instruction::TensorCopy { out, input } => same_shape(out, input)?,
            Instruction::TensorReduce {
                out, input, axes, ..
            } => {
                let dims = input.dims();
                let axes = usize::from(*axes);
                if axes > dims.len() {
                    return shape(format!(
                        "reduces {axes} axes of an input with {} free dims",
                        dims.len()
                    ));
                }
                let kept: u64 = dims[..dims.len() - axes]
                    .iter()
                    .map(|d| u64::from(d.count))
                    .product();
                if out.partitions() != input.partitions() || out.elements_per_partition() != kept {
                    return shape(format!(
                        "output is {}×{} elements, expected {}×{kept}",
                        out.partitions(),
                        out.elements_per_partition(),
                        input.partitions()
                    ));
                }
            }
            Instruction::Iota { out, pattern, .. }
                if pattern.elements() != out.elements_per_partition() =>
            {
                return shape(format!(
                    "pattern yields {} values but out has {} elements per partition",
                    pattern.elements(),
                    out.elements_per_partition()
                ));
            }
            Instruction::Transpose { out, input } => {
                let (p, f) = (
                    u64::from(input.partitions()),
                    input.elements_per_partition(),
                );
                if f > 128 {
                    return shape(format!("input has F = {f} elements (max 128)"));
                }
                if u64::from(out.partitions()) != f || out.elements_per_partition() != p {
                    return shape(format!(
                        "input is [{p}, {f}] so output must be [{f}, {p}], found [{}, {}]",
                        out.partitions(),
                        out.elements_per_partition()
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The second input of `tensor_tensor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TensorOperand {
    /// A start (AP word) that borrows the first input's partition count and free pattern.
    Borrowed(ShortOperand),
    /// A pattern of its own (it must have the first input's partitions and element count;
    /// a zero step broadcasts).
    Pattern(AccessPattern),
}

impl From<ShortOperand> for TensorOperand {
    fn from(s: ShortOperand) -> Self {
        TensorOperand::Borrowed(s)
    }
}

impl From<AccessPattern> for TensorOperand {
    fn from(p: AccessPattern) -> Self {
        TensorOperand::Pattern(p)
    }
}

impl TensorOperand {
    /// The full pattern, given the first input `main`.
    pub fn resolve(&self, main: &AccessPattern) -> Result<AccessPattern, super::ap::ApError> {
        match self {
            TensorOperand::Borrowed(s) => s.with_shape_of(main),
            TensorOperand::Pattern(p) => Ok(*p),
        }
    }

    /// The memory addressed.
    pub const fn space(&self) -> MemSpace {
        match self {
            TensorOperand::Borrowed(s) => s.space(),
            TensorOperand::Pattern(p) => p.space(),
        }
    }

    /// Element type.
    pub const fn dtype(&self) -> crate::dtype::Dtype {
        match self {
            TensorOperand::Borrowed(s) => s.dtype(),
            TensorOperand::Pattern(p) => p.dtype(),
        }
    }
}
