"""The seven NEFFs of the current-compiler development set (neuronx-cc 2.23, trn2, LNC 2) through
the NumPy API on the trn2 simulator: each loads with the inputs and outputs its README lists
(and ``nrt-emu inspect`` lists the same), executes, and its outputs match a float64 numpy
reference written from the account of what each computes that ships with the set (described in
docs/neff.md §1 and docs/neuron-isa.md §13) — the fp16 matmul, the four softmax-attention
kernels, the Qwen3 MoE with eight distinct expert ids (the first and the last expert among
them), and the Qwen3 attention with a KV cache, its inputs in the roles established from its program.

The set is read from ``$NRT_EMU_CURRENT_NEFFS``, else ``../shared/current-neffs`` beside the
repository; without it every test skips, naming the folder. Nothing of it is copied here.

**Tolerances** are rounding-error bounds, computed element by element from the data: a sum of
``n`` products accumulated in fp32 is off by at most ``γ(n)·Σ|aᵢ·bᵢ|`` with ``γ(n) = n·u/(1 −
n·u)``, u = 2⁻²⁴ (Higham, *Accuracy and Stability of Numerical Algorithms*, section 3.1); a value
stored in a narrower dtype is off by half an ulp, u·|x| (fp16 u = 2⁻¹¹, bf16 u = 2⁻⁸, from 11
and 8 significant bits); errors of intermediate values travel to the output to first order
through the derivative of what follows. Each bound says which roundings it covers — those the
set's account and the kernels' programs (docs/neuron-isa.md §13) name for each kernel, taken at
their worst, and every fp32 step. They hold for any rounding that stays within those limits, so
they can sit well above the simulator's errors (reported with how much of the bound each uses).

The summary of the run lists, per NEFF, the largest absolute error, the same divided by the
largest |reference|, the share of the bound used and the execution time (``error_report``).
"""

import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

import nrt_emu
from support import io_signature

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = ml_dtypes.bfloat16

ROOT = Path(__file__).resolve().parents[2]
FOLDER = Path(os.environ.get("NRT_EMU_CURRENT_NEFFS") or ROOT.parent / "shared" / "current-neffs")

MATMUL = "aws-neuron+nkipy--matmul_small"
ATTENTION = [
    f"allenkchau+trainium-kernel-fusion--{v}_{d}_s512" for v in ("fused", "baseline") for d in ("bf16", "fp32")
]
MOE = "KevGomes1403+nki-moe-megakernel--moe_tkg_v6b"
ATTN_TKG = "KevGomes1403+nki-moe-megakernel--attn_tkg_v6"


def _attention_io(dtype: str) -> tuple:
    return [(n, dtype, [128, 512]) for n in ("q_ref", "k_ref", "v_ref")], [("kernel_out", dtype, [512, 128])]


# The README's inputs and outputs of each: (name, NEFF dtype, shape).
IO = {
    MATMUL: (
        [("x", "float16", [128, 256]), ("y", "float16", [256, 128])],
        [("output0", "float16", [128, 128])],
    ),
    **{name: _attention_io("bfloat16" if "bf16" in name else "float32") for name in ATTENTION},
    MOE: (
        [
            ("input0", "float32", [1, 8]),  # routing weights
            ("input1", "int32", [1, 8]),  # expert ids
            ("input2", "bfloat16", [128, 256, 2048]),  # down weights [E, I, H]
            ("input3", "bfloat16", [128, 2048, 512]),  # gate-up weights [E, H, 2I]
            ("input4", "bfloat16", [1, 2048]),  # hidden
        ],
        [("output0", "bfloat16", [1, 2048])],
    ),
    # The kernel's arguments in reverse order (the set's account, checked against the
    # source lines each input's DMAs are tied to).
    ATTN_TKG: (
        [
            ("input0", "int32", [1, 1]),  # position (never read)
            ("input1", "bfloat16", [1, 128]),  # sin
            ("input2", "bfloat16", [1, 128]),  # cos
            ("input3", "bfloat16", [1, 4, 640, 128]),  # V cache
            ("input4", "bfloat16", [1, 4, 640, 128]),  # K cache
            ("input5", "bfloat16", [128]),  # K-norm weights
            ("input6", "bfloat16", [128]),  # Q-norm weights
            ("input7", "bfloat16", [512, 2048]),  # Wv
            ("input8", "bfloat16", [512, 2048]),  # Wk
            ("input9", "bfloat16", [1024, 2048]),  # Wq
            ("input10", "bfloat16", [1, 1, 2048]),  # hidden
        ],
        [("output0", "bfloat16", [1, 1, 1024])],
    ),
}

# Unit roundoffs: half an ulp of 1.
U32, U16, UB = 2.0**-24, 2.0**-11, 2.0**-8


def gamma(n: int) -> float:
    """The worst relative error of an fp32 sum of ``n`` terms (of exact or fp32 products)."""
    return n * U32 / (1 - n * U32)


def f64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# The references: float64 numpy, from the README's description.


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def silu(x):
    return x / (1 + np.exp(-x))


def attention_reference(q, k, v):
    """``softmax(qᵀ·k, axis=-1)·vᵀ`` for q, k, v ``[d, s]``: the ``[s, d]`` result."""
    return softmax(q.T @ k) @ v.T


def moe_reference(w, ids, hidden, down, gate_up):
    """The Qwen3 MoE: for each token t and its k-th expert e = ids[t, k], gu = hidden[t] @
    gate_up[e], g, u = its halves, out[t] += w[t, k]·((silu(g)·u) @ down[e])."""
    out = np.zeros(hidden.shape)
    for t in range(hidden.shape[0]):
        for k, e in enumerate(ids[t]):
            g, u = np.split(hidden[t] @ f64(gate_up[e]), 2)
            out[t] += w[t, k] * ((silu(g) * u) @ f64(down[e]))
    return out


def block_t(m):
    """``m`` with every 128×128 block of its last two axes transposed in place."""
    *lead, r, c = m.shape
    return m.reshape(*lead, r // 128, 128, c // 128, 128).swapaxes(-1, -3).reshape(m.shape)


def rms_norm(x, w, eps=1e-6):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w


def rotate_half(x):
    x1, x2 = np.split(x, 2, axis=-1)
    return np.concatenate([-x2, x1], axis=-1)


def rope(x, cos, sin):
    return x * cos + rotate_half(x) * sin


def attn_tkg_reference(hidden, wq, wk, wv, q_norm, k_norm, k_cache, v_cache, cos, sin):
    """Qwen3 attention of one new token: 8 query heads and 4 KV heads of 128 (query head h reads
    KV head h // 2); Q/K/V = hidden·Wᵀ, RMSNorm per head on Q and K, RoPE (rotate-half), scores
    against the 640 cached keys and the new one scaled by 1/√128, softmax, the weighted sum of
    the values. Caches ``[4, 640, 128]``."""
    h = hidden.reshape(-1)
    q = rope(rms_norm((wq @ h).reshape(8, 128), q_norm), cos, sin)
    k = rope(rms_norm((wk @ h).reshape(4, 128), k_norm), cos, sin)
    v = (wv @ h).reshape(4, 128)
    keys = np.repeat(np.concatenate([k_cache, k[:, None]], axis=1), 2, axis=0)  # [8, 641, 128]
    values = np.repeat(np.concatenate([v_cache, v[:, None]], axis=1), 2, axis=0)
    p = softmax(np.einsum("hd,hjd->hj", q, keys) / np.sqrt(128))
    return np.einsum("hj,hjd->hd", p, values).reshape(1, 1, 1024)


# ---------------------------------------------------------------------------------------------
# The tolerances: elementwise bounds of the rounding errors each kernel may make.


def matmul_error_bound(x, y, ref):
    """fp16 products are exact in fp32 (11 + 11 significant bits), summed in fp32 over 256: at
    most γ(256)·Σ|x·y|; then one rounding to fp16, U16·|ref|."""
    return gamma(256) * (np.abs(x) @ np.abs(y)) * (1 + U16) + U16 * np.abs(ref)


def attention_error_bound(q, k, v, ref, u_out, u_p):
    """For each row of ``softmax(s)·vᵀ``: the scores s = qᵀk are fp32 sums of 128 products,
    off by γ(129)·Σ|q·k| (fp32 inputs: rounded products), plus the max subtraction and exp
    (a score error δ moves a weight by e^δ and the row's output by at most δ·Σⱼ pⱼ|vⱼ − out|);
    the weights are stored with relative error ``u_p`` (bf16 kernels round P to bf16 before
    P·Vᵀ, as its program does) and summed over 512 in fp32 for P·Vᵀ and the row sum
    (γ(513) each, on Σ p·|v| and on |out|); 1/sum and its product; the output stored with
    relative error ``u_out``."""
    s = q.T @ k
    p = softmax(s)
    es = gamma(129) * (np.abs(q).T @ np.abs(k)) + U32 * (s.max(axis=-1, keepdims=True) - s + 1)
    pe = p * es
    out = np.abs(ref)
    bound = pe @ np.abs(v).T + pe.sum(axis=-1, keepdims=True) * out  # |vⱼ − out| ≤ |vⱼ| + |out|
    bound += (u_p + gamma(513)) * (p @ np.abs(v).T + out)
    return bound + (3 * U32 + u_out) * out


def moe_error_bound(w, ids, hidden, down, gate_up, ref):
    """Per expert: gate-up sums of 2048 exact bf16 products in fp32, γ(2048)·Σ|h·W|; SiLU and the
    product with ``up`` in fp32 (a few U32), then rounded to bf16 (UB) for the down projection,
    gate/up errors carried by the derivatives; down sums of 256 in fp32 (γ(256)); scaled by the
    routing weight and summed over the 8 experts in fp32; the output rounded to bf16."""
    bound = np.zeros(hidden.shape)
    for t in range(hidden.shape[0]):
        h = hidden[t]
        for k, e in enumerate(ids[t]):
            gu, d = f64(gate_up[e]), f64(down[e])
            g, u = np.split(h @ gu, 2)
            eg, eu = np.split(gamma(2048) * (np.abs(h) @ np.abs(gu)), 2)
            sig = 1 / (1 + np.exp(-g))
            dsilu = np.abs(sig * (1 + g * (1 - sig)))
            a = silu(g) * u
            ea = dsilu * np.abs(u) * eg + np.abs(silu(g)) * eu + (UB + 5 * U32) * np.abs(a)
            y = a @ d
            ey = ea @ np.abs(d) + gamma(256) * (np.abs(a) @ np.abs(d))
            bound[t] += abs(w[t, k]) * (ey + (U32 + gamma(8)) * np.abs(y))
    return bound + UB * np.abs(ref)


def attn_tkg_error_bound(hidden, wq, wk, wv, q_norm, k_norm, k_cache, v_cache, cos, sin):
    """The roundings of the KV-cache kernel (as its program does: sums of squares rounded
    to bf16 before the ones-matmul, q rounded to bf16 for the scores, exp values rounded to
    bf16, 1/sum as rsqrt²; taken here for the new k and v too), every fp32 sum (projections of
    2048, norms and scores of 128, softmax sums of 641) and the bf16 output, carried to the
    output to first order. q's error is shared by all 641 scores of a head, so it travels
    through ∂out/∂q = Σⱼ pⱼ(vⱼ − out)·kⱼᵀ/√128; each score's own error through pⱼ|vⱼ − out|."""
    h = hidden.reshape(-1)

    def project(w, heads):
        return (w @ h).reshape(heads, 128), (gamma(2048) * (np.abs(w) @ np.abs(h))).reshape(heads, 128)

    def norm_rope(x, ex, w):
        ss = (x * x).sum(axis=-1, keepdims=True)
        rel = UB + gamma(128) + 2 * (np.abs(x) * ex).sum(axis=-1, keepdims=True) / ss  # of Σx²
        r = 1 / np.sqrt(ss / 128 + 1e-6)
        n = x * r * w
        en = np.abs(n) * (rel / 2 + 5 * U32) + ex * r * np.abs(w)
        y = rope(n, cos, sin)
        terms = np.abs(n * cos) + np.abs(rotate_half(n) * sin)
        ey = en * np.abs(cos) + np.abs(rotate_half(en)) * np.abs(sin) + 2 * U32 * terms
        return y, ey + UB * np.abs(y)  # rounded to bf16

    (q, eq), (k, ek), (v, ev) = project(wq, 8), project(wk, 4), project(wv, 4)
    q, eq = norm_rope(q, eq, q_norm)
    k, ek = norm_rope(k, ek, k_norm)
    ev = ev + UB * np.abs(v)
    keys = np.repeat(np.concatenate([k_cache, k[:, None]], axis=1), 2, axis=0)
    values = np.repeat(np.concatenate([v_cache, v[:, None]], axis=1), 2, axis=0)
    ekeys = np.repeat(np.concatenate([np.zeros_like(k_cache), ek[:, None]], axis=1), 2, axis=0)
    s = np.einsum("hd,hjd->hj", q, keys) / np.sqrt(128)
    p = softmax(s)
    out = np.einsum("hj,hjd->hd", p, values)
    dev = np.abs(values - out[:, None, :])
    jac = np.einsum("hj,hjc,hjd->hcd", p, values - out[:, None, :], keys) / np.sqrt(128)
    bound = np.einsum("hcd,hd->hc", np.abs(jac), eq)
    es = np.einsum("hjd,hd->hj", ekeys, np.abs(q)) + gamma(128) * np.einsum("hjd,hd->hj", np.abs(keys), np.abs(q))
    es = es / np.sqrt(128) + U32 * (np.abs(s) + s.max(axis=-1, keepdims=True) - s + 1)
    bound += np.einsum("hj,hjc->hc", p * es, dev)
    bound += (UB + gamma(641)) * (np.einsum("hj,hjc->hc", p, np.abs(values)) + np.abs(out))
    bound += p[:, -1:] * np.repeat(ev, 2, axis=0)  # the new value row
    bound += (4 * U32 + UB) * np.abs(out)  # 1/sum, its product; the output to bf16
    return bound.reshape(1, 1, 1024)


# ---------------------------------------------------------------------------------------------
# Running and comparing.


@pytest.fixture(scope="module")
def neffs() -> Path:
    if not FOLDER.is_dir():
        pytest.skip(
            f"current-neffs: folder {FOLDER} not found (set NRT_EMU_CURRENT_NEFFS or put the "
            "development set at ../shared/current-neffs beside the repository)"
        )
    return FOLDER


def neff_path(neffs: Path, name: str) -> Path:
    path = neffs / f"{name}.neff"
    if not path.is_file():
        pytest.skip(f"current-neffs: {path} not found")
    return path


@pytest.fixture
def trn2(nrt_devices):
    return nrt_devices.get("trn2", "sim")


def execute(device, path: Path, runs) -> tuple:
    """Loads the NEFF, checks its IO against the README's, executes it once per set of inputs
    in ``runs``; the outputs of each and the seconds of the first execution."""
    name = path.stem
    with device.load(path) as model:
        assert io_signature(model.inputs) == IO[name][0], name
        assert io_signature(model.outputs) == IO[name][1], name
        outs, seconds = [], []
        for inputs in runs:
            t0 = time.perf_counter()
            outs.append(model(**inputs))
            seconds.append(time.perf_counter() - t0)
    return outs, seconds[0]


def check(report: list, name: str, got, ref, bound, seconds: float) -> None:
    """``|got − ref| ≤ bound`` everywhere; records the errors in the run's summary."""
    got = f64(got)
    assert got.shape == ref.shape == bound.shape, (got.shape, ref.shape, bound.shape)
    err = np.abs(got - ref)
    used = err / np.maximum(bound, np.finfo(float).tiny)
    line = (
        f"current-neff {name}: max |err| {err.max():.3e} / max |ref| {np.abs(ref).max():.3e} = "
        f"{err.max() / np.abs(ref).max():.2e}; {used.max():.1%} of the bound at worst; "
        f"bound max {bound.max():.2e}; execution {seconds:.2f} s"
    )
    report.append(line)
    print(line)
    at = np.unravel_index(np.argmax(used), used.shape)
    assert np.all(err <= bound), (
        f"{name}: element {tuple(int(i) for i in at)}: got {got[at]}, reference {ref[at]}, "
        f"|err| {err[at]:.3e} > bound {bound[at]:.3e}"
    )


def assert_tells_apart(got, other, bound, what: str) -> None:
    """The check is not blind to ``what``: its reference lies outside the bound somewhere."""
    assert np.any(np.abs(f64(got) - other) > bound), f"{what}: within the tolerance as well"


def uniform(rng, shape, lo, hi, dtype):
    return rng.uniform(lo, hi, shape).astype(dtype)


def bf16_weights(rng, shape, scale):
    """Uniform in [-scale, scale) as bf16, a different draw for every slice of the first axis
    (each expert). Drawn in float32 one slice at a time: the draw stays in cache and no 0.5 GB
    temporaries are faulted in (a sixth of the time of one draw of the whole tensor)."""
    out = np.empty(shape, BF16)
    slice_ = np.empty(shape[1:], np.float32)
    for i in range(shape[0]):
        rng.random(out=slice_, dtype=np.float32)
        slice_ *= 2 * scale
        slice_ -= scale
        out[i] = slice_
    return out


# ---------------------------------------------------------------------------------------------
# The tests.

ALL = [MATMUL, *ATTENTION, MOE, ATTN_TKG]


@pytest.mark.parametrize("name", ALL)
def test_inspect_lists_the_readme_inputs_and_outputs(neffs, name):
    path = neff_path(neffs, name)
    p = subprocess.run([nrt_emu.cli_path(), "inspect", "--json", str(path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert (doc["target"], doc["generation"], doc["header"]["lnc_size"]) == ("cayman", "trn2", 2)
    listed = [[(t["name"], t["dtype"], t["shape"]) for t in doc[k]] for k in ("inputs", "outputs")]
    assert listed == list(IO[name])


def test_nkipy_matmul(neffs, trn2, error_report):
    rng = np.random.default_rng(1)
    x = uniform(rng, (128, 256), -1, 1, np.float16)
    y = uniform(rng, (256, 128), -1, 1, np.float16)
    (out,), seconds = execute(trn2, neff_path(neffs, MATMUL), [dict(x=x, y=y)])
    ref = f64(x) @ f64(y)
    check(error_report, MATMUL, out["output0"], ref, matmul_error_bound(f64(x), f64(y), ref), seconds)


@pytest.mark.parametrize("name", ATTENTION, ids=[n.split("--")[1] for n in ATTENTION])
def test_softmax_attention(neffs, trn2, error_report, name):
    bf16 = "bf16" in name
    rng = np.random.default_rng(2)
    # As the kernels' own tests draw them: uniform in [-1, 1).
    q, k, v = (uniform(rng, (128, 512), -1, 1, BF16 if bf16 else np.float32) for _ in range(3))
    (out,), seconds = execute(trn2, neff_path(neffs, name), [dict(q_ref=q, k_ref=k, v_ref=v)])
    q, k, v = f64(q), f64(k), f64(v)
    ref = attention_reference(q, k, v)
    u = UB if bf16 else U32
    check(error_report, name, out["kernel_out"], ref, attention_error_bound(q, k, v, ref, u_out=u, u_p=u), seconds)


def test_moe_selects_each_expert_by_its_id(neffs, trn2, error_report):
    E, H, I = 128, 2048, 256
    rng = np.random.default_rng(3)
    # Eight distinct experts, the first and the last among them.
    ids = np.concatenate([[0, E - 1], rng.choice(np.arange(1, E - 1), 6, replace=False)])
    ids = rng.permutation(ids).astype(np.int32).reshape(1, 8)
    assert len(set(ids.flat)) == 8 and ids.min() == 0 and ids.max() == E - 1
    # Routing weights of one size, so that every expert's share of the output is far above the
    # tolerance (a softmax of random logits can leave one expert a few percent).
    w = rng.uniform(0.5, 1.0, (1, 8)).astype(np.float32)
    hidden = rng.standard_normal((1, H), np.float32).astype(BF16)
    # Every expert's weights distinct random values (std 0.02, as the kernel's own test), so that
    # an expert read in place of another changes the output.
    down = bf16_weights(rng, (E, I, H), 0.02 * np.sqrt(3))
    gate_up = bf16_weights(rng, (E, H, 2 * I), 0.02 * np.sqrt(3))
    inputs = dict(input0=w, input1=ids, input2=down, input3=gate_up, input4=hidden)
    (out,), seconds = execute(trn2, neff_path(neffs, MOE), [inputs])
    ref = moe_reference(f64(w), ids, f64(hidden), down, gate_up)
    bound = moe_error_bound(f64(w), ids, f64(hidden), down, gate_up, ref)
    check(error_report, MOE, out["output0"], ref, bound, seconds)
    # Each of the eight selections matters: the next expert in place of any one is seen.
    for k in range(8):
        other = ids.copy()
        other[0, k] = (ids[0, k] + 1) % E
        wrong = moe_reference(f64(w), other, f64(hidden), down, gate_up)
        assert_tells_apart(out["output0"], wrong, bound, f"expert {other[0, k]} in place of {ids[0, k]}")


def test_kv_cache_attention_with_its_inputs_roles(neffs, trn2, error_report):
    rng = np.random.default_rng(4)
    inputs = {
        "input0": np.array([[639]], np.int32),  # a position within the cache
        # Independent values in every element, so that a mix-up of sin and cos, of the halves
        # RoPE rotates, of the two norms or of K and V shows.
        "input1": uniform(rng, (1, 128), -1, 1, BF16),
        "input2": uniform(rng, (1, 128), -1, 1, BF16),
        "input3": uniform(rng, (1, 4, 640, 128), -1, 1, BF16),
        "input4": uniform(rng, (1, 4, 640, 128), -1, 1, BF16),
        "input5": uniform(rng, (128,), 0.5, 1.5, BF16),
        "input6": uniform(rng, (128,), 0.5, 1.5, BF16),
        "input7": uniform(rng, (512, 2048), -0.04, 0.04, BF16),
        "input8": uniform(rng, (512, 2048), -0.04, 0.04, BF16),
        "input9": uniform(rng, (1024, 2048), -0.04, 0.04, BF16),
        "input10": uniform(rng, (1, 1, 2048), -1, 1, BF16),
    }
    # The position is never read: another one gives the same bytes.
    moved = dict(inputs, input0=np.array([[0]], np.int32))
    (out, out_moved), seconds = execute(trn2, neff_path(neffs, ATTN_TKG), [inputs, moved])
    assert out["output0"].tobytes() == out_moved["output0"].tobytes()

    a = {n: f64(x) for n, x in inputs.items()}
    # The program reads every 128×128 block of the weights and of both caches transposed (its
    # matmuls contract the other axis, as the program's access patterns show); the device
    # computes what the program says, so the reference reads them so too.
    args = dict(
        hidden=a["input10"],
        wq=block_t(a["input9"]),
        wk=block_t(a["input8"]),
        wv=block_t(a["input7"]),
        q_norm=a["input6"],
        k_norm=a["input5"],
        k_cache=block_t(a["input4"][0]),
        v_cache=block_t(a["input3"][0]),
        cos=a["input2"][0],
        sin=a["input1"][0],
    )
    ref = attn_tkg_reference(**args)
    bound = attn_tkg_error_bound(**args)
    check(error_report, ATTN_TKG, out["output0"], ref, bound, seconds)
    # Other readings of the inputs are told apart: the source's own layout (no block
    # transposed), and each pair of look-alike inputs exchanged.
    others = {
        "the untransposed layout": dict(
            args,
            wq=a["input9"],
            wk=a["input8"],
            wv=a["input7"],
            k_cache=a["input4"][0],
            v_cache=a["input3"][0],
        ),
        "K and V caches exchanged": dict(args, k_cache=args["v_cache"], v_cache=args["k_cache"]),
        "Wk and Wv exchanged": dict(args, wk=args["wv"], wv=args["wk"]),
        "the two norms exchanged": dict(args, q_norm=args["k_norm"], k_norm=args["q_norm"]),
        "sin and cos exchanged": dict(args, cos=args["sin"], sin=args["cos"]),
    }
    for what, other in others.items():
        assert_tells_apart(out["output0"], attn_tkg_reference(**other), bound, what)
