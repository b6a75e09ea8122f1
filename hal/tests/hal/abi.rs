//! Tests for `nrt_hal::abi` against docs/driver.md §2.2 and §3.
//!
//! Every expected number below is written as a literal copied from docs/driver.md §2.2, never derived
//! from the code under test.

use core::mem::{offset_of, size_of};
use std::collections::{HashMap, HashSet};

use nrt_hal::abi::*;
use zerocopy::{FromBytes, IntoBytes};

/// Every request number equals the literal in docs/driver.md §2.2 (main table and the "other
/// requests" paragraph; CRWL_READER_EXIT / WRITER_ENTER are the 0x40084E51..54 range).
#[test]
fn request_numbers_match_fact_sheet() {
    assert_eq!(req::DEVICE_RESET, 0x0000_4E01);
    assert_eq!(req::DEVICE_READY, 0x8001_4E02);
    assert_eq!(req::DEVICE_INFO, 0x8008_4E03);
    assert_eq!(req::DEVICE_INIT, 0x8008_4E04);
    assert_eq!(req::DEVICE_RELEASE, 0x0000_4E05);
    assert_eq!(req::DEVICE_APP_PID, 0x8004_4E06);
    assert_eq!(req::DEVICE_GET_ALL_APPS_INFO, 0x8008_4E07);
    assert_eq!(req::BAR_READ, 0x8008_4E0B);
    assert_eq!(req::BAR_WRITE, 0x4008_4E0C);
    assert_eq!(req::POST_METRIC, 0x4008_4E0D);
    assert_eq!(req::MEM_ALLOC, 0x8008_4E15);
    assert_eq!(req::MEM_FREE, 0x8008_4E16);
    assert_eq!(req::MEM_COPY, 0x8008_4E17);
    assert_eq!(req::MEM_COPY64, 0x8028_4E17);
    assert_eq!(req::MEM_BUF_COPY, 0xC008_4E18);
    assert_eq!(req::MEM_BUF_COPY64, 0xC028_4E18);
    assert_eq!(req::MEM_GET_PA, 0x8008_4E19);
    assert_eq!(req::MEM_GET_INFO, 0x8008_4E1A);
    assert_eq!(req::PROGRAM_ENGINE, 0xC008_4E1B);
    assert_eq!(req::MEMSET, 0x8008_4E1C);
    assert_eq!(req::MEMSET64, 0x8020_4E1C);
    assert_eq!(req::MEM_GET_EXTENDED_INFO, 0x8008_4E1D);
    assert_eq!(req::DMA_ENG_INIT, 0x8008_4E1E);
    assert_eq!(req::DMA_ENG_SET_STATE, 0x8008_4E1F);
    assert_eq!(req::DMA_ENG_GET_STATE, 0xC008_4E20);
    assert_eq!(req::DMA_QUEUE_INIT, 0x8008_4E21);
    assert_eq!(req::DMA_QUEUE_RELEASE, 0x8008_4E22);
    assert_eq!(req::DMA_QUEUE_COPY_START, 0x8008_4E23);
    assert_eq!(req::DMA_ACK_COMPLETED, 0x8008_4E24);
    assert_eq!(req::DMA_QUEUE_GET_STATE, 0xC008_4E25);
    assert_eq!(req::DMA_COPY_DESCRIPTORS, 0x8008_4E26);
    assert_eq!(req::DMA_COPY_DESCRIPTORS64, 0x8028_4E26);
    assert_eq!(req::DMA_DESCRIPTOR_COPYOUT, 0xC008_4E27);
    assert_eq!(req::DMA_QUIESCE_QUEUES, 0x8008_4E28);
    assert_eq!(req::SEMAPHORE_INCREMENT, 0x8008_4E29);
    assert_eq!(req::SEMAPHORE_DECREMENT, 0x8008_4E2A);
    assert_eq!(req::SEMAPHORE_READ, 0xC008_4E2B);
    assert_eq!(req::SEMAPHORE_WRITE, 0x8008_4E2C);
    assert_eq!(req::EVENT_SET, 0x8008_4E2D);
    assert_eq!(req::EVENT_GET, 0xC008_4E2E);
    assert_eq!(req::NOTIFICATIONS_INIT_V1, 0x8008_4E33);
    assert_eq!(req::NOTIFICATIONS_DESTROY_V1, 0x8008_4E34);
    assert_eq!(req::NOTIFICATIONS_INIT_V2, 0x8008_4E35);
    assert_eq!(req::NOTIFICATIONS_INIT_WITH_REALLOC_V2, 0x8008_4E36);
    assert_eq!(req::NOTIFICATIONS_QUEUE_INFO, 0x8008_4E3A);
    assert_eq!(req::READ_HW_COUNTERS, 0x8008_4E3D);
    assert_eq!(req::ACQUIRE_NEURON_DS, 0x8008_4E47);
    assert_eq!(req::RELEASE_NEURON_DS, 0x8008_4E48);
    assert_eq!(req::CRWL_READER_ENTER, 0x4008_4E51);
    assert_eq!(req::CRWL_READER_EXIT, 0x4008_4E52);
    assert_eq!(req::CRWL_WRITER_ENTER, 0x4008_4E53);
    assert_eq!(req::CRWL_WRITER_DOWNGRADE, 0x4008_4E54);
    assert_eq!(req::CRWL_NC_RANGE_MARK, 0x4008_4E55);
    assert_eq!(req::CRWL_NC_RANGE_MARK_EXT0, 0xC050_4E55);
    assert_eq!(req::CRWL_NC_RANGE_UNMARK, 0x4008_4E56);
    assert_eq!(req::CRWL_NC_RANGE_UNMARK_EXT0, 0x4050_4E56);
    assert_eq!(req::CINIT_SET_STATE, 0x4008_4E5B);
    assert_eq!(req::NC_MODEL_STARTED_COUNT, 0x4008_4E5C);
    assert_eq!(req::COMPATIBLE_VERSION, 0x4008_4E5D);
    assert_eq!(req::DEVICE_BASIC_INFO, 0x4008_4E64);
    assert_eq!(req::DEVICE_BDF, 0x8008_4E65);
    assert_eq!(req::MEM_ALLOC_V2, 0x8008_4E66);
    assert_eq!(req::MEM_ALLOC_V2MT, 0x8030_4E66);
    assert_eq!(req::MEM_ALLOC_V2MT64, 0x8038_4E66);
    assert_eq!(req::NC_RESET, 0x8008_4E67);
    assert_eq!(req::NC_RESET_READY, 0x8008_4E68);
    assert_eq!(req::PROGRAM_ENGINE_NC, 0xC008_4E69);
    assert_eq!(req::PROGRAM_ENGINE_NC64, 0xC028_4E69);
    assert_eq!(req::DEVICE_RESET_STATUS, 0x8001_4E6A);
    assert_eq!(req::DEVICE_BDF_EXT, 0x8008_4E6A);
    assert_eq!(req::DMABUF_FD, 0x8008_4E6B);
    assert_eq!(req::MEM_COPY_ASYNC, 0xC030_4E6C);
    assert_eq!(req::MEM_COPY_ASYNC64, 0xC038_4E6C);
    assert_eq!(req::MEM_COPY_ASYNC_WAIT, 0x4018_4E6D);
    assert_eq!(req::DRIVER_INFO_GET, 0x8018_4E6E);
    assert_eq!(req::DRIVER_INFO_SET, 0x4018_4E6E);
    assert_eq!(req::MEM_MC_GET_INFO, 0xC018_4E6F);
    assert_eq!(req::MEM_MC_GET_INFO_V2, 0xC020_4E6F);
    assert_eq!(req::RESOURCE_MMAP_INFO, 0xC020_4E70);
    assert_eq!(req::PRINTK, 0x4010_4E71);
    assert_eq!(req::HOST_DEVICE_ID, 0x8004_4E72);
    assert_eq!(req::HOST_DEVICE_ID_TO_RID_MAP, 0xC104_4E73);
    assert_eq!(req::DUMP_MEM_CHUNKS, 0x8008_4E74);
    assert_eq!(req::NC_PID_STATE_DUMP, 0xC010_4E75);
    assert_eq!(req::HBM_SCRUB_START, 0xC010_4E76);
    assert_eq!(req::HBM_SCRUB_WAIT, 0xC008_4E77);
    assert_eq!(req::GET_LOGICAL_TO_PHYSICAL_NC_MAP, 0xC010_4E78);
    assert_eq!(req::POD_INFO, 0xC104_4E79);
    assert_eq!(req::POD_STATUS, 0xC10C_4E7A);
    assert_eq!(req::POD_STATUS_V2, 0xC114_4E7A);
    assert_eq!(req::POD_CTRL, 0xC010_4E7B);
    assert_eq!(req::POD_CTRL_V2, 0xC014_4E7B);
    assert_eq!(req::MEM_BUF_ZEROCOPY64, 0xC028_4E7C);
    assert_eq!(req::DMA_QUEUE_INIT_BATCH, 0xB008_4E85);
}

/// (variant, name, literal request) for every ioctl.
#[rustfmt::skip]
const TABLE: &[(Ioctl, &str, u32)] = &[
    (Ioctl::DeviceReset, "DEVICE_RESET", 0x0000_4E01),
    (Ioctl::DeviceReady, "DEVICE_READY", 0x8001_4E02),
    (Ioctl::DeviceInfo, "DEVICE_INFO", 0x8008_4E03),
    (Ioctl::DeviceInit, "DEVICE_INIT", 0x8008_4E04),
    (Ioctl::DeviceRelease, "DEVICE_RELEASE", 0x0000_4E05),
    (Ioctl::DeviceAppPid, "DEVICE_APP_PID", 0x8004_4E06),
    (Ioctl::DeviceGetAllAppsInfo, "DEVICE_GET_ALL_APPS_INFO", 0x8008_4E07),
    (Ioctl::BarRead, "BAR_READ", 0x8008_4E0B),
    (Ioctl::BarWrite, "BAR_WRITE", 0x4008_4E0C),
    (Ioctl::PostMetric, "POST_METRIC", 0x4008_4E0D),
    (Ioctl::MemAlloc, "MEM_ALLOC", 0x8008_4E15),
    (Ioctl::MemFree, "MEM_FREE", 0x8008_4E16),
    (Ioctl::MemCopy, "MEM_COPY", 0x8008_4E17),
    (Ioctl::MemCopy64, "MEM_COPY64", 0x8028_4E17),
    (Ioctl::MemBufCopy, "MEM_BUF_COPY", 0xC008_4E18),
    (Ioctl::MemBufCopy64, "MEM_BUF_COPY64", 0xC028_4E18),
    (Ioctl::MemGetPa, "MEM_GET_PA", 0x8008_4E19),
    (Ioctl::MemGetInfo, "MEM_GET_INFO", 0x8008_4E1A),
    (Ioctl::ProgramEngine, "PROGRAM_ENGINE", 0xC008_4E1B),
    (Ioctl::Memset, "MEMSET", 0x8008_4E1C),
    (Ioctl::Memset64, "MEMSET64", 0x8020_4E1C),
    (Ioctl::MemGetExtendedInfo, "MEM_GET_EXTENDED_INFO", 0x8008_4E1D),
    (Ioctl::DmaEngInit, "DMA_ENG_INIT", 0x8008_4E1E),
    (Ioctl::DmaEngSetState, "DMA_ENG_SET_STATE", 0x8008_4E1F),
    (Ioctl::DmaEngGetState, "DMA_ENG_GET_STATE", 0xC008_4E20),
    (Ioctl::DmaQueueInit, "DMA_QUEUE_INIT", 0x8008_4E21),
    (Ioctl::DmaQueueRelease, "DMA_QUEUE_RELEASE", 0x8008_4E22),
    (Ioctl::DmaQueueCopyStart, "DMA_QUEUE_COPY_START", 0x8008_4E23),
    (Ioctl::DmaAckCompleted, "DMA_ACK_COMPLETED", 0x8008_4E24),
    (Ioctl::DmaQueueGetState, "DMA_QUEUE_GET_STATE", 0xC008_4E25),
    (Ioctl::DmaCopyDescriptors, "DMA_COPY_DESCRIPTORS", 0x8008_4E26),
    (Ioctl::DmaCopyDescriptors64, "DMA_COPY_DESCRIPTORS64", 0x8028_4E26),
    (Ioctl::DmaDescriptorCopyout, "DMA_DESCRIPTOR_COPYOUT", 0xC008_4E27),
    (Ioctl::DmaQuiesceQueues, "DMA_QUIESCE_QUEUES", 0x8008_4E28),
    (Ioctl::SemaphoreIncrement, "SEMAPHORE_INCREMENT", 0x8008_4E29),
    (Ioctl::SemaphoreDecrement, "SEMAPHORE_DECREMENT", 0x8008_4E2A),
    (Ioctl::SemaphoreRead, "SEMAPHORE_READ", 0xC008_4E2B),
    (Ioctl::SemaphoreWrite, "SEMAPHORE_WRITE", 0x8008_4E2C),
    (Ioctl::EventSet, "EVENT_SET", 0x8008_4E2D),
    (Ioctl::EventGet, "EVENT_GET", 0xC008_4E2E),
    (Ioctl::NotificationsInitV1, "NOTIFICATIONS_INIT_V1", 0x8008_4E33),
    (Ioctl::NotificationsDestroyV1, "NOTIFICATIONS_DESTROY_V1", 0x8008_4E34),
    (Ioctl::NotificationsInitV2, "NOTIFICATIONS_INIT_V2", 0x8008_4E35),
    (Ioctl::NotificationsInitWithReallocV2, "NOTIFICATIONS_INIT_WITH_REALLOC_V2", 0x8008_4E36),
    (Ioctl::NotificationsQueueInfo, "NOTIFICATIONS_QUEUE_INFO", 0x8008_4E3A),
    (Ioctl::ReadHwCounters, "READ_HW_COUNTERS", 0x8008_4E3D),
    (Ioctl::AcquireNeuronDs, "ACQUIRE_NEURON_DS", 0x8008_4E47),
    (Ioctl::ReleaseNeuronDs, "RELEASE_NEURON_DS", 0x8008_4E48),
    (Ioctl::CrwlReaderEnter, "CRWL_READER_ENTER", 0x4008_4E51),
    (Ioctl::CrwlReaderExit, "CRWL_READER_EXIT", 0x4008_4E52),
    (Ioctl::CrwlWriterEnter, "CRWL_WRITER_ENTER", 0x4008_4E53),
    (Ioctl::CrwlWriterDowngrade, "CRWL_WRITER_DOWNGRADE", 0x4008_4E54),
    (Ioctl::CrwlNcRangeMark, "CRWL_NC_RANGE_MARK", 0x4008_4E55),
    (Ioctl::CrwlNcRangeMarkExt0, "CRWL_NC_RANGE_MARK_EXT0", 0xC050_4E55),
    (Ioctl::CrwlNcRangeUnmark, "CRWL_NC_RANGE_UNMARK", 0x4008_4E56),
    (Ioctl::CrwlNcRangeUnmarkExt0, "CRWL_NC_RANGE_UNMARK_EXT0", 0x4050_4E56),
    (Ioctl::CinitSetState, "CINIT_SET_STATE", 0x4008_4E5B),
    (Ioctl::NcModelStartedCount, "NC_MODEL_STARTED_COUNT", 0x4008_4E5C),
    (Ioctl::CompatibleVersion, "COMPATIBLE_VERSION", 0x4008_4E5D),
    (Ioctl::DeviceBasicInfo, "DEVICE_BASIC_INFO", 0x4008_4E64),
    (Ioctl::DeviceBdf, "DEVICE_BDF", 0x8008_4E65),
    (Ioctl::MemAllocV2, "MEM_ALLOC_V2", 0x8008_4E66),
    (Ioctl::MemAllocV2Mt, "MEM_ALLOC_V2MT", 0x8030_4E66),
    (Ioctl::MemAllocV2Mt64, "MEM_ALLOC_V2MT64", 0x8038_4E66),
    (Ioctl::NcReset, "NC_RESET", 0x8008_4E67),
    (Ioctl::NcResetReady, "NC_RESET_READY", 0x8008_4E68),
    (Ioctl::ProgramEngineNc, "PROGRAM_ENGINE_NC", 0xC008_4E69),
    (Ioctl::ProgramEngineNc64, "PROGRAM_ENGINE_NC64", 0xC028_4E69),
    (Ioctl::DeviceResetStatus, "DEVICE_RESET_STATUS", 0x8001_4E6A),
    (Ioctl::DeviceBdfExt, "DEVICE_BDF_EXT", 0x8008_4E6A),
    (Ioctl::DmabufFd, "DMABUF_FD", 0x8008_4E6B),
    (Ioctl::MemCopyAsync, "MEM_COPY_ASYNC", 0xC030_4E6C),
    (Ioctl::MemCopyAsync64, "MEM_COPY_ASYNC64", 0xC038_4E6C),
    (Ioctl::MemCopyAsyncWait, "MEM_COPY_ASYNC_WAIT", 0x4018_4E6D),
    (Ioctl::DriverInfoGet, "DRIVER_INFO_GET", 0x8018_4E6E),
    (Ioctl::DriverInfoSet, "DRIVER_INFO_SET", 0x4018_4E6E),
    (Ioctl::MemMcGetInfo, "MEM_MC_GET_INFO", 0xC018_4E6F),
    (Ioctl::MemMcGetInfoV2, "MEM_MC_GET_INFO_V2", 0xC020_4E6F),
    (Ioctl::ResourceMmapInfo, "RESOURCE_MMAP_INFO", 0xC020_4E70),
    (Ioctl::Printk, "PRINTK", 0x4010_4E71),
    (Ioctl::HostDeviceId, "HOST_DEVICE_ID", 0x8004_4E72),
    (Ioctl::HostDeviceIdToRidMap, "HOST_DEVICE_ID_TO_RID_MAP", 0xC104_4E73),
    (Ioctl::DumpMemChunks, "DUMP_MEM_CHUNKS", 0x8008_4E74),
    (Ioctl::NcPidStateDump, "NC_PID_STATE_DUMP", 0xC010_4E75),
    (Ioctl::HbmScrubStart, "HBM_SCRUB_START", 0xC010_4E76),
    (Ioctl::HbmScrubWait, "HBM_SCRUB_WAIT", 0xC008_4E77),
    (Ioctl::GetLogicalToPhysicalNcMap, "GET_LOGICAL_TO_PHYSICAL_NC_MAP", 0xC010_4E78),
    (Ioctl::PodInfo, "POD_INFO", 0xC104_4E79),
    (Ioctl::PodStatus, "POD_STATUS", 0xC10C_4E7A),
    (Ioctl::PodStatusV2, "POD_STATUS_V2", 0xC114_4E7A),
    (Ioctl::PodCtrl, "POD_CTRL", 0xC010_4E7B),
    (Ioctl::PodCtrlV2, "POD_CTRL_V2", 0xC014_4E7B),
    (Ioctl::MemBufZerocopy64, "MEM_BUF_ZEROCOPY64", 0xC028_4E7C),
    (Ioctl::DmaQueueInitBatch, "DMA_QUEUE_INIT_BATCH", 0xB008_4E85),
];

#[test]
fn ioctl_enum_covers_every_request() {
    assert_eq!(TABLE.len(), 94);
    assert_eq!(Ioctl::ALL.len(), TABLE.len());
    let listed: HashSet<Ioctl> = TABLE.iter().map(|t| t.0).collect();
    assert_eq!(listed.len(), TABLE.len(), "duplicate variant in TABLE");
    for ioctl in Ioctl::ALL {
        assert!(listed.contains(ioctl), "{ioctl:?} missing from TABLE");
    }
    for &(ioctl, name, request) in TABLE {
        assert_eq!(ioctl.request(), request, "{name}");
        assert_eq!(ioctl.name(), name);
        assert_eq!(ioctl.to_string(), name);
        assert_eq!(Ioctl::from_request(request), Some(ioctl), "{name}");
        assert_eq!(ioctl.request_code() as u32, request, "{name}");
        assert_eq!(ioctl.nr(), (request & 0xFF) as u8);
        assert_eq!(ioctl.encoded_size(), ((request >> 16) & 0x3FFF) as u16);
        assert_eq!(ioctl.dir(), (request >> 30) as u8);
    }
}

#[test]
fn request_numbers_are_distinct_and_use_base_n() {
    assert_eq!(IOCTL_BASE, b'N');
    assert_eq!(IOCTL_BASE, 0x4E);
    let mut seen = HashMap::new();
    for ioctl in Ioctl::ALL {
        assert_eq!(ioc_type(ioctl.request()), 0x4E, "{ioctl}");
        if let Some(prev) = seen.insert(ioctl.request(), *ioctl) {
            panic!("{prev} and {ioctl} share request {:#x}", ioctl.request());
        }
    }
}

#[test]
fn from_request_distinguishes_ioctls_sharing_an_nr() {
    // MEM_ALLOC_V2 / V2MT / V2MT64: nr 102, sizes 8 / 48 / 56.
    assert_eq!(Ioctl::from_request(0x8008_4E66), Some(Ioctl::MemAllocV2));
    assert_eq!(Ioctl::from_request(0x8030_4E66), Some(Ioctl::MemAllocV2Mt));
    assert_eq!(
        Ioctl::from_request(0x8038_4E66),
        Some(Ioctl::MemAllocV2Mt64)
    );
    for (ioctl, size) in [
        (Ioctl::MemAllocV2, 8),
        (Ioctl::MemAllocV2Mt, 48),
        (Ioctl::MemAllocV2Mt64, 56),
    ] {
        assert_eq!(ioctl.nr(), 102);
        assert_eq!(ioctl.encoded_size(), size);
        assert_eq!(ioctl.dir(), IOC_READ);
    }
    // Other shared nrs.
    assert_eq!(Ioctl::from_request(0x8008_4E17), Some(Ioctl::MemCopy));
    assert_eq!(Ioctl::from_request(0x8028_4E17), Some(Ioctl::MemCopy64));
    assert_eq!(Ioctl::from_request(0xC008_4E18), Some(Ioctl::MemBufCopy));
    assert_eq!(Ioctl::from_request(0xC028_4E18), Some(Ioctl::MemBufCopy64));
    assert_eq!(Ioctl::from_request(0x8008_4E1C), Some(Ioctl::Memset));
    assert_eq!(Ioctl::from_request(0x8020_4E1C), Some(Ioctl::Memset64));
    assert_eq!(
        Ioctl::from_request(0x8001_4E6A),
        Some(Ioctl::DeviceResetStatus)
    );
    assert_eq!(Ioctl::from_request(0x8008_4E6A), Some(Ioctl::DeviceBdfExt));
    assert_eq!(Ioctl::from_request(0x8018_4E6E), Some(Ioctl::DriverInfoGet));
    assert_eq!(Ioctl::from_request(0x4018_4E6E), Some(Ioctl::DriverInfoSet));
    // Same nr, unknown size or direction, wrong type byte, nonsense: no match.
    assert_eq!(Ioctl::from_request(0x8040_4E66), None);
    assert_eq!(Ioctl::from_request(0x4038_4E66), None);
    assert_eq!(Ioctl::from_request(0x8038_4F66), None);
    assert_eq!(Ioctl::from_request(0x8038_0066), None);
    assert_eq!(Ioctl::from_request(0), None);
    assert_eq!(Ioctl::from_request(u32::MAX), None);
}

#[test]
fn encoded_size_follows_pointer_vs_struct_rule() {
    assert_eq!(PTR_SIZE, 8);
    // Pointer-typed macros encode 8 whatever the struct size.
    assert_eq!(Ioctl::DeviceInfo.encoded_size(), 8);
    assert_eq!(Ioctl::MemGetExtendedInfo.encoded_size(), 8);
    assert_eq!(Ioctl::NotificationsInitV2.encoded_size(), 8);
    assert_eq!(Ioctl::DmaQueueInit.encoded_size(), 8);
    assert_eq!(Ioctl::SemaphoreIncrement.encoded_size(), 8);
    // Struct-typed macros encode the struct size.
    assert_eq!(Ioctl::MemAllocV2Mt64.encoded_size(), 56);
    assert_eq!(Ioctl::MemBufCopy64.encoded_size(), 40);
    assert_eq!(Ioctl::Memset64.encoded_size(), 32);
    assert_eq!(Ioctl::DriverInfoGet.encoded_size(), 24);
    assert_eq!(Ioctl::ResourceMmapInfo.encoded_size(), 32);
    assert_eq!(Ioctl::DmaQueueInitBatch.encoded_size(), 12296);
    assert_eq!(Ioctl::CrwlNcRangeMarkExt0.encoded_size(), 80);
    // __u8 → 1, __s32 → 4, _IO → 0.
    assert_eq!(Ioctl::DeviceReady.encoded_size(), 1);
    assert_eq!(Ioctl::DeviceResetStatus.encoded_size(), 1);
    assert_eq!(Ioctl::DeviceAppPid.encoded_size(), 4);
    assert_eq!(Ioctl::DeviceReset.encoded_size(), 0);
    assert_eq!(Ioctl::DeviceReset.dir(), IOC_NONE);
    // Direction bits as the driver declares them (not as the data flows).
    assert_eq!(Ioctl::CompatibleVersion.dir(), IOC_WRITE);
    assert_eq!(Ioctl::DeviceBasicInfo.dir(), IOC_WRITE);
    assert_eq!(Ioctl::SemaphoreRead.dir(), IOC_READ | IOC_WRITE);
}

#[test]
fn arg_size_is_the_struct_the_driver_copies() {
    assert_eq!(Ioctl::MemAllocV2Mt64.arg_size(), Some(56));
    assert_eq!(Ioctl::MemGetExtendedInfo.arg_size(), Some(48));
    assert_eq!(Ioctl::DeviceInfo.arg_size(), Some(80));
    assert_eq!(Ioctl::NotificationsInitV2.arg_size(), Some(48));
    assert_eq!(Ioctl::SemaphoreIncrement.arg_size(), Some(12));
    assert_eq!(Ioctl::EventSet.arg_size(), Some(12));
    assert_eq!(Ioctl::DmaEngGetState.arg_size(), Some(16));
    assert_eq!(Ioctl::CompatibleVersion.arg_size(), Some(8));
    assert_eq!(Ioctl::NcReset.arg_size(), Some(8));
    assert_eq!(Ioctl::DeviceReady.arg_size(), Some(1));
    assert_eq!(Ioctl::DeviceAppPid.arg_size(), Some(4));
    assert_eq!(Ioctl::DeviceReset.arg_size(), Some(0));
    assert_eq!(Ioctl::DeviceRelease.arg_size(), Some(0));
    assert_eq!(Ioctl::PodStatus.arg_size(), None);
    assert_eq!(Ioctl::DmaQuiesceQueues.arg_size(), None);
    // Wherever the macro names the struct itself, the encoded size is the copied size.
    for ioctl in Ioctl::ALL {
        if let Some(arg) = ioctl.arg_size() {
            if ioctl.encoded_size() != 8 {
                assert_eq!(usize::from(ioctl.encoded_size()), arg, "{ioctl}");
            }
        }
    }
}

#[test]
fn ioc_decoders() {
    assert_eq!(ioc_dir(0xC028_4E18), 3);
    assert_eq!(ioc_size(0xC028_4E18), 40);
    assert_eq!(ioc_type(0xC028_4E18), b'N');
    assert_eq!(ioc_nr(0xC028_4E18), 24);
    assert_eq!(ioc_size(0xB008_4E85), 0x3008);
    assert_eq!(ioc_dir(0xB008_4E85), IOC_READ);
    assert_eq!(ioc_nr(0xB008_4E85), 133);
}

/// Asserts a struct's size and field offsets, all given as literals.
macro_rules! layout {
    ($t:ty = $size:literal { $($f:ident: $off:literal),* $(,)? }) => {
        assert_eq!(size_of::<$t>(), $size, stringify!($t));
        $(assert_eq!(offset_of!($t, $f), $off, concat!(stringify!($t), ".", stringify!($f)));)*
    };
}

/// A table of every argument struct's size and field offsets (longer than the ~120-line
/// guideline on purpose: one `layout!` row per struct).
#[test]
fn struct_layouts_match_fact_sheet() {
    // docs/driver.md §3.1
    layout!(MemAllocV2Mt64 = 56 {
        size: 0, align: 8, host_memory: 16, dram_channel: 20, dram_region: 24, nc_id: 28,
        mem_type: 32, mem_handle: 40, pad: 48,
    });
    layout!(MemAllocV2Mt = 48 {
        size: 0, align: 8, host_memory: 16, dram_channel: 20, dram_region: 24, nc_id: 28,
        mem_type: 32, mem_handle: 40,
    });
    layout!(MemAllocV2 = 40 {
        size: 0, align: 8, host_memory: 16, dram_channel: 20, dram_region: 24, nc_id: 28,
        mem_handle: 32,
    });
    layout!(MemAlloc = 32 {
        size: 0, host_memory: 8, dram_channel: 12, dram_region: 16, nc_id: 20, mem_handle: 24,
    });
    layout!(MemFree = 8 { mem_handle: 0 });
    // docs/driver.md §3.2
    layout!(MemGetPa = 16 { mem_handle: 0, pa: 8 });
    layout!(MemGetInfo = 24 { mem_handle: 0, mmap_offset: 8, pa: 16 });
    layout!(MemGetExtendedInfo = 48 {
        mem_handle: 0, version: 8, host_memory: 12, mmap_offset: 16, pa: 24, pid: 32, size: 40,
    });
    layout!(MemGetMcMmapInfoV2 = 32 { pa: 0, mmap_offset: 8, size: 16, mem_handle: 24 });
    layout!(MemGetMcMmapInfo = 24 { pa: 0, mmap_offset: 8, size: 16 });
    // docs/driver.md §3.3
    layout!(MemBufCopy64 = 40 {
        mem_handle: 0, buffer: 8, size: 16, offset: 24, copy_to_mem_handle: 32,
    });
    layout!(MemBufCopy = 32 {
        mem_handle: 0, buffer: 8, size: 16, offset: 20, copy_to_mem_handle: 24,
    });
    layout!(MemCopy64 = 40 {
        src_mem_handle: 0, dst_mem_handle: 8, size: 16, src_offset: 24, dst_offset: 32,
    });
    layout!(MemCopy = 32 {
        src_mem_handle: 0, dst_mem_handle: 8, size: 16, src_offset: 20, dst_offset: 24,
    });
    layout!(MemCopyAsync64 = 56 {
        src_mem_handle: 0, dst_mem_handle: 8, size: 16, src_offset: 24, dst_offset: 32,
        host_prefetch_addr: 40, pwait_handle: 48, wait_handle: 52,
    });
    layout!(MemCopyAsync = 48 {
        src_mem_handle: 0, dst_mem_handle: 8, size: 16, src_offset: 20, dst_offset: 24,
        host_prefetch_addr: 32, pwait_handle: 40, wait_handle: 44,
    });
    layout!(MemCopyAsyncWait = 24 { src_mem_handle: 0, dst_mem_handle: 8, pwait_handle: 16 });
    layout!(Memset64 = 32 { mem_handle: 0, offset: 8, value: 16, size: 24 });
    layout!(Memset = 24 { mem_handle: 0, offset: 8, value: 16, size: 20 });
    layout!(ProgramEngineNc64 = 40 { nc_id: 0, dst: 8, buffer: 16, size: 24, offset: 32 });
    layout!(ProgramEngineNc = 32 { nc_id: 0, dst: 8, buffer: 16, size: 24, offset: 28 });
    layout!(ProgramEngine = 24 { dst: 0, buffer: 8, size: 16, offset: 20 });
    // docs/driver.md §3.4
    layout!(DmaQueueInit = 48 {
        eng_id: 0, qid: 4, tx_desc_count: 8, rx_desc_count: 12, tx_handle: 16, rx_handle: 24,
        rxc_handle: 32, axi_port: 40,
    });
    layout!(DmaQueueInitBatch = 12296 { count: 0, entries: 8 });
    layout!(DmaQueueRelease = 8 { eng_id: 0, qid: 4 });
    layout!(DmaQueueCopyStart = 16 { eng_id: 0, qid: 4, tx_desc_count: 8, rx_desc_count: 12 });
    layout!(DmaAckCompleted = 12 { eng_id: 0, qid: 4, count: 8 });
    layout!(DmaEngInit = 4 { eng_id: 0 });
    layout!(DmaEngSetState = 8 { eng_id: 0, state: 4 });
    layout!(DmaEngGetState = 16 { eng_id: 0, state: 8 });
    layout!(DmaQueueGetState = 24 { eng_id: 0, qid: 4, tx: 8, rx: 16 });
    layout!(DmaCopyDescriptors64 = 40 {
        mem_handle: 0, buffer: 8, num_descs: 16, offset: 24, queue_type: 32,
    });
    layout!(DmaCopyDescriptors = 32 {
        mem_handle: 0, buffer: 8, num_descs: 16, offset: 20, queue_type: 24,
    });
    layout!(DmaDescriptorCopyout = 32 {
        eng_id: 0, qid: 4, r#type: 8, start_index: 12, count: 16, buffer: 24,
    });
    layout!(DmaEngState = 20 {
        revision_id: 0, max_queues: 4, num_queues: 8, tx_state: 12, rx_state: 16,
    });
    layout!(DmaQueueState = 48 {
        hw_status: 0, sw_status: 4, base_addr: 8, length: 16, head_pointer: 20, tail_pointer: 24,
        completion_base_addr: 32, completion_head: 40,
    });
    // docs/driver.md §3.5
    layout!(Semaphore = 12 { nc_id: 0, semaphore_index: 4, value: 8 });
    layout!(Event = 12 { nc_id: 0, event_index: 4, value: 8 });
    // docs/driver.md §3.6
    layout!(NotificationsInitV2 = 48 {
        nq_dev_id: 0, nq_dev_type: 4, nq_type: 8, engine_index: 12, size: 16,
        on_host_memory: 20, dram_channel: 24, dram_region: 28, mmap_offset: 32, mem_handle: 40,
    });
    layout!(NotificationsInitWithReallocV2 = 56 {
        nq_dev_id: 0, nq_dev_type: 4, nq_type: 8, engine_index: 12, size: 16,
        on_host_memory: 20, dram_channel: 24, dram_region: 28, force_alloc_mem: 32,
        mmap_offset: 40, mem_handle: 48,
    });
    layout!(NotificationsInitV1 = 24 {
        nc_id: 0, nq_type: 4, engine_index: 8, size: 12, mmap_offset: 16,
    });
    layout!(NotificationsDestroy = 8 { mmap_offset: 0 });
    layout!(NotificationsQueueInfo = 12 {
        nq_dev_id: 0, nq_dev_type: 1, nq_type: 2, engine_index: 3, head: 4, phase_bit: 8,
    });
    // docs/driver.md §3.7
    layout!(DeviceInfo = 80 {
        architecture: 0, revision: 4, connected_device_count: 8, connected_devices: 12,
        bar_address: 48, bar_size: 64,
    });
    layout!(DeviceBasicInfo = 8 { architecture: 0, revision: 4 });
    layout!(DeviceDriverInfo = 24 {
        architecture: 0, revision: 4, version: 8, size: 12, feature_flags1: 16,
    });
    layout!(CompatibleVersion = 8 { max: 0, min: 4 });
    layout!(ResourceMmapInfo = 32 { block: 0, block_id: 4, resource: 8, offset: 16, size: 24 });
    layout!(DeviceReset = 8 { nc_map: 0, request_id: 4 });
    layout!(DeviceReady = 8 { request_id: 0, result: 4 });
    layout!(DeviceInit = 4 { mem_regions: 0 });
    layout!(BarRw = 32 { bar: 0, address: 8, data: 16, count: 24 });
    layout!(CrwlNcMap = 24 {
        nc_count: 0, start_nc_index: 4, end_nc_index: 8, max_nc_available: 12, bitmap: 16,
    });
    layout!(CrwlNcMapExt = 80 {
        nc_count: 0, start_nc_index: 4, end_nc_index: 8, max_nc_available: 12, bitmap: 16,
    });
    layout!(CinitSet = 12 { nc_id: 0, state: 4, new_state: 8 });
    // From neuron_ioctl.h (sizes confirmed by the request numbers in docs/driver.md §2.2).
    layout!(NcModelStartedCount = 16 { nc_id: 0, started_count: 8 });
    layout!(PostMetric = 16 { data: 0, data_size: 8 });
    layout!(DmabufFd = 24 { va: 0, size: 8, fd: 16 });
    layout!(Printk = 16 { buffer: 0, size: 8, action: 12 });
    layout!(HostDeviceId = 4 { host_device_id: 0 });
}

use nrt_hal::le::{u32_at, u64_at};

#[test]
fn mem_alloc_v2mt64_byte_round_trip() {
    let mut handle_slot: u64 = 0;
    let ptr = &mut handle_slot as *mut u64 as u64;
    let req = MemAllocV2Mt64 {
        size: 0x0102_0304_0506_0708,
        align: 0x1000,
        host_memory: 0,
        dram_channel: 1,
        dram_region: 0,
        nc_id: 7,
        mem_type: MemAllocCategory::TensorsDevice.raw(),
        mem_handle: ptr,
        pad: 0,
        ..Default::default()
    };
    let bytes = req.as_bytes();
    assert_eq!(bytes.len(), 56);
    assert_eq!(
        &bytes[0..8],
        &[0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01]
    );
    assert_eq!(u64_at(bytes, 8), 0x1000);
    assert_eq!(u32_at(bytes, 16), 0);
    assert_eq!(u32_at(bytes, 20), 1);
    assert_eq!(u32_at(bytes, 24), 0);
    assert_eq!(u32_at(bytes, 28), 7);
    assert_eq!(u32_at(bytes, 32), 9);
    assert_eq!(&bytes[36..40], &[0; 4], "padding is zero");
    assert_eq!(u64_at(bytes, 40), ptr, "mem_handle is the user pointer");
    assert_eq!(&bytes[48..56], &[0; 8]);
    let back = MemAllocV2Mt64::read_from_bytes(bytes).unwrap();
    assert_eq!(back, req);
    assert!(MemAllocV2Mt64::read_from_bytes(&bytes[..48]).is_err());
}

#[test]
fn kernel_written_images_decode() {
    // COMPATIBLE_VERSION on v2: {max 7, min 5} — max first.
    let cv = CompatibleVersion::read_from_bytes(&[7, 0, 0, 0, 5, 0, 0, 0]).unwrap();
    assert_eq!(cv, CompatibleVersion { max: 7, min: 5 });
    assert_eq!(cv, Arch::V2.compatible_version());
    assert_eq!(cv.as_bytes(), &[7, 0, 0, 0, 5, 0, 0, 0]);

    // DRIVER_INFO_GET as driver 2.24.7.0 fills it on trn2.
    let mut img = [0u8; 24];
    img[0..4].copy_from_slice(&3u32.to_le_bytes());
    img[4..8].copy_from_slice(&240u32.to_le_bytes());
    img[12..16].copy_from_slice(&24u32.to_le_bytes());
    img[16..24].copy_from_slice(&0xFFu64.to_le_bytes());
    let di = DeviceDriverInfo::read_from_bytes(&img).unwrap();
    assert_eq!(Arch::from_raw(di.architecture), Some(Arch::V3));
    assert_eq!(di.revision, REVISION_EMULATOR);
    assert_eq!(di.version, DEVICE_DRIVER_INFO_VERSION0);
    assert_eq!(di.size, 24);
    assert_eq!(di.features(), DRIVER_FEATURES_REPORTED);
    assert!(di
        .features()
        .contains(DriverFeatures::MEM_ALLOC64 | DriverFeatures::BATCH_DMAQ_INIT));
    assert_eq!(di.as_bytes(), &img);

    // SEMAPHORE_READ writes the value back at offset 8.
    let mut sem = Semaphore {
        nc_id: 1,
        semaphore_index: 200,
        value: 0,
    };
    sem.as_mut_bytes()[8..12].copy_from_slice(&0xDEAD_BEEFu32.to_le_bytes());
    assert_eq!(sem.value, 0xDEAD_BEEF);
    assert_eq!(&sem.as_bytes()[0..8], &[1, 0, 0, 0, 200, 0, 0, 0]);
}

#[test]
fn dma_queue_init_and_batch() {
    let q = DmaQueueInit {
        eng_id: 33,
        qid: 15,
        tx_desc_count: 64,
        rx_desc_count: 64,
        tx_handle: 0xAAAA,
        rx_handle: 0xBBBB,
        rxc_handle: 0,
        axi_port: 0,
        ..Default::default()
    };
    let b = q.as_bytes();
    assert_eq!(b.len(), 48);
    assert_eq!(u32_at(b, 0), 33);
    assert_eq!(u32_at(b, 4), 15);
    assert_eq!(u64_at(b, 16), 0xAAAA);
    assert_eq!(u64_at(b, 24), 0xBBBB);
    assert_eq!(u64_at(b, 32), 0);
    assert_eq!(DmaQueueInit::read_from_bytes(b).unwrap(), q);

    assert_eq!(MAX_DMA_QUEUE_INIT_BATCH, 256);
    let batch = DmaQueueInitBatch::from_entries(&[q, q, q]).unwrap();
    assert_eq!(batch.count, 3);
    assert_eq!(batch.valid_entries(), &[q, q, q]);
    let bytes = batch.as_bytes();
    assert_eq!(bytes.len(), 12296);
    assert_eq!(u32_at(bytes, 0), 3);
    assert_eq!(&bytes[8..56], q.as_bytes());
    assert_eq!(&bytes[56 + 48..56 + 52], &33u32.to_le_bytes());
    assert!(bytes[8 + 3 * 48..].iter().all(|&x| x == 0));
    assert!(DmaQueueInitBatch::from_entries(&[q; 255]).is_some());
    assert!(DmaQueueInitBatch::from_entries(&[q; 256]).is_none());
    assert_eq!(DmaQueueInitBatch::default().count, 0);
}

#[test]
fn mem_alloc_category_mapping() {
    assert_eq!(MemAllocCategory::MAX, 20);
    assert_eq!(MemAllocCategory::COUNT, 20);
    assert_eq!(MemAllocCategory::ALL.len(), 20);
    for (i, c) in MemAllocCategory::ALL.iter().enumerate() {
        assert_eq!(c.raw() as usize, i);
        assert_eq!(MemAllocCategory::from_raw_exact(i as u32), Some(*c));
        // In-range values keep their category whatever the location says.
        assert_eq!(MemAllocCategory::from_raw(i as u32, true), *c);
        assert_eq!(MemAllocCategory::from_raw(i as u32, false), *c);
    }
    assert_eq!(MemAllocCategory::UnknownDevice.raw(), 7);
    assert_eq!(MemAllocCategory::ScratchpadDevice.raw(), 11);
    assert_eq!(MemAllocCategory::DmaRingsHost.raw(), 17);
    assert_eq!(MemAllocCategory::ContiguousScratchpadDevice.raw(), 19);
    // Out of range → UNKNOWN_{HOST,DEVICE} by location.
    for raw in [20, 21, 1000, 0x8000_0000, u32::MAX] {
        assert_eq!(MemAllocCategory::from_raw_exact(raw), None);
        assert_eq!(
            MemAllocCategory::from_raw(raw, true),
            MemAllocCategory::UnknownHost
        );
        assert_eq!(
            MemAllocCategory::from_raw(raw, false),
            MemAllocCategory::UnknownDevice
        );
    }
    let host: Vec<u32> = MemAllocCategory::ALL
        .iter()
        .filter(|c| c.is_host())
        .map(|c| c.raw())
        .collect();
    assert_eq!(host, [0, 1, 2, 3, 4, 5, 6, 17]);
}

#[test]
fn enums_and_constants() {
    assert_eq!(NqType::Trace.raw(), 0);
    assert_eq!(NqType::Notify.raw(), 1);
    assert_eq!(NqType::Event.raw(), 2);
    assert_eq!(NqType::Error.raw(), 3);
    assert_eq!(NqType::TraceDma.raw(), 4);
    assert_eq!(NqType::Throttle.raw(), 5);
    assert_eq!(NqType::MAX, 6);
    assert_eq!(NqType::from_raw(6), None);
    assert_eq!(NqType::Error.nq_id(15), 63);
    assert_eq!(NqType::Throttle.nq_id(15), 95);
    assert_eq!(NqDeviceType::NeuronCore.raw(), 0);
    assert_eq!(NqDeviceType::TopSp.raw(), 1);
    assert_eq!(NQ_DEVICE_MMAP_OFFSET, 0xFFFF_FFFF_FFFF_FFFF);

    assert_eq!(DmaQueueType::Tx.raw(), 0);
    assert_eq!(DmaQueueType::Rx.raw(), 1);
    assert_eq!(DmaQueueType::Completion.raw(), 2);
    assert_eq!(DmaQueueType::from_raw(3), None);
    assert_eq!(UdmaState::Disable.raw(), 0);
    assert_eq!(UdmaState::Idle.raw(), 1);
    assert_eq!(UdmaState::Normal.raw(), 2);
    assert_eq!(UdmaState::Abort.raw(), 3);
    assert_eq!(UdmaState::Reset.raw(), 4);
    assert_eq!(QueueSwStatus::from_raw(2), Some(QueueSwStatus::Enabled));

    assert_eq!(Arch::from_raw(1), Some(Arch::V1));
    assert_eq!(Arch::from_raw(2), Some(Arch::V2));
    assert_eq!(Arch::from_raw(3), Some(Arch::V3));
    assert_eq!(Arch::from_raw(0), None);
    assert_eq!(Arch::V1.compatible_version().range(), 2..=7);
    assert_eq!(Arch::V2.compatible_version().range(), 5..=7);
    assert_eq!(Arch::V3.compatible_version().range(), 10..=11);
    assert!(Arch::V3.compatible_version().contains(10));
    assert!(!Arch::V3.compatible_version().contains(9));
    assert!(!Arch::V2.compatible_version().contains(8));

    assert_eq!(MmapBlock::Tpb.raw(), 0);
    assert_eq!(MmapBlock::TopSp.raw(), 1);
    assert_eq!(MmapBlock::Hbm.raw(), 2);
    assert_eq!(MmapResource::Semaphore.raw(), 0);
    assert_eq!(MmapResource::All.raw(), 1);
    assert_eq!(MmapResource::Sbuf.raw(), 2);
    assert_eq!(MmapResource::Dmem.raw(), 3);

    assert_eq!(DriverFeatures::DMABUF.bits(), 1);
    assert_eq!(DriverFeatures::ASYNC_DMA.bits(), 2);
    assert_eq!(DriverFeatures::BATCH_DMAQ_INIT.bits(), 4);
    assert_eq!(DriverFeatures::BIG_CORE_MAPS.bits(), 8);
    assert_eq!(DriverFeatures::MEM_ALLOC_TYPE.bits(), 16);
    assert_eq!(DriverFeatures::HBM_SCRUB.bits(), 32);
    assert_eq!(DriverFeatures::MEM_ALLOC64.bits(), 64);
    assert_eq!(DriverFeatures::CONTIGUOUS_SCRATCHPAD.bits(), 128);
    assert_eq!(DriverFeatures::all().bits(), 0xFF);
    assert_eq!(DRIVER_FEATURES_REPORTED.bits(), 0xFF);

    assert_eq!(NC_MAP_DEVICE, 0xFFFF_FFFF);
    assert_eq!(MAX_NC_PER_DEVICE, 8);
    assert_eq!(MAX_CONNECTED_DEVICES, 8);
    assert_eq!(MAX_BARS, 2);
    assert_eq!(NEURON_IOCTL_MAX, 125);
    assert_eq!(MEM_GET_EXTENDED_INFO_VERSION, 1);
    assert_eq!(DMA_H2T_CTX_HANDLE_NONE as i32, -1);
}
