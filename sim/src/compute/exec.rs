//! [`execute`]: one compute instruction against an [`OnChipView`] (semantics in the
//! [module docs](super)).

use nrt_hal::isa::{
    AccessPattern, ActivationFunc, AluOp, Dim, Instruction, IotaPattern, MatmulPass, MemSpace,
    ReduceCmd, ScalarOperand, ShortOperand, TensorOperand,
};
use nrt_hal::{Dtype, EngineKind};

use super::activation::activate;
use super::alu::{alu_bits, f32_to_pattern, with_alu};
use super::convert::{with_elem, Elem};
use super::gemm::OnChipF32;
use super::{
    ComputeError, ComputeOutcome, EngineState, OnChipView, Scratch, Stationary, ACT_ACCUMULATORS,
    MAX_FREE_ELEMENTS,
};

/// A value representation an engine carries between reading and writing (see the module docs
/// of [`super`]: f32, exact integers, or 32-bit patterns).
trait Lane: Copy {
    fn load<T: Elem>(b: &[u8]) -> Self;
    fn store<T: Elem>(self, b: &mut [u8]);
    /// Appends the consecutive elements of `src` (whole elements only) to `out`.
    #[inline]
    fn load_run<T: Elem>(src: &[u8], out: &mut Vec<Self>) {
        out.extend(src.chunks_exact(T::SIZE).map(Self::load::<T>));
    }
    /// Stores `vals` into the consecutive elements of `dst`.
    #[inline]
    fn store_run<T: Elem>(vals: &[Self], dst: &mut [u8]) {
        for (chunk, &v) in dst.chunks_exact_mut(T::SIZE).zip(vals) {
            v.store::<T>(chunk);
        }
    }
}

impl Lane for f32 {
    #[inline]
    fn load<T: Elem>(b: &[u8]) -> Self {
        T::load_f32(b)
    }
    #[inline]
    fn load_run<T: Elem>(src: &[u8], out: &mut Vec<Self>) {
        let at = out.len();
        out.resize(at + src.len() / T::SIZE, 0.0);
        T::load_f32_run(src, &mut out[at..]);
    }
    #[inline]
    fn store<T: Elem>(self, b: &mut [u8]) {
        T::store_f32(self, b)
    }
    #[inline]
    fn store_run<T: Elem>(vals: &[Self], dst: &mut [u8]) {
        T::store_f32_run(vals, dst)
    }
}

impl Lane for i64 {
    #[inline]
    fn load<T: Elem>(b: &[u8]) -> Self {
        T::load_int(b)
    }
    #[inline]
    fn store<T: Elem>(self, b: &mut [u8]) {
        T::store_int(self, b)
    }
}

/// The raw bits of an element (same-dtype integer copies).
impl Lane for u64 {
    #[inline]
    fn load<T: Elem>(b: &[u8]) -> Self {
        let mut a = [0u8; 8];
        a[..T::SIZE].copy_from_slice(&b[..T::SIZE]);
        u64::from_le_bytes(a)
    }
    #[inline]
    fn store<T: Elem>(self, b: &mut [u8]) {
        b[..T::SIZE].copy_from_slice(&self.to_le_bytes()[..T::SIZE]);
    }
}

impl Lane for u32 {
    #[inline]
    fn load<T: Elem>(b: &[u8]) -> Self {
        T::load_bits(b)
    }
    #[inline]
    fn store<T: Elem>(self, b: &mut [u8]) {
        T::store_bits(self, b)
    }
}

/// A validated operand: after [`tile`] succeeds every byte it touches is inside its memory.
struct Tile<'o> {
    ap: AccessPattern,
    /// Byte offsets of the elements within each partition, in element order.
    offs: &'o [usize],
    /// Elements per contiguous run: `offs` is a sequence of runs of this many consecutive
    /// elements (the whole partition when the pattern is contiguous, forwards or backwards,
    /// else the innermost dim's count when its step is 1 or −1, else 1).
    run: usize,
    /// The runs walk down (a partition read backwards, or innermost step −1): each run's
    /// elements are consecutive in memory from its last offset up to its first.
    descending: bool,
}

impl Tile<'_> {
    fn parts(&self) -> usize {
        self.ap.partitions() as usize
    }
    fn epp(&self) -> usize {
        self.offs.len()
    }
    fn len(&self) -> usize {
        self.parts() * self.epp()
    }
    fn start(&self) -> usize {
        self.ap.start_partition() as usize
    }
}

fn mem<'m>(view: &'m OnChipView<'_>, space: MemSpace) -> (&'m [u8], usize) {
    match space {
        MemSpace::Sbuf => (&*view.sbuf, view.sbuf_partition_bytes),
        MemSpace::Psum => (&*view.psum, view.psum_partition_bytes),
    }
}

fn mem_mut<'m>(view: &'m mut OnChipView<'_>, space: MemSpace) -> (&'m mut [u8], usize) {
    match space {
        MemSpace::Sbuf => (&mut *view.sbuf, view.sbuf_partition_bytes),
        MemSpace::Psum => (&mut *view.psum, view.psum_partition_bytes),
    }
}

/// Validates `ap` against the view and computes its element offsets into `offs`.
fn tile<'o>(
    view: &OnChipView<'_>,
    ap: AccessPattern,
    operand: &'static str,
    offs: &'o mut Vec<usize>,
) -> Result<Tile<'o>, ComputeError> {
    let (bytes, pb) = mem(view, ap.space());
    let pb32 = u32::try_from(pb).unwrap_or(u32::MAX);
    ap.check_bounds(pb32)
        .map_err(|e| ComputeError::OutOfBounds {
            operand,
            reason: e.to_string(),
        })?;
    let end = (u128::from(ap.start_partition()) + u128::from(ap.partitions())) * pb as u128;
    if end > bytes.len() as u128 {
        return Err(ComputeError::OutOfBounds {
            operand,
            reason: format!(
                "partitions {}..{} of {pb} bytes end at byte {end}, but {} holds {} bytes",
                ap.start_partition(),
                ap.start_partition() + ap.partitions(),
                ap.space(),
                bytes.len()
            ),
        });
    }
    let epp = ap.elements_per_partition();
    if epp > MAX_FREE_ELEMENTS {
        return Err(ComputeError::TooManyElements {
            operand,
            elements: epp,
            max: MAX_FREE_ELEMENTS,
        });
    }
    offs.clear();
    // check_bounds guarantees every offset is in 0..=pb - size.
    offs.extend(ap.element_offsets().map(|o| o as usize));
    let size = ap.dtype().size();
    let contiguous = offs.windows(2).all(|w| w[1] == w[0] + size);
    // A partition read backwards as one run, whatever its dims (the current compiler's
    // stationary loads, `[-1, 32][-32, 4]`).
    let backwards = || offs.windows(2).all(|w| w[0] == w[1] + size);
    let inner = ap.dims().last().copied().unwrap_or(Dim::UNUSED);
    let (run, descending) = if contiguous {
        (offs.len().max(1), false)
    } else if backwards() {
        (offs.len(), true)
    } else if inner.step == 1 {
        (usize::from(inner.count), false)
    } else if inner.step == -1 && inner.count > 1 {
        (usize::from(inner.count), true)
    } else {
        (1, false)
    };
    Ok(Tile {
        ap,
        offs,
        run,
        descending,
    })
}

/// The lowest byte offset of `run` (a chunk of `t.offs`): its first element's, or its last's
/// when the runs descend.
#[inline]
fn run_start(t: &Tile<'_>, run: &[usize]) -> usize {
    if t.descending {
        run[run.len() - 1]
    } else {
        run[0]
    }
}

/// Reads `t`'s elements into `out`, in element order, or — with `memory_order` — each
/// descending run in ascending memory order instead (its elements reversed).
fn gather_typed<T: Elem, L: Lane>(
    bytes: &[u8],
    pb: usize,
    t: &Tile<'_>,
    out: &mut Vec<L>,
    memory_order: bool,
) {
    for p in 0..t.parts() {
        let base = (t.start() + p) * pb;
        let part = &bytes[base..base + pb];
        if t.run == 1 {
            out.extend(t.offs.iter().map(|&o| L::load::<T>(&part[o..])));
            continue;
        }
        for run in t.offs.chunks(t.run) {
            let (lo, n) = (run_start(t, run), run.len());
            let at = out.len();
            L::load_run::<T>(&part[lo..lo + n * T::SIZE], out);
            if t.descending && !memory_order {
                // Read forwards, then reverse in place: both loops vectorise, a reversed
                // iterator over the chunks did not (8% of a full-size conv's host time).
                out[at..].reverse();
            }
        }
    }
}

/// Reads every element of `t` (partition by partition, element order) into `out`.
fn gather<L: Lane>(view: &OnChipView<'_>, t: &Tile<'_>, out: &mut Vec<L>) {
    let (bytes, pb) = mem(view, t.ap.space());
    out.clear();
    out.reserve(t.len());
    with_elem!(t.ap.dtype(), T => gather_typed::<T, L>(bytes, pb, t, out, false));
}

/// [`gather`], but each descending run in ascending memory order (its elements reversed).
fn gather_in_memory_order<L: Lane>(view: &OnChipView<'_>, t: &Tile<'_>, out: &mut Vec<L>) {
    let (bytes, pb) = mem(view, t.ap.space());
    out.clear();
    out.reserve(t.len());
    with_elem!(t.ap.dtype(), T => gather_typed::<T, L>(bytes, pb, t, out, true));
}

fn scatter_typed<T: Elem, L: Lane>(bytes: &mut [u8], pb: usize, t: &Tile<'_>, vals: &[L]) {
    let n = t.epp();
    if n == 0 {
        return;
    }
    for (p, row) in vals.chunks_exact(n).take(t.parts()).enumerate() {
        let base = (t.start() + p) * pb;
        let part = &mut bytes[base..base + pb];
        if t.run == 1 {
            for (&o, &v) in t.offs.iter().zip(row) {
                v.store::<T>(&mut part[o..]);
            }
            continue;
        }
        for (run, vs) in t.offs.chunks(t.run).zip(row.chunks(t.run)) {
            let (lo, n) = (run_start(t, run), run.len());
            let dst = &mut part[lo..lo + n * T::SIZE];
            if t.descending {
                for (chunk, &v) in dst.chunks_exact_mut(T::SIZE).rev().zip(vs) {
                    v.store::<T>(chunk);
                }
            } else {
                L::store_run::<T>(vs, dst);
            }
        }
    }
}

/// Writes `vals` (partition by partition, element order) to `t`.
fn scatter<L: Lane>(view: &mut OnChipView<'_>, t: &Tile<'_>, vals: &[L]) {
    let (bytes, pb) = mem_mut(view, t.ap.space());
    with_elem!(t.ap.dtype(), T => scatter_typed::<T, L>(bytes, pb, t, vals));
}

/// Writes f32 results and reports whether a NaN landed in a float output.
fn write_f32(view: &mut OnChipView<'_>, t: &Tile<'_>, vals: &[f32]) -> bool {
    scatter(view, t, vals);
    t.ap.dtype().is_float() && any_nan(vals)
}

/// Whether the f32 bit pattern `bits` is a NaN (exponent all ones, mantissa not zero), as
/// 0 or 1, without a branch.
#[inline]
fn nan_bit(bits: u32) -> u32 {
    u32::from((bits & 0x7FFF_FFFF) > 0x7F80_0000)
}

/// Whether any of `vals` is a NaN. An integer fold without early exit, so that it vectorises
/// (the early-exit `any` ran one element at a time: 7% of a full-size conv's host time).
fn any_nan(vals: &[f32]) -> bool {
    vals.iter().fold(0, |acc, v| acc | nan_bit(v.to_bits())) != 0
}

fn is_int(d: Dtype) -> bool {
    !d.is_float()
}

fn require_float(
    opcode: &'static str,
    operand: &'static str,
    dtype: Dtype,
) -> Result<(), ComputeError> {
    if dtype.is_float() {
        Ok(())
    } else {
        Err(ComputeError::UnsupportedDtype {
            opcode,
            operand,
            dtype,
            why: "the PE array takes float operands only (fp8, bf16, fp16, fp32)",
        })
    }
}

/// The `[P, 1]` vector a short operand names, validated.
fn vector_tile<'o>(
    view: &OnChipView<'_>,
    opcode: &'static str,
    operand: &'static str,
    s: ShortOperand,
    partitions: u32,
    offs: &'o mut Vec<usize>,
) -> Result<Tile<'o>, ComputeError> {
    let ap = s
        .as_vector(partitions)
        .map_err(|source| ComputeError::InvalidOperand {
            opcode,
            operand,
            source,
        })?;
    tile(view, ap, operand, offs)
}

/// A per-partition scalar: an immediate or one value per partition.
enum PerPartition<'v, L> {
    Imm(L),
    Vector(&'v [L]),
}

impl<L: Copy> PerPartition<'_, L> {
    #[inline]
    fn get(&self, p: usize) -> L {
        match self {
            PerPartition::Imm(v) => *v,
            PerPartition::Vector(v) => v[p],
        }
    }
}

fn outcome(out: &AccessPattern, produced_nan: bool) -> ComputeOutcome {
    ComputeOutcome {
        elements: out.total_elements(),
        produced_nan,
        pe_macs: 0,
    }
}

/// Executes one compute instruction on `engine` against `mem`, updating `state` (PE's
/// stationary operand, ACT's accumulators). See the [module docs](super) for the semantics and
/// the order of checks; on error nothing is written and `state` is unchanged.
pub fn execute(
    instr: &Instruction,
    engine: EngineKind,
    mem: &mut OnChipView<'_>,
    state: &mut EngineState,
) -> Result<ComputeOutcome, ComputeError> {
    let opcode = instr.opcode();
    if !opcode.is_compute() {
        return Err(ComputeError::NotCompute {
            opcode: opcode.mnemonic(),
        });
    }
    if !instr.allowed_on(engine) {
        return Err(ComputeError::NotAllowedOnEngine {
            engine,
            opcode: opcode.mnemonic(),
        });
    }
    if let Instruction::TensorTensor { in0, in1, .. } = instr {
        // The second input is checked in its own memory below.
        if in0.space() == MemSpace::Psum && in1.space() == MemSpace::Psum {
            return Err(ComputeError::BothInputsInPsum);
        }
    }
    instr.check_operands()?;
    let mut scratch = core::mem::take(&mut state.scratch);
    let r = run(instr, engine, mem, state, &mut scratch);
    state.scratch = scratch;
    r
}

/// Dispatches to the instruction family's function; each reads its operands into the
/// [`Scratch`] buffers it names.
fn run(
    instr: &Instruction,
    engine: EngineKind,
    view: &mut OnChipView<'_>,
    state: &mut EngineState,
    s: &mut Scratch,
) -> Result<ComputeOutcome, ComputeError> {
    match instr {
        Instruction::MatmulLoadStationary {
            stationary,
            reversed,
            pass,
        } => load_stationary(view, state, s, stationary, *reversed, *pass),
        Instruction::MatmulMoving {
            dst,
            moving,
            accumulate,
        } => matmul(view, state, s, dst, moving, *accumulate),
        Instruction::Activation {
            func,
            out,
            input,
            scale,
            bias,
            reduce,
        } => activation(
            view,
            state,
            s,
            *func,
            out,
            input,
            scale,
            bias.as_ref(),
            *reduce,
        ),
        Instruction::TensorTensor { op, out, in0, in1 } => {
            tensor_tensor(view, s, *op, out, in0, in1)
        }
        Instruction::TensorScalar { .. } => tensor_scalar(view, s, instr),
        Instruction::TensorCopy { out, input } => tensor_copy(view, s, out, input),
        Instruction::TensorReduce {
            op,
            out,
            input,
            negate,
            ..
        } => tensor_reduce(view, s, *op, out, input, *negate),
        Instruction::Memset { out, value } => {
            let ot = tile(view, *out, "out", &mut s.offs_out)?;
            s.result.clear();
            s.result.resize(ot.len(), *value);
            let nan = write_f32(view, &ot, &s.result);
            Ok(outcome(out, nan))
        }
        Instruction::Iota {
            out,
            offset,
            channel_multiplier,
            pattern,
        } => iota(view, s, out, *offset, *channel_multiplier, pattern),
        Instruction::Transpose { out, input } => transpose(view, s, engine, out, input),
        // `execute` admits compute opcodes only.
        _ => Err(ComputeError::NotCompute {
            opcode: instr.opcode().mnemonic(),
        }),
    }
}

fn load_stationary(
    view: &OnChipView<'_>,
    state: &mut EngineState,
    s: &mut Scratch,
    stationary: &AccessPattern,
    reversed: bool,
    pass: MatmulPass,
) -> Result<ComputeOutcome, ComputeError> {
    let t = tile(view, *stationary, "stationary", &mut s.offs_in)?;
    require_float("matmul.ld", "stationary", t.ap.dtype())?;
    if pass == MatmulPass::Second {
        // Pass 2 must repeat pass 1's operands; it computes nothing.
        match state.stationary.as_ref().map(|st| (st.pass, st.ap)) {
            Some((MatmulPass::First, ap)) if ap == *stationary => {}
            _ => {
                return Err(ComputeError::PassMismatch {
                    what: "a second-pass matmul.ld must follow a first pass with the same stationary operand".into(),
                })
            }
        }
    }
    let st = state.stationary.get_or_insert_with(Stationary::default);
    st.k = t.ap.partitions();
    st.m = t.epp() as u32;
    st.pass = pass;
    st.ap = *stationary;
    if pass != MatmulPass::Second {
        if reversed && t.descending && t.run == t.epp() {
            // Each partition is one descending run, so its reversed element order is its memory
            // order: read it forwards (the stationary loads of real NEFFs, `[-1, 128]`).
            gather_in_memory_order(view, &t, &mut st.data);
        } else {
            gather(view, &t, &mut st.data);
            if reversed {
                let m = st.m as usize;
                for row in st.data.chunks_exact_mut(m.max(1)) {
                    row.reverse();
                }
            }
        }
    }
    Ok(ComputeOutcome::default())
}

fn matmul(
    view: &mut OnChipView<'_>,
    state: &mut EngineState,
    s: &mut Scratch,
    dst: &AccessPattern,
    moving: &AccessPattern,
    accumulate: bool,
) -> Result<ComputeOutcome, ComputeError> {
    let st = state
        .stationary
        .as_mut()
        .ok_or(ComputeError::NoStationary)?;
    let mv = tile(view, *moving, "moving", &mut s.offs_in)?;
    require_float("matmul.mm", "moving", mv.ap.dtype())?;
    if mv.ap.partitions() != st.k {
        return Err(ComputeError::KMismatch {
            stationary: st.k,
            moving: mv.ap.partitions(),
        });
    }
    let d = tile(view, *dst, "dst", &mut s.offs_out)?;
    require_float("matmul.mm", "dst", d.ap.dtype())?;
    if d.ap.partitions() != st.m {
        return Err(ComputeError::ShapeMismatch {
            opcode: "matmul.mm",
            what: format!(
                "dst has {} partitions but the stationary operand has M = {}",
                d.ap.partitions(),
                st.m
            ),
        });
    }
    match st.pass {
        MatmulPass::Single => {}
        MatmulPass::First => st.first_pass = Some((*moving, *dst)),
        MatmulPass::Second => {
            if st.first_pass.take() != Some((*moving, *dst)) {
                return Err(ComputeError::PassMismatch {
                    what: "a second-pass matmul.mm must repeat the first pass's moving and dst operands".into(),
                });
            }
            // The first pass wrote the whole product.
            return Ok(outcome(dst, false));
        }
    }
    let (k, m, n) = (st.k as usize, st.m as usize, mv.epp());
    let product = |nan| ComputeOutcome {
        pe_macs: (k * m * n) as u64,
        ..outcome(dst, nan)
    };
    if let Some(nan) = matmul_in_place(view, &st.data, &mv, &d, k, m, accumulate, &mut s.result) {
        return Ok(product(nan));
    }
    gather(view, &mv, &mut s.input);
    if accumulate {
        // The product is summed first, then added to the old PSUM value (one rounding).
        gather(view, &d, &mut s.result);
    } else {
        s.result.clear();
        s.result.resize(m * n, 0.0);
    }
    super::gemm::stationary_t_times_moving(&st.data, &s.input, &mut s.result, k, m, n, accumulate);
    let nan = write_f32(view, &d, &s.result);
    Ok(product(nan))
}

/// The fp32 fast path of `matmul.mm`: when the moving operand is rows of contiguous fp32 runs
/// and dst is one contiguous fp32 row per partition, the product is computed run by run
/// straight from SBUF into the host buffer `out` (`m × n`), then written to PSUM (added to the
/// old value with `accumulate`, one rounding of the full sum plus the old value, exactly as
/// the gathering path's kernel does), checking for NaN on the way. Same kernel, same
/// arithmetic as the gathering path. Returns whether a NaN was written, or `None` when the
/// operands do not qualify (nothing touched).
#[allow(clippy::too_many_arguments)]
fn matmul_in_place(
    view: &mut OnChipView<'_>,
    stationary: &[f32],
    mv: &Tile<'_>,
    d: &Tile<'_>,
    k: usize,
    m: usize,
    accumulate: bool,
    out: &mut Vec<f32>,
) -> Option<bool> {
    let f32s = mv.ap.dtype() == Dtype::F32 && d.ap.dtype() == Dtype::F32;
    let (sp, pp) = (view.sbuf_partition_bytes, view.psum_partition_bytes);
    let runs_aligned = mv.offs.iter().step_by(mv.run).all(|o| o % 4 == 0);
    let ascending = !mv.descending && !d.descending;
    if cfg!(target_endian = "big")
        || !f32s
        || !ascending
        || k == 0
        || m == 0
        || mv.run < 2
        || d.run != d.epp()
        || sp % 4 != 0
        || pp % 4 != 0
        || !runs_aligned
    {
        return None;
    }
    let d0 = *d.offs.first()?;
    let n = mv.epp();
    let (sbuf, psum) = (&*view.sbuf, &mut *view.psum);
    // Check every run and the dst rows before writing any, so a refusal leaves PSUM untouched.
    let plan: Vec<(OnChipF32, usize, usize)> = mv
        .offs
        .chunks(mv.run)
        .enumerate()
        .map(|(j, run)| {
            let b = OnChipF32 {
                first: mv.start() * sp + run[0],
                row_stride: sp / 4,
            };
            (b, j * mv.run, run.len())
        })
        .collect();
    let dst = OnChipF32 {
        first: d.start() * pp + d0,
        row_stride: pp / 4,
    };
    let fits = dst.fits(psum, m, n) && plan.iter().all(|(b, _, len)| b.fits(sbuf, k, *len));
    if !fits {
        return None;
    }
    // Every element is written below (the runs cover the n columns; the kernel overwrites with
    // β = 0), so stale values need no clearing.
    out.resize(m * n, 0.0);
    for (b, col, len) in &plan {
        let done = super::gemm::stationary_t_times_onchip_into(
            stationary,
            k,
            m,
            *len,
            sbuf,
            b,
            &mut out[*col..],
            n,
        );
        debug_assert!(done, "checked by `fits` above");
    }
    let mut nan = 0;
    for (p, sums) in out.chunks_exact(n).enumerate() {
        let at = dst.first + p * pp;
        nan |= store_sums(&mut psum[at..at + 4 * n], sums, accumulate);
    }
    Some(nan != 0)
}

/// Writes the f32 `sums` to the little-endian f32 row `row` (adding them to its old values
/// with `accumulate`); returns 1 if a NaN was written, else 0.
fn store_sums(row: &mut [u8], sums: &[f32], accumulate: bool) -> u32 {
    // SAFETY: every bit pattern is a valid f32, so viewing bytes as f32s is sound;
    // `align_to_mut` leaves any unaligned head or tail as bytes. Only the case where the row is
    // exactly `sums.len()` aligned f32s uses the view (the host is little-endian, as
    // `stationary_t_times_onchip_into` requires, like the stored data).
    let (head, mid, tail) = unsafe { row.align_to_mut::<f32>() };
    let mut nan = 0;
    if head.is_empty() && tail.is_empty() && mid.len() == sums.len() {
        // Plain f32 loops, which vectorise.
        if accumulate {
            for (d, &x) in mid.iter_mut().zip(sums) {
                let v = *d + x;
                nan |= nan_bit(v.to_bits());
                *d = v;
            }
        } else {
            for (d, &x) in mid.iter_mut().zip(sums) {
                nan |= nan_bit(x.to_bits());
                *d = x;
            }
        }
        return nan;
    }
    for (w, &x) in row.chunks_exact_mut(4).zip(sums) {
        let v = if accumulate {
            f32::from_le_bytes([w[0], w[1], w[2], w[3]]) + x
        } else {
            x
        };
        nan |= nan_bit(v.to_bits());
        w.copy_from_slice(&v.to_le_bytes());
    }
    nan
}

#[allow(clippy::too_many_arguments)]
fn activation(
    view: &mut OnChipView<'_>,
    state: &mut EngineState,
    s: &mut Scratch,
    func: ActivationFunc,
    out: &AccessPattern,
    input: &AccessPattern,
    scale: &ScalarOperand,
    bias: Option<&ScalarOperand>,
    reduce: ReduceCmd,
) -> Result<ComputeOutcome, ComputeError> {
    let inp = tile(view, *input, "input", &mut s.offs_in)?;
    let ot = tile(view, *out, "out", &mut s.offs_out)?;
    let parts = inp.ap.partitions();
    let scale_v = match scale {
        ScalarOperand::Imm(v) => PerPartition::Imm(*v),
        ScalarOperand::Vector(sv) => {
            let t = vector_tile(view, "act", "scale", *sv, parts, &mut s.offs_vec0)?;
            gather(view, &t, &mut s.input1);
            PerPartition::Vector(&s.input1[..])
        }
    };
    let bias_v = match bias {
        None => None,
        Some(ScalarOperand::Imm(v)) => Some(PerPartition::Imm(*v)),
        Some(ScalarOperand::Vector(bv)) => {
            let t = vector_tile(view, "act", "bias", *bv, parts, &mut s.offs_vec1)?;
            gather(view, &t, &mut s.aux);
            Some(PerPartition::Vector(&s.aux[..]))
        }
    };
    if matches!(reduce, ReduceCmd::Idle | ReduceCmd::Reset) {
        let streamed = stream_rows(view, [&inp], &ot, |p, [x], len| {
            let (sc, row) = (scale_v.get(p), &mut x[..len]);
            match &bias_v {
                Some(bv) => {
                    let bi = bv.get(p);
                    row.iter_mut().for_each(|x| *x = *x * sc + bi)
                }
                None => row.iter_mut().for_each(|x| *x *= sc),
            }
            activate_slice(func, row);
        });
        if let Some(nan) = streamed {
            // Nothing to accumulate: a reset only clears.
            apply_reduce(&mut state.accumulators, reduce, ot.start(), &[], ot.epp());
            return Ok(outcome(out, nan));
        }
    }
    gather(view, &inp, &mut s.input);
    let n = inp.epp();
    let res = &mut s.result;
    res.clear();
    res.reserve(s.input.len());
    for (p, row) in s.input.chunks_exact(n.max(1)).enumerate() {
        let sc = scale_v.get(p);
        match &bias_v {
            Some(bv) => {
                let bi = bv.get(p);
                res.extend(row.iter().map(|&x| x * sc + bi));
            }
            None => res.extend(row.iter().map(|&x| x * sc)),
        }
    }
    activate_slice(func, res);
    let nan = write_f32(view, &ot, res);
    apply_reduce(&mut state.accumulators, reduce, ot.start(), res, ot.epp());
    Ok(outcome(out, nan))
}

fn tensor_tensor(
    view: &mut OnChipView<'_>,
    s: &mut Scratch,
    op: AluOp,
    out: &AccessPattern,
    in0: &AccessPattern,
    in1: &TensorOperand,
) -> Result<ComputeOutcome, ComputeError> {
    let a = tile(view, *in0, "in0", &mut s.offs_in)?;
    let in1_ap = in1
        .resolve(in0)
        .map_err(|source| ComputeError::InvalidOperand {
            opcode: "tensor_tensor",
            operand: "in1",
            source,
        })?;
    let bt = tile(view, in1_ap, "in1", &mut s.offs_in1)?;
    let ot = tile(view, *out, "out", &mut s.offs_out)?;
    if op.is_bitvec() {
        gather(view, &a, &mut s.bits_in);
        gather(view, &bt, &mut s.bits_in1);
        s.bits_out.clear();
        s.bits_out.extend(
            s.bits_in
                .iter()
                .zip(s.bits_in1.iter())
                .map(|(&x, &y)| alu_bits(op, x, y)),
        );
        scatter(view, &ot, &s.bits_out);
        Ok(outcome(out, false))
    } else if let Some(nan) = with_alu!(op, f => stream_rows(view, [&a, &bt], &ot, |_, [x, y], len| {
        for (x, &y) in x[..len].iter_mut().zip(&y[..len]) {
            *x = f(*x, y);
        }
    })) {
        Ok(outcome(out, nan))
    } else {
        gather(view, &a, &mut s.input);
        gather(view, &bt, &mut s.input1);
        binary_map(op, &s.input, &s.input1, &mut s.result);
        let nan = write_f32(view, &ot, &s.result);
        Ok(outcome(out, nan))
    }
}

/// Elements per chunk of [`stream_rows`].
const ROW_CHUNK: usize = 256;

/// Computes an element-wise instruction a chunk of a partition at a time, through stack
/// buffers, instead of gathering whole tiles into vectors, computing and scattering (that
/// traffic was a third of the host time of the `add` models). `inputs` and `ot` must have one
/// shape and each be contiguous and ascending in every partition; each chunk of the inputs is
/// read into f32 (`bufs[i]` for `inputs[i]`), `f(partition, bufs, len)` leaves the results in
/// `bufs[0][..len]`, and they are written to `ot` in its dtype — the conversions of
/// [`gather`] and [`scatter`]. Returns whether a NaN landed in a float output, or `None`
/// (nothing done) when the operands do not qualify — including an input that overlaps the
/// output other than element for element, where the whole-tile path's all-reads-before-any-
/// write order (docs/simulator.md §6.1) could be told apart.
fn stream_rows<const N: usize>(
    view: &mut OnChipView<'_>,
    inputs: [&Tile<'_>; N],
    ot: &Tile<'_>,
    mut f: impl FnMut(usize, &mut [[f32; ROW_CHUNK]; N], usize),
) -> Option<bool> {
    let n = ot.epp();
    let rows =
        |t: &Tile<'_>| t.epp() == n && t.parts() == ot.parts() && t.run == n && !t.descending;
    if n == 0 || !rows(ot) || !inputs.iter().all(|t| rows(t)) {
        return None;
    }
    let bytes = |t: &Tile<'_>| t.ap.dtype().size() * n;
    let same = |t: &Tile<'_>| {
        (t.ap.space(), t.start(), t.offs[0], t.ap.dtype().size())
            == (ot.ap.space(), ot.start(), ot.offs[0], ot.ap.dtype().size())
    };
    let disjoint = |t: &Tile<'_>| {
        t.ap.space() != ot.ap.space()
            || t.start() >= ot.start() + ot.parts()
            || ot.start() >= t.start() + t.parts()
            || t.offs[0] >= ot.offs[0] + bytes(ot)
            || ot.offs[0] >= t.offs[0] + bytes(t)
    };
    if !inputs.iter().all(|t| same(t) || disjoint(t)) {
        return None;
    }
    let mut bufs = [[0f32; ROW_CHUNK]; N];
    let mut nan = 0u32;
    for p in 0..ot.parts() {
        for c0 in (0..n).step_by(ROW_CHUNK) {
            let len = ROW_CHUNK.min(n - c0);
            for (t, buf) in inputs.iter().zip(bufs.iter_mut()) {
                let (mem, pb) = mem(view, t.ap.space());
                let size = t.ap.dtype().size();
                let lo = (t.start() + p) * pb + t.offs[0] + size * c0;
                let src = &mem[lo..lo + size * len];
                with_elem!(t.ap.dtype(), T => T::load_f32_run(src, &mut buf[..len]));
            }
            f(p, &mut bufs, len);
            let out = &bufs[0][..len];
            nan |= out.iter().fold(0, |acc, v| acc | nan_bit(v.to_bits()));
            let (mem, pb) = mem_mut(view, ot.ap.space());
            let size = ot.ap.dtype().size();
            let lo = (ot.start() + p) * pb + ot.offs[0] + size * c0;
            let dst = &mut mem[lo..lo + size * len];
            with_elem!(ot.ap.dtype(), T => T::store_f32_run(out, dst));
        }
    }
    Some(ot.ap.dtype().is_float() && nan != 0)
}

fn tensor_scalar(
    view: &mut OnChipView<'_>,
    s: &mut Scratch,
    instr: &Instruction,
) -> Result<ComputeOutcome, ComputeError> {
    let Instruction::TensorScalar {
        out,
        input,
        op0,
        operand0,
        reverse0,
        op1,
        operand1,
        reverse1,
    } = instr
    else {
        return Err(ComputeError::NotCompute {
            opcode: instr.opcode().mnemonic(),
        });
    };
    let inp = tile(view, *input, "input", &mut s.offs_in)?;
    let ot = tile(view, *out, "out", &mut s.offs_out)?;
    let parts = inp.ap.partitions();
    let vec_tile = |view: &OnChipView<'_>, operand, sc: &ScalarOperand, offs| match sc {
        ScalarOperand::Vector(v) => {
            vector_tile(view, "tensor_scalar", operand, *v, parts, offs).map(Some)
        }
        ScalarOperand::Imm(_) => Ok(None),
    };
    let t0 = vec_tile(view, "operand0", operand0, &mut s.offs_vec0)?;
    let t1 = vec_tile(view, "operand1", operand1, &mut s.offs_vec1)?;
    let n = inp.epp().max(1);
    if op0.is_bitvec() || op1.is_bitvec() {
        let s0 = bits_operand(view, operand0, t0.as_ref(), &mut s.bits_in1);
        let s1 = bits_operand(view, operand1, t1.as_ref(), &mut s.bits_out);
        gather(view, &inp, &mut s.bits_in);
        for (p, row) in s.bits_in.chunks_exact_mut(n).enumerate() {
            let (c0, c1) = (s0.get(p), s1.get(p));
            for x in row {
                let y = stage_bits(*op0, *reverse0, *x, c0);
                *x = stage_bits(*op1, *reverse1, y, c1);
            }
        }
        scatter(view, &ot, &s.bits_in);
        Ok(outcome(out, false))
    } else {
        let s0 = f32_operand(view, operand0, t0.as_ref(), &mut s.input1);
        let s1 = f32_operand(view, operand1, t1.as_ref(), &mut s.aux);
        let streamed = stream_rows(view, [&inp], &ot, |p, [x], len| {
            scalar_row(*op0, *reverse0, s0.get(p), &mut x[..len]);
            scalar_row(*op1, *reverse1, s1.get(p), &mut x[..len]);
        });
        if let Some(nan) = streamed {
            return Ok(outcome(out, nan));
        }
        gather(view, &inp, &mut s.input);
        // Stage by stage over the whole tile: each element still sees op0, then op1.
        scalar_stage(*op0, *reverse0, &s0, n, &mut s.input);
        scalar_stage(*op1, *reverse1, &s1, n, &mut s.input);
        let nan = write_f32(view, &ot, &s.input);
        Ok(outcome(out, nan))
    }
}

fn tensor_copy(
    view: &mut OnChipView<'_>,
    s: &mut Scratch,
    out: &AccessPattern,
    input: &AccessPattern,
) -> Result<ComputeOutcome, ComputeError> {
    let inp = tile(view, *input, "input", &mut s.offs_in)?;
    let ot = tile(view, *out, "out", &mut s.offs_out)?;
    if is_int(inp.ap.dtype()) && inp.ap.dtype() == ot.ap.dtype() {
        gather(view, &inp, &mut s.raw_in);
        scatter(view, &ot, &s.raw_in);
        Ok(outcome(out, false))
    } else if is_int(inp.ap.dtype()) && is_int(ot.ap.dtype()) {
        gather(view, &inp, &mut s.ints_in);
        scatter(view, &ot, &s.ints_in);
        Ok(outcome(out, false))
    } else if let Some(nan) = stream_rows(view, [&inp], &ot, |_, _, _| {}) {
        Ok(outcome(out, nan))
    } else {
        gather(view, &inp, &mut s.input);
        let nan = write_f32(view, &ot, &s.input);
        Ok(outcome(out, nan))
    }
}

fn tensor_reduce(
    view: &mut OnChipView<'_>,
    s: &mut Scratch,
    op: AluOp,
    out: &AccessPattern,
    input: &AccessPattern,
    negate: bool,
) -> Result<ComputeOutcome, ComputeError> {
    let inp = tile(view, *input, "input", &mut s.offs_in)?;
    let ot = tile(view, *out, "out", &mut s.offs_out)?;
    let kept = ot.epp();
    // check_operands: out has the input's partitions and the kept dims' product.
    let r = (inp.epp() / kept.max(1)).max(1);
    if op.is_bitvec() {
        gather(view, &inp, &mut s.bits_in);
        s.bits_out.clear();
        s.bits_out.extend(s.bits_in.chunks_exact(r).map(|g| {
            let v = g[1..].iter().fold(g[0], |acc, &x| alu_bits(op, acc, x));
            if negate {
                v.wrapping_neg()
            } else {
                v
            }
        }));
        scatter(view, &ot, &s.bits_out);
        Ok(outcome(out, false))
    } else {
        gather(view, &inp, &mut s.input);
        s.result.clear();
        reduce_rows(op, &s.input, r, negate, &mut s.result);
        let nan = write_f32(view, &ot, &s.result);
        Ok(outcome(out, nan))
    }
}

fn iota(
    view: &mut OnChipView<'_>,
    s: &mut Scratch,
    out: &AccessPattern,
    offset: i32,
    channel_multiplier: i32,
    pattern: &IotaPattern,
) -> Result<ComputeOutcome, ComputeError> {
    let ot = tile(view, *out, "out", &mut s.offs_out)?;
    iota_values(
        pattern,
        offset,
        channel_multiplier,
        ot.parts(),
        &mut s.ints_in,
    );
    if is_int(ot.ap.dtype()) {
        scatter(view, &ot, &s.ints_in);
        Ok(outcome(out, false))
    } else {
        s.result.clear();
        s.result.extend(s.ints_in.iter().map(|&v| v as f32));
        let nan = write_f32(view, &ot, &s.result);
        Ok(outcome(out, nan))
    }
}

/// `out[p, i] = (offset + mult·p + value(i) ≠ 0) ? in[p, i] : fill`, with `value` the
/// pattern's affine value of element `i` (the Neuron encoding's affine select, docs/isa.md
/// §3); elements correspond in element order. On error nothing is written.
#[allow(clippy::too_many_arguments)]
pub fn affine_select(
    view: &mut OnChipView<'_>,
    state: &mut EngineState,
    out: &AccessPattern,
    input: &AccessPattern,
    pattern: &IotaPattern,
    offset: i32,
    partition_multiplier: i32,
    fill: f32,
) -> Result<ComputeOutcome, ComputeError> {
    let mut s = core::mem::take(&mut state.scratch);
    let r = affine_select_in(
        view,
        &mut s,
        out,
        input,
        pattern,
        offset,
        partition_multiplier,
        fill,
    );
    state.scratch = s;
    r
}

#[allow(clippy::too_many_arguments)]
fn affine_select_in(
    view: &mut OnChipView<'_>,
    s: &mut Scratch,
    out: &AccessPattern,
    input: &AccessPattern,
    pattern: &IotaPattern,
    offset: i32,
    partition_multiplier: i32,
    fill: f32,
) -> Result<ComputeOutcome, ComputeError> {
    let inp = tile(view, *input, "input", &mut s.offs_in)?;
    let ot = tile(view, *out, "out", &mut s.offs_out)?;
    let n = ot.epp();
    if inp.len() != ot.len() || pattern.elements() != n as u64 {
        return Err(ComputeError::ShapeMismatch {
            opcode: "AFFINE_SELECT",
            what: format!(
                "in has {} elements, out {}, the value pattern {} per partition",
                inp.len(),
                ot.len(),
                pattern.elements()
            ),
        });
    }
    gather(view, &inp, &mut s.input);
    iota_values(
        pattern,
        offset,
        partition_multiplier,
        ot.parts(),
        &mut s.ints_in,
    );
    s.result.clear();
    s.result.extend(
        s.input
            .iter()
            .zip(&s.ints_in)
            .map(|(&x, &v)| if v != 0 { x } else { fill }),
    );
    let nan = write_f32(view, &ot, &s.result);
    Ok(outcome(out, nan))
}

fn transpose(
    view: &mut OnChipView<'_>,
    s: &mut Scratch,
    engine: EngineKind,
    out: &AccessPattern,
    input: &AccessPattern,
) -> Result<ComputeOutcome, ComputeError> {
    if engine == EngineKind::Pe {
        for (operand, ap, expected) in [
            ("input", input, MemSpace::Sbuf),
            ("out", out, MemSpace::Psum),
        ] {
            if ap.space() != expected {
                return Err(ComputeError::WrongSpace {
                    opcode: "transpose",
                    operand,
                    expected,
                });
            }
        }
    }
    let inp = tile(view, *input, "input", &mut s.offs_in)?;
    let ot = tile(view, *out, "out", &mut s.offs_out)?;
    let (p, fdim) = (inp.parts(), inp.epp());
    if is_int(inp.ap.dtype()) && inp.ap.dtype() == ot.ap.dtype() {
        gather(view, &inp, &mut s.raw_in);
        transpose_into(&s.raw_in, p, fdim, &mut s.raw_out);
        scatter(view, &ot, &s.raw_out);
        Ok(outcome(out, false))
    } else if is_int(inp.ap.dtype()) && is_int(ot.ap.dtype()) {
        gather(view, &inp, &mut s.ints_in);
        transpose_into(&s.ints_in, p, fdim, &mut s.ints_out);
        scatter(view, &ot, &s.ints_out);
        Ok(outcome(out, false))
    } else {
        gather(view, &inp, &mut s.input);
        transpose_into(&s.input, p, fdim, &mut s.result);
        let nan = write_f32(view, &ot, &s.result);
        Ok(outcome(out, nan))
    }
}

/// `out = op(a, b)` element-wise, the loop compiled per op ([`with_alu!`]).
fn binary_map(op: AluOp, a: &[f32], b: &[f32], out: &mut Vec<f32>) {
    out.clear();
    with_alu!(op, f => out.extend(a.iter().zip(b).map(|(&x, &y)| f(x, y))));
}

/// One `tensor_scalar` stage over the `n`-element rows of `xs`, in place ([`scalar_row`] with
/// each row's partition's scalar).
fn scalar_stage(op: AluOp, reverse: bool, c: &PerPartition<'_, f32>, n: usize, xs: &mut [f32]) {
    for (p, row) in xs.chunks_exact_mut(n).enumerate() {
        scalar_row(op, reverse, c.get(p), row);
    }
}

/// One `tensor_scalar` stage over `row`, in place: `x = op(x, c)`, or `op(c, x)` if `reverse`;
/// the loop compiled per op.
fn scalar_row(op: AluOp, reverse: bool, c: f32, row: &mut [f32]) {
    with_alu!(op, f => {
        if reverse {
            row.iter_mut().for_each(|x| *x = f(c, *x));
        } else {
            row.iter_mut().for_each(|x| *x = f(*x, c));
        }
    })
}

/// Appends the left fold of each `r`-element group of `xs` under `op` (then negated if
/// asked) to `out` ([`fold_rows`], compiled per op).
fn reduce_rows(op: AluOp, xs: &[f32], r: usize, negate: bool, out: &mut Vec<f32>) {
    with_alu!(op, f => fold_rows(xs, r, negate, out, f))
}

/// Groups folded side by side in [`fold_rows`].
const FOLD_LANES: usize = 8;

/// The left fold of each `r`-element group (`r` ≥ 1) of `xs` under `f`, negated if asked,
/// appended to `out`. [`FOLD_LANES`] groups are folded together, each with its own
/// accumulator: every group sees the same operations in the same order as a fold of its own,
/// but the groups' dependency chains overlap instead of each waiting on its own latency.
#[inline(always)]
fn fold_rows(xs: &[f32], r: usize, negate: bool, out: &mut Vec<f32>, f: impl Fn(f32, f32) -> f32) {
    let sign = |v: f32| if negate { -v } else { v };
    let mut blocks = xs.chunks_exact(r * FOLD_LANES);
    for block in &mut blocks {
        let rows: [&[f32]; FOLD_LANES] = std::array::from_fn(|k| &block[k * r..(k + 1) * r]);
        let mut acc: [f32; FOLD_LANES] = std::array::from_fn(|k| rows[k][0]);
        for j in 1..r {
            for (a, row) in acc.iter_mut().zip(&rows) {
                *a = f(*a, row[j]);
            }
        }
        out.extend(acc.map(sign));
    }
    out.extend(
        blocks
            .remainder()
            .chunks_exact(r)
            .map(|g| sign(g[1..].iter().fold(g[0], |acc, &x| f(acc, x)))),
    );
}

/// Applies an activation function in place, with the cheap functions' loops specialised.
fn activate_slice(func: ActivationFunc, xs: &mut [f32]) {
    match func {
        ActivationFunc::Identity => {}
        // `activate`'s relu, written out (the call per element was 8–11% of the host time of
        // the models ending in a relu), with `|`, not `||`: a select rather than a branch the
        // data decides (mispredicted on half of a random tile), so the loop vectorises.
        ActivationFunc::Relu => {
            for x in xs {
                *x = if (*x > 0.0) | x.is_nan() { *x } else { 0.0 };
            }
        }
        _ => {
            for x in xs {
                *x = activate(func, *x);
            }
        }
    }
}

/// One `tensor_scalar` stage on 32-bit patterns.
#[inline]
fn stage_bits(op: AluOp, reverse: bool, x: u32, s: u32) -> u32 {
    if reverse {
        alu_bits(op, s, x)
    } else {
        alu_bits(op, x, s)
    }
}

fn f32_operand<'v>(
    view: &OnChipView<'_>,
    s: &ScalarOperand,
    t: Option<&Tile<'_>>,
    buf: &'v mut Vec<f32>,
) -> PerPartition<'v, f32> {
    match (s, t) {
        (ScalarOperand::Vector(_), Some(t)) => {
            gather(view, t, buf);
            PerPartition::Vector(&buf[..])
        }
        (ScalarOperand::Imm(v), _) => PerPartition::Imm(*v),
        // A vector operand always comes with its tile.
        (ScalarOperand::Vector(_), None) => PerPartition::Imm(0.0),
    }
}

fn bits_operand<'v>(
    view: &OnChipView<'_>,
    s: &ScalarOperand,
    t: Option<&Tile<'_>>,
    buf: &'v mut Vec<u32>,
) -> PerPartition<'v, u32> {
    match (s, t) {
        (ScalarOperand::Vector(_), Some(t)) => {
            gather(view, t, buf);
            PerPartition::Vector(&buf[..])
        }
        (ScalarOperand::Imm(v), _) => PerPartition::Imm(f32_to_pattern(*v)),
        (ScalarOperand::Vector(_), None) => PerPartition::Imm(0),
    }
}

/// The iota int32 values of `parts` partitions, partition by partition.
fn iota_values(
    pattern: &IotaPattern,
    offset: i32,
    channel_multiplier: i32,
    parts: usize,
    out: &mut Vec<i64>,
) {
    out.clear();
    for p in 0..parts {
        let base = offset.wrapping_add(channel_multiplier.wrapping_mul(p as i32));
        out.extend(pattern.values(base).map(i64::from));
    }
}

/// `dst[f·p_count + p] = src[p·f_count + f]`.
fn transpose_into<L: Copy>(src: &[L], p_count: usize, f_count: usize, dst: &mut Vec<L>) {
    dst.clear();
    dst.reserve(src.len());
    for f in 0..f_count {
        dst.extend((0..p_count).map(|p| src[p * f_count + f]));
    }
}

/// ACT's accumulate-reduce on the rows of `res` (partitions `start..` of the output).
fn apply_reduce(
    acc: &mut [f32; ACT_ACCUMULATORS],
    cmd: ReduceCmd,
    start: usize,
    res: &[f32],
    n: usize,
) {
    if matches!(cmd, ReduceCmd::Reset | ReduceCmd::ResetReduce) {
        acc.fill(0.0);
    }
    if matches!(cmd, ReduceCmd::Idle | ReduceCmd::Reset) || n == 0 {
        return;
    }
    for (p, row) in res.chunks_exact(n).enumerate() {
        let sum = row.iter().fold(0.0f32, |s, &x| s + x);
        if let Some(slot) = acc.get_mut(start + p) {
            *slot = match cmd {
                ReduceCmd::LoadReduce => sum,
                _ => *slot + sum,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    //! The per-op loops against [`alu`] element by element.

    use super::*;
    use crate::compute::alu::alu;

    /// Specials (signed zeros, NaN, infinities, a subnormal, large, integral and shift-sized
    /// values) then a deterministic spread.
    fn values(n: usize, salt: u32) -> Vec<f32> {
        let specials = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            3.7,
            -2.25,
            1e-40,
            1e30,
            7.0,
            -8.0,
            31.0,
            40.0,
        ];
        let mut x = 0x9e37_79b9u32 ^ salt;
        (0..n)
            .map(|i| {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                if i % 3 == 0 {
                    specials[(x >> 8) as usize % specials.len()]
                } else {
                    ((x >> 8) as f32 / (1 << 24) as f32 - 0.5) * 64.0
                }
            })
            .collect()
    }

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    #[test]
    fn binary_map_is_alu_per_element() {
        let (a, b) = (values(300, 1), values(300, 2));
        let mut out = Vec::new();
        for &op in AluOp::ALL {
            binary_map(op, &a, &b, &mut out);
            assert_eq!(out.len(), a.len());
            for i in 0..a.len() {
                let want = alu(op, a[i], b[i]);
                assert!(
                    same(out[i], want),
                    "{op:?}({}, {}) = {} not {want}",
                    a[i],
                    b[i],
                    out[i]
                );
            }
        }
    }

    #[test]
    fn scalar_stage_is_alu_per_element() {
        let (n, parts) = (13, 7);
        let xs = values(n * parts, 3);
        let vector = values(parts, 4);
        for &op in AluOp::ALL {
            for reverse in [false, true] {
                for c in [
                    PerPartition::Imm(-0.0),
                    PerPartition::Imm(2.5),
                    PerPartition::Vector(&vector),
                ] {
                    let mut got = xs.clone();
                    scalar_stage(op, reverse, &c, n, &mut got);
                    for (i, (&x, &g)) in xs.iter().zip(&got).enumerate() {
                        let s = c.get(i / n);
                        let want = if reverse {
                            alu(op, s, x)
                        } else {
                            alu(op, x, s)
                        };
                        assert!(
                            same(g, want),
                            "{op:?} reverse {reverse} on {x}, {s}: {g} not {want}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn reduce_rows_is_a_left_fold_per_group() {
        // Group counts below, at and past a multiple of FOLD_LANES; a trailing partial group
        // is ignored, as `chunks_exact` does.
        for (groups, r) in [(1, 1), (3, 5), (8, 4), (19, 33), (16, 256), (9, 2)] {
            let mut xs = values(groups * r + r / 2, (groups * r) as u32);
            if groups > 2 {
                xs[r + 1.min(r - 1)] = f32::NAN;
            }
            for &op in AluOp::ALL {
                for negate in [false, true] {
                    let mut got = Vec::new();
                    reduce_rows(op, &xs, r, negate, &mut got);
                    assert_eq!(got.len(), groups);
                    for (g, row) in xs.chunks_exact(r).enumerate() {
                        let v = row[1..].iter().fold(row[0], |acc, &x| alu(op, acc, x));
                        let want = if negate { -v } else { v };
                        assert!(
                            same(got[g], want),
                            "{op:?} group {g} of {groups}×{r}: {} not {want}",
                            got[g]
                        );
                    }
                }
            }
        }
    }
}
