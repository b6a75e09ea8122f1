//! `neff.json` (docs/neff.md §5): the TVM-style graph manifest, and the model's IO tensors
//! derived from its `__kelf` node.

use std::collections::BTreeMap;

use nrt_hal::Dtype;
use serde_json::Value;

use super::json::{parse_root, string_list, u64_list, with_path, At, Obj, MAX_BYTES};
use crate::error::{Error, Result};

/// A reference to a graph entry: output `index` of node `node` (`[node, index, version]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeEntry {
    /// Node index in `nodes[]`.
    pub node: u64,
    /// Output index of that node.
    pub index: u64,
}

/// The `attrs` of a `neff.json` node (all values are strings in real files).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeAttrs {
    /// `func_name` (`__kelf` for the Neuron node).
    pub func_name: Option<String>,
    /// `kelf`: the kelf file of the Neuron node (`kelf-0.json`).
    pub kelf: Option<String>,
    /// `num_inputs`.
    pub num_inputs: Option<u64>,
    /// `num_outputs`.
    pub num_outputs: Option<u64>,
}

/// One `neff.json` node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphNode {
    /// `op`: `null` for inputs, `tvm_op` for the compute node.
    pub op: String,
    /// `name`.
    pub name: String,
    /// `attrs`.
    pub attrs: NodeAttrs,
    /// `inputs`: the graph entries this node consumes.
    pub inputs: Vec<NodeEntry>,
    /// `output_names`.
    pub output_names: Vec<String>,
}

impl GraphNode {
    /// Number of graph entries (outputs) this node produces: 1 for an input (`null`) node,
    /// else `attrs.num_outputs`, else `output_names.len()`.
    pub fn num_outputs(&self) -> u64 {
        if self.op == "null" {
            1
        } else {
            self.attrs
                .num_outputs
                .unwrap_or(self.output_names.len() as u64)
        }
    }
}

/// One entry of `metadata.signatures.default.inputs`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignatureTensor {
    /// `id`.
    pub id: Option<u64>,
    /// `dtype`.
    pub dtype: Option<String>,
    /// `shape`.
    pub shape: Option<Vec<u64>>,
}

/// `neff.json`: the TVM-style graph manifest (docs/neff.md §5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeffJson {
    /// `nodes`.
    pub nodes: Vec<GraphNode>,
    /// `arg_nodes`.
    pub arg_nodes: Vec<u64>,
    /// `heads`.
    pub heads: Vec<NodeEntry>,
    /// `attrs.shape` (`["list_shape", [[dims]…]]`), one per graph entry.
    pub shapes: Vec<Vec<u64>>,
    /// `attrs.dltype` (`["list_str", [..]]`), one per graph entry.
    pub dltypes: Vec<String>,
    /// `metadata.signatures.default.inputs`, by name.
    pub signature_inputs: BTreeMap<String, SignatureTensor>,
}

/// A model input or output declared by `neff.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoDecl {
    /// Name.
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Shape.
    pub shape: Vec<u64>,
    /// Bytes: product of the shape times the element size.
    pub size: u64,
}

impl IoDecl {
    /// A tensor `name` of `dtype` and `shape`, its size computed ([`tensor_bytes`]).
    ///
    /// # Panics
    ///
    /// If the tensor is larger than [`MAX_BYTES`].
    pub fn new(name: &str, dtype: Dtype, shape: &[usize]) -> IoDecl {
        let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        let size = tensor_bytes(&shape, dtype).expect("a declared tensor is at most MAX_BYTES");
        IoDecl {
            name: name.to_string(),
            dtype,
            shape,
            size,
        }
    }
}

/// What the loader takes from `neff.json`: the kelf file and the IO tensors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeffIo {
    /// Index of the `__kelf` node.
    pub kelf_node: usize,
    /// Its `attrs.kelf`.
    pub kelf_file: String,
    /// Inputs, in the `__kelf` node's input order.
    pub inputs: Vec<IoDecl>,
    /// Outputs, in `output_names` order with duplicates (the LNC=2 quirk) removed.
    pub outputs: Vec<IoDecl>,
}

fn node_entry(a: At<'_>) -> Result<NodeEntry> {
    let parts = a.arr()?;
    if parts.len() < 2 || parts.len() > 3 {
        return Err(a.err(format_args!(
            "expected [node, index, version], got an array of {}",
            parts.len()
        )));
    }
    let v = a.each(|e| e.u64())?;
    Ok(NodeEntry {
        node: v[0],
        index: v[1],
    })
}

/// `["<tag>", payload]` lists of `neff.json` `attrs`.
fn tagged_list<'a>(a: At<'a>, tag: &str) -> Result<At<'a>> {
    let parts = a.arr()?;
    match parts {
        [Value::String(t), _] if t == tag => Ok(At {
            file: a.file,
            path: a.path,
            value: &parts[1],
        }),
        _ => Err(a.err(format_args!("expected [{tag:?}, [...]]"))),
    }
}

/// Parses `neff.json` (`file` names it in error messages).
pub fn parse_neff_json(file: &str, bytes: &[u8]) -> Result<NeffJson> {
    let root = parse_root(file, bytes)?;
    let o = Obj::root(file, &root);
    let nodes = o.req("nodes", |a| {
        a.each(|n| {
            let n = n.obj()?;
            let attrs = match n.opt_obj("attrs")? {
                None => NodeAttrs::default(),
                Some(at) => NodeAttrs {
                    func_name: at.opt_str("func_name")?,
                    kelf: at.opt_str("kelf")?,
                    num_inputs: at.opt("num_inputs", |a| a.str_or_u64())?,
                    num_outputs: at.opt("num_outputs", |a| a.str_or_u64())?,
                },
            };
            Ok(GraphNode {
                op: n.req_str("op")?,
                name: n.req_str("name")?,
                attrs,
                inputs: n.opt("inputs", |a| a.each(node_entry))?.unwrap_or_default(),
                output_names: n.opt("output_names", string_list)?.unwrap_or_default(),
            })
        })
    })?;
    let arg_nodes = o.opt("arg_nodes", u64_list)?.unwrap_or_default();
    let heads = o.opt("heads", |a| a.each(node_entry))?.unwrap_or_default();
    let attrs = o.req_obj("attrs")?;
    let shapes = attrs.req("shape", |a| tagged_list(a, "list_shape")?.each(u64_list))?;
    let dltypes = attrs.req("dltype", |a| string_list(tagged_list(a, "list_str")?))?;
    let mut signature_inputs = BTreeMap::new();
    if let Some(meta) = o.opt_obj("metadata")? {
        if let Some(sigs) = meta.opt_obj("signatures")? {
            if let Some(def) = sigs.opt_obj("default")? {
                if let Some(inputs) = def.opt_obj("inputs")? {
                    for (name, at, path) in inputs.entries() {
                        let t = with_path(at, &path, |a| {
                            let e = a.obj()?;
                            Ok(SignatureTensor {
                                id: e.opt("id", |a| a.u64())?,
                                dtype: e.opt_str("dtype")?,
                                shape: e.opt("shape", u64_list)?,
                            })
                        })?;
                        signature_inputs.insert(name.clone(), t);
                    }
                }
            }
        }
    }
    Ok(NeffJson {
        nodes,
        arg_nodes,
        heads,
        shapes,
        dltypes,
        signature_inputs,
    })
}

impl NeffJson {
    /// Finds the `__kelf` node and derives the model's IO tensors (`file` names `neff.json` in
    /// error messages).
    ///
    /// Inputs are the nodes the `__kelf` node consumes, in order, named by their node `name`;
    /// outputs are its `output_names`, duplicates removed (LNC=2 lists the single output once
    /// per subgraph). Shapes and dtypes come from `attrs.shape`/`attrs.dltype` at each one's
    /// graph entry index (entries are numbered node by node: inputs first, then the `__kelf`
    /// node's outputs).
    pub fn io(&self, file: &str) -> Result<NeffIo> {
        let (k, node, kelf_file) = self.kelf_node(file)?;
        let base = self.entry_bases(file)?;
        let decl = |name: &str, entry: u64, what: &str| self.decl(file, name, entry, what);
        let mut inputs = Vec::with_capacity(node.inputs.len());
        for (i, e) in node.inputs.iter().enumerate() {
            let src = usize::try_from(e.node)
                .ok()
                .and_then(|j| self.nodes.get(j).map(|n| (j, n)));
            let (j, src) = src.ok_or_else(|| {
                Error::invalid(format!(
                    "{file}: nodes[{k}].inputs[{i}]: node {} does not exist",
                    e.node
                ))
            })?;
            if src.op != "null" {
                return Err(Error::invalid(format!(
                    "{file}: nodes[{k}].inputs[{i}]: node {j} ({:?}) is not an input node \
                     (op {:?})",
                    src.name, src.op
                )));
            }
            if e.index != 0 {
                return Err(Error::invalid(format!(
                    "{file}: nodes[{k}].inputs[{i}]: input node {j} has no output {}",
                    e.index
                )));
            }
            if inputs.iter().any(|d: &IoDecl| d.name == src.name) {
                return Err(Error::invalid(format!(
                    "{file}: nodes[{k}].inputs[{i}]: input {:?} is consumed twice",
                    src.name
                )));
            }
            inputs.push(decl(&src.name, base[j], "input")?);
        }
        let mut outputs: Vec<IoDecl> = Vec::new();
        for (i, name) in node.output_names.iter().enumerate() {
            if outputs.iter().any(|d| &d.name == name) {
                continue;
            }
            if inputs.iter().any(|d| &d.name == name) {
                return Err(Error::invalid(format!(
                    "{file}: nodes[{k}].output_names[{i}]: {name:?} is also an input"
                )));
            }
            outputs.push(decl(name, base[k] + i as u64, "output")?);
        }
        Ok(NeffIo {
            kelf_node: k,
            kelf_file,
            inputs,
            outputs,
        })
    }

    /// The `__kelf` node: its index, the node, and its `attrs.kelf` file, with its declared
    /// input and output counts checked.
    fn kelf_node(&self, file: &str) -> Result<(usize, &GraphNode, String)> {
        let (k, node) = self
            .nodes
            .iter()
            .enumerate()
            .find(|(_, n)| n.attrs.func_name.as_deref() == Some("__kelf"))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{file}: no __kelf node (no node has attrs.func_name == \"__kelf\")"
                ))
            })?;
        let kelf_file = node
            .attrs
            .kelf
            .clone()
            .ok_or_else(|| Error::invalid(format!("{file}: nodes[{k}].attrs.kelf: missing")))?;
        if let Some(n) = node.attrs.num_inputs {
            if n != node.inputs.len() as u64 {
                return Err(Error::invalid(format!(
                    "{file}: nodes[{k}].attrs.num_inputs is {n} but the node has {} inputs",
                    node.inputs.len()
                )));
            }
        }
        if let Some(n) = node.attrs.num_outputs {
            if n != node.output_names.len() as u64 {
                return Err(Error::invalid(format!(
                    "{file}: nodes[{k}].attrs.num_outputs is {n} but output_names has {} names",
                    node.output_names.len()
                )));
            }
        }
        Ok((k, node, kelf_file))
    }

    /// The first graph-entry id of each node (entries are numbered node by node).
    fn entry_bases(&self, file: &str) -> Result<Vec<u64>> {
        let mut base = Vec::with_capacity(self.nodes.len());
        let mut next: u64 = 0;
        for n in &self.nodes {
            base.push(next);
            next = next
                .checked_add(n.num_outputs())
                .ok_or_else(|| Error::invalid(format!("{file}: graph entry count overflows")))?;
        }
        Ok(base)
    }

    /// The IO tensor `name` (an `input` or `output`, as `what`) at graph entry `entry`, its
    /// shape and dtype from `attrs`.
    fn decl(&self, file: &str, name: &str, entry: u64, what: &str) -> Result<IoDecl> {
        let idx = usize::try_from(entry).unwrap_or(usize::MAX);
        let shape = self.shapes.get(idx).ok_or_else(|| {
            Error::invalid(format!(
                "{file}: attrs.shape: no entry {entry} for {what} {name:?} ({} entries)",
                self.shapes.len()
            ))
        })?;
        let dt = self.dltypes.get(idx).ok_or_else(|| {
            Error::invalid(format!(
                "{file}: attrs.dltype: no entry {entry} for {what} {name:?} ({} entries)",
                self.dltypes.len()
            ))
        })?;
        let dtype = Dtype::from_neff_name(dt).ok_or_else(|| {
            Error::invalid(format!(
                "{file}: attrs.dltype[{entry}]: unknown dtype {dt:?} of {what} {name:?}"
            ))
        })?;
        let size = tensor_bytes(shape, dtype).ok_or_else(|| {
            Error::invalid(format!(
                "{file}: attrs.shape[{entry}]: {what} {name:?} of shape {shape:?} exceeds \
                 {MAX_BYTES} bytes"
            ))
        })?;
        Ok(IoDecl {
            name: name.to_string(),
            dtype,
            shape: shape.clone(),
            size,
        })
    }
}

/// Bytes of a tensor of `shape` and `dtype`, if no more than [`MAX_BYTES`].
pub fn tensor_bytes(shape: &[u64], dtype: Dtype) -> Option<u64> {
    let mut n: u64 = dtype.size() as u64;
    for &d in shape {
        n = n.checked_mul(d)?;
    }
    (n <= MAX_BYTES).then_some(n)
}
