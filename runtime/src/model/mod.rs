//! A loaded model: the types the load pipeline produces and the execute path reads. This module
//! sits below both (`crate::load` and `crate::exec` import it, it imports neither), so a loaded
//! model's shape is written down once:
//!
//! | item | owns | made by | read by |
//! |---|---|---|---|
//! | [`LoadedModel`], [`ModelId`] | the registry value: handles, logical and physical cores, the parse result, the per-core records, per-model execution state ([`ModelExec`]) | `crate::runtime` (S5 registration) | `crate::exec`, the API |
//! | [`Parsed`] | a parsed and built NEFF (container and KBIN records), shared through the TNC cache | `crate::runtime` (S1–S3) | everyone |
//! | [`core_model`] | the per-core model record [`CoreModel`] with its IO vars, and the resources it returns at unload ([`CoreResources`]) | `crate::load::stage` (S4) | `crate::exec` |
//! | [`queue`] | a model's hardware queues ([`HwQueue`]), their ring writing and IO vars | `crate::load::stage` | `crate::exec::dynring` |
//! | [`pair`] | the relocatable copy pair a queue holds ([`PairTemplate`]) | `crate::load::dma` | `queue` |
//! | [`patch`] | the patch records of the translated streams ([`PatchTable`]) | `crate::load::translate` (S5) | error reports |
//! | [`template`] | the submit template of a model on a core ([`SubmitTemplate`]) | `crate::load::stage` | `crate::exec` (stage) |
//! | [`dge`] | the var slots engine-issued DMAs address ([`DgeSlots`](dge::DgeSlots)) | `crate::load::stage` | `crate::load::translate`, `crate::exec` (stage) |
//! | [`ring_cache`] | the dynamic-ring cache of a dynamic queue and its eviction policy | `crate::exec::dynring` | `crate::exec` |
//!
//! docs/runtime.md §2.6–§2.7 describe what staging puts into these records, docs/runtime.md §3.2 how an
//! execution binds them.
//!
//! [`CoreModel`]: core_model::CoreModel
//! [`CoreResources`]: core_model::CoreResources
//! [`HwQueue`]: queue::HwQueue
//! [`PairTemplate`]: pair::PairTemplate
//! [`PatchTable`]: patch::PatchTable
//! [`SubmitTemplate`]: template::SubmitTemplate

pub mod core_model;
pub mod dge;
pub mod pair;
pub mod patch;
pub mod queue;
pub mod ring_cache;
pub mod template;

use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};

use nrt_hal::NcIndex;
use sha2::{Digest, Sha256};

use crate::kbin::{IoTensor, KelfModel};
use crate::neff::Neff;
use crate::tnc::KeptRef;
use core_model::CoreModel;
use ring_cache::Cache;

/// A parsed and built NEFF, shared by concurrent loads through the TNC cache.
#[derive(Debug)]
pub struct Parsed {
    /// The container.
    pub neff: Neff,
    /// The KBIN records.
    pub model: KelfModel,
}

/// A model handle (`H_NN`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ModelId(pub u32);

/// A loaded model: the registry value.
#[derive(Debug)]
pub struct LoadedModel {
    /// `H_NN`: the registry key and public handle.
    pub id: ModelId,
    /// `H_MODEL`: the device-side key shared by the per-core records.
    pub h_model: u32,
    /// The NEFF name (header).
    pub name: String,
    /// The NEFF UUID.
    pub uuid: [u8; 16],
    /// The logical core it is loaded on.
    pub vnc: u32,
    /// The physical cores, subgraph i on `cores[i]`.
    pub tpbs: Vec<NcIndex>,
    /// The parse result (IO signature, KBIN records).
    pub parsed: Arc<Parsed>,
    /// The per-core records (taken out at unload).
    pub cores: Mutex<Option<Vec<CoreModel>>>,
    /// The TNC slot reference this model keeps while loaded.
    pub(crate) tnc_ref: Mutex<Option<KeptRef>>,
    /// Execution state of the model.
    pub exec: ModelExec,
}

/// Per-model execution state.
#[derive(Debug)]
pub struct ModelExec {
    /// Per core, per dynamic queue: the PA-keyed ring cache.
    pub caches: Mutex<Vec<Vec<Cache>>>,
    /// Per core: the (sequencer configuration, activation/DVE table) digests the skip-config
    /// optimisation compares.
    pub config: Vec<([u8; 32], [u8; 32])>,
    /// Executions submitted and not yet completed.
    pub in_flight: AtomicU32,
    /// Whether the model's input names, and its output names, are pairwise distinct (checked
    /// once here, so a set's check is linear: see [`crate::tensor::check_set`]).
    pub distinct_names: (bool, bool),
}

impl ModelExec {
    /// The execution state of a model parsed as `parsed` and staged as `cores`: an empty ring
    /// cache per dynamic queue, and the configuration digests of each subgraph.
    pub fn new(parsed: &Parsed, cores: &[CoreModel]) -> Self {
        let distinct = |ts: &[IoTensor]| {
            let mut names: Vec<&str> = ts.iter().map(|t| t.name.as_str()).collect();
            names.sort_unstable();
            names.windows(2).all(|w| w[0] != w[1])
        };
        let m = &parsed.model;
        let distinct_names = (distinct(&m.inputs), distinct(&m.outputs));
        let caches = cores
            .iter()
            .map(|c| {
                c.queues
                    .iter()
                    .filter(|q| q.dynamic)
                    .map(|_| Cache::new())
                    .collect()
            })
            .collect();
        let config = parsed
            .model
            .subgraphs
            .iter()
            .map(|k| {
                // Sequencer configuration: which engines run and how many queues they use.
                let mut f = Sha256::new();
                for e in &k.engines {
                    f.update([e.engine as u8]);
                    f.update((e.dma_blocks.len() as u64).to_le_bytes());
                }
                f.update((k.queue_sets.len() as u64).to_le_bytes());
                // Activation and DVE tables: every table member of the subgraph directory.
                let mut t = Sha256::new();
                let dir = crate::manifest::member_dir(&k.def_member);
                for (name, bytes) in parsed.neff.members() {
                    let in_dir = name.starts_with(dir) && !dir.is_empty();
                    let table = name.ends_with("_table.bin")
                        || name.ends_with("_bkt.bin")
                        || name.ends_with("_ctrl.bin")
                        || name.ends_with("act_info.json");
                    if in_dir && table {
                        t.update(name.as_bytes());
                        t.update(bytes);
                    }
                }
                (f.finalize().into(), t.finalize().into())
            })
            .collect();
        ModelExec {
            caches: Mutex::new(caches),
            config,
            in_flight: AtomicU32::new(0),
            distinct_names,
        }
    }
}
