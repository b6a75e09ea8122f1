//! Targets `neff_parse` (S0–S3 on arbitrary bytes, no device) and `neff_load` (S0–S5 on the
//! simulator, one synchronous execution, then unload).
//!
//! Both run the runtime with [`FUZZ_LIMITS`], tighter decompression limits than the runtime's
//! defaults (4 GiB / 2 GiB): a NEFF of a few hundred KiB can legitimately inflate to a GiB under
//! the defaults, which would trip libFuzzer's memory limits without being a defect. With these
//! limits, any allocation past them *is* a defect (a limit not enforced before allocating).

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

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
use nrt_runtime::tensor::{Placement, TensorSet, TensorUsage};
use nrt_runtime::{ModelId, NrtStatus, Runtime};
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
/// A members-mode pseudo-member that is not written to the NEFF: its bytes, repeated, fill the
/// model's input tensors when `neff_load` executes it (zeros without it).
pub const INPUTS_MEMBER: &str = "@inputs";

/// The NEFF a members-mode input describes (`None` for any other input, or when the writer
/// refuses the member names).
pub fn neff_from_members(data: &[u8]) -> Option<Vec<u8>> {
    members_mode(data).map(|(neff, _)| neff)
}

/// The NEFF a members-mode input describes and its [`INPUTS_MEMBER`] bytes, if any.
fn members_mode(data: &[u8]) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let rest = data.strip_prefix(MEMBERS_MAGIC)?;
    let (&lnc, mut rest) = rest.split_first()?;
    // A UUID that depends on the content, so distinct inputs never share a TNC cache slot.
    let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for &b in data {
        h = (h ^ u128::from(b)).wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013B);
    }
    let mut w = NeffWriter::new("fuzz", h.to_le_bytes());
    w.lnc_size = u32::from(lnc);
    let mut inputs = None;
    while let Some(at) = find(rest, MEMBER_SEP) {
        let body = &rest[at + MEMBER_SEP.len()..];
        let end = find(body, MEMBER_SEP).unwrap_or(body.len());
        let member = &body[..end];
        let nul = member.iter().position(|&b| b == 0).unwrap_or(member.len());
        let name = std::str::from_utf8(&member[..nul]).ok()?;
        let bytes = member.get(nul + 1..).unwrap_or_default();
        if name == INPUTS_MEMBER {
            inputs = Some(bytes.to_vec());
        } else {
            w.add(name, bytes);
        }
        rest = &body[end..];
    }
    Some((w.write().ok()?, inputs))
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
            any_generation: false,
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

/// Execution timeout (`NEURON_RT_EXEC_TIMEOUT`) of the `neff_load` runtimes: a fuzzed program
/// that never completes costs this much per simulator, not the runtime's 30 s default. (Zoo
/// models complete in well under a millisecond of host time, also under ASan.)
pub const FUZZ_EXEC_TIMEOUT: Duration = Duration::from_millis(50);

/// Most bytes of input and output tensors `neff_load` allocates for one execution; a model
/// whose IO needs more loads and unloads but is not executed (host memory policy, see the
/// crate docs).
pub const FUZZ_MAX_IO_BYTES: u64 = 64 << 20;

/// The statuses an execution of an arbitrary (loadable) model may end with, as the runtime
/// documents them for `nrt_execute`: bad IO binding or instruction/descriptor (`NRT_INVALID`,
/// `NRT_EXEC_BAD_INPUT`), allocation (`NRT_RESOURCE`), `NEURON_RT_EXEC_TIMEOUT` (`NRT_TIMEOUT`),
/// completion with instruction errors or NaNs, out-of-bounds indirect copies, hardware faults
/// (DMA abort, HBM and on-chip memory errors, `NRT_HW_ERROR`), notification-queue overflow, and
/// an execution unit poisoned by an earlier fault (`NRT_EXEC_UNIT_UNRECOVERABLE`).
pub const EXEC_STATUSES: &[NrtStatus] = &[
    NrtStatus::Invalid,
    NrtStatus::ExecBadInput,
    NrtStatus::Resource,
    NrtStatus::Timeout,
    NrtStatus::ExecCompletedWithErr,
    NrtStatus::ExecCompletedWithNumErr,
    NrtStatus::ExecOob,
    NrtStatus::HwError,
    NrtStatus::ExecHwErrDmaAbort,
    NrtStatus::ExecHwErrHbmUe,
    NrtStatus::ExecHwErrNcUe,
    NrtStatus::ExecHwErrRepairableHbmUe,
    NrtStatus::ExecSwNqOverflow,
    NrtStatus::ExecUnitUnrecoverable,
];

/// What `neff_load` did with an input on one simulator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `Runtime::load` refused it.
    NotLoaded,
    /// Loaded; not executed because its IO tensors exceed [`FUZZ_MAX_IO_BYTES`] or could not
    /// be allocated.
    LoadedOnly,
    /// Loaded and executed once: `Ok`, or one of [`EXEC_STATUSES`].
    Executed(Result<(), NrtStatus>),
}

/// One runtime over one simulated device, reused across inputs, with each core's device memory
/// accounting right after `Runtime::new` (*cold*) and once it has executed (*warm*: a core's
/// execution rings, request page and notification queue stay allocated until the runtime is
/// dropped or the core is reset by recovery).
struct LoadRig {
    sim: Arc<Sim>,
    rt: Runtime,
    cold: Vec<CoreMemUsage>,
    warm: Vec<CoreMemUsage>,
}

impl LoadRig {
    /// A rig, warmed up by executing the zoo model `warmup` (`fixtures/neffs/`), which must
    /// succeed.
    fn new(target: Target, legacy: bool, warmup: &str) -> LoadRig {
        let sim = Arc::new(Sim::new(SimConfig::new(target)));
        let cfg = RuntimeConfig {
            neff_limits: FUZZ_LIMITS,
            allow_legacy_neff: legacy,
            exec_timeout: FUZZ_EXEC_TIMEOUT,
            ..RuntimeConfig::default()
        };
        let rt = Runtime::new(sim.clone(), cfg).expect("a runtime opens on a fresh simulator");
        let cold = usage(&sim);
        let mut rig = LoadRig {
            sim,
            rt,
            warm: cold.clone(),
            cold,
        };
        let path = crate::fixtures_dir().join("neffs").join(warmup);
        let neff = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // The first execution of a core may take longer than the fuzz timeout under ASan on a
        // loaded machine; retry a few times (each retry is a reload, which recovers the core).
        let mut last = None;
        for _ in 0..5 {
            let out = rig.cycle(&neff, None);
            if out == Outcome::Executed(Ok(())) {
                rig.warm = usage(&rig.sim);
                return rig;
            }
            last = Some(out);
        }
        panic!("{target}: warm-up model {warmup} does not execute: {last:?}");
    }

    /// [`LoadRig::cycle`], then check that no model is registered and every core's accounting
    /// is cold or warm.
    fn run(&self, neff: &[u8], inputs: Option<&[u8]>) -> Outcome {
        let out = self.cycle(neff, inputs);
        assert!(self.rt.models().is_empty(), "a model is still registered");
        for (nc, now) in usage(&self.sim).iter().enumerate() {
            assert!(
                *now == self.cold[nc] || *now == self.warm[nc],
                "{} NC{nc}: device memory accounting {now:?} is neither its value after \
                 Runtime::new {:?} nor after executing {:?} ({out:?})",
                self.sim.target(),
                self.cold[nc],
                self.warm[nc],
            );
        }
        out
    }

    /// Load, execute once if it loaded, unload.
    fn cycle(&self, neff: &[u8], inputs: Option<&[u8]>) -> Outcome {
        match self.rt.load(neff, -1) {
            Ok(id) => {
                let m = self.rt.model(id).expect("a loaded model is registered");
                assert_eq!(m.id, id);
                let vnc = m.vnc;
                drop(m);
                let out = self.execute(id, vnc, inputs);
                self.rt.unload(id).expect("a loaded model unloads");
                out
            }
            Err(e) => {
                check_error("Runtime::load", &e);
                Outcome::NotLoaded
            }
        }
    }

    /// One synchronous execution of model `id` with device tensors per its IO info: inputs
    /// filled with `inputs` repeated (zeros without), outputs allocated (zero-filled).
    fn execute(&self, id: ModelId, vnc: u32, inputs: Option<&[u8]>) -> Outcome {
        let info = self
            .rt
            .model_tensor_info(id)
            .expect("a loaded model has tensor info");
        let total = info.iter().fold(0u64, |acc, t| acc.saturating_add(t.size));
        if total > FUZZ_MAX_IO_BYTES {
            return Outcome::LoadedOnly;
        }
        let (mut ins, mut outs) = (TensorSet::new(), TensorSet::new());
        for t in &info {
            let tensor = match self
                .rt
                .tensor_allocate(Placement::Device, vnc, t.size, &t.name)
            {
                Ok(x) => x,
                Err(e) => {
                    check_error("Runtime::tensor_allocate", &e);
                    return Outcome::LoadedOnly;
                }
            };
            match t.usage {
                TensorUsage::Input => {
                    if let Some(fill) = inputs.filter(|b| !b.is_empty()) {
                        let buf: Vec<u8> =
                            fill.iter().copied().cycle().take(t.size as usize).collect();
                        tensor.write(0, &buf).expect("writing an input tensor");
                    }
                    ins.add(&t.name, tensor);
                }
                TensorUsage::Output => outs.add(&t.name, tensor),
            }
        }
        let r = self.rt.execute(id, &ins, &outs);
        match &r {
            Ok(_) => Outcome::Executed(Ok(())),
            Err(e) => {
                check_error("Runtime::execute", e);
                assert!(
                    EXEC_STATUSES.contains(&e.status),
                    "Runtime::execute: undocumented status {} ({e})",
                    e.status
                );
                Outcome::Executed(Err(e.status))
            }
        }
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
    /// that nothing a load, an execution or a failed one does leaks into the next input, and
    /// that a core poisoned by a faulted or timed-out execution is recovered by the next load
    /// (the runtime's documented recovery: a reload resets the core).
    static RIGS: RefCell<Vec<LoadRig>> = RefCell::new(vec![
        LoadRig::new(Target::Trn1, false, "add.trn1.neff"),
        LoadRig::new(Target::Trn2, true, "lnc2_add.trn2.neff"),
    ]);
}

/// `neff_load`: `Runtime::load` (S0–S5) of the bytes on a trn1 and a trn2 simulator; a model
/// that loads is executed once (synchronously, device tensors, [`FUZZ_EXEC_TIMEOUT`]) and must
/// return `Ok` or one of [`EXEC_STATUSES`], then is unloaded. Afterwards no model is
/// registered and every core's memory accounting is back to its cold or warm baseline.
pub fn neff_load(data: &[u8]) {
    load_execute_unload(data);
}

/// [`neff_load`], returning what happened on each simulator (trn1, then trn2).
pub fn load_execute_unload(data: &[u8]) -> Vec<Outcome> {
    let written = members_mode(data);
    let (data, inputs) = match &written {
        Some((neff, inputs)) => (neff.as_slice(), inputs.as_deref()),
        None => (data, None),
    };
    RIGS.with(|rigs| {
        rigs.borrow()
            .iter()
            .map(|rig| rig.run(data, inputs))
            .collect()
    })
}
