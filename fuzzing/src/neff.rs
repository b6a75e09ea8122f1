//! Targets `neff_parse` (S0–S3 on arbitrary bytes, no device) and `neff_load` (S0–S5 on the
//! simulator, then unload).
//!
//! Both run the runtime with [`FUZZ_LIMITS`], tighter decompression limits than the runtime's
//! defaults (4 GiB / 2 GiB): a NEFF of a few hundred KiB can legitimately inflate to a GiB under
//! the defaults, which would trip libFuzzer's memory limits without being a defect. With these
//! limits, any allocation past them *is* a defect (a limit not enforced before allocating).

use std::cell::RefCell;
use std::sync::Arc;

use nrt_hal::hal::CoreMemUsage;
use nrt_hal::{Hal, NcIndex, Target};
use nrt_runtime::config::RuntimeConfig;
use nrt_runtime::kbin::build::{build_model, BuildOptions};
use nrt_runtime::manifest::{
    parse_def_json, parse_engine_json, parse_kelf_json, parse_neff_json, parse_npy,
};
use nrt_runtime::neff::{
    payload_hash, HashAlgo, Limits, Neff, NeffHeader, NeffWriter, ParseOptions, HEADER_SIZE,
};
use nrt_runtime::Runtime;
use nrt_sim::{Sim, SimConfig};

/// Decompression limits of the fuzz targets (see the module docs).
pub const FUZZ_LIMITS: Limits = Limits {
    max_uncompressed: 64 << 20,
    max_members: 4096,
    max_member_size: 32 << 20,
};

/// Prefix of a *members-mode* input: instead of a NEFF file, the input lists the archive's
/// members, and the target writes the NEFF itself with [`NeffWriter`] (tar, gzip, padding,
/// header, hash). Mutations then land in `neff.json`, `def.json`, engine JSON, `.npy` and
/// `.bin` contents directly instead of breaking the gzip CRC. Layout after the prefix: one byte
/// `lnc_size`, then members, each `MEMBER_SEP name 0x00 bytes`.
pub const MEMBERS_MAGIC: &[u8] = b"NRT-FUZZ-MEMBERS\n";
/// Separator before each member of a members-mode input.
pub const MEMBER_SEP: &[u8] = b"\0MEMBER:";

/// The NEFF a members-mode input describes (`None` for any other input, or when the writer
/// refuses the member names).
pub fn neff_from_members(data: &[u8]) -> Option<Vec<u8>> {
    let rest = data.strip_prefix(MEMBERS_MAGIC)?;
    let (&lnc, mut rest) = rest.split_first()?;
    // A UUID that depends on the content, so distinct inputs never share a TNC cache slot.
    let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for &b in data {
        h = (h ^ u128::from(b)).wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013B);
    }
    let mut w = NeffWriter::new("fuzz", h.to_le_bytes());
    w.lnc_size = u32::from(lnc);
    while let Some(at) = find(rest, MEMBER_SEP) {
        let body = &rest[at + MEMBER_SEP.len()..];
        let end = find(body, MEMBER_SEP).unwrap_or(body.len());
        let member = &body[..end];
        let nul = member.iter().position(|&b| b == 0).unwrap_or(member.len());
        let name = std::str::from_utf8(&member[..nul]).ok()?;
        w.add(name, member.get(nul + 1..).unwrap_or_default());
        rest = &body[end..];
    }
    w.write().ok()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A members-mode input for `neff` (for seeds): its lnc size and members.
pub fn members_input(neff: &Neff) -> Vec<u8> {
    let mut v = MEMBERS_MAGIC.to_vec();
    v.push(neff.header.lnc_size as u8);
    for (name, bytes) in neff.members() {
        v.extend_from_slice(MEMBER_SEP);
        v.extend_from_slice(name.as_bytes());
        v.push(0);
        v.extend_from_slice(bytes);
    }
    v
}

/// Every error must say something: an empty message is useless to a user.
fn check_error(what: &str, e: &impl std::fmt::Display) {
    assert!(
        !e.to_string().is_empty(),
        "{what}: error with an empty message"
    );
}

/// `neff_parse`: header (S0 preflight), hash, gzip + ustar (S1), every manifest member's own
/// parser and the KBIN build for both targets (S2/S3). No HAL call is involved.
pub fn neff_parse(data: &[u8]) {
    let written = neff_from_members(data);
    let data = written.as_deref().unwrap_or(data);
    let header = match NeffHeader::parse(data) {
        Ok(h) => h,
        Err(e) => return check_error("NeffHeader::parse", &e),
    };
    // The header writer and reader agree on every field. The name is documented lossy:
    // invalid UTF-8 reads as U+FFFD (3 bytes), and the writer truncates to the 256-byte field,
    // so only a name read without replacements must come back unchanged.
    let again = NeffHeader::parse(&header.to_bytes()).expect("a written header parses");
    if header.name.contains(char::REPLACEMENT_CHARACTER) {
        let unnamed = |h: &NeffHeader| NeffHeader {
            name: String::new(),
            ..h.clone()
        };
        assert_eq!(unnamed(&again), unnamed(&header), "header round trip");
    } else {
        assert_eq!(again, header, "header round trip");
    }
    if let Err(e) = header.validate() {
        return check_error("NeffHeader::validate", &e);
    }
    let payload = &data[HEADER_SIZE..];
    // Verify the hash when it matches, so both the verifying and the non-verifying paths run.
    let algo = header.hash_algo().unwrap_or(HashAlgo::Md5);
    let n = algo.stored_len();
    let verify_hash = payload_hash(algo, payload)[..n] == header.hash[..n];
    let opts = ParseOptions {
        verify_hash,
        limits: FUZZ_LIMITS,
    };
    let neff = match Neff::parse(data, &opts) {
        Ok(n) => n,
        Err(e) => return check_error("Neff::parse", &e),
    };
    assert!(
        neff.member_count() <= FUZZ_LIMITS.max_members,
        "member limit not enforced"
    );
    // S2, member by member, whatever the graph references.
    for (name, bytes) in neff.members() {
        assert!(
            bytes.len() as u64 <= FUZZ_LIMITS.max_member_size,
            "member size limit not enforced"
        );
        let base = name.rsplit('/').next().unwrap_or(name);
        let r = if base == "neff.json" {
            parse_neff_json(name, bytes).and_then(|j| j.io(name).map(drop))
        } else if base.starts_with("kelf") && base.ends_with(".json") {
            parse_kelf_json(name, bytes).map(drop)
        } else if base == "def.json" {
            parse_def_json(name, bytes).map(drop)
        } else if base.ends_with(".json") {
            parse_engine_json(name, bytes).map(drop)
        } else if base.ends_with(".npy") {
            parse_npy(name, bytes).map(drop)
        } else {
            Ok(())
        };
        if let Err(e) = r {
            check_error(name, &e);
        }
    }
    // S3 for both generations (a trn1 NEFF on trn2 also with the legacy switch).
    for (target, legacy) in [
        (Target::Trn1, false),
        (Target::Trn2, false),
        (Target::Trn2, true),
    ] {
        let opts = BuildOptions {
            target,
            available_cores: RuntimeConfig::default().vcore_size_for(target),
            allow_legacy_neff: legacy,
        };
        let version = (
            neff.header.neff_version_major,
            neff.header.neff_version_minor,
        );
        if let Err(e) = build_model(&neff, version, neff.header.lnc_size, &opts) {
            check_error("build_model", &e);
        }
    }
}

/// One runtime over one simulated device, reused across inputs, with the device's memory
/// accounting right after `Runtime::new`.
struct LoadRig {
    sim: Arc<Sim>,
    rt: Runtime,
    baseline: Vec<CoreMemUsage>,
}

impl LoadRig {
    fn new(target: Target, legacy: bool) -> LoadRig {
        let sim = Arc::new(Sim::new(SimConfig::new(target)));
        let cfg = RuntimeConfig {
            neff_limits: FUZZ_LIMITS,
            allow_legacy_neff: legacy,
            ..RuntimeConfig::default()
        };
        let rt = Runtime::new(sim.clone(), cfg).expect("a runtime opens on a fresh simulator");
        let baseline = usage(&sim);
        LoadRig { sim, rt, baseline }
    }
}

fn usage(sim: &Sim) -> Vec<CoreMemUsage> {
    let n = sim.target().spec().nc_count;
    (0..n)
        .map(|nc| {
            sim.memory_usage(NcIndex(nc))
                .expect("memory usage of a core the device has")
        })
        .collect()
}

thread_local! {
    /// Simulators and runtimes are reused: creating a runtime is cheap, but reusing also checks
    /// that nothing a load or a failed load does leaks into the next one.
    static RIGS: RefCell<Vec<LoadRig>> = RefCell::new(vec![
        LoadRig::new(Target::Trn1, false),
        LoadRig::new(Target::Trn2, true),
    ]);
}

/// `neff_load`: `Runtime::load` (S0–S5) of the bytes on a trn1 and a trn2 simulator; a model
/// that loads is unloaded. Afterwards no model is registered and every core's memory
/// accounting is back to its value before the first input.
pub fn neff_load(data: &[u8]) {
    load_and_unload(data);
}

/// [`neff_load`], returning on how many of the simulators the NEFF loaded.
pub fn load_and_unload(data: &[u8]) -> usize {
    let written = neff_from_members(data);
    let data = written.as_deref().unwrap_or(data);
    RIGS.with(|rigs| {
        let mut loaded = 0;
        for rig in rigs.borrow().iter() {
            match rig.rt.load(data, -1) {
                Ok(id) => {
                    loaded += 1;
                    let m = rig.rt.model(id).expect("a loaded model is registered");
                    assert_eq!(m.id, id);
                    drop(m);
                    rig.rt.unload(id).expect("a loaded model unloads");
                }
                Err(e) => check_error("Runtime::load", &e),
            }
            assert!(rig.rt.models().is_empty(), "a model is still registered");
            assert_eq!(
                usage(&rig.sim),
                rig.baseline,
                "{}: device memory accounting differs from before the input",
                rig.sim.target()
            );
        }
        loaded
    })
}
