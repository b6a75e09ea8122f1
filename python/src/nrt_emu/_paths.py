"""Where the files the wheel ships are: the drop-in library, its headers, the device shim and
the ``nrt-emu`` command."""

import os
import shutil
import sys
import sysconfig
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def libdir() -> str:
    """The directory holding ``libnrt.so.1`` and ``libnrt.so`` (for ``-L``, ``LD_LIBRARY_PATH``
    and ``ctypes``)."""
    return str(_PACKAGE / "lib")


def include_dir() -> str:
    """The directory holding ``nrt/*.h`` and ``ndl/*.h`` (for ``-I``)."""
    return str(_PACKAGE / "include")


def libnrt_path() -> str:
    """The drop-in ``libnrt.so.1``."""
    return str(_PACKAGE / "lib" / "libnrt.so.1")


def shim_path() -> str:
    """The device shim ``libnrt_emu_shim.so`` (``LD_PRELOAD`` it to make ``/dev/neuron0``
    appear, answered by the simulator)."""
    return str(_PACKAGE / "lib" / "libnrt_emu_shim.so")


def cli_path() -> str:
    """The ``nrt-emu`` command the wheel installed as a script of this Python environment."""
    names = []
    scripts = sysconfig.get_path("scripts")
    if scripts:
        names.append(Path(scripts) / "nrt-emu")
    names.append(Path(sys.executable).parent / "nrt-emu")
    for candidate in names:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("nrt-emu")
    if found:
        return found
    raise FileNotFoundError(
        "the nrt-emu command is not installed next to this Python "
        f"({', '.join(str(n) for n in names)}) nor on PATH: reinstall the nrt-emu wheel"
    )
