//! # nrt-hal — the Neuron device contract
//!
//! Everything both sides of the device boundary must agree on lives here, so neither the runtime
//! (`nrt-runtime`) nor the simulator (`nrt-sim`) owns a private copy of a wire format. A reader who
//! knows nothing of Neuron can find each format and where its numbers come from:
//!
//! | module | what it owns | where the numbers come from |
//! |---|---|---|
//! | [`addr`] | address and handle newtypes with checked arithmetic, engine kinds | driver-abi.md §7, §8 |
//! | [`dtype`] | element types, numbered as `nrt_dtype_t` | neff-isa-nrt.md §12.1 |
//! | [`target`] | per-generation tables (trn1 `sunda`, trn2 `cayman`): cores, engines, HBM, SBUF/PSUM, MMIO map, clocks | driver-abi.md §2.8, §4, §7, §8; neff-isa-nrt.md §11.2 |
//! | [`udma`] | the 16-byte UDMA descriptor, m2m copy pairs, ring geometry and ring-id phases | driver-abi.md §3 |
//! | [`abi`] | ioctl request numbers and `#[repr(C)]` argument structs of the kernel driver | driver-abi.md §1.2, §2 |
//! | [`exec_request`] | `device_exec_request_t` (52 bytes) and its `cc_dma_increment` trailer | seed 003 §3 |
//! | [`isa`] | the platform's engine instruction encoding (64-byte records), encoder, decoder, disassembler | DESIGN §5; neff-isa-nrt.md §8, §11.3 |
//! | [`notify`] | the notification-queue entry format (ours; the driver defines none) | driver-abi.md §5 |
//! | [`hal`] | the [`Hal`] trait every backend implements, the [`HalLayer`] decorator trait, and the error type | DESIGN §2 |
//! | [`le`] | little-endian field readers and writers, f32 ⇄ bytes | — |
//! | [`check`] | the argument checks every backend makes, and the evaluation of a wait condition | docs/driver.md |
//! | `driver` | the driver backend: `DriverHal` over `/dev/neuronN` through an injectable syscall layer (feature `driver`) | driver-abi.md §1–§9, appendix |
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
pub mod target;
pub mod udma;

pub use addr::{
    AddrOverflow, AddrRange, DeviceAddr, DmaEngine, EngineKind, EventId, MemHandle, NcIndex,
    QueueId, QueueRef, SemaphoreId,
};
pub use dtype::Dtype;
pub use hal::{Hal, HalError, HalLayer, HalResult};
pub use target::Target;
