//! Test data shared by the modules of this test binary.

use serde_json::{json, Value};

/// The `neff.json` of a trn1 vector add `out = a_vec + b_vec` (128 × 1000 elements, one kelf
/// subgraph), with `a_vec` and `out` float32 and `b_vec` in `b_dtype`.
pub fn vector_add_neff_json(b_dtype: &str) -> Value {
    json!({
      "nodes": [
        {"op": "null", "name": "a_vec", "inputs": [], "output_names": ["a_vec"], "is_param": "0"},
        {"op": "null", "name": "b_vec", "inputs": [], "output_names": ["b_vec"], "is_param": "0"},
        {"op": "tvm_op", "name": "sg_coreV10",
         "attrs": {"func_name": "__kelf", "flatten_data": "0", "num_inputs": "2",
                   "num_outputs": "1", "kelf": "kelf-0.json"},
         "inputs": [[0, 0, 0], [1, 0, 0]], "output_names": ["out"]}
      ],
      "arg_nodes": [0, 1],
      "heads": [[2, 0, 0]],
      "node_row_ptr": [0, 1, 2, 3],
      "attrs": {
        "shape": ["list_shape", [[128, 1000], [128, 1000], [128, 1000]]],
        "storage_id": ["list_int", [0, 1, 2]],
        "dltype": ["list_str", ["float32", b_dtype, "float32"]]
      },
      "metadata": {"signatures": {"default": {
        "inputs": {"a_vec": {"id": 0, "dtype": "float32", "shape": [128, 1000]},
                   "b_vec": {"id": 1, "dtype": b_dtype, "shape": [128, 1000]}},
        "outputs": {}}}}
    })
}
