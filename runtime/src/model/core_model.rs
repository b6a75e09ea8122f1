//! The per-core model record ([`CoreModel`], one per subgraph, docs/runtime.md §2.6): what
//! staging a subgraph on one physical core made — its allocations, the addresses of its vars,
//! its IO vars, its instruction blocks and their patch records, its hardware queues and its
//! submit template — and the freeing of exactly that ([`CoreModel::release`]) back to the
//! device and to the runtime's pools ([`CoreResources`]).

use std::collections::BTreeMap;

use nrt_hal::{DeviceAddr, EngineKind, Hal, MemHandle, NcIndex};

use super::dge::DgeSlots;
use super::patch::PatchTable;
use super::queue::HwQueue;
use super::template::SubmitTemplate;
use crate::error::Result;

/// An IO var of the model on this core: the `io_mr_to_name_map` entry (docs/runtime.md §3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoVar {
    /// The tensor name that binds it.
    pub name: String,
    /// Whether it is an input (else an output).
    pub is_input: bool,
    /// Its size in bytes.
    pub size: u64,
}

/// The per-core model record (one per subgraph).
#[derive(Debug)]
pub struct CoreModel {
    /// The physical core.
    pub nc: NcIndex,
    /// Every allocation made for this record, in allocation order (freed in reverse).
    pub allocations: Vec<MemHandle>,
    /// Physical addresses of the model's own (non-IO) vars.
    pub var_pa: BTreeMap<u32, DeviceAddr>,
    /// The IO vars by var id.
    pub io_vars: BTreeMap<u32, IoVar>,
    /// Instruction-block address of each engine (exec-request order), `None` if absent.
    pub engine_addr: [Option<DeviceAddr>; 5],
    /// Translated instruction count of each engine.
    pub engine_len: [u32; 5],
    /// Patch records of each engine's stream.
    pub patches: [PatchTable; 5],
    /// The model's hardware queues.
    pub queues: Vec<HwQueue>,
    /// The device word holding 1 that semaphore-increment pairs copy.
    pub one_word: DeviceAddr,
    /// Triggers whose block uses a DMA op this platform cannot move: (engine, NEFF instruction
    /// index, description), for error reports.
    pub unsupported_triggers: Vec<(EngineKind, u32, String)>,
    /// Bytes of shared scratchpad this record relies on.
    pub scratchpad_need: u64,
    /// What every execution of the model stages on this core the same way (the IO-queue pair
    /// destinations, the request variants), computed once when staged.
    pub submit: SubmitTemplate,
    /// The var slots of the engine-issued DMAs, when the streams issue any.
    pub dge: Option<DgeSlots>,
}

/// Services a per-core model takes from the runtime and gives back: hardware queues and the
/// shared scratchpad.
pub trait CoreResources {
    /// Takes `n` free hardware queues of `nc` (lowest first), or fails with `NRT_RESOURCE`.
    fn take_queues(&self, nc: NcIndex, n: usize) -> Result<Vec<(u32, u32)>>;
    /// Returns queues to the pool.
    fn return_queues(&self, nc: NcIndex, queues: &[(u32, u32)]);
    /// The shared scratchpad of `nc`, at least `need` bytes, referenced once more.
    fn acquire_scratchpad(&self, nc: NcIndex, need: u64) -> Result<DeviceAddr>;
    /// Drops one reference to the scratchpad of `nc`.
    fn release_scratchpad(&self, nc: NcIndex);
}

impl CoreModel {
    /// An empty record of core `nc`, which staging fills in.
    pub fn empty(nc: NcIndex) -> CoreModel {
        CoreModel {
            nc,
            allocations: Vec::new(),
            var_pa: BTreeMap::new(),
            io_vars: BTreeMap::new(),
            engine_addr: [None; 5],
            engine_len: [0; 5],
            patches: Default::default(),
            queues: Vec::new(),
            one_word: DeviceAddr::ZERO,
            unsupported_triggers: Vec::new(),
            scratchpad_need: 0,
            submit: SubmitTemplate::default(),
            dge: None,
        }
    }

    /// Frees everything the record holds (unload).
    pub fn release(self, hal: &dyn Hal, res: &dyn CoreResources) {
        let queues: Vec<(u32, u32)> = self
            .queues
            .iter()
            .map(|q| (q.queue.engine.0, q.queue.queue.0))
            .collect();
        let scratchpad = self.scratchpad_need > 0;
        self.release_with(hal, res, &queues, scratchpad);
    }

    /// Frees every allocation (in reverse order), returns `queues` to the pool and, if
    /// `scratchpad`, drops the record's scratchpad reference: [`CoreModel::release`], and the
    /// error edge of a staging that had taken `queues` and the scratchpad so far.
    pub fn release_with(
        self,
        hal: &dyn Hal,
        res: &dyn CoreResources,
        queues: &[(u32, u32)],
        scratchpad: bool,
    ) {
        for h in self.allocations.iter().rev() {
            let _ = hal.mem_free(*h);
        }
        res.return_queues(self.nc, queues);
        if scratchpad {
            res.release_scratchpad(self.nc);
        }
    }
}
