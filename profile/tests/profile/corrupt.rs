//! Bad traces are clean errors, never panics: every device trace cut short at hundreds of
//! offsets is refused with an error naming what is missing; single-byte corruptions and
//! seeded random mutations of real traces either read or are refused, and whatever reads
//! goes through the calibration, the profile rules, the JSON writer and the comparison
//! without a panic. A property test does the same with proptest-chosen mutations and with
//! arbitrary bytes after a valid version byte.

use std::path::PathBuf;

use nrt_profile::{compare, json, NtffError, NtffTrace};
use proptest::prelude::*;

use crate::shared;

/// A small trace of each version.
fn samples() -> Vec<(PathBuf, Vec<u8>)> {
    let mut v = Vec::new();
    if let Some(d) = shared::real_profiles() {
        v.push(d.join("chenhzhu+asst4-trainium2--part1_stream_256k_fd2k.ntff"));
    }
    if let Some(d) = shared::current_profiles() {
        v.push(d.join("allenkchau+trainium-kernel-fusion--fused_fp32_s512.ntff"));
    }
    v.into_iter()
        .filter_map(|p| std::fs::read(&p).ok().map(|b| (p, b)))
        .collect()
}

/// Everything downstream of a successful read.
fn exercise(t: &NtffTrace) {
    let c = t.calibration();
    assert!(c.total_time_ns >= 0.0);
    let p = t.to_profile();
    let text = json::to_string(&p);
    let back = json::from_str(&text).expect("our own JSON reads back");
    assert_eq!(back.instruction.len(), p.instruction.len());
    let _ = compare(&p, &back).to_text();
}

/// A tiny deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn truncated_traces_are_errors_at_every_cut() {
    for (path, bytes) in samples() {
        NtffTrace::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let len = bytes.len();
        // Every cut in the header and the protobuf message's first KiB, then 400 cuts spread
        // over the rest, and the last bytes.
        let mut cuts: Vec<usize> = (0..0x480.min(len)).collect();
        cuts.extend((0..400).map(|k| 0x480 + k * (len - 0x480) / 400));
        cuts.extend(len.saturating_sub(40)..len);
        let mut kinds = std::collections::BTreeMap::new();
        for cut in cuts {
            match NtffTrace::parse(&bytes[..cut]) {
                Ok(_) => panic!("{}: cut at {cut} of {len} bytes was read", path.display()),
                Err(e) => {
                    let kind = match e {
                        NtffError::Truncated { .. } => "truncated",
                        NtffError::Protobuf { .. } => "protobuf",
                        NtffError::Missing(_) => "missing",
                        NtffError::Invalid { .. } => "invalid",
                        NtffError::Version(_) => "version",
                    };
                    *kinds.entry(kind).or_insert(0) += 1;
                    assert!(!e.to_string().is_empty());
                }
            }
        }
        println!("{}: truncation errors by kind {kinds:?}", path.display());
        assert!(kinds.contains_key("truncated"));
    }
    // An empty or tiny file, and one of an unknown version.
    assert!(matches!(
        NtffTrace::parse(&[]),
        Err(NtffError::Truncated { .. })
    ));
    assert!(matches!(
        NtffTrace::parse(&[6; 10]),
        Err(NtffError::Truncated { .. })
    ));
    let mut v7 = vec![0u8; 0x100];
    v7[0] = 7;
    assert_eq!(NtffTrace::parse(&v7), Err(NtffError::Version(7)));
    let e = NtffTrace::read_file(std::path::Path::new("/nonexistent/x.ntff")).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/x.ntff"), "{e}");
}

#[test]
fn corrupted_traces_never_panic() {
    for (path, bytes) in samples() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let (mut ok, mut err) = (0, 0);
        // Single-bit flips at 500 places in the header and the protobuf message, where the
        // structure is.
        let msg_end = 0x80
            + (usize::from(bytes[1]) | usize::from(bytes[2]) << 8 | usize::from(bytes[3]) << 16);
        let msg_end = msg_end.min(bytes.len());
        for at in (0..msg_end).step_by((msg_end / 500).max(1)) {
            let mut b = bytes.clone();
            b[at] ^= 1 << (at % 8);
            match NtffTrace::parse(&b) {
                Ok(t) => {
                    exercise(&t);
                    ok += 1;
                }
                Err(_) => err += 1,
            }
        }
        // Random mutations anywhere, records included.
        for _ in 0..200 {
            let mut b = bytes.clone();
            for _ in 0..1 + rng.below(8) {
                let at = rng.below(b.len());
                b[at] = rng.next() as u8;
            }
            match NtffTrace::parse(&b) {
                Ok(t) => {
                    exercise(&t);
                    ok += 1;
                }
                Err(_) => err += 1,
            }
        }
        println!(
            "{}: corrupted copies read {ok}, refused {err}",
            path.display()
        );
        assert!(err > 0, "some corruptions must be detected");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_after_a_version_byte_never_panic(
        v in prop_oneof![Just(5u8), Just(6u8)],
        body in proptest::collection::vec(any::<u8>(), 0..600),
    ) {
        let mut b = vec![v];
        b.extend(body);
        if let Ok(t) = NtffTrace::parse(&b) {
            exercise(&t);
        }
    }

    #[test]
    fn mutated_real_traces_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        for (_, bytes) in samples() {
            let mut b = bytes.clone();
            for (at, val) in &edits {
                let i = at.index(b.len());
                b[i] = *val;
            }
            if truncate {
                b.truncate(cut.index(b.len()));
            }
            if let Ok(t) = NtffTrace::parse(&b) {
                exercise(&t);
            }
        }
    }
}
