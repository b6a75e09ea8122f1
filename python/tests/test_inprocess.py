"""The in-process Device (the default) in a process of its own: one libnrt session per process
(a second Device while one is open, and any Device after it closed, are refused with the way
out: isolated=True), the environment restored after nrt_init, results equal to an isolated
Device's, and concurrent calls from several threads."""

import subprocess
import sys
import textwrap

from support import FIXTURES

SCRIPT = textwrap.dedent(
    """
    import os, sys, threading
    import numpy as np
    import nrt_emu

    neffs = sys.argv[1]
    assert "NRT_EMU_TARGET" not in os.environ
    dev = nrt_emu.Device(target="trn1", env={"NEURON_RT_LOG_LEVEL": "ERROR"})
    assert "NRT_EMU_TARGET" not in os.environ and "NEURON_RT_LOG_LEVEL" not in os.environ
    model = dev.load(neffs + "/mlp2.trn1.neff")
    x = np.linspace(-1, 1, 128 * 64, dtype=np.float32).reshape(128, 64)
    here = model(x=x)["y"]

    try:
        nrt_emu.Device(target="trn2")
        raise SystemExit("a second in-process Device was allowed")
    except RuntimeError as e:
        assert "isolated=True" in str(e), e

    with nrt_emu.Device(target="trn1", isolated=True) as other:
        there = other.load(neffs + "/mlp2.trn1.neff")(x=x)["y"]
    assert np.array_equal(here, there)

    # Threads share the model: each call gets its own results.
    add = dev.load(neffs + "/add.trn1.neff")
    errors = []
    def work(k):
        a = np.full((128, 512), k, np.float32)
        for _ in range(5):
            out = add(a=a, b=a)["out"]
            if not np.all(out == 2 * k):
                errors.append(k)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    assert not errors, errors

    dev.close()
    assert dev.closed
    try:
        nrt_emu.Device(target="trn1")
        raise SystemExit("a Device after nrt_close was allowed")
    except RuntimeError as e:
        assert "NRT_CLOSED" in str(e) and "isolated=True" in str(e), e
    print("in-process ok")
    """
)


def test_the_in_process_device():
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("NRT_EMU_", "NEURON_"))}
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(FIXTURES / "neffs")], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "in-process ok" in p.stdout
