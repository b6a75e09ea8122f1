//! UDMA descriptor codec, copy-pair builder, ring geometry and ring-id phases
//! (docs/driver.md §4).

use nrt_hal::udma::*;
use nrt_hal::DeviceAddr;
use proptest::prelude::*;

fn addr(a: u64) -> DeviceAddr {
    DeviceAddr::new(a)
}

#[test]
fn flag_bit_positions_are_the_driver_values() {
    assert_eq!(LenCtrlFlags::FIRST.bits(), 0x0400_0000);
    assert_eq!(LenCtrlFlags::LAST.bits(), 0x0800_0000);
    assert_eq!(
        (LenCtrlFlags::FIRST | LenCtrlFlags::LAST).bits(),
        0x0C00_0000
    );
    assert_eq!(LenCtrlFlags::INT_EN.bits(), 0x1000_0000);
    assert_eq!(LenCtrlFlags::DMB.bits(), 0x4000_0000);
    assert_eq!(RING_ID_MASK, 0x0300_0000);
    assert_eq!(LEN_MASK, 0xFFFF);
    assert_eq!(UNUSED_LEN_CTRL_MASK, 0xA0FF_0000);
    assert_eq!(MAX_DESC_BYTES, 65536);
}

#[test]
fn tx_meta_constants() {
    assert_eq!(TxMeta::M2M.bits(), 0x0108_0003);
    assert_eq!(TxMeta::M2M_WRITE_BARRIER.bits(), 0x0508_0003);
    assert_eq!(TxMeta::WRITE_BARRIER.bits(), 1 << 26);
    assert_eq!(TxMeta::LAST_BLOCK.bits(), 1);
    assert_eq!(TxMeta::FIRST_BLOCK.bits(), 2);
    assert_eq!(TxMeta::COPY_SOURCE_DATA.bits(), 0x0008_0000);
    assert_eq!(TxMeta::SSMAE_OP_M2M.bits(), 0x0100_0000);
    assert_eq!(TxMeta::M2M.ssmae_op(), 0b010);
    assert_eq!(
        TxMeta::LAST_BLOCK | TxMeta::FIRST_BLOCK | TxMeta::COPY_SOURCE_DATA | TxMeta::SSMAE_OP_M2M,
        TxMeta::M2M
    );
    assert_eq!(
        TxMeta::M2M | TxMeta::WRITE_BARRIER,
        TxMeta::M2M_WRITE_BARRIER
    );
}

#[test]
fn full_64k_tx_with_ring_id_2() {
    let tx = TxDesc::new(
        65536,
        2,
        LenCtrlFlags::FIRST | LenCtrlFlags::LAST,
        TxMeta::M2M,
        addr(0x1122_3344_5566_7788),
    )
    .unwrap();
    let raw = tx.encode();
    assert_eq!(raw.len_ctrl, 0x0E00_0000);
    assert_eq!(raw.meta_ctrl, 0x0108_0003);
    assert_eq!(raw.buf_ptr, 0x1122_3344_5566_7788);
    assert_eq!(raw.byte_len(), 65536);
    assert_eq!(raw.ring_id(), 2);
    let b = tx.to_bytes();
    assert_eq!(&b[0..4], &[0x00, 0x00, 0x00, 0x0E]);
    assert_eq!(&b[4..8], &[0x03, 0x00, 0x08, 0x01]);
    assert_eq!(&b[8..16], &[0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]);
    assert_eq!(TxDesc::decode(&UdmaDesc::from_bytes(&b)).unwrap(), tx);
}

#[test]
fn rx_layout_and_int_en() {
    let rx = RxDesc::new(52, 1, LenCtrlFlags::INT_EN, addr(0xABCD_0000)).unwrap();
    let b = rx.to_bytes();
    assert_eq!(&b[0..4], &(0x1100_0034u32).to_le_bytes());
    assert_eq!(&b[4..8], &[0, 0, 0, 0]);
    assert_eq!(&b[8..16], &0xABCD_0000u64.to_le_bytes());
}

#[test]
fn builder_rejects_bad_lengths_and_ring_ids() {
    let f = LenCtrlFlags::empty();
    assert_eq!(
        TxDesc::new(0, 1, f, TxMeta::M2M, addr(0)),
        Err(UdmaError::BadLength { len: 0 })
    );
    assert_eq!(
        TxDesc::new(65537, 1, f, TxMeta::M2M, addr(0)),
        Err(UdmaError::BadLength { len: 65537 })
    );
    assert_eq!(
        RxDesc::new(0, 1, f, addr(0)),
        Err(UdmaError::BadLength { len: 0 })
    );
    assert_eq!(
        RxDesc::new(16, 4, f, addr(0)),
        Err(UdmaError::BadRingId { ring_id: 4 })
    );
    assert_eq!(encode_len(1).unwrap(), 1);
    assert_eq!(encode_len(65535).unwrap(), 0xFFFF);
    assert_eq!(encode_len(65536).unwrap(), 0);
    assert_eq!(decode_len(0), 65536);
}

#[test]
fn length_zero_decodes_as_64k() {
    let raw = UdmaDesc {
        len_ctrl: 0x0C00_0000,
        meta_ctrl: 0x0108_0003,
        buf_ptr: 0x10,
    };
    let tx = TxDesc::decode(&raw).unwrap();
    assert_eq!(tx.len(), 65536);
    assert_eq!(tx.ring_id(), 0);
}

#[test]
fn unused_bits_are_kept_raw_and_rejected_typed() {
    let raw = UdmaDesc {
        len_ctrl: 0x8000_0010 | 0x2000_0000 | 0x0100_0000,
        meta_ctrl: 0,
        buf_ptr: 0,
    };
    let v = raw.len_ctrl_view();
    assert_eq!(v.unused, 0xA000_0000);
    assert_eq!(v.len, 16);
    assert_eq!(v.ring_id, 1);
    assert_eq!(v.flags, LenCtrlFlags::empty());
    assert_eq!(
        TxDesc::decode(&raw),
        Err(UdmaError::UnusedLenCtrlBits { bits: 0xA000_0000 })
    );
    assert_eq!(
        RxDesc::decode(&raw),
        Err(UdmaError::UnusedLenCtrlBits { bits: 0xA000_0000 })
    );
}

#[test]
fn bits_between_length_and_ring_id_are_unused() {
    // Bit 16 is not a 17th length bit: the length field is 15:0 only.
    let raw = UdmaDesc {
        len_ctrl: 0x0001_0000,
        meta_ctrl: 0,
        buf_ptr: 0,
    };
    assert_eq!(raw.byte_len(), 65536);
    assert_eq!(raw.len_ctrl_view().unused, 0x0001_0000);
    assert_eq!(
        TxDesc::decode(&raw),
        Err(UdmaError::UnusedLenCtrlBits { bits: 0x0001_0000 })
    );
}

#[test]
fn rx_rejects_nonzero_buf2() {
    let raw = UdmaDesc {
        len_ctrl: 0x10,
        meta_ctrl: 7,
        buf_ptr: 0,
    };
    assert_eq!(
        RxDesc::decode(&raw),
        Err(UdmaError::RxBuf2NotZero { value: 7 })
    );
    assert!(TxDesc::decode(&raw).is_ok());
}

#[test]
fn from_slice_requires_16_bytes() {
    assert_eq!(
        UdmaDesc::from_slice(&[0u8; 15]),
        Err(UdmaError::Truncated { len: 15 })
    );
    let mut b = [0u8; 20];
    b[0] = 0x34;
    b[8] = 0x99;
    let d = UdmaDesc::from_slice(&b).unwrap();
    assert_eq!(d.len_ctrl, 0x34);
    assert_eq!(d.buf_ptr, 0x99);
}

fn flags_strategy() -> impl Strategy<Value = LenCtrlFlags> {
    (0u32..16).prop_map(|b| {
        let mut f = LenCtrlFlags::empty();
        for (i, flag) in [
            LenCtrlFlags::FIRST,
            LenCtrlFlags::LAST,
            LenCtrlFlags::INT_EN,
            LenCtrlFlags::DMB,
        ]
        .into_iter()
        .enumerate()
        {
            if b & (1 << i) != 0 {
                f |= flag;
            }
        }
        f
    })
}

proptest! {
    #[test]
    fn tx_round_trip(len in 1u64..=65536, ring in 0u8..4, flags in flags_strategy(), meta: u32, src: u64) {
        let tx = TxDesc::new(len, ring, flags, TxMeta::from_bits_retain(meta), addr(src)).unwrap();
        let bytes = tx.to_bytes();
        let raw = UdmaDesc::from_bytes(&bytes);
        prop_assert_eq!(raw, tx.encode());
        prop_assert_eq!(raw.len_ctrl & 0xFFFF, (len % 65536) as u32);
        prop_assert_eq!((raw.len_ctrl >> 24) & 3, u32::from(ring));
        prop_assert_eq!(nrt_hal::le::u32_at(&bytes, 4), meta);
        prop_assert_eq!(nrt_hal::le::u64_at(&bytes, 8), src);
        let back = TxDesc::decode(&raw).unwrap();
        prop_assert_eq!(back, tx);
        prop_assert_eq!(u64::from(back.len()), len);
    }

    #[test]
    fn rx_round_trip(len in 1u64..=65536, ring in 0u8..4, flags in flags_strategy(), dst: u64) {
        let rx = RxDesc::new(len, ring, flags, addr(dst)).unwrap();
        let raw = UdmaDesc::from_bytes(&rx.to_bytes());
        prop_assert_eq!(raw.meta_ctrl, 0);
        prop_assert_eq!(RxDesc::decode(&raw).unwrap(), rx);
    }

    #[test]
    fn raw_decode_is_total_and_lossless(len_ctrl: u32, meta: u32, ptr: u64) {
        let raw = UdmaDesc { len_ctrl, meta_ctrl: meta, buf_ptr: ptr };
        prop_assert_eq!(UdmaDesc::from_bytes(&raw.to_bytes()), raw);
        let v = LenCtrl::from_raw(len_ctrl);
        let rebuilt = (v.len & 0xFFFF) | u32::from(v.ring_id) << 24 | v.flags.bits() | v.unused;
        prop_assert_eq!(rebuilt, len_ctrl);
        match TxDesc::decode(&raw) {
            Ok(tx) => prop_assert_eq!(tx.encode(), raw),
            Err(e) => prop_assert_eq!(e, UdmaError::UnusedLenCtrlBits { bits: len_ctrl & 0xA0FF_0000 }),
        }
    }

    #[test]
    fn copy_pairs_cover_the_range(src in 0u64..1 << 48, dst in 0u64..1 << 48, len in 0u64..1_000_000) {
        let pairs = M2mCopy::new(addr(src), addr(dst), len)
            .with_barrier(Barrier::WriteBarrier)
            .build(FixedRingId(1))
            .unwrap();
        prop_assert_eq!(pairs.len() as u64, len.div_ceil(65536));
        let mut off = 0u64;
        for (i, p) in pairs.iter().enumerate() {
            prop_assert_eq!(p.tx.src().raw(), src + off);
            prop_assert_eq!(p.rx.dst().raw(), dst + off);
            prop_assert_eq!(p.tx.len(), p.rx.len());
            let last = i + 1 == pairs.len();
            prop_assert_eq!(p.tx.meta().contains(TxMeta::WRITE_BARRIER), last);
            off += u64::from(p.tx.len());
        }
        prop_assert_eq!(off, len);
    }
}

#[test]
fn copy_of_200000_bytes_splits_into_four_pairs() {
    let src = addr(0x4000_0000);
    let dst = addr(0x1_0000_0000);
    let pairs = M2mCopy::new(src, dst, 200_000)
        .with_barrier(Barrier::WriteBarrier)
        .build(FixedRingId(1))
        .unwrap();
    assert_eq!(pairs.len(), 4);
    let lens: Vec<u32> = pairs.iter().map(|p| p.tx.len()).collect();
    assert_eq!(lens, [65536, 65536, 65536, 3392]);
    let srcs: Vec<u64> = pairs.iter().map(|p| p.tx.src().raw()).collect();
    assert_eq!(srcs, [0x4000_0000, 0x4001_0000, 0x4002_0000, 0x4003_0000]);
    let dsts: Vec<u64> = pairs.iter().map(|p| p.rx.dst().raw()).collect();
    assert_eq!(
        dsts,
        [0x1_0000_0000, 0x1_0001_0000, 0x1_0002_0000, 0x1_0003_0000]
    );
    for (i, p) in pairs.iter().enumerate() {
        let tx = p.tx.encode();
        let rx = p.rx.encode();
        let len_field = if i < 3 { 0 } else { 3392 };
        assert_eq!(tx.len_ctrl, 0x0D00_0000 | len_field, "pair {i}");
        assert_eq!(rx.len_ctrl, 0x0100_0000 | len_field, "pair {i}");
        let meta = if i == 3 { 0x0508_0003 } else { 0x0108_0003 };
        assert_eq!(tx.meta_ctrl, meta, "pair {i}");
        assert_eq!(rx.meta_ctrl, 0);
    }
}

#[test]
fn dmb_barrier_and_rx_interrupt() {
    let pairs = M2mCopy::new(addr(0), addr(0x100000), 65537)
        .with_barrier(Barrier::Dmb)
        .with_rx_int_en(true)
        .build(FixedRingId(3))
        .unwrap();
    assert_eq!(pairs.len(), 2);
    assert_eq!(pairs[0].tx.encode().len_ctrl, 0x0F00_0000);
    assert_eq!(pairs[1].tx.encode().len_ctrl, 0x4F00_0001);
    assert_eq!(pairs[1].tx.meta(), TxMeta::M2M);
    assert_eq!(pairs[0].rx.encode().len_ctrl, 0x1300_0000);
    assert_eq!(pairs[1].rx.encode().len_ctrl, 0x1300_0001);
}

#[test]
fn no_barrier_no_int_en() {
    let pairs = M2mCopy::new(addr(0), addr(64), 4)
        .build(FixedRingId(1))
        .unwrap();
    assert_eq!(pairs.len(), 1);
    assert_eq!(pairs[0].tx.encode().len_ctrl, 0x0D00_0004);
    assert_eq!(pairs[0].tx.meta().bits(), 0x0108_0003);
    assert_eq!(pairs[0].rx.encode().len_ctrl, 0x0100_0004);
}

#[test]
fn zero_length_copy_has_no_pairs() {
    let pairs = M2mCopy::new(addr(0), addr(0), 0)
        .build(FixedRingId(1))
        .unwrap();
    assert!(pairs.is_empty());
}

#[test]
fn copy_address_overflow_is_an_error() {
    let e = M2mCopy::new(addr(u64::MAX - 10), addr(0), 100)
        .build(FixedRingId(1))
        .unwrap_err();
    assert!(matches!(e, UdmaError::Addr(_)), "{e:?}");
    let e = M2mCopy::new(addr(0), addr(u64::MAX), 2)
        .build(FixedRingId(1))
        .unwrap_err();
    assert!(matches!(e, UdmaError::Addr(_)), "{e:?}");
}

#[test]
fn huge_copy_is_refused_not_allocated() {
    let e = M2mCopy::new(addr(0), addr(0), u64::MAX / 2)
        .build(FixedRingId(1))
        .unwrap_err();
    assert!(matches!(e, UdmaError::TooManyPairs { .. }), "{e:?}");
}

#[test]
fn fixed_ring_id_out_of_range_is_an_error() {
    assert_eq!(
        M2mCopy::new(addr(0), addr(0), 8).build(FixedRingId(4)),
        Err(UdmaError::BadRingId { ring_id: 4 })
    );
}

#[test]
fn ring_geometry_rules() {
    assert_eq!(
        RingGeometry::new(16),
        Err(UdmaError::RingTooSmall { count: 16 })
    );
    assert_eq!(
        RingGeometry::new(33),
        Err(UdmaError::RingNotMultiple { count: 33 })
    );
    assert_eq!(
        RingGeometry::new(1 << 24),
        Err(UdmaError::RingTooLarge { count: 1 << 24 })
    );
    assert_eq!(
        RingGeometry::new(0),
        Err(UdmaError::RingTooSmall { count: 0 })
    );
    assert_eq!(RingGeometry::new(32).unwrap().byte_size(), 512);
    let max = RingGeometry::new((1 << 24) - 16).unwrap();
    assert_eq!(max.count(), 16_777_200);
    let odd = RingGeometry::new(48).unwrap();
    assert!(!odd.is_power_of_two());
    assert_eq!(odd.byte_size(), 768);
    assert_eq!(odd.slot_offset(47), Ok(752));
    assert_eq!(
        odd.slot_offset(48),
        Err(UdmaError::SlotOutOfRange {
            slot: 48,
            count: 48
        })
    );
}

#[test]
fn ring_base_alignment() {
    assert!(RingGeometry::check_base(addr(0x1_0000_0100)).is_ok());
    assert_eq!(
        RingGeometry::check_base(addr(0x1_0000_0080)),
        Err(UdmaError::RingBaseMisaligned {
            base: addr(0x1_0000_0080)
        })
    );
    let g = RingGeometry::new(32).unwrap();
    assert_eq!(g.slot_addr(addr(0x2000), 3), Ok(addr(0x2030)));
    assert!(g.slot_addr(addr(0x2010), 3).is_err());
    assert!(matches!(
        g.check_placement(addr(u64::MAX - 255)),
        Err(UdmaError::Addr(_))
    ));
}

#[test]
fn ring_id_phases_across_five_wraps() {
    let g = RingGeometry::new(32).unwrap();
    let mut p = RingProducer::new(g);
    let mut ids_per_pass = Vec::new();
    for pass in 0..5u64 {
        assert_eq!(p.pass(), pass);
        assert_eq!(p.index(), 0);
        let first = p.ring_id();
        for i in 0..32 {
            let s = p.reserve();
            assert_eq!(s.index, i);
            assert_eq!(s.ring_id, first);
        }
        ids_per_pass.push(first);
    }
    assert_eq!(ids_per_pass, [1, 2, 3, 0, 1]);
    assert_eq!(p.pushes(), 160);
    let expected: Vec<u8> = (0..5).map(expected_ring_id).collect();
    assert_eq!(expected, [1, 2, 3, 0, 1]);
    assert_eq!(next_ring_id(3), 0);
    assert_eq!(next_ring_id(0), 1);
}

#[test]
fn reserve_n_wraps_and_limits() {
    let g = RingGeometry::new(32).unwrap();
    let mut p = RingProducer::new(g);
    p.reserve_n(30).unwrap();
    let s = p.reserve_n(4).unwrap();
    let got: Vec<(u32, u8)> = s.iter().map(|s| (s.index, s.ring_id)).collect();
    assert_eq!(got, [(30, 1), (31, 1), (0, 2), (1, 2)]);
    assert_eq!(
        p.reserve_n(33),
        Err(UdmaError::ReserveTooMany { n: 33, count: 32 })
    );
    assert_eq!(p.slot_offset(2), Ok(32));
}

#[test]
fn cursor_checks_ring_ids_of_produced_descriptors() {
    let g = RingGeometry::new(32).unwrap();
    let mut q = QueueProducer::new(g, g);
    let mut ring_tx = vec![UdmaDesc::default(); 32];
    let mut cur = RingCursor::new(g);
    // 3 laps of 16-pair copies, consumed as produced.
    for _ in 0..6 {
        let start = q.tx.index();
        let pairs = M2mCopy::new(addr(0), addr(0x10_0000), 16 * 65536)
            .build(&mut q)
            .unwrap();
        for (i, p) in pairs.iter().enumerate() {
            ring_tx[(start as usize + i) % 32] = p.tx.encode();
        }
        for _ in 0..16 {
            let slot = cur.peek();
            cur.check(&ring_tx[slot.index as usize]).unwrap();
            cur.advance();
        }
    }
    assert_eq!(cur.consumed(), 96);
    assert_eq!(q.rx.pushes(), 96);
    // Now the cursor expects ring id 0 (pass 3) but slot 0 still holds pass 2's id 3.
    assert_eq!(cur.expected_ring_id(), 0);
    assert_eq!(
        cur.check(&ring_tx[0]),
        Err(UdmaError::RingIdMismatch {
            slot: 0,
            expected: 0,
            found: 3
        })
    );
    cur.advance_by(32).unwrap();
    assert_eq!(cur.expected_ring_id(), 1);
    assert!(cur.advance_by(33).is_err());
}

#[test]
fn errors_have_clear_messages() {
    assert_eq!(
        UdmaError::BadLength { len: 0 }.to_string(),
        "descriptor length 0 is outside 1..=65536"
    );
    assert!(UdmaError::RingNotMultiple { count: 33 }
        .to_string()
        .contains("multiple of 16"));
}
