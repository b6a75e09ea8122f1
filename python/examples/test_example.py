"""The example test of the README's "Python" section: run it with

    pytest python/examples/test_example.py --nrt-target all

The ``nrt_device`` fixture comes from the plugin the nrt-emu wheel installs; the test runs once
per target (and per backend with ``--nrt-backend all``)."""

from pathlib import Path

import numpy as np

NEFFS = Path(__file__).resolve().parents[2] / "fixtures" / "neffs"


def test_add(nrt_device):
    model = nrt_device.load(NEFFS / f"add.{nrt_device.target}.neff")
    assert [(s.name, s.shape) for s in model.inputs] == [("a", (128, 512)), ("b", (128, 512))]
    a = np.random.default_rng(0).standard_normal((128, 512), dtype=np.float32)
    out = model(a=a, b=np.ones_like(a))
    np.testing.assert_array_equal(out["out"], a + 1)
    print(model.benchmark(10))
