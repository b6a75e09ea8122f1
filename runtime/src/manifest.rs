//! The NEFF manifests (load stage S2, docs/runtime.md §2.4): `neff.json`, `kelf-N.json`, `def.json`, the
//! engine JSON files and the `.npy` constants, parsed exactly as real compilers write them
//! (docs/neff.md §5–§8, §10).
//!
//! Each document has a plain model type ([`NeffJson`], [`KelfJson`], [`DefJson`],
//! [`EngineJson`]) and a parse function taking the member's path (for error messages) and its
//! bytes. Parsing is schema-checked but lenient where real files are:
//!
//! * unknown keys are ignored (real files carry debug keys, `#comment`s, table names …);
//! * a JSON `null` counts as an absent key;
//! * a missing required key or a value of the wrong type is [`NrtStatus::Invalid`] with a
//!   message naming the file and the key path, e.g. `sg00/def.json: var.a.var_id: missing` or
//!   `sg00/SP.json: dma[3].desc[0].from_sizes[1]: expected unsigned integer, got string`;
//! * numeric `attrs` of `neff.json` nodes are strings in real files (`"num_inputs":"2"`) and are
//!   accepted as strings or numbers.
//!
//! Cross-document validation (var names used by DMA descriptors, trigger records, sizes
//! against the target) is the job of [`crate::kbin::build`].
//!
//! The NEFF container is reached through the small [`MemberSource`] trait so the manifests do
//! not depend on the container type.
//!
//! [`NrtStatus::Invalid`]: crate::NrtStatus::Invalid

use std::collections::{BTreeMap, HashMap};

use nrt_hal::{Dtype, EngineKind, Target};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::kbin::{DmaOp, QueueSetKind, SbReservation};

/// Largest byte count, offset or element count the manifests may carry (2^40 = 1 TiB). Larger
/// numbers are rejected as invalid, so later arithmetic on them cannot overflow.
pub const MAX_BYTES: u64 = 1 << 40;

/// Read access to the members of a NEFF (path → bytes).
///
/// Paths are the tar member names with no leading `./` (`neff.json`, `sg00/def.json`).
pub trait MemberSource {
    /// The bytes of member `path`, if present.
    fn member(&self, path: &str) -> Option<&[u8]>;

    /// Member `path`'s bytes as a shared buffer, when the source holds them as one (a parsed
    /// NEFF does), so a consumer keeping the whole member needs no copy. `None` by default.
    fn member_shared(&self, path: &str) -> Option<std::sync::Arc<Vec<u8>>> {
        let _ = path;
        None
    }
}

impl<S: MemberSource + ?Sized> MemberSource for &S {
    fn member(&self, path: &str) -> Option<&[u8]> {
        (**self).member(path)
    }
    fn member_shared(&self, path: &str) -> Option<std::sync::Arc<Vec<u8>>> {
        (**self).member_shared(path)
    }
}

impl MemberSource for BTreeMap<String, Vec<u8>> {
    fn member(&self, path: &str) -> Option<&[u8]> {
        self.get(path).map(Vec::as_slice)
    }
}

impl MemberSource for HashMap<String, Vec<u8>> {
    fn member(&self, path: &str) -> Option<&[u8]> {
        self.get(path).map(Vec::as_slice)
    }
}

/// Joins member path `rel`, written inside a manifest, to the directory `dir` of that
/// manifest (`""` for the top level): `("sg00", "PE.json")` → `sg00/PE.json`. A leading `./`
/// is dropped from both parts.
pub fn join_member(dir: &str, rel: &str) -> String {
    let rel = rel.trim_start_matches("./");
    let dir = dir.trim_start_matches("./").trim_end_matches('/');
    if dir.is_empty() {
        rel.to_string()
    } else {
        format!("{dir}/{rel}")
    }
}

/// The directory part of a member path (`sg00/def.json` → `sg00`, `neff.json` → ``).
pub fn member_dir(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

/// Looks up member `rel` of a manifest living in `dir`: first `dir/rel`, then (for writers that
/// already spell the full path) `rel` itself. Returns the path found and the bytes.
pub fn resolve_member<'a>(
    src: &'a (impl MemberSource + ?Sized),
    dir: &str,
    rel: &str,
) -> Option<(String, &'a [u8])> {
    let joined = join_member(dir, rel);
    if let Some(b) = src.member(&joined) {
        return Some((joined, b));
    }
    let plain = rel.trim_start_matches("./");
    src.member(plain).map(|b| (plain.to_string(), b))
}

// ---------------------------------------------------------------------------------------------
// Path-aware JSON access.

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_u64() || n.is_i64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn parse_root(file: &str, bytes: &[u8]) -> Result<Map<String, Value>> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| {
        Error::invalid(format!(
            "{file}: malformed JSON at line {} column {}: {e}",
            e.line(),
            e.column()
        ))
    })?;
    match v {
        Value::Object(m) => Ok(m),
        other => Err(Error::invalid(format!(
            "{file}: expected a JSON object at the top level, got {}",
            type_name(&other)
        ))),
    }
}

/// A JSON value together with the file and key path it was found at.
#[derive(Clone, Copy)]
struct At<'a> {
    file: &'a str,
    path: &'a str,
    value: &'a Value,
}

fn err_at(file: &str, path: &str, what: impl std::fmt::Display) -> Error {
    if path.is_empty() {
        Error::invalid(format!("{file}: {what}"))
    } else {
        Error::invalid(format!("{file}: {path}: {what}"))
    }
}

impl<'a> At<'a> {
    fn err(&self, what: impl std::fmt::Display) -> Error {
        err_at(self.file, self.path, what)
    }

    fn wrong(&self, expected: &str) -> Error {
        self.err(format_args!(
            "expected {expected}, got {}",
            type_name(self.value)
        ))
    }

    fn str(&self) -> Result<&'a str> {
        self.value.as_str().ok_or_else(|| self.wrong("string"))
    }

    fn u64(&self) -> Result<u64> {
        match self.value {
            Value::Number(n) => n
                .as_u64()
                .ok_or_else(|| self.err(format_args!("expected unsigned integer, got {n}"))),
            _ => Err(self.wrong("unsigned integer")),
        }
    }

    /// An unsigned integer no larger than [`MAX_BYTES`].
    fn bytes(&self) -> Result<u64> {
        let v = self.u64()?;
        if v > MAX_BYTES {
            return Err(self.err(format_args!("{v} exceeds the limit of {MAX_BYTES}")));
        }
        Ok(v)
    }

    fn u32(&self) -> Result<u32> {
        let v = self.u64()?;
        u32::try_from(v).map_err(|_| self.err(format_args!("{v} does not fit in 32 bits")))
    }

    fn i64(&self) -> Result<i64> {
        match self.value {
            Value::Number(n) => n
                .as_i64()
                .ok_or_else(|| self.err(format_args!("expected integer, got {n}"))),
            _ => Err(self.wrong("integer")),
        }
    }

    fn f64(&self) -> Result<f64> {
        self.value.as_f64().ok_or_else(|| self.wrong("number"))
    }

    /// A string holding an unsigned integer, or an unsigned integer.
    fn str_or_u64(&self) -> Result<u64> {
        match self.value {
            Value::String(s) => s.trim().parse::<u64>().map_err(|_| {
                self.err(format_args!(
                    "expected an unsigned integer string, got {s:?}"
                ))
            }),
            Value::Number(_) => self.u64(),
            _ => Err(self.wrong("integer string")),
        }
    }

    fn obj(&self) -> Result<Obj<'a>> {
        match self.value {
            Value::Object(m) => Ok(Obj {
                file: self.file,
                path: self.path.to_string(),
                map: m,
            }),
            _ => Err(self.wrong("object")),
        }
    }

    fn arr(&self) -> Result<&'a [Value]> {
        match self.value {
            Value::Array(a) => Ok(a),
            _ => Err(self.wrong("array")),
        }
    }

    /// Applies `f` to every element of an array, with the element's path.
    fn each<T>(&self, mut f: impl FnMut(At<'_>) -> Result<T>) -> Result<Vec<T>> {
        let a = self.arr()?;
        let mut out = Vec::with_capacity(a.len());
        for (i, v) in a.iter().enumerate() {
            let path = format!("{}[{i}]", self.path);
            out.push(f(At {
                file: self.file,
                path: &path,
                value: v,
            })?);
        }
        Ok(out)
    }
}

/// A JSON object with its file and key path.
struct Obj<'a> {
    file: &'a str,
    path: String,
    map: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    fn root(file: &'a str, map: &'a Map<String, Value>) -> Self {
        Obj {
            file,
            path: String::new(),
            map,
        }
    }

    fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn err(&self, key: &str, what: impl std::fmt::Display) -> Error {
        err_at(self.file, &self.key_path(key), what)
    }

    /// Runs `f` on the value of `key` if present (and not null).
    fn opt<T>(&self, key: &str, f: impl FnOnce(At<'_>) -> Result<T>) -> Result<Option<T>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                let path = self.key_path(key);
                f(At {
                    file: self.file,
                    path: &path,
                    value: v,
                })
                .map(Some)
            }
        }
    }

    /// Runs `f` on the value of `key`, which must be present.
    fn req<T>(&self, key: &str, f: impl FnOnce(At<'_>) -> Result<T>) -> Result<T> {
        self.opt(key, f)?.ok_or_else(|| self.err(key, "missing"))
    }

    fn req_str(&self, key: &str) -> Result<String> {
        self.req(key, |a| a.str().map(str::to_string))
    }

    fn opt_str(&self, key: &str) -> Result<Option<String>> {
        self.opt(key, |a| a.str().map(str::to_string))
    }

    fn opt_u32(&self, key: &str) -> Result<Option<u32>> {
        self.opt(key, |a| a.u32())
    }

    fn opt_bytes(&self, key: &str) -> Result<Option<u64>> {
        self.opt(key, |a| a.bytes())
    }

    /// The sub-object at `key` (required).
    fn req_obj(&self, key: &str) -> Result<Obj<'a>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Err(self.err(key, "missing")),
            Some(Value::Object(m)) => Ok(Obj {
                file: self.file,
                path: self.key_path(key),
                map: m,
            }),
            Some(v) => Err(self.err(key, format_args!("expected object, got {}", type_name(v)))),
        }
    }

    /// The sub-object at `key`, if present.
    fn opt_obj(&self, key: &str) -> Result<Option<Obj<'a>>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.req_obj(key).map(Some),
        }
    }

    /// The entries of this object, each with its own path.
    fn entries(&self) -> impl Iterator<Item = (&'a String, At<'_>, String)> + '_ {
        self.map.iter().map(move |(k, v)| {
            let path = self.key_path(k);
            (
                k,
                At {
                    file: self.file,
                    path: "",
                    value: v,
                },
                path,
            )
        })
    }
}

/// Runs `f` on `at` re-rooted at `path` (used with [`Obj::entries`]).
fn with_path<T>(at: At<'_>, path: &str, f: impl FnOnce(At<'_>) -> Result<T>) -> Result<T> {
    f(At {
        file: at.file,
        path,
        value: at.value,
    })
}

fn u64_list(a: At<'_>) -> Result<Vec<u64>> {
    a.each(|e| e.u64())
}

fn bytes_list(a: At<'_>) -> Result<Vec<u64>> {
    a.each(|e| e.bytes())
}

fn string_list(a: At<'_>) -> Result<Vec<String>> {
    a.each(|e| e.str().map(str::to_string))
}

fn dtype_of(a: At<'_>) -> Result<Dtype> {
    let s = a.str()?;
    Dtype::from_neff_name(s).ok_or_else(|| a.err(format_args!("unknown dtype {s:?}")))
}

// ---------------------------------------------------------------------------------------------
// neff.json

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

// ---------------------------------------------------------------------------------------------
// kelf-N.json

/// A NEFF's top-level manifests: `neff.json` (or its legacy name `kelp.json`), the IO signature
/// of its `__kelf` node, and the `kelf-N.json` that node names. The one lookup the loader and
/// every tool (`inspect`, `run`, the conformance harness) make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopManifests {
    /// The member holding the graph (`neff.json` or `kelp.json`).
    pub neff_file: &'static str,
    /// Its parsed contents.
    pub neff: NeffJson,
    /// The `__kelf` node's IO signature.
    pub io: NeffIo,
    /// The member path of the kelf manifest.
    pub kelf_path: String,
    /// Its parsed contents.
    pub kelf: KelfJson,
}

/// Finds and parses the top-level manifests of the NEFF whose members `src` holds.
pub fn top_manifests(src: &impl MemberSource) -> Result<TopManifests> {
    let (neff_file, neff_bytes) = ["neff.json", "kelp.json"]
        .into_iter()
        .find_map(|f| src.member(f).map(|b| (f, b)))
        .ok_or_else(|| Error::invalid("neff.json is missing"))?;
    let neff = parse_neff_json(neff_file, neff_bytes)?;
    let io = neff.io(neff_file)?;
    let (kelf_path, kelf_bytes) = resolve_member(src, "", &io.kelf_file).ok_or_else(|| {
        Error::invalid(format!(
            "{neff_file}: nodes[{}].attrs.kelf names {:?}, which is not in the NEFF",
            io.kelf_node, io.kelf_file
        ))
    })?;
    let kelf = parse_kelf_json(&kelf_path, kelf_bytes)?;
    Ok(TopManifests {
        neff_file,
        neff,
        io,
        kelf_path,
        kelf,
    })
}

impl TopManifests {
    /// The generation the kelf manifest names (`target`: `sunda` trn1, `cayman` trn2), `None`
    /// for `*` (any generation); a name this build does not know is an error naming it.
    pub fn target(&self) -> Result<Option<Target>> {
        let t = &self.kelf.target;
        if t == "*" {
            return Ok(None);
        }
        Target::from_neff_target(t).map(Some).ok_or_else(|| {
            Error::invalid(format!(
                "{} names target {t:?}, which this build does not simulate",
                self.kelf_path
            ))
        })
    }
}

/// One `graphs[]` entry of `kelf-N.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphRef {
    /// `definition`: the subgraph's `def.json` member (`sg00/def.json`).
    pub definition: String,
    /// `name` (`sg00`).
    pub name: String,
}

/// `kelf-N.json`: the subgraph list (docs/neff.md §6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KelfJson {
    /// `graphs`.
    pub graphs: Vec<GraphRef>,
    /// `version` (`"0.5"`).
    pub version: String,
    /// `target`: `sunda`, `cayman`, `*` …
    pub target: String,
}

/// Parses `kelf-N.json`.
pub fn parse_kelf_json(file: &str, bytes: &[u8]) -> Result<KelfJson> {
    let root = parse_root(file, bytes)?;
    let o = Obj::root(file, &root);
    let graphs = o.req("graphs", |a| {
        a.each(|g| {
            let g = g.obj()?;
            Ok(GraphRef {
                definition: g.req_str("definition")?,
                name: g.req_str("name")?,
            })
        })
    })?;
    Ok(KelfJson {
        graphs,
        version: o.req_str("version")?,
        target: o.req_str("target")?,
    })
}

// ---------------------------------------------------------------------------------------------
// def.json

/// def.json `var.*.type` (docs/neff.md §7.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarType {
    /// `state-buffer`.
    StateBuffer,
    /// `input`.
    Input,
    /// `output`.
    Output,
    /// `file`.
    File,
    /// `tmp-buf`.
    TmpBuf,
    /// `virtual`.
    Virtual,
    /// `pointer`.
    Pointer,
    /// `dge-table`.
    DgeTable,
}

impl VarType {
    /// Parses the def.json spelling.
    pub fn from_name(s: &str) -> Option<VarType> {
        Some(match s {
            "state-buffer" => VarType::StateBuffer,
            "input" => VarType::Input,
            "output" => VarType::Output,
            "file" => VarType::File,
            "tmp-buf" => VarType::TmpBuf,
            "virtual" => VarType::Virtual,
            "pointer" => VarType::Pointer,
            "dge-table" => VarType::DgeTable,
            _ => return None,
        })
    }
}

/// One def.json `var` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct VarDef {
    /// Its key in `var`.
    pub name: String,
    /// `type`.
    pub var_type: VarType,
    /// `var_id`.
    pub var_id: u32,
    /// `size` (required for every type but `state-buffer`).
    pub size: Option<u64>,
    /// `alignment` (default 0).
    pub alignment: u64,
    /// `fabric_path` (`main` when absent).
    pub fabric_path: Option<String>,
    /// `file_name` (required for `file`), as written (relative to the def.json directory).
    pub file_name: Option<String>,
    /// `backing_variable_off` (required for `virtual`).
    pub backing_variable_off: Option<u64>,
    /// `referenced_var_id` (required for `pointer`).
    pub referenced_var_id: Option<u32>,
    /// `list` (for `dge-table`), opaque.
    pub list: Option<Vec<Value>>,
}

/// One def.json `dma_queue` entry (a queue set).
#[derive(Debug, Clone, PartialEq)]
pub struct QueueDef {
    /// Its key in `dma_queue`.
    pub name: String,
    /// `type`.
    pub kind: QueueSetKind,
    /// `num_queues` (default 1).
    pub num_queues: u64,
    /// `owner` (engine key), as written.
    pub owner: Option<String>,
    /// `semaphore_set`.
    pub semaphore_set: Vec<u32>,
    /// `semaphore`.
    pub semaphore: Option<u32>,
    /// `fabric_path`.
    pub fabric_path: Option<String>,
    /// `queue_instances`, opaque.
    pub queue_instances: Vec<Value>,
}

/// One engine named by def.json: its JSON and binary members, already joined to the def.json
/// directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineRef {
    /// The engine.
    pub engine: EngineKind,
    /// `<key>`: the engine JSON, as written.
    pub json: Option<String>,
    /// `<key>_instr`: the instruction binary, as written.
    pub instr: Option<String>,
}

/// `def.json`: one subgraph's definition (docs/neff.md §7).
#[derive(Debug, Clone, PartialEq)]
pub struct DefJson {
    /// `var`, sorted by name.
    pub vars: Vec<VarDef>,
    /// `dma_queue`, sorted by name.
    pub dma_queues: Vec<QueueDef>,
    /// Engines named by `pe`/`act`/`pool`/`dve`/`sp` (or their `_instr` keys), in exec order
    /// PE, ACT, POOL, DVE, SP.
    pub engines: Vec<EngineRef>,
    /// `runtime_statebuffer_reservation` (None when absent).
    pub sb_reservations: Option<Vec<SbReservation>>,
    /// `neff_features`.
    pub neff_features: Vec<String>,
    /// `cc_streams.num_streams` (0 when absent).
    pub cc_streams: u32,
    /// `runtime_event_count` (0 when absent).
    pub runtime_event_count: u32,
    /// `runtime_semaphore_count` (0 when absent).
    pub runtime_semaphore_count: u32,
}

/// Parses a `def.json`.
pub fn parse_def_json(file: &str, bytes: &[u8]) -> Result<DefJson> {
    let root = parse_root(file, bytes)?;
    let o = Obj::root(file, &root);

    let mut vars = Vec::new();
    for (name, at, path) in o.req_obj("var")?.entries() {
        vars.push(with_path(at, &path, |a| {
            let v = a.obj()?;
            let var_type = v.req("type", |a| {
                let s = a.str()?;
                VarType::from_name(s).ok_or_else(|| a.err(format_args!("unknown var type {s:?}")))
            })?;
            let size = if var_type == VarType::StateBuffer {
                v.opt_bytes("size")?
            } else {
                Some(v.req("size", |a| a.bytes())?)
            };
            let file_name = v.opt_str("file_name")?;
            if var_type == VarType::File && file_name.is_none() {
                return Err(v.err("file_name", "missing"));
            }
            let backing_variable_off = v.opt_bytes("backing_variable_off")?;
            if var_type == VarType::Virtual && backing_variable_off.is_none() {
                return Err(v.err("backing_variable_off", "missing"));
            }
            let referenced_var_id = v.opt_u32("referenced_var_id")?;
            if var_type == VarType::Pointer && referenced_var_id.is_none() {
                return Err(v.err("referenced_var_id", "missing"));
            }
            // `ops` is a list in every real file; check its type, ignore its contents.
            v.opt("ops", |a| a.arr().map(|_| ()))?;
            Ok(VarDef {
                name: name.clone(),
                var_type,
                var_id: v.req("var_id", |a| a.u32())?,
                size,
                alignment: v.opt_bytes("alignment")?.unwrap_or(0),
                fabric_path: v.opt_str("fabric_path")?,
                file_name,
                backing_variable_off,
                referenced_var_id,
                list: v.opt("list", |a| a.arr().map(<[Value]>::to_vec))?,
            })
        })?);
    }

    let mut dma_queues = Vec::new();
    if let Some(q) = o.opt_obj("dma_queue")? {
        for (name, at, path) in q.entries() {
            dma_queues.push(with_path(at, &path, |a| {
                let q = a.obj()?;
                Ok(QueueDef {
                    name: name.clone(),
                    kind: q.req("type", |a| {
                        let s = a.str()?;
                        queue_kind(s)
                            .ok_or_else(|| a.err(format_args!("unknown queue-set type {s:?}")))
                    })?,
                    num_queues: q.opt("num_queues", |a| a.u64())?.unwrap_or(1),
                    owner: q.opt_str("owner")?,
                    semaphore_set: q
                        .opt("semaphore_set", |a| a.each(|e| e.u32()))?
                        .unwrap_or_default(),
                    semaphore: q.opt_u32("semaphore")?,
                    fabric_path: q.opt_str("fabric_path")?,
                    queue_instances: q
                        .opt("queue_instances", |a| a.arr().map(<[Value]>::to_vec))?
                        .unwrap_or_default(),
                })
            })?);
        }
    }

    let mut engines = Vec::new();
    for e in EngineKind::ALL {
        let key = e.def_key();
        let json = o.opt_str(key)?;
        let instr = o.opt_str(&format!("{key}_instr"))?;
        if json.is_some() || instr.is_some() {
            engines.push(EngineRef {
                engine: e,
                json,
                instr,
            });
        }
    }

    let sb_reservations = o.opt("runtime_statebuffer_reservation", |a| {
        a.each(|r| {
            let r = r.obj()?;
            Ok(SbReservation {
                kind: r.req_str("type")?,
                base_partition: r.req("base_partition", |a| a.u32())?,
                partitions: r.req("partitions", |a| a.u32())?,
                offset: r.req("offset", |a| a.u32())?,
                size: r.req("size", |a| a.u32())?,
            })
        })
    })?;

    let cc_streams = match o.opt_obj("cc_streams")? {
        Some(c) => c.opt_u32("num_streams")?.unwrap_or(0),
        None => 0,
    };

    Ok(DefJson {
        vars,
        dma_queues,
        engines,
        sb_reservations,
        neff_features: o.opt("neff_features", string_list)?.unwrap_or_default(),
        cc_streams,
        runtime_event_count: o.opt_u32("runtime_event_count")?.unwrap_or(0),
        runtime_semaphore_count: o.opt_u32("runtime_semaphore_count")?.unwrap_or(0),
    })
}

fn queue_kind(s: &str) -> Option<QueueSetKind> {
    Some(match s {
        "in" => QueueSetKind::In,
        "out" => QueueSetKind::Out,
        "data" => QueueSetKind::Data,
        "embedding_update" => QueueSetKind::EmbeddingUpdate,
        "dynamic" => QueueSetKind::Dynamic,
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Engine JSON

/// The transpose parameters of a descriptor carrying `transpose_op` (docs/neff.md §8.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransposeDef {
    /// `transpose_op`: a 4-letter axis permutation such as `WZXY` (absent for `op: transpose`
    /// descriptors that give only a shape).
    pub op: Option<String>,
    /// `transpose_shape` (4 dims).
    pub shape: Vec<u64>,
    /// `transpose_element_size` in bytes.
    pub element_size: Option<u64>,
}

/// One `desc` of a DMA block, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct DescDef {
    /// `op` (default `copy`; `transpose` when only `transpose_op` is given).
    pub op: DmaOp,
    /// `from`: source var name (absent only for CCE descriptors using `from_arr`).
    pub from: Option<String>,
    /// `to`: destination var name.
    pub to: String,
    /// `from_off` (default 0).
    pub from_off: u64,
    /// `to_off` (default 0).
    pub to_off: u64,
    /// `from_sizes`, innermost first.
    pub from_sizes: Vec<u64>,
    /// `to_sizes`, innermost first.
    pub to_sizes: Vec<u64>,
    /// `from_steps` in bytes, innermost first.
    pub from_steps: Vec<i64>,
    /// `to_steps` in bytes, innermost first.
    pub to_steps: Vec<i64>,
    /// `from_dtype` (default `uint8`).
    pub from_dtype: Dtype,
    /// `to_dtype` (default `uint8`).
    pub to_dtype: Dtype,
    /// `num_tiling_dimensions` (occasionally absent).
    pub num_tiling_dimensions: Option<u32>,
    /// Transpose parameters, when `transpose_op` or `transpose_shape` is present.
    pub transpose: Option<TransposeDef>,
    /// `scale` (fma).
    pub scale: Option<f64>,
    /// `scale_dtype`.
    pub scale_dtype: Option<Dtype>,
    /// `constant` (min/max).
    pub constant: Option<f64>,
    /// `constant_dtype`.
    pub constant_dtype: Option<Dtype>,
    /// Whether the descriptor names its sources with `from_arr` (CCE), unsupported here.
    pub has_from_arr: bool,
}

/// One `dma[]` block of an engine JSON, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct DmaBlockDef {
    /// `id`.
    pub id: u32,
    /// `instance_name` if given, else `queue`.
    pub queue: String,
    /// `semaphore`.
    pub semaphore: Option<u32>,
    /// `event`.
    pub event: Option<u32>,
    /// `#comment` (BIR instruction name).
    pub comment: Option<String>,
    /// `desc`.
    pub descs: Vec<DescDef>,
}

/// An engine JSON file (`PE.json`, `Activation.json`, …; docs/neff.md §8).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineJson {
    /// `name`.
    pub name: Option<String>,
    /// `instr`: the binary, as written.
    pub instr: Option<String>,
    /// `dma`.
    pub dma: Vec<DmaBlockDef>,
}

fn dma_op(s: &str) -> Option<DmaOp> {
    Some(match s {
        "copy" => DmaOp::Copy,
        "cast" => DmaOp::Cast,
        "fma" => DmaOp::Fma,
        "add" => DmaOp::Add,
        "min" => DmaOp::Min,
        "max" => DmaOp::Max,
        "transpose" => DmaOp::Transpose,
        _ => return None,
    })
}

fn parse_desc(a: At<'_>) -> Result<DescDef> {
    let d = a.obj()?;
    let transpose_op = d.opt_str("transpose_op")?;
    let transpose_shape = d.opt("transpose_shape", bytes_list)?;
    let transpose_element_size = d.opt_bytes("transpose_element_size")?;
    let op = match d.opt("op", |a| {
        let s = a.str()?;
        dma_op(s).ok_or_else(|| a.err(format_args!("unknown DMA op {s:?}")))
    })? {
        Some(op) => op,
        None if transpose_op.is_some() => DmaOp::Transpose,
        None => DmaOp::Copy,
    };
    let transpose = if transpose_op.is_some() || transpose_shape.is_some() {
        Some(TransposeDef {
            op: transpose_op,
            shape: transpose_shape.unwrap_or_default(),
            element_size: transpose_element_size,
        })
    } else {
        None
    };
    let steps = |key: &str| d.req(key, |a| a.each(|e| e.i64()));
    Ok(DescDef {
        op,
        from: d.opt_str("from")?,
        to: d.req_str("to")?,
        from_off: d.opt_bytes("from_off")?.unwrap_or(0),
        to_off: d.opt_bytes("to_off")?.unwrap_or(0),
        from_sizes: d.req("from_sizes", bytes_list)?,
        to_sizes: d.req("to_sizes", bytes_list)?,
        from_steps: steps("from_steps")?,
        to_steps: steps("to_steps")?,
        from_dtype: d.opt("from_dtype", dtype_of)?.unwrap_or(Dtype::U8),
        to_dtype: d.opt("to_dtype", dtype_of)?.unwrap_or(Dtype::U8),
        num_tiling_dimensions: d.opt_u32("num_tiling_dimensions")?,
        transpose,
        scale: d.opt("scale", |a| a.f64())?,
        scale_dtype: d.opt("scale_dtype", dtype_of)?,
        constant: d.opt("constant", |a| a.f64())?,
        constant_dtype: d.opt("constant_dtype", dtype_of)?,
        has_from_arr: d.map.contains_key("from_arr"),
    })
}

/// Parses an engine JSON file.
pub fn parse_engine_json(file: &str, bytes: &[u8]) -> Result<EngineJson> {
    let root = parse_root(file, bytes)?;
    let o = Obj::root(file, &root);
    let dma = o
        .opt("dma", |a| {
            a.each(|b| {
                let b = b.obj()?;
                let queue = match b.opt_str("instance_name")? {
                    Some(q) => q,
                    None => b.req_str("queue")?,
                };
                Ok(DmaBlockDef {
                    id: b.req("id", |a| a.u32())?,
                    queue,
                    semaphore: b.opt_u32("semaphore")?,
                    event: b.opt_u32("event")?,
                    comment: b.opt_str("#comment")?,
                    descs: b.req("desc", |a| a.each(parse_desc))?,
                })
            })
        })?
        .unwrap_or_default();
    Ok(EngineJson {
        name: o.opt_str("name")?,
        instr: o.opt_str("instr")?,
        dma,
    })
}

// ---------------------------------------------------------------------------------------------
// .npy constants

/// A decoded `.npy` constant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyConstant {
    /// The numpy type string (`<f2`, `|i1` …).
    pub descr: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// Element bytes, little-endian, in C (row-major) order.
    pub data: Vec<u8>,
}

/// Finds `'shape': (…)` in an npy header and checks that its element count cannot overflow
/// (npyz multiplies the dims unchecked).
fn npy_shape_precheck(bytes: &[u8]) -> std::result::Result<(), String> {
    // Magic (6) + version (2) + header length (2 for v1, 4 for v2/v3).
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not an npy file (bad magic)".into());
    }
    let (len, start) = match bytes[6] {
        1 => (
            usize::from(u16::from_le_bytes([bytes[8], bytes[9]])),
            10usize,
        ),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(format!("unsupported npy version {v}")),
    };
    let header = bytes
        .get(start..start.saturating_add(len))
        .ok_or("truncated npy header")?;
    let text = String::from_utf8_lossy(header);
    let Some(at) = text.find("'shape'") else {
        return Ok(()); // let npyz report it
    };
    let rest = &text[at..];
    let (Some(open), Some(close)) = (rest.find('('), rest.find(')')) else {
        return Ok(());
    };
    if close < open {
        return Ok(());
    }
    let mut count: u128 = 1;
    for part in rest[open + 1..close].split(',') {
        let p = part.trim();
        if p.is_empty() {
            continue;
        }
        let d: u128 = p
            .trim_end_matches('L')
            .parse()
            .map_err(|_| format!("bad shape dimension {p:?}"))?;
        count = count.saturating_mul(d);
        if count > u128::from(MAX_BYTES) {
            return Err(format!(
                "shape {} has too many elements",
                &rest[open..=close]
            ));
        }
    }
    Ok(())
}

/// A checked `.npy` file: its element type and header, and the element bytes as stored.
struct NpyParts<'a> {
    ty: npyz::TypeStr,
    item: usize,
    shape: Vec<u64>,
    order: npyz::Order,
    data: &'a [u8],
}

impl NpyParts<'_> {
    /// Whether the stored bytes already are little-endian elements in C order.
    fn is_plain(&self) -> bool {
        (self.ty.endianness() != npyz::Endianness::Big || self.item == 1)
            && (self.order != npyz::Order::Fortran || self.shape.len() <= 1)
    }
}

fn npy_parts<'a>(file: &str, bytes: &'a [u8]) -> Result<NpyParts<'a>> {
    let bad = |what: String| Error::invalid(format!("{file}: {what}"));
    npy_shape_precheck(bytes).map_err(bad)?;
    let mut rest = bytes;
    let header =
        npyz::NpyHeader::from_reader(&mut rest).map_err(|e| bad(format!("bad npy header: {e}")))?;
    let ty = match header.dtype() {
        npyz::DType::Plain(t) => t,
        other => return Err(bad(format!("unsupported npy dtype {}", other.descr()))),
    };
    let item = ty
        .num_bytes()
        .filter(|&n| n > 0)
        .ok_or_else(|| bad(format!("unsupported npy dtype {ty}")))?;
    let shape = header.shape().to_vec();
    let count = shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad("npy element count overflows".into()))?;
    let nbytes = count
        .checked_mul(item as u64)
        .filter(|&n| n <= MAX_BYTES)
        .ok_or_else(|| {
            bad(format!(
                "npy data of shape {shape:?} exceeds {MAX_BYTES} bytes"
            ))
        })?;
    let nbytes = usize::try_from(nbytes).map_err(|_| bad("npy data too large".into()))?;
    if rest.len() < nbytes {
        return Err(bad(format!(
            "npy data is {} bytes, shape {shape:?} × {item} bytes needs {nbytes}",
            rest.len()
        )));
    }
    Ok(NpyParts {
        order: header.order(),
        ty,
        item,
        shape,
        data: &rest[..nbytes],
    })
}

/// Decodes a `.npy` file (`file` names it in error messages): the element bytes,
/// little-endian, in C order. Big-endian files are byte-swapped and Fortran-order files
/// reordered; structured dtypes are rejected.
pub fn parse_npy(file: &str, bytes: &[u8]) -> Result<NpyConstant> {
    let p = npy_parts(file, bytes)?;
    let mut data = p.data.to_vec();
    if p.ty.endianness() == npyz::Endianness::Big && p.item > 1 {
        for e in data.chunks_exact_mut(p.item) {
            e.reverse();
        }
    }
    if p.order == npyz::Order::Fortran && p.shape.len() > 1 {
        data = fortran_to_c(&data, &p.shape, p.item);
    }
    Ok(NpyConstant {
        descr: p.ty.to_string(),
        shape: p.shape,
        data,
    })
}

/// Where in `bytes` the elements [`parse_npy`] would decode lie, when they need no conversion
/// (little-endian, C order: the common case, and a large constant's): `Some(range)`, so the
/// caller can use the stored bytes in place. `None` when [`parse_npy`] must convert them. Same
/// checks, same errors as [`parse_npy`].
pub fn npy_data_range(file: &str, bytes: &[u8]) -> Result<Option<std::ops::Range<usize>>> {
    let p = npy_parts(file, bytes)?;
    if !p.is_plain() {
        return Ok(None);
    }
    // `p.data` is a subslice of `bytes`.
    let start = p.data.as_ptr() as usize - bytes.as_ptr() as usize;
    Ok(Some(start..start + p.data.len()))
}

/// A `.npy` file (npyz's writer) holding `data` — little-endian elements of `dtype`, C order —
/// with `shape`, typed as [`Dtype::npy_descr`] says. The one `.npy` writer of the platform: the
/// zoo's constants and `nrt-emu run --output-dir` use it, [`parse_npy`] reads it back. `data`
/// must hold exactly the elements `shape` counts.
pub fn npy_bytes(dtype: Dtype, shape: &[u64], data: &[u8]) -> Result<Vec<u8>> {
    use npyz::WriterBuilder;
    fn write<T: npyz::AutoSerialize>(
        shape: &[u64],
        data: &[u8],
        elem: impl Fn(&[u8]) -> T,
    ) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut w = npyz::WriteOptions::new()
            .default_dtype()
            .shape(shape)
            .writer(&mut out)
            .begin_nd()?;
        for c in data.chunks_exact(std::mem::size_of::<T>()) {
            w.push(&elem(c))?;
        }
        w.finish()?;
        Ok(out)
    }
    let arr = |c: &[u8]| -> [u8; 8] {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        b
    };
    let count = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    if count.and_then(|n| n.checked_mul(dtype.size() as u64)) != Some(data.len() as u64) {
        return Err(Error::invalid(format!(
            "npy: {} bytes of {dtype} do not fill shape {shape:?}",
            data.len()
        )));
    }
    let r = match dtype {
        Dtype::F32 | Dtype::F32r => write(shape, data, |c| {
            f32::from_le_bytes(arr(c)[..4].try_into().expect("4 bytes"))
        }),
        Dtype::F16 => write(shape, data, |c| half::f16::from_le_bytes([c[0], c[1]])),
        Dtype::Bf16 | Dtype::U16 => write(shape, data, |c| u16::from_le_bytes([c[0], c[1]])),
        Dtype::I16 => write(shape, data, |c| i16::from_le_bytes([c[0], c[1]])),
        Dtype::I32 => write(shape, data, |c| {
            i32::from_le_bytes(arr(c)[..4].try_into().expect("4 bytes"))
        }),
        Dtype::U32 => write(shape, data, |c| {
            u32::from_le_bytes(arr(c)[..4].try_into().expect("4 bytes"))
        }),
        Dtype::I64 => write(shape, data, |c| i64::from_le_bytes(arr(c))),
        Dtype::U64 => write(shape, data, |c| u64::from_le_bytes(arr(c))),
        Dtype::I8 => write(shape, data, |c| c[0] as i8),
        Dtype::U8 | Dtype::Fp8E3 | Dtype::Fp8E4 | Dtype::Fp8E5 => write(shape, data, |c| c[0]),
    };
    r.map_err(|e| Error::invalid(format!("npy: {e}")))
}

/// Reorders Fortran-order element bytes into C order. `data.len()` is exactly
/// `product(shape) × item`, so every index below is in range.
fn fortran_to_c(data: &[u8], shape: &[u64], item: usize) -> Vec<u8> {
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let count = data.len() / item;
    let mut out = vec![0u8; data.len()];
    let mut idx = vec![0usize; dims.len()];
    for c in 0..count {
        // Fortran offset of the current C-order index.
        let mut f = 0usize;
        let mut stride = 1usize;
        for (i, &d) in dims.iter().enumerate() {
            f += idx[i] * stride;
            stride *= d;
        }
        out[c * item..(c + 1) * item].copy_from_slice(&data[f * item..(f + 1) * item]);
        for i in (0..dims.len()).rev() {
            idx[i] += 1;
            if idx[i] < dims[i] {
                break;
            }
            idx[i] = 0;
        }
    }
    out
}
