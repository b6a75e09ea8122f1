"""bf16 and fp8 tensors: ml_dtypes types when ml_dtypes is installed, raw bits without it (a
process where importing ml_dtypes fails), and what the input checks accept in each case."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nrt_emu
from nrt_emu import _dtypes
from nrt_emu.device import check_inputs
from nrt_emu.spec import TensorSpec

ml_dtypes = pytest.importorskip("ml_dtypes")


def spec(nrt_dtype, code):
    return TensorSpec("x", "input", _dtypes.numpy_dtype(code), (4,), nrt_dtype, 8)


def test_with_ml_dtypes():
    assert nrt_emu.have_ml_dtypes()
    assert _dtypes.numpy_dtype(0x6) == np.dtype(ml_dtypes.bfloat16)
    assert _dtypes.numpy_dtype(0xE) == np.dtype(ml_dtypes.float8_e4m3fn)
    assert _dtypes.numpy_dtype(0xF) == np.dtype(ml_dtypes.float8_e5m2)
    assert _dtypes.numpy_dtype(0xD) == np.dtype(np.uint8)  # e3m4: no installed type has its values
    assert float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max) == 448.0
    assert _dtypes.numpy_dtype(0xA) == np.dtype(np.float32) and _dtypes.numpy_dtype(0xB) == np.dtype(np.float32)
    s = spec("bfloat16", 0x6)
    check_inputs([s], {"x": np.zeros(4, ml_dtypes.bfloat16)})
    with pytest.raises(nrt_emu.InputError, match="input 'x' is uint16; the model takes bfloat16"):
        check_inputs([s], {"x": np.zeros(4, np.uint16)})
    with pytest.raises(ValueError, match="not a tensor dtype"):
        _dtypes.numpy_dtype(0)


def test_without_ml_dtypes_the_raw_bits():
    script = textwrap.dedent(
        """
        import sys
        sys.modules["ml_dtypes"] = None  # import fails as if it were not installed
        import numpy as np, nrt_emu
        from nrt_emu import _dtypes
        from nrt_emu.device import check_inputs
        from nrt_emu.spec import TensorSpec
        assert not nrt_emu.have_ml_dtypes()
        assert [_dtypes.numpy_dtype(c) for c in (0x6, 0xD, 0xE, 0xF)] == [np.dtype("<u2")] + [np.dtype("u1")] * 3
        s = TensorSpec("x", "input", _dtypes.numpy_dtype(0x6), (4,), "bfloat16", 8)
        check_inputs([s], {"x": np.zeros(4, np.uint16)})
        try:
            check_inputs([s], {"x": np.zeros(4, np.float16)})
            raise SystemExit("float16 accepted for bfloat16")
        except nrt_emu.InputError as e:
            assert "bfloat16 as raw bits (uint16; with ml_dtypes installed: ml_dtypes.bfloat16)" in e.message, e
        print("raw ok")
        """
    )
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "raw ok" in p.stdout
