"""nrt-emu for Python: the AWS Neuron runtime on a simulated Neuron device.

The wheel ships the drop-in ``libnrt.so.1`` (and ``libnrt.so``), its headers, the device shim
``libnrt_emu_shim.so`` and the ``nrt-emu`` command. This package adds

* a NumPy API over the library's C API (:class:`Device`, :class:`Model`), every failed call
  raised as :class:`NrtError` (status name, code, the library's message);
* a pytest plugin (fixtures ``nrt_device`` and ``nrt_env``, options ``--nrt-target`` and
  ``--nrt-backend``);
* the locations build systems need: :func:`libdir`, :func:`include_dir`, :func:`shim_path`
  (also ``python -m nrt_emu --cflags --libs``).

>>> import numpy as np, nrt_emu
>>> with nrt_emu.Device(target="trn2") as dev:
...     model = dev.load("add.trn2.neff")
...     out = model(a=np.ones((128, 512), np.float32), b=np.ones((128, 512), np.float32))

bf16 and fp8 tensors are ``ml_dtypes`` arrays when ``ml_dtypes`` is installed, raw bits
otherwise (see :mod:`nrt_emu._dtypes`).
"""

from ._dtypes import have_ml_dtypes
from ._paths import cli_path, include_dir, libdir, libnrt_path, shim_path
from .device import Benchmark, ConformResult, Device, MemoryStats, Model
from .errors import InputError, NrtError
from .spec import TensorSpec

try:
    from importlib.metadata import version as _version

    __version__ = _version("nrt-emu")
except Exception:  # not installed (a source checkout)
    __version__ = "0+unknown"

__all__ = [
    "Benchmark",
    "ConformResult",
    "Device",
    "InputError",
    "MemoryStats",
    "Model",
    "NrtError",
    "TensorSpec",
    "cli_path",
    "have_ml_dtypes",
    "include_dir",
    "libdir",
    "libnrt_path",
    "shim_path",
]
