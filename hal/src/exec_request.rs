//! `device_exec_request_t`, the 52-byte request the runtime copies to device memory to start one
//! execution on a NeuronCore, and the 4-byte `cc_dma_increment` trailer that follows it
//! (docs/exec.md §2).
//!
//! Layout of the request buffer (all fields little-endian `u32`):
//!
//! | offset | field | meaning |
//! |---|---|---|
//! | 0x00 | `do_model_switch` | 1 when the previous execution on this queue ran another model |
//! | 0x04 | `eng_addresses_lo[5]` | low 32 bits of each engine's instruction-block address |
//! | 0x18 | `eng_addresses_hi[5]` | high 32 bits, same engine order |
//! | 0x2C | `reload_seq_config` | 1 = the sequencer must re-read its configuration |
//! | 0x30 | `load_act_dve_tables` | 1 = reload the activation / DVE tables |
//! | 0x34 | `cc_dma_increment` | trailer, not part of the struct; written separately |
//!
//! Engines are indexed in the order PE, ACT, POOL, DVE, SP ([`EngineKind::index`]). The low
//! halves of all five come first, then the five high halves — not interleaved pairs.

use crate::addr::{DeviceAddr, EngineKind};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Number of engine addresses in a request.
pub const ENGINE_COUNT: usize = 5;
/// Size of `device_exec_request_t`: 52 bytes.
pub const EXEC_REQUEST_SIZE: usize = 0x34;
/// Byte offset of the `cc_dma_increment` trailer in the request buffer.
pub const CC_DMA_INCREMENT_OFFSET: usize = 0x34;
/// Size of the whole request buffer: the 52-byte body plus the 4-byte trailer.
pub const REQUEST_BUFFER_SIZE: usize = 0x38;

/// Errors reading a request from bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ExecRequestError {
    /// Fewer bytes than the structure needs.
    #[error("exec request needs {need} bytes, got {got}")]
    Truncated {
        /// Bytes needed.
        need: usize,
        /// Bytes given.
        got: usize,
    },
}

/// `device_exec_request_t`. Flags are `u32` 0/1 on the wire.
///
/// The zerocopy derives give in-place views in host byte order (little endian on every platform
/// this project runs on); [`DeviceExecRequest::to_bytes`] and
/// [`DeviceExecRequest::from_bytes`] convert explicitly.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct DeviceExecRequest {
    /// 1 when this execution switches models.
    pub do_model_switch: u32,
    /// Low halves of the engines' instruction-block addresses, PE, ACT, POOL, DVE, SP.
    pub eng_addresses_lo: [u32; ENGINE_COUNT],
    /// High halves, same order.
    pub eng_addresses_hi: [u32; ENGINE_COUNT],
    /// 1 when the sequencer must reload its configuration.
    pub reload_seq_config: u32,
    /// 1 when the activation / DVE tables must be reloaded.
    pub load_act_dve_tables: u32,
}

const _: () = assert!(core::mem::size_of::<DeviceExecRequest>() == EXEC_REQUEST_SIZE);
const _: () = assert!(core::mem::offset_of!(DeviceExecRequest, do_model_switch) == 0x00);
const _: () = assert!(core::mem::offset_of!(DeviceExecRequest, eng_addresses_lo) == 0x04);
const _: () = assert!(core::mem::offset_of!(DeviceExecRequest, eng_addresses_hi) == 0x18);
const _: () = assert!(core::mem::offset_of!(DeviceExecRequest, reload_seq_config) == 0x2C);
const _: () = assert!(core::mem::offset_of!(DeviceExecRequest, load_act_dve_tables) == 0x30);

impl DeviceExecRequest {
    /// A request with the three flags set as given and all engine addresses zero.
    pub const fn new(
        do_model_switch: bool,
        reload_seq_config: bool,
        load_act_dve_tables: bool,
    ) -> DeviceExecRequest {
        DeviceExecRequest {
            do_model_switch: do_model_switch as u32,
            eng_addresses_lo: [0; ENGINE_COUNT],
            eng_addresses_hi: [0; ENGINE_COUNT],
            reload_seq_config: reload_seq_config as u32,
            load_act_dve_tables: load_act_dve_tables as u32,
        }
    }

    /// Stores `engine`'s instruction-block address, split into its lo/hi slots.
    pub fn set_engine_address(&mut self, engine: EngineKind, addr: DeviceAddr) {
        let i = engine.index();
        self.eng_addresses_lo[i] = addr.lo32();
        self.eng_addresses_hi[i] = addr.hi32();
    }

    /// `engine`'s instruction-block address.
    pub fn engine_address(&self, engine: EngineKind) -> DeviceAddr {
        let i = engine.index();
        DeviceAddr::from_lo_hi(self.eng_addresses_lo[i], self.eng_addresses_hi[i])
    }

    /// The 52 little-endian wire bytes.
    pub fn to_bytes(&self) -> [u8; EXEC_REQUEST_SIZE] {
        let mut out = [0u8; EXEC_REQUEST_SIZE];
        for (chunk, word) in out.chunks_exact_mut(4).zip(self.words()) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        out
    }

    /// Reads a request from the first 52 bytes of `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Result<DeviceExecRequest, ExecRequestError> {
        let body = bytes
            .get(..EXEC_REQUEST_SIZE)
            .ok_or(ExecRequestError::Truncated {
                need: EXEC_REQUEST_SIZE,
                got: bytes.len(),
            })?;
        let mut w = [0u32; EXEC_REQUEST_SIZE / 4];
        for (word, chunk) in w.iter_mut().zip(body.chunks_exact(4)) {
            *word = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        }
        let mut lo = [0u32; ENGINE_COUNT];
        let mut hi = [0u32; ENGINE_COUNT];
        lo.copy_from_slice(&w[1..6]);
        hi.copy_from_slice(&w[6..11]);
        Ok(DeviceExecRequest {
            do_model_switch: w[0],
            eng_addresses_lo: lo,
            eng_addresses_hi: hi,
            reload_seq_config: w[11],
            load_act_dve_tables: w[12],
        })
    }

    /// The 13 words in wire order.
    fn words(&self) -> [u32; EXEC_REQUEST_SIZE / 4] {
        let mut w = [0u32; EXEC_REQUEST_SIZE / 4];
        w[0] = self.do_model_switch;
        w[1..6].copy_from_slice(&self.eng_addresses_lo);
        w[6..11].copy_from_slice(&self.eng_addresses_hi);
        w[11] = self.reload_seq_config;
        w[12] = self.load_act_dve_tables;
        w
    }
}

/// The whole 56-byte request buffer: the request body and the `cc_dma_increment` trailer at
/// [`CC_DMA_INCREMENT_OFFSET`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RequestBuffer {
    /// The 52-byte body.
    pub request: DeviceExecRequest,
    /// The trailer word at byte 0x34.
    pub cc_dma_increment: u32,
}

impl RequestBuffer {
    /// The 56 little-endian wire bytes.
    pub fn to_bytes(&self) -> [u8; REQUEST_BUFFER_SIZE] {
        let mut out = [0u8; REQUEST_BUFFER_SIZE];
        out[..EXEC_REQUEST_SIZE].copy_from_slice(&self.request.to_bytes());
        out[CC_DMA_INCREMENT_OFFSET..].copy_from_slice(&self.cc_dma_increment.to_le_bytes());
        out
    }

    /// Reads a request buffer from the first 56 bytes of `bytes`; an error if there are fewer.
    pub fn parse(bytes: &[u8]) -> Result<RequestBuffer, ExecRequestError> {
        let buf = bytes
            .get(..REQUEST_BUFFER_SIZE)
            .ok_or(ExecRequestError::Truncated {
                need: REQUEST_BUFFER_SIZE,
                got: bytes.len(),
            })?;
        let t = &buf[CC_DMA_INCREMENT_OFFSET..];
        Ok(RequestBuffer {
            request: DeviceExecRequest::from_bytes(buf)?,
            cc_dma_increment: u32::from_le_bytes([t[0], t[1], t[2], t[3]]),
        })
    }
}
