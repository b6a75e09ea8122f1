//! The recorder's symbol table and event log: live allocations numbered per core (`#N`), the
//! symbolic rendering of any device address ([`Symbols`]), and the per-(core, stream) sequence
//! numbers that make a [`crate::trace::Trace`] canonical.

use std::collections::{BTreeMap, HashMap};

use nrt_hal::abi::MemAllocCategory;
use nrt_hal::target::MmioReg;
use nrt_hal::{DeviceAddr, MemHandle, NcIndex, QueueRef, Target};

use super::rings::QueueTrack;
use crate::render::{Region, Symbols};
use crate::trace::{Core, Event, Stream};

/// A live allocation as the recorder knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocRecord {
    /// The core it is accounted to.
    pub nc: NcIndex,
    /// Its symbolic id on that core (`#id`).
    pub id: u32,
    /// Its physical address (never rendered; exposed for tests of address independence).
    pub pa: DeviceAddr,
    /// Its size in bytes as the backend reports it.
    pub size: u64,
    /// Its accounting category, `None` for a notification queue the backend allocated.
    pub category: Option<MemAllocCategory>,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Alloc {
    pub(super) rec: AllocRecord,
    pub(super) handle: MemHandle,
}

#[derive(Debug)]
pub(super) struct State {
    pub(super) target: Target,
    /// Live allocations by physical address.
    pub(super) by_pa: BTreeMap<u64, Alloc>,
    pub(super) by_handle: HashMap<MemHandle, u64>,
    /// The last id given out per core.
    pub(super) next_id: HashMap<u32, u32>,
    /// The next sequence number per (core, stream).
    pub(super) seq: HashMap<(Core, Stream), u64>,
    pub(super) events: Vec<Event>,
    /// The shadow model of each queue the recorder saw initialised.
    pub(super) queues: BTreeMap<QueueRef, QueueTrack>,
    pub(super) calls: BTreeMap<&'static str, u64>,
}

/// The symbols of a [`State`] as seen from one core.
pub(super) struct View<'a> {
    st: &'a State,
    nc: u32,
}

impl Symbols for View<'_> {
    fn sym(&self, addr: u64) -> String {
        if let Some(a) = self.st.alloc_at(addr) {
            return format!(
                "{}+{:#x}",
                self.st.alloc_name(a, self.nc),
                addr - a.rec.pa.raw()
            );
        }
        match self.st.target.decode_mmio(DeviceAddr::new(addr)) {
            Some(r) => r.to_string(),
            None => format!("?{addr:#x}"),
        }
    }

    fn region(&self, addr: u64) -> Region {
        if let Some(a) = self.st.alloc_at(addr) {
            return Region::Alloc(a.rec.pa.raw());
        }
        match self.st.target.decode_mmio(DeviceAddr::new(addr)) {
            Some(MmioReg::Sbuf { nc, .. }) => Region::Sbuf(nc.0),
            Some(MmioReg::Psum { nc, .. }) => Region::Psum(nc.0),
            Some(_) => Region::Register,
            None => Region::Unknown,
        }
    }
}

impl State {
    pub(super) fn view(&self, nc: u32) -> View<'_> {
        View { st: self, nc }
    }

    pub(super) fn alloc_at(&self, addr: u64) -> Option<&Alloc> {
        let (_, a) = self.by_pa.range(..=addr).next_back()?;
        (addr - a.rec.pa.raw() < a.rec.size).then_some(a)
    }

    pub(super) fn alloc_of(&self, h: MemHandle) -> Option<&Alloc> {
        self.by_handle.get(&h).and_then(|pa| self.by_pa.get(pa))
    }

    pub(super) fn alloc_name(&self, a: &Alloc, from: u32) -> String {
        if a.rec.nc.0 == from {
            format!("#{}", a.rec.id)
        } else {
            format!("{}#{}", a.rec.nc, a.rec.id)
        }
    }

    /// `#N` of a handle from core `from`'s point of view, `?` if unknown.
    pub(super) fn handle_name(&self, h: MemHandle, from: u32) -> String {
        self.alloc_of(h)
            .map(|a| self.alloc_name(a, from))
            .unwrap_or_else(|| "?".to_string())
    }

    /// The core an allocation belongs to and its `#N` name from that core (`dev` and `?` for
    /// a handle the recorder does not know).
    pub(super) fn handle_ref(&self, h: MemHandle) -> (Core, String) {
        match self.alloc_of(h) {
            Some(a) => (Core::Nc(a.rec.nc.0), format!("#{}", a.rec.id)),
            None => (Core::Device, "?".to_string()),
        }
    }

    pub(super) fn insert(
        &mut self,
        nc: NcIndex,
        handle: MemHandle,
        pa: u64,
        size: u64,
        category: Option<MemAllocCategory>,
    ) -> u32 {
        // Anything the new allocation overlaps is stale (freed behind our back, e.g. a
        // notification queue released by a core reset).
        let stale: Vec<u64> = self
            .by_pa
            .range(..pa.saturating_add(size.max(1)))
            .filter(|(_, a)| a.rec.pa.raw() + a.rec.size > pa)
            .map(|(k, _)| *k)
            .collect();
        for k in stale {
            if let Some(a) = self.by_pa.remove(&k) {
                if self.by_handle.get(&a.handle) == Some(&k) {
                    self.by_handle.remove(&a.handle);
                }
            }
        }
        if let Some(old) = self.by_handle.remove(&handle) {
            self.by_pa.remove(&old);
        }
        let next = self.next_id.entry(nc.0).or_insert(0);
        *next += 1;
        let id = *next;
        self.by_pa.insert(
            pa,
            Alloc {
                rec: AllocRecord {
                    nc,
                    id,
                    pa: DeviceAddr::new(pa),
                    size,
                    category,
                },
                handle,
            },
        );
        self.by_handle.insert(handle, pa);
        id
    }

    pub(super) fn emit(&mut self, core: Core, stream: Stream, text: String) -> usize {
        let n = self.seq.entry((core, stream)).or_insert(0);
        let seq = *n;
        *n += 1;
        self.events.push(Event {
            core,
            stream,
            seq,
            text,
        });
        self.events.len() - 1
    }
}
