//! Notification-queue entry format and the ring reader.

use core::mem::{offset_of, size_of};
use nrt_hal::notify::*;
use nrt_hal::{DeviceAddr, DmaEngine, EngineKind, NcIndex, QueueId};
use proptest::prelude::*;

fn samples() -> Vec<Notification> {
    vec![
        Notification::Completion {
            core: NcIndex(1),
            compute_idx: 42,
            cycles: 123_456,
            faulted: false,
        },
        Notification::ExecError {
            core: NcIndex(7),
            engine: EngineKind::Pool,
            compute_idx: 3,
            instruction_index: 0x1_0000_0005,
            opcode: 0xEE,
            fault: ExecFault::UnknownOpcode,
        },
        Notification::DmaError {
            core: NcIndex(0),
            engine: DmaEngine(15),
            queue: QueueId(9),
            compute_idx: u64::MAX,
            descriptor_index: 31,
            address: DeviceAddr::new(0xFFFC_2700_0000),
            fault: DmaFault::RingIdMismatch,
        },
        Notification::HbmUncorrectable {
            core: NcIndex(2),
            compute_idx: 8,
            address: DeviceAddr::new(0x4_0000_1000),
        },
        Notification::NanProduced {
            core: NcIndex(3),
            engine: EngineKind::Act,
            compute_idx: 9,
            instruction_index: 77,
        },
        Notification::Notify {
            core: NcIndex(4),
            engine: EngineKind::Sp,
            compute_idx: 10,
            instruction_index: 5,
            value: 0xDEAD_BEEF,
        },
        Notification::Overflow {
            core: NcIndex(5),
            lost: 12,
        },
        Notification::Deadlock {
            core: NcIndex(1),
            engine: EngineKind::Pool,
            compute_idx: 11,
            instruction_index: 6,
            sem: 24,
            value: 0,
            awaited: 16,
        },
        Notification::DgeError {
            core: NcIndex(1),
            engine: EngineKind::Pool,
            compute_idx: 12,
            instruction_index: 77,
            fault: DmaFault::OutOfBounds,
            address: DeviceAddr::new(0x80_0000_1000),
        },
    ]
}

#[test]
fn entry_layout() {
    assert_eq!(size_of::<NqEntry>(), 32);
    assert_eq!(offset_of!(NqEntry, seq), 0);
    assert_eq!(offset_of!(NqEntry, kind), 4);
    assert_eq!(offset_of!(NqEntry, core), 5);
    assert_eq!(offset_of!(NqEntry, unit), 6);
    assert_eq!(offset_of!(NqEntry, queue), 7);
    assert_eq!(offset_of!(NqEntry, compute_idx), 8);
    assert_eq!(offset_of!(NqEntry, code), 16);
    assert_eq!(offset_of!(NqEntry, detail), 20);
    assert_eq!(offset_of!(NqEntry, aux), 24);
}

#[test]
fn dma_error_wire_bytes() {
    let n = samples()[2];
    let b = n.encode(0x0102_0304).unwrap().to_bytes();
    assert_eq!(&b[0..4], &[4, 3, 2, 1]);
    assert_eq!(b[4], 3); // kind DmaError
    assert_eq!(b[5], 0); // core
    assert_eq!(b[6], 15); // DMA engine
    assert_eq!(b[7], 9); // queue
    assert_eq!(&b[8..16], &[0xFF; 8]);
    assert_eq!(&b[16..20], &[1, 0, 0, 0]); // RingIdMismatch
    assert_eq!(&b[20..24], &[31, 0, 0, 0]);
    assert_eq!(&b[24..32], &0xFFFC_2700_0000u64.to_le_bytes());
}

#[test]
fn every_kind_round_trips() {
    let s = samples();
    let kinds: Vec<NotificationKind> = s.iter().map(|n| n.kind()).collect();
    assert_eq!(kinds, NotificationKind::ALL);
    for (i, n) in s.iter().enumerate() {
        let seq = i as u32 + 1;
        let e = n.encode(seq).unwrap();
        assert_eq!(e.seq, seq);
        assert_eq!(e.kind, i as u8 + 1);
        let back = NqEntry::from_bytes(&e.to_bytes());
        assert_eq!(back, e);
        assert_eq!(Notification::decode(&back).unwrap(), *n);
    }
    for f in ExecFault::ALL {
        let n = Notification::ExecError {
            core: NcIndex(0),
            engine: EngineKind::Pe,
            compute_idx: 1,
            instruction_index: 2,
            opcode: 3,
            fault: f,
        };
        assert_eq!(Notification::decode(&n.encode(1).unwrap()).unwrap(), n);
    }
    for f in DmaFault::ALL {
        let n = Notification::DmaError {
            core: NcIndex(0),
            engine: DmaEngine(1),
            queue: QueueId(2),
            compute_idx: 1,
            descriptor_index: 2,
            address: DeviceAddr::new(3),
            fault: f,
        };
        assert_eq!(Notification::decode(&n.encode(1).unwrap()).unwrap(), n);
    }
}

#[test]
fn bad_entries_are_rejected() {
    let mut e = samples()[0].encode(1).unwrap();
    e.kind = 0;
    assert_eq!(
        Notification::decode(&e),
        Err(NqError::UnknownKind { kind: 0 })
    );
    e.kind = 200;
    assert_eq!(
        Notification::decode(&e),
        Err(NqError::UnknownKind { kind: 200 })
    );
    assert!(NqError::UnknownKind { kind: 200 }
        .to_string()
        .contains("unknown notification kind 200"));

    let mut e = samples()[1].encode(1).unwrap();
    e.unit = 5;
    assert_eq!(
        Notification::decode(&e),
        Err(NqError::UnknownEngine {
            kind: NotificationKind::ExecError,
            unit: 5
        })
    );
    let mut e = samples()[1].encode(1).unwrap();
    e.detail = 99;
    assert_eq!(
        Notification::decode(&e),
        Err(NqError::UnknownFault {
            kind: NotificationKind::ExecError,
            code: 99
        })
    );
    let mut e = samples()[2].encode(1).unwrap();
    e.code = 0;
    assert_eq!(
        Notification::decode(&e),
        Err(NqError::UnknownFault {
            kind: NotificationKind::DmaError,
            code: 0
        })
    );
}

#[test]
fn encode_checks_seq_and_field_ranges() {
    assert_eq!(samples()[0].encode(0), Err(NqError::ZeroSeq));
    let n = Notification::Completion {
        core: NcIndex(256),
        compute_idx: 0,
        cycles: 0,
        faulted: false,
    };
    assert_eq!(
        n.encode(1),
        Err(NqError::FieldRange {
            field: "core",
            value: 256
        })
    );
    let n = Notification::DmaError {
        core: NcIndex(0),
        engine: DmaEngine(300),
        queue: QueueId(0),
        compute_idx: 0,
        descriptor_index: 0,
        address: DeviceAddr::ZERO,
        fault: DmaFault::Aborted,
    };
    assert!(matches!(n.encode(1), Err(NqError::FieldRange { .. })));
}

#[test]
fn queue_sizes() {
    assert_eq!(queue_entries(32), Ok(1));
    assert_eq!(queue_entries(4096), Ok(128));
    for bad in [0usize, 16, 48, 100, 4097] {
        assert_eq!(
            queue_entries(bad),
            Err(NqError::BadQueueSize { bytes: bad })
        );
    }
    assert!(NqReader::new(96).is_err());
}

#[test]
fn sequence_helpers() {
    assert_eq!(seq_for_index(0), 1);
    assert_eq!(seq_for_index(u32::MAX as u64 - 1), u32::MAX);
    assert_eq!(seq_for_index(u32::MAX as u64), 1);
    assert_eq!(next_seq(1), 2);
    assert_eq!(next_seq(u32::MAX), 1);
}

fn completion(i: u64) -> Notification {
    Notification::Completion {
        core: NcIndex(0),
        compute_idx: i,
        cycles: i * 10,
        faulted: false,
    }
}

#[test]
fn reader_sees_nothing_in_an_empty_queue() {
    let q = vec![0u8; 256];
    let mut r = NqReader::new(q.len()).unwrap();
    assert_eq!(r.poll(&q), Ok(None));
    assert_eq!((r.head(), r.expected_seq()), (0, 1));
    assert_eq!(
        r.poll(&q[..128]),
        Err(NqError::SizeMismatch {
            expected: 256,
            got: 128
        })
    );
}

#[test]
fn reader_follows_writer_across_wraparound() {
    let mut q = vec![0u8; 8 * 32];
    let mut w = NqWriter::new(q.len()).unwrap();
    let mut r = NqReader::new(q.len()).unwrap();
    let mut next = 0u64;
    // 5 laps of an 8-entry queue, in bursts of 5 (so bursts straddle the wrap).
    for _ in 0..8 {
        for _ in 0..5 {
            let seq = w.push(&mut q, &completion(next + 1000)).unwrap();
            // slot rule: seq s lives at slot (s - 1) % entries
            let slot = (seq as usize - 1) % 8;
            assert_eq!(nrt_hal::le::u32_at(&q, slot * 32), seq);
            next += 1;
        }
        let mut got = Vec::new();
        while let Some(n) = r.poll(&q).unwrap() {
            got.push(n.compute_idx().unwrap());
        }
        let want: Vec<u64> = (next - 5..next).map(|i| i + 1000).collect();
        assert_eq!(got, want);
        // Old entries from the previous lap are not re-read.
        assert_eq!(r.poll(&q), Ok(None));
    }
    assert_eq!(r.expected_seq(), 41);
    assert_eq!(r.head(), 0);
}

#[test]
fn overflow_when_producer_laps_reader() {
    let mut q = vec![0u8; 4 * 32];
    let mut w = NqWriter::new(q.len()).unwrap();
    let mut r = NqReader::new(q.len()).unwrap();
    for i in 0..2 {
        w.push(&mut q, &completion(i)).unwrap();
    }
    assert_eq!(r.poll(&q).unwrap(), Some(completion(0)));
    // reader expects seq 2 at slot 1; producer writes seq 2..=11 (10 more entries).
    for i in 2..11 {
        w.push(&mut q, &completion(i)).unwrap();
    }
    // slots now hold seq 9, 10, 11, 8 (slot 0..3); slot 1 has 10, expected 2.
    // Entries 2..=7 are gone (6 entries); 8 is the oldest survivor.
    assert_eq!(r.poll(&q), Err(NqError::Overflow { lost: 6 }));
    assert_eq!(r.expected_seq(), 8);
    assert_eq!(r.head(), 3);
    let rest: Vec<u64> = core::iter::from_fn(|| r.poll(&q).unwrap())
        .map(|n| n.compute_idx().unwrap())
        .collect();
    assert_eq!(rest, [7, 8, 9, 10]);
    assert_eq!(r.poll(&q), Ok(None));
}

#[test]
fn overflow_by_several_laps_is_counted_exactly() {
    let mut q = vec![0u8; 4 * 32];
    let mut w = NqWriter::new(q.len()).unwrap();
    let mut r = NqReader::new(q.len()).unwrap();
    for i in 0..103 {
        w.push(&mut q, &completion(i)).unwrap();
    }
    let mut read = Vec::new();
    let mut lost = 0u64;
    loop {
        match r.poll(&q) {
            Ok(Some(n)) => read.push(n.compute_idx().unwrap()),
            Ok(None) => break,
            Err(NqError::Overflow { lost: l }) => lost += u64::from(l),
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(read, [99, 100, 101, 102]);
    assert_eq!(lost, 99);
    assert_eq!(lost + read.len() as u64, 103);
}

#[test]
fn misplaced_entry_is_reported_and_reader_stays() {
    let mut q = vec![0u8; 4 * 32];
    let e = completion(0).encode(3).unwrap();
    q[..32].copy_from_slice(&e.to_bytes());
    let mut r = NqReader::new(q.len()).unwrap();
    assert_eq!(
        r.poll(&q),
        Err(NqError::Misplaced {
            slot: 0,
            expected: 1,
            found: 3
        })
    );
    assert_eq!((r.head(), r.expected_seq()), (0, 1));
}

#[test]
fn undecodable_entry_is_consumed_with_an_error() {
    let mut q = vec![0u8; 2 * 32];
    let mut e = completion(0).encode(1).unwrap();
    e.kind = 99;
    q[..32].copy_from_slice(&e.to_bytes());
    let mut w = NqWriter::resume(q.len(), 1).unwrap();
    w.push(&mut q, &completion(5)).unwrap();
    let mut r = NqReader::new(q.len()).unwrap();
    assert_eq!(r.poll(&q), Err(NqError::UnknownKind { kind: 99 }));
    assert_eq!(r.poll(&q), Ok(Some(completion(5))));
}

#[test]
fn sequence_wrap_keeps_slots_and_skips_zero() {
    let mut q = vec![0u8; 4 * 32];
    let start = u32::MAX as u64 - 2; // seq u32::MAX - 1 next
    let mut w = NqWriter::resume(q.len(), start).unwrap();
    let mut r = NqReader::resume(q.len(), start).unwrap();
    assert_eq!(w.next_seq(), u32::MAX - 1);
    let seqs: Vec<u32> = (0..4)
        .map(|i| w.push(&mut q, &completion(i)).unwrap())
        .collect();
    assert_eq!(seqs, [u32::MAX - 1, u32::MAX, 1, 2]);
    let got: Vec<u64> = core::iter::from_fn(|| r.poll(&q).unwrap())
        .map(|n| n.compute_idx().unwrap())
        .collect();
    assert_eq!(got, [0, 1, 2, 3]);
    assert_eq!(r.expected_seq(), 3);
}

fn notification_strategy() -> impl Strategy<Value = Notification> {
    let core = (0u32..256).prop_map(NcIndex);
    let eng = (0usize..5).prop_map(|i| EngineKind::from_index(i).unwrap());
    prop_oneof![
        (core.clone(), any::<u64>(), any::<u64>(), any::<bool>()).prop_map(
            |(core, compute_idx, cycles, faulted)| Notification::Completion {
                core,
                compute_idx,
                cycles,
                faulted
            }
        ),
        (
            core.clone(),
            eng.clone(),
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            0usize..3
        )
            .prop_map(|(core, engine, c, ii, op, f)| Notification::ExecError {
                core,
                engine,
                compute_idx: c,
                instruction_index: ii,
                opcode: op,
                fault: ExecFault::ALL[f],
            }),
        (
            core.clone(),
            0u32..256,
            0u32..256,
            any::<u64>(),
            any::<u32>(),
            any::<u64>(),
            0usize..5
        )
            .prop_map(|(core, e, q, c, d, a, f)| Notification::DmaError {
                core,
                engine: DmaEngine(e),
                queue: QueueId(q),
                compute_idx: c,
                descriptor_index: d,
                address: DeviceAddr::new(a),
                fault: DmaFault::ALL[f],
            }),
        (core.clone(), any::<u64>(), any::<u64>()).prop_map(|(core, c, a)| {
            Notification::HbmUncorrectable {
                core,
                compute_idx: c,
                address: DeviceAddr::new(a),
            }
        }),
        (core.clone(), eng.clone(), any::<u64>(), any::<u64>()).prop_map(
            |(core, engine, c, ii)| Notification::NanProduced {
                core,
                engine,
                compute_idx: c,
                instruction_index: ii,
            }
        ),
        (
            core.clone(),
            eng.clone(),
            any::<u64>(),
            any::<u64>(),
            any::<u32>()
        )
            .prop_map(|(core, engine, c, ii, v)| Notification::Notify {
                core,
                engine,
                compute_idx: c,
                instruction_index: ii,
                value: v,
            }),
        (core.clone(), any::<u32>()).prop_map(|(core, lost)| Notification::Overflow { core, lost }),
        (
            core,
            eng,
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            any::<i32>(),
            any::<u32>()
        )
            .prop_map(|(core, engine, c, ii, sem, value, awaited)| {
                Notification::Deadlock {
                    core,
                    engine,
                    compute_idx: c,
                    instruction_index: ii,
                    sem,
                    value,
                    awaited,
                }
            }),
    ]
}

proptest! {
    #[test]
    fn notification_round_trip(n in notification_strategy(), seq in 1u32..) {
        let bytes = n.encode(seq).unwrap().to_bytes();
        let e = NqEntry::from_slice(&bytes).unwrap();
        prop_assert_eq!(e.seq, seq);
        prop_assert_eq!(Notification::decode(&e).unwrap(), n);
    }

    #[test]
    fn reader_never_misses_when_keeping_up(log2 in 0u32..5, bursts in proptest::collection::vec(0usize..8, 1..40)) {
        let entries = 1usize << log2;
        let mut q = vec![0u8; entries * 32];
        let mut w = NqWriter::new(q.len()).unwrap();
        let mut r = NqReader::new(q.len()).unwrap();
        let mut sent = 0u64;
        let mut recv = 0u64;
        let mut lost = 0u64;
        let keeps_up = bursts.iter().all(|&b| b <= entries);
        for b in bursts {
            for _ in 0..b {
                w.push(&mut q, &completion(sent)).unwrap();
                sent += 1;
            }
            loop {
                match r.poll(&q) {
                    Ok(Some(n)) => {
                        // Entries arrive in order, each after any lost ones.
                        prop_assert_eq!(n.compute_idx(), Some(recv + lost));
                        recv += 1;
                    }
                    Ok(None) => break,
                    Err(NqError::Overflow { lost: l }) => lost += u64::from(l),
                    Err(e) => return Err(TestCaseError::fail(e.to_string())),
                }
            }
            prop_assert_eq!(recv + lost, sent);
        }
        if keeps_up {
            prop_assert_eq!(lost, 0);
        }
    }
}

#[test]
fn completion_carries_cycles_and_fault_flag() {
    let n = Notification::Completion {
        core: NcIndex(3),
        compute_idx: 43,
        cycles: 0x1_2345_6789,
        faulted: true,
    };
    let e = n.encode(5).unwrap();
    let b = e.to_bytes();
    assert_eq!(nrt_hal::le::u32_at(&b, 16), 1);
    assert_eq!(nrt_hal::le::u64_at(&b, 24), 0x1_2345_6789);
    assert_eq!(Notification::decode(&e).unwrap(), n);
    let mut bad = e;
    bad.code = 2;
    assert!(Notification::decode(&bad).is_err());
}
