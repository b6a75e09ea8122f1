"""Error mapping: arrays that do not fit (wrong dtype, wrong shape, missing or unknown input)
are InputError (an NrtError with NRT_INVALID, and a ValueError) before any library call; a bad
NEFF — garbage, truncated, and every case of the zoo's malformed corpus — is the NrtError
``nrt_load`` returned, with the status the corpus expects and the library's own message; a bad
configuration fails ``nrt_init`` naming the variable."""

import json

import numpy as np
import pytest

import nrt_emu
from support import FIXTURES, neff

ADD = "add.trn1"


@pytest.fixture
def add(nrt_devices):
    with nrt_devices.get("trn1", "sim").load(neff(ADD)) as model:
        yield model


def ones(dtype=np.float32, shape=(128, 512)):
    return np.ones(shape, dtype)


def test_wrong_dtype(add):
    with pytest.raises(nrt_emu.InputError) as e:
        add(a=ones(np.float64), b=ones())
    assert (e.value.status, e.value.code) == ("NRT_INVALID", 2)
    assert "input 'a' is float64; the model takes float32" in e.value.message
    assert isinstance(e.value, ValueError) and isinstance(e.value, nrt_emu.NrtError)


def test_wrong_shape(add):
    with pytest.raises(nrt_emu.InputError, match=r"input 'b' has shape \[128, 511\]; the model takes \[128, 512\]"):
        add(a=ones(), b=ones(shape=(128, 511)))
    with pytest.raises(nrt_emu.InputError, match="shape"):
        add(a=ones(), b=ones(shape=(512, 128)))


def test_missing_and_unknown_inputs(add):
    with pytest.raises(nrt_emu.InputError, match=r"missing input 'b' \(float32 \[128, 512\]\)"):
        add(a=ones())
    with pytest.raises(nrt_emu.InputError, match="missing inputs 'a'.*'b'"):
        add()
    with pytest.raises(nrt_emu.InputError, match=r"no input named 'c' \(its inputs: a, b\)"):
        add(a=ones(), b=ones(), c=ones())


def test_a_failed_call_leaves_the_model_usable(add):
    with pytest.raises(nrt_emu.InputError):
        add(a=ones(np.int32), b=ones())
    out = add(a=ones(), b=ones())
    assert np.all(out["out"] == 2.0)


def test_garbage_and_truncated_neffs(nrt_devices):
    device = nrt_devices.get("trn1", "sim")
    with pytest.raises(nrt_emu.NrtError) as e:
        device.load(b"\x00" * 100)
    assert (e.value.status, e.value.code, e.value.function) == ("NRT_INVALID", 2, "nrt_load")
    assert "smaller than its 1024-byte header" in e.value.message
    whole = neff(ADD).read_bytes()
    with pytest.raises(nrt_emu.NrtError) as e:
        device.load(whole[: len(whole) // 2])
    assert e.value.status == "NRT_INVALID" and e.value.message
    assert "NRT_INVALID (2)" in str(e.value)


def _corpus():
    doc = json.loads((FIXTURES / "malformed" / "expected.json").read_text())
    return sorted(doc["cases"].items())


CORPUS = _corpus()


def _device_for(case, nrt_devices, extra):
    needs = case["needs"]
    target = needs.get("target", case["base"].split(".")[1])
    env = {}
    if needs.get("verify_hash"):
        env["NEURON_RT_VALIDATE_HASH"] = "1"
    if "available_cores" in needs:
        env["NEURON_RT_VIRTUAL_CORE_SIZE"] = str(needs["available_cores"])
    if not env:
        return nrt_devices.get(target, "sim")
    key = (target, tuple(sorted(env.items())))
    if key not in extra:
        extra[key] = nrt_emu.Device(target=target, env=env, isolated=True)
    return extra[key]


@pytest.fixture(scope="module")
def configured_devices():
    extra = {}
    yield extra
    for d in extra.values():
        d.close()


@pytest.mark.parametrize("name,case", CORPUS, ids=[c[0] for c in CORPUS])
def test_malformed_corpus(name, case, nrt_devices, configured_devices):
    if "limits" in case["needs"]:
        pytest.skip("the NEFF parse limits are not settable through libnrt's environment")
    device = _device_for(case, nrt_devices, configured_devices)
    with pytest.raises(nrt_emu.NrtError) as e:
        device.load(FIXTURES / "malformed" / name)
    assert e.value.code == case["status"], e.value
    assert e.value.status.startswith("NRT_") and e.value.function == "nrt_load"
    assert case["message_contains"] in e.value.message, e.value


def test_bad_configuration_fails_nrt_init_naming_the_variable():
    for env, named in [
        ({"NEURON_RT_EXEC_TIMEOUT": "soon"}, "NEURON_RT_EXEC_TIMEOUT"),
        ({"NEURON_RT_VIRTUAL_CORE_SIZE": "3"}, "NEURON_RT_VIRTUAL_CORE_SIZE"),
    ]:
        with pytest.raises(nrt_emu.NrtError) as e:
            nrt_emu.Device(target="trn2", env=env, isolated=True)
        assert (e.value.function, e.value.status) == ("nrt_init", "NRT_INVALID")
        assert named in e.value.message, e.value
    with pytest.raises(nrt_emu.NrtError) as e:
        nrt_emu.Device(target="trn2", visible_cores="0,2", isolated=True)
    assert "NEURON_RT_VISIBLE_CORES" in e.value.message and "contiguous" in e.value.message
    with pytest.raises(nrt_emu.NrtError) as e:
        nrt_emu.Device(target="trn1", visible_cores=range(1, 4), isolated=True)
    assert e.value.status == "NRT_RESOURCE" and "not available" in e.value.message


def test_bad_arguments_are_python_errors():
    with pytest.raises(ValueError, match="target='inf2'"):
        nrt_emu.Device(target="inf2")
    with pytest.raises(ValueError, match="backend='gpu'"):
        nrt_emu.Device(backend="gpu")


def test_an_unloaded_model_refuses_calls(nrt_devices):
    model = nrt_devices.get("trn1", "sim").load(neff(ADD))
    model.unload()
    with pytest.raises(RuntimeError, match="unloaded"):
        model(a=ones(), b=ones())
    with pytest.raises(RuntimeError, match="unloaded"):
        model.unload()
