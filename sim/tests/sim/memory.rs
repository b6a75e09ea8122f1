//! Tests of the simulator's device memory: the driver-like allocator (docs/driver.md §8.2), deterministic
//! per-core placement, accounting, the sparse backing store, address-based access, poisoning and
//! on-chip memory.

use std::collections::BTreeMap;
use std::sync::{Barrier, Mutex};

use nrt_hal::abi::MemAllocCategory;
use nrt_hal::hal::{AllocRequest, CoreMemUsage, MemLocation};
use nrt_hal::{DeviceAddr, HalError, MemHandle, NcIndex, Target};
use nrt_sim::memory::{
    DeviceMemory, MemFault, MemoryConfig, OnChip, OnChipAddr, OnChipSpace, SlotHint,
};
use proptest::prelude::*;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn mem(target: Target) -> DeviceMemory {
    DeviceMemory::new(target, MemoryConfig::default())
}

fn dev(channel: u32) -> MemLocation {
    MemLocation::Device { channel }
}

fn req(nc: u32, location: MemLocation, size: u64) -> AllocRequest {
    AllocRequest {
        size,
        align: 0,
        location,
        nc: NcIndex(nc),
        category: if location == MemLocation::Host {
            MemAllocCategory::TensorsHost
        } else {
            MemAllocCategory::TensorsDevice
        },
    }
}

fn pa(m: &DeviceMemory, h: MemHandle) -> u64 {
    m.info(h).unwrap().pa.raw()
}

fn alloc_pa(m: &mut DeviceMemory, r: AllocRequest) -> (MemHandle, u64) {
    let h = m.alloc(&r).unwrap();
    (h, pa(m, h))
}

fn is_invalid<T: std::fmt::Debug>(r: Result<T, HalError>) -> bool {
    matches!(r, Err(HalError::InvalidArgument { .. }))
}

#[test]
fn first_trn1_allocations_sit_after_the_16mib_carve_out() {
    let mut m = mem(Target::Trn1);
    let (_, a0) = alloc_pa(&mut m, req(0, dev(0), MIB));
    let (_, a1) = alloc_pa(&mut m, req(1, dev(1), MIB));
    assert_eq!(a0, 0x100_0000);
    assert_eq!(a1, 0x10_0100_0000);
}

#[test]
fn alloc_base_offset_shifts_every_pool() {
    let off = 0x2_0000;
    let mut m = DeviceMemory::new(
        Target::Trn1,
        MemoryConfig {
            alloc_base_offset: off,
        },
    );
    assert_eq!(m.config().alloc_base_offset, off);
    assert_eq!(alloc_pa(&mut m, req(0, dev(0), MIB)).1, 0x100_0000 + off);
    assert_eq!(
        alloc_pa(&mut m, req(1, dev(1), MIB)).1,
        0x10_0100_0000 + off
    );
    // Small pool and host window shift by the same amount.
    assert_eq!(
        alloc_pa(&mut m, req(0, dev(0), 4 * KIB)).1,
        0x3_C000_0000 + off
    );
    assert_eq!(
        alloc_pa(&mut m, req(0, MemLocation::Host, 4 * KIB)).1,
        0x1000_0000_0000 + off
    );
    // Not a page multiple: rounded down.
    let m = DeviceMemory::new(
        Target::Trn1,
        MemoryConfig {
            alloc_base_offset: 0x1fff,
        },
    );
    assert_eq!(m.config().alloc_base_offset, 0x1000);
}

#[test]
fn sizes_round_up_to_pages() {
    let mut m = mem(Target::Trn1);
    let (h, a) = alloc_pa(&mut m, req(0, dev(0), 1));
    assert_eq!(m.info(h).unwrap().size, 4096);
    let u = m.usage(NcIndex(0));
    assert_eq!(
        u.by_category[MemAllocCategory::TensorsDevice as usize],
        4096
    );
    assert_eq!(u.allocations, 1);
    let (h2, a2) = alloc_pa(&mut m, req(0, dev(0), 4097));
    assert_eq!(a2, a + 4096);
    assert_eq!(m.info(h2).unwrap().size, 8192);
    assert!(is_invalid(m.alloc(&req(0, dev(0), 0))));
}

#[test]
fn large_alignment_is_honoured_and_bad_alignment_refused() {
    let mut m = mem(Target::Trn1);
    let (_, a) = alloc_pa(&mut m, req(0, dev(0), MIB + 4 * KIB));
    assert_eq!(a, 0x100_0000);
    let mut r = req(0, dev(0), MIB);
    r.align = 16 * MIB;
    let (_, b) = alloc_pa(&mut m, r);
    assert_eq!(b % (16 * MIB), 0);
    assert_eq!(b, 0x200_0000);
    // The gap left by alignment is reused.
    assert_eq!(alloc_pa(&mut m, req(0, dev(0), MIB)).1, a + MIB + 4 * KIB);
    // ≤ 4 KiB is implicit, whatever its value.
    let mut r = req(0, dev(0), MIB);
    r.align = 3;
    assert!(m.alloc(&r).is_ok());
    let mut r = req(0, dev(0), MIB);
    r.align = 0x3000;
    assert!(is_invalid(m.alloc(&r)));
    r.align = 1 << 31;
    assert!(is_invalid(m.alloc(&r)));
}

#[test]
fn small_requests_use_the_top_gib_and_large_the_main_pool() {
    let mut m = mem(Target::Trn1);
    assert_eq!(alloc_pa(&mut m, req(0, dev(0), 512 * KIB)).1, 0x3_C000_0000);
    assert_eq!(
        alloc_pa(&mut m, req(0, dev(0), 512 * KIB + 1)).1,
        0x100_0000
    );
    assert_eq!(alloc_pa(&mut m, req(0, dev(0), 4 * KIB)).1, 0x3_C008_0000);
    assert_eq!(alloc_pa(&mut m, req(1, dev(1), 4 * KIB)).1, 0x13_C000_0000);

    // trn2: channel 0 is split between cores 0 and 1; each half has a 512 MiB small pool.
    let mut m = mem(Target::Trn2);
    let half = (24 * GIB - 16 * MIB) / 2;
    let c0_end = 0x100_0000 + half;
    assert_eq!(alloc_pa(&mut m, req(0, dev(0), MIB)).1, 0x100_0000);
    assert_eq!(
        alloc_pa(&mut m, req(0, dev(0), 4 * KIB)).1,
        c0_end - 512 * MIB
    );
    assert_eq!(alloc_pa(&mut m, req(1, dev(0), MIB)).1, c0_end);
    assert_eq!(
        alloc_pa(&mut m, req(1, dev(0), 4 * KIB)).1,
        0x6_0000_0000 - 512 * MIB
    );
    // Cores 2 and 3 share channel 1.
    assert_eq!(alloc_pa(&mut m, req(2, dev(1), MIB)).1, 0x40_0100_0000);
    // A request for a channel that is not the core's home uses the first home core's slice.
    assert_eq!(alloc_pa(&mut m, req(7, dev(0), MIB)).1, 0x100_0000 + MIB);
}

#[test]
fn pools_fall_back_to_each_other() {
    let mut m = mem(Target::Trn1);
    let main_size = 0x3_C000_0000 - 0x100_0000;
    let (big, a) = alloc_pa(&mut m, req(0, dev(0), main_size));
    assert_eq!(a, 0x100_0000);
    // Main pool full: a large request falls back to the small pool.
    let (_, b) = alloc_pa(&mut m, req(0, dev(0), MIB));
    assert_eq!(b, 0x3_C000_0000);
    let (_, c) = alloc_pa(&mut m, req(0, dev(0), GIB - MIB));
    assert_eq!(c, 0x3_C010_0000);
    assert!(matches!(
        m.alloc(&req(0, dev(0), 4 * KIB)),
        Err(HalError::OutOfMemory {
            requested: 4096,
            ..
        })
    ));
    // Small pool full: a small request falls back to the main pool.
    m.free(big).unwrap();
    assert_eq!(alloc_pa(&mut m, req(0, dev(0), 4 * KIB)).1, 0x100_0000);
}

#[test]
fn contiguous_scratchpad_grows_down_from_the_end_of_the_main_pool() {
    let mut m = mem(Target::Trn1);
    let mut r = req(0, dev(0), MIB);
    r.category = MemAllocCategory::ContiguousScratchpadDevice;
    let (_, a) = alloc_pa(&mut m, r);
    assert_eq!(a, 0x3_C000_0000 - MIB);
    r.size = 2 * MIB;
    let (_, b) = alloc_pa(&mut m, r);
    assert_eq!(b, 0x3_C000_0000 - 3 * MIB);
    // Even small scratchpad requests stay in the main pool.
    r.size = 4 * KIB;
    assert_eq!(alloc_pa(&mut m, r).1, 0x3_C000_0000 - 3 * MIB - 4 * KIB);
    // Ordinary allocations are unaffected.
    assert_eq!(alloc_pa(&mut m, req(0, dev(0), MIB)).1, 0x100_0000);
    assert_eq!(
        m.usage(NcIndex(0)).by_category[MemAllocCategory::ContiguousScratchpadDevice as usize],
        3 * MIB + 4 * KIB
    );
}

#[test]
fn host_memory_lives_in_the_host_window() {
    let mut m = mem(Target::Trn1);
    let mut r = req(0, MemLocation::Host, 4 * KIB);
    r.align = 4096;
    assert!(is_invalid(m.alloc(&r)));
    r.align = 0;
    let (h, a) = alloc_pa(&mut m, r);
    let s = Target::Trn1.spec();
    assert_eq!(a, s.host_window_base.raw());
    assert!(Target::Trn1.is_host_addr(DeviceAddr::new(a)));
    assert_eq!(m.info(h).unwrap().location, MemLocation::Host);
    let (_, b) = alloc_pa(&mut m, req(1, MemLocation::Host, 3 * MIB));
    assert_eq!(b, s.host_window_base.raw() + 32 * GIB);
    assert!(Target::Trn1.is_host_addr(DeviceAddr::new(b + 3 * MIB - 1)));

    let mut m = mem(Target::Trn2);
    let (_, c) = alloc_pa(&mut m, req(3, MemLocation::Host, MIB));
    assert_eq!(c, 0x4000_0000_0000 + 3 * 8 * GIB);
    assert!(matches!(
        m.alloc(&req(3, MemLocation::Host, 8 * GIB + 4096)),
        Err(HalError::OutOfMemory {
            location: MemLocation::Host,
            ..
        })
    ));
}

#[test]
fn bad_core_or_channel_is_refused() {
    let mut m = mem(Target::Trn1);
    assert!(is_invalid(m.alloc(&req(0, dev(2), MIB))));
    assert!(is_invalid(m.alloc(&req(2, dev(0), MIB))));
    assert!(is_invalid(m.alloc(&req(2, MemLocation::Host, MIB))));
    let mut m = mem(Target::Trn2);
    assert!(is_invalid(m.alloc(&req(8, dev(0), MIB))));
    assert!(is_invalid(m.alloc(&req(0, dev(4), MIB))));
    assert_eq!(m.live_allocations(), 0);
}

#[test]
fn handles_start_at_one_and_recycle_lifo() {
    let mut m = mem(Target::Trn1);
    let h: Vec<u64> = (0..3)
        .map(|_| m.alloc(&req(0, dev(0), MIB)).unwrap().raw())
        .collect();
    assert_eq!(h, [1, 2, 3]);
    let handle = |n| MemHandle::new(n).unwrap();
    m.free(handle(2)).unwrap();
    assert_eq!(m.alloc(&req(0, dev(0), MIB)).unwrap().raw(), 2);
    m.free(handle(1)).unwrap();
    m.free(handle(3)).unwrap();
    assert_eq!(m.alloc(&req(0, dev(0), MIB)).unwrap().raw(), 3);
    assert_eq!(m.alloc(&req(0, dev(0), MIB)).unwrap().raw(), 1);
    assert_eq!(m.alloc(&req(0, dev(0), MIB)).unwrap().raw(), 4);
    assert_eq!(m.live_allocations(), 4);
    // Unknown and freed handles are refused.
    assert!(is_invalid(m.free(handle(99))));
    m.free(handle(4)).unwrap();
    assert!(is_invalid(m.free(handle(4))));
    assert!(is_invalid(m.info(handle(4))));
    assert!(is_invalid(m.chunk_ptr(handle(4))));
    assert_eq!(m.live_allocations(), 3);
}

#[test]
fn freed_memory_is_reused_first_fit() {
    let mut m = mem(Target::Trn1);
    let (a, pa_a) = alloc_pa(&mut m, req(0, dev(0), MIB));
    let (b, pa_b) = alloc_pa(&mut m, req(0, dev(0), MIB));
    let (_c, pa_c) = alloc_pa(&mut m, req(0, dev(0), MIB));
    assert_eq!((pa_b, pa_c), (pa_a + MIB, pa_a + 2 * MIB));
    m.free(b).unwrap();
    let (b2, pa_b2) = alloc_pa(&mut m, req(0, dev(0), MIB));
    assert_eq!(pa_b2, pa_b);
    // Freed neighbours coalesce, whichever is freed first, into one hole a bigger request fits.
    m.free(a).unwrap();
    m.free(b2).unwrap();
    let (ab, pa_ab) = alloc_pa(&mut m, req(0, dev(0), 2 * MIB));
    assert_eq!(pa_ab, pa_a);
    m.free(ab).unwrap();
    let (x, pa_x) = alloc_pa(&mut m, req(0, dev(0), MIB));
    let (y, pa_y) = alloc_pa(&mut m, req(0, dev(0), MIB));
    assert_eq!((pa_x, pa_y), (pa_a, pa_b));
    m.free(y).unwrap();
    m.free(x).unwrap();
    assert_eq!(alloc_pa(&mut m, req(0, dev(0), 2 * MIB)).1, pa_a);
}

#[test]
fn exhaustion_is_out_of_memory_and_leaves_accounting_unchanged() {
    let mut m = mem(Target::Trn1);
    let _h = m.alloc(&req(0, dev(0), MIB)).unwrap();
    let before = m.usage(NcIndex(0));
    let err = m.alloc(&req(0, dev(0), 16 * GIB)).unwrap_err();
    assert_eq!(
        err,
        HalError::OutOfMemory {
            requested: 16 * GIB,
            location: dev(0)
        }
    );
    assert!(matches!(
        m.alloc(&req(0, dev(0), u64::MAX)),
        Err(HalError::OutOfMemory { .. })
    ));
    assert_eq!(m.usage(NcIndex(0)), before);
    assert_eq!(m.live_allocations(), 1);
    // The failed request consumed nothing.
    assert_eq!(alloc_pa(&mut m, req(0, dev(0), MIB)).1, 0x100_0000 + MIB);
}

#[test]
fn accounting_is_per_core_and_category_and_returns_to_zero() {
    let mut m = mem(Target::Trn2);
    let mut hs = Vec::new();
    let mut r = req(0, dev(0), 10);
    hs.push(m.alloc(&r).unwrap());
    r.category = MemAllocCategory::CodeDevice;
    r.size = 3 * MIB;
    hs.push(m.alloc(&r).unwrap());
    let mut r = req(5, MemLocation::Host, 5000);
    r.category = MemAllocCategory::DmaRingsHost;
    hs.push(m.alloc(&r).unwrap());
    let mut r = req(5, dev(0), MIB); // not core 5's home channel
    r.category = MemAllocCategory::ScratchpadDevice;
    hs.push(m.alloc(&r).unwrap());

    let u0 = m.usage(NcIndex(0));
    assert_eq!(
        u0.by_category[MemAllocCategory::TensorsDevice as usize],
        4096
    );
    assert_eq!(
        u0.by_category[MemAllocCategory::CodeDevice as usize],
        3 * MIB
    );
    assert_eq!(u0.allocations, 2);
    assert_eq!(u0.device_bytes(), 3 * MIB + 4096);
    let u5 = m.usage(NcIndex(5));
    assert_eq!(
        u5.by_category[MemAllocCategory::DmaRingsHost as usize],
        8192
    );
    assert_eq!(
        u5.by_category[MemAllocCategory::ScratchpadDevice as usize],
        MIB
    );
    assert_eq!(u5.allocations, 2);
    assert_eq!(u5.host_bytes(), 8192);
    assert_eq!(m.usage(NcIndex(1)), CoreMemUsage::default());
    assert_eq!(m.usage(NcIndex(42)), CoreMemUsage::default());

    for h in hs {
        m.free(h).unwrap();
    }
    for nc in 0..8 {
        assert_eq!(m.usage(NcIndex(nc)), CoreMemUsage::default());
    }
    assert_eq!(m.live_allocations(), 0);
}

/// One step of a per-core script: allocate `(size, align, location, category)`, or free the
/// script's `n`th allocation.
#[derive(Clone, Copy)]
enum Step {
    Alloc(u64, u64, MemLocation, MemAllocCategory),
    Free(usize),
}

fn script() -> Vec<Step> {
    use MemAllocCategory as C;
    let d = dev(0);
    vec![
        Step::Alloc(MIB, 0, d, C::TensorsDevice),
        Step::Alloc(4 * KIB, 0, d, C::DmaRingsDevice),
        Step::Alloc(5 * MIB + 3, 2 * MIB, d, C::CodeDevice),
        Step::Alloc(600 * KIB, 0, d, C::ConstantsDevice),
        Step::Free(1),
        Step::Alloc(64 * KIB, 0, MemLocation::Host, C::DmaRingsHost),
        Step::Alloc(2 * MIB, 0, d, C::ContiguousScratchpadDevice),
        Step::Free(0),
        Step::Alloc(300 * KIB, 0, d, C::TensorsDevice),
        Step::Alloc(700 * KIB, 0, d, C::TensorsDevice),
        Step::Free(3),
        Step::Alloc(8 * KIB, 0, MemLocation::Host, C::NotificationHost),
        Step::Alloc(3 * MIB, 0, d, C::ScratchpadDevice),
        Step::Alloc(12 * KIB, 0, d, C::MiscDevice),
    ]
}

/// Runs the script for core `nc` against `m`, yielding `yields(i)` times after step `i`.
fn run_script(m: &Mutex<DeviceMemory>, nc: u32, yields: impl Fn(usize) -> usize) -> Vec<u64> {
    let mut handles = Vec::new();
    let mut addrs = Vec::new();
    for (i, step) in script().into_iter().enumerate() {
        match step {
            Step::Alloc(size, align, location, category) => {
                let r = AllocRequest {
                    size,
                    align,
                    location,
                    nc: NcIndex(nc),
                    category,
                };
                let mut g = m.lock().unwrap();
                let h = g.alloc(&r).unwrap();
                addrs.push(g.info(h).unwrap().pa.raw());
                handles.push(h);
            }
            Step::Free(n) => m.lock().unwrap().free(handles[n]).unwrap(),
        }
        for _ in 0..yields(i) {
            std::thread::yield_now();
        }
    }
    addrs
}

#[test]
fn placement_is_deterministic_across_threads() {
    // Reference: each core's script run alone.
    let solo: Vec<Vec<u64>> = (0..2)
        .map(|nc| {
            let m = Mutex::new(mem(Target::Trn2));
            run_script(&m, nc, |_| 0)
        })
        .collect();
    assert_ne!(solo[0], solo[1]);
    for run in 0..12usize {
        let m = Mutex::new(mem(Target::Trn2));
        let barrier = Barrier::new(2);
        let got: Vec<Vec<u64>> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..2u32)
                .map(|nc| {
                    let (m, barrier) = (&m, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        run_script(m, nc, |i| (run * 7 + i * (nc as usize + 3)) % 5)
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert_eq!(got, solo, "run {run}");
    }
}

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[test]
fn backing_is_sparse() {
    let mut m = mem(Target::Trn2);
    let before = resident_bytes();
    let mut hs = Vec::new();
    for nc in 0..4 {
        let h = m.alloc(&req(nc * 2, dev(nc), 8 * GIB)).unwrap();
        let base = m.info(h).unwrap().pa;
        for off in [0, 4 * GIB + 17, 8 * GIB - 8] {
            let addr = base.checked_add(off).unwrap();
            m.write(addr, &[nc as u8 + 1; 8]).unwrap();
        }
        hs.push(h);
    }
    for (nc, &h) in hs.iter().enumerate() {
        let base = m.info(h).unwrap().pa;
        let mut b = [0u8; 8];
        m.read(base.checked_add(4 * GIB + 17).unwrap(), &mut b)
            .unwrap();
        assert_eq!(b, [nc as u8 + 1; 8]);
        m.read_at(h, 2 * GIB, &mut b).unwrap();
        assert_eq!(b, [0; 8]);
    }
    let grown = resident_bytes().saturating_sub(before);
    assert!(grown < 64 * MIB, "resident memory grew by {grown} bytes");
    assert_eq!(m.usage(NcIndex(6)).device_bytes(), 8 * GIB);
}

#[test]
fn reads_and_writes_must_stay_inside_one_allocation() {
    let mut m = mem(Target::Trn1);
    let (a, pa_a) = alloc_pa(&mut m, req(0, dev(0), MIB));
    let (_b, pa_b) = alloc_pa(&mut m, req(0, dev(0), MIB));
    assert_eq!(pa_b, pa_a + MIB);
    let at = |x: u64| DeviceAddr::new(x);

    m.write(at(pa_a + 10), b"hello").unwrap();
    let mut buf = [0u8; 5];
    m.read(at(pa_a + 10), &mut buf).unwrap();
    assert_eq!(&buf, b"hello");
    m.read_at(a, 10, &mut buf).unwrap();
    assert_eq!(&buf, b"hello");
    m.write_u32(at(pa_b + 4), 0xdead_beef).unwrap();
    assert_eq!(m.read_u32(at(pa_b + 4)).unwrap(), 0xdead_beef);
    let mut le = [0u8; 4];
    m.read(at(pa_b + 4), &mut le).unwrap();
    assert_eq!(le, 0xdead_beef_u32.to_le_bytes());

    // Straddling the end of `a` into `b` (adjacent!) faults.
    let mut two = [0u8; 2];
    assert_eq!(
        m.read(at(pa_b - 1), &mut two),
        Err(MemFault::Unmapped {
            addr: at(pa_b - 1),
            len: 2
        })
    );
    assert!(matches!(
        m.write(at(pa_b - 1), &two),
        Err(MemFault::Unmapped { .. })
    ));
    assert!(matches!(
        m.fill(at(pa_b - 1), 0, 2),
        Err(MemFault::Unmapped { .. })
    ));
    assert!(matches!(
        m.copy(at(pa_a), at(pa_b - 1), 2),
        Err(MemFault::Unmapped { .. })
    ));
    assert!(matches!(
        m.copy(at(pa_b - 1), at(pa_a), 2),
        Err(MemFault::Unmapped { .. })
    ));
    // Past the end of the last allocation, and in the carve-out.
    assert!(matches!(
        m.read(at(pa_b + MIB - 1), &mut two),
        Err(MemFault::Unmapped { .. })
    ));
    assert!(matches!(
        m.read_u32(at(0x10)),
        Err(MemFault::Unmapped { .. })
    ));
    assert!(matches!(
        m.read_u32(at(u64::MAX - 1)),
        Err(MemFault::Unmapped { .. })
    ));
    // The last byte is fine.
    m.read(at(pa_b + MIB - 1), &mut two[..1]).unwrap();
    // Handle-based bounds.
    assert!(is_invalid(m.read_at(a, MIB - 1, &mut two)));
    assert!(is_invalid(m.write_at(a, MIB, &[1])));
    assert!(is_invalid(m.fill_at(a, u64::MAX, 0, 2)));
    m.fill_at(a, MIB - 2, 0xab, 2).unwrap();
    m.read(at(pa_a + MIB - 2), &mut two).unwrap();
    assert_eq!(two, [0xab, 0xab]);
    m.fill(at(pa_a + 10), 0x5a, 3).unwrap();
    m.read_at(a, 10, &mut buf).unwrap();
    assert_eq!(&buf, b"ZZZlo");
    // Freed memory is unmapped.
    m.free(a).unwrap();
    assert!(matches!(
        m.read(at(pa_a + 10), &mut buf),
        Err(MemFault::Unmapped { .. })
    ));
    // Zero-length accesses always succeed.
    m.read(at(7), &mut []).unwrap();
    m.copy(at(7), at(9), 0).unwrap();
}

#[test]
fn copies_have_memmove_semantics() {
    let mut m = mem(Target::Trn1);
    let (h, base) = alloc_pa(&mut m, req(0, dev(0), 64 * KIB));
    let (h2, other) = alloc_pa(&mut m, req(0, MemLocation::Host, 64 * KIB));
    let pattern: Vec<u8> = (0..100u8).collect();
    let at = |x: u64| DeviceAddr::new(x);
    m.write_at(h, 0, &pattern).unwrap();
    // Forward overlap: dst above src.
    m.copy(at(base), at(base + 10), 100).unwrap();
    let mut out = vec![0u8; 110];
    m.read_at(h, 0, &mut out).unwrap();
    assert_eq!(&out[..10], &pattern[..10]);
    assert_eq!(&out[10..], &pattern[..]);
    // Backward overlap: dst below src.
    m.write_at(h, 0, &pattern).unwrap();
    m.copy(at(base + 5), at(base), 95).unwrap();
    m.read_at(h, 0, &mut out[..100]).unwrap();
    assert_eq!(&out[..95], &pattern[5..]);
    // Between allocations (device → host window).
    m.copy(at(base), at(other + 1000), 50).unwrap();
    let mut got = [0u8; 50];
    m.read_at(h2, 1000, &mut got).unwrap();
    assert_eq!(&got[..], &out[..50]);
}

#[test]
fn poisoned_bytes_fault_reads_and_copies() {
    let mut m = mem(Target::Trn1);
    let (h, base) = alloc_pa(&mut m, req(0, dev(0), 64 * KIB));
    let at = |x: u64| DeviceAddr::new(x);
    let bad = at(base + 100);
    m.poison(bad);
    let mut buf = [0u8; 16];
    assert_eq!(
        m.read(at(base + 96), &mut buf),
        Err(MemFault::Uncorrectable { addr: bad })
    );
    assert_eq!(
        m.copy(at(base + 100), at(base + 1000), 1),
        Err(MemFault::Uncorrectable { addr: bad })
    );
    assert!(matches!(
        m.read_u32(bad),
        Err(MemFault::Uncorrectable { .. })
    ));
    assert!(matches!(
        m.read_at(h, 90, &mut buf),
        Err(HalError::DeviceFault { .. })
    ));
    // Unrelated reads, copies into the poisoned byte and writes work; writes do not heal it.
    m.read(at(base + 101), &mut buf).unwrap();
    m.read(at(base + 84), &mut buf).unwrap();
    m.copy(at(base + 1000), at(base + 90), 16).unwrap();
    m.write(bad, &[1]).unwrap();
    assert!(matches!(
        m.read(bad, &mut buf[..1]),
        Err(MemFault::Uncorrectable { .. })
    ));
    let mut oc = OnChip::new(Target::Trn1);
    assert!(m
        .copy_to_onchip(bad, &mut oc, OnChipAddr::sbuf(0, 0), 1)
        .is_err());
    m.clear_poison();
    m.read(bad, &mut buf[..1]).unwrap();
    assert_eq!(buf[0], 1);
    let msg = MemFault::Uncorrectable { addr: bad }.to_string();
    assert!(
        msg.contains("uncorrectable") && msg.contains(&format!("{bad}")),
        "{msg}"
    );
}

#[test]
fn mapping_pointer_is_stable_and_shares_the_bytes() {
    let mut m = mem(Target::Trn1);
    let h = m.alloc(&req(0, dev(0), 2 * MIB)).unwrap();
    let (ptr, len) = m.chunk_ptr(h).unwrap();
    assert_eq!(len as u64, 2 * MIB);
    for _ in 0..100 {
        m.alloc(&req(0, dev(0), 8 * KIB)).unwrap();
    }
    assert_eq!(m.chunk_ptr(h).unwrap(), (ptr, len));
    // SAFETY: `ptr..ptr+len` is the live allocation's block; no device access is in progress,
    // and the simulator holds no reference into it.
    unsafe { ptr.as_ptr().add(12345).write(0x77) };
    let mut b = [0u8];
    m.read_at(h, 12345, &mut b).unwrap();
    assert_eq!(b[0], 0x77);
    m.write_at(h, 54321, &[0x66]).unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { ptr.as_ptr().add(54321).read() }, 0x66);
    let pa = m.info(h).unwrap().pa;
    assert_eq!(m.lookup(pa.checked_add(54321).unwrap()), Some((h, 54321)));
    assert_eq!(m.lookup(DeviceAddr::new(0)), None);
}

#[test]
fn onchip_partitions_are_bounded_by_their_physical_size() {
    use OnChipSpace::{Psum, Sbuf};
    const P1: u32 = 192 * 1024;
    let oc = &mut OnChip::new(Target::Trn1);
    assert_eq!(oc.sbuf().len(), 128 * 192 * 1024);
    assert_eq!(oc.psum().len(), 128 * 16 * 1024);
    oc.write(Sbuf, 3, P1 - 1, &[9]).unwrap();
    assert_eq!(oc.sbuf()[3 * 192 * 1024 + 192 * 1024 - 1], 9);
    let mut one = [0u8];
    oc.read(Sbuf, 3, P1 - 1, &mut one).unwrap();
    assert_eq!(one, [9]);
    assert_eq!(
        oc.write(Sbuf, 3, P1, &[9]),
        Err(MemFault::OutOfWindow {
            space: Sbuf,
            partition: 3,
            offset: P1,
            len: 1,
            limit: 192 * KIB
        })
    );
    // Inside the 256 KiB window stride but past the physical partition.
    assert!(matches!(
        oc.read(Sbuf, 0, 200 * 1024, &mut one),
        Err(MemFault::OutOfWindow { .. })
    ));
    assert!(matches!(
        oc.read(Sbuf, 0, P1 - 2, &mut [0; 4]),
        Err(MemFault::OutOfWindow { .. })
    ));
    assert!(matches!(
        oc.write(Sbuf, 128, 0, &[1]),
        Err(MemFault::NoSuchPartition { partition: 128, .. })
    ));
    assert!(matches!(
        oc.fill(Psum, 127, 16 * 1024 - 1, 1, 2),
        Err(MemFault::OutOfWindow { space: Psum, .. })
    ));
    oc.fill(Psum, 127, 16 * 1024 - 2, 7, 2).unwrap();
    assert_eq!(&oc.psum()[oc.psum().len() - 2..], &[7, 7]);
    let (sbuf, psum) = oc.split_mut();
    sbuf[0] = 1;
    psum[5] = 1;
    oc.reset();
    assert!(oc.sbuf().iter().all(|&b| b == 0) && oc.psum().iter().all(|&b| b == 0));
    let msg = MemFault::OutOfWindow {
        space: Sbuf,
        partition: 3,
        offset: P1,
        len: 1,
        limit: 192 * KIB,
    }
    .to_string();
    assert!(msg.contains("SBUF partition 3"), "{msg}");

    let oc = &mut OnChip::new(Target::Trn2);
    assert_eq!(oc.partition_bytes(Sbuf), 224 * KIB);
    oc.write(Sbuf, 127, 224 * 1024 - 1, &[1]).unwrap();
    assert_eq!(*oc.sbuf().last().unwrap(), 1);
    assert!(oc.write(Sbuf, 127, 224 * 1024, &[1]).is_err());
}

#[test]
fn dma_between_device_memory_and_onchip() {
    let mut m = mem(Target::Trn1);
    let (h, base) = alloc_pa(&mut m, req(0, dev(0), 64 * KIB));
    let data: Vec<u8> = (0..64u8).collect();
    m.write_at(h, 0, &data).unwrap();
    let at = |x: u64| DeviceAddr::new(x);
    let (mut oc0, mut oc1) = (OnChip::new(Target::Trn1), OnChip::new(Target::Trn1));
    m.copy_to_onchip(at(base), &mut oc1, OnChipAddr::sbuf(2, 100), 64)
        .unwrap();
    let mut got = [0u8; 64];
    oc1.read(OnChipSpace::Sbuf, 2, 100, &mut got).unwrap();
    assert_eq!(&got[..], &data[..]);
    // SBUF → PSUM on one core, then back to HBM.
    oc1.copy(OnChipAddr::sbuf(2, 100), OnChipAddr::psum(5, 0), 64)
        .unwrap();
    m.copy_from_onchip(&oc1, OnChipAddr::psum(5, 0), at(base + 1000), 64)
        .unwrap();
    m.read_at(h, 1000, &mut got).unwrap();
    assert_eq!(&got[..], &data[..]);
    // Faults: HBM side past the allocation, on-chip side past the partition.
    assert!(matches!(
        m.copy_to_onchip(
            at(base + 64 * KIB - 8),
            &mut oc0,
            OnChipAddr::sbuf(0, 0),
            16
        ),
        Err(MemFault::Unmapped { .. })
    ));
    assert!(matches!(
        m.copy_from_onchip(&oc0, OnChipAddr::sbuf(0, 192 * 1024 - 8), at(base), 16),
        Err(MemFault::OutOfWindow { .. })
    ));
}

#[test]
fn mem_fault_is_copy_and_readable() {
    fn is_copy<T: Copy>() {}
    is_copy::<MemFault>();
    let f = MemFault::Unmapped {
        addr: DeviceAddr::new(0x1000),
        len: 4,
    };
    let s = f.to_string();
    assert!(s.contains("0x1000") && s.contains("unmapped"), "{s}");
    assert_eq!(f.addr(), Some(DeviceAddr::new(0x1000)));
    assert_eq!(MemFault::NoSuchCore { nc: NcIndex(9) }.addr(), None);
    fn is_send_sync<T: Send + Sync>() {}
    is_send_sync::<DeviceMemory>();
}

#[derive(Debug, Clone)]
enum Op {
    Alloc {
        nc: u32,
        host: bool,
        channel: u32,
        size: u64,
        align_log: u32,
        scratch: bool,
        cat: u32,
    },
    Free(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..8u32, any::<bool>(), 0..4u32, 1..(1u64 << 21), 0..22u32, any::<bool>(), 0..20u32)
            .prop_map(|(nc, host, channel, size, align_log, scratch, cat)| Op::Alloc {
                nc,
                host,
                channel,
                size,
                align_log,
                scratch,
                cat,
            }),
        2 => any::<usize>().prop_map(Op::Free),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_alloc_free_never_overlaps(trn2 in any::<bool>(), ops in prop::collection::vec(op(), 1..60)) {
        let target = if trn2 { Target::Trn2 } else { Target::Trn1 };
        let spec = target.spec();
        let mut m = mem(target);
        // handle → (request align, marker)
        let mut live: Vec<(MemHandle, u64, u8)> = Vec::new();
        for (i, op) in ops.into_iter().enumerate() {
            match op {
                Op::Alloc { nc, host, channel, size, align_log, scratch, cat } => {
                    let nc = nc % spec.nc_count;
                    let channel = channel % spec.hbm.len() as u32;
                    let category = if scratch && !host {
                        MemAllocCategory::ContiguousScratchpadDevice
                    } else {
                        MemAllocCategory::from_raw(cat, host)
                    };
                    let align = if host || align_log < 12 { 0 } else { 1u64 << align_log };
                    let r = AllocRequest {
                        size,
                        align,
                        location: if host { MemLocation::Host } else { dev(channel) },
                        nc: NcIndex(nc),
                        category,
                    };
                    let h = m.alloc(&r).unwrap();
                    let info = m.info(h).unwrap();
                    prop_assert_eq!(info.size, size.div_ceil(4096) * 4096);
                    prop_assert!(info.pa.is_aligned(align.max(4096)));
                    if host {
                        prop_assert!(target.is_host_addr(info.pa));
                    } else {
                        prop_assert_eq!(target.hbm_channel_at(info.pa), Some(channel));
                        let off = info.pa.offset_from(spec.hbm[channel as usize].base).unwrap();
                        prop_assert!(off >= 16 << 20);
                    }
                    let marker = i as u8;
                    let last = info.pa.checked_add(info.size - 1).unwrap();
                    m.write(info.pa, &[marker]).unwrap();
                    m.write(last, &[marker]).unwrap();
                    live.push((h, align, marker));
                }
                Op::Free(k) => {
                    if !live.is_empty() {
                        let (h, _, _) = live.swap_remove(k % live.len());
                        m.free(h).unwrap();
                    }
                }
            }
            // No two live allocations overlap; accounting equals the sum of live sizes.
            let mut spans: Vec<(u64, u64)> = Vec::new();
            let mut expect: BTreeMap<(u32, usize), u64> = BTreeMap::new();
            for &(h, _, _) in &live {
                let info = m.info(h).unwrap();
                spans.push((info.pa.raw(), info.size));
                *expect.entry((info.nc.0, info.category as usize)).or_default() += info.size;
            }
            spans.sort_unstable();
            for w in spans.windows(2) {
                prop_assert!(w[0].0 + w[0].1 <= w[1].0, "overlap: {:x?}", w);
            }
            let mut allocations = 0;
            for nc in 0..spec.nc_count {
                let u = m.usage(NcIndex(nc));
                allocations += u.allocations;
                for c in 0..MemAllocCategory::COUNT {
                    prop_assert_eq!(u.by_category[c], expect.get(&(nc, c)).copied().unwrap_or(0));
                }
            }
            prop_assert_eq!(allocations as usize, live.len());
            prop_assert_eq!(m.live_allocations(), live.len());
        }
        // Every allocation still holds its own markers: backing blocks are not shared.
        for &(h, _, marker) in &live {
            let size = m.info(h).unwrap().size;
            let mut b = [0u8];
            m.read_at(h, 0, &mut b).unwrap();
            prop_assert_eq!(b[0], marker);
            m.read_at(h, size - 1, &mut b).unwrap();
            prop_assert_eq!(b[0], marker);
        }
    }
}

/// docs/simulator.md §2.4: a fresh simulator of either target commits no on-chip memory; reads
/// of untouched SBUF and PSUM see zeros without committing it; writes commit about what they
/// touch; a core reset hands the pages back.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
#[test]
fn onchip_memory_is_committed_page_by_page_on_first_write() {
    use nrt_hal::Hal;
    const PAGE: u64 = 4096;
    for target in [Target::Trn1, Target::Trn2] {
        let sim = nrt_sim::Sim::new(nrt_sim::SimConfig::new(target));
        let spec = target.spec();
        let cores = u64::from(spec.nc_count);
        let committed = || sim.onchip_committed_bytes().expect("Linux can tell");
        assert_eq!(committed(), 0, "{target}: a fresh simulator");
        // Reads of every partition of SBUF and PSUM on every core: zeros, nothing committed.
        for nc in 0..spec.nc_count {
            for p in 0..spec.sbuf.partitions {
                let mut b = [0xffu8; 64];
                sim.read_sbuf(NcIndex(nc), p, spec.sbuf.partition_bytes - 64, &mut b)
                    .unwrap();
                assert_eq!(b, [0; 64]);
                let a = target.psum_addr(NcIndex(nc), p, 0).unwrap();
                assert_eq!(sim.load32(a).unwrap(), 0);
            }
        }
        assert_eq!(committed(), 0, "{target}: after reading every partition");
        // One word in each SBUF partition of core 0, and in one PSUM partition of the last.
        for p in 0..spec.sbuf.partitions {
            let a = target.sbuf_addr(NcIndex(0), p, 0x1000).unwrap();
            sim.store32(a, p + 1).unwrap();
        }
        let last = NcIndex(spec.nc_count - 1);
        sim.store32(target.psum_addr(last, 3, 8).unwrap(), 7)
            .unwrap();
        let touched = u64::from(spec.sbuf.partitions) + 1;
        let c = committed();
        assert!(
            c >= touched * PAGE && c <= 2 * touched * PAGE,
            "{target}: {touched} pages written, {c} bytes committed"
        );
        for p in 0..spec.sbuf.partitions {
            let mut b = [0u8; 4];
            sim.read_sbuf(NcIndex(0), p, 0x1000, &mut b).unwrap();
            assert_eq!(u32::from_le_bytes(b), p + 1);
        }
        assert_eq!(
            sim.load32(target.psum_addr(last, 3, 8).unwrap()).unwrap(),
            7
        );
        // The whole device is far larger than that.
        let total = cores * (spec.sbuf.total_bytes() + 128 * 16 * KIB);
        assert!(
            total > 50 * c,
            "{target}: {total} bytes on chip, {c} committed"
        );
        // A reset of every core zeroes the memory and releases the pages.
        sim.nc_reset((1u32 << spec.nc_count) - 1).unwrap();
        assert_eq!(committed(), 0, "{target}: after a reset of every core");
        let mut b = [0xffu8; 4];
        sim.read_sbuf(NcIndex(0), 5, 0x1000, &mut b).unwrap();
        assert_eq!(b, [0; 4], "{target}: SBUF after reset");
        assert_eq!(
            sim.load32(target.psum_addr(last, 3, 8).unwrap()).unwrap(),
            0
        );
    }
}

/// The DeviceMemory view of the same: on-chip bytes commit with DMA writes, not with reads.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
#[test]
fn onchip_committed_bytes_follow_dma_writes() {
    let mut m = mem(Target::Trn2);
    let mut oc = OnChip::new(Target::Trn2);
    assert_eq!(oc.committed_bytes(), Some(0));
    let h = m.alloc(&req(0, dev(0), 64 * KIB)).unwrap();
    let base = m.info(h).unwrap().pa;
    m.write(base, &[9u8; 64]).unwrap();
    m.copy_from_onchip(&oc, OnChipAddr::sbuf(7, 0), base, 64)
        .unwrap();
    let mut b = [1u8; 64];
    m.read(base, &mut b).unwrap();
    assert_eq!(b, [0; 64], "untouched SBUF reads as zeros");
    assert_eq!(oc.committed_bytes(), Some(0), "a read commits nothing");
    m.write(base, &[9u8; 64]).unwrap();
    m.copy_to_onchip(base, &mut oc, OnChipAddr::sbuf(7, 100), 64)
        .unwrap();
    assert_eq!(oc.committed_bytes(), Some(4 * KIB));
    let mut got = [0u8; 64];
    oc.read(OnChipSpace::Sbuf, 7, 100, &mut got).unwrap();
    assert_eq!(got, [9u8; 64]);
}

#[test]
fn a_slot_hint_is_only_a_guess_checked_on_use() {
    let mut m = mem(Target::Trn1);
    let (a, pa_a) = alloc_pa(&mut m, req(0, dev(0), 4 * KIB));
    let (_b, pa_b) = alloc_pa(&mut m, req(0, dev(0), 4 * KIB));
    m.write(DeviceAddr::new(pa_a), &[1; 16]).unwrap();
    m.write(DeviceAddr::new(pa_b), &[2; 16]).unwrap();
    let mut hint = SlotHint::default();
    let mut buf = [0u8; 16];
    // A hint that names another allocation (or nothing) still finds the right one.
    for (addr, v) in [(pa_a, 1), (pa_b, 2), (pa_b, 2), (pa_a, 1)] {
        m.read_hinted(&mut hint, DeviceAddr::new(addr), &mut buf)
            .unwrap();
        assert_eq!(buf, [v; 16]);
    }
    // Freed under the hint: unmapped, then the reused slot's new allocation.
    m.free(a).unwrap();
    assert!(matches!(
        m.read_hinted(&mut hint, DeviceAddr::new(pa_a), &mut buf),
        Err(MemFault::Unmapped { .. })
    ));
    let (_c, pa_c) = alloc_pa(&mut m, req(0, dev(0), 8 * KIB));
    m.write(DeviceAddr::new(pa_c + 4 * KIB), &[3; 16]).unwrap();
    m.read_hinted(&mut hint, DeviceAddr::new(pa_c + 4 * KIB), &mut buf)
        .unwrap();
    assert_eq!(buf, [3; 16]);
    // A range running past the hinted allocation's end is not served from it.
    assert!(m
        .read_hinted(&mut hint, DeviceAddr::new(pa_c + 8 * KIB - 8), &mut buf)
        .is_err());
}
