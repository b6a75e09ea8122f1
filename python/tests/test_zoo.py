"""Every zoo model through the NumPy API: its IO as the golden file lists it, and outputs equal
to the golden reference — exactly where the golden tolerance is 0, within it on the listed
values otherwise — and byte-identical to what the shipped ``nrt-emu run`` computes from the
same inputs. The one model that cannot execute (``real_like``: real-compiler opcodes) loads,
and its execution fails as an NrtError from ``nrt_execute``."""

import subprocess

import numpy as np
import pytest

import nrt_emu
from support import golden_inputs, goldens, io_signature, neff, sha256

CASES = goldens()


@pytest.mark.parametrize("doc", CASES, ids=[d["id"] for d in CASES])
def test_zoo_model_matches_its_golden_outputs(doc, nrt_devices, tmp_path):
    device = nrt_devices.get(doc["target"], "sim")
    with device.load(neff(doc["id"])) as model:
        assert io_signature(model.inputs) == [(t["name"], t["dtype"], t["shape"]) for t in doc["inputs"]]
        assert io_signature(model.outputs) == [(t["name"], t["dtype"], t["shape"]) for t in doc["outputs"]]
        inputs = golden_inputs(doc)
        if not doc["executable"]:
            with pytest.raises(nrt_emu.NrtError) as e:
                model(**inputs)
            assert e.value.function == "nrt_execute" and e.value.message, e.value
            return
        outputs = model(**inputs)
    assert sorted(outputs) == sorted(t["name"] for t in doc["outputs"])
    for want in doc["outputs"]:
        got = outputs[want["name"]]
        assert list(got.shape) == want["shape"]
        if doc["tolerance"] == 0:
            assert sha256(got) == want["sha256"], f"{doc['id']}: {want['name']} differs from the golden output"
        first = got.reshape(-1)[: len(want["first"])].astype(np.float64)
        bound = doc["tolerance"] * np.maximum(1.0, np.abs(want["first"]))
        assert np.all(np.abs(first - want["first"]) <= bound), (first, want["first"])

    # The same inputs through the shipped CLI: the same bytes.
    run = subprocess.run(
        [nrt_emu.cli_path(), "run", str(neff(doc["id"])), "--seed", str(doc["seed"]), "--output-dir", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    for name, got in outputs.items():
        cli = np.load(tmp_path / f"{name}.npy")
        assert cli.tobytes() == got.tobytes(), f"{doc['id']}: {name} differs from nrt-emu run"
