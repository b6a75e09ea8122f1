//! The var slots of a model on a core (docs/runtime.md §2.9): where the engine-issued DMAs of a
//! current-compiler NEFF (Neuron `0xD4`, relocated into `dma.direct`) find the vars they
//! address.
//!
//! A `0xD4` names a var by id (immediate addresses) or by an entry of the subgraph's
//! `dge-table` var (which lists var ids), plus an offset or a register. Inputs and outputs are
//! bound per execution, so the device cannot hold their addresses in the instruction: each var
//! a DMA may address gets a 16-byte *slot* in one table (the var's device address and its size,
//! [`DmaEnd::SLOT_BYTES`]), and the relocated instruction names the slot. The table holds the
//! IO vars' slots first: each execution stages their image (the bound tensors' addresses) in
//! its own staging area — one per request slot, so an execution still in flight keeps its own
//! — and one IO-queue pair copies it into the table before the engines start. The other vars'
//! slots are written once at load. The state buffer is no slot: its addresses are absolute.
//!
//! | bytes of the allocation | what |
//! |---|---|
//! | `0 .. 16·n` | the table: the IO vars' slots, then the others', in var-id order |
//! | `16·n + 16·io·k ..` | the staged IO image of executions `k mod REQ_SLOTS` |

use std::collections::BTreeMap;

use nrt_hal::isa::neuron::{DmaAddr, DmaAddrKind};
use nrt_hal::isa::DmaEnd;
use nrt_hal::{DeviceAddr, MemHandle};

use crate::error::{Error, Result};

/// Bytes of one slot.
pub const SLOT: u64 = DmaEnd::SLOT_BYTES;
/// Most IO vars a model's slots may hold (the staged image is built on the stack).
pub const MAX_IO: usize = 64;

/// The var slots of a model on one core.
#[derive(Debug, Clone)]
pub struct DgeSlots {
    /// The allocation holding the table and the staging areas.
    pub mem: MemHandle,
    /// Its device address.
    pub pa: DeviceAddr,
    /// Slot index of each var that has one.
    pub slot_of: BTreeMap<u32, u32>,
    /// The IO vars, in slot order (slots `0..io.len()`), with their sizes.
    pub io: Vec<(u32, u64)>,
    /// The `dge-table` list: entry `i` names var `list[i]`.
    pub list: Vec<u32>,
    /// The state buffer's var id and device address (absolute addressing).
    pub sb: Option<(u32, DeviceAddr)>,
}

impl DgeSlots {
    /// Number of slots.
    pub fn slots(&self) -> u64 {
        self.slot_of.len() as u64
    }

    /// Bytes of the allocation: the table and `req_slots` staging areas.
    pub fn bytes(slots: u64, io: u64, req_slots: u64) -> u64 {
        SLOT * slots + SLOT * io * req_slots
    }

    /// Device address of the slot of var `var`.
    pub fn slot_addr(&self, var: u32) -> Option<DeviceAddr> {
        self.slot_of
            .get(&var)
            .map(|&i| DeviceAddr::new(self.pa.raw() + SLOT * u64::from(i)))
    }

    /// Byte offset, in the allocation, of the IO image staged for execution `index`.
    pub fn staging_offset(&self, index: u64, req_slots: u64) -> u64 {
        SLOT * self.slots() + SLOT * self.io.len() as u64 * (index % req_slots)
    }

    /// The relocated form of a `0xD4` address: the state buffer absolutely, any other var by
    /// its slot, with the record's offset or register.
    pub fn end(&self, a: &DmaAddr) -> Result<DmaEnd> {
        let var = match a.kind {
            DmaAddrKind::Immediate => u32::from(a.index),
            DmaAddrKind::Table | DmaAddrKind::TableRegister => {
                *self.list.get(usize::from(a.index)).ok_or_else(|| {
                    Error::invalid(format!(
                        "DMA_DIRECT2D addresses DGE-table entry {} of a table with {} entries",
                        a.index,
                        self.list.len()
                    ))
                })?
            }
        };
        if let Some((sb, base)) = self.sb.filter(|(id, _)| *id == var) {
            return match a.kind {
                DmaAddrKind::TableRegister => Err(Error::invalid(format!(
                    "DMA_DIRECT2D adds a register to the state buffer (var {sb}): not a known form"
                ))),
                _ => Ok(DmaEnd::Absolute(DeviceAddr::new(
                    base.raw() + u64::from(a.offset),
                ))),
            };
        }
        let slot = self.slot_addr(var).ok_or_else(|| {
            Error::invalid(format!(
                "DMA_DIRECT2D addresses var {var}, which no DMA may address (not in the subgraph, or a DGE table)"
            ))
        })?;
        Ok(match a.kind {
            DmaAddrKind::TableRegister => DmaEnd::SlotRegister {
                slot,
                register: u8::try_from(a.offset).map_err(|_| {
                    Error::invalid(format!(
                        "DMA_DIRECT2D offset register {} is not a register",
                        a.offset
                    ))
                })?,
            },
            _ => DmaEnd::Slot {
                slot,
                offset: a.offset,
            },
        })
    }

    /// The IO image of one execution (each IO var's bound address and size) into `out`,
    /// returning its length; `io_pa` gives the bound address of an IO var.
    pub fn io_image(
        &self,
        io_pa: &impl Fn(u32) -> Option<DeviceAddr>,
        out: &mut [u8; SLOT as usize * MAX_IO],
    ) -> Result<usize> {
        for (i, &(var, size)) in self.io.iter().enumerate() {
            let pa =
                io_pa(var).ok_or_else(|| Error::failure(format!("IO var {var} is not bound")))?;
            let at = i * SLOT as usize;
            out[at..at + 8].copy_from_slice(&pa.raw().to_le_bytes());
            out[at + 8..at + 16].copy_from_slice(&size.to_le_bytes());
        }
        Ok(self.io.len() * SLOT as usize)
    }
}
