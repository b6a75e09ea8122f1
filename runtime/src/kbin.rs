//! The KBIN: one record per subgraph, built from the NEFF's manifests with no device access
//! (load stages S2/S3, docs/runtime.md §2.4–§2.5). It is the compiler's "section table" for one core: the
//! variables, queue sets, DMA descriptor blocks and engine instruction streams, the state-buffer
//! reservations and the target — everything staging (S4) needs, already validated.
//!
//! This module holds the data model; `manifest` parses the JSON into it and `build` lowers
//! and validates (see [`crate::kbin::build`]). It is also the model the NEFF *writer* of the
//! model zoo (`nrt-fixtures`' `compiler`) builds and serialises, so a program has one shape
//! whether it is read or written, and the spellings the manifests use for queue-set kinds, DMA
//! ops and var types are defined once ([`QueueSetKind::name`], [`DmaOp::name`],
//! [`crate::manifest::VarType::name`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use nrt_hal::isa::neuron::{is_neuron_stream, Encoding, Names, NeuronInstr};
use nrt_hal::isa::Record;
use nrt_hal::{Dtype, EngineKind, Target};

use crate::manifest::VarType;

pub mod build;

/// Defines a fieldless enum whose variants each carry the NEFF manifests' spelling, with
/// `name()` and `from_name()` from that one table (the writer spells with one, the parser reads
/// with the other). Each variant is documented by its spelling, then its own doc comment.
macro_rules! spelled_enum {
    (
        $(#[$meta:meta])*
        pub enum $ty:ident {
            $($(#[$vmeta:meta])* $variant:ident = $name:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $ty {
            $(#[doc = concat!("`", $name, "`.")] $(#[$vmeta])* $variant,)+
        }

        impl $ty {
            /// How the NEFF's manifests spell it.
            pub const fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }

            /// The variant spelled `s` in the manifests, if any.
            pub fn from_name(s: &str) -> Option<$ty> {
                match s {
                    $($name => Some($ty::$variant),)+
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use spelled_enum;

/// Bytes that are a window of a shared buffer: a `file` var's data, which for a raw member or a
/// little-endian C-order `.npy` is the member's own inflated buffer (no copy at load), and is
/// its own buffer otherwise. Reads as the `[u8]` of the window.
#[derive(Clone)]
pub struct SharedBytes {
    buf: Arc<Vec<u8>>,
    range: std::ops::Range<usize>,
}

impl SharedBytes {
    /// Bytes `range` of `buf`, or `None` if the range is not inside it.
    pub fn window(buf: Arc<Vec<u8>>, range: std::ops::Range<usize>) -> Option<SharedBytes> {
        buf.get(range.clone())?;
        Some(SharedBytes { buf, range })
    }
}

impl From<Vec<u8>> for SharedBytes {
    fn from(v: Vec<u8>) -> Self {
        let range = 0..v.len();
        SharedBytes {
            buf: Arc::new(v),
            range,
        }
    }
}

impl From<&[u8]> for SharedBytes {
    fn from(v: &[u8]) -> Self {
        SharedBytes {
            buf: Arc::new(v.to_vec()),
            range: 0..v.len(),
        }
    }
}

impl std::ops::Deref for SharedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[self.range.clone()]
    }
}

impl AsRef<[u8]> for SharedBytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl PartialEq for SharedBytes {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// The `target` of `kelf-N.json`: a generation, or `*` (any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KelfTarget {
    /// `*`: loads on every generation.
    Any,
    /// A specific generation (`sunda` = trn1, `cayman` = trn2).
    Gen(Target),
}

/// A model input or output as `neff.json` declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoTensor {
    /// Tensor name (the binding key).
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Shape.
    pub shape: Vec<u64>,
    /// Bytes (= the def.json `input`/`output` var size).
    pub size: u64,
    /// The var id of the tensor's `input`/`output` var in each subgraph that has one.
    pub var_ids: Vec<(usize, u32)>,
}

/// The whole parsed model: `neff.json` IO plus one [`Kbin`] per subgraph.
#[derive(Debug, Clone, PartialEq)]
pub struct KelfModel {
    /// The kelf file name (from `attrs.kelf`).
    pub kelf_name: String,
    /// `kelf-N.json` `version`.
    pub version: String,
    /// Target gate.
    pub target: KelfTarget,
    /// Inputs in `neff.json` order.
    pub inputs: Vec<IoTensor>,
    /// Outputs in `neff.json` order (LNC duplicates removed).
    pub outputs: Vec<IoTensor>,
    /// One record per subgraph (`graphs[]` order).
    pub subgraphs: Vec<Kbin>,
}

/// What kind of variable (def.json `var.*.type`, docs/neff.md §7.2).
#[derive(Debug, Clone, PartialEq)]
pub enum VarKind {
    /// `state-buffer`: the core's SBUF, addressed as 128 partitions × 256 KiB.
    StateBuffer,
    /// `input`: bound per execution to the caller's tensor of the same name.
    Input,
    /// `output`: bound per execution to the caller's tensor of the same name.
    Output,
    /// `file`: HBM constant loaded from a member (`.npy` parsed, anything else raw).
    File {
        /// The member it came from.
        file_name: String,
        /// The bytes (exactly `size` long), usually a window of the NEFF member's own buffer.
        data: SharedBytes,
    },
    /// `tmp-buf`: private HBM scratch.
    TmpBuf,
    /// `virtual`: a window of the core's shared scratchpad at `backing_offset`.
    Virtual {
        /// Offset in the shared scratchpad.
        backing_offset: u64,
    },
    /// `pointer`: an HBM word holding the address of another var.
    Pointer {
        /// The var whose address it holds.
        referenced_var_id: u32,
    },
    /// `dge-table`: the descriptor-generation table of the subgraph's engine-issued DMAs; entry
    /// `i` names var `list[i]` (docs/neff.md §7.2). Nothing is allocated for it.
    DgeTable {
        /// The var ids, in entry order.
        list: Vec<u32>,
    },
}

impl VarKind {
    /// The def.json `type` of a var of this kind.
    pub fn var_type(&self) -> VarType {
        match self {
            VarKind::StateBuffer => VarType::StateBuffer,
            VarKind::Input => VarType::Input,
            VarKind::Output => VarType::Output,
            VarKind::File { .. } => VarType::File,
            VarKind::TmpBuf => VarType::TmpBuf,
            VarKind::Virtual { .. } => VarType::Virtual,
            VarKind::Pointer { .. } => VarType::Pointer,
            VarKind::DgeTable { .. } => VarType::DgeTable,
        }
    }
}

/// One variable of a subgraph.
#[derive(Debug, Clone, PartialEq)]
pub struct Var {
    /// Its key in def.json `var`.
    pub name: String,
    /// `var_id`.
    pub var_id: u32,
    /// Kind.
    pub kind: VarKind,
    /// Bytes (0 for the state buffer, whose size is the target's).
    pub size: u64,
    /// Alignment (power of two, 0 = default).
    pub alignment: u64,
}

spelled_enum! {
    /// def.json `dma_queue.*.type`.
    pub enum QueueSetKind {
        In = "in", Out = "out", Data = "data", EmbeddingUpdate = "embedding_update",
        Dynamic = "dynamic",
    }
}

/// A queue set (def.json `dma_queue` entry): the runtime maps it to `num_queues` hardware queues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSet {
    /// Name (e.g. `qSPIO0`).
    pub name: String,
    /// Type.
    pub kind: QueueSetKind,
    /// Number of hardware queues (1..=16).
    pub num_queues: u32,
    /// The engine that triggers its DMAs, if stated.
    pub owner: Option<EngineKind>,
    /// `semaphore_set` (or the single `semaphore`).
    pub semaphores: Vec<u32>,
}

spelled_enum! {
    /// The `op` of a DMA descriptor (docs/neff.md §8.2).
    pub enum DmaOp {
        /// The default.
        Copy = "copy",
        /// Element type conversion in flight.
        Cast = "cast",
        Fma = "fma", Add = "add", Min = "min", Max = "max",
        /// Also a desc carrying `transpose_op`.
        Transpose = "transpose",
    }
}

/// One side of a DMA descriptor: a var and an access pattern over it in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DmaSide {
    /// The var id (resolved from the var name).
    pub var_id: u32,
    /// Byte offset into the var.
    pub offset: u64,
    /// Sizes, innermost first: innermost in bytes, outer dims are counts (≤ 4 dims).
    pub sizes: Vec<u64>,
    /// Steps in bytes, innermost first (same length as `sizes`).
    pub steps: Vec<i64>,
    /// Element type (default `uint8`).
    pub dtype: Dtype,
}

impl DmaSide {
    /// Total bytes the pattern covers (product of sizes).
    pub fn total_bytes(&self) -> u64 {
        self.sizes.iter().product()
    }
}

/// The transpose parameters of a transposing descriptor (docs/neff.md §8.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DmaTranspose {
    /// `transpose_op`: a 4-letter axis permutation such as `WZXY`, if given.
    pub op: Option<String>,
    /// `transpose_shape` (4 dims in real files; empty when absent).
    pub shape: Vec<u64>,
    /// `transpose_element_size` in bytes, if given.
    pub element_size: Option<u64>,
}

/// Op-specific parameters of a DMA descriptor, as the engine JSON gives them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DmaParams {
    /// `transpose_op` / `transpose_shape` / `transpose_element_size`.
    pub transpose: Option<DmaTranspose>,
    /// `scale` (fma).
    pub scale: Option<f64>,
    /// `scale_dtype`.
    pub scale_dtype: Option<Dtype>,
    /// `constant` (min/max).
    pub constant: Option<f64>,
    /// `constant_dtype`.
    pub constant_dtype: Option<Dtype>,
    /// `num_tiling_dimensions`.
    pub num_tiling_dimensions: Option<u32>,
}

// The floats come from JSON, which has no NaN, so equality is reflexive.
impl Eq for DmaParams {}

/// One DMA descriptor entry of a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DmaDesc {
    /// Operation.
    pub op: DmaOp,
    /// Source (absent only for CCE ops with `from_arr`, which this platform does not support).
    pub from: DmaSide,
    /// Destination.
    pub to: DmaSide,
}

/// One DMA block of an engine JSON `dma[]` list: the unit a 0xC1 trigger starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DmaBlock {
    /// `id` (per queue set, from 0).
    pub id: u32,
    /// The queue-set name (`instance_name` if given, else `queue`).
    pub queue: String,
    /// Semaphore incremented when the block is done (by `num_queues` if the set has several).
    pub semaphore: Option<u32>,
    /// `event` set when the block is done, if given.
    pub event: Option<u32>,
    /// The descriptors.
    pub descs: Vec<DmaDesc>,
    /// Op-specific parameters of each descriptor (same length and order as `descs`).
    pub desc_params: Vec<DmaParams>,
    /// `#comment` (the compiler's instruction name), if given.
    pub comment: Option<String>,
}

/// One engine's program: its instruction stream and DMA blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineProgram {
    /// Engine.
    pub engine: EngineKind,
    /// Engine JSON member name (e.g. `sg00/PE.json`).
    pub json_member: String,
    /// Instruction binary member name (e.g. `sg00/PE.bin`).
    pub bin_member: String,
    /// The raw 64-byte records (not decoded: real NEFFs carry opcodes this platform does not
    /// execute, which must still load).
    pub records: Vec<Record>,
    /// DMA blocks, in JSON order.
    pub dma_blocks: Vec<DmaBlock>,
}

/// A `runtime_statebuffer_reservation` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SbReservation {
    /// `type` (e.g. `evtaccel`).
    pub kind: String,
    /// First partition.
    pub base_partition: u32,
    /// Partitions.
    pub partitions: u32,
    /// Byte offset in each partition.
    pub offset: u32,
    /// Bytes in each partition.
    pub size: u32,
}

/// One subgraph: the unit staged on one physical core.
#[derive(Debug, Clone, PartialEq)]
pub struct Kbin {
    /// Subgraph name (`sg00`).
    pub name: String,
    /// The def.json member (`sg00/def.json`).
    pub def_member: String,
    /// Variables by var id.
    pub vars: BTreeMap<u32, Var>,
    /// Queue sets by name.
    pub queue_sets: BTreeMap<String, QueueSet>,
    /// Engine programs present, in exec-request order (PE, ACT, POOL, DVE, SP).
    pub engines: Vec<EngineProgram>,
    /// State-buffer reservations.
    pub sb_reservations: Vec<SbReservation>,
    /// `neff_features`.
    pub features: Vec<String>,
    /// `cc_streams.num_streams`.
    pub cc_streams: u32,
    /// `runtime_event_count`.
    pub runtime_event_count: u32,
    /// `runtime_semaphore_count`.
    pub runtime_semaphore_count: u32,
    /// The encoding of the NEFF's engine streams (the same for every subgraph).
    pub encoding: Encoding,
}

impl Kbin {
    /// What the profiler calls this subgraph's semaphores and vars (docs/neuron-isa.md §14):
    /// an engine's own semaphore — one its records update — by the engine's profile name, a
    /// queue set's by the set's profile name ([`profile_queue_name`]); vars by their def.json
    /// names (their device addresses are a load's, not the NEFF's).
    pub fn names(&self) -> Names {
        let mut n = Names::new();
        for v in self.vars.values() {
            if let Ok(id) = u8::try_from(v.var_id) {
                n.name_var(id, v.name.clone(), None);
            }
        }
        for q in self.queue_sets.values() {
            for &s in &q.semaphores {
                n.name_semaphore(s, profile_queue_name(&q.name));
            }
        }
        if self.encoding == Encoding::Neuron {
            for p in &self.engines {
                for r in &p.records {
                    let signal = NeuronInstr::decode(r).ok().and_then(|i| i.sync().signal);
                    if let Some(s) = signal {
                        n.name_semaphore(s.0, profile_engine_name(p.engine));
                    }
                }
            }
        }
        n
    }

    /// The var named `name`.
    pub fn var_by_name(&self, name: &str) -> Option<&Var> {
        self.vars.values().find(|v| v.name == name)
    }

    /// The program of `engine`, if the subgraph has one.
    pub fn engine(&self, engine: EngineKind) -> Option<&EngineProgram> {
        self.engines.iter().find(|e| e.engine == engine)
    }

    /// Scratchpad bytes this subgraph needs: max over `virtual` vars of offset + size.
    pub fn scratchpad_need(&self) -> u64 {
        self.vars
            .values()
            .filter_map(|v| match v.kind {
                VarKind::Virtual { backing_offset } => Some(backing_offset + v.size),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }
}

/// The profiler's name of an engine (`Tensor`, `Scalar`, `GpSimd`, `Vector`, `Sync`).
pub fn profile_engine_name(e: EngineKind) -> &'static str {
    match e {
        EngineKind::Pe => "Tensor",
        EngineKind::Act => "Scalar",
        EngineKind::Pool => "GpSimd",
        EngineKind::Dve => "Vector",
        EngineKind::Sp => "Sync",
    }
}

/// The profiler's name of a queue set: its engine prefix (`SP`, `Act`, `Pool`, `DVE`, `PE`,
/// after the leading `q`) replaced by the engine's profile name (`qSPDynamicHW` →
/// `qSyncDynamicHW`); other names are kept.
pub fn profile_queue_name(name: &str) -> String {
    const PREFIXES: [(&str, EngineKind); 5] = [
        ("SP", EngineKind::Sp),
        ("Act", EngineKind::Act),
        ("Pool", EngineKind::Pool),
        ("DVE", EngineKind::Dve),
        ("PE", EngineKind::Pe),
    ];
    let Some(rest) = name.strip_prefix('q') else {
        return name.to_string();
    };
    for (p, e) in PREFIXES {
        if let Some(tail) = rest.strip_prefix(p) {
            return format!("q{}{tail}", profile_engine_name(e));
        }
    }
    name.to_string()
}

/// The encoding of a NEFF's engine streams, from all of them: the Neuron encoding of real
/// compilers when every record of every stream uses only its opcodes (`0xB1` and `0xC1`
/// included), the platform's own otherwise (docs/neuron-isa.md "telling the encodings apart").
pub fn stream_encoding<'a>(programs: impl IntoIterator<Item = &'a EngineProgram>) -> Encoding {
    if programs.into_iter().all(|p| is_neuron_stream(&p.records)) {
        Encoding::Neuron
    } else {
        Encoding::Platform
    }
}
