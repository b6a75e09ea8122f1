//! `nrt_execute_repeat`: several executions of one model, each after the first reading the
//! previous execution's outputs as its inputs.
//!
//! The public documentation says only that each run uses the previous run's outputs as inputs
//! and that the NEFF must be compiled for it (docs/c-api.md §5.4). How outputs map onto inputs
//! is not written down, so this platform fixes the rule: **by position** — output *i* of the
//! model (neff.json order) feeds input *i* — and a model can repeat only when it has as many
//! outputs as inputs and each pair has the same dtype and byte size. Anything else is
//! `NRT_INVALID` naming the first pair that does not fit (a repeat count of 1 needs nothing:
//! it is one `nrt_execute`).
//!
//! The runs alternate between the caller's output set and one set of spare device tensors,
//! arranged so the last run writes the caller's set; a run never reads the tensors it writes.
//! The spares are freed when the call returns, so device memory is back where it was.

use super::{ModelId, Runtime};
use crate::exec::ExecReport;
use crate::tensor::{Placement, TensorInfo, TensorSet, TensorUsage};
use crate::{Error, Result};

impl Runtime {
    /// `nrt_execute_repeat`: `count` executions of model `id`, run *k* > 0 reading run *k − 1*'s
    /// outputs (see the module docs for the mapping); returns the last run's report.
    pub fn execute_repeat(
        &self,
        id: ModelId,
        inputs: &TensorSet,
        outputs: &TensorSet,
        count: u32,
    ) -> Result<ExecReport> {
        if count == 0 {
            return Err(Error::invalid("repeat count 0: at least 1 execution"));
        }
        if count == 1 {
            return self.execute(id, inputs, outputs);
        }
        let pairs = feed_pairs(&self.model_tensor_info(id)?)?;
        let vnc = self.model(id)?.vnc;
        let mut spare = TensorSet::new();
        for (name, t) in outputs.iter() {
            spare.add(
                name,
                self.tensor_allocate(Placement::Device, vnc, t.size(), name)?,
            );
        }
        let mut report = None;
        let mut prev: Option<&TensorSet> = None;
        for run in 0..count {
            let dst = if (count - 1 - run).is_multiple_of(2) {
                outputs
            } else {
                &spare
            };
            let fed;
            let src = match prev {
                None => inputs,
                Some(p) => {
                    fed = feed(p, &pairs)?;
                    &fed
                }
            };
            report = Some(
                self.execute(id, src, dst)
                    .map_err(|e| e.context(format!("repeat run {} of {count}", run + 1)))?,
            );
            prev = Some(dst);
        }
        Ok(report.expect("count > 1 runs at least once"))
    }
}

/// (input name, output name) pairs by position, after checking the model can repeat.
fn feed_pairs(info: &[TensorInfo]) -> Result<Vec<(String, String)>> {
    let of = |u| info.iter().filter(move |t: &&TensorInfo| t.usage == u);
    let (ins, outs): (Vec<_>, Vec<_>) = (
        of(TensorUsage::Input).collect(),
        of(TensorUsage::Output).collect(),
    );
    if ins.len() != outs.len() {
        return Err(Error::invalid(format!(
            "cannot repeat: the model has {} input(s) and {} output(s); each output feeds the input at its position",
            ins.len(),
            outs.len()
        )));
    }
    ins.iter()
        .zip(&outs)
        .map(|(i, o)| {
            if i.dtype != o.dtype || i.size != o.size {
                return Err(Error::invalid(format!(
                    "cannot repeat: output {:?} ({:?}, {} bytes) cannot feed input {:?} ({:?}, {} bytes)",
                    o.name, o.dtype, o.size, i.name, i.dtype, i.size
                )));
            }
            Ok((i.name.clone(), o.name.clone()))
        })
        .collect()
}

/// The input set of the next run: each input bound to the tensor that held its output.
fn feed(prev: &TensorSet, pairs: &[(String, String)]) -> Result<TensorSet> {
    let mut set = TensorSet::new();
    for (input, output) in pairs {
        let t = prev.get(output).ok_or_else(|| {
            Error::invalid(format!(
                "cannot repeat: the output set has no tensor {output:?} to feed input {input:?}"
            ))
        })?;
        set.add(input, t.clone());
    }
    Ok(set)
}
