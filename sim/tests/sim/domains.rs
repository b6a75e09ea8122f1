//! Clock domains (docs/simulator.md §8.1): cores of different domains simulate on different
//! host threads without changing a byte or a cycle, a store from one domain into another's
//! registers arrives at the receiver's clock, and a load from another domain is refused.

use nrt_hal::hal::{QueueStatus, WaitCondition};
use nrt_hal::isa::SemCmp;
use nrt_hal::target::SemWindow;
use nrt_hal::udma::M2mCopy;
use nrt_hal::{Hal, NcIndex, SemaphoreId, Target};
use nrt_sim::testkit::*;
use nrt_sim::timeline::Span;
use nrt_sim::{SimConfig, SimStats};

const DONE: SemaphoreId = SemaphoreId(3);
const LEN: usize = 48 * 1024;

/// What one run of [`copy_on_every_core`] produced.
struct Run {
    outputs: Vec<Vec<u8>>,
    now: u64,
    spans: Vec<(String, u64, u64, String)>,
    stats: SimStats,
}

/// On each trn1 core, a DMA queue copies `LEN` bytes between two HBM buffers and then pokes
/// the core's `DONE` semaphore; each core is waited for from a thread of its own.
fn copy_on_every_core(cores_per_domain: u32) -> Run {
    let mut cfg = SimConfig::new(Target::Trn1).with_timeline();
    cfg.cores_per_domain = cores_per_domain;
    let dev = Dev::with(cfg);
    let t = dev.target;
    let cores = [NcIndex(0), NcIndex(1)];
    let mut dsts = Vec::new();
    for nc in cores {
        let src = dev.alloc(nc, LEN as u64);
        let data: Vec<u8> = (0..LEN)
            .map(|i| (i * 7 + nc.0 as usize * 13) as u8)
            .collect();
        dev.write(src, 0, &data);
        let dst = dev.alloc(nc, LEN as u64);
        let mut q = Queue::at(&dev, nc.0, 1, 0, 64);
        let mut n = q.push(&dev, M2mCopy::new(dev.pa(src), dev.pa(dst), LEN as u64));
        let one = dev.word(nc, 1);
        n += q.poke(
            &dev,
            one,
            t.semaphore_addr(nc, DONE, SemWindow::Increment).unwrap(),
        );
        q.start(&dev, n);
        dsts.push(dst);
    }
    std::thread::scope(|s| {
        for nc in cores {
            let dev = &dev;
            s.spawn(move || dev.wait_sem(nc, DONE, 1));
        }
    });
    // A wait returns as soon as its condition holds, and how far a unit ran ahead inline by
    // then depends on what else its scheduler holds; let the device finish before comparing.
    dev.sim.run_until_idle();
    let mut spans: Vec<_> = dev
        .sim
        .timeline_spans()
        .into_iter()
        .map(
            |Span {
                 track,
                 name,
                 start,
                 end,
             }| (format!("{track:?}"), start, end, name),
        )
        .collect();
    spans.sort();
    Run {
        outputs: dsts.iter().map(|&h| dev.read(h, 0, LEN)).collect(),
        now: dev.sim.now(),
        spans,
        stats: dev.sim.stats(),
    }
}

#[test]
fn per_core_domains_change_no_byte_or_cycle() {
    let shared = copy_on_every_core(2);
    assert_eq!(
        Dev::with({
            let mut c = SimConfig::new(Target::Trn1);
            c.cores_per_domain = 2;
            c
        })
        .sim
        .clock_domains(),
        1
    );
    assert_eq!(
        Dev::new(Target::Trn1).sim.clock_domains(),
        2,
        "trn1 default"
    );
    assert_eq!(
        Dev::new(Target::Trn2).sim.clock_domains(),
        4,
        "trn2 default: LNC pairs"
    );
    for _ in 0..3 {
        let split = copy_on_every_core(1);
        assert!(
            split.outputs == shared.outputs,
            "per-core domains changed the bytes"
        );
        assert_eq!(
            (split.now, &split.spans, &split.stats),
            (shared.now, &shared.spans, &shared.stats),
            "per-core domains changed the cycles, timeline or counters"
        );
    }
    assert!(!shared.spans.is_empty() && shared.now > 0);
    assert_eq!(shared.stats.descriptors, 4);
}

#[test]
fn a_store_into_another_domain_arrives_and_a_load_from_one_is_refused() {
    let dev = Dev::new(Target::Trn1);
    let t = dev.target;
    let (nc0, nc1) = (NcIndex(0), NcIndex(1));
    // Core 0's DMA increments core 1's semaphore 5 by 7. Nobody steps core 0 but the wait on
    // core 1, which finds its own domain idle and helps.
    let mut q = Queue::at(&dev, 0, 2, 0, 32);
    let seven = dev.word(nc0, 7);
    let inc = t
        .semaphore_addr(nc1, SemaphoreId(5), SemWindow::Increment)
        .unwrap();
    let n = q.poke(&dev, seven, inc);
    q.start(&dev, n);
    dev.sim
        .wait(
            &WaitCondition::Semaphore {
                nc: nc1,
                sem: SemaphoreId(5),
                cmp: SemCmp::Ge,
                value: 7,
            },
            TIMEOUT,
        )
        .unwrap();
    assert_eq!(dev.sim.semaphore_read(nc1, SemaphoreId(5)).unwrap(), 7);
    assert_eq!(dev.sim.semaphore_read(nc0, SemaphoreId(5)).unwrap(), 0);
    assert_eq!(dev.sim.stats().failed_cross_domain_stores, 0);

    // Core 0's DMA reading core 1's semaphore: refused, the queue stops.
    let mut q = Queue::at(&dev, 0, 3, 0, 32);
    let read = t
        .semaphore_addr(nc1, SemaphoreId(5), SemWindow::Read)
        .unwrap();
    let n = q.poke(&dev, read, dev.word(nc0, 0));
    q.start(&dev, n);
    dev.sim.run_until_idle();
    assert_eq!(
        dev.sim.dma_queue_state(q.q).unwrap().status,
        QueueStatus::Aborted
    );
    // The host reads any core's registers (each through its own domain).
    assert_eq!(dev.sim.load32(read).unwrap(), 7);
}
