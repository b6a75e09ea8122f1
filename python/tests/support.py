"""Shared helpers of the suite: the repository's zoo (NEFFs, golden files, the malformed corpus)
and the golden inputs the Rust harness writes.

``NRT_EMU_FIXTURES`` names the zoo's directory (default: ``fixtures/`` of this checkout);
``NRT_EMU_ZOO_INPUTS`` the directory of golden inputs, ``<model>.<target>/<input>.npy``, which
``tests/nrt_emu/python.rs`` writes from the zoo's generator before it runs this suite (tests
that need them skip without it, saying so).
"""

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
from nrt_emu import _dtypes

FIXTURES = Path(os.environ.get("NRT_EMU_FIXTURES", Path(__file__).resolve().parents[2] / "fixtures"))


def goldens():
    """Every golden document, with its ``id`` (``model.target``)."""
    out = []
    for p in sorted((FIXTURES / "golden").glob("*.json")):
        doc = json.loads(p.read_text())
        doc["id"] = p.stem
        out.append(doc)
    return out


def neff(model_id: str) -> Path:
    """The zoo NEFF ``model.target``."""
    return FIXTURES / "neffs" / f"{model_id}.neff"


def golden_inputs(doc) -> dict:
    """The golden inputs of ``doc`` as arrays, each checked against its golden SHA-256."""
    root = os.environ.get("NRT_EMU_ZOO_INPUTS")
    if not root:
        pytest.skip("NRT_EMU_ZOO_INPUTS is not set: tests/nrt_emu/python.rs writes the golden inputs")
    arrays = {}
    for spec in doc["inputs"]:
        a = np.load(Path(root) / doc["id"] / f"{spec['name']}.npy")
        assert sha256(a) == spec["sha256"], f"{doc['id']}: input {spec['name']} is not the golden input"
        # bf16 and fp8 are written as their raw bits; the model takes them as the dtype the
        # package gives them (ml_dtypes' type where installed).
        arrays[spec["name"]] = a.view(_dtypes.numpy_dtype(_dtypes.BY_NAME[spec["dtype"]].code))
    return arrays


def sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def io_signature(specs):
    """(name, NEFF dtype, shape) of each tensor."""
    return [(s.name, s.nrt_dtype, list(s.shape)) for s in specs]
