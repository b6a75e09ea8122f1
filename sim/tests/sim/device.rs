//! The simulated device driven through the HAL without the runtime: MMIO semantics, DMA
//! rings, faults, the sequencer protocol, engines computing real numbers, timing and
//! determinism.

use std::time::Duration;

use nrt_hal::hal::{QueueStatus, WaitCondition};
use nrt_hal::isa::{
    ActivationFunc, Instruction, ReduceCmd, ScalarOperand, SemCmp, SemOp, ShortOperand,
};
use nrt_hal::notify::{DmaFault, ExecFault, Notification, NqError};
use nrt_hal::target::{Direction, SemWindow};
use nrt_hal::udma::{LenCtrlFlags, M2mCopy, RxDesc, TxDesc, TxMeta};
use nrt_hal::{
    DeviceAddr, Dtype, EngineKind, EventId, Hal, HalError, NcIndex, SemaphoreId, Target,
};
use nrt_sim::testkit::*;
use nrt_sim::{FaultPlan, SimConfig};

const NC0: NcIndex = NcIndex(0);

fn sem(i: u32) -> SemaphoreId {
    SemaphoreId(i)
}

#[test]
fn semaphores_and_events_through_mmio() {
    let dev = Dev::new(Target::Trn1);
    let t = dev.target;
    let s5 = |w| t.semaphore_addr(NC0, sem(5), w).unwrap();
    dev.sim.store32(s5(SemWindow::Increment), 3).unwrap();
    assert_eq!(dev.sim.semaphore_read(NC0, sem(5)).unwrap(), 3);
    dev.sim.store32(s5(SemWindow::Decrement), 5).unwrap();
    assert_eq!(
        dev.sim.semaphore_read(NC0, sem(5)).unwrap(),
        -2,
        "signed 32-bit"
    );
    assert_eq!(dev.sim.load32(s5(SemWindow::Read)).unwrap(), (-2i32) as u32);
    dev.sim.store32(s5(SemWindow::Set), 7).unwrap();
    assert_eq!(dev.sim.semaphore_read(NC0, sem(5)).unwrap(), 7);
    dev.sim.semaphore_decrement(NC0, sem(5), 10).unwrap();
    assert_eq!(dev.sim.semaphore_read(NC0, sem(5)).unwrap(), -3);
    // Windows that only go one way.
    assert!(dev.sim.store32(s5(SemWindow::Read), 1).is_err());
    assert!(dev.sim.load32(s5(SemWindow::Increment)).is_err());
    // Events are 0/1 flags.
    let e3 = t.event_addr(NC0, EventId(3)).unwrap();
    dev.sim.store32(e3, 5).unwrap();
    assert_eq!(dev.sim.event_get(NC0, EventId(3)).unwrap(), 1);
    assert_eq!(dev.sim.load32(e3).unwrap(), 1);
    dev.sim.store32(e3, 0).unwrap();
    assert_eq!(dev.sim.event_get(NC0, EventId(3)).unwrap(), 0);
    // Core 1's semaphores are separate.
    assert_eq!(dev.sim.semaphore_read(NcIndex(1), sem(5)).unwrap(), 0);
    // Unmapped addresses and write-only registers fault.
    let q = nrt_hal::QueueRef::new(NC0, nrt_hal::DmaEngine(2), nrt_hal::QueueId(1));
    assert!(dev
        .sim
        .load32(t.tail_inc_addr(q, Direction::Tx).unwrap())
        .is_err());
    assert!(dev
        .sim
        .store32(DeviceAddr::new(0x7000_0000_0000), 1)
        .is_err());
    assert!(dev.sim.load32(DeviceAddr::new(0x2_0000_0000)).is_err());
    // HAL range checks.
    assert!(matches!(
        dev.sim.semaphore_read(NC0, sem(256)),
        Err(HalError::InvalidArgument { .. })
    ));
    assert!(dev.sim.semaphore_read(NcIndex(2), sem(0)).is_err());
}

#[test]
fn ring_moves_hbm_to_sbuf_to_hbm_and_signals() {
    let dev = Dev::new(Target::Trn1);
    let mut q = Queue::at(&dev, 0, 1, 0, 64);
    let src = dev.alloc(NC0, 4096);
    let dst = dev.alloc(NC0, 4096);
    let pattern: Vec<u8> = (0..256u32).map(|i| (i * 7 + 3) as u8).collect();
    dev.write(src, 0, &pattern);
    let sb = dev.target.sbuf_addr(NC0, 3, 0x100).unwrap();
    let one = dev.word(NC0, 1);
    let mut n = q.push(&dev, M2mCopy::new(dev.pa(src), sb, 256));
    n += q.push(&dev, M2mCopy::new(sb, dev.pa(dst), 256));
    let inc = dev
        .target
        .semaphore_addr(NC0, sem(7), SemWindow::Increment)
        .unwrap();
    n += q.poke(&dev, one, inc);
    assert_eq!(n, 3);
    q.start(&dev, n);
    dev.wait_sem(NC0, sem(7), 1);
    assert_eq!(dev.read(dst, 0, 256), pattern);
    let mut sbuf = vec![0; 256];
    dev.sim.read_sbuf(NC0, 3, 0x100, &mut sbuf).unwrap();
    assert_eq!(sbuf, pattern);
    let st = dev.sim.dma_queue_state(q.q).unwrap();
    assert_eq!(
        (st.tx_head, st.tx_tail, st.rx_head, st.rx_tail),
        (3, 3, 3, 3)
    );
    assert_eq!(st.status, QueueStatus::Enabled);
    assert_eq!(dev.sim.stats().descriptors, 3);
}

#[test]
fn a_200_000_byte_copy_splits_into_64k_descriptors() {
    let dev = Dev::new(Target::Trn2);
    let mut q = Queue::at(&dev, 0, 4, 3, 32);
    let src = dev.alloc(NC0, 200_000);
    let dst = dev.alloc(NC0, 200_000);
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    dev.write(src, 0, &data);
    let n = q.push(&dev, M2mCopy::new(dev.pa(src), dev.pa(dst), 200_000));
    assert_eq!(n, 4);
    // The first descriptor carries 64 KiB as length 0, FIRST|LAST, ring id 1.
    let raw = dev.read(q.tx, 0, 16);
    let len_ctrl = nrt_hal::le::u32_at(&raw, 0);
    assert_eq!(len_ctrl, 0x0D00_0000);
    let raw = dev.read(q.tx, 3 * 16, 16);
    assert_eq!(nrt_hal::le::u32_at(&raw, 0) & 0xFFFF, 3392);
    q.start(&dev, n);
    dev.sim.run_until_idle();
    assert_eq!(dev.read(dst, 0, 200_000), data);
}

#[test]
fn a_wait_gives_up_at_its_deadline_while_the_device_is_still_busy() {
    let dev = Dev::new(Target::Trn1);
    let src = dev.alloc(NC0, 4096);
    let dst = dev.alloc(NC0, 4096);
    let inc = dev
        .target
        .semaphore_addr(NC0, sem(9), SemWindow::Increment)
        .unwrap();
    // Four queues on four engines interleave (each yields to the others' pending wake-ups), so
    // the device runs many scheduler steps; each ends by incrementing semaphore 9.
    let mut queues: Vec<(Queue, u32)> = (0..4)
        .map(|e| (Queue::at(&dev, 0, e, 0, 4096), 0))
        .collect();
    for (q, n) in &mut queues {
        for _ in 0..2000 {
            *n += q.push(&dev, M2mCopy::new(dev.pa(src), dev.pa(dst), 4096));
        }
        *n += q.poke(&dev, dev.word(NC0, 1), inc);
    }
    for (q, n) in &queues {
        q.start(&dev, *n);
    }
    let done = WaitCondition::Semaphore {
        nc: NC0,
        sem: sem(9),
        cmp: SemCmp::Ge,
        value: 1,
    };
    // The deadline has passed before the first event: the wait stops within one slice of
    // events instead of running the device to the end (which never comes for a program that
    // keeps itself busy).
    let e = dev.sim.wait(&done, Duration::ZERO).unwrap_err();
    assert!(matches!(e, HalError::Timeout { .. }), "{e:?}");
    assert!(dev.sim.semaphore_read(NC0, sem(9)).unwrap() < 4);
    // The device was only interrupted: a patient wait sees the copies through.
    dev.wait_sem(NC0, sem(9), 4);
}

#[test]
fn a_ring_wraps_through_every_phase() {
    let dev = Dev::new(Target::Trn1);
    let mut q = Queue::at(&dev, 0, 2, 5, 32);
    let src = dev.alloc(NC0, 1 << 16);
    let dst = dev.alloc(NC0, 1 << 16);
    let one = dev.word(NC0, 1);
    let inc = dev
        .target
        .semaphore_addr(NC0, sem(9), SemWindow::Increment)
        .unwrap();
    // 6 rounds of 20 pairs + 1 poke = 126 descriptors: ring ids 1, 2, 3, 0 and back to 1.
    for round in 0..6u32 {
        let mut n = 0;
        for i in 0..20u32 {
            let off = (round * 20 + i) as u64 * 16;
            dev.write(src, off, &[(round * 20 + i) as u8; 16]);
            n += q.push(
                &dev,
                M2mCopy::new(
                    dev.pa(src).checked_add(off).unwrap(),
                    dev.pa(dst).checked_add(off).unwrap(),
                    16,
                ),
            );
        }
        n += q.poke(&dev, one, inc);
        q.start(&dev, n);
        dev.wait_sem(NC0, sem(9), round as i32 + 1);
    }
    assert_eq!(
        q.prod.tx.pass(),
        3,
        "126 descriptors on a 32-entry ring reach the 4th pass"
    );
    assert_eq!(q.prod.tx.ring_id(), 0);
    let out = dev.read(dst, 0, 120 * 16);
    for i in 0..120 {
        assert_eq!(out[i * 16], i as u8);
    }
    let st = dev.sim.dma_queue_state(q.q).unwrap();
    assert_eq!(st.status, QueueStatus::Enabled);
    assert_eq!(st.tx_head, 126 % 32);
}

/// Runs `setup` on a fresh queue of a device with a notification queue and returns the
/// queue's final status and the error entries.
fn dma_fault(
    cfg: SimConfig,
    setup: impl FnOnce(&Dev, &mut Queue) -> (u32, u32),
) -> (QueueStatus, Vec<Notification>) {
    let dev = Dev::with(cfg);
    let mut nq = Nq::new(&dev, NC0, 4096);
    let mut q = Queue::at(&dev, 0, 3, 1, 32);
    let (tx, rx) = setup(&dev, &mut q);
    dev.sim.dma_queue_copy_start(q.q, tx, rx).unwrap();
    dev.sim.run_until_idle();
    let st = dev.sim.dma_queue_state(q.q).unwrap().status;
    // A stopped queue ignores further kicks without panicking.
    dev.sim.dma_queue_copy_start(q.q, 1, 1).unwrap();
    dev.sim.run_until_idle();
    (st, nq.drain(&dev))
}

fn only_dma_fault(entries: &[Notification]) -> DmaFault {
    match entries {
        [Notification::DmaError { fault, core, .. }] => {
            assert_eq!(*core, NC0);
            *fault
        }
        other => panic!("expected one DMA error entry, got {other:?}"),
    }
}

/// Stages one hand-made M2M pair in slot 0 of `q`, over one fresh buffer: a TX of `lens.0`
/// bytes and an RX of `lens.1`, both with ring id `ring`. Returns the counts to kick.
fn put_one_pair(dev: &Dev, q: &mut Queue, lens: (u32, u32), ring: u8) -> (u32, u32) {
    let b = dev.alloc(NC0, 4096);
    let tx = TxDesc::new(
        u64::from(lens.0),
        ring,
        LenCtrlFlags::FIRST | LenCtrlFlags::LAST,
        TxMeta::M2M,
        dev.pa(b),
    )
    .unwrap();
    let rx = RxDesc::new(u64::from(lens.1), ring, LenCtrlFlags::empty(), dev.pa(b)).unwrap();
    q.put(dev, 0, tx, 0, rx);
    (1, 1)
}

#[test]
fn dma_faults_stop_the_queue_and_post_an_error() {
    let cfg = || SimConfig::new(Target::Trn1);
    // A buffer outside any allocation.
    let (st, e) = dma_fault(cfg(), |dev, q| {
        let dst = dev.alloc(NC0, 4096);
        let n = q.push(
            dev,
            M2mCopy::new(DeviceAddr::new(0x3_0000_0000), dev.pa(dst), 64),
        );
        (n, n)
    });
    assert_eq!(st, QueueStatus::Aborted);
    assert_eq!(only_dma_fault(&e), DmaFault::AddressFault);
    // TX and RX lengths differ.
    let (_, e) = dma_fault(cfg(), |dev, q| put_one_pair(dev, q, (16, 8), 1));
    assert_eq!(only_dma_fault(&e), DmaFault::LengthMismatch);
    // More pending than the ring holds.
    let (st, e) = dma_fault(cfg(), |_, _| (33, 33));
    assert_eq!(st, QueueStatus::Aborted);
    assert_eq!(only_dma_fault(&e), DmaFault::RingOverrun);
    // A descriptor of the wrong pass (ring id 2 on the first pass, which expects 1).
    let (_, e) = dma_fault(cfg(), |dev, q| put_one_pair(dev, q, (16, 16), 2));
    assert_eq!(only_dma_fault(&e), DmaFault::RingIdMismatch);
    // Stale (zeroed) ring memory: nothing staged carries ring id 0 on the first pass.
    let (_, e) = dma_fault(cfg(), |_, _| (2, 2));
    assert_eq!(only_dma_fault(&e), DmaFault::RingIdMismatch);
    // Unused length-control bits set.
    let (_, e) = dma_fault(cfg(), |dev, q| {
        let b = dev.alloc(NC0, 4096);
        let n = q.push(
            dev,
            M2mCopy::new(dev.pa(b), dev.pa(b).checked_add(64).unwrap(), 16),
        );
        let mut raw = dev.read(q.tx, 0, 16);
        raw[3] |= 0x80; // bit 31
        dev.write(q.tx, 0, &raw);
        (n, n)
    });
    assert_eq!(only_dma_fault(&e), DmaFault::BadDescriptor);
    // An injected abort.
    let plan = FaultPlan {
        abort_queues: vec![nrt_hal::QueueRef::new(
            NC0,
            nrt_hal::DmaEngine(3),
            nrt_hal::QueueId(1),
        )],
        ..FaultPlan::default()
    };
    let (st, e) = dma_fault(cfg().with_faults(plan), |dev, q| {
        let b = dev.alloc(NC0, 4096);
        let n = q.push(
            dev,
            M2mCopy::new(dev.pa(b), dev.pa(b).checked_add(64).unwrap(), 16),
        );
        (n, n)
    });
    assert_eq!(st, QueueStatus::Aborted);
    assert_eq!(only_dma_fault(&e), DmaFault::Aborted);
    // The HAL refuses an RX count of 0 (a kernel BUG_ON in the real driver).
    let dev = Dev::new(Target::Trn1);
    let q = Queue::at(&dev, 0, 0, 0, 32);
    assert!(dev.sim.dma_queue_copy_start(q.q, 1, 0).is_err());
}

/// The matmul + bias + relu model of the engine tests, on core `nc`.
struct Mlp {
    w: Vec<f32>,
    x: Vec<f32>,
    b: Vec<f32>,
}

const K: usize = 64;
const M: usize = 32;
const N: usize = 16;

impl Mlp {
    fn new(seed: u32) -> Self {
        let mut s = seed;
        let mut next = move || {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            ((s >> 8) as f32 / (1u32 << 24) as f32) * 2.0 - 1.0
        };
        Mlp {
            w: (0..K * M).map(|_| next()).collect(),
            x: (0..K * N).map(|_| next()).collect(),
            b: (0..M).map(|_| next()).collect(),
        }
    }

    /// out[m][n] = relu(Σ_k w[k][m]·x[k][n] + b[m]) in f64.
    fn reference(&self) -> Vec<f64> {
        let mut out = vec![0f64; M * N];
        for m in 0..M {
            for n in 0..N {
                let mut acc = 0f64;
                for k in 0..K {
                    acc += self.w[k * M + m] as f64 * self.x[k * N + n] as f64;
                }
                out[m * N + n] = (acc + self.b[m] as f64).max(0.0);
            }
        }
        out
    }
}

/// Loads W, X, b into SBUF by DMA, matmul on PE, bias + relu on ACT, stores by DMA; SP drives
/// the DMAs. Returns the output bytes and the completion entries.
///
/// Longer than the ~120-line guideline on purpose: it is one scripted device
/// program (buffers, queues, four engine streams, the per-run IO staging) read top to bottom.
fn run_mlp(dev: &Dev, model: &Mlp, runs: &[(bool, bool)]) -> (Vec<u8>, Vec<Notification>) {
    let t = dev.target;
    let f32b = Dtype::F32;
    let sb = |p: u32, off: u32| t.sbuf_addr(NC0, p, off).unwrap();
    let (w_off, x_off, b_off, o_off) = (0x0u32, 0x1000u32, 0x2000u32, 0x3000u32);
    let w = dev.alloc(NC0, (K * M * 4) as u64);
    let x = dev.alloc(NC0, (K * N * 4) as u64);
    let b = dev.alloc(NC0, (M * 4) as u64);
    let out = dev.alloc(NC0, (M * N * 4) as u64);
    dev.write(w, 0, &f32_bytes(&model.w));
    dev.write(x, 0, &f32_bytes(&model.x));
    dev.write(b, 0, &f32_bytes(&model.b));
    let one = dev.word(NC0, 1);
    let inc = |s: u32| t.semaphore_addr(NC0, sem(s), SemWindow::Increment).unwrap();

    // Input queue: rows into partitions, then sem 2 += 1.
    let mut qin = Queue::at(dev, 0, 1, 0, 256);
    // Output queue: result rows back to HBM, then sem 4 += 1.
    let mut qout = Queue::at(dev, 0, 2, 0, 64);
    let mut exec = Exec::new(dev, NC0);
    let pe_prog;
    let act_prog;
    {
        let ap = |p: u32, off: u32, parts: u32, n: u16, dt: Dtype| {
            nrt_hal::testkit::ops::sbuf(p, parts, off, dt, n)
        };
        let psum = nrt_hal::testkit::ops::psum(0, M as u32, 0, f32b, N as u16);
        pe_prog = dev.program(
            NC0,
            &[
                Instruction::StreamHeader,
                Instruction::SemWait {
                    sem: sem(2),
                    cmp: SemCmp::Ge,
                    value: 1,
                },
                Instruction::MatmulLoadStationary {
                    reversed: false,
                    pass: nrt_hal::isa::MatmulPass::Single,
                    stationary: ap(0, w_off, K as u32, M as u16, f32b),
                },
                Instruction::MatmulMoving {
                    dst: psum,
                    moving: ap(0, x_off, K as u32, N as u16, f32b),
                    accumulate: false,
                },
                Instruction::SemSignal {
                    sem: sem(1),
                    op: SemOp::Inc,
                    value: 1,
                },
                Instruction::End,
            ],
        );
        act_prog = dev.program(
            NC0,
            &[
                Instruction::StreamHeader,
                Instruction::SemWait {
                    sem: sem(1),
                    cmp: SemCmp::Ge,
                    value: 1,
                },
                Instruction::Activation {
                    func: ActivationFunc::Relu,
                    out: ap(0, o_off, M as u32, N as u16, f32b),
                    input: psum,
                    scale: ScalarOperand::Imm(1.0),
                    bias: Some(ScalarOperand::Vector(
                        ShortOperand::sbuf(0, b_off, f32b).unwrap(),
                    )),
                    reduce: ReduceCmd::Idle,
                },
                Instruction::SemSignal {
                    sem: sem(3),
                    op: SemOp::Inc,
                    value: 1,
                },
                Instruction::End,
            ],
        );
    }
    // Stages one execution's IO descriptors on both queues (rows into partitions and a
    // semaphore poke; results back to HBM and a poke). Called again before each execution.
    let stage_io = |qin: &mut Queue, qout: &mut Queue| -> (u32, u32) {
        let mut n_in = 0;
        for k in 0..K as u32 {
            n_in += qin.push(
                dev,
                M2mCopy::new(
                    dev.pa(w).checked_add(k as u64 * (M as u64 * 4)).unwrap(),
                    sb(k, w_off),
                    M as u64 * 4,
                ),
            );
            n_in += qin.push(
                dev,
                M2mCopy::new(
                    dev.pa(x).checked_add(k as u64 * (N as u64 * 4)).unwrap(),
                    sb(k, x_off),
                    N as u64 * 4,
                ),
            );
        }
        for m in 0..M as u32 {
            n_in += qin.push(
                dev,
                M2mCopy::new(
                    dev.pa(b).checked_add(m as u64 * 4).unwrap(),
                    sb(m, b_off),
                    4,
                ),
            );
        }
        n_in += qin.poke(dev, one, inc(2));
        let mut n_out = 0;
        for m in 0..M as u32 {
            n_out += qout.push(
                dev,
                M2mCopy::new(
                    sb(m, o_off),
                    dev.pa(out).checked_add(m as u64 * (N as u64 * 4)).unwrap(),
                    N as u64 * 4,
                ),
            );
        }
        n_out += qout.poke(dev, one, inc(4));
        (n_in, n_out)
    };
    let (n_in, n_out) = stage_io(&mut qin, &mut qout);
    let sp_prog = dev.program(
        NC0,
        &[
            Instruction::StreamHeader,
            Instruction::Write {
                addr: qin.tail_inc(dev, Direction::Rx),
                value: n_in,
            },
            Instruction::Write {
                addr: qin.tail_inc(dev, Direction::Tx),
                value: n_in,
            },
            Instruction::SemWait {
                sem: sem(3),
                cmp: SemCmp::Ge,
                value: 1,
            },
            Instruction::Write {
                addr: qout.tail_inc(dev, Direction::Rx),
                value: n_out,
            },
            Instruction::Write {
                addr: qout.tail_inc(dev, Direction::Tx),
                value: n_out,
            },
            Instruction::SemWait {
                sem: sem(4),
                cmp: SemCmp::Ge,
                value: 1,
            },
            // Reset the model's semaphores for the next execution.
            Instruction::SemSignal {
                sem: sem(1),
                op: SemOp::Set,
                value: 0,
            },
            Instruction::SemSignal {
                sem: sem(2),
                op: SemOp::Set,
                value: 0,
            },
            Instruction::SemSignal {
                sem: sem(3),
                op: SemOp::Set,
                value: 0,
            },
            Instruction::SemSignal {
                sem: sem(4),
                op: SemOp::Set,
                value: 0,
            },
            Instruction::End,
        ],
    );
    let mut entries = Vec::new();
    for (i, &(reload, tables)) in runs.iter().enumerate() {
        exec.submit(
            dev,
            &[
                (EngineKind::Pe, pe_prog),
                (EngineKind::Act, act_prog),
                (EngineKind::Sp, sp_prog),
            ],
            reload,
            tables,
            &[],
        );
        entries.extend(exec.wait(dev));
        if i + 1 < runs.len() {
            // Stage the same IO descriptors again for the next execution.
            assert_eq!(stage_io(&mut qin, &mut qout), (n_in, n_out));
        }
    }
    (dev.read(out, 0, M * N * 4), entries)
}

fn completions(entries: &[Notification]) -> Vec<(u64, u64, bool)> {
    entries
        .iter()
        .filter_map(|n| match *n {
            Notification::Completion {
                compute_idx,
                cycles,
                faulted,
                ..
            } => Some((compute_idx, cycles, faulted)),
            _ => None,
        })
        .collect()
}

#[test]
fn matmul_bias_relu_program_matches_an_f64_reference() {
    for target in [Target::Trn1, Target::Trn2] {
        let dev = Dev::new(target);
        let model = Mlp::new(7);
        let (out, entries) = run_mlp(&dev, &model, &[(true, true)]);
        let got = bytes_f32(&out);
        let want = model.reference();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (*g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()),
                "{target} out[{i}] = {g}, want {w}"
            );
        }
        assert!(
            got.iter().any(|v| *v > 0.0) && got.contains(&0.0),
            "relu did something"
        );
        let c = completions(&entries);
        assert_eq!(c.len(), 1, "{entries:?}");
        assert!(!c[0].2, "not faulted: {entries:?}");
        assert!(c[0].1 > 0);
    }
}

#[test]
fn skipping_the_config_reload_is_faster_and_changes_nothing() {
    let dev = Dev::new(Target::Trn1);
    let model = Mlp::new(11);
    let (out, entries) = run_mlp(&dev, &model, &[(true, true), (false, false), (true, true)]);
    let c = completions(&entries);
    assert_eq!(c.iter().map(|c| c.0).collect::<Vec<_>>(), [0, 1, 2]);
    assert!(
        c[1].1 < c[0].1,
        "skip-config run {} !< full run {}",
        c[1].1,
        c[0].1
    );
    assert_eq!(c[0].1, c[2].1, "same config, same cycles");
    let cfg = nrt_sim::TimingConfig::default();
    assert_eq!(
        c[0].1 - c[1].1,
        cfg.seq_config_reload_cycles + cfg.act_dve_table_load_cycles
    );
    // And the results are those of a single full run.
    let (single, _) = run_mlp(&Dev::new(Target::Trn1), &model, &[(true, true)]);
    assert_eq!(out, single);
}

#[test]
fn twenty_runs_give_identical_bytes_cycles_and_timelines() {
    let model = Mlp::new(3);
    let mut first = None;
    for _ in 0..20 {
        let dev = Dev::with(SimConfig::new(Target::Trn2).with_timeline());
        let (out, entries) = run_mlp(&dev, &model, &[(true, true), (false, false)]);
        let run = (
            out,
            completions(&entries),
            dev.sim.timeline_json(),
            dev.sim.now(),
        );
        match &first {
            None => first = Some(run),
            Some(f) => assert!(*f == run, "a run differed"),
        }
    }
    let (_, _, json, _) = first.unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let tracks: Vec<String> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap().to_string())
        .collect();
    for want in [
        "sequencer",
        "PE",
        "ACT",
        "SP",
        "dma e1.q0",
        "dma e2.q0",
        "dma e0.q13",
    ] {
        assert!(
            tracks.iter().any(|t| t == want),
            "no {want} track in {tracks:?}"
        );
    }
}

#[test]
fn dma_timing_follows_the_model_formula() {
    for target in [Target::Trn1, Target::Trn2] {
        let dev = Dev::with(SimConfig::new(target).with_timeline());
        let mut q = Queue::at(&dev, 0, 5, 2, 32);
        let len = 1u64 << 20;
        let src = dev.alloc(NC0, len);
        let dst = dev.alloc(NC0, len);
        let n = q.push(&dev, M2mCopy::new(dev.pa(src), dev.pa(dst), len));
        let t0 = dev.sim.now();
        q.start(&dev, n);
        let end = dev.sim.run_until_idle();
        // Per descriptor: fixed cost + bytes at the engine's bandwidth, at the SP clock.
        let s = target.spec();
        let per = nrt_sim::TimingConfig::default().dma_descriptor_cycles
            + ((65536u128 * s.clocks.sp as u128).div_ceil(s.dma_engine_bandwidth as u128)) as u64;
        assert_eq!(end - t0, 16 * per, "{target}");
        let spans = dev.sim.timeline_spans();
        let dma: Vec<_> = spans.iter().filter(|s| s.name == "dma x16").collect();
        assert_eq!(dma.len(), 1);
        assert_eq!((dma[0].start, dma[0].end), (t0, end));
    }
}

#[test]
fn an_unknown_instruction_reports_core_engine_opcode_and_index() {
    let dev = Dev::new(Target::Trn1);
    let mut exec = Exec::new(&dev, NC0);
    let mut bytes =
        nrt_hal::isa::encode_stream(&[Instruction::StreamHeader, Instruction::Nop]).unwrap();
    let mut raw = [0u8; 64];
    raw[0] = 0x50; // an opcode neither encoding defines
    raw[1] = 0x10;
    bytes.extend_from_slice(&raw);
    let h = dev.alloc(NC0, bytes.len() as u64);
    dev.write(h, 0, &bytes);
    exec.submit(&dev, &[(EngineKind::Dve, dev.pa(h))], true, true, &[]);
    let entries = exec.wait(&dev);
    assert_eq!(
        entries[0],
        Notification::ExecError {
            core: NC0,
            engine: EngineKind::Dve,
            compute_idx: 0,
            instruction_index: 2,
            opcode: 0x50,
            fault: ExecFault::UnknownOpcode,
        }
    );
    assert!(matches!(
        entries[1],
        Notification::Completion { faulted: true, .. }
    ));
    // The next execution on the core still runs.
    let ok = dev.program(NC0, &[Instruction::StreamHeader, Instruction::End]);
    exec.submit(&dev, &[(EngineKind::Sp, ok)], false, false, &[]);
    let entries = exec.wait(&dev);
    assert!(
        matches!(
            entries[..],
            [Notification::Completion {
                compute_idx: 1,
                faulted: false,
                ..
            }]
        ),
        "{entries:?}"
    );
}

#[test]
fn a_pseudo_instruction_left_unrelocated_is_malformed() {
    let dev = Dev::new(Target::Trn1);
    let mut exec = Exec::new(&dev, NC0);
    let p = dev.program(
        NC0,
        &[
            Instruction::StreamHeader,
            Instruction::PseudoWriteVar {
                var_id: 3,
                offset: 0,
                value: 1,
            },
            Instruction::End,
        ],
    );
    exec.submit(&dev, &[(EngineKind::Pool, p)], true, true, &[]);
    let entries = exec.wait(&dev);
    assert!(
        matches!(
            entries[0],
            Notification::ExecError {
                fault: ExecFault::Malformed,
                opcode: 0xF0,
                engine: EngineKind::Pool,
                instruction_index: 1,
                ..
            }
        ),
        "{entries:?}"
    );
}

#[test]
fn fault_plan_fails_the_nth_allocation() {
    let dev = Dev::with(SimConfig::new(Target::Trn1).with_faults(FaultPlan {
        fail_allocations: vec![3],
        ..FaultPlan::default()
    }));
    let req = |size| nrt_hal::hal::AllocRequest {
        size,
        align: 0,
        location: nrt_hal::hal::MemLocation::Device { channel: 0 },
        nc: NC0,
        category: nrt_hal::abi::MemAllocCategory::TensorsDevice,
    };
    let a = dev.sim.mem_alloc(&req(4096)).unwrap();
    let _b = dev.sim.mem_alloc(&req(4096)).unwrap();
    let before = dev.sim.memory_usage(NC0).unwrap();
    assert!(matches!(
        dev.sim.mem_alloc(&req(4096)),
        Err(HalError::OutOfMemory { .. })
    ));
    assert_eq!(dev.sim.memory_usage(NC0).unwrap(), before);
    dev.sim.mem_free(a).unwrap();
    assert!(dev.sim.mem_alloc(&req(4096)).is_ok());
}

#[test]
fn a_hung_engine_surfaces_as_a_timeout() {
    let dev = Dev::with(SimConfig::new(Target::Trn1).with_faults(FaultPlan {
        hung_engines: vec![(NC0, EngineKind::Act)],
        ..FaultPlan::default()
    }));
    let mut exec = Exec::new(&dev, NC0);
    let p = dev.program(NC0, &[Instruction::StreamHeader, Instruction::End]);
    exec.submit(
        &dev,
        &[(EngineKind::Act, p), (EngineKind::Sp, p)],
        true,
        true,
        &[],
    );
    let r = dev.sim.wait(
        &WaitCondition::Semaphore {
            nc: NC0,
            sem: nrt_hal::target::reserved::COMPLETION,
            cmp: SemCmp::Ge,
            value: 1,
        },
        Duration::from_millis(200),
    );
    assert!(matches!(r, Err(HalError::Timeout { .. })), "{r:?}");
    assert!(exec.nq.drain(&dev).is_empty());
}

#[test]
fn an_hbm_uncorrectable_error_faults_the_execution() {
    // Placement is deterministic: the first allocation of a fresh device is where the
    // harness puts W. Poison its 10th byte.
    let dev0 = Dev::new(Target::Trn1);
    let first = dev0.pa(dev0.alloc(NC0, 4096));
    let model = Mlp::new(5);
    let plan = FaultPlan {
        hbm_uncorrectable: vec![DeviceAddr::new(first.raw() + 10)],
        ..FaultPlan::default()
    };
    let dev = Dev::with(SimConfig::new(Target::Trn1).with_faults(plan));
    let (_, entries) = run_mlp(&dev, &model, &[(true, true)]);
    assert!(entries.iter().any(|n| matches!(n, Notification::HbmUncorrectable { address, .. } if address.raw() == first.raw() + 10)), "{entries:?}");
    assert!(
        matches!(
            entries.last(),
            Some(Notification::Completion { faulted: true, .. })
        ),
        "{entries:?}"
    );
}

#[test]
fn a_corrupted_completion_entry_is_reported_by_the_reader() {
    let dev = Dev::with(SimConfig::new(Target::Trn1).with_faults(FaultPlan {
        corrupt_completions: vec![1],
        ..FaultPlan::default()
    }));
    let mut exec = Exec::new(&dev, NC0);
    let p = dev.program(NC0, &[Instruction::StreamHeader, Instruction::End]);
    exec.submit(&dev, &[(EngineKind::Sp, p)], true, true, &[]);
    dev.wait_sem(NC0, nrt_hal::target::reserved::COMPLETION, 1);
    let bytes = dev.read(exec.nq.q.handle, 0, exec.nq.q.size as usize);
    assert!(matches!(
        exec.nq.reader.poll(&bytes),
        Err(NqError::UnknownKind { kind: 0xEE })
    ));
}

#[test]
fn notification_queues_wrap_and_report_overflow() {
    let dev = Dev::new(Target::Trn1);
    // A 128-byte queue holds 4 entries. Asking again for the same queue returns it unchanged,
    // as the driver does (docs/driver.md §6), so the harness below reuses it.
    let first = Nq::new(&dev, NC0, 128);
    let mut exec = Exec::new(&dev, NC0);
    assert_eq!(exec.nq.q, first.q);
    assert_eq!(exec.nq.q.size, 128);
    let p = dev.program(NC0, &[Instruction::StreamHeader, Instruction::End]);
    // Read one at a time: six entries wrap the four slots without loss.
    for i in 0..6u64 {
        exec.submit(&dev, &[(EngineKind::Sp, p)], false, false, &[]);
        let e = exec.wait(&dev);
        assert!(
            matches!(e[..], [Notification::Completion { compute_idx, .. }] if compute_idx == i),
            "{e:?}"
        );
    }
    // Fall six behind: the producer laps the reader, which reports exactly what it lost.
    for _ in 0..6 {
        exec.submit(&dev, &[(EngineKind::Sp, p)], false, false, &[]);
    }
    dev.wait_sem(NC0, nrt_hal::target::reserved::COMPLETION, 12);
    let bytes = dev.read(exec.nq.q.handle, 0, 128);
    assert_eq!(
        exec.nq.reader.poll(&bytes),
        Err(NqError::Overflow { lost: 2 })
    );
    let rest: Vec<_> = std::iter::from_fn(|| exec.nq.reader.poll(&bytes).unwrap()).collect();
    assert_eq!(
        completions(&rest).iter().map(|c| c.0).collect::<Vec<_>>(),
        [8, 9, 10, 11]
    );
}

#[test]
fn an_execution_block_rewinds_a_static_ring_and_semaphores_restart_at_zero() {
    use nrt_hal::target::QueueReg;
    let dev = Dev::new(Target::Trn2);
    let t = dev.target;
    let mut exec = Exec::new(&dev, NC0);
    // A static model queue: one copy and a semaphore poke, built once with ring id 1.
    let mut q = Queue::at(&dev, 0, 1, 0, 32);
    let src = dev.alloc(NC0, 4096);
    let dst = dev.alloc(NC0, 4096);
    dev.write(src, 0, &[0xAB; 64]);
    let one = dev.word(NC0, 1);
    let inc5 = t.semaphore_addr(NC0, sem(5), SemWindow::Increment).unwrap();
    let n = q.push(&dev, M2mCopy::new(dev.pa(src), dev.pa(dst), 64)) + q.poke(&dev, one, inc5);
    assert_eq!(n, 2);
    let reset = dev.word(NC0, nrt_hal::target::udma_regs::Q_SW_CTRL_RESET);
    let count = dev.word(NC0, n);
    let mut kick = Vec::new();
    for dir in [Direction::Rx, Direction::Tx] {
        let r = t.queue_reg_addr(q.q, dir, QueueReg::SwCtrl).unwrap();
        kick.push(M2mCopy::new(reset, r, 4));
    }
    for dir in [Direction::Rx, Direction::Tx] {
        kick.push(M2mCopy::new(count, q.tail_inc(&dev, dir), 4));
    }
    let sp = dev.program(
        NC0,
        &[
            Instruction::StreamHeader,
            Instruction::SemWait {
                sem: sem(5),
                cmp: SemCmp::Eq,
                value: 1,
            },
            Instruction::End,
        ],
    );
    for run in 0..3 {
        dev.write(dst, 0, &[0; 64]);
        exec.submit(&dev, &[(EngineKind::Sp, sp)], run == 0, run == 0, &kick);
        let e = exec.wait(&dev);
        assert!(
            matches!(e[..], [Notification::Completion { faulted: false, .. }]),
            "run {run}: {e:?}"
        );
        assert_eq!(
            dev.read(dst, 0, 64),
            vec![0xAB; 64],
            "run {run} moved the data again"
        );
        // The semaphore was reset at the start of the execution, so it is exactly 1 again.
        assert_eq!(dev.sim.semaphore_read(NC0, sem(5)).unwrap(), 1);
    }
    // Without the rewind the second pass would meet stale ring ids.
    let st = dev.sim.dma_queue_state(q.q).unwrap();
    assert_eq!(
        (st.tx_head, st.rx_head, st.status),
        (2, 2, QueueStatus::Enabled)
    );
}

#[test]
fn dma_moves_between_hbm_host_memory_and_psum() {
    use nrt_hal::abi::MemAllocCategory;
    use nrt_hal::hal::{AllocRequest, MemLocation};
    let dev = Dev::new(Target::Trn1);
    let host = dev
        .sim
        .mem_alloc(&AllocRequest {
            size: 4096,
            align: 0,
            location: MemLocation::Host,
            nc: NC0,
            category: MemAllocCategory::TensorsHost,
        })
        .unwrap();
    let host_pa = dev.pa(host);
    assert!(dev.target.is_host_addr(host_pa));
    let a = dev.alloc(NC0, 4096);
    let b = dev.alloc(NC0, 4096);
    dev.write(a, 0, &[7; 128]);
    let psum = dev.target.psum_addr(NC0, 100, 0x40).unwrap();
    let mut q = Queue::at(&dev, 0, 6, 6, 32);
    let mut n = q.push(&dev, M2mCopy::new(dev.pa(a), host_pa, 128));
    n += q.push(&dev, M2mCopy::new(host_pa, psum, 128));
    n += q.push(&dev, M2mCopy::new(psum, dev.pa(b), 128));
    q.start(&dev, n);
    dev.sim
        .wait(
            &WaitCondition::Memory32 {
                handle: b,
                offset: 124,
                cmp: SemCmp::Eq,
                value: 0x0707_0707,
            },
            TIMEOUT,
        )
        .unwrap();
    assert_eq!(dev.read(host, 0, 128), vec![7; 128]);
    assert_eq!(dev.read(b, 0, 128), vec![7; 128]);
    // PSUM partitions hold 16 KiB: a copy running past one faults.
    let mut nq = Nq::new(&dev, NC0, 4096);
    let late = dev.target.psum_addr(NC0, 1, 16 * 1024 - 64).unwrap();
    let n = q.push(&dev, M2mCopy::new(dev.pa(a), late, 128));
    q.start(&dev, n);
    dev.sim.run_until_idle();
    assert_eq!(only_dma_fault(&nq.drain(&dev)), DmaFault::AddressFault);
}

#[test]
fn a_core_shares_its_hbm_bandwidth_between_its_dma_engines() {
    // 16 engines × 1 MiB at once: the per-core HBM share (820 GB/s / 2 on trn1) caps the
    // aggregate below 16 × the per-engine rate.
    let dev = Dev::new(Target::Trn1);
    let len = 1u64 << 20;
    let mut queues = Vec::new();
    for e in 0..16 {
        let mut q = Queue::at(&dev, 0, e, 3, 32);
        let s = dev.alloc(NC0, len);
        let d = dev.alloc(NC0, len);
        let n = q.push(&dev, M2mCopy::new(dev.pa(s), dev.pa(d), len));
        queues.push((q, n));
    }
    let t0 = dev.sim.now();
    for (q, n) in &queues {
        q.start(&dev, *n);
    }
    let elapsed = dev.sim.run_until_idle() - t0;
    let s = Target::Trn1.spec();
    let f = s.clocks.sp as f64;
    let hbm_bound = 16.0 * len as f64 * f / (s.hbm_bandwidth as f64 / 2.0);
    let engine_bound = len as f64 * f / s.dma_engine_bandwidth as f64;
    assert!(
        elapsed as f64 >= hbm_bound,
        "{elapsed} < HBM bound {hbm_bound}"
    );
    assert!(
        (elapsed as f64) < hbm_bound * 1.02 + 16.0 * 32.0,
        "{elapsed} far above {hbm_bound}"
    );
    assert!(elapsed as f64 > engine_bound * 1.05, "HBM cap not binding");
}

#[test]
fn core_reset_restores_power_on_state_and_frees_notification_queues() {
    let dev = Dev::new(Target::Trn1);
    let base = dev.sim.memory_usage(NC0).unwrap();
    let _nq = Nq::new(&dev, NC0, 4096);
    let q = Queue::at(&dev, 0, 2, 2, 32);
    dev.sim.semaphore_write(NC0, sem(4), 9).unwrap();
    dev.sim.event_set(NC0, EventId(7), 1).unwrap();
    dev.sim.semaphore_write(NcIndex(1), sem(4), 3).unwrap();
    let with_nq = dev.sim.memory_usage(NC0).unwrap();
    assert!(with_nq.host_bytes() > base.host_bytes());
    dev.sim.nc_reset(1).unwrap();
    assert_eq!(dev.sim.semaphore_read(NC0, sem(4)).unwrap(), 0);
    assert_eq!(dev.sim.event_get(NC0, EventId(7)).unwrap(), 0);
    assert_eq!(
        dev.sim.semaphore_read(NcIndex(1), sem(4)).unwrap(),
        3,
        "core 1 untouched"
    );
    assert_eq!(
        dev.sim.dma_queue_state(q.q).unwrap().status,
        QueueStatus::Disabled
    );
    assert_eq!(
        dev.sim.memory_usage(NC0).unwrap().host_bytes(),
        base.host_bytes(),
        "the NQ memory was freed"
    );
}
