//! Encoding [`NeuronInstr`]s into records (layouts in the [module docs](super)).

use crate::dtype::Dtype;
use crate::isa::ap::{AccessPattern, Dim};
use crate::isa::codec::Record;
use crate::isa::instr::{Instruction, TensorOperand};
use crate::isa::ops::{ActivationFunc, AluOp, MatmulPass, MemSpace, ReduceCmd, ScalarOperand};

use super::decode::{PE_BYTE39, PSUM_BIT, PSUM_OFFSET_MASK, SBUF_OFFSET_MASK};
use super::{ActForm, Detail, NeuronError, NeuronInstr, NeuronOpcode, Sync, UPDATE_INC, WAIT_GE};

fn bad(what: impl Into<String>) -> NeuronError {
    NeuronError::NotEncodable(what.into())
}

struct Out(Record);

impl Out {
    fn put(&mut self, at: usize, bytes: &[u8]) {
        self.0 .0[at..at + bytes.len()].copy_from_slice(bytes);
    }
    fn set(&mut self, at: usize, v: u8) {
        self.0 .0[at] = v;
    }

    /// Writes `ap` as an `ndims`-dim pattern at `at` (missing outer dims as num 1, step 0).
    fn ap(
        &mut self,
        at: usize,
        ndims: usize,
        ap: &AccessPattern,
        what: &str,
    ) -> Result<(), NeuronError> {
        if ap.start_partition() != 0 {
            return Err(bad(format!(
                "{what} starts at partition {} (only 0 is encodable)",
                ap.start_partition()
            )));
        }
        let (mask, bit) = match ap.space() {
            MemSpace::Sbuf => (SBUF_OFFSET_MASK, 0),
            MemSpace::Psum => (PSUM_OFFSET_MASK, PSUM_BIT),
        };
        if ap.offset() > mask {
            return Err(bad(format!(
                "{what} offset {:#x} does not fit its address word",
                ap.offset()
            )));
        }
        let dims = ap.dims();
        if dims.len() > ndims {
            return Err(bad(format!(
                "{what} has {} dims; this operand holds {ndims}",
                dims.len()
            )));
        }
        self.put(at, &(ap.offset() | bit).to_le_bytes());
        // Record order is innermost first: the model's last dim goes to index 0.
        for i in 0..ndims {
            let d = if i < dims.len() {
                dims[dims.len() - 1 - i]
            } else {
                Dim::new(0, 1)
            };
            self.put(at + 4 + 2 * i, &d.step.to_le_bytes());
            self.put(at + 4 + 2 * ndims + 2 * i, &d.count.to_le_bytes());
        }
        Ok(())
    }

    fn sync(&mut self, s: &Sync, op: NeuronOpcode) -> Result<(), NeuronError> {
        let rule = op.sync_rule();
        if let Some(w) = s.waits[0] {
            if !rule.wait {
                return Err(bad(format!("{} has no wait", op.name())));
            }
            self.set(4, WAIT_GE);
            self.set(5, sem_byte(w.sem.0)?);
            self.put(8, &w.value.to_le_bytes());
        } else if rule.wait_required {
            return Err(bad(format!("{} always waits", op.name())));
        }
        if s.waits[1].is_some() && op != NeuronOpcode::Wait {
            return Err(bad("only 0xA0 has a second wait slot"));
        }
        if let Some(sem) = s.signal {
            if !rule.update {
                return Err(bad(format!("{} updates no semaphore", op.name())));
            }
            self.set(6, UPDATE_INC);
            self.set(7, sem_byte(sem.0)?);
        }
        Ok(())
    }
}

fn mismatch(op: NeuronOpcode, i: &Instruction, d: &Detail) -> NeuronError {
    bad(format!(
        "{} cannot hold {} with detail {d:?}",
        op.name(),
        i.opcode().mnemonic()
    ))
}

impl Out {
    /// `0x01` LoadStationary and `0x02` MultiplyMoving.
    fn pe(&mut self, i: &Instruction, d: &Detail) -> Result<(), NeuronError> {
        match (i, d) {
            (
                Instruction::MatmulLoadStationary {
                    stationary,
                    reversed: true,
                    pass,
                },
                Detail::LoadStationary { transpose, tail },
            ) => {
                self.ap(16, 3, stationary, "stationary")?;
                self.set(32, stationary.dtype().code());
                self.set(
                    33,
                    match pass {
                        MatmulPass::Single => 0,
                        MatmulPass::First => 1,
                        MatmulPass::Second => 2,
                    },
                );
                self.set(34, u8::from(*transpose));
                self.set(38, partitions(stationary));
                self.set(39, PE_BYTE39);
                self.put(44, &tail.bytes());
            }
            (
                Instruction::MatmulMoving {
                    dst,
                    moving,
                    accumulate,
                },
                Detail::MultiplyMoving {
                    mode,
                    transpose,
                    last,
                    byte46,
                },
            ) => {
                self.ap(16, 3, moving, "moving")?;
                self.set(32, moving.dtype().code());
                self.set(33, *mode);
                self.set(34, u8::from(*transpose));
                self.set(38, partitions(moving));
                self.set(39, PE_BYTE39);
                self.set(43, u8::from(!*accumulate) | u8::from(*last) << 1);
                self.put(44, &[0x0F, 0x0F]);
                self.set(46, *byte46);
                self.ap(48, 3, dst, "out")?;
            }
            _ => {
                return Err(bad(format!(
                    "a PE record cannot hold {}",
                    i.opcode().mnemonic()
                )))
            }
        }
        Ok(())
    }

    /// `0x21` ACTIVATE.
    fn activate(&mut self, i: &Instruction, form: &ActForm) -> Result<(), NeuronError> {
        let Instruction::Activation {
            func: ActivationFunc::Identity,
            out,
            input,
            scale: ScalarOperand::Imm(scale),
            bias,
            reduce: ReduceCmd::Idle,
        } = i
        else {
            return Err(bad(
                "0x21 holds the identity activation with an immediate scale only",
            ));
        };
        same_partitions(&[input, out])?;
        self.ap(16, 3, input, "in")?;
        let bias_dtype = match (form, bias) {
            (ActForm::Bias, Some(b)) => {
                if b.space() != MemSpace::Sbuf || b.start_partition() != 0 {
                    return Err(bad("the bias vector is in SBUF from partition 0"));
                }
                self.set(35, 0x01);
                self.put(40, &b.offset().to_le_bytes());
                b.dtype()
            }
            (ActForm::NoBias { bias_dtype }, None) => {
                self.set(12, 1);
                self.set(15, 1);
                self.set(35, 0x80);
                *bias_dtype
            }
            _ => return Err(bad("the activation form and the bias disagree")),
        };
        self.set(32, input.dtype().code() | bias_dtype.code() << 4);
        self.set(33, out.dtype().code());
        self.set(34, partitions(input));
        self.put(36, &scale.to_bits().to_le_bytes());
        self.ap(48, 3, out, "out")
    }

    /// `0x41` TensorTensor.
    fn tensor_tensor(&mut self, i: &Instruction) -> Result<(), NeuronError> {
        let Instruction::TensorTensor { op, out, in0, in1 } = i else {
            return Err(bad("0x41 holds tensor_tensor"));
        };
        let in1 = match in1 {
            TensorOperand::Pattern(p) => *p,
            TensorOperand::Borrowed(s) => {
                s.with_shape_of(in0).map_err(|e| bad(format!("in1: {e}")))?
            }
        };
        same_partitions(&[in0, &in1, out])?;
        self.set(12, in0.dtype().code() | in1.dtype().code() << 4);
        self.set(13, out.dtype().code());
        self.set(14, alu_code(*op)?);
        self.set(15, partitions(in0));
        self.ap(16, 3, in0, "in0")?;
        self.ap(32, 3, &in1, "in1")?;
        self.ap(48, 3, out, "out")
    }

    /// The 4-D-operand records: `0x42` TensorReduce, `0x46`/`0x47` copies, `0x49` memset.
    fn dve_4d(&mut self, i: &Instruction) -> Result<(), NeuronError> {
        match i {
            Instruction::TensorReduce {
                op,
                out,
                input,
                axes,
                negate: false,
            } => {
                same_partitions(&[input, out])?;
                self.ap(12, 4, input, "in")?;
                self.set(32, input.dtype().code());
                self.set(33, out.dtype().code());
                self.set(34, partitions(input));
                self.set(36, alu_code(*op)?);
                self.set(37, axes.checked_add(1).ok_or_else(|| bad("axes"))?);
                self.ap(44, 4, out, "out")
            }
            Instruction::TensorCopy { out, input } => {
                same_partitions(&[input, out])?;
                self.ap(12, 4, input, "in")?;
                self.set(32, input.dtype().code());
                self.set(33, out.dtype().code());
                self.set(34, partitions(input));
                self.ap(44, 4, out, "out")
            }
            Instruction::Memset { out, value } => {
                if *value != 0.0 || value.is_sign_negative() {
                    return Err(bad(
                        "memset writes 0 only (a fill-value encoding is unknown)",
                    ));
                }
                let n =
                    u32::try_from(out.elements_per_partition()).map_err(|_| bad("memset count"))?;
                self.put(28, &n.to_le_bytes());
                self.set(32, out.dtype().code());
                self.set(34, partitions(out));
                self.ap(44, 4, out, "out")
            }
            other => Err(bad(format!(
                "a 4-D record cannot hold {}",
                other.opcode().mnemonic()
            ))),
        }
    }
}

fn sem_byte(s: u32) -> Result<u8, NeuronError> {
    u8::try_from(s).map_err(|_| bad(format!("semaphore {s} does not fit a byte")))
}

fn partitions(ap: &AccessPattern) -> u8 {
    // AccessPattern guarantees 1..=128.
    ap.partitions() as u8
}

fn alu_code(op: AluOp) -> Result<u8, NeuronError> {
    match op {
        AluOp::Add => Ok(0x04),
        AluOp::Max => Ok(0x08),
        other => Err(bad(format!("ALU op {other} has no known code"))),
    }
}

fn same_partitions(aps: &[&AccessPattern]) -> Result<(), NeuronError> {
    if aps.iter().all(|a| a.partitions() == aps[0].partitions()) {
        Ok(())
    } else {
        Err(bad("operands of one record share one partition count"))
    }
}

impl NeuronInstr {
    /// Encodes the record. Fails when the instruction, its detail and its opcode do not fit
    /// the opcode's layout.
    pub fn encode(&self) -> Result<Record, NeuronError> {
        let mut o = Out(Record::new(self.opcode.byte()));
        o.sync(&self.sync, self.opcode)?;
        use NeuronOpcode as N;
        match (self.opcode, &self.instr, &self.detail) {
            (N::StreamHeader, Instruction::StreamHeader, Detail::None)
            | (N::Preamble | N::ActTableLoad | N::FinalWait, Instruction::Nop, Detail::None) => {}
            (N::Wait, Instruction::Nop, Detail::None) => {
                if let Some(w) = self.sync.waits[1] {
                    let v = u16::try_from(w.value)
                        .map_err(|_| bad("the second wait value is a u16"))?;
                    o.set(32, WAIT_GE);
                    o.set(33, sem_byte(w.sem.0)?);
                    o.put(36, &v.to_le_bytes());
                }
            }
            (N::DmaTrigger, Instruction::PseudoDmaTrigger { queue, block_id }, Detail::None) => {
                let name = queue.as_str().as_bytes();
                if name.len() > 32 {
                    return Err(bad("queue-set names hold at most 32 bytes"));
                }
                o.put(12, name);
                o.put(48, &block_id.to_le_bytes());
            }
            (N::LoadStationary | N::MultiplyMoving, i, d) => o.pe(i, d)?,
            (N::Activate, i, Detail::Activate(form)) => o.activate(i, form)?,
            (N::TensorTensor, i @ Instruction::TensorTensor { .. }, Detail::None) => {
                o.tensor_tensor(i)?
            }
            (N::TensorReduce | N::Copy | N::ConvertCopy | N::Memset, i, Detail::None)
                if matches!(
                    (self.opcode, &self.instr),
                    (N::TensorReduce, Instruction::TensorReduce { .. })
                        | (N::Copy | N::ConvertCopy, Instruction::TensorCopy { .. })
                        | (N::Memset, Instruction::Memset { .. })
                ) =>
            {
                o.dve_4d(i)?
            }
            (op, i, d) => return Err(mismatch(op, i, d)),
        }
        Ok(o.0)
    }

    /// The Neuron record for a shared-model instruction with no sync, choosing the opcode
    /// from the instruction (`0x46` or `0x47` by dtypes) and the neutral detail values for
    /// trn2 (`trn1` selects trn1's PE tail and byte 46; a `Nop` becomes `0xA0`, whose wait the
    /// caller sets). Used by writers of NEFFs in
    /// this encoding.
    pub fn from_instruction(instr: Instruction, trn1: bool) -> Result<NeuronInstr, NeuronError> {
        let (opcode, detail) = match &instr {
            Instruction::StreamHeader => (NeuronOpcode::StreamHeader, Detail::None),
            Instruction::Nop => (NeuronOpcode::Wait, Detail::None),
            Instruction::PseudoDmaTrigger { .. } => (NeuronOpcode::DmaTrigger, Detail::None),
            Instruction::MatmulLoadStationary { stationary, .. } => (
                NeuronOpcode::LoadStationary,
                Detail::LoadStationary {
                    transpose: false,
                    tail: match (trn1, stationary.dtype()) {
                        (false, _) => super::PeTail::Trn2,
                        (true, Dtype::F16) => super::PeTail::Trn1F16,
                        (true, _) => super::PeTail::Trn1F32,
                    },
                },
            ),
            Instruction::MatmulMoving { moving, .. } => (
                NeuronOpcode::MultiplyMoving,
                Detail::MultiplyMoving {
                    mode: if moving.dtype() == Dtype::F16 { 0 } else { 3 },
                    transpose: false,
                    last: false,
                    byte46: if trn1 { 0x10 } else { 0 },
                },
            ),
            Instruction::Activation { bias, input, .. } => (
                NeuronOpcode::Activate,
                Detail::Activate(match bias {
                    Some(_) => ActForm::Bias,
                    None => ActForm::NoBias {
                        bias_dtype: input.dtype(),
                    },
                }),
            ),
            Instruction::TensorTensor { .. } => (NeuronOpcode::TensorTensor, Detail::None),
            Instruction::TensorReduce { .. } => (NeuronOpcode::TensorReduce, Detail::None),
            Instruction::TensorCopy { out, input } if out.dtype() == input.dtype() => {
                (NeuronOpcode::Copy, Detail::None)
            }
            Instruction::TensorCopy { .. } => (NeuronOpcode::ConvertCopy, Detail::None),
            Instruction::Memset { .. } => (NeuronOpcode::Memset, Detail::None),
            other => {
                return Err(bad(format!(
                    "{} has no Neuron opcode",
                    other.opcode().mnemonic()
                )))
            }
        };
        Ok(NeuronInstr {
            opcode,
            sync: Sync::NONE,
            instr,
            detail,
        })
    }
}
