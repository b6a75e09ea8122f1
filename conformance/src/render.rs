//! The decoder: renders UDMA descriptors, exec requests, instruction records and plain data as
//! readable, address-independent text.
//!
//! Every address goes through a [`Symbols`] implementation, which names it by allocation
//! (`#<id>+0x<offset>`), by register or on-chip window (`sem_inc[nc0:5]`,
//! `tail_inc[nc0.e3.q2.tx]`, `sbuf[nc0:p12+0x1a0]`), or — if nothing knows it — as `?0x…`, which
//! a correct trace never contains. Nothing rendered here depends on the physical addresses a
//! backend chose, on timing, or on handle numbers.

use nrt_hal::abi::MemAllocCategory;
use nrt_hal::exec_request::RequestBuffer;
use nrt_hal::isa::{disassemble_record, DmaEnd, Instruction, Record, RECORD_SIZE};
use nrt_hal::udma::{LenCtrl, LenCtrlFlags, TxMeta, UdmaDesc};
use nrt_hal::EngineKind;

/// A coarse classification of an address, used to decide whether consecutive descriptors form
/// an arithmetic run that can be printed as one line without losing information.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    /// Inside the live allocation starting at this physical address.
    Alloc(u64),
    /// Inside core `nc`'s SBUF window.
    Sbuf(u32),
    /// Inside core `nc`'s PSUM window.
    Psum(u32),
    /// A register (semaphore, event, sequencer, queue register): never part of a run, since a
    /// store to it is an operation of its own.
    Register,
    /// Not known.
    Unknown,
}

/// Names device addresses symbolically.
pub trait Symbols {
    /// The symbolic name of `addr`.
    fn sym(&self, addr: u64) -> String;
    /// The region `addr` falls in.
    fn region(&self, addr: u64) -> Region;
}

/// 64-bit FNV-1a of `bytes`: the digest traces use for bulk data.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// `snake_case` name of an accounting category (`TensorsDevice` → `tensors_device`).
pub fn category(c: MemAllocCategory) -> String {
    let mut out = String::new();
    for (i, ch) in format!("{c:?}").chars().enumerate() {
        if ch.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

/// The named `len_ctrl` flags, `|`-joined, with a leading space; empty when none is set.
pub fn flags(f: LenCtrlFlags) -> String {
    let names: Vec<&str> = [
        (LenCtrlFlags::FIRST, "FIRST"),
        (LenCtrlFlags::LAST, "LAST"),
        (LenCtrlFlags::INT_EN, "INT_EN"),
        (LenCtrlFlags::DMB, "DMB"),
    ]
    .iter()
    .filter(|(b, _)| f.contains(*b))
    .map(|(_, n)| *n)
    .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!(" {}", names.join("|"))
    }
}

/// A TX `meta_ctrl` word: `m2m` for the driver's copy word, `m2m|write_barrier` with the
/// barrier, otherwise the named bits plus any others in hex.
pub fn meta(word: u32) -> String {
    if word == TxMeta::M2M.bits() {
        return "m2m".to_string();
    }
    if word == TxMeta::M2M_WRITE_BARRIER.bits() {
        return "m2m|write_barrier".to_string();
    }
    let m = TxMeta::from_bits_retain(word);
    let mut parts = Vec::new();
    let mut rest = word;
    for (bit, name) in [
        (TxMeta::LAST_BLOCK, "last_block"),
        (TxMeta::FIRST_BLOCK, "first_block"),
        (TxMeta::COPY_SOURCE_DATA, "copy_source_data"),
        (TxMeta::WRITE_BARRIER, "write_barrier"),
    ] {
        if m.contains(bit) {
            parts.push(name.to_string());
            rest &= !bit.bits();
        }
    }
    if m.ssmae_op() != 0 {
        parts.push(format!("ssmae_op={}", m.ssmae_op()));
        rest &= !TxMeta::SSMAE_OP_MASK;
    }
    if rest != 0 || parts.is_empty() {
        parts.push(format!("{rest:#x}"));
    }
    parts.join("|")
}

fn len_ctrl_text(raw: u32) -> String {
    let lc = LenCtrl::from_raw(raw);
    let mut s = format!("len={} id={}{}", lc.len, lc.ring_id, flags(lc.flags));
    if lc.unused != 0 {
        s.push_str(&format!(" unused={:#x}", lc.unused));
    }
    s
}

/// One TX descriptor: `tx[<label>] len=56 id=1 FIRST|LAST meta=m2m src=#3+0x140`.
pub fn tx_line(label: &str, d: &UdmaDesc, s: &dyn Symbols) -> String {
    format!(
        "tx[{label}] {} meta={} src={}",
        len_ctrl_text(d.len_ctrl),
        meta(d.meta_ctrl),
        s.sym(d.buf_ptr)
    )
}

/// One RX descriptor: `rx[<label>] len=56 id=1 dst=seq[nc0+0x0]` (`buf2=` only when the
/// reserved word is not zero).
pub fn rx_line(label: &str, d: &UdmaDesc, s: &dyn Symbols) -> String {
    let mut out = format!(
        "rx[{label}] {} dst={}",
        len_ctrl_text(d.len_ctrl),
        s.sym(d.buf_ptr)
    );
    if d.meta_ctrl != 0 {
        out.push_str(&format!(" buf2={:#x}", d.meta_ctrl));
    }
    out
}

/// A signed address step: `+0x800`, `-0x40`, `0`.
pub fn step(delta: i128) -> String {
    match delta {
        0 => "0".to_string(),
        d if d > 0 => format!("+{d:#x}"),
        d => format!("-{:#x}", -d),
    }
}

/// The 56-byte request buffer: flags, engine instruction-block addresses (`-` for an engine
/// that does not run) and the `cc_dma_increment` trailer.
pub fn exec_request(buf: &RequestBuffer, s: &dyn Symbols) -> String {
    let r = &buf.request;
    let mut out = format!(
        "exec_request do_model_switch={} reload_seq_config={} load_act_dve_tables={}",
        r.do_model_switch, r.reload_seq_config, r.load_act_dve_tables
    );
    for e in EngineKind::ALL {
        let a = r.engine_address(e).raw();
        let v = if a == 0 { "-".to_string() } else { s.sym(a) };
        out.push_str(&format!(" {}={v}", e.def_key()));
    }
    out.push_str(&format!(" cc_dma_increment={}", buf.cc_dma_increment));
    out
}

/// One instruction record: the disassembly, with the target of a `write` and both ends of a
/// `dma.direct` (a var slot, or an on-chip address) named symbolically.
pub fn instruction(rec: &Record, s: &dyn Symbols) -> String {
    match Instruction::decode(rec) {
        Ok(Instruction::Write { addr, value }) => {
            format!("write [{}] <- {value:#x}", s.sym(addr.raw()))
        }
        // An engine-issued DMA names var slots in an allocation (and SBUF absolutely): both
        // named as the trace names memory, so the line does not depend on where the
        // allocator put the slots.
        Ok(Instruction::DmaDirect { src, dst, .. }) => {
            let mut text = disassemble_record(rec);
            for end in [src, dst] {
                let a = match end {
                    DmaEnd::Absolute(a) => a,
                    DmaEnd::Slot { slot, .. } | DmaEnd::SlotRegister { slot, .. } => slot,
                };
                text = text.replace(&a.to_string(), &s.sym(a.raw()));
            }
            text
        }
        _ => disassemble_record(rec),
    }
}

/// The records of a code write starting at symbolic address `base`+`offset`: one line each,
/// `#9+0x40 <instruction>`; a trailing partial record as `.tail <n> bytes`.
pub fn code_lines(base: &str, offset: u64, bytes: &[u8], s: &dyn Symbols) -> Vec<String> {
    let mut out = Vec::new();
    let chunks = bytes.chunks_exact(RECORD_SIZE);
    let tail = chunks.remainder().len();
    for (i, c) in chunks.enumerate() {
        let rec = Record::from_slice(c).expect("a whole record");
        out.push(format!(
            "{base}+{:#x} {}",
            offset + (i * RECORD_SIZE) as u64,
            instruction(&rec, s)
        ));
    }
    if tail > 0 {
        out.push(format!(
            ".tail {tail} bytes fnv1a64={:#018x}",
            fnv1a64(bytes)
        ));
    }
    out
}

/// Bytes written to plain memory. Up to 64 bytes in whole words print as words, where an
/// 8-byte-aligned pair of words that forms the address of something known prints as that
/// symbol (pointer vars, ring-register words); anything else prints as its length and digest.
pub fn data(bytes: &[u8], s: &dyn Symbols) -> String {
    if bytes.is_empty() || bytes.len() > 64 || !bytes.len().is_multiple_of(4) {
        return format!("len={:#x} fnv1a64={:#018x}", bytes.len(), fnv1a64(bytes));
    }
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if i % 2 == 0 && i + 1 < words.len() {
            let v = (words[i + 1] as u64) << 32 | words[i] as u64;
            if v != 0 && s.region(v) != Region::Unknown {
                parts.push(s.sym(v));
                i += 2;
                continue;
            }
        }
        parts.push(format!("{:#x}", words[i]));
        i += 1;
    }
    format!("[{}]", parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrt_hal::exec_request::DeviceExecRequest;
    use nrt_hal::udma::{RxDesc, TxDesc};
    use nrt_hal::DeviceAddr;

    /// Addresses 0x1000..0x2000 are allocation #3; everything else is unknown.
    struct Fake;
    impl Symbols for Fake {
        fn sym(&self, addr: u64) -> String {
            if (0x1000..0x2000).contains(&addr) {
                format!("#3+{:#x}", addr - 0x1000)
            } else {
                format!("?{addr:#x}")
            }
        }
        fn region(&self, addr: u64) -> Region {
            if (0x1000..0x2000).contains(&addr) {
                Region::Alloc(0x1000)
            } else {
                Region::Unknown
            }
        }
    }

    #[test]
    fn descriptors_render_every_field() {
        let tx = TxDesc::new(
            56,
            1,
            LenCtrlFlags::FIRST | LenCtrlFlags::LAST,
            TxMeta::M2M,
            DeviceAddr::new(0x1140),
        )
        .unwrap()
        .encode();
        assert_eq!(
            tx_line("5", &tx, &Fake),
            "tx[5] len=56 id=1 FIRST|LAST meta=m2m src=#3+0x140"
        );
        let wb = UdmaDesc {
            meta_ctrl: TxMeta::M2M_WRITE_BARRIER.bits(),
            ..tx
        };
        assert_eq!(
            tx_line("5", &wb, &Fake),
            "tx[5] len=56 id=1 FIRST|LAST meta=m2m|write_barrier src=#3+0x140"
        );
        let rx = RxDesc::new(4, 2, LenCtrlFlags::INT_EN, DeviceAddr::new(0x1000))
            .unwrap()
            .encode();
        assert_eq!(
            rx_line("0", &rx, &Fake),
            "rx[0] len=4 id=2 INT_EN dst=#3+0x0"
        );
        let odd = UdmaDesc {
            len_ctrl: rx.len_ctrl | 1 << 29,
            meta_ctrl: 7,
            buf_ptr: 0x10,
        };
        assert_eq!(
            rx_line("1", &odd, &Fake),
            "rx[1] len=4 id=2 INT_EN unused=0x20000000 dst=?0x10 buf2=0x7"
        );
        assert_eq!(meta(0x0008_0001), "last_block|copy_source_data");
        assert_eq!(meta(0), "0x0");
    }

    #[test]
    fn exec_request_names_engines_and_flags() {
        let mut r = DeviceExecRequest::new(true, false, true);
        r.set_engine_address(EngineKind::Pe, DeviceAddr::new(0x1000));
        r.set_engine_address(EngineKind::Sp, DeviceAddr::new(0x1080));
        let buf = RequestBuffer {
            request: r,
            cc_dma_increment: 0,
        };
        assert_eq!(
            exec_request(&buf, &Fake),
            "exec_request do_model_switch=1 reload_seq_config=0 load_act_dve_tables=1 \
             pe=#3+0x0 act=- pool=- dve=- sp=#3+0x80 cc_dma_increment=0"
        );
    }

    #[test]
    fn data_symbolises_embedded_addresses() {
        let mut b = Vec::new();
        b.extend_from_slice(&0x1010u64.to_le_bytes());
        b.extend_from_slice(&0x20u32.to_le_bytes());
        assert_eq!(data(&b, &Fake), "[#3+0x10 0x20]");
        assert_eq!(data(&[1, 0, 0, 0, 0, 1, 0, 0], &Fake), "[0x1 0x100]");
        assert!(data(&[0u8; 100], &Fake).starts_with("len=0x64 fnv1a64=0x"));
        assert_eq!(
            category(MemAllocCategory::DmaRingsDevice),
            "dma_rings_device"
        );
    }

    #[test]
    fn dma_direct_ends_are_named_symbolically() {
        use nrt_hal::isa::DmaPattern;
        let pattern = DmaPattern {
            steps: [128, 1],
            nums: [4, 1],
        };
        let rec = |src, dst| {
            Instruction::DmaDirect {
                sem: nrt_hal::SemaphoreId(9),
                increment: 16,
                src_dtype: nrt_hal::Dtype::Bf16,
                dst_dtype: nrt_hal::Dtype::Bf16,
                src,
                dst,
                src_pattern: pattern,
                dst_pattern: pattern,
                src_elem_size: 128,
                dst_elem_size: 128,
            }
            .encode()
            .unwrap()
        };
        let slot = DeviceAddr::new(0x1020);
        let r = rec(
            DmaEnd::SlotRegister { slot, register: 31 },
            DmaEnd::Slot { slot, offset: 0x40 },
        );
        let text = instruction(&r, &Fake);
        assert_eq!(
            text,
            "dma.direct [slot #3+0x20]+0x40 [128,1][4,1]x128 bf16 <- [slot #3+0x20]+r31 \
             [128,1][4,1]x128 bf16; sem9 += 16"
        );
        // The same text as the disassembly, addresses aside.
        assert_eq!(disassemble_record(&r).replace("0x1020", "#3+0x20"), text);
        let r = rec(
            DmaEnd::Absolute(DeviceAddr::new(0x1100)),
            DmaEnd::Absolute(DeviceAddr::new(0x9000)),
        );
        assert!(instruction(&r, &Fake).starts_with("dma.direct [?0x9000] "));
        assert!(instruction(&r, &Fake).contains(" <- [#3+0x100] "));
    }

    #[test]
    fn code_lines_symbolise_write_targets() {
        let w = Instruction::Write {
            addr: DeviceAddr::new(0x1004),
            value: 3,
        }
        .encode()
        .unwrap();
        let e = Instruction::End.encode().unwrap();
        let mut bytes = w.as_bytes().to_vec();
        bytes.extend_from_slice(e.as_bytes());
        assert_eq!(
            code_lines("#9", 0x40, &bytes, &Fake),
            vec![
                "#9+0x40 write [#3+0x4] <- 0x3".to_string(),
                "#9+0x80 end".to_string()
            ]
        );
    }
}
