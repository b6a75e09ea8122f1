//! The driver backend (`nrt_hal::driver::DriverHal`) over the kernel-ABI emulation
//! (`nrt_kabi::EmulatedDriver`): every ioctl the backend uses, on its success and error
//! paths, the hazards the backend refuses before calling the driver, the driver's own return
//! conventions as the emulation reproduces them at the raw syscall level, and the mmap rules.

use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nrt_hal::abi::{self, Ioctl, MemAllocCategory, NqType};
use nrt_hal::driver::{DriverHal, Errno, OFlag, Syscalls, COPY_PIECE};
use nrt_hal::hal::{AllocRequest, MemLocation, NqRequest, QueueStatus, RingSpec, WaitCondition};
use nrt_hal::isa::SemCmp;
use nrt_hal::target::SemWindow;
use nrt_hal::udma::{M2mCopy, QueueProducer, RingGeometry};
use nrt_hal::{
    DmaEngine, EventId, Hal, HalError, MemHandle, NcIndex, QueueId, QueueRef, SemaphoreId, Target,
};
use nrt_kabi::{EmulatedDriver, FAKE_KERNEL_POINTER_BASE, GARBAGE_VERSION};
use nrt_sim::{Sim, SimConfig};
use zerocopy::IntoBytes;

const NC0: NcIndex = NcIndex(0);
const T: Duration = Duration::from_secs(10);

/// An `EmulatedDriver` that logs every request and can rewrite or swallow some of them.
struct Spy {
    inner: EmulatedDriver,
    log: Mutex<Vec<Option<Ioctl>>>,
    /// Answer COMPATIBLE_VERSION with this `{max, min}` instead.
    compat: Option<abi::CompatibleVersion>,
    /// Record MEM_BUF_COPY64 (handle, offset, size) and return 0 without copying.
    swallow_copies: bool,
    copies: Mutex<Vec<(u64, u64, u64)>>,
}

impl Spy {
    fn new(sim: Arc<Sim>) -> Self {
        Spy {
            inner: EmulatedDriver::single(sim),
            log: Mutex::new(Vec::new()),
            compat: None,
            swallow_copies: false,
            copies: Mutex::new(Vec::new()),
        }
    }

    fn count(&self, cmd: Ioctl) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|c| **c == Some(cmd))
            .count()
    }
}

impl Syscalls for Spy {
    fn open(&self, path: &str, flags: OFlag) -> Result<RawFd, Errno> {
        self.inner.open(path, flags)
    }
    fn close(&self, fd: RawFd) -> Result<(), Errno> {
        self.inner.close(fd)
    }
    unsafe fn ioctl(&self, fd: RawFd, request: u32, arg: *mut u8) -> Result<i32, Errno> {
        let cmd = Ioctl::from_request(request);
        self.log.lock().unwrap().push(cmd);
        if let (Some(Ioctl::CompatibleVersion), Some(v)) = (cmd, self.compat) {
            let b = v.as_bytes();
            // SAFETY: the backend passes a live 8-byte CompatibleVersion for this request.
            unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), arg, b.len()) };
            return Ok(0);
        }
        if cmd == Some(Ioctl::MemBufCopy64) && self.swallow_copies {
            // SAFETY: the backend passes a live 40-byte MemBufCopy64 for this request.
            let a = unsafe { arg.cast::<abi::MemBufCopy64>().read_unaligned() };
            self.copies
                .lock()
                .unwrap()
                .push((a.mem_handle, a.offset, a.size));
            return Ok(0);
        }
        // SAFETY: forwarded unchanged from our caller, who upholds the same contract.
        unsafe { self.inner.ioctl(fd, request, arg) }
    }
    unsafe fn mmap(&self, fd: RawFd, len: usize, offset: u64) -> Result<NonNull<u8>, Errno> {
        // SAFETY: forwarded unchanged.
        unsafe { self.inner.mmap(fd, len, offset) }
    }
    unsafe fn munmap(&self, ptr: NonNull<u8>, len: usize) -> Result<(), Errno> {
        // SAFETY: forwarded unchanged.
        unsafe { self.inner.munmap(ptr, len) }
    }
}

fn sim(target: Target) -> Arc<Sim> {
    Arc::new(Sim::new(SimConfig::new(target)))
}

fn driver(target: Target) -> (Arc<Sim>, Arc<EmulatedDriver>, DriverHal) {
    let sim = sim(target);
    let drv = Arc::new(EmulatedDriver::single(sim.clone()));
    let hal = DriverHal::open(0, drv.clone()).unwrap();
    (sim, drv, hal)
}

fn spied(target: Target) -> (Arc<Sim>, Arc<Spy>, DriverHal) {
    let sim = sim(target);
    let spy = Arc::new(Spy::new(sim.clone()));
    let hal = DriverHal::open(0, spy.clone()).unwrap();
    (sim, spy, hal)
}

fn dev_req(target: Target, nc: NcIndex, size: u64) -> AllocRequest {
    AllocRequest {
        size,
        align: 0,
        location: MemLocation::Device {
            channel: target.hbm_channel_of(nc),
        },
        nc,
        category: MemAllocCategory::TensorsDevice,
    }
}

fn host_req(nc: NcIndex, size: u64) -> AllocRequest {
    AllocRequest {
        size,
        align: 0,
        location: MemLocation::Host,
        nc,
        category: MemAllocCategory::TensorsHost,
    }
}

fn os(e: HalError) -> (&'static str, i32) {
    match e {
        HalError::Os { ioctl, errno, .. } => (ioctl, errno),
        e => panic!("expected an OS error, got {e:?}"),
    }
}

fn is_invalid(r: Result<impl std::fmt::Debug, HalError>, op: &str) {
    match r {
        Err(HalError::InvalidArgument { op: o, .. }) => assert_eq!(o, op),
        r => panic!("expected InvalidArgument from {op}, got {r:?}"),
    }
}

/// Raw access to the emulated driver, as user space would make it.
struct Raw {
    drv: EmulatedDriver,
    fd: RawFd,
}

impl Raw {
    fn new(target: Target) -> (Arc<Sim>, Raw) {
        let sim = sim(target);
        let drv = EmulatedDriver::single(sim.clone());
        let fd = drv.open("/dev/neuron0", OFlag::O_RDWR).unwrap();
        (sim, Raw { drv, fd })
    }

    fn ioctl<T: IntoBytes + zerocopy::FromBytes>(
        &self,
        cmd: Ioctl,
        arg: &mut T,
    ) -> Result<i32, Errno> {
        // SAFETY: `arg` is a live struct of the request's argument type; tests put only null or
        // live pointers inside it.
        unsafe {
            self.drv
                .ioctl(self.fd, cmd.request(), arg.as_mut_bytes().as_mut_ptr())
        }
    }

    fn alloc(&self, size: u64, host: bool, align: u64) -> Result<u64, Errno> {
        let mut out = 0u64;
        let mut a = abi::MemAllocV2Mt64 {
            size,
            align,
            host_memory: u32::from(host),
            mem_type: MemAllocCategory::TensorsDevice.raw(),
            mem_handle: &mut out as *mut u64 as u64,
            ..Default::default()
        };
        self.ioctl(Ioctl::MemAllocV2Mt64, &mut a)?;
        // Nothing is written into the struct itself.
        assert_eq!(a.mem_handle, &mut out as *mut u64 as u64);
        Ok(out)
    }
}

#[test]
fn open_reports_the_target_and_the_driver_range() {
    for (target, range) in [(Target::Trn1, (5, 7)), (Target::Trn2, (10, 11))] {
        let (_sim, drv, hal) = driver(target);
        let info = hal.device_info().unwrap();
        assert_eq!(info.target, target);
        assert_eq!(info.abi_version_range, range);
        assert_eq!(info.revision, abi::REVISION_EMULATOR);
        assert_eq!(info.nc_count, target.spec().nc_count);
        assert_eq!(hal.features(), Some(abi::DRIVER_FEATURES_REPORTED));
        assert_eq!(drv.open_fds(), 1);
        drop(hal);
        assert_eq!(drv.open_fds(), 0, "the fd is closed on drop");
    }
}

#[test]
fn an_incompatible_driver_is_refused_and_its_fd_closed() {
    // The runtime speaks 7 on trn1; a driver accepting only 5..=6 is refused. The spy writes
    // the struct in the driver's {max, min} order.
    let mut spy = Spy::new(sim(Target::Trn1));
    spy.compat = Some(abi::CompatibleVersion { max: 6, min: 5 });
    let spy = Arc::new(spy);
    let e = DriverHal::open(0, spy.clone()).unwrap_err();
    let msg = e.to_string();
    assert_eq!(os(e).0, "COMPATIBLE_VERSION");
    assert!(msg.contains("5..=6") && msg.contains("speaks 7"), "{msg}");
    assert_eq!(spy.inner.open_fds(), 0);

    // Claiming another version against the emulated trn2 driver (10..=11).
    let drv = Arc::new(EmulatedDriver::single(sim(Target::Trn2)));
    assert_eq!(
        os(DriverHal::open_with_abi_version(0, drv.clone(), 7).unwrap_err()).0,
        "COMPATIBLE_VERSION"
    );
    assert!(DriverHal::open_with_abi_version(0, drv.clone(), 10).is_ok());

    // A missing node.
    let (ioctl, errno) = os(DriverHal::open(3, drv).unwrap_err());
    assert_eq!((ioctl, errno), ("open", Errno::ENOENT as i32));
}

#[test]
fn allocations_copy_memset_info_and_free() {
    let (sim, _drv, hal) = driver(Target::Trn1);
    let t = Target::Trn1;
    let d = hal.mem_alloc(&dev_req(t, NC0, 5000)).unwrap();
    let h = hal.mem_alloc(&host_req(NC0, 100)).unwrap();
    // Handles are the driver's (the simulator's) small integers from 1.
    assert_eq!((d.raw(), h.raw()), (1, 2));
    let di = hal.mem_info(d).unwrap();
    assert_eq!(di, sim.mem_info(d).unwrap());
    assert_eq!(di.size, 8192, "rounded to pages");
    assert_eq!(di.category, MemAllocCategory::TensorsDevice);
    assert_eq!(t.hbm_channel_at(di.pa), Some(0));
    let hi = hal.mem_info(h).unwrap();
    assert_eq!(hi.location, MemLocation::Host);
    assert!(t.is_host_addr(hi.pa));

    let data: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
    hal.copy_to_device(d, 100, &data).unwrap();
    let mut back = vec![0u8; 5000];
    hal.copy_from_device(d, 100, &mut back).unwrap();
    assert_eq!(back, data);
    let mut direct = vec![0u8; 5000];
    sim.copy_from_device(d, 100, &mut direct).unwrap();
    assert_eq!(direct, data);

    hal.memset(d, 0, 0xAB, 100).unwrap();
    let mut b = [0u8; 101];
    hal.copy_from_device(d, 0, &mut b).unwrap();
    assert!(b[..100].iter().all(|&x| x == 0xAB));
    assert_eq!(b[100], data[0]);

    hal.copy_to_device(h, 0, b"host").unwrap();
    let mut hb = [0u8; 4];
    hal.copy_from_device(h, 0, &mut hb).unwrap();
    assert_eq!(&hb, b"host");

    hal.mem_free(d).unwrap();
    // Hazard 2: a bad handle is a positive 22 from MEM_GET_EXTENDED_INFO.
    assert_eq!(
        os(hal.mem_info(d).unwrap_err()),
        ("MEM_GET_EXTENDED_INFO", 22)
    );
    assert_eq!(
        os(hal.mem_free(d).unwrap_err()),
        ("MEM_FREE", Errno::EINVAL as i32)
    );
    // LIFO reuse of the freed handle.
    assert_eq!(hal.mem_alloc(&dev_req(t, NC0, 1)).unwrap(), d);
    // Out of memory surfaces as such.
    match hal.mem_alloc(&dev_req(t, NC0, 1 << 40)) {
        Err(HalError::OutOfMemory { .. }) => {}
        r => panic!("{r:?}"),
    }
    // A core the device lacks is refused before the call.
    is_invalid(
        hal.mem_alloc(&dev_req(t, NcIndex(2), 1)),
        "MEM_ALLOC_V2MT64",
    );
}

#[test]
fn host_allocations_never_carry_an_alignment() {
    let (_sim, spy, hal) = spied(Target::Trn2);
    let mut req = host_req(NC0, 4096);
    req.align = 4096;
    is_invalid(hal.mem_alloc(&req), "MEM_ALLOC_V2MT64");
    assert_eq!(
        spy.count(Ioctl::MemAllocV2Mt64),
        0,
        "refused before the call"
    );
    // The driver itself refuses it with -EINVAL; a device allocation may be aligned.
    let (_sim, raw) = Raw::new(Target::Trn2);
    assert_eq!(raw.alloc(4096, true, 4096), Err(Errno::EINVAL));
    assert_eq!(raw.alloc(4096, true, 0), Ok(1));
    assert_eq!(raw.alloc(4096, false, 1 << 20), Ok(2));
    // Null handle out-pointer: -EFAULT and nothing leaked.
    let mut a = abi::MemAllocV2Mt64 {
        size: 4096,
        ..Default::default()
    };
    assert_eq!(raw.ioctl(Ioctl::MemAllocV2Mt64, &mut a), Err(Errno::EFAULT));
    assert_eq!(raw.alloc(4096, false, 0), Ok(3));
    // nc_id ≥ 8 and a channel the device lacks (checked for host memory too).
    a.nc_id = 8;
    assert_eq!(raw.ioctl(Ioctl::MemAllocV2Mt64, &mut a), Err(Errno::EINVAL));
    let mut out = 0u64;
    let mut a = abi::MemAllocV2Mt64 {
        size: 4096,
        host_memory: 1,
        dram_channel: 4,
        mem_handle: &mut out as *mut u64 as u64,
        ..Default::default()
    };
    assert_eq!(raw.ioctl(Ioctl::MemAllocV2Mt64, &mut a), Err(Errno::EINVAL));
}

#[test]
fn extended_info_writes_garbage_back_and_a_bad_handle_is_positive_22() {
    let (_sim, raw) = Raw::new(Target::Trn1);
    let h = raw.alloc(10_000, false, 0).unwrap();
    let mut a = abi::MemGetExtendedInfo {
        mem_handle: h,
        version: abi::MEM_GET_EXTENDED_INFO_VERSION,
        ..Default::default()
    };
    assert_eq!(raw.ioctl(Ioctl::MemGetExtendedInfo, &mut a), Ok(0));
    assert_eq!(a.mem_handle, FAKE_KERNEL_POINTER_BASE + (h << 6));
    assert_eq!(a.version, GARBAGE_VERSION);
    assert_eq!(a.size, 12_288);
    assert_eq!(a.mmap_offset, a.pa);
    assert_eq!(a.pid, u64::from(std::process::id()));
    let mut bad = abi::MemGetExtendedInfo {
        mem_handle: 99,
        ..Default::default()
    };
    assert_eq!(raw.ioctl(Ioctl::MemGetExtendedInfo, &mut bad), Ok(22));
    assert_eq!(bad.pa, 0, "nothing written back");
}

#[test]
fn copies_are_bounded_and_split_below_four_gib() {
    let (_sim, spy, hal) = spied(Target::Trn1);
    let d = hal.mem_alloc(&dev_req(Target::Trn1, NC0, 4096)).unwrap();
    let before = spy.count(Ioctl::MemBufCopy64);
    is_invalid(hal.copy_to_device(d, 4000, &[0; 97]), "copy_to_device");
    is_invalid(
        hal.copy_from_device(d, u64::MAX, &mut [0; 2]),
        "copy_from_device",
    );
    assert_eq!(
        spy.count(Ioctl::MemBufCopy64),
        before,
        "refused before the call"
    );
    hal.copy_to_device(d, 4000, &[1; 96]).unwrap();

    // The driver's own bounds check, a null buffer, and the 32-bit truncation on device memory.
    let (_sim, raw) = Raw::new(Target::Trn1);
    let h = raw.alloc(4096, false, 0).unwrap();
    let buf = [7u8; 16];
    let mut a = abi::MemBufCopy64 {
        mem_handle: h,
        buffer: buf.as_ptr() as u64,
        size: 16,
        offset: 4090,
        copy_to_mem_handle: 1,
        ..Default::default()
    };
    assert_eq!(raw.ioctl(Ioctl::MemBufCopy64, &mut a), Err(Errno::EINVAL));
    a.offset = 0;
    a.buffer = 0;
    assert_eq!(raw.ioctl(Ioctl::MemBufCopy64, &mut a), Err(Errno::EFAULT));
    a.mem_handle = 77;
    assert_eq!(raw.ioctl(Ioctl::MemBufCopy64, &mut a), Err(Errno::EINVAL));

    // Hazard 7, mirrored: 4 GiB + 8 bytes to device memory copy only 8.
    let big = raw.alloc((4 << 30) + 4096, false, 0).unwrap();
    let mut src = vec![0u8; (4 << 30) + 8]; // zero pages, not touched
    src[..8].copy_from_slice(b"12345678");
    src[8..16].copy_from_slice(b"ABCDEFGH");
    let mut a = abi::MemBufCopy64 {
        mem_handle: big,
        buffer: src.as_ptr() as u64,
        size: (4 << 30) + 8,
        offset: 0,
        copy_to_mem_handle: 1,
        ..Default::default()
    };
    assert_eq!(raw.ioctl(Ioctl::MemBufCopy64, &mut a), Ok(0));
    drop(src);
    let mut back = [0u8; 16];
    let mut a = abi::MemBufCopy64 {
        mem_handle: big,
        buffer: back.as_mut_ptr() as u64,
        size: 16,
        ..Default::default()
    };
    assert_eq!(raw.ioctl(Ioctl::MemBufCopy64, &mut a), Ok(0));
    assert_eq!(&back, b"12345678\0\0\0\0\0\0\0\0");

    // The backend splits such a copy into pieces below 4 GiB (the spy swallows them).
    let mut spy = Spy::new(sim(Target::Trn1));
    spy.swallow_copies = true;
    let spy = Arc::new(spy);
    let hal = DriverHal::open(0, spy.clone()).unwrap();
    let len = (4u64 << 30) + 8;
    let h = hal.mem_alloc(&dev_req(Target::Trn1, NC0, len)).unwrap();
    let src = vec![0u8; len as usize];
    hal.copy_to_device(h, 0, &src).unwrap();
    let copies = spy.copies.lock().unwrap().clone();
    assert_eq!(copies.len(), 5);
    assert!(copies
        .iter()
        .all(|&(hh, _, n)| hh == h.raw() && n <= COPY_PIECE));
    assert_eq!(copies.iter().map(|c| c.2).sum::<u64>(), len);
    assert_eq!(copies[4], (h.raw(), 4 * COPY_PIECE, 8));
}

/// Rings for queue `q` through `hal`, and a producer for them.
fn rings(hal: &dyn Hal, t: Target, q: QueueRef, count: u32) -> (RingSpec, RingSpec, QueueProducer) {
    let geom = RingGeometry::new(count).unwrap();
    let mut req = dev_req(t, q.nc, geom.byte_size());
    req.category = MemAllocCategory::DmaRingsDevice;
    let tx = hal.mem_alloc(&req).unwrap();
    let rx = hal.mem_alloc(&req).unwrap();
    (
        RingSpec { handle: tx, count },
        RingSpec { handle: rx, count },
        QueueProducer::new(geom, geom),
    )
}

/// Writes a copy's descriptor pairs into the rings; returns the pair count.
fn push(hal: &dyn Hal, tx: RingSpec, rx: RingSpec, prod: &mut QueueProducer, copy: M2mCopy) -> u32 {
    let (ts, rs) = (prod.tx.index(), prod.rx.index());
    let pairs = copy.build(&mut *prod).unwrap();
    for (i, p) in pairs.iter().enumerate() {
        let i = i as u32;
        hal.copy_to_device(
            tx.handle,
            u64::from((ts + i) % tx.count) * 16,
            &p.tx.to_bytes(),
        )
        .unwrap();
        hal.copy_to_device(
            rx.handle,
            u64::from((rs + i) % rx.count) * 16,
            &p.rx.to_bytes(),
        )
        .unwrap();
    }
    pairs.len() as u32
}

#[test]
fn a_dma_copy_runs_and_the_polling_wait_sees_it() {
    for t in [Target::Trn1, Target::Trn2] {
        let (_sim, _drv, hal) = driver(t);
        let nc = NcIndex(1);
        let q = QueueRef::new(nc, DmaEngine(3), QueueId(2));
        let (tx, rx, mut prod) = rings(&hal, t, q, 64);
        hal.dma_queue_init(q, tx, rx).unwrap();
        let st = hal.dma_queue_state(q).unwrap();
        assert_eq!(
            (st.status, st.tx_head, st.tx_tail),
            (QueueStatus::Enabled, 0, 0)
        );

        let src = hal.mem_alloc(&dev_req(t, nc, 200_000)).unwrap();
        let dst = hal.mem_alloc(&dev_req(t, nc, 200_000)).unwrap();
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        hal.copy_to_device(src, 0, &data).unwrap();
        let one = hal.mem_alloc(&dev_req(t, nc, 4)).unwrap();
        hal.copy_to_device(one, 0, &1u32.to_le_bytes()).unwrap();
        let pa = |h| hal.mem_info(h).unwrap().pa;
        let mut n = push(
            &hal,
            tx,
            rx,
            &mut prod,
            M2mCopy::new(pa(src), pa(dst), 200_000),
        );
        // Then a poke incrementing semaphore 7: the completion the wait polls for.
        let inc = t
            .semaphore_addr(nc, SemaphoreId(7), SemWindow::Increment)
            .unwrap();
        n += push(&hal, tx, rx, &mut prod, M2mCopy::new(pa(one), inc, 4));
        hal.dma_queue_copy_start(q, n, n).unwrap();
        hal.wait(
            &WaitCondition::Semaphore {
                nc,
                sem: SemaphoreId(7),
                cmp: SemCmp::Ge,
                value: 1,
            },
            T,
        )
        .unwrap();
        let mut back = vec![0u8; 200_000];
        hal.copy_from_device(dst, 0, &mut back).unwrap();
        assert_eq!(back, data, "{t}");
        let st = hal.dma_queue_state(q).unwrap();
        assert_eq!(
            (st.tx_head, st.tx_tail, st.rx_head, st.rx_tail),
            (n, n, n, n)
        );
        // A memory wait on the copied bytes holds at once; a false one times out.
        let word = nrt_hal::le::u32_at(&data, 8);
        let mem = |cmp, value| WaitCondition::Memory32 {
            handle: dst,
            offset: 8,
            cmp,
            value,
        };
        hal.wait(&mem(SemCmp::Eq, word), T).unwrap();
        match hal.wait(&mem(SemCmp::Ne, word), Duration::from_millis(20)) {
            Err(HalError::Timeout { .. }) => {}
            r => panic!("{r:?}"),
        }
        let misaligned = WaitCondition::Memory32 {
            handle: dst,
            offset: 2,
            cmp: SemCmp::Eq,
            value: 0,
        };
        is_invalid(hal.wait(&misaligned, T), "wait");
    }
}

#[test]
fn queue_hazards_are_refused_before_the_call() {
    let t = Target::Trn1;
    let (_sim, spy, hal) = spied(t);
    let q = QueueRef::new(NC0, DmaEngine(1), QueueId(0));
    let (tx, rx, _) = rings(&hal, t, q, 64);
    for count in [16, 40, 1 << 24] {
        is_invalid(
            hal.dma_queue_init(
                q,
                RingSpec {
                    handle: tx.handle,
                    count,
                },
                rx,
            ),
            "DMA_QUEUE_INIT",
        );
    }
    is_invalid(
        hal.dma_queue_init(QueueRef::new(NC0, DmaEngine(16), QueueId(0)), tx, rx),
        "DMA_QUEUE_INIT",
    );
    assert_eq!(spy.count(Ioctl::DmaQueueInit), 0);
    // Copy-start on a queue never initialised (no RX ring: a kernel BUG) and with rx 0.
    is_invalid(hal.dma_queue_copy_start(q, 1, 1), "DMA_QUEUE_COPY_START");
    hal.dma_queue_init(q, tx, rx).unwrap();
    is_invalid(hal.dma_queue_copy_start(q, 1, 0), "DMA_QUEUE_COPY_START");
    is_invalid(hal.dma_queue_copy_start(q, 65, 1), "DMA_QUEUE_COPY_START");
    assert_eq!(spy.count(Ioctl::DmaQueueCopyStart), 0);
    // A power-of-two size is not required (runtime ABI 7).
    let q2 = QueueRef::new(NC0, DmaEngine(1), QueueId(1));
    let (tx2, rx2, _) = rings(&hal, t, q2, 48);
    hal.dma_queue_init(q2, tx2, rx2).unwrap();
    assert_eq!(spy.count(Ioctl::DmaQueueInit), 2);
    // The driver's own answers to what the backend never sends.
    let (_sim, raw) = Raw::new(t);
    let txh = raw.alloc(1024, false, 0).unwrap();
    let rxh = raw.alloc(1024, false, 0).unwrap();
    let mut a = abi::DmaQueueInit {
        eng_id: 17, // nc1 engine 1
        qid: 0,
        tx_desc_count: 64,
        rx_desc_count: 64,
        tx_handle: txh,
        rx_handle: rxh,
        rxc_handle: rxh,
        ..Default::default()
    };
    assert_eq!(
        raw.ioctl(Ioctl::DmaQueueInit, &mut a),
        Err(Errno::EPERM),
        "rxc != 0 → -1"
    );
    a.rxc_handle = 0;
    a.tx_desc_count = 40;
    assert_eq!(
        raw.ioctl(Ioctl::DmaQueueInit, &mut a),
        Err(Errno::EPERM),
        "udma ring rule → -1"
    );
    a.tx_desc_count = 64;
    a.tx_handle = 9;
    assert_eq!(raw.ioctl(Ioctl::DmaQueueInit, &mut a), Err(Errno::EINVAL));
    a.tx_handle = txh;
    a.eng_id = 32; // v2's host engine: not modelled
    assert_eq!(raw.ioctl(Ioctl::DmaQueueInit, &mut a), Err(Errno::EINVAL));
    let mut s = abi::DmaQueueCopyStart {
        eng_id: 17,
        qid: 0,
        tx_desc_count: 1,
        rx_desc_count: 1,
    };
    assert_eq!(
        raw.ioctl(Ioctl::DmaQueueCopyStart, &mut s),
        Err(Errno::EINVAL),
        "no RX ring"
    );
    a.eng_id = 17;
    assert_eq!(raw.ioctl(Ioctl::DmaQueueInit, &mut a), Ok(0));
    s.rx_desc_count = 0;
    assert_eq!(
        raw.ioctl(Ioctl::DmaQueueCopyStart, &mut s),
        Err(Errno::EINVAL),
        "rx 0"
    );
    s.rx_desc_count = 65;
    assert_eq!(
        raw.ioctl(Ioctl::DmaQueueCopyStart, &mut s),
        Err(Errno::EPERM),
        "beyond ring"
    );
    // GET_STATE writes both out-pointers; null ones fault.
    let (mut tx, mut rx) = (abi::DmaQueueState::default(), abi::DmaQueueState::default());
    let mut g = abi::DmaQueueGetState {
        eng_id: 17,
        qid: 0,
        tx: &mut tx as *mut _ as u64,
        rx: &mut rx as *mut _ as u64,
    };
    assert_eq!(raw.ioctl(Ioctl::DmaQueueGetState, &mut g), Ok(0));
    assert_eq!(tx.sw_status, abi::QueueSwStatus::Enabled.raw());
    assert_eq!((tx.length, rx.length), (64, 64));
    assert_ne!(tx.base_addr, rx.base_addr);
    g.rx = 0;
    assert_eq!(
        raw.ioctl(Ioctl::DmaQueueGetState, &mut g),
        Err(Errno::EFAULT)
    );
}

#[test]
fn semaphores_and_events_with_the_driver_index_rules() {
    let (sim, spy, hal) = spied(Target::Trn1);
    let s = SemaphoreId(9);
    hal.semaphore_write(NC0, s, -5).unwrap();
    assert_eq!(hal.semaphore_read(NC0, s).unwrap(), -5);
    hal.semaphore_increment(NC0, s, 12).unwrap();
    hal.semaphore_decrement(NC0, s, 2).unwrap();
    assert_eq!(hal.semaphore_read(NC0, s).unwrap(), 5);
    assert_eq!(sim.semaphore_read(NC0, s).unwrap(), 5);
    hal.event_set(NcIndex(1), EventId(3), 1).unwrap();
    assert_eq!(hal.event_get(NcIndex(1), EventId(3)).unwrap(), 1);
    assert_eq!(sim.event_get(NcIndex(1), EventId(3)).unwrap(), 1);
    // Hazard 11: the backend validates cores and indices before calling.
    let n = spy.log.lock().unwrap().len();
    is_invalid(hal.semaphore_read(NC0, SemaphoreId(256)), "SEMAPHORE_READ");
    is_invalid(
        hal.semaphore_increment(NcIndex(2), s, 1),
        "SEMAPHORE_INCREMENT",
    );
    is_invalid(hal.event_set(NC0, EventId(256), 1), "EVENT_SET");
    is_invalid(hal.event_get(NcIndex(2), EventId(0)), "EVENT_GET");
    assert_eq!(spy.log.lock().unwrap().len(), n);

    // The driver's rules: semaphores checked, events off by one and nc unchecked.
    let (_sim, raw) = Raw::new(Target::Trn1);
    let mut sem = abi::Semaphore {
        nc_id: 0,
        semaphore_index: 256,
        value: 1,
    };
    assert_eq!(
        raw.ioctl(Ioctl::SemaphoreIncrement, &mut sem),
        Err(Errno::EINVAL)
    );
    sem.semaphore_index = 3;
    sem.nc_id = 2;
    assert_eq!(
        raw.ioctl(Ioctl::SemaphoreRead, &mut sem),
        Err(Errno::EINVAL)
    );
    sem.nc_id = 0x101; // truncated to u8: core 1
    assert_eq!(raw.ioctl(Ioctl::SemaphoreWrite, &mut sem), Ok(0));
    sem.value = 0;
    sem.nc_id = 1;
    assert_eq!(raw.ioctl(Ioctl::SemaphoreRead, &mut sem), Ok(0));
    assert_eq!(sem.value, 1);
    let mut ev = abi::Event {
        nc_id: 0,
        event_index: 256,
        value: 1,
    };
    assert_eq!(
        raw.ioctl(Ioctl::EventSet, &mut ev),
        Ok(0),
        "index 256 accepted"
    );
    ev.value = 9;
    assert_eq!(raw.ioctl(Ioctl::EventGet, &mut ev), Ok(0));
    assert_eq!(ev.value, 0);
    ev.event_index = 257;
    assert_eq!(raw.ioctl(Ioctl::EventSet, &mut ev), Err(Errno::EINVAL));
    ev.event_index = 0;
    ev.nc_id = 7; // not validated
    assert_eq!(raw.ioctl(Ioctl::EventSet, &mut ev), Ok(0));
}

#[test]
fn notification_queues_host_and_device_reuse_and_reset() {
    let t = Target::Trn2;
    let (sim, _drv, hal) = driver(t);
    let nc = NcIndex(3);
    let req = |location, size| NqRequest {
        nc,
        nq_type: NqType::Notify,
        engine_index: 0,
        size,
        location,
    };
    let host = hal
        .notification_init(&req(MemLocation::Host, 4096))
        .unwrap();
    assert!(t.is_host_addr(host.pa));
    assert_eq!(sim.mem_info(host.handle).unwrap().pa, host.pa);
    // The driver reuses the existing queue even if the size differs.
    let again = hal
        .notification_init(&req(MemLocation::Host, 8192))
        .unwrap();
    assert_eq!(again, host);
    let channel = t.hbm_channel_of(nc);
    let mut dreq = req(MemLocation::Device { channel }, 8192);
    dreq.nq_type = NqType::Error;
    let dev = hal.notification_init(&dreq).unwrap();
    assert_eq!(t.hbm_channel_at(dev.pa), Some(channel));
    assert_eq!(dev.pa, sim.mem_info(dev.handle).unwrap().pa);
    let u = hal.memory_usage(nc).unwrap();
    assert_eq!(
        u.by_category[MemAllocCategory::NotificationHost as usize],
        4096
    );
    assert_eq!(
        u.by_category[MemAllocCategory::NotificationDevice as usize],
        8192
    );
    assert_eq!(u, sim.memory_usage(nc).unwrap());
    is_invalid(
        hal.notification_init(&req(MemLocation::Host, 0)),
        "NOTIFICATIONS_INIT_V2",
    );
    is_invalid(
        hal.notification_init(&req(MemLocation::Host, 3000)),
        "NOTIFICATIONS_INIT_V2",
    );

    // Raw: a device NQ reports mmap_offset -1.
    let (_sim, raw) = Raw::new(t);
    let mut a = abi::NotificationsInitV2 {
        nq_dev_id: 1,
        nq_type: NqType::Notify.raw(),
        size: 4096,
        dram_channel: 0,
        ..Default::default()
    };
    assert_eq!(raw.ioctl(Ioctl::NotificationsInitV2, &mut a), Ok(0));
    assert_eq!(a.mmap_offset, abi::NQ_DEVICE_MMAP_OFFSET);
    assert_ne!(a.mem_handle, 0);
    a.nq_dev_type = abi::NqDeviceType::TopSp.raw();
    assert_eq!(
        raw.ioctl(Ioctl::NotificationsInitV2, &mut a),
        Err(Errno::EINVAL)
    );
    let mut qi = abi::NotificationsQueueInfo::default();
    assert_eq!(
        raw.ioctl(Ioctl::NotificationsQueueInfo, &mut qi),
        Err(Errno::EPERM)
    );

    // A core reset frees the core's queues; the next init is a fresh queue.
    hal.nc_reset(1 << nc.0).unwrap();
    let u = hal.memory_usage(nc).unwrap();
    assert_eq!(u.allocations, 0);
    assert_eq!(u, sim.memory_usage(nc).unwrap());
    let fresh = hal
        .notification_init(&req(MemLocation::Host, 8192))
        .unwrap();
    assert_eq!(fresh.size, 8192);
    is_invalid(hal.nc_reset(1 << 8), "NC_RESET");
}

#[test]
fn nc_reset_resets_queues_and_semaphores() {
    let t = Target::Trn1;
    let (_sim, spy, hal) = spied(t);
    let q = QueueRef::new(NcIndex(1), DmaEngine(0), QueueId(4));
    let (tx, rx, _) = rings(&hal, t, q, 32);
    hal.dma_queue_init(q, tx, rx).unwrap();
    hal.semaphore_write(NcIndex(1), SemaphoreId(1), 42).unwrap();
    hal.semaphore_write(NC0, SemaphoreId(1), 43).unwrap();
    hal.nc_reset(0b10).unwrap();
    assert_eq!(spy.count(Ioctl::NcReset), 1);
    assert_eq!(spy.count(Ioctl::NcResetReady), 1);
    assert_eq!(hal.semaphore_read(NcIndex(1), SemaphoreId(1)).unwrap(), 0);
    assert_eq!(hal.semaphore_read(NC0, SemaphoreId(1)).unwrap(), 43);
    assert_eq!(
        hal.dma_queue_state(q).unwrap().status,
        QueueStatus::Disabled
    );
    // The queue must be initialised again before a copy-start.
    is_invalid(hal.dma_queue_copy_start(q, 1, 1), "DMA_QUEUE_COPY_START");
    // Allocations survive.
    hal.mem_info(tx.handle).unwrap();
    let u = hal.memory_usage(NcIndex(1)).unwrap();
    assert_eq!(
        u.by_category[MemAllocCategory::DmaRingsDevice as usize],
        2 * 4096
    );
}

#[test]
fn mapping_is_the_whole_allocation_and_aliases_device_memory() {
    let t = Target::Trn1;
    let (sim, drv, hal) = driver(t);
    let h = hal.mem_alloc(&dev_req(t, NC0, 10_000)).unwrap();
    // SAFETY: nothing else accesses the allocation while the mapping is used; it is unmapped
    // before the allocation is freed.
    let m = unsafe { hal.map(h) }.unwrap();
    assert_eq!(m.len, 12_288);
    assert_eq!(drv.live_mappings(0), 1);
    // SAFETY: inside the mapping, no device work in flight.
    unsafe { m.ptr.as_ptr().add(5000).copy_from(b"mapped".as_ptr(), 6) };
    let mut b = [0u8; 6];
    hal.copy_from_device(h, 5000, &mut b).unwrap();
    assert_eq!(&b, b"mapped");
    sim.copy_to_device(h, 0, b"device").unwrap();
    // SAFETY: as above.
    let s = unsafe { std::slice::from_raw_parts(m.ptr.as_ptr(), 6) };
    assert_eq!(s, b"device");
    // SAFETY: the mapping came from `map` and is not used afterwards.
    unsafe { hal.unmap(m) }.unwrap();
    assert_eq!(drv.live_mappings(0), 0);

    // Raw mmap rules: the whole chunk only; an inner offset maps the chunk from its start.
    let (sim, raw) = Raw::new(t);
    let h = raw.alloc(3 * 4096, false, 0).unwrap();
    let pa = sim.mem_info(MemHandle::new(h).unwrap()).unwrap().pa.raw();
    // SAFETY: the mappings made below are never accessed, and each munmap names a mapping
    // made here (or is refused).
    unsafe {
        assert_eq!(
            raw.drv.mmap(raw.fd, 4096, pa),
            Err(Errno::EINVAL),
            "partial map"
        );
        assert_eq!(
            raw.drv.mmap(raw.fd, 3 * 4096, pa + 1),
            Err(Errno::EINVAL),
            "unaligned"
        );
        assert_eq!(
            raw.drv.mmap(raw.fd, 4096, 0xdead_0000),
            Err(Errno::EINVAL),
            "no chunk"
        );
        assert_eq!(raw.drv.mmap(99, 3 * 4096, pa), Err(Errno::EBADF));
        let p = raw.drv.mmap(raw.fd, 3 * 4096, pa).unwrap();
        let q = raw.drv.mmap(raw.fd, 3 * 4096, pa + 4096).unwrap();
        assert_eq!(p, q);
        assert_eq!(raw.drv.munmap(p, 4096), Err(Errno::EINVAL));
        raw.drv.munmap(p, 3 * 4096).unwrap();
        raw.drv.munmap(q, 3 * 4096).unwrap();
        assert_eq!(raw.drv.munmap(q, 3 * 4096), Err(Errno::EINVAL));
    }
}

#[test]
fn closing_the_last_fd_frees_the_process_allocations_once_unmapped() {
    let (sim, raw) = Raw::new(Target::Trn1);
    let h = raw.alloc(4096, false, 0).unwrap();
    let kept = raw.alloc(4096, true, 0).unwrap();
    let mut nq = abi::NotificationsInitV2 {
        nq_type: NqType::Notify.raw(),
        size: 4096,
        on_host_memory: 1,
        ..Default::default()
    };
    assert_eq!(raw.ioctl(Ioctl::NotificationsInitV2, &mut nq), Ok(0));
    let pa = sim.mem_info(MemHandle::new(h).unwrap()).unwrap().pa.raw();
    // SAFETY: the mapping is never accessed.
    let p = unsafe { raw.drv.mmap(raw.fd, 4096, pa) }.unwrap();
    let misc = raw.drv.open("/dev/neuron0", OFlag::O_WRONLY).unwrap();
    raw.drv.close(raw.fd).unwrap();
    assert_eq!(raw.drv.close(raw.fd), Err(Errno::EBADF));
    // The mapping holds the device open.
    assert_eq!(sim.memory_usage(NC0).unwrap().allocations, 3);
    // SAFETY: `p` came from the mmap above and is unused.
    unsafe { raw.drv.munmap(p, 4096) }.unwrap();
    // The NQ (device lifespan) survives; the process allocations are gone.
    let u = sim.memory_usage(NC0).unwrap();
    assert_eq!(u.allocations, 1);
    assert_eq!(
        u.by_category[MemAllocCategory::NotificationHost as usize],
        4096
    );
    let _ = kept;
    raw.drv.close(misc).unwrap();
}

#[test]
fn fds_misc_fds_and_unknown_requests() {
    let drv = EmulatedDriver::new(vec![sim(Target::Trn1), sim(Target::Trn2)]);
    assert_eq!(drv.open("/dev/neuron2", OFlag::O_RDWR), Err(Errno::ENOENT));
    assert_eq!(drv.open("/dev/nvidia0", OFlag::O_RDWR), Err(Errno::ENOENT));
    let misc = drv.open("/dev/neuron1", OFlag::O_WRONLY).unwrap();
    let fd = drv.open("/dev/neuron1", OFlag::O_RDWR).unwrap();
    let call = |fd, req: u32, arg: &mut [u8]| {
        // SAFETY: `arg` is a live buffer at least as large as every struct used below.
        unsafe { drv.ioctl(fd, req, arg.as_mut_ptr()) }
    };
    let mut v = abi::CompatibleVersion::default();
    assert_eq!(
        call(misc, Ioctl::CompatibleVersion.request(), v.as_mut_bytes()),
        Ok(0)
    );
    assert_eq!((v.max, v.min), (11, 10), "{{max, min}} order, trn2");
    let mut b = abi::DeviceBasicInfo::default();
    assert_eq!(
        call(fd, Ioctl::DeviceBasicInfo.request(), b.as_mut_bytes()),
        Ok(0)
    );
    assert_eq!((b.architecture, b.revision), (3, 240));
    let mut d = abi::DeviceDriverInfo::default();
    assert_eq!(
        call(misc, Ioctl::DriverInfoGet.request(), d.as_mut_bytes()),
        Ok(0)
    );
    assert_eq!((d.feature_flags1, d.size), (0xFF, 24));
    let mut buf = [0u8; 64];
    // A misc fd refuses what is not a misc ioctl.
    assert_eq!(
        call(misc, Ioctl::MemAllocV2Mt64.request(), &mut buf),
        Err(Errno::EINVAL)
    );
    // Unknown numbers (a pointer-sized variant of a struct-sized request, say) are -EINVAL.
    assert_eq!(
        call(fd, abi::req::SEMAPHORE_INCREMENT ^ (4 << 16), &mut buf),
        Err(Errno::EINVAL)
    );
    assert_eq!(call(fd, 0x1234_5678, &mut buf), Err(Errno::EINVAL));
    // Recognised but not emulated.
    assert_eq!(
        call(fd, Ioctl::BarRead.request(), &mut buf),
        Err(Errno::ENOSYS)
    );
    assert_eq!(
        call(fd, Ioctl::DmaQuiesceQueues.request(), &mut buf),
        Err(Errno::ENOTTY)
    );
    // Unknown fd, null argument.
    assert_eq!(
        call(1, Ioctl::DeviceBasicInfo.request(), &mut buf),
        Err(Errno::EBADF)
    );
    // SAFETY: a null argument is allowed by the contract.
    let r = unsafe { drv.ioctl(fd, Ioctl::DeviceBasicInfo.request(), std::ptr::null_mut()) };
    assert_eq!(r, Err(Errno::EFAULT));
    // NC_RESET returns the caller's id; NC_RESET_READY reports success.
    let mut r = abi::DeviceReset {
        nc_map: abi::NC_MAP_DEVICE,
        request_id: 0,
    };
    assert_eq!(call(fd, Ioctl::NcReset.request(), r.as_mut_bytes()), Ok(0));
    assert_eq!(r.request_id, std::process::id());
    let mut ready = abi::DeviceReady {
        request_id: r.request_id,
        result: -1,
    };
    assert_eq!(
        call(fd, Ioctl::NcResetReady.request(), ready.as_mut_bytes()),
        Ok(0)
    );
    assert_eq!(ready.result, abi::RESET_RESULT_OK);
    drv.close(fd).unwrap();
    drv.close(misc).unwrap();
    assert_eq!(drv.open_fds(), 0);
}

#[test]
fn memory_usage_is_the_backends_own_accounting() {
    let t = Target::Trn2;
    let (sim, _drv, hal) = driver(t);
    let nc = NcIndex(5);
    let a = hal.mem_alloc(&dev_req(t, nc, 100)).unwrap();
    let _b = hal.mem_alloc(&host_req(nc, 70_000)).unwrap();
    let u = hal.memory_usage(nc).unwrap();
    assert_eq!(u.allocations, 2);
    assert_eq!(u.device_bytes(), 4096);
    assert_eq!(u.host_bytes(), 73_728);
    assert_eq!(u, sim.memory_usage(nc).unwrap());
    hal.mem_free(a).unwrap();
    assert_eq!(hal.memory_usage(nc).unwrap(), sim.memory_usage(nc).unwrap());
    assert_eq!(hal.memory_usage(NC0).unwrap().allocations, 0);
    is_invalid(hal.memory_usage(NcIndex(8)), "memory_usage");
}
