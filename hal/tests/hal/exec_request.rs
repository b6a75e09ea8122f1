//! `device_exec_request_t` layout and the request buffer (docs/exec.md §2).

use core::mem::{offset_of, size_of};
use nrt_hal::exec_request::*;
use nrt_hal::{DeviceAddr, EngineKind};
use proptest::prelude::*;

#[test]
fn field_offsets() {
    assert_eq!(size_of::<DeviceExecRequest>(), 52);
    assert_eq!(offset_of!(DeviceExecRequest, do_model_switch), 0x00);
    assert_eq!(offset_of!(DeviceExecRequest, eng_addresses_lo), 0x04);
    assert_eq!(offset_of!(DeviceExecRequest, eng_addresses_hi), 0x18);
    assert_eq!(offset_of!(DeviceExecRequest, reload_seq_config), 0x2C);
    assert_eq!(offset_of!(DeviceExecRequest, load_act_dve_tables), 0x30);
    assert_eq!(EXEC_REQUEST_SIZE, 0x34);
    assert_eq!(CC_DMA_INCREMENT_OFFSET, 0x34);
    assert_eq!(REQUEST_BUFFER_SIZE, 0x38);
}

#[test]
fn engine_addresses_are_lo_block_then_hi_block() {
    let mut r = DeviceExecRequest::new(true, false, true);
    r.set_engine_address(EngineKind::Pe, DeviceAddr::new(0x0000_00AA_1111_1111));
    r.set_engine_address(EngineKind::Act, DeviceAddr::new(0x0000_00BB_2222_2222));
    r.set_engine_address(EngineKind::Pool, DeviceAddr::new(0x0000_00CC_3333_3333));
    r.set_engine_address(EngineKind::Dve, DeviceAddr::new(0x0000_00DD_4444_4444));
    r.set_engine_address(EngineKind::Sp, DeviceAddr::new(0x0000_00EE_5555_5555));
    let b = r.to_bytes();
    let w = |o: usize| nrt_hal::le::u32_at(&b, o);
    assert_eq!(w(0x00), 1);
    // lows, PE..SP
    assert_eq!(w(0x04), 0x1111_1111);
    assert_eq!(w(0x08), 0x2222_2222);
    assert_eq!(w(0x0C), 0x3333_3333);
    assert_eq!(w(0x10), 0x4444_4444);
    assert_eq!(w(0x14), 0x5555_5555);
    // highs, PE..SP
    assert_eq!(w(0x18), 0xAA);
    assert_eq!(w(0x1C), 0xBB);
    assert_eq!(w(0x20), 0xCC);
    assert_eq!(w(0x24), 0xDD);
    assert_eq!(w(0x28), 0xEE);
    assert_eq!(w(0x2C), 0);
    assert_eq!(w(0x30), 1);
    assert_eq!(b[0x04], 0x11);
    assert_eq!(b[0x18], 0xAA);
    assert_eq!(
        r.engine_address(EngineKind::Dve),
        DeviceAddr::new(0xDD_4444_4444)
    );
}

#[test]
fn trailer_sits_at_0x34() {
    let buf = RequestBuffer {
        request: DeviceExecRequest::new(false, true, false),
        cc_dma_increment: 0xCAFE_F00D,
    };
    let b = buf.to_bytes();
    assert_eq!(b.len(), 56);
    assert_eq!(&b[0x34..0x38], &[0x0D, 0xF0, 0xFE, 0xCA]);
    assert_eq!(&b[0x2C..0x30], &[1, 0, 0, 0]);
    assert_eq!(RequestBuffer::parse(&b), Ok(buf));
}

#[test]
fn short_input_is_an_error() {
    assert_eq!(
        RequestBuffer::parse(&[0u8; 55]),
        Err(ExecRequestError::Truncated { need: 56, got: 55 })
    );
    assert_eq!(
        DeviceExecRequest::from_bytes(&[0u8; 51]),
        Err(ExecRequestError::Truncated { need: 52, got: 51 })
    );
    assert!(DeviceExecRequest::from_bytes(&[0u8; 52]).is_ok());
}

#[test]
fn zerocopy_view_matches_explicit_encoding() {
    use zerocopy::IntoBytes;
    let mut r = DeviceExecRequest::new(true, true, true);
    r.set_engine_address(EngineKind::Sp, DeviceAddr::new(0x1234_5678_9ABC_DEF0));
    if cfg!(target_endian = "little") {
        assert_eq!(r.as_bytes(), &r.to_bytes()[..]);
    }
}

proptest! {
    #[test]
    fn request_buffer_round_trip(words in proptest::array::uniform13(any::<u32>()), trailer: u32) {
        let mut bytes = [0u8; 56];
        for (c, w) in bytes.chunks_exact_mut(4).zip(words.iter().chain([trailer].iter())) {
            c.copy_from_slice(&w.to_le_bytes());
        }
        let parsed = RequestBuffer::parse(&bytes).unwrap();
        prop_assert_eq!(parsed.cc_dma_increment, trailer);
        prop_assert_eq!(parsed.to_bytes(), bytes);
    }

    #[test]
    fn engine_address_round_trip(a: u64, i in 0usize..5) {
        let e = EngineKind::from_index(i).unwrap();
        let mut r = DeviceExecRequest::default();
        r.set_engine_address(e, DeviceAddr::new(a));
        prop_assert_eq!(r.engine_address(e), DeviceAddr::new(a));
        let b = r.to_bytes();
        prop_assert_eq!(&b[4 + 4 * i..8 + 4 * i], &(a as u32).to_le_bytes());
        prop_assert_eq!(&b[0x18 + 4 * i..0x1C + 4 * i], &((a >> 32) as u32).to_le_bytes());
        for other in EngineKind::ALL.into_iter().filter(|o| *o != e) {
            prop_assert_eq!(r.engine_address(other), DeviceAddr::ZERO);
        }
    }
}
