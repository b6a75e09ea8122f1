//! Stable replay of the fuzz targets: every committed regression input
//! (`fuzz/regressions/<target>/`), every seed, and a short seeded mutation smoke run through
//! each target function — the same functions the libFuzzer wrappers in `fuzz/` call.

use nrt_fixtures::rng::SplitMix64;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nrt_fuzz::{seeds, TARGETS};

fn regressions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions")
}

/// The committed regression inputs of `target` (none if it has no folder: not every target has
/// regressions yet; [`regressions_replay`] requires the corpus as a whole to be non-empty).
fn regression_inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = regressions_dir().join(target);
    if !dir.exists() {
        return Vec::new();
    }
    let rd = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut v: Vec<(PathBuf, Vec<u8>)> = rd
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file() && p.extension().is_none_or(|x| x != "md"))
        .map(|p| {
            let b = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, b)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn regression_directories_name_targets() {
    // A missing corpus is a broken checkout, not a pass.
    let rd = std::fs::read_dir(regressions_dir())
        .unwrap_or_else(|e| panic!("{}: {e}", regressions_dir().display()));
    let mut dirs = 0;
    for e in rd {
        let p = e.expect("directory entry").path();
        if p.is_dir() {
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            assert!(
                nrt_fuzz::target(&name).is_some(),
                "fuzz/regressions/{name} is not a target"
            );
            dirs += 1;
        }
    }
    assert!(dirs > 0, "fuzz/regressions holds no target folder");
}

#[test]
fn regressions_replay() {
    let mut replayed = 0;
    for (name, f) in TARGETS {
        for (path, bytes) in regression_inputs(name) {
            eprintln!("{name}: {}", path.display());
            f(&bytes);
            replayed += 1;
        }
    }
    // An empty (or missing) corpus would make this pass without replaying anything.
    assert!(
        replayed > 0,
        "no regression input under {}",
        regressions_dir().display()
    );
}

#[test]
fn every_target_has_seeds_and_they_replay() {
    for (name, f) in TARGETS {
        let s = seeds::seeds(name);
        assert!(!s.is_empty(), "{name} has no seeds");
        for (seed, bytes) in &s {
            eprintln!("{name}: seed {seed}");
            f(bytes);
        }
    }
}

#[test]
fn zoo_models_load_execute_and_unload() {
    // The load target must actually reach S5 on the zoo, and execute it, or fuzzing it explores
    // only errors.
    use nrt_fuzz::neff::Outcome;
    let zoo = seeds::neffs();
    let n = zoo.iter().filter(|(n, _)| n.starts_with("neffs-")).count();
    assert!(n >= 10, "zoo NEFFs found: {n}");
    let members = zoo
        .iter()
        .filter(|(n, _)| n.starts_with("members-"))
        .count();
    assert_eq!(members, n, "a members-mode seed per zoo NEFF");
    let loadable = |n: &str| n.starts_with("neffs-") || n.starts_with("members-");
    for (name, bytes) in zoo.iter().filter(|(n, _)| loadable(n)) {
        let out = nrt_fuzz::neff::load_execute_unload(bytes);
        eprintln!("{name}: {out:?}");
        assert!(
            out.iter().any(|o| *o != Outcome::NotLoaded),
            "{name} loads nowhere"
        );
        // Its own generation: trn1 is the first simulator, trn2 the second.
        let own = if name.contains(".trn1.") { 0 } else { 1 };
        if name.contains("real_like") {
            // Loads, but its streams are not executable (fixtures/src/zoo/real_like.rs).
            assert!(
                matches!(out[own], Outcome::Executed(Err(_))),
                "{name}: {out:?}"
            );
        } else {
            assert_eq!(
                out[own],
                Outcome::Executed(Ok(())),
                "{name} does not execute with status Ok on its own generation"
            );
        }
    }
}

#[test]
fn poisoned_cores_recover_on_the_next_load() {
    // A fuzz-corpus input whose execution does not complete within the fuzz exec timeout on
    // either simulator (NRT_TIMEOUT; on trn2, depending on how far the device gets before the
    // deadline, NRT_EXEC_HW_ERR_DMA_ABORT): both poison the execution unit. The rigs are reused: the next load must recover the core
    // (reset) as documented, so a zoo model executes Ok right after, every time.
    use nrt_fuzz::neff::Outcome;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let poison = std::fs::read(dir.join("neff_load-poisons")).expect("test input");
    let zoo: std::collections::BTreeMap<_, _> = seeds::neffs().into_iter().collect();
    for _ in 0..3 {
        let out = nrt_fuzz::neff::load_execute_unload(&poison);
        eprintln!("poisoning input: {out:?}");
        assert!(
            out.iter().all(|o| matches!(o, Outcome::Executed(Err(_)))),
            "{out:?}"
        );
        for (name, own) in [("neffs-add.trn1.neff", 0), ("neffs-lnc2_add.trn2.neff", 1)] {
            let out = nrt_fuzz::neff::load_execute_unload(&zoo[name]);
            assert_eq!(
                out[own],
                Outcome::Executed(Ok(())),
                "{name} after a poisoning input"
            );
        }
    }
}

#[test]
fn dma_seeds_move_data_and_fault() {
    let s: std::collections::BTreeMap<_, _> = seeds::seeds("sim_dma").into_iter().collect();
    let copy = nrt_fuzz::dma::run(&s["sim_dma-copy"]);
    assert!(copy.dma_bytes >= 4096, "{copy:?}");
    let multi = nrt_fuzz::dma::run(&s["sim_dma-copy_multi_pair"]);
    assert!(multi.descriptors >= 4, "{multi:?}");
    for bad in [
        "sim_dma-src_unmapped",
        "sim_dma-length_mismatch",
        "sim_dma-garbage_desc",
    ] {
        let st = nrt_fuzz::dma::run(&s[bad]);
        assert_eq!(st.dma_bytes, 0, "{bad}: {st:?}");
        assert!(
            st.notifications >= 1,
            "{bad}: no error notification: {st:?}"
        );
    }
}

/// The mutation smoke's randomness: the zoo's SplitMix64, indexing by `usize`.
struct Rng(SplitMix64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn below(&mut self, n: usize) -> usize {
        self.0.below(n as u64) as usize
    }
}

/// libFuzzer-like mutations: flips, byte sets, interesting values, inserts, erases, splices.
fn mutate(rng: &mut Rng, data: &mut Vec<u8>, other: &[u8]) {
    for _ in 0..=rng.below(4) {
        let len = data.len();
        match rng.below(7) {
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                data[i] = rng.next() as u8;
            }
            2 if len >= 4 => {
                let i = rng.below(len - 3);
                let v: u32 = [0, 1, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 64, 4096][rng.below(7)];
                data[i..i + 4].copy_from_slice(&v.to_le_bytes());
            }
            3 => {
                let i = rng.below(len + 1);
                let n = 1 + rng.below(16);
                let ins: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                data.splice(i..i, ins);
            }
            4 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below(16.min(len - i));
                data.drain(i..i + n);
            }
            5 if !other.is_empty() => {
                let i = rng.below(len + 1);
                let j = rng.below(other.len());
                let n = 1 + rng.below(64.min(other.len() - j));
                data.splice(i..i, other[j..j + n].iter().copied());
            }
            _ if len > 1 => data.truncate(rng.below(len)),
            _ => data.push(rng.next() as u8),
        }
    }
}

#[test]
fn seeded_mutation_smoke() {
    const PER_TARGET: usize = 300;
    const BUDGET: Duration = Duration::from_secs(3);
    for (ti, (name, f)) in TARGETS.iter().enumerate() {
        let s = seeds::seeds(name);
        let mut rng = Rng(SplitMix64::new(0x5EED_F022 + ti as u64));
        let start = Instant::now();
        let mut runs = 0;
        while runs < PER_TARGET && start.elapsed() < BUDGET {
            let a = rng.below(s.len());
            let b = rng.below(s.len());
            let mut input = s[a].1.clone();
            mutate(&mut rng, &mut input, &s[b].1);
            f(&input);
            runs += 1;
        }
        eprintln!("{name}: {runs} mutated inputs in {:?}", start.elapsed());
    }
}

#[test]
fn kabi_seeds_reach_the_emulation() {
    let s: std::collections::BTreeMap<_, _> = seeds::seeds("kabi").into_iter().collect();
    let mem = nrt_fuzz::kabi::run(&s["kabi-memory"]);
    assert!(mem.ioctls_ok >= 8 && mem.mmaps == 1, "{mem:?}");
    let q = nrt_fuzz::kabi::run(&s["kabi-queues"]);
    assert!(q.ioctls_ok >= 10, "{q:?}");
}
