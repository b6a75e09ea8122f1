//! Handle tables: what a C caller holds as an opaque pointer (`nrt_model_t *`,
//! `nrt_tensor_t *`, `nrt_tensor_set_t *`, …) is a token naming an entry here, never the
//! address of Rust memory. A token is `BASE + id * 16 + kind`, with ids from one process-wide
//! counter that never repeats, so
//!
//! * a handle used after it was freed, freed twice, or of another kind (a tensor passed as a
//!   model) is found not live and refused with `NRT_INVALID` and a message saying which — it can
//!   never alias a newer object;
//! * nothing the caller does with a handle can touch library memory.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use nrt_runtime::{Error, Result};

/// First token value (not a plausible small integer or NULL-adjacent value).
const BASE: u64 = 0x4e52_5400_0000;

/// The kinds of handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `nrt_model_t`.
    Model = 1,
    /// `nrt_tensor_t`.
    Tensor = 2,
    /// `nrt_tensor_set_t`.
    TensorSet = 3,
    /// `nrta_error_tracker_t`.
    ErrorTracker = 4,
    /// `nrt_profile_continuous_options_t`.
    ProfileOptions = 5,
    /// `nrt_inspect_config_t`.
    InspectConfig = 6,
    /// `nrt_sys_trace_config_t`.
    SysTraceConfig = 7,
    /// `nrt_sys_trace_fetch_options_t`.
    FetchOptions = 8,
}

impl Kind {
    const ALL: [Kind; 8] = [
        Kind::Model,
        Kind::Tensor,
        Kind::TensorSet,
        Kind::ErrorTracker,
        Kind::ProfileOptions,
        Kind::InspectConfig,
        Kind::SysTraceConfig,
        Kind::FetchOptions,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Model => "model (nrt_model_t)",
            Kind::Tensor => "tensor (nrt_tensor_t)",
            Kind::TensorSet => "tensor set (nrt_tensor_set_t)",
            Kind::ErrorTracker => "error tracker (nrta_error_tracker_t)",
            Kind::ProfileOptions => "profile options (nrt_profile_continuous_options_t)",
            Kind::InspectConfig => "inspect config (nrt_inspect_config_t)",
            Kind::SysTraceConfig => "sys-trace config (nrt_sys_trace_config_t)",
            Kind::FetchOptions => "sys-trace fetch options (nrt_sys_trace_fetch_options_t)",
        }
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn kind_of(token: u64) -> Option<Kind> {
    let k = token.checked_sub(BASE)? % 16;
    Kind::ALL.into_iter().find(|x| *x as u64 == k)
}

/// The live handles of one kind.
#[derive(Debug)]
pub struct Table<T> {
    kind: Kind,
    live: Mutex<BTreeMap<u64, T>>,
}

impl<T> Table<T> {
    /// An empty table.
    pub const fn new(kind: Kind) -> Self {
        Table {
            kind,
            live: Mutex::new(BTreeMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, T>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers `v` and returns its new handle.
    pub fn insert(&self, v: T) -> usize {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let token = BASE + id * 16 + self.kind as u64;
        self.lock().insert(token, v);
        token as usize
    }

    fn dead(&self, arg: &str, p: usize) -> Error {
        if p == 0 {
            return crate::ptr::null(arg);
        }
        match kind_of(p as u64) {
            Some(k) if k != self.kind => Error::invalid(format!(
                "argument `{arg}` ({p:#x}) is a {}, not a {}",
                k.name(),
                self.kind.name()
            )),
            _ => Error::invalid(format!(
                "argument `{arg}` ({p:#x}) is not a live {}: already freed, or never made by this library",
                self.kind.name()
            )),
        }
    }

    /// Runs `f` on the entry of handle `p`.
    pub fn with<R>(&self, p: usize, arg: &str, f: impl FnOnce(&mut T) -> R) -> Result<R> {
        let mut g = self.lock();
        match g.get_mut(&(p as u64)) {
            Some(v) => Ok(f(v)),
            None => {
                drop(g);
                Err(self.dead(arg, p))
            }
        }
    }

    /// Removes handle `p`, returning its entry.
    pub fn remove(&self, p: usize, arg: &str) -> Result<T> {
        let r = self.lock().remove(&(p as u64));
        r.ok_or_else(|| self.dead(arg, p))
    }

    /// Removes every entry.
    pub fn drain(&self) -> Vec<T> {
        std::mem::take(&mut *self.lock()).into_values().collect()
    }

    /// Live entries.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no entry is live.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

impl<T: Clone> Table<T> {
    /// A copy of the entry of handle `p`.
    pub fn get(&self, p: usize, arg: &str) -> Result<T> {
        self.with(p, arg, |v| v.clone())
    }

    /// Copies of every live entry, by handle.
    pub fn entries(&self) -> Vec<(usize, T)> {
        self.lock()
            .iter()
            .map(|(k, v)| (*k as usize, v.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_foreign_and_null_handles_are_refused_with_their_reason() {
        let models: Table<u32> = Table::new(Kind::Model);
        let tensors: Table<u32> = Table::new(Kind::Tensor);
        let m = models.insert(7);
        let t = tensors.insert(8);
        assert_eq!(models.get(m, "model").unwrap(), 7);
        let e = models.get(t, "model").unwrap_err();
        assert!(e.message.contains("is a tensor"), "{e}");
        assert_eq!(models.remove(m, "model").unwrap(), 7);
        let e = models.remove(m, "model").unwrap_err();
        assert!(e.message.contains("not a live model"), "{e}");
        assert!(models.get(0, "model").unwrap_err().message.contains("NULL"));
        assert!(models.get(12345, "model").is_err());
        let m2 = models.insert(9);
        assert_ne!(m2, m, "ids never repeat");
    }
}
