//! How Neuron records read as text: the profiler's syntax (docs/neuron-isa.md §14), and the
//! naming context ([`Names`]) a record needs to be rendered as the profiler does — which
//! semaphore belongs to which engine or DMA queue, and where each var sits on the device.

use core::fmt::{self, Write};
use std::collections::BTreeMap;

use crate::addr::SemaphoreId;
use crate::dtype::Dtype;

use super::operand::{dtype_name, DmaAddr, DmaAddrKind, NeuronAp};
use super::Sync;

/// What the text of a record names beyond its own bytes: semaphore names (`Scalar`,
/// `qSyncDynamicHW`, …) and var names and device addresses (for `0xD4` immediate addresses).
/// Built from a NEFF's `def.json` by the loader; empty, a record still renders, with bare
/// semaphore numbers and var-relative addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    semaphores: BTreeMap<u32, String>,
    vars: BTreeMap<u8, (String, Option<u64>)>,
}

impl Names {
    /// No names.
    pub fn new() -> Names {
        Names::default()
    }

    /// Names semaphore `sem`.
    pub fn name_semaphore(&mut self, sem: u32, name: impl Into<String>) {
        self.semaphores.insert(sem, name.into());
    }

    /// Names var `id` and, when known, its device address.
    pub fn name_var(&mut self, id: u8, name: impl Into<String>, base: Option<u64>) {
        self.vars.insert(id, (name.into(), base));
    }

    /// Sets the device address of var `id` (keeping its name, or naming it `var<id>`).
    pub fn place_var(&mut self, id: u8, base: u64) {
        let e = self
            .vars
            .entry(id)
            .or_insert_with(|| (format!("var{id}"), None));
        e.1 = Some(base);
    }

    /// The name of semaphore `sem`, if it has one.
    pub fn semaphore(&self, sem: u32) -> Option<&str> {
        self.semaphores.get(&sem).map(String::as_str)
    }

    /// The name and device address of var `id`.
    pub fn var(&self, id: u8) -> Option<(&str, Option<u64>)> {
        self.vars.get(&id).map(|(n, b)| (n.as_str(), *b))
    }

    fn sem(&self, f: &mut dyn Write, sem: SemaphoreId) -> fmt::Result {
        write!(f, "S[{}]", sem.0)?;
        match self.semaphore(sem.0) {
            Some(n) => write!(f, " ({n})"),
            None => Ok(()),
        }
    }
}

/// The profiler's sync prefix and the space before the operands: waits as
/// `S[n] (name)>=v`, the update as `S[n] (name)++@complete`, separated by spaces.
pub(crate) fn prefix(f: &mut dyn Write, names: &Names, sync: &Sync) -> fmt::Result {
    let mut first = true;
    for w in sync.waits.iter().flatten() {
        if !first {
            f.write_char(' ')?;
        }
        names.sem(f, w.sem)?;
        write!(f, ">={}", w.value)?;
        first = false;
    }
    if let Some(s) = sync.signal {
        if !first {
            f.write_char(' ')?;
        }
        names.sem(f, s)?;
        f.write_str("++@complete")?;
    }
    f.write_char(' ')
}

/// `dtype@0xaddr[steps][nums]`.
pub(crate) fn ap<const N: usize>(f: &mut dyn Write, dtype: Dtype, ap: &NeuronAp<N>) -> fmt::Result {
    write!(f, "{}@{ap}", dtype_name(dtype))
}

/// A `0xD4` address as `<side>_addr_imm=…` or `<side>_table_offset_imm=… <side>_table_index=…`.
pub(crate) fn dma_addr(f: &mut dyn Write, names: &Names, side: &str, a: &DmaAddr) -> fmt::Result {
    match a.kind {
        DmaAddrKind::Immediate => match names.var(a.index) {
            Some((_, Some(base))) => {
                write!(
                    f,
                    "{side}_addr_imm={:#x}",
                    base.wrapping_add(u64::from(a.offset))
                )
            }
            Some((name, None)) => write!(f, "{side}_addr_imm={name}+{:#x}", a.offset),
            None => write!(f, "{side}_addr_imm=var{}+{:#x}", a.index, a.offset),
        },
        DmaAddrKind::Table => write!(
            f,
            "{side}_table_offset_imm={:#x} {side}_table_index={}",
            a.offset, a.index
        ),
        DmaAddrKind::TableRegister => write!(
            f,
            "{side}_table_offset_reg=$R[{}] {side}_table_index={}",
            a.offset, a.index
        ),
    }
}
