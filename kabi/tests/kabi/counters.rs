//! The counters the driver's sysfs tree shows, kept by the emulation (docs/driver.md §13.3):
//! memory in use per core and category follows allocations and frees made through the driver
//! backend (with the last change and the peak), core resets and open descriptors are counted,
//! and counters published in a shared directory are read back by another reader, while a
//! file whose process is gone is dropped.

use std::sync::Arc;

use nrt_hal::abi::MemAllocCategory;
use nrt_hal::driver::DriverHal;
use nrt_hal::hal::{AllocRequest, MemLocation};
use nrt_hal::{Hal, NcIndex, Target};
use nrt_kabi::counters::{CoreCounter, CounterValue, DEVICE_MEM_CATEGORIES, HOST_MEM_CATEGORIES};
use nrt_kabi::registry::Registry;
use nrt_kabi::sysfs::{Layout, Node};
use nrt_kabi::EmulatedDriver;
use nrt_sim::{Sim, SimConfig};

fn sims(target: Target, n: usize) -> Vec<Arc<Sim>> {
    (0..n)
        .map(|_| Arc::new(Sim::new(SimConfig::new(target))))
        .collect()
}

fn req(nc: u32, size: u64, category: MemAllocCategory) -> AllocRequest {
    let location = if category.is_host() {
        MemLocation::Host
    } else {
        MemLocation::Device {
            channel: Target::Trn1.hbm_channel_of(NcIndex(nc)),
        }
    };
    AllocRequest {
        size,
        align: 0,
        location,
        nc: NcIndex(nc),
        category,
    }
}

fn category(name: &str) -> CoreCounter {
    CoreCounter::DeviceCategory(
        DEVICE_MEM_CATEGORIES
            .iter()
            .position(|(n, _)| *n == name)
            .unwrap(),
    )
}

#[test]
fn memory_counters_follow_allocations_with_last_change_and_peak() {
    let drv = Arc::new(EmulatedDriver::new(sims(Target::Trn1, 2)));
    let hal = DriverHal::open(1, drv.clone()).unwrap();
    let c = || drv.counters(1).unwrap().snapshot();
    assert_eq!(c().attached(), 1, "the backend holds the device open");
    assert_eq!(drv.counters(0).unwrap().snapshot().attached(), 0);
    let base = c().core(1, CoreCounter::DeviceMem).total;

    let a = hal
        .mem_alloc(&req(1, 3 * 4096, MemAllocCategory::TensorsDevice))
        .unwrap();
    let b = hal
        .mem_alloc(&req(1, 4096, MemAllocCategory::CodeDevice))
        .unwrap();
    assert_eq!(
        c().core(1, CoreCounter::DeviceMem),
        CounterValue {
            total: base + 4 * 4096,
            present: 4096,
            peak: base + 4 * 4096
        }
    );
    assert_eq!(c().core(1, category("tensors")).total, 3 * 4096);
    assert_eq!(c().core(1, category("model_code")).total, 4096);
    assert_eq!(
        c().core(0, CoreCounter::DeviceMem).total,
        0,
        "core 0 untouched"
    );

    hal.mem_free(a).unwrap();
    assert_eq!(
        c().core(1, CoreCounter::DeviceMem),
        CounterValue {
            total: base + 4096,
            present: 3 * 4096,
            peak: base + 4 * 4096
        }
    );
    assert_eq!(
        c().core(1, category("tensors")),
        CounterValue {
            total: 0,
            present: 3 * 4096,
            peak: 3 * 4096
        }
    );

    // Host memory: per core, and per device by category.
    let h = hal
        .mem_alloc(&req(0, 2 * 4096, MemAllocCategory::TensorsHost))
        .unwrap();
    assert_eq!(c().core(0, CoreCounter::HostMem).total, 2 * 4096);
    let tensors = HOST_MEM_CATEGORIES
        .iter()
        .position(|(n, _)| *n == "tensors")
        .unwrap();
    assert_eq!(c().host(tensors).total, 2 * 4096);
    hal.mem_free(h).unwrap();
    hal.mem_free(b).unwrap();
    assert_eq!(c().host(tensors).total, 0);
    assert_eq!(c().core(1, CoreCounter::DeviceMem).total, base);

    // Reset requests, per core in the map.
    hal.nc_reset(0b10).unwrap();
    let resets = CoreCounter::other("reset_req_count").unwrap();
    assert_eq!(c().core(1, resets).total, 1);
    assert_eq!(c().core(0, resets).total, 0);
    drop(hal);
    assert_eq!(c().attached(), 0, "closed");
}

#[test]
fn published_counters_are_read_by_another_reader_and_stale_files_dropped() {
    let dir = std::env::temp_dir().join(format!("nrt-kabi-registry-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let layout = Layout {
        target: Target::Trn1,
        devices: 2,
    };
    let reg = Registry::at(&dir, layout);
    assert!(reg.publishers().is_empty(), "nothing published yet");
    let publication = reg.publish().unwrap();
    publication.set_runtime_version("2.30.50");
    let drv = Arc::new(EmulatedDriver::with_counters(
        sims(Target::Trn1, 2),
        publication.counters(),
    ));
    let hal = DriverHal::open(0, drv.clone()).unwrap();
    let x = hal
        .mem_alloc(&req(1, 5 * 4096, MemAllocCategory::ConstantsDevice))
        .unwrap();

    // A reader of the same directory (as in another process).
    let reader = Registry::at(&dir, layout);
    let ps = reader.publishers();
    assert_eq!(ps.len(), 1);
    assert_eq!(ps[0].pid, std::process::id());
    assert_eq!(ps[0].runtime_version.as_deref(), Some("2.30.50"));
    assert_eq!(ps[0].devices[0].attached(), 1);
    assert_eq!(reader.sum(0).core(1, category("constants")).total, 5 * 4096);
    // Another device set is another directory.
    let other = Registry::at(
        &dir,
        Layout {
            target: Target::Trn2,
            devices: 2,
        },
    );
    assert!(other.publishers().is_empty());

    // A file nobody holds (its process is gone) is ignored and removed.
    let stale = reg.dir().join("4000000000");
    std::fs::copy(reg.dir().join(std::process::id().to_string()), &stale).unwrap();
    assert_eq!(reader.publishers().len(), 1);
    assert!(!stale.exists(), "stale file removed");

    hal.mem_free(x).unwrap();
    assert_eq!(reader.sum(0).core(1, category("constants")).total, 0);
    drop(hal);
    // Rendered through the tree, as the shim serves it.
    let (_, node) = layout
        .resolve(
            "/sys/class/neuron_device/neuron0/neuron_core1/stats/memory_usage/device_mem/constants/peak",
            true,
        )
        .unwrap();
    let Node::File(attr) = node else {
        panic!("not a file")
    };
    assert_eq!(
        layout.render(&attr, |d| reader.sum(d as usize)),
        format!("{}\n", 5 * 4096)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
