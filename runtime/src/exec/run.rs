//! The execute path's entry points, which the runtime calls with the model it looked up
//! (docs/runtime.md §3–§5): a sync execution with its host and virtual tensors staged to the
//! device and back ([`ExecShared::execute`]), an async submit with or without backpressure
//! ([`ExecShared::submit_async`]), the state of a logical core's execution unit
//! ([`ExecShared::is_poisoned`]), and recovery: resetting a poisoned logical core before the
//! next load of it ([`ExecShared::recover`]) and every core the runtime ran when it is dropped
//! ([`ExecShared::release_cores`]). Waiting for and polling an async request are
//! [`ExecShared::wait`] and [`ExecShared::poll`].

use std::sync::Arc;

use nrt_hal::NcIndex;

use super::validate_sets;
use super::worker::{ExecRequest, ExecShared};
use super::ExecReport;
use crate::error::{Error, Result};
use crate::model::LoadedModel;
use crate::status::NrtStatus;
use crate::tensor::{Placement, Tensor, TensorSet};

/// A set's device stand-in (`None`: the set itself is on the device) and the (host, device
/// clone) pairs to copy back.
type DeviceClones = (Option<TensorSet>, Vec<(Tensor, Tensor)>);

/// How an async submit behaves: whether it counts the completion on the output tensors, and
/// whether it waits for an in-flight slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AsyncSubmit {
    /// Count the completion on every output tensor ([`Tensor::completions`]; a copy of the
    /// output set is kept until then).
    pub count: bool,
    /// Wait for an in-flight slot when the limit is reached; else answer `NRT_QUEUE_FULL`.
    pub wait: bool,
}

impl AsyncSubmit {
    /// Waits for a slot; counts nothing (allocates nothing once warm).
    pub const WAIT: AsyncSubmit = AsyncSubmit {
        count: false,
        wait: true,
    };
    /// Waits for a slot; counts the completion on the outputs.
    pub const WAIT_COUNTED: AsyncSubmit = AsyncSubmit {
        count: true,
        wait: true,
    };
    /// Never waits (`NRT_QUEUE_FULL` instead); counts the completion on the outputs.
    pub const TRY_COUNTED: AsyncSubmit = AsyncSubmit {
        count: true,
        wait: false,
    };
}

impl ExecShared {
    /// `nrt_execute` of `model`. In sync mode (the default) host and virtual tensors are cloned
    /// to the device and results copied back; in async mode
    /// (`NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS` > 0) this submits and waits.
    pub fn execute(
        self: &Arc<Self>,
        model: &Arc<LoadedModel>,
        inputs: &TensorSet,
        outputs: &TensorSet,
    ) -> Result<ExecReport> {
        if self.cfg.async_max_inflight > 0 {
            let req = self.submit_async(model, inputs, outputs, AsyncSubmit::WAIT_COUNTED)?;
            return self.wait(
                req,
                self.cfg
                    .exec_timeout
                    .saturating_mul(self.cfg.async_max_inflight + 1),
            );
        }
        validate_sets(model, inputs, outputs)?;
        let (din, back_in) = self.to_device(model, inputs)?;
        let (dout, back) = self.to_device(model, outputs)?;
        let _ = back_in;
        let (din, dout) = (
            din.as_ref().unwrap_or(inputs),
            dout.as_ref().unwrap_or(outputs),
        );
        let ticket = loop {
            match self.submit(model, din, dout) {
                Err(e) if e.status == NrtStatus::QueueFull => self.wait_for_slot(model.vnc)?,
                r => break r?,
            }
        };
        let report = self.complete(model, &ticket);
        if report.is_ok()
            || report
                .as_ref()
                .is_err_and(|e| e.status == NrtStatus::ExecCompletedWithNumErr)
        {
            for (host, dev) in &back {
                Tensor::copy_out(dev, host)?;
            }
            for (_, t) in outputs.iter() {
                t.completed_as_output();
            }
        }
        report
    }

    /// Device clones of a set's host and virtual tensors (sync mode only): `None` (and no
    /// clone, so no allocation) when every tensor of the set is already on the device.
    fn to_device(&self, model: &LoadedModel, set: &TensorSet) -> Result<DeviceClones> {
        if set.iter().all(|(_, t)| t.placement() == Placement::Device) {
            return Ok((None, Vec::new()));
        }
        let mut out = TensorSet::new();
        let mut cloned = Vec::new();
        for (name, t) in set.iter() {
            if t.placement() == Placement::Device {
                out.add(name, t.clone());
                continue;
            }
            let d = Tensor::allocate(
                &self.hal,
                Placement::Device,
                model.vnc,
                model.tpbs[0],
                t.size(),
                name,
            )?;
            d.write(0, &t.to_vec()?)?;
            out.add(name, d.clone());
            cloned.push((t.clone(), d));
        }
        Ok((Some(out), cloned))
    }

    /// Submits an execution of `model` and returns at once (async mode; device tensors only),
    /// its completion counted on the outputs and its wait for an in-flight slot as `how` says.
    /// Allocates nothing once warm unless it counts.
    pub fn submit_async(
        self: &Arc<Self>,
        model: &Arc<LoadedModel>,
        inputs: &TensorSet,
        outputs: &TensorSet,
        how: AsyncSubmit,
    ) -> Result<ExecRequest> {
        validate_sets(model, inputs, outputs)?;
        for (_, t) in inputs.iter().chain(outputs.iter()) {
            if t.placement() != Placement::Device {
                return Err(Error::invalid(
                    "Async exec mode only supports device allocated tensors",
                ));
            }
        }
        // Another thread may take the slot backpressure saw free (the check and the submit are
        // not one step): a full ring then means wait again, not fail (issue #8).
        let ticket = if how.wait {
            loop {
                self.backpressure(model.vnc)?;
                match self.submit(model, inputs, outputs) {
                    Err(e) if e.status == NrtStatus::QueueFull => continue,
                    r => break r?,
                }
            }
        } else {
            self.submit(model, inputs, outputs)?
        };
        let req = ExecRequest {
            vnc: model.vnc,
            seq_id: ticket.seq_id,
        };
        self.enqueue(
            Arc::clone(model),
            ticket,
            how.count.then(|| outputs.clone()),
        );
        Ok(req)
    }

    /// Whether logical core `vnc`'s execution unit is poisoned (every submit answers 101).
    pub fn is_poisoned(&self, vnc: u32) -> bool {
        self.xus.get(vnc as usize).is_some_and(|x| x.is_poisoned())
    }

    /// Recovers a poisoned logical core `v` (physical cores `cores`) with no model loaded on
    /// it: resets its cores and clears the execution unit (called by every load).
    ///
    /// Every load of `v` passes through here under `v`'s recovery lock: a load that claimed `v`
    /// while another load was resetting it waits for the reset before it stages, so the reset
    /// cannot wipe the device state (DMA queues, notification queue) of a model staged
    /// meanwhile (issue #8: such a model then "succeeded" with outputs partly unwritten).
    ///
    /// "No model on it" counts the loads that passed this point (staging, loaded, or being
    /// unloaded: each has device state on the core), not the loads still waiting to get here:
    /// those stage only after the reset. (Counting every claim starved recovery when loads of
    /// one core overlap, which they do whenever several threads reload after a fault.) On
    /// success the caller is counted until [`ExecShared::leave`].
    pub fn recover(&self, v: u32, cores: &[NcIndex]) -> Result<()> {
        let mut holders = self.recovery[v as usize]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let xu = &self.xus[v as usize];
        if !xu.is_poisoned() || *holders > 0 {
            *holders += 1;
            return Ok(());
        }
        let mut mask = 0u32;
        for nc in cores {
            if let Some(ce) = self.cores[nc.index()].reset() {
                ce.release(&*self.hal);
            }
            mask |= 1 << nc.0;
        }
        self.hal.nc_reset(mask)?;
        xu.reset();
        *holders += 1;
        Ok(())
    }

    /// A load counted by [`ExecShared::recover`] failed, or its model was unloaded.
    pub fn leave(&self, v: u32) {
        let mut holders = self.recovery[v as usize]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *holders = holders.saturating_sub(1);
    }

    /// Frees each core's execution state (exec and IO rings, request page) and resets the
    /// cores that had one — the device frees a core's notification queue only on a reset
    /// (the runtime's drop, after its workers stopped and its models were unloaded).
    pub fn release_cores(&self) {
        let mut mask = 0u32;
        for (n, slot) in self.cores.iter().enumerate() {
            if let Some(ce) = slot.reset() {
                ce.release(&*self.hal);
                mask |= 1 << n;
            }
        }
        if mask != 0 {
            let _ = self.hal.nc_reset(mask);
        }
    }
}
