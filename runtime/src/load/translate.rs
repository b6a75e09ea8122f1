//! Instruction translation (load stage S5, sub-layer (a), docs/runtime.md §2.7): rewrite each engine
//! stream's pseudo-instructions into hardware instructions, with physical addresses in place of
//! var ids, and record where the stream grew or shrank.
//!
//! | NEFF record | becomes | slots |
//! |---|---|---|
//! | `0xC1` DMA trigger of a lowered block | per hardware queue of the set: `Write(rx tail_inc, n)`, `Write(tx tail_inc, n)` | 2 × queues (INSERT) |
//! | `0xC1` of a block this platform cannot move (e.g. an fma desc) | left as is: executing it is an error naming the instruction | 1 |
//! | `0xF0` PseudoWriteVar | `Write(pa(var) + offset, value)` | 1 |
//! | `0xF1` PseudoBarrier | `SemSignal(sem += 1)`, `SemWait(sem ≥ count)` | 2 (INSERT) |
//! | `0xF2` PseudoMarker | nothing | 0 (DELETE) |
//! | Neuron `0xD4` DMA_DIRECT2D | its wait as an `0xA0` (if it has one), then a `dma.direct` naming the state buffer absolutely and other vars by their slots (`crate::model::dge`) | 1 or 2 (INSERT) |
//! | anything else, including real compute opcodes this platform does not execute | copied unchanged | 1 |
//!
//! A stream of a Neuron-encoded NEFF (see `Kbin::encoding`) is translated the same way, with
//! two additions: a `0xC1` whose sync block waits keeps that wait as a Neuron `0xA0` wait record
//! in front of its writes (one more slot, INSERT), and an `End` record is appended after the
//! last record (real streams have none: the engine retires when it passes its last record).
//!
//! The patch records are instruction-pointer deltas, not address relocations: they keep the
//! device-IP ↔ NEFF-IP map ([`PatchTable::device_to_neff`]) that error reports use to name the
//! instruction of the NEFF an engine stopped on.

use std::collections::BTreeMap;

use nrt_hal::isa::neuron::{Encoding, NeuronInstr, NeuronOpcode, Sync};
use nrt_hal::isa::{Instruction, Lowered, Opcode, Record};
use nrt_hal::target::Direction;
use nrt_hal::{DeviceAddr, QueueRef, SemaphoreId, Target};

use crate::error::{Error, Result};
use crate::model::dge::DgeSlots;
use crate::model::patch::{Patch, PatchKind, PatchTable};

/// How a trigger record is lowered: the tail increments it performs.
pub type TriggerPlan = Vec<(QueueRef, u32)>;

/// Translates one stream. `triggers` maps record index → the tail increments of that trigger
/// (absent: leave the record raw); `var_pa` resolves a var id for `PseudoWriteVar`.
pub fn translate(
    target: Target,
    encoding: Encoding,
    records: &[Record],
    triggers: &BTreeMap<usize, TriggerPlan>,
    var_pa: &impl Fn(u32) -> Option<DeviceAddr>,
    dge: Option<&DgeSlots>,
) -> Result<(Vec<Record>, PatchTable)> {
    let mut out = Vec::with_capacity(records.len());
    let mut patches = PatchTable::default();
    for (ip, rec) in records.iter().enumerate() {
        let device_ip = out.len() as u32;
        let neff_ip = ip as u32;
        let op = Opcode::from_byte(rec.opcode());
        let direct =
            encoding == Encoding::Neuron && rec.opcode() == NeuronOpcode::DmaDirect2d.byte();
        let replaced: Option<Vec<Slot>> = match op {
            _ if direct => Some(
                dma_direct(rec, dge)
                    .map_err(|e| Error::invalid(format!("instruction {ip}: {}", e.message)))?,
            ),
            Some(Opcode::PseudoDmaTrigger) => match triggers.get(&ip) {
                None => None,
                Some(plan) => {
                    let mut v = Vec::with_capacity(plan.len() * 2 + 1);
                    if let Some(w) = trigger_wait(encoding, rec) {
                        v.push(w);
                    }
                    for &(q, n) in plan {
                        for dir in [Direction::Rx, Direction::Tx] {
                            let addr = target.tail_inc_addr(q, dir).ok_or_else(|| {
                                Error::failure(format!("no tail-increment register for {q}"))
                            })?;
                            v.push(Slot::Instr(Instruction::Write { addr, value: n }));
                        }
                    }
                    Some(v)
                }
            },
            Some(o) if o.is_pseudo() => {
                let instr = Instruction::decode(rec).map_err(|e| {
                    Error::invalid(format!(
                        "instruction {ip}: malformed pseudo-instruction: {e}"
                    ))
                })?;
                match instr.lower(var_pa) {
                    Ok(Lowered::Replaced(v)) => Some(v.into_iter().map(Slot::Instr).collect()),
                    Ok(_) => None,
                    Err(e) => {
                        return Err(Error::invalid(format!("instruction {ip}: {e}")));
                    }
                }
            }
            _ => None,
        };
        match replaced {
            None => out.push(*rec),
            Some(v) => {
                for slot in &v {
                    out.push(match slot {
                        Slot::Record(r) => *r,
                        Slot::Instr(i) => i.encode().map_err(|e| {
                            Error::failure(format!(
                                "instruction {ip}: cannot encode its lowering: {e}"
                            ))
                        })?,
                    });
                }
                match v.len() {
                    0 => patches.patches.push(Patch {
                        neff_ip,
                        device_ip,
                        kind: PatchKind::Delete,
                    }),
                    1 => {}
                    n => patches.patches.push(Patch {
                        neff_ip,
                        device_ip,
                        kind: PatchKind::Insert {
                            extra: n as u32 - 1,
                        },
                    }),
                }
            }
        }
    }
    if encoding == Encoding::Neuron {
        out.push(
            Instruction::End
                .encode()
                .map_err(|e| Error::failure(e.to_string()))?,
        );
    }
    Ok((out, patches))
}

/// A Neuron `0xD4` DMA_DIRECT2D relocated (docs/runtime.md §2.9): its wait, if any, as a
/// `0xA0` wait record, then a `dma.direct` whose ends name the state buffer absolutely and
/// every other var by its slot.
fn dma_direct(rec: &Record, dge: Option<&DgeSlots>) -> Result<Vec<Slot>> {
    let n = NeuronInstr::decode(rec).map_err(|e| Error::invalid(e.to_string()))?;
    let NeuronInstr::DmaDirect2d {
        sync,
        semaphore,
        sem_increment,
        src,
        src_pattern,
        src_elem_size,
        dst,
        dst_pattern,
        dst_elem_size,
        src_dtype,
        dst_dtype,
        ..
    } = n
    else {
        return Err(Error::invalid("not a DMA_DIRECT2D"));
    };
    let dge = dge.ok_or_else(|| Error::failure("DMA_DIRECT2D without var slots"))?;
    let mut v = Vec::with_capacity(2);
    if let Some(w) = sync.waits[0] {
        v.push(wait_record(w)?);
    }
    v.push(Slot::Instr(Instruction::DmaDirect {
        sem: SemaphoreId(u32::from(semaphore)),
        increment: sem_increment,
        src_dtype,
        dst_dtype,
        src: dge.end(&src)?,
        dst: dge.end(&dst)?,
        src_pattern,
        dst_pattern,
        src_elem_size,
        dst_elem_size,
    }));
    Ok(v)
}

fn wait_record(w: nrt_hal::isa::neuron::SyncWait) -> Result<Slot> {
    NeuronInstr::EventSemaphore {
        sync: Sync {
            waits: [Some(w), None],
            signal: None,
        },
    }
    .encode()
    .map(Slot::Record)
    .map_err(|e| Error::failure(e.to_string()))
}

/// One device slot of a lowering: a platform instruction, or a ready record.
enum Slot {
    Instr(Instruction),
    Record(Record),
}

/// The `0xA0` wait record that keeps a Neuron `0xC1`'s sync-block wait (none for the
/// platform's encoding, a trigger without a wait, or one that does not decode — that record is
/// left to fail when executed).
fn trigger_wait(encoding: Encoding, rec: &Record) -> Option<Slot> {
    if encoding != Encoding::Neuron {
        return None;
    }
    let n = NeuronInstr::decode(rec).ok()?;
    wait_record(n.sync().waits[0]?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrt_hal::isa::{MarkerLabel, QueueSetName, SemCmp, SemOp};
    use nrt_hal::{DmaEngine, NcIndex, QueueId, SemaphoreId};

    fn rec(i: Instruction) -> Record {
        i.encode().unwrap()
    }

    #[test]
    fn pseudo_instructions_lower_with_patch_records() {
        let t = Target::Trn1;
        let q = QueueRef::new(NcIndex(0), DmaEngine(1), QueueId(2));
        let stream = vec![
            rec(Instruction::StreamHeader),
            rec(Instruction::PseudoDmaTrigger {
                queue: QueueSetName::new("qSPIO0").unwrap(),
                block_id: 0,
            }),
            rec(Instruction::PseudoMarker {
                id: 1,
                label: MarkerLabel::new("x").unwrap(),
            }),
            rec(Instruction::PseudoWriteVar {
                var_id: 7,
                offset: 8,
                value: 5,
            }),
            rec(Instruction::PseudoBarrier {
                sem: SemaphoreId(3),
                count: 2,
            }),
            rec(Instruction::End),
        ];
        let mut trig = BTreeMap::new();
        trig.insert(1usize, vec![(q, 9)]);
        let (out, patches) = translate(
            t,
            Encoding::Platform,
            &stream,
            &trig,
            &|v| (v == 7).then_some(DeviceAddr::new(0x100_0000)),
            None,
        )
        .unwrap();
        let got: Vec<Instruction> = out
            .iter()
            .map(|r| Instruction::decode(r).unwrap())
            .collect();
        assert_eq!(
            got,
            vec![
                Instruction::StreamHeader,
                Instruction::Write {
                    addr: t.tail_inc_addr(q, Direction::Rx).unwrap(),
                    value: 9
                },
                Instruction::Write {
                    addr: t.tail_inc_addr(q, Direction::Tx).unwrap(),
                    value: 9
                },
                Instruction::Write {
                    addr: DeviceAddr::new(0x100_0008),
                    value: 5
                },
                Instruction::SemSignal {
                    sem: SemaphoreId(3),
                    op: SemOp::Inc,
                    value: 1
                },
                Instruction::SemWait {
                    sem: SemaphoreId(3),
                    cmp: SemCmp::Ge,
                    value: 2
                },
                Instruction::End,
            ]
        );
        assert_eq!(
            patches.patches,
            vec![
                Patch {
                    neff_ip: 1,
                    device_ip: 1,
                    kind: PatchKind::Insert { extra: 1 }
                },
                Patch {
                    neff_ip: 2,
                    device_ip: 3,
                    kind: PatchKind::Delete
                },
                Patch {
                    neff_ip: 4,
                    device_ip: 4,
                    kind: PatchKind::Insert { extra: 1 }
                },
            ]
        );
        // device slot -> NEFF instruction
        let map: Vec<u32> = (0..7).map(|d| patches.device_to_neff(d)).collect();
        assert_eq!(map, [0, 1, 1, 3, 4, 4, 5]);
    }

    #[test]
    fn unknown_var_and_raw_records() {
        let stream = vec![rec(Instruction::PseudoWriteVar {
            var_id: 9,
            offset: 0,
            value: 1,
        })];
        let e = translate(
            Target::Trn1,
            Encoding::Platform,
            &stream,
            &BTreeMap::new(),
            &|_| None,
            None,
        )
        .unwrap_err();
        assert!(e.message.contains("instruction 0"), "{e}");
        let mut raw = [0u8; 64];
        raw[0] = 0x41;
        raw[1] = 0x10;
        let (out, p) = translate(
            Target::Trn1,
            Encoding::Platform,
            &[Record(raw)],
            &BTreeMap::new(),
            &|_| None,
            None,
        )
        .unwrap();
        assert_eq!(out, vec![Record(raw)]);
        assert!(p.patches.is_empty());
    }
}
