"""No leak across many load → execute → unload cycles, failed loads and input errors included:
every visible core's device memory (``nrt_get_vnc_memory_stats``) is back at its baseline, on
both targets and both backends. The baseline is taken after one warm-up round of the models:
a core's first execution sets up state the runtime keeps for the core's life (its execution
rings and notification queue), as the runtime's own leak gate does."""

import numpy as np
import pytest

import nrt_emu
from support import neff

CYCLES = 25


def usage(device):
    return [device.memory_stats(v).bytes_used for v in range(device.visible_cores)]


@pytest.mark.parametrize("nrt_device", ["trn1-sim", "trn2-sim", "trn1-shim", "trn2-shim"], indirect=True)
def test_load_execute_unload_cycles_return_device_memory_to_baseline(nrt_device):
    t = nrt_device.target
    models = [f"add.{t}", f"mlp2.{t}"] + (["lnc2_add.trn2"] if t == "trn2" else [])
    for name in models:  # warm-up
        cycle(nrt_device, name)
    baseline = usage(nrt_device)
    loaded = []
    for i in range(CYCLES):
        loaded.append(cycle(nrt_device, models[i % len(models)]))
    assert all(u != baseline for u in loaded), "a loaded model uses device memory"
    assert usage(nrt_device) == baseline


def cycle(device, name):
    """Load, execute, a refused call, unload, a failed load; the usage while loaded."""
    with device.load(neff(name)) as model:
        arrays = {s.name: np.zeros(s.shape, s.dtype) for s in model.inputs}
        model(**arrays)
        while_loaded = usage(device)
        with pytest.raises(nrt_emu.InputError):
            model(**{k: v[:1] for k, v in arrays.items()})
    with pytest.raises(nrt_emu.NrtError):
        device.load(neff(name).read_bytes()[:4000])
    return while_loaded
