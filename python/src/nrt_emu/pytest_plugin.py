"""The pytest plugin (entry point ``pytest11``, name ``nrt_emu``), on as soon as the wheel is
installed.

Fixtures:

* ``nrt_device`` — an open :class:`~nrt_emu.Device`. A test that asks for it runs once per
  device the options select: ``--nrt-target trn1|trn2|all|trn1,trn2``
  (default trn2) × ``--nrt-backend sim|shim|all`` (default sim; ``shim`` = the driver backend
  under the shipped device shim). A test can choose for itself with
  ``@pytest.mark.parametrize("nrt_device", ["trn1-sim", "trn2-shim"], indirect=True)``.
  A process has one libnrt session in its life (a second ``nrt_init`` after ``nrt_close``
  answers ``NRT_CLOSED``), so each device is an isolated Device (a worker process) opened at
  its first use and kept for the whole run; after each test the models it left loaded are
  unloaded. ``nrt_devices.get(target, backend)`` (session scope) hands out the same devices to
  tests that choose one per case.
* ``nrt_env`` — the environment for programs that use the drop-in library themselves: a
  ``dict`` (a copy of ``os.environ`` with ``LD_LIBRARY_PATH`` led by the wheel's library
  directory and ``NRT_EMU_TARGET``/``NRT_EMU_BACKEND`` set) to pass to ``subprocess`` as
  ``env=``; it is also set in ``os.environ`` for the test, and ``libnrt.so.1`` is loaded into
  the test process by its path, so ``ctypes.CDLL("libnrt.so.1")`` in the test finds it (the
  dynamic linker reads ``LD_LIBRARY_PATH`` only when a process starts).
  ``nrt_env.under_shim()`` is the same environment for the driver backend under the shim.

The fixture's devices leave the test process's own libnrt untouched; but that, too, allows one
``nrt_init`` … ``nrt_close`` per process, so a program that initialises the library is best run
as a subprocess with ``env=nrt_env``.
"""

import os
from typing import List, Optional, Tuple

import pytest

from . import _capi, _paths
from .device import BACKENDS, TARGETS, Device, shim_environment

_FIXTURE_BACKENDS = ("sim", "shim")


def pytest_addoption(parser) -> None:
    group = parser.getgroup("nrt-emu")
    group.addoption(
        "--nrt-target",
        default="trn2",
        help="targets of the nrt_device fixture: trn1, trn2, all, or a comma list (default trn2)",
    )
    group.addoption(
        "--nrt-backend",
        default="sim",
        help="backends of the nrt_device fixture: sim, shim (the driver under the device shim), all, "
        "or a comma list (default sim)",
    )


def _choices(value: str, allowed: Tuple[str, ...], option: str) -> List[str]:
    items = list(allowed) if value.strip() == "all" else [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in items if v not in allowed]
    if bad or not items:
        raise pytest.UsageError(f"{option} {value!r}: expected {', '.join(allowed)}, all, or a comma list")
    return items


def selected_targets(config) -> List[str]:
    """The targets ``--nrt-target`` selects."""
    return _choices(config.getoption("--nrt-target"), TARGETS, "--nrt-target")


def selected_devices(config) -> List[str]:
    """``target-backend`` for every device the options select."""
    backends = _choices(config.getoption("--nrt-backend"), _FIXTURE_BACKENDS, "--nrt-backend")
    return [f"{t}-{b}" for t in selected_targets(config) for b in backends]


def _parametrized_by_test(metafunc) -> bool:
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", "")
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if "nrt_device" in names:
            return True
    return False


def pytest_generate_tests(metafunc) -> None:
    if "nrt_device" in metafunc.fixturenames and not _parametrized_by_test(metafunc):
        devices = selected_devices(metafunc.config)
        metafunc.parametrize("nrt_device", devices, indirect=True, ids=devices)


def parse_device(param: Optional[str]) -> Tuple[str, str]:
    """``"trn1-sim"``, ``"trn2-shim"``, ``"trn1"`` → (target, backend)."""
    target, _, backend = (param or "trn2-sim").partition("-")
    backend = backend or "sim"
    if target not in TARGETS or backend not in BACKENDS:
        raise pytest.UsageError(
            f"nrt_device parameter {param!r}: expected TARGET-BACKEND, "
            f"TARGET one of {TARGETS} and BACKEND one of {BACKENDS}"
        )
    return target, backend


class _Devices:
    """The run's devices, one per ``target-backend``, opened at first use."""

    def __init__(self):
        self._open = {}

    def get(self, target: str, backend: str) -> Device:
        key = (target, backend)
        if key not in self._open:
            self._open[key] = Device(target=target, backend=backend, isolated=True)
        return self._open[key]

    def close(self) -> None:
        for d in self._open.values():
            d.close()
        self._open.clear()


@pytest.fixture(scope="session")
def nrt_devices():
    """The run's devices: ``nrt_devices.get(target, backend)`` is the open isolated Device the
    ``nrt_device`` fixture also hands out, for tests that pick the device themselves."""
    devices = _Devices()
    try:
        yield devices
    finally:
        devices.close()


@pytest.fixture
def nrt_device(request, nrt_devices):
    """An open Device (see the module docs for how tests get one per target and backend)."""
    target, backend = parse_device(getattr(request, "param", None))
    device = nrt_devices.get(target, backend)
    yield device
    for model in list(device._models.values()):
        model.unload()


class NrtEnv(dict):
    """An environment that makes a program use the drop-in ``libnrt.so.1``."""

    def __init__(self, base, target: str):
        super().__init__(base)
        self.target = target
        self.libdir = _paths.libdir()
        self.include_dir = _paths.include_dir()
        self.shim = _paths.shim_path()

    def under_shim(self) -> "NrtEnv":
        """This environment with the driver backend on the device shim (``LD_PRELOAD``)."""
        env = NrtEnv(self, self.target)
        env.update(shim_environment(self.target))
        env["NRT_EMU_BACKEND"] = "driver"
        return env


@pytest.fixture
def nrt_env(request, monkeypatch) -> NrtEnv:
    """The drop-in library's environment, set for the test and returned for subprocesses."""
    target = selected_targets(request.config)[0]
    old = os.environ.get("LD_LIBRARY_PATH")
    monkeypatch.setenv("LD_LIBRARY_PATH", _paths.libdir() + (f":{old}" if old else ""))
    monkeypatch.setenv("NRT_EMU_TARGET", target)
    monkeypatch.setenv("NRT_EMU_BACKEND", "sim")
    _capi.library()
    return NrtEnv(os.environ, target)
