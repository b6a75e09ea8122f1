//! What the benches share: binding a loaded model's inputs and outputs.

use nrt_emu::runtime::kbin::IoTensor;
use nrt_emu::runtime::tensor::{Placement, TensorSet};
use nrt_emu::runtime::{ModelId, Runtime};

/// Device tensors for every input of model `id` (each written with `data(input)`) and one per
/// distinct output name.
pub fn bind_io(
    rt: &Runtime,
    id: ModelId,
    mut data: impl FnMut(&IoTensor) -> Vec<u8>,
) -> (TensorSet, TensorSet) {
    let model = rt.model(id).unwrap();
    let (mut ins, mut outs) = (TensorSet::new(), TensorSet::new());
    for t in &model.parsed.model.inputs {
        let d = rt
            .tensor_allocate(Placement::Device, model.vnc, t.size, &t.name)
            .unwrap();
        d.write(0, &data(t)).unwrap();
        ins.add(&t.name, d);
    }
    for t in &model.parsed.model.outputs {
        if outs.get(&t.name).is_none() {
            let d = rt
                .tensor_allocate(Placement::Device, model.vnc, t.size, &t.name)
                .unwrap();
            outs.add(&t.name, d);
        }
    }
    (ins, outs)
}
