//! The NEFF container: header offsets, hash quirk, writer layout, reader rules and rejections
//! (docs/neff.md §2–§3.3).

use std::io::{Read, Write};

use md5::{Digest as _, Md5};
use nrt_runtime::neff::{
    payload_hash, swap_md5_words, HashAlgo, Limits, Neff, NeffHeader, NeffWriter, ParseOptions,
    HEADER_SIZE, PAYLOAD_BLOCK,
};
use nrt_runtime::{Error, NrtStatus};
use proptest::prelude::*;
use sha2::Sha256;

const UUID: [u8; 16] = [
    0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x4d, 0xef, 0x80, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
];

fn sample_writer() -> NeffWriter {
    let mut w = NeffWriter::new("file.neff", UUID);
    w.add("kelf-0.json", br#"{"graphs":[]}"#.to_vec())
        .add("sg00/def.json", b"{}".to_vec())
        .add(
            "sg00/PE.bin",
            (0..=255u8).cycle().take(3000).collect::<Vec<_>>(),
        )
        .add("sg00/empty.bin", Vec::new())
        .add("sg00/block.bin", vec![7u8; 512])
        .add("info.json", b"{\"x\":1}".to_vec())
        .add("neff.json", b"{\"nodes\":[]}".to_vec());
    w
}

fn sample() -> Vec<u8> {
    sample_writer().write().unwrap()
}

fn parse(bytes: &[u8]) -> nrt_runtime::Result<Neff> {
    Neff::parse(bytes, &ParseOptions::default())
}

fn verifying() -> ParseOptions {
    ParseOptions {
        verify_hash: true,
        ..ParseOptions::default()
    }
}

#[track_caller]
fn expect_err(r: nrt_runtime::Result<Neff>, status: NrtStatus, needle: &str) -> Error {
    let e = r.expect_err("parse should fail");
    assert_eq!(e.status, status, "status of {e:?}");
    assert!(
        e.message.contains(needle),
        "message {:?} should mention {needle:?}",
        e.message
    );
    e
}

/// The gzip member's length at the start of `payload` (via a single-member decoder).
fn gzip_len(payload: &[u8]) -> usize {
    let mut d = flate2::bufread::GzDecoder::new(payload);
    let mut sink = Vec::new();
    d.read_to_end(&mut sink).unwrap();
    payload.len() - d.into_inner().len()
}

fn gunzip(payload: &[u8]) -> Vec<u8> {
    let mut d = flate2::bufread::GzDecoder::new(payload);
    let mut out = Vec::new();
    d.read_to_end(&mut out).unwrap();
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A ustar header block with a valid checksum.
fn tar_header(name: &[u8], size: u64, typeflag: u8) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name);
    h[100..108].copy_from_slice(b"0000664\0");
    h[108..116].copy_from_slice(b"0001750\0");
    h[116..124].copy_from_slice(b"0001750\0");
    h[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
    h[136..148].copy_from_slice(b"00000000000\0");
    h[156] = typeflag;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    fix_checksum(&mut h);
    h
}

fn fix_checksum(h: &mut [u8; 512]) {
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
}

/// A tar stream of `(name, typeflag, data)` entries plus two zero blocks.
fn raw_tar(entries: &[(&[u8], u8, &[u8])]) -> Vec<u8> {
    let mut t = Vec::new();
    for (name, ty, data) in entries {
        t.extend_from_slice(&tar_header(name, data.len() as u64, *ty));
        t.extend_from_slice(data);
        t.resize(t.len().div_ceil(512) * 512, 0);
    }
    t.resize(t.len() + 1024, 0);
    t
}

/// A NEFF (pkg 2, valid MD5) around an arbitrary payload.
fn neff_from_payload(payload: &[u8]) -> Vec<u8> {
    let mut h = NeffHeader::parse(&sample()).unwrap();
    h.data_size = payload.len() as u64;
    h.hash = payload_hash(HashAlgo::Md5, payload);
    let mut out = h.to_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

/// A NEFF whose payload is `tar`, gzipped and zero padded to the payload block.
fn neff_from_tar(tar: &[u8]) -> Vec<u8> {
    let mut p = gzip(tar);
    p.resize(p.len().div_ceil(PAYLOAD_BLOCK) * PAYLOAD_BLOCK, 0);
    neff_from_payload(&p)
}

// ---------------------------------------------------------------------------------------------
// Header

#[test]
fn header_offsets_are_pinned() {
    let mut b = [0u8; 1024];
    let mut put = |at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
    put(0x000, &0x0102_0304_0506_0708u64.to_le_bytes());
    put(0x008, &1024u64.to_le_bytes());
    put(0x010, &0x1122_3344_5566_7788u64.to_le_bytes());
    put(0x018, &0xA1u64.to_le_bytes());
    put(0x020, &0xB2u64.to_le_bytes());
    let build: Vec<u8> = (0..128u8).map(|i| i ^ 0x5A).collect();
    put(0x028, &build);
    put(0x0A8, &0xCAFE_F00Du32.to_le_bytes());
    let hash: Vec<u8> = (0..32u8).map(|i| 0x80 | i).collect();
    put(0x0AC, &hash);
    let uuid: Vec<u8> = (0..16u8).map(|i| 0x40 + i).collect();
    put(0x0CC, &uuid);
    put(0x0DC, b"model.neff");
    put(0x1DC, &0x0000_0007u32.to_le_bytes());
    let tpn: Vec<u8> = (0..64u8).map(|i| i + 1).collect();
    put(0x1E0, &tpn);
    put(0x220, &0x0000_0000_0000_0C00u64.to_le_bytes());
    put(0x228, &0x0000_0002u32.to_le_bytes());

    let h = NeffHeader::parse(&b).unwrap();
    assert_eq!(h.pkg_version, 0x0102_0304_0506_0708);
    assert_eq!(h.header_size, 1024);
    assert_eq!(h.data_size, 0x1122_3344_5566_7788);
    assert_eq!(h.neff_version_major, 0xA1);
    assert_eq!(h.neff_version_minor, 0xB2);
    assert_eq!(h.build_version.to_vec(), build);
    assert_eq!(h.num_tpb, 0xCAFE_F00D);
    assert_eq!(h.hash.to_vec(), hash);
    assert_eq!(h.uuid.to_vec(), uuid);
    assert_eq!(h.name, "model.neff");
    assert_eq!(h.requested_tpb_count, 7);
    assert_eq!(h.tpb_per_node.to_vec(), tpn);
    assert_eq!(h.feature_bits, 0xC00);
    assert_eq!(h.lnc_size, 2);
    assert_eq!(h.to_bytes(), b, "to_bytes reproduces the hand-built header");
    assert_eq!(h.uuid_string(), "40414243-4445-4647-4849-4a4b4c4d4e4f");

    // Trailing bytes after the header are ignored by the header decoder.
    let mut longer = b.to_vec();
    longer.extend_from_slice(&[0xFF; 100]);
    assert_eq!(NeffHeader::parse(&longer).unwrap(), h);
}

#[test]
fn header_name_fills_field_without_nul() {
    let mut b = [0u8; 1024];
    b[0x0DC..0x1DC].fill(b'n');
    b[0x1DC] = 9; // requested_tpb_count right after must not leak into the name
    let h = NeffHeader::parse(&b).unwrap();
    assert_eq!(h.name, "n".repeat(256));
    assert_eq!(h.requested_tpb_count, 9);
}

#[test]
fn header_name_longer_than_the_field_is_cut_at_a_character_boundary() {
    let mut h = NeffHeader::parse(&sample()).unwrap();
    // 255 ASCII bytes then a 3-byte character straddling the 256-byte field's end.
    h.name = format!("{}€tail", "a".repeat(255));
    let back = NeffHeader::parse(&h.to_bytes()).unwrap();
    assert_eq!(
        back.name,
        "a".repeat(255),
        "the straddling character is dropped whole"
    );
    h.name = "é".repeat(200); // 400 bytes: 128 whole characters fit
    let back = NeffHeader::parse(&h.to_bytes()).unwrap();
    assert_eq!(back.name, "é".repeat(128));
}

#[test]
fn header_hash_algo_and_hex() {
    let mut h = NeffHeader::parse(&sample()).unwrap();
    assert_eq!(h.hash_algo(), Some(HashAlgo::Md5));
    assert_eq!(h.hash_hex().len(), 32);
    h.pkg_version = 1;
    assert_eq!(h.hash_algo(), Some(HashAlgo::Sha256));
    assert_eq!(h.hash_hex().len(), 64);
    h.pkg_version = 7;
    assert_eq!(h.hash_algo(), None);
}

#[test]
fn md5_word_swap_reference_example() {
    let digest: [u8; 16] = [
        0x45, 0x0c, 0x45, 0xcd, 0xca, 0x09, 0xdd, 0x83, 0xf2, 0x5a, 0x84, 0x8d, 0x12, 0x8f, 0x24,
        0x90,
    ];
    let stored: [u8; 16] = [
        0xcd, 0x45, 0x0c, 0x45, 0x83, 0xdd, 0x09, 0xca, 0x8d, 0x84, 0x5a, 0xf2, 0x90, 0x24, 0x8f,
        0x12,
    ];
    assert_eq!(swap_md5_words(&digest), stored);
}

#[test]
fn payload_hash_md5_is_stored_word_swapped() {
    let payload = b"the whole payload, gzip and zero tail\0\0\0\0";
    let digest: [u8; 16] = Md5::digest(payload).into();
    let stored = payload_hash(HashAlgo::Md5, payload);
    assert_ne!(
        stored[..16],
        digest[..],
        "must not be the plain digest order"
    );
    for w in 0..4 {
        let mut word = digest[w * 4..w * 4 + 4].to_vec();
        word.reverse();
        assert_eq!(stored[w * 4..w * 4 + 4], word[..], "word {w}");
    }
    assert_eq!(stored[16..], [0u8; 16]);
}

#[test]
fn payload_hash_sha256_is_plain_digest() {
    let payload = b"abc";
    let digest: [u8; 32] = Sha256::digest(payload).into();
    assert_eq!(payload_hash(HashAlgo::Sha256, payload), digest);
}

// ---------------------------------------------------------------------------------------------
// Writer layout and round trip

#[test]
fn write_parse_round_trip() {
    let w = sample_writer();
    let bytes = w.write().unwrap();
    let n = parse(&bytes).unwrap();
    let got: Vec<(String, Vec<u8>)> = n
        .members()
        .map(|(p, b)| (p.to_owned(), b.to_vec()))
        .collect();
    let want = [
        ("kelf-0.json", br#"{"graphs":[]}"#.to_vec()),
        ("sg00/def.json", b"{}".to_vec()),
        (
            "sg00/PE.bin",
            (0..=255u8).cycle().take(3000).collect::<Vec<_>>(),
        ),
        ("sg00/empty.bin", Vec::new()),
        ("sg00/block.bin", vec![7u8; 512]),
        ("info.json", b"{\"x\":1}".to_vec()),
        ("neff.json", b"{\"nodes\":[]}".to_vec()),
    ];
    let want: Vec<(String, Vec<u8>)> = want
        .iter()
        .map(|(p, b)| (p.to_string(), b.clone()))
        .collect();
    assert_eq!(got, want, "members and archive order");
    assert_eq!(n.member_count(), 7);
    assert_eq!(n.member("sg00/def.json"), Some(&b"{}"[..]));
    assert_eq!(n.member("./sg00/def.json"), Some(&b"{}"[..]));
    assert_eq!(n.member("sg00/missing.json"), None);
    assert_eq!(n.hash_verified(), None);

    let h = &n.header;
    assert_eq!(h.pkg_version, 2);
    assert_eq!(h.header_size, 1024);
    assert_eq!(h.data_size as usize, bytes.len() - HEADER_SIZE);
    assert_eq!((h.neff_version_major, h.neff_version_minor), (2, 0));
    assert_eq!(h.build_version, [0u8; 128]);
    assert_eq!(h.num_tpb, 1);
    assert_eq!(h.uuid, UUID);
    assert_eq!(h.uuid_string(), "12345678-9abc-4def-8001-020304050607");
    assert_eq!(h.name, "file.neff");
    assert_eq!(h.requested_tpb_count, 1);
    assert_eq!(h.tpb_per_node[0], 1);
    assert!(h.tpb_per_node[1..].iter().all(|&b| b == 0));
    assert_eq!(h.feature_bits, 0);
    assert_eq!(h.lnc_size, 1);
    assert_eq!(
        h.hash,
        payload_hash(HashAlgo::Md5, &bytes[HEADER_SIZE..]),
        "MD5 over the whole payload"
    );
    assert!(
        bytes[0x22C..HEADER_SIZE].iter().all(|&b| b == 0),
        "header pad is zero"
    );

    let v = Neff::parse(&bytes, &verifying()).unwrap();
    assert_eq!(v.hash_verified(), Some(true));
}

#[test]
fn writer_header_fields_round_trip() {
    let mut w = sample_writer();
    w.neff_version = (1, 3);
    w.num_tpb = 2;
    w.requested_tpb_count = 4;
    w.tpb_per_node = [0; 64];
    w.tpb_per_node[..2].copy_from_slice(&[1, 1]);
    w.feature_bits = 0xC00;
    w.lnc_size = 2;
    let n = parse(&w.write().unwrap()).unwrap();
    let h = &n.header;
    assert_eq!((h.neff_version_major, h.neff_version_minor), (1, 3));
    assert_eq!(h.num_tpb, 2);
    assert_eq!(h.requested_tpb_count, 4);
    assert_eq!(&h.tpb_per_node[..3], &[1, 1, 0]);
    assert_eq!(h.feature_bits, 0xC00);
    assert_eq!(h.lnc_size, 2);
}

#[test]
fn payload_is_padded_to_payload_block_with_zero_tail() {
    for w in [sample_writer(), NeffWriter::new("empty.neff", UUID)] {
        let bytes = w.write().unwrap();
        let h = NeffHeader::parse(&bytes).unwrap();
        assert_eq!(h.data_size as usize % PAYLOAD_BLOCK, 0);
        assert!(h.data_size > 0);
        assert_eq!(bytes.len(), HEADER_SIZE + h.data_size as usize);
        let payload = &bytes[HEADER_SIZE..];
        let glen = gzip_len(payload);
        assert!(glen < payload.len(), "a zero tail follows the gzip member");
        assert!(payload[glen..].iter().all(|&b| b == 0), "tail is all zero");
    }
}

#[test]
fn gzip_header_bytes_match_real_files() {
    let mut w = sample_writer();
    let plain = w.write().unwrap();
    assert_eq!(
        plain[HEADER_SIZE..HEADER_SIZE + 10],
        [0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x04, 0x03],
        "ID1 ID2 CM FLG MTIME XFL OS"
    );
    w.gzip_mtime = 0x6543_2109;
    let stamped = w.write().unwrap();
    assert_eq!(
        stamped[HEADER_SIZE..HEADER_SIZE + 10],
        [0x1f, 0x8b, 0x08, 0x00, 0x09, 0x21, 0x43, 0x65, 0x04, 0x03]
    );
    // Exactly one gzip member.
    let payload = &stamped[HEADER_SIZE..];
    let glen = gzip_len(payload);
    assert!(payload[glen..].iter().all(|&b| b == 0));
}

#[test]
fn tar_layout_matches_real_files() {
    let bytes = sample();
    let tar = gunzip(&bytes[HEADER_SIZE..]);
    let sizes = [13usize, 2, 3000, 0, 512, 7, 12];
    let body: usize = sizes.iter().map(|s| 512 + s.div_ceil(512) * 512).sum();
    assert_eq!(
        tar.len(),
        body + 1024,
        "entries then exactly two zero blocks"
    );
    assert!(tar[body..].iter().all(|&b| b == 0));

    let mut at = 0;
    for size in sizes {
        let h = &tar[at..at + 512];
        assert_eq!(&h[100..108], b"0000664\0", "mode");
        assert_eq!(&h[108..116], b"0001750\0", "uid 1000");
        assert_eq!(&h[116..124], b"0001750\0", "gid 1000");
        assert_eq!(&h[124..136], format!("{size:011o}\0").as_bytes());
        assert_eq!(&h[136..148], b"00000000000\0", "mtime 0");
        assert_eq!(h[156], b'0', "regular file");
        assert!(h[157..257].iter().all(|&b| b == 0), "no linkname");
        assert_eq!(&h[257..263], b"ustar\0");
        assert_eq!(&h[263..265], b"00");
        assert_eq!(&h[265..272], b"nobody\0");
        assert_eq!(&h[297..304], b"nobody\0");
        assert!(h[345..500].iter().all(|&b| b == 0), "prefix unused");
        // checksum
        let mut c = h.to_vec();
        c[148..156].copy_from_slice(b"        ");
        let sum: u32 = c.iter().map(|&b| u32::from(b)).sum();
        assert_eq!(&h[148..156], format!("{sum:06o}\0 ").as_bytes());
        at += 512 + size.div_ceil(512) * 512;
    }
    assert_eq!(&tar[..11], b"kelf-0.json");
}

#[test]
fn writer_is_deterministic() {
    let a = sample_writer().write().unwrap();
    let b = sample_writer().write().unwrap();
    assert_eq!(a, b);
    let w = sample_writer();
    assert_eq!(w.write().unwrap(), w.write().unwrap());
}

#[test]
fn writer_refuses_bad_names() {
    let cases: [(&str, &str); 6] = [
        ("", "empty"),
        ("/abs", "absolute"),
        ("a/../b", "'..'"),
        ("./a", "'.'"),
        ("a//b", "empty"),
        (&"x".repeat(101), "100-byte"),
    ];
    for (name, needle) in cases {
        let mut w = NeffWriter::new("n", UUID);
        w.add(name, b"x".to_vec());
        let e = w.write().unwrap_err();
        assert_eq!(e.status, NrtStatus::Invalid);
        assert!(e.message.contains(needle), "{name:?}: {}", e.message);
    }
    let mut w = NeffWriter::new("n", UUID);
    w.add("a", b"1".to_vec()).add("a", b"2".to_vec());
    assert!(w.write().unwrap_err().message.contains("duplicate"));
    let mut w = NeffWriter::new(&"n".repeat(256), UUID);
    w.add("a", b"1".to_vec());
    assert!(w.write().unwrap_err().message.contains("name"));
    let mut w = NeffWriter::new("n", UUID);
    w.pkg_version = 3;
    assert!(w.write().unwrap_err().message.contains("pkg_version"));
    // 100 bytes exactly is fine.
    let mut w = NeffWriter::new("n", UUID);
    let long = "y".repeat(100);
    w.add(&long, b"z".to_vec());
    assert_eq!(
        parse(&w.write().unwrap()).unwrap().member(&long),
        Some(&b"z"[..])
    );
}

// ---------------------------------------------------------------------------------------------
// Hash

#[test]
fn verify_hash_catches_flipped_payload_byte() {
    let bytes = sample();
    let mut bad = bytes.clone();
    let last = bad.len() - 1; // in the zero tail: gzip still decodes
    bad[last] ^= 0x01;
    expect_err(
        Neff::parse(&bad, &verifying()),
        NrtStatus::Invalid,
        "hash mismatch",
    );
    // Off: the hash is not looked at; the tail byte is then reported as garbage.
    expect_err(parse(&bad), NrtStatus::Invalid, "trailing garbage");

    // A flipped byte in the stored hash: caught when verifying, ignored when not.
    let mut bad_hash = bytes.clone();
    bad_hash[0x0AC] ^= 0xFF;
    let e = expect_err(
        Neff::parse(&bad_hash, &verifying()),
        NrtStatus::Invalid,
        "hash mismatch",
    );
    let h = NeffHeader::parse(&bad_hash).unwrap();
    assert!(e.message.contains(&h.hash_hex()), "{}", e.message);
    let n = parse(&bad_hash).unwrap();
    assert_eq!(n.hash_verified(), None);
    assert_eq!(n.member_count(), 7);
}

#[test]
fn pkg_version_1_uses_sha256() {
    let mut w = sample_writer();
    w.pkg_version = 1;
    let bytes = w.write().unwrap();
    let h = NeffHeader::parse(&bytes).unwrap();
    assert_eq!(h.pkg_version, 1);
    let digest: [u8; 32] = Sha256::digest(&bytes[HEADER_SIZE..]).into();
    assert_eq!(h.hash, digest);
    assert_eq!(h.hash_hex().len(), 64);
    let n = Neff::parse(&bytes, &verifying()).unwrap();
    assert_eq!(n.hash_verified(), Some(true));
    assert_eq!(n.member("neff.json"), Some(&b"{\"nodes\":[]}"[..]));

    let mut bad = bytes.clone();
    bad[0x0AC + 31] ^= 1; // last SHA-256 byte is meaningful
    expect_err(
        Neff::parse(&bad, &verifying()),
        NrtStatus::Invalid,
        "hash mismatch",
    );
}

#[test]
fn parse_options_from_env() {
    // Only this test touches the variable.
    std::env::set_var("NEURON_RT_VALIDATE_HASH", "1");
    assert!(ParseOptions::from_env().verify_hash);
    std::env::set_var("NEURON_RT_VALIDATE_HASH", "TRUE");
    assert!(ParseOptions::from_env().verify_hash);
    std::env::set_var("NEURON_RT_VALIDATE_HASH", "yes");
    assert!(ParseOptions::from_env().verify_hash);
    std::env::set_var("NEURON_RT_VALIDATE_HASH", "0");
    assert!(!ParseOptions::from_env().verify_hash);
    std::env::remove_var("NEURON_RT_VALIDATE_HASH");
    assert!(!ParseOptions::from_env().verify_hash);
    assert!(!ParseOptions::default().verify_hash);
    assert_eq!(ParseOptions::from_env().limits, Limits::default());
    assert_eq!(Limits::default().max_uncompressed, 4 << 30);
    assert_eq!(Limits::default().max_members, 65_536);
    assert_eq!(Limits::default().max_member_size, 2 << 30);
}

// ---------------------------------------------------------------------------------------------
// Header rejections

#[test]
fn rejects_too_short() {
    expect_err(
        parse(&[0u8; 100]),
        NrtStatus::Invalid,
        "NEFF is 100 bytes, smaller than its 1024-byte header",
    );
    let e = NeffHeader::parse(&[0u8; 1023]).unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
    assert!(e.message.contains("1023 bytes"));
}

fn patch_u64(bytes: &mut [u8], at: usize, v: u64) {
    bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn rejects_bad_header_size() {
    let mut b = sample();
    patch_u64(&mut b, 0x008, 512);
    expect_err(parse(&b), NrtStatus::Invalid, "header_size is 512");
}

#[test]
fn rejects_bad_pkg_version() {
    for v in [0u64, 3, u64::MAX] {
        let mut b = sample();
        patch_u64(&mut b, 0x000, v);
        expect_err(parse(&b), NrtStatus::Invalid, &format!("pkg_version {v}"));
    }
}

#[test]
fn rejects_data_size_mismatch() {
    let b = sample();
    let ds = NeffHeader::parse(&b).unwrap().data_size;
    let mut big = b.clone();
    patch_u64(&mut big, 0x010, ds + 1);
    expect_err(parse(&big), NrtStatus::Invalid, "data_size");
    let mut huge = b.clone();
    patch_u64(&mut huge, 0x010, u64::MAX);
    expect_err(parse(&huge), NrtStatus::Invalid, "file truncated");
    // A file cut short.
    expect_err(parse(&b[..b.len() - 1]), NrtStatus::Invalid, "data_size");
    // Bytes after data_size.
    let mut longer = b.clone();
    longer.extend_from_slice(&[0; 10]);
    expect_err(
        parse(&longer),
        NrtStatus::Invalid,
        "10 unexpected trailing bytes",
    );
}

#[test]
fn rejects_neff_version_3() {
    let mut w = sample_writer();
    w.neff_version = (3, 0);
    let b = w.write().unwrap();
    expect_err(
        parse(&b),
        NrtStatus::UnsupportedNeffVersion,
        "NEFF version mismatch supported: 0.0-2.x received: 3.0",
    );
    // Majors 0, 1 and 2 load.
    for major in 0..=2 {
        let mut w = sample_writer();
        w.neff_version = (major, 7);
        assert_eq!(
            parse(&w.write().unwrap())
                .unwrap()
                .header
                .neff_version_major,
            major
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Payload rejections

#[test]
fn rejects_truncated_gzip() {
    let b = sample();
    let payload = &b[HEADER_SIZE..];
    let glen = gzip_len(payload);
    for cut in [glen - 1, glen - 8, glen / 2, 12] {
        let e = expect_err(
            parse(&neff_from_payload(&payload[..cut])),
            NrtStatus::Invalid,
            "gzip",
        );
        assert!(e.message.contains("truncated"), "{cut}: {}", e.message);
    }
    expect_err(
        parse(&neff_from_payload(&[])),
        NrtStatus::Invalid,
        "truncated gzip",
    );
}

#[test]
fn rejects_corrupt_gzip() {
    let b = sample();
    let mut payload = b[HEADER_SIZE..].to_vec();
    payload[0] = 0x1e; // bad gzip magic
    expect_err(
        parse(&neff_from_payload(&payload)),
        NrtStatus::Invalid,
        "gzip",
    );
    // A wrong CRC in the trailer.
    let mut payload = b[HEADER_SIZE..].to_vec();
    let glen = gzip_len(&payload);
    payload[glen - 8] ^= 0xFF;
    expect_err(
        parse(&neff_from_payload(&payload)),
        NrtStatus::Invalid,
        "corrupt gzip",
    );
}

#[test]
fn rejects_non_zero_tail() {
    let b = sample();
    let mut payload = b[HEADER_SIZE..].to_vec();
    let glen = gzip_len(&payload);
    payload[glen + 3] = 0x42;
    let e = expect_err(
        parse(&neff_from_payload(&payload)),
        NrtStatus::Invalid,
        "trailing garbage after gzip member",
    );
    assert!(
        e.message.contains(&format!("offset {}", glen + 3)),
        "{}",
        e.message
    );
    // A second gzip member is garbage too.
    let mut two = payload[..glen].to_vec();
    two.extend_from_slice(&gzip(b"more"));
    expect_err(
        parse(&neff_from_payload(&two)),
        NrtStatus::Invalid,
        "trailing garbage",
    );
}

#[test]
fn rejects_bad_tar_checksum() {
    let mut tar = raw_tar(&[(b"a.json", b'0', b"{}")]);
    tar[0] = b'b'; // name changes, checksum does not
    expect_err(
        parse(&neff_from_tar(&tar)),
        NrtStatus::Invalid,
        "checksum mismatch",
    );
    let mut tar = raw_tar(&[(b"a.json", b'0', b"{}")]);
    tar[148] = b'9';
    expect_err(parse(&neff_from_tar(&tar)), NrtStatus::Invalid, "checksum");
}

#[test]
fn rejects_non_ustar_header() {
    let mut tar = raw_tar(&[(b"a.json", b'0', b"{}")]);
    tar[257..263].copy_from_slice(b"xxxxx\0");
    let mut h: [u8; 512] = tar[..512].try_into().unwrap();
    fix_checksum(&mut h);
    tar[..512].copy_from_slice(&h);
    expect_err(
        parse(&neff_from_tar(&tar)),
        NrtStatus::Invalid,
        "not a ustar header",
    );
}

#[test]
fn rejects_absolute_path() {
    let tar = raw_tar(&[(b"/etc/passwd", b'0', b"x")]);
    expect_err(
        parse(&neff_from_tar(&tar)),
        NrtStatus::Invalid,
        "absolute path",
    );
}

#[test]
fn rejects_dotdot() {
    for name in [&b"../x"[..], b"sg00/../../x", b"a/.."] {
        let tar = raw_tar(&[(name, b'0', b"x")]);
        expect_err(parse(&neff_from_tar(&tar)), NrtStatus::Invalid, "'..'");
    }
}

#[test]
fn rejects_links_devices_and_extensions() {
    let cases: [(u8, &str); 9] = [
        (b'2', "symbolic link"),
        (b'1', "hard link"),
        (b'3', "character device"),
        (b'4', "block device"),
        (b'6', "FIFO"),
        (b'x', "pax extended header"),
        (b'g', "pax global header"),
        (b'L', "GNU long-name"),
        (b'Z', "unsupported entry type"),
    ];
    for (ty, needle) in cases {
        let tar = raw_tar(&[(b"ok.json", b'0', b"{}"), (b"link", ty, b"")]);
        let e = expect_err(parse(&neff_from_tar(&tar)), NrtStatus::Invalid, needle);
        assert!(e.message.contains("\"link\""), "{}", e.message);
    }
}

#[test]
fn rejects_duplicate_member() {
    let tar = raw_tar(&[(b"a.json", b'0', b"1"), (b"a.json", b'0', b"2")]);
    expect_err(
        parse(&neff_from_tar(&tar)),
        NrtStatus::Invalid,
        "duplicate tar member \"a.json\"",
    );
    // Equal after normalisation.
    let tar = raw_tar(&[(b"a.json", b'0', b"1"), (b"./a.json", b'0', b"2")]);
    expect_err(parse(&neff_from_tar(&tar)), NrtStatus::Invalid, "duplicate");
}

#[test]
fn rejects_empty_name() {
    let tar = raw_tar(&[(b"", b'0', b"x")]);
    expect_err(
        parse(&neff_from_tar(&tar)),
        NrtStatus::Invalid,
        "empty name",
    );
}

#[test]
fn rejects_missing_end_of_archive_and_data_after_it() {
    let mut tar = raw_tar(&[(b"a.json", b'0', b"{}")]);
    tar.truncate(tar.len() - 1024);
    expect_err(
        parse(&neff_from_tar(&tar)),
        NrtStatus::Invalid,
        "end-of-archive",
    );
    // Extra zero blocks after the end are fine (GNU tar pads to its record size).
    let mut tar = raw_tar(&[(b"a.json", b'0', b"{}")]);
    tar.resize(tar.len() + 8192, 0);
    assert_eq!(
        parse(&neff_from_tar(&tar)).unwrap().member("a.json"),
        Some(&b"{}"[..])
    );
    // Data after the end is not.
    tar.push(1);
    expect_err(
        parse(&neff_from_tar(&tar)),
        NrtStatus::Invalid,
        "after the tar end-of-archive",
    );
    // A member cut short inside the tar.
    let mut tar = raw_tar(&[(b"a.bin", b'0', &[5u8; 700])]);
    tar.truncate(512 + 600);
    expect_err(parse(&neff_from_tar(&tar)), NrtStatus::Invalid, "\"a.bin\"");
}

#[test]
fn directory_entries_are_ignored_and_names_normalised() {
    let tar = raw_tar(&[
        (b"sg00/", b'5', b""),
        (b"./sg00/def.json", b'0', b"{}"),
        (b"sg01//x.bin", 0, b"x"),
    ]);
    let n = parse(&neff_from_tar(&tar)).unwrap();
    let names: Vec<&str> = n.members().map(|(p, _)| p).collect();
    assert_eq!(names, ["sg00/def.json", "sg01/x.bin"]);
    assert_eq!(n.member("./sg00/def.json"), Some(&b"{}"[..]));
}

#[test]
fn ustar_prefix_is_joined() {
    let mut h = tar_header(b"def.json", 2, b'0');
    h[345..349].copy_from_slice(b"sg00");
    fix_checksum(&mut h);
    let mut tar = h.to_vec();
    tar.extend_from_slice(b"{}");
    tar.resize(1024 + 1024, 0);
    let n = parse(&neff_from_tar(&tar)).unwrap();
    assert_eq!(n.member("sg00/def.json"), Some(&b"{}"[..]));
}

// ---------------------------------------------------------------------------------------------
// Limits

fn with_limits(limits: Limits) -> ParseOptions {
    ParseOptions {
        verify_hash: false,
        limits,
    }
}

#[test]
fn rejects_decompression_bomb() {
    let mut w = NeffWriter::new("bomb.neff", UUID);
    w.add("zeros.bin", vec![0u8; 10 << 20]);
    let bytes = w.write().unwrap();
    assert!(bytes.len() < 1 << 20, "the bomb is small on disk");
    let small = with_limits(Limits {
        max_uncompressed: 1 << 20,
        ..Limits::default()
    });
    let e = expect_err(
        Neff::parse(&bytes, &small),
        NrtStatus::Invalid,
        "max_uncompressed",
    );
    assert!(e.message.contains("1048576"), "{}", e.message);
    assert!(e.message.contains("zeros.bin"), "{}", e.message);
    // Under the default limits it loads.
    assert_eq!(
        parse(&bytes).unwrap().member("zeros.bin").unwrap().len(),
        10 << 20
    );

    // Zeros after the end-of-archive count too (caught by the streaming limit).
    let mut tar = raw_tar(&[(b"a.json", b'0', b"{}")]);
    tar.resize(2 << 20, 0);
    expect_err(
        Neff::parse(&neff_from_tar(&tar), &small),
        NrtStatus::Invalid,
        "max_uncompressed",
    );
}

#[test]
fn enforces_member_limits() {
    let bytes = sample();
    let e = expect_err(
        Neff::parse(
            &bytes,
            &with_limits(Limits {
                max_member_size: 1000,
                ..Limits::default()
            }),
        ),
        NrtStatus::Invalid,
        "max_member_size",
    );
    assert!(e.message.contains("sg00/PE.bin"), "{}", e.message);
    expect_err(
        Neff::parse(
            &bytes,
            &with_limits(Limits {
                max_members: 6,
                ..Limits::default()
            }),
        ),
        NrtStatus::Invalid,
        "max_members",
    );
    let exact = with_limits(Limits {
        max_members: 7,
        max_member_size: 3000,
        max_uncompressed: gunzip(&bytes[HEADER_SIZE..]).len() as u64,
    });
    assert_eq!(Neff::parse(&bytes, &exact).unwrap().member_count(), 7);
}

// ---------------------------------------------------------------------------------------------
// Never panic

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parse_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let _ = Neff::parse(&bytes, &verifying());
        let _ = parse(&bytes);
        let _ = NeffHeader::parse(&bytes).map(|h| (h.uuid_string(), h.hash_hex(), h.to_bytes()));
    }

    #[test]
    fn parse_never_panics_on_arbitrary_payload(payload in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let _ = parse(&neff_from_payload(&payload));
        let _ = parse(&neff_from_tar(&payload));
    }

    #[test]
    fn parse_never_panics_on_mutated_neff(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in proptest::option::of(any::<prop::sample::Index>()),
        verify in any::<bool>(),
    ) {
        let mut bytes = sample();
        for (i, v) in &flips {
            let i = i.index(bytes.len());
            bytes[i] ^= v | 1;
        }
        if let Some(c) = cut {
            bytes.truncate(c.index(bytes.len()));
        }
        let opts = ParseOptions { verify_hash: verify, ..ParseOptions::default() };
        if let Ok(n) = Neff::parse(&bytes, &opts) {
            for (p, b) in n.members() {
                prop_assert_eq!(n.member(p), Some(b));
            }
        }
    }

    #[test]
    fn parse_never_panics_on_mutated_payload(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        // Mutate the gzip member and keep the header consistent, so the mutation reaches the
        // decompressor and the tar walker.
        let bytes = sample();
        let mut payload = bytes[HEADER_SIZE..].to_vec();
        let glen = gzip_len(&payload);
        for (i, v) in &flips {
            let i = i.index(glen);
            payload[i] ^= v | 1;
        }
        let _ = Neff::parse(&neff_from_payload(&payload), &verifying());
        // And mutate the tar before compressing, so tar headers see garbage.
        let mut tar = gunzip(&bytes[HEADER_SIZE..]);
        for (i, v) in &flips {
            let i = i.index(tar.len());
            tar[i] ^= v | 1;
        }
        let _ = parse(&neff_from_tar(&tar));
    }
}

#[test]
fn a_gzip_stream_cut_mid_way_is_reported_as_truncated_gzip() {
    // Zeroing the payload from the middle of the gzip member on inflates to garbage before the
    // decoder notices; the error must still name the gzip layer, not a tar header.
    let mut w = sample_writer();
    let big: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    w.add("weights.bin", big);
    let bytes = w.write().unwrap();
    let end = 1024 + gzip_len(&bytes[1024..]);
    for cut in [1024 + 300, (1024 + end) / 2, end - 40] {
        let mut b = bytes.clone();
        b[cut..].iter_mut().for_each(|x| *x = 0);
        expect_err(parse(&b), NrtStatus::Invalid, "gzip");
    }
}
