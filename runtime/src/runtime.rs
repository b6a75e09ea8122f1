//! The runtime object: init (device and core table), load (S0–S5 orchestration), the model
//! registry with its two id spaces, and unload. It owns the per-core pools models take
//! hardware queues and the shared scratchpad from (`pools`), and `nrt_execute_repeat`
//! (`repeat`). Execution — sync and async, wait, poll, host staging, recovery of a poisoned
//! logical core — is [`crate::exec`]'s: the methods here check the runtime is open, look the
//! model up and hand it over ([`crate::exec::worker::ExecShared`]). The model's types are
//! [`crate::model`]'s.
//!
//! # Load, stage by stage (docs/runtime.md §2)
//!
//! - **S0 guard:** the runtime must be open; the 1024-byte header is preflighted; a logical
//!   core (vcore) is claimed — `vnc = -1` picks the least used, lowest index; a vcore the device
//!   does not have is `NRT_LOAD_NOT_ENOUGH_NC`.
//! - **S1 parse:** through the single-slot TNC cache ([`crate::tnc`]), so concurrent loads of
//!   the same NEFF parse it once; the container is read in memory only ([`crate::neff`]).
//!   A loaded model keeps its slot reference until it is unloaded (the real runtime releases it at the
//!   end of the load; since the model keeps its parse result anyway, holding the reference
//!   costs nothing and makes every load that overlaps a *loaded* model share the parse, which
//!   is what a framework loading one NEFF on many workers wants).
//! - **S2/S3 build:** manifests to KBIN records, no HAL call ([`crate::kbin::build`]); cached
//!   with the parse.
//! - **S4/S5 stage and relocate:** one subgraph per physical core of the vcore
//!   ([`crate::load::stage`]); an LNC model fans out one scoped thread per subgraph — the
//!   per-thread arguments live in the scope, so they outlive every thread — and if any core
//!   fails, every core that succeeded is released (all-or-nothing).
//! - **Register:** `H_MODEL` comes from its own counter before staging; `H_NN` from the
//!   registry's counter under its write lock; the [`LoadedModel`] joins them (the real runtime's
//!   `dlr_kelf_model_t` bridge). State READY.
//!
//! The real runtime's one asymmetric error edge — the public handle allocated after registration, and
//! not rolled back when that allocation fails — cannot occur here: the handle is the `H_NN`
//! itself, produced inside registration, and nothing after registration can fail. We chose
//! this over reproducing the leak.
//!
//! Unload reverses everything: the registry entry, every allocation of every core (in reverse
//! order), the hardware queues, the scratchpad reference and the vcore claim, so the device's
//! memory accounting returns exactly to its value before the load.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use nrt_hal::{Hal, NcIndex, Target};

use crate::config::RuntimeConfig;
use crate::error::{Error, Result};
use crate::exec::run::AsyncSubmit;
use crate::exec::worker::{ExecRequest, ExecShared};
use crate::exec::ExecReport;
use crate::kbin::build::{build_model, BuildOptions};
use crate::load::stage::stage_core;
use crate::model::core_model::CoreModel;
use crate::model::{LoadedModel, ModelExec, ModelId, Parsed};
use crate::neff::{Neff, NeffHeader, ParseOptions};
use crate::status::NrtStatus;
use crate::tensor::{Placement, Tensor, TensorInfo, TensorSet, TensorUsage};
use crate::tnc::{Entry, Lease, TncCache};
use pools::CorePools;

mod pools;
mod repeat;

/// The runtime-ABI version this runtime speaks to a driver of each generation (within the
/// driver's COMPATIBLE_VERSION range, docs/driver.md §10).
pub fn abi_version(target: Target) -> u32 {
    match target {
        Target::Trn1 => 7,
        Target::Trn2 => 11,
    }
}

#[derive(Debug, Default)]
struct Registry {
    models: BTreeMap<u32, Arc<LoadedModel>>,
    last_nn_id: u32,
}

/// The Neuron runtime over one device.
pub struct Runtime {
    hal: Arc<dyn Hal>,
    target: Target,
    cfg: RuntimeConfig,
    closed: AtomicBool,
    vcores: Vec<(Vec<NcIndex>, AtomicU32)>,
    pools: CorePools,
    registry: RwLock<Registry>,
    next_h_model: AtomicU32,
    tnc: TncCache<Parsed>,
    exec: Arc<ExecShared>,
}

/// Dropping the runtime gives the device back as `Runtime::new` found it: the async workers
/// are stopped (each first completes what it was waiting for), every model still loaded is
/// unloaded, each core's execution state (exec and IO rings, request page) is freed, and the
/// cores that had one are reset — the device frees a core's notification queue only on a
/// reset. So the device's memory accounting returns to its value before `Runtime::new`.
impl Drop for Runtime {
    fn drop(&mut self) {
        self.exec.shutdown();
        for id in self.models() {
            let _ = self.unload_model(id);
        }
        self.exec.release_cores();
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("target", &self.target)
            .field("vcores", &self.vcores.len())
            .finish()
    }
}

impl Runtime {
    /// Opens the device: reads its info, checks ABI compatibility and lays out the vcores.
    pub fn new(hal: Arc<dyn Hal>, cfg: RuntimeConfig) -> Result<Runtime> {
        let info = hal.device_info()?;
        let target = info.target;
        let ours = abi_version(target);
        let (min, max) = info.abi_version_range;
        if ours < min || ours > max {
            return Err(Error::failure(format!(
                "driver accepts runtime ABI {min}..={max}, this runtime speaks {ours}"
            )));
        }
        let size = cfg.vcore_size_for(target).max(1);
        let vcores = (0..info.nc_count / size)
            .map(|v| {
                let tpbs = (0..size).map(|i| NcIndex(v * size + i)).collect();
                (tpbs, AtomicU32::new(0))
            })
            .collect();
        let nv = info.nc_count / size;
        let exec = Arc::new(ExecShared::new(
            hal.clone(),
            target,
            cfg.clone(),
            info.nc_count,
            nv,
        ));
        Ok(Runtime {
            exec,
            pools: CorePools::new(hal.clone(), target, info.nc_count, cfg.scratchpad_page_size),
            hal,
            target,
            cfg,
            closed: AtomicBool::new(false),
            vcores,
            registry: RwLock::new(Registry::default()),
            next_h_model: AtomicU32::new(1),
            tnc: TncCache::new(),
        })
    }

    /// The device interface.
    pub fn hal(&self) -> &Arc<dyn Hal> {
        &self.hal
    }

    /// The generation.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The configuration.
    pub fn config(&self) -> &RuntimeConfig {
        &self.cfg
    }

    /// Number of logical cores.
    pub fn vcore_count(&self) -> u32 {
        self.vcores.len() as u32
    }

    /// Physical cores per logical core.
    pub fn vcore_size(&self) -> u32 {
        self.vcores.first().map_or(1, |v| v.0.len() as u32)
    }

    /// Model `id`'s last execution, with `inputs` and `outputs` bound, in neuron-profile's
    /// schema ([`crate::profile`], docs/profile.md §5). It needs a backend that traces, with
    /// tracing on ([`nrt_hal::profile::Profiler::set_tracing`]) before the execution began;
    /// `base` holds the summary keys only the caller knows (versions, instance type).
    pub fn execution_profile(
        &self,
        id: ModelId,
        inputs: &crate::tensor::TensorSet,
        outputs: &crate::tensor::TensorSet,
        base: nrt_profile::Summary,
    ) -> Result<nrt_profile::Profile> {
        let io = inputs
            .iter()
            .chain(outputs.iter())
            .filter_map(|(n, t)| t.device_addr().map(|a| (n.to_string(), a)))
            .collect();
        self.execution_profile_of(id, &io, base)
    }

    /// [`Runtime::execution_profile`] given the device address each input and output tensor
    /// had, by name.
    pub fn execution_profile_of(
        &self,
        id: ModelId,
        io: &std::collections::BTreeMap<String, nrt_hal::DeviceAddr>,
        base: nrt_profile::Summary,
    ) -> Result<nrt_profile::Profile> {
        let model = self.model(id)?;
        let p = self.hal.profiler().ok_or_else(|| {
            Error::invalid("this backend records no instruction trace (the simulator does)")
        })?;
        let traces = model
            .tpbs
            .iter()
            .map(|nc| p.exec_trace(*nc).unwrap_or_default())
            .collect::<Vec<_>>();
        crate::profile::build(&crate::profile::ExecutionRecord {
            model: &model,
            traces: &traces,
            io,
            target: self.target,
            base,
        })
    }

    /// How many times the TNC cache has parsed a NEFF (creator roles taken).
    pub fn parse_count(&self) -> u64 {
        self.tnc.creations()
    }

    /// Marks the runtime closed: later calls get `NRT_CLOSED`; async workers stop.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.exec.shutdown();
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::SeqCst) {
            Err(Error::new(NrtStatus::Closed, "the runtime is closed"))
        } else {
            Ok(())
        }
    }

    /// The model with handle `id`.
    pub fn model(&self, id: ModelId) -> Result<Arc<LoadedModel>> {
        self.registry
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .models
            .get(&id.0)
            .cloned()
            .ok_or_else(|| {
                Error::new(
                    NrtStatus::InvalidHandle,
                    format!("no model with handle {}", id.0),
                )
            })
    }

    /// Handles of every loaded model, ascending.
    pub fn models(&self) -> Vec<ModelId> {
        self.registry
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .models
            .keys()
            .map(|k| ModelId(*k))
            .collect()
    }

    /// Loads a NEFF onto logical core `vnc` (`-1`: the runtime picks) — S0 to S5.
    pub fn load(&self, neff: &[u8], vnc: i32) -> Result<ModelId> {
        self.load_within(neff, vnc, 0..self.vcore_count())
    }

    /// [`Runtime::load`] restricted to the logical cores in `allowed` (a process's visible
    /// cores): `vnc = -1` picks the least used, lowest core of the range; an explicit `vnc`
    /// outside it is `NRT_LOAD_NOT_ENOUGH_NC`.
    pub fn load_within(
        &self,
        neff: &[u8],
        vnc: i32,
        allowed: std::ops::Range<u32>,
    ) -> Result<ModelId> {
        // ---- S0 ----
        self.check_open()?;
        let header = NeffHeader::parse(neff)?;
        header.validate()?;
        let v = self.claim_vcore(vnc, allowed)?;
        let result = self
            .exec
            .recover(v, &self.vcores[v as usize].0)
            .and_then(|()| {
                let r = self.load_on(neff, &header, v);
                if r.is_err() {
                    self.exec.leave(v);
                }
                r
            });
        if result.is_err() {
            self.vcores[v as usize].1.fetch_sub(1, Ordering::SeqCst);
        }
        result
    }

    fn claim_vcore(&self, vnc: i32, allowed: std::ops::Range<u32>) -> Result<u32> {
        let n = self.vcores.len() as u32;
        let allowed = allowed.start.min(n)..allowed.end.min(n);
        let v = if vnc < 0 {
            allowed
                .clone()
                .min_by_key(|&i| (self.vcores[i as usize].1.load(Ordering::SeqCst), i))
                .ok_or_else(|| {
                    Error::new(NrtStatus::LoadNotEnoughNc, "the device has no NeuronCores")
                })?
        } else {
            vnc as u32
        };
        if !allowed.contains(&v) {
            return Err(Error::new(
                NrtStatus::LoadNotEnoughNc,
                format!(
                    "logical NeuronCore {v} requested, {} available",
                    allowed.len()
                ),
            ));
        }
        self.vcores[v as usize].1.fetch_add(1, Ordering::SeqCst);
        Ok(v)
    }

    /// S1–S3 through the TNC cache. The returned lease (if any) keeps the cache slot referenced
    /// until the load finishes, as the real runtime's loader holds it until registration, so loads that
    /// overlap any part of this one share its parse.
    fn parse(&self, neff: &[u8]) -> Result<(Arc<Parsed>, Option<Lease<'_, Parsed>>)> {
        let opts = ParseOptions {
            verify_hash: self.cfg.validate_hash,
            limits: self.cfg.neff_limits,
        };
        let build = || -> Result<Parsed> {
            let neff = Neff::parse(neff, &opts)?;
            let model = build_model(
                &neff,
                (
                    neff.header.neff_version_major,
                    neff.header.neff_version_minor,
                ),
                neff.header.lnc_size,
                &BuildOptions {
                    target: self.target,
                    available_cores: self.vcore_size(),
                    allow_legacy_neff: self.cfg.allow_legacy_neff,
                    any_generation: false,
                },
            )?;
            Ok(Parsed { neff, model })
        };
        let uuid = NeffHeader::parse(neff)?.uuid;
        match self.tnc.enter(uuid) {
            Entry::Creator(guard) => {
                let lease = guard.complete(build().map(Arc::new))?;
                Ok((Arc::clone(lease.value()), Some(lease)))
            }
            Entry::Reuse(lease) => Ok((Arc::clone(lease.value()), Some(lease))),
            Entry::Independent(_) => Ok((Arc::new(build()?), None)),
        }
    }

    fn load_on(&self, bytes: &[u8], header: &NeffHeader, v: u32) -> Result<ModelId> {
        // ---- S1..S3 ----
        let (parsed, tnc_lease) = self.parse(bytes)?;
        let tpbs = self.vcores[v as usize].0.clone();
        let n = parsed.model.subgraphs.len();
        if n > tpbs.len() {
            return Err(Error::invalid(format!(
                "Insufficient number of NeuronCores, required {n}, available {}",
                tpbs.len()
            )));
        }
        // ---- S4/S5 ----
        // Handles never wrap: a wrapped counter would hand out the handle of a live model.
        let h_model = self
            .next_h_model
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |h| h.checked_add(1))
            .map_err(|_| handles_exhausted("H_MODEL"))?;
        let cores = self.stage_all(&parsed, &tpbs[..n])?;
        // ---- register ----
        let mut reg = self.registry.write().unwrap_or_else(|p| p.into_inner());
        let id = reg.last_nn_id;
        let Some(next) = id.checked_add(1) else {
            drop(reg);
            for c in cores {
                c.release(&*self.hal, &self.pools);
            }
            return Err(handles_exhausted("H_NN"));
        };
        reg.last_nn_id = next;
        let model = Arc::new(LoadedModel {
            id: ModelId(id),
            h_model,
            name: header.name.clone(),
            uuid: header.uuid,
            vnc: v,
            tpbs: tpbs[..n].to_vec(),
            exec: ModelExec::new(&parsed, &cores),
            parsed,
            cores: Mutex::new(Some(cores)),
            tnc_ref: Mutex::new(tnc_lease.map(Lease::keep)),
        });
        reg.models.insert(id, model);
        tracing::info!(target: "nrt", "Loaded NN \"{}\" ID: {id}", header.name);
        Ok(ModelId(id))
    }

    fn stage_all(&self, parsed: &Parsed, tpbs: &[NcIndex]) -> Result<Vec<CoreModel>> {
        let subgraphs = &parsed.model.subgraphs;
        let hal = &*self.hal;
        let results: Vec<Result<CoreModel>> = if subgraphs.len() == 1 {
            vec![stage_core(
                hal,
                &self.pools,
                self.target,
                tpbs[0],
                &subgraphs[0],
            )]
        } else {
            // One thread per subgraph; `args` outlives every thread (the scope joins them).
            let args: Vec<(NcIndex, &crate::kbin::Kbin)> =
                tpbs.iter().copied().zip(subgraphs.iter()).collect();
            std::thread::scope(|s| {
                let handles: Vec<_> = args
                    .iter()
                    .map(|&(nc, kbin)| {
                        s.spawn(move || stage_core(hal, &self.pools, self.target, nc, kbin))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|_| Err(Error::failure("a staging thread panicked")))
                    })
                    .collect()
            })
        };
        let mut ok = Vec::new();
        let mut first_err = None;
        for r in results {
            match r {
                Ok(c) => ok.push(c),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_err {
            for c in ok {
                c.release(hal, &self.pools);
            }
            return Err(e);
        }
        Ok(ok)
    }

    /// Unloads a model: everything its load allocated is freed.
    pub fn unload(&self, id: ModelId) -> Result<()> {
        self.check_open()?;
        self.unload_model(id)
    }

    fn unload_model(&self, id: ModelId) -> Result<()> {
        let model = {
            let mut reg = self.registry.write().unwrap_or_else(|p| p.into_inner());
            reg.models.remove(&id.0).ok_or_else(|| {
                Error::new(
                    NrtStatus::InvalidHandle,
                    format!("no model with handle {}", id.0),
                )
            })?
        };
        if let Some(kept) = model
            .tnc_ref
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            self.tnc.release_kept(kept);
        }
        let cores = model.cores.lock().unwrap_or_else(|p| p.into_inner()).take();
        // Executions already submitted still run on the device and use the model's memory
        // (instructions, rings, weights): wait until each has been completed by its waiter or
        // async worker (always within NEURON_RT_EXEC_TIMEOUT per core) before freeing anything.
        // No new one can start: submits find `cores` empty (issue #8: unload used to free
        // the memory under running executions).
        while model.exec.in_flight.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        for c in cores.into_iter().flatten() {
            c.release(&*self.hal, &self.pools);
        }
        // The dynamic rings built for this model's executions (issue #8: they were never freed,
        // so every unload of an executed model leaked device memory).
        for cache in model
            .exec
            .caches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter_mut()
            .flatten()
        {
            cache.release(&*self.hal);
        }
        self.exec.leave(model.vnc);
        self.vcores[model.vnc as usize]
            .1
            .fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
}

/// `NRT_RESOURCE` for a spent 32-bit handle counter (after 2^32 - 1 loads of one runtime).
fn handles_exhausted(which: &str) -> Error {
    Error::resource(format!(
        "the {which} model handle space is exhausted ({} loads); open a new runtime",
        u32::MAX
    ))
}

impl Runtime {
    /// `nrt_tensor_allocate`: a zero-filled tensor for logical core `vnc`.
    pub fn tensor_allocate(
        &self,
        placement: Placement,
        vnc: u32,
        size: u64,
        name: &str,
    ) -> Result<Tensor> {
        self.check_open()?;
        let nc = self
            .vcores
            .get(vnc as usize)
            .map(|v| v.0[0])
            .ok_or_else(|| Error::invalid(format!("logical NeuronCore {vnc} does not exist")))?;
        Tensor::allocate(&self.hal, placement, vnc, nc, size, name)
    }

    /// The physical cores of logical core `vnc`.
    pub fn vcore_cores(&self, vnc: u32) -> Result<&[NcIndex]> {
        self.vcores
            .get(vnc as usize)
            .map(|v| v.0.as_slice())
            .ok_or_else(|| Error::invalid(format!("logical NeuronCore {vnc} does not exist")))
    }

    /// `nrt_get_vnc_memory_stats`: device bytes in use on logical core `vnc`'s cores (the
    /// device's own accounting: models, tensors, execution state) and the size of the HBM
    /// channels those cores allocate from.
    pub fn vcore_memory(&self, vnc: u32) -> Result<(u64, u64)> {
        let cores = self.vcore_cores(vnc)?;
        let mut used = 0u64;
        let mut channels = BTreeSet::new();
        for &nc in cores {
            used += self.hal.memory_usage(nc)?.device_bytes();
            channels.insert(self.target.hbm_channel_of(nc));
        }
        let hbm = self.target.spec().hbm;
        let limit = channels
            .iter()
            .filter_map(|&c| hbm.get(c as usize))
            .map(|c| c.size)
            .sum();
        Ok((used, limit))
    }

    /// `nrt_get_model_tensor_info`: the model's inputs then outputs.
    pub fn model_tensor_info(&self, id: ModelId) -> Result<Vec<TensorInfo>> {
        self.check_open()?;
        let m = self.model(id)?;
        let k = &m.parsed.model;
        let info = |t: &crate::kbin::IoTensor, usage| TensorInfo {
            name: t.name.clone(),
            usage,
            size: t.size,
            dtype: t.dtype,
            shape: t.shape.clone(),
        };
        Ok(k.inputs
            .iter()
            .map(|t| info(t, TensorUsage::Input))
            .chain(k.outputs.iter().map(|t| info(t, TensorUsage::Output)))
            .collect())
    }

    /// `nrt_execute`. In sync mode (the default) host and virtual tensors are cloned to the
    /// device and results copied back; in async mode (`NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS`
    /// > 0) this submits and waits ([`ExecShared::execute`]).
    pub fn execute(
        &self,
        id: ModelId,
        inputs: &TensorSet,
        outputs: &TensorSet,
    ) -> Result<ExecReport> {
        self.check_open()?;
        let model = self.model(id)?;
        self.exec.execute(&model, inputs, outputs)
    }

    /// Submits an execution and returns at once (async mode; device tensors only). Waits for
    /// an in-flight slot when the limit is reached. Allocates nothing once warm, so it does not
    /// count the completion on the output tensors (see [`Runtime::execute_async_counted`]).
    pub fn execute_async(
        &self,
        id: ModelId,
        inputs: &TensorSet,
        outputs: &TensorSet,
    ) -> Result<ExecRequest> {
        self.submit_async(id, inputs, outputs, AsyncSubmit::WAIT)
    }

    /// [`Runtime::execute_async`] that also counts the completion on every output tensor
    /// ([`Tensor::completions`]; it keeps a copy of the output set until then).
    pub fn execute_async_counted(
        &self,
        id: ModelId,
        inputs: &TensorSet,
        outputs: &TensorSet,
    ) -> Result<ExecRequest> {
        self.submit_async(id, inputs, outputs, AsyncSubmit::WAIT_COUNTED)
    }

    /// [`Runtime::execute_async_counted`] that never waits, as the explicit async API
    /// (`nrta_execute_schedule`) requires: the execution unit's funnel answers
    /// `NRT_EXEC_UNIT_UNRECOVERABLE` once the unit is poisoned and `NRT_QUEUE_FULL` while it
    /// holds its capacity of unfinished executions (`NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS`
    /// when set, else [`crate::exec::REQ_SLOTS`]), docs/runtime.md §4.2.
    pub fn try_execute_async_counted(
        &self,
        id: ModelId,
        inputs: &TensorSet,
        outputs: &TensorSet,
    ) -> Result<ExecRequest> {
        self.submit_async(id, inputs, outputs, AsyncSubmit::TRY_COUNTED)
    }

    fn submit_async(
        &self,
        id: ModelId,
        inputs: &TensorSet,
        outputs: &TensorSet,
        how: AsyncSubmit,
    ) -> Result<ExecRequest> {
        self.check_open()?;
        let model = self.model(id)?;
        self.exec.submit_async(&model, inputs, outputs, how)
    }

    /// Waits for an async request.
    pub fn wait(&self, req: ExecRequest, timeout: std::time::Duration) -> Result<ExecReport> {
        self.exec.wait(req, timeout)
    }

    /// An async request's result if it is complete.
    pub fn poll(&self, req: ExecRequest) -> Option<Result<ExecReport>> {
        self.exec.poll(req)
    }

    /// Whether logical core `vnc`'s execution unit is poisoned (every submit answers 101).
    pub fn is_poisoned(&self, vnc: u32) -> bool {
        self.exec.is_poisoned(vnc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrt_sim::{Sim, SimConfig};

    fn add_neff() -> Vec<u8> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fixtures/neffs/add.trn1.neff"
        );
        std::fs::read(path).expect("the committed add fixture")
    }

    fn usage(sim: &Sim) -> Vec<nrt_hal::hal::CoreMemUsage> {
        (0..Target::Trn1.spec().nc_count)
            .map(|n| sim.memory_usage(NcIndex(n)).unwrap())
            .collect()
    }

    #[test]
    fn a_spent_model_handle_space_is_nrt_resource_not_a_wrap() {
        let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
        let rt = Runtime::new(sim.clone() as Arc<dyn Hal>, RuntimeConfig::default()).unwrap();
        let neff = add_neff();
        let first = rt.load(&neff, 0).unwrap();
        assert_eq!(first, ModelId(0));
        // Fast-forward the H_NN counter to its last value.
        rt.registry.write().unwrap().last_nn_id = u32::MAX - 1;
        let last = rt.load(&neff, 0).unwrap();
        assert_eq!(last, ModelId(u32::MAX - 1));
        let before = usage(&sim);
        let e = rt.load(&neff, 0).unwrap_err();
        assert_eq!(e.status, NrtStatus::Resource, "{e}");
        assert!(e.message.contains("exhausted"), "{e}");
        // Rolled back, and the live models keep their handles.
        assert_eq!(usage(&sim), before);
        assert_eq!(rt.models(), vec![first, last]);
        assert_eq!(rt.vcores[0].1.load(Ordering::SeqCst), 2);
        rt.unload(first).unwrap();
        rt.unload(last).unwrap();

        // The same for the H_MODEL counter, which is taken before staging.
        rt.next_h_model.store(u32::MAX, Ordering::SeqCst);
        let e = rt.load(&neff, 0).unwrap_err();
        assert_eq!(e.status, NrtStatus::Resource, "{e}");
        assert!(e.message.contains("H_MODEL"), "{e}");
        assert!(rt.models().is_empty());
    }
}
