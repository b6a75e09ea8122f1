//! Unit tests of the recorder over the simulator.

use super::*;
use nrt_hal::udma::LenCtrlFlags;
use nrt_hal::udma::{RxDesc, TxDesc, TxMeta};
use nrt_hal::DeviceAddr;
use nrt_hal::{DmaEngine, QueueId};
use nrt_sim::{Sim, SimConfig};

fn recorder(target: Target) -> Recorder {
    Recorder::new(Arc::new(Sim::new(SimConfig::new(target)))).unwrap()
}

fn alloc(r: &Recorder, nc: u32, size: u64, category: MemAllocCategory) -> MemHandle {
    r.mem_alloc(&AllocRequest {
        size,
        align: 0,
        location: MemLocation::Device { channel: nc },
        nc: NcIndex(nc),
        category,
    })
    .unwrap()
}

fn pair(r: &Recorder, tx: MemHandle, rx: MemHandle, slot: u64, src: u64, dst: u64, len: u64) {
    let t = TxDesc::new(
        len,
        1,
        LenCtrlFlags::FIRST | LenCtrlFlags::LAST,
        TxMeta::M2M,
        DeviceAddr::new(src),
    )
    .unwrap();
    let d = RxDesc::new(len, 1, LenCtrlFlags::empty(), DeviceAddr::new(dst)).unwrap();
    r.copy_to_device(tx, slot * 16, &t.to_bytes()).unwrap();
    r.copy_to_device(rx, slot * 16, &d.to_bytes()).unwrap();
}

/// Initialises `q` with 32-entry rings at `tx` and `rx`.
fn init_queue(r: &Recorder, q: QueueRef, tx: MemHandle, rx: MemHandle) {
    let ring = |handle| RingSpec { handle, count: 32 };
    r.dma_queue_init(q, ring(tx), ring(rx)).unwrap();
}

fn pa(r: &Recorder, h: MemHandle) -> u64 {
    r.mem_info(h).unwrap().pa.raw()
}

#[test]
fn static_rings_are_decoded_at_init_and_at_copy_start() {
    let r = recorder(Target::Trn1);
    let t = Target::Trn1;
    let one = alloc(&r, 0, 4096, MemAllocCategory::MiscDevice);
    r.copy_to_device(one, 0, &1u32.to_le_bytes()).unwrap();
    let src = alloc(&r, 0, 4096, MemAllocCategory::TensorsDevice);
    let dst = alloc(&r, 0, 4096, MemAllocCategory::TensorsDevice);
    let tx = alloc(&r, 0, 512, MemAllocCategory::DmaRingsDevice);
    let rx = alloc(&r, 0, 512, MemAllocCategory::DmaRingsDevice);
    let (s, d) = (pa(&r, src), pa(&r, dst));
    for i in 0..3 {
        pair(&r, tx, rx, i, s + 0x100 * i, d + 0x100 * i, 0x100);
    }
    let inc = t
        .semaphore_addr(
            NcIndex(0),
            SemaphoreId(5),
            nrt_hal::target::SemWindow::Increment,
        )
        .unwrap();
    pair(&r, tx, rx, 3, pa(&r, one), inc.raw(), 4);
    let q = QueueRef::new(NcIndex(0), DmaEngine(1), QueueId(2));
    init_queue(&r, q, tx, rx);
    r.dma_queue_copy_start(q, 4, 4).unwrap();
    r.wait(
        &WaitCondition::Semaphore {
            nc: NcIndex(0),
            sem: SemaphoreId(5),
            cmp: nrt_hal::isa::SemCmp::Ge,
            value: 1,
        },
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!(r.semaphore_read(NcIndex(0), SemaphoreId(5)).unwrap(), 1);
    let text = r.take().text();
    let q_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("nc0 q e1.q2 "))
        .collect();
    assert_eq!(
        q_lines,
        vec![
            "nc0 q e1.q2 init tx=#4 rx=#5 count=32",
            "nc0 q e1.q2 tx[0..=2] len=256 id=1 FIRST|LAST meta=m2m src=#2+0x0 step=+0x100",
            "nc0 q e1.q2 rx[0..=2] len=256 id=1 dst=#3+0x0 step=+0x100",
            "nc0 q e1.q2 tx[3] len=4 id=1 FIRST|LAST meta=m2m src=#1+0x0",
            "nc0 q e1.q2 rx[3] len=4 id=1 dst=sem_inc[nc0:5] <- 0x1",
            "nc0 q e1.q2 copy_start tx+=4 rx+=4",
            "nc0 q e1.q2 tx[0] len=256 id=1 FIRST|LAST meta=m2m src=#2+0x0",
            "nc0 q e1.q2 rx[0] len=256 id=1 dst=#3+0x0",
            "nc0 q e1.q2 tx[1] len=256 id=1 FIRST|LAST meta=m2m src=#2+0x100",
            "nc0 q e1.q2 rx[1] len=256 id=1 dst=#3+0x100",
            "nc0 q e1.q2 tx[2] len=256 id=1 FIRST|LAST meta=m2m src=#2+0x200",
            "nc0 q e1.q2 rx[2] len=256 id=1 dst=#3+0x200",
            "nc0 q e1.q2 tx[3] len=4 id=1 FIRST|LAST meta=m2m src=#1+0x0",
            "nc0 q e1.q2 rx[3] len=4 id=1 dst=sem_inc[nc0:5] <- 0x1",
        ]
    );
    assert!(text.contains("nc0 wait sem[nc0:5] >= 1 -> ok\n"), "{text}");
    assert!(text.contains("nc0 sem sem[nc0:5] read -> 1\n"), "{text}");
    assert!(text.contains("nc0 mem write #1+0x0 [0x1]\n"), "{text}");
    assert!(
        text.contains("nc0 mem write #4+0x30 len=0x10 descriptors\n"),
        "{text}"
    );
    assert!(!text.contains('?'), "{text}");
}

#[test]
fn a_doorbell_with_nothing_staged_says_so() {
    let r = recorder(Target::Trn1);
    let tx = alloc(&r, 0, 512, MemAllocCategory::DmaRingsDevice);
    let rx = alloc(&r, 0, 512, MemAllocCategory::DmaRingsDevice);
    let q = QueueRef::new(
        NcIndex(0),
        reserved::HW_EXEC_ENGINE,
        reserved::HW_EXEC_QUEUE,
    );
    init_queue(&r, q, tx, rx);
    r.semaphore_increment(NcIndex(0), reserved::INFERENCE_START, 1)
        .unwrap();
    let text = r.take().text();
    assert!(text.contains("nc0 doorbell +1\n"), "{text}");
    assert!(
        text.contains("nc0 q e0.q13 <not staged: tx[0] ring id 0 (expected 1), rx[0] ring id 0 (expected 1)>\n"),
        "{text}"
    );
}

#[test]
fn every_other_call_is_rendered_without_handles_or_addresses() {
    let r = recorder(Target::Trn1);
    let nc = NcIndex(1);
    let h = alloc(&r, 1, 100, MemAllocCategory::TensorsDevice);
    let mut buf = [0u8; 8];
    r.copy_from_device(h, 8, &mut buf).unwrap();
    r.memset(h, 0, 0xab, 16).unwrap();
    // SAFETY: the mapping is unmapped at once and never dereferenced.
    let m = unsafe { r.map(h) }.unwrap();
    // SAFETY: `m` came from `map` above.
    unsafe { r.unmap(m) }.unwrap();
    r.semaphore_write(nc, SemaphoreId(3), 7).unwrap();
    r.semaphore_increment(nc, SemaphoreId(3), 2).unwrap();
    r.semaphore_decrement(nc, SemaphoreId(3), 1).unwrap();
    r.event_set(nc, EventId(4), 1).unwrap();
    assert_eq!(r.event_get(nc, EventId(4)).unwrap(), 1);
    let req = NqRequest {
        nc,
        nq_type: nrt_hal::abi::NqType::Notify,
        engine_index: 0,
        size: 4096,
        location: MemLocation::Host,
    };
    let a = r.notification_init(&req).unwrap();
    let b = r.notification_init(&req).unwrap();
    assert_eq!(a, b);
    r.wait(
        &WaitCondition::Semaphore {
            nc,
            sem: SemaphoreId(3),
            cmp: nrt_hal::isa::SemCmp::Ge,
            value: 8,
        },
        Duration::from_millis(1),
    )
    .unwrap();
    let e = r.wait(
        &WaitCondition::Memory32 {
            handle: h,
            offset: 0,
            cmp: nrt_hal::isa::SemCmp::Eq,
            value: 5,
        },
        Duration::from_millis(1),
    );
    assert!(e.is_err());
    r.nc_reset(0b10).unwrap();
    r.mem_free(h).unwrap();
    assert!(r.mem_free(h).is_err());
    let text = r.take().text();
    for line in [
        "nc1 mem alloc #1 tensors_device ch1 size=0x64",
        "nc1 mem read #1+0x8 len=0x8",
        "nc1 mem memset #1+0x0 len=0x10 value=0xab",
        "nc1 mem map #1",
        "nc1 mem unmap #1",
        "nc1 mem free #1",
        "nc1 nq init notify[0] host size=0x1000 -> #2",
        "nc1 nq init notify[0] host size=0x1000 -> #2 (existing)",
        "nc1 sem sem[nc1:3] = 7",
        "nc1 sem sem[nc1:3] += 2",
        "nc1 sem sem[nc1:3] -= 1",
        "nc1 evt evt[nc1:4] = 1",
        "nc1 evt evt[nc1:4] read -> 1",
        "nc1 wait sem[nc1:3] >= 8 -> ok",
        "nc1 wait [#1+0x0] == 0x5 -> err timeout",
        "nc1 reset nc_reset",
        "dev mem free ? -> err invalid_argument(mem_free)",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in:\n{text}"
        );
    }
    let calls = r.calls();
    assert_eq!(calls["mem_free"], 2);
    assert_eq!(calls["notification_init"], 2);
}

#[test]
fn threads_on_different_cores_cannot_reorder_the_trace() {
    let run = || {
        let r = Arc::new(recorder(Target::Trn1));
        std::thread::scope(|s| {
            for nc in 0..2u32 {
                let r = r.clone();
                s.spawn(move || {
                    for i in 0..50u32 {
                        let h = alloc(&r, nc, 4096, MemAllocCategory::TensorsDevice);
                        r.copy_to_device(h, 0, &i.to_le_bytes()).unwrap();
                        r.semaphore_increment(NcIndex(nc), SemaphoreId(i % 7), 1)
                            .unwrap();
                    }
                });
            }
        });
        r.take().text()
    };
    let first = run();
    assert_eq!(first.lines().count(), 2 * 50 * 3);
    for _ in 0..5 {
        assert_eq!(run(), first);
    }
}
