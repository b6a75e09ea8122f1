//! Helpers shared by the end-to-end tests that drive the runtime on zoo models: device tensors
//! for one execution, and reading and checking its outputs against the model's reference.
//! (A subdirectory module, so cargo does not build it as a test of its own; each test binary
//! uses only some of it.)
#![allow(dead_code)]

use nrt_emu::runtime::tensor::{Placement, TensorSet};
use nrt_emu::runtime::Runtime;
use nrt_fixtures::ZooModel;

/// Device tensors for one execution of `m` on logical core `vnc`: the inputs holding `inputs`,
/// and outputs filled with 0xFF bytes (NaN in every float dtype) so an unwritten byte shows.
pub fn device_io(
    rt: &Runtime,
    m: &ZooModel,
    vnc: u32,
    inputs: &[Vec<u8>],
) -> (TensorSet, TensorSet) {
    io_tensors(rt, m, vnc, inputs, Placement::Device, Placement::Device)
}

/// [`device_io`] with the inputs and the outputs placed as given.
pub fn io_tensors(
    rt: &Runtime,
    m: &ZooModel,
    vnc: u32,
    inputs: &[Vec<u8>],
    in_place: Placement,
    out_place: Placement,
) -> (TensorSet, TensorSet) {
    let mut ins = TensorSet::new();
    for (s, d) in m.inputs.iter().zip(inputs) {
        let t = rt
            .tensor_allocate(in_place, vnc, s.size() as u64, &s.name)
            .unwrap();
        t.write(0, d).unwrap();
        ins.add(&s.name, t);
    }
    let mut outs = TensorSet::new();
    for s in &m.outputs {
        let t = rt
            .tensor_allocate(out_place, vnc, s.size() as u64, &s.name)
            .unwrap();
        t.memset(0, 0xFF, t.size()).unwrap();
        outs.add(&s.name, t);
    }
    (ins, outs)
}

/// The bytes of `m`'s outputs in `outs`, in the model's output order.
pub fn read_outputs(m: &ZooModel, outs: &TensorSet) -> Vec<Vec<u8>> {
    m.outputs
        .iter()
        .map(|s| outs.get(&s.name).unwrap().to_vec().unwrap())
        .collect()
}

/// Panics unless `outs` holds `m`'s reference outputs for `inputs` (within its tolerance).
pub fn check_outputs(m: &ZooModel, inputs: &[Vec<u8>], outs: &TensorSet) {
    m.check_outputs(inputs, &read_outputs(m, outs))
        .unwrap_or_else(|e| panic!("{}.{}: {e}", m.name, m.target));
}
