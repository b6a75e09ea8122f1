//! The semantics of the Neuron records whose table row has no counterpart in the shared
//! instruction model (docs/neuron-isa.md §13): the engine's register file and the
//! instructions that use it, the affine select that builds masks and identities, and the
//! records with no effect on data. Every other Neuron record executes as its row's model
//! instruction (`NeuronInstr::model`).
//!
//! | record | semantics |
//! |---|---|
//! | `0xA7` REGISTER_MOVE | `reg[dst] = imm` |
//! | `0xA8` REGISTER_ALU | `reg[dst] = reg[src] op imm` (add, multiply), modulo 2³² |
//! | `0xCE` TENSOR_LOAD | `reg[dst] =` the u32 at an SBUF address (partition in bits 18–24) of this core |
//! | `0x92` AFFINE_SELECT | `out[p, i] = (offset + mult·p + Σ stepₖ·iₖ ≠ 0) ? in[p, i] : f32(reg[fill])` |
//! | `0xDA` DMA_MARK | nothing |
//! | `0xD4` DMA_DIRECT2D | never executes: the runtime relocates it into a `dma.direct` at load; reaching one is a malformed-instruction fault |
//!
//! Registers are 32 bits, [`REGISTERS`](nrt_hal::isa::neuron::REGISTERS) per engine, zero at
//! the start of every execution.

use nrt_hal::isa::neuron::{NeuronAlu, NeuronAp, NeuronInstr};
use nrt_hal::isa::{IotaDim, IotaPattern, MemSpace};
use nrt_hal::notify::ExecFault;
use nrt_hal::{EngineKind, NcIndex};

use crate::compute::{self, InstrTiming, OnChipView};
use crate::device::Domain;

impl Domain {
    /// Executes a Neuron record with semantics of its own on engine `kind` of `nc`; returns its
    /// cost in device cycles.
    pub(crate) fn engine_native(
        &mut self,
        nc: NcIndex,
        kind: EngineKind,
        n: &NeuronInstr,
        opcode: u32,
    ) -> Result<InstrTiming, (ExecFault, u32)> {
        let sync = InstrTiming::fixed(self.timing.sync_instruction_cycles);
        fn regs(d: &mut Domain, nc: NcIndex, kind: EngineKind) -> &mut Vec<u32> {
            &mut d.cores[nc].engines[kind.index()].registers
        }
        match *n {
            NeuronInstr::RegisterMove { dst, imm, .. } => {
                regs(self, nc, kind)[dst as usize] = imm;
                Ok(sync)
            }
            NeuronInstr::RegisterAlu {
                op, src, dst, imm, ..
            } => {
                let r = regs(self, nc, kind);
                let x = r[src as usize];
                r[dst as usize] = match op {
                    NeuronAlu::Add => x.wrapping_add(imm),
                    NeuronAlu::Multiply => x.wrapping_mul(imm),
                    _ => return Err((ExecFault::Malformed, opcode)),
                };
                Ok(sync)
            }
            NeuronInstr::TensorLoad { addr, dst, .. } => {
                let ap = NeuronAp::<1> {
                    addr,
                    steps: [1],
                    nums: [1],
                };
                let bytes = self.target.spec().sbuf.partition_bytes as usize;
                let at = ap.start_partition() as usize * bytes + ap.offset() as usize;
                let (sbuf, _) = self.cores[nc].onchip.split_mut();
                let in_partition = ap.offset() as usize + 4 <= bytes;
                let word = sbuf
                    .get(at..at + 4)
                    .filter(|_| in_partition)
                    .ok_or((ExecFault::OutOfBounds, opcode))?;
                let v = u32::from_le_bytes(word.try_into().expect("4 bytes"));
                regs(self, nc, kind)[dst as usize] = v;
                Ok(sync)
            }
            NeuronInstr::AffineSelect {
                channels,
                in_dtype,
                out_dtype,
                fill_reg,
                offset,
                steps,
                nums,
                src,
                dst,
                partition_mult,
                ..
            } => {
                let fill = f32::from_bits(regs(self, nc, kind)[usize::from(fill_reg)]);
                let parts = u32::from(channels);
                let input = src
                    .pattern(in_dtype, parts)
                    .map_err(|_| (ExecFault::Malformed, opcode))?;
                let out = dst
                    .pattern(out_dtype, parts)
                    .map_err(|_| (ExecFault::Malformed, opcode))?;
                let dims: Vec<IotaDim> = (0..4)
                    .rev()
                    .map(|k| IotaDim::new(i32::from(steps[k]), nums[k]))
                    .collect();
                let pattern =
                    IotaPattern::new(&dims).map_err(|_| (ExecFault::Malformed, opcode))?;
                if input.space() != MemSpace::Sbuf && out.space() != MemSpace::Sbuf {
                    return Err((ExecFault::Malformed, opcode));
                }
                let spec = self.target.spec();
                let core = &mut self.cores[nc];
                let (sbuf, psum) = core.onchip.split_mut();
                let mut view = OnChipView {
                    sbuf,
                    sbuf_partition_bytes: spec.sbuf.partition_bytes as usize,
                    psum,
                    psum_partition_bytes: spec.psum.partition_bytes as usize,
                };
                let unit = &mut core.engines[kind.index()];
                compute::affine_select(
                    &mut view,
                    &mut unit.compute,
                    &out,
                    &input,
                    &pattern,
                    offset,
                    partition_mult,
                    fill,
                )
                .map_err(|e| (compute::classify(&e), opcode))?;
                Ok(InstrTiming::fixed(compute::to_device_cycles(
                    compute::cost::stream_cycles(out.elements_per_partition(), 1),
                    kind,
                    self.target,
                )))
            }
            NeuronInstr::DmaMark { .. } => Ok(sync),
            _ => Err((ExecFault::Malformed, opcode)),
        }
    }
}
