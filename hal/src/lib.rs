//! # nrt-hal — the Neuron device contract
//!
//! Everything both sides of the device boundary must agree on lives here, so neither the runtime
//! (`nrt-runtime`) nor the simulator (`nrt-sim`) owns a private copy of a wire format. A reader who
//! knows nothing of Neuron can find each format and where its numbers come from:
//!
//! | module | what it owns | where the numbers come from |
//! |---|---|---|
//! | [`addr`] | address and handle newtypes with checked arithmetic, engine kinds | docs/driver.md §8, §9 |
//! | [`dtype`] | element types, numbered as `nrt_dtype_t` | docs/c-api.md §3.2 |
//! | [`target`] | per-generation tables (trn1 `sunda`, trn2 `cayman`): cores, engines, HBM, SBUF/PSUM, MMIO map, clocks | docs/driver.md §11, §5, §8, §9; docs/isa.md §2.2 |
//! | [`udma`] | the 16-byte UDMA descriptor, m2m copy pairs, ring geometry and ring-id phases | docs/driver.md §4 |
//! | [`abi`] | ioctl request numbers and `#[repr(C)]` argument structs of the kernel driver | docs/driver.md §2.2, §3 |
//! | [`exec_request`] | `device_exec_request_t` (52 bytes) and its `cc_dma_increment` trailer | docs/exec.md §2 |
//! | [`isa`] | the platform's engine instruction encoding (64-byte records), encoder, decoder, disassembler | docs/isa.md §1; docs/neff.md §9, docs/isa.md §3 |
//! | [`notify`] | the notification-queue entry format (ours; the driver defines none) | docs/driver.md §6 |
//! | [`hal`] | the [`Hal`] trait every backend implements, the [`HalLayer`] decorator trait, and the error type | docs/ARCHITECTURE.md §4 |
//! | [`profile`] | profiling, a capability a backend may offer ([`Hal::profiler`]): the device timeline and per-execution activity counters | docs/c-api.md §5.6 |
//! | [`le`] | little-endian field readers and writers, f32 ⇄ bytes | — |
//! | [`check`] | the argument checks every backend makes, and the evaluation of a wait condition | docs/driver.md |
//! | [`version`] | the libnrt API level and the driver release nrt-emu presents | docs/c-api.md §8.3, docs/driver.md §10 |
//! | `driver` | the driver backend: `DriverHal` over `/dev/neuronN` through an injectable syscall layer (feature `driver`) | docs/driver.md §2–§10, §12 |
//!
//! Conventions: all wire integers are little-endian; no raw `u64` address crosses an API (see
//! [`addr`]); validation of caller input lives in the runtime, and [`HalError`] carries only what a
//! caller cannot foresee (out of memory, device fault, timeout, unsupported, OS error).

#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(missing_docs)]

pub mod abi;
pub mod addr;
pub mod check;
#[cfg(feature = "driver")]
pub mod driver;
pub mod dtype;
pub mod exec_request;
pub mod hal;
pub mod isa;
pub mod le;
pub mod notify;
pub mod profile;
pub mod target;
#[cfg(feature = "test-utils")]
pub mod testkit;
pub mod udma;
pub mod version;

pub use addr::{
    AddrOverflow, AddrRange, DeviceAddr, DmaEngine, EngineKind, EventId, MemHandle, NcIndex,
    QueueId, QueueRef, SemaphoreId,
};
pub use dtype::Dtype;
pub use hal::{Hal, HalError, HalLayer, HalResult};
pub use target::Target;
