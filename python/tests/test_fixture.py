"""The pytest plugin's fixtures: ``nrt_device`` on every target and backend the options select
(the harness passes ``--nrt-target all --nrt-backend all``), explicit parametrization, and
``nrt_devices``."""

import numpy as np
import pytest

from support import neff

CORES = {"trn1": 2, "trn2": 4}  # logical cores: trn2's 8 physical cores at LNC=2


def test_nrt_device_runs_a_model(nrt_device):
    assert not nrt_device.closed
    assert nrt_device.visible_cores == nrt_device.total_cores == CORES[nrt_device.target]
    rng = np.random.default_rng(7)
    a = rng.standard_normal((128, 512), dtype=np.float32)
    b = rng.standard_normal((128, 512), dtype=np.float32)
    model = nrt_device.load(neff(f"add.{nrt_device.target}"))
    out = model(a=a, b=b)
    np.testing.assert_array_equal(out["out"], a + b)
    # Left loaded on purpose: the fixture unloads it after the test.


def test_the_fixture_unloaded_what_the_last_test_left(nrt_device):
    assert nrt_device._models == {}


@pytest.mark.parametrize("nrt_device", ["trn1-shim", "trn2-sim"], indirect=True)
def test_a_test_can_choose_its_devices(nrt_device, request):
    want = request.node.callspec.params["nrt_device"]
    assert f"{nrt_device.target}-{nrt_device.backend}" == want


def test_nrt_devices_shares_the_fixture_devices(nrt_devices):
    a = nrt_devices.get("trn1", "sim")
    assert nrt_devices.get("trn1", "sim") is a
    assert nrt_devices.get("trn2", "shim") is not a
