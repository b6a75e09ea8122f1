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
//! One file per manifest kind; this module only names them and hands their items on:
//!
//! | file | owns |
//! |---|---|
//! | `member` | [`MemberSource`] and the joining of member paths written inside a manifest |
//! | `json` | the path-aware JSON cursor every parser reads through, and [`MAX_BYTES`] |
//! | `neff_json` | `neff.json` ([`NeffJson`]) and the IO tensors of its `__kelf` node ([`NeffIo`]) |
//! | `kelf` | `kelf-N.json` ([`KelfJson`]) |
//! | `top` | the top-level manifests found together ([`TopManifests`], [`top_manifests`]) |
//! | `def` | `def.json` ([`DefJson`]: vars, queue sets, engines, reservations) |
//! | `engine` | the engine JSON files ([`EngineJson`]: DMA blocks and descriptors) |
//! | `npy` | `.npy` constants: reader ([`parse_npy`], [`npy_data_range`]) and writer ([`npy_bytes`]) |
//!
//! A new manifest key or var type goes into the file of its manifest kind; a new manifest kind
//! is a new file here reading through `json`.
//!
//! [`NrtStatus::Invalid`]: crate::NrtStatus::Invalid

mod def;
mod engine;
mod json;
mod kelf;
mod member;
mod neff_json;
mod npy;
mod top;

pub use def::{parse_def_json, DefJson, EngineRef, QueueDef, VarDef, VarType};
pub use engine::{
    parse_act_info, parse_engine_json, ActFuncSet, DescDef, DmaBlockDef, EngineJson, TransposeDef,
};
pub use json::MAX_BYTES;
pub use kelf::{parse_kelf_json, GraphRef, KelfJson};
pub use member::{join_member, member_dir, resolve_member, MemberSource};
pub use neff_json::{
    parse_neff_json, tensor_bytes, GraphNode, IoDecl, NeffIo, NeffJson, NodeAttrs, NodeEntry,
    SignatureTensor,
};
pub use npy::{npy_bytes, npy_data_range, parse_npy, NpyConstant};
pub use top::{top_manifests, TopManifests};
