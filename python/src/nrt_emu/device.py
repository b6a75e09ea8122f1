"""The NumPy API: :class:`Device`, :class:`Model`, and what their calls return.

A :class:`Device` is one libnrt session (``nrt_init`` … ``nrt_close``) on a simulated device or
the driver; every call goes through the C API of the shipped ``libnrt.so.1`` (there is no second
runtime). The library's state is process-wide, so:

* a Device sets the environment libnrt reads (``NRT_EMU_TARGET``, ``NRT_EMU_BACKEND``,
  ``NEURON_RT_VISIBLE_CORES``, and the variables passed as ``env``) for its ``nrt_init`` and then
  restores the previous values — later subprocesses do not inherit them;
* one Device at a time runs in this process. Creating a second while the first is open raises
  ``RuntimeError``, unless the second is ``isolated=True``: an isolated Device — and every
  ``backend="shim"`` Device — runs its session in a worker process of its own, so any number
  can be open at once. Their arrays cross a pipe, which costs time per call.
"""

import os
import subprocess
import tempfile
from dataclasses import dataclass
from statistics import median
from typing import Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _dtypes, _paths
from ._session import LocalSession
from ._worker import RemoteSession
from .errors import InputError
from .spec import TensorSpec

TARGETS = ("trn1", "trn2")
BACKENDS = ("sim", "driver", "shim")

CoresArg = Union[None, int, str, range, Sequence[int]]


def visible_cores_value(cores: CoresArg) -> Optional[str]:
    """``NEURON_RT_VISIBLE_CORES`` for ``cores``: an index, a ``range``, a sequence of
    indices, or the variable's own text."""
    if cores is None:
        return None
    if isinstance(cores, str):
        return cores
    if isinstance(cores, int):
        return str(cores)
    if isinstance(cores, range):
        if len(cores) == 0 or cores.step != 1:
            raise ValueError(f"visible_cores={cores!r}: a range of at least one core, step 1")
        return f"{cores.start}-{cores.stop - 1}"
    items = [int(c) for c in cores]
    if not items:
        raise ValueError("visible_cores: at least one core")
    return ",".join(str(c) for c in items)


def shim_environment(target: str) -> Dict[str, str]:
    """The variables that put a process's driver backend on the device shim for ``target``."""
    preload = os.environ.get("LD_PRELOAD", "")
    shim = _paths.shim_path()
    return {
        "LD_PRELOAD": shim if not preload else f"{shim}:{preload}",
        "NRT_EMU_SHIM_TARGET": target,
    }


@dataclass(frozen=True)
class MemoryStats:
    """``nrt_get_vnc_memory_stats`` of one core."""

    bytes_used: int
    bytes_limit: int


@dataclass(frozen=True)
class Benchmark:
    """What :meth:`Model.benchmark` measured: per execution, the host wall time of
    ``nrt_execute`` and the simulated device time (start to completion on the model's slowest
    core, from the system trace)."""

    iterations: int
    host_ns: Tuple[int, ...]
    device_ns: Tuple[float, ...]
    device_cycles: Tuple[Tuple[int, ...], ...]

    @property
    def host_median_ns(self) -> float:
        return float(median(self.host_ns))

    @property
    def device_median_ns(self) -> float:
        return float(median(self.device_ns)) if self.device_ns else float("nan")

    def __str__(self) -> str:
        return (
            f"{self.iterations} executions: host {self.host_median_ns / 1e3:.1f} us median "
            f"(min {min(self.host_ns) / 1e3:.1f}), device {self.device_median_ns / 1e3:.3f} us"
        )


@dataclass(frozen=True)
class ConformResult:
    """What :meth:`Model.conform` found: ``ok`` when the trace matches the snapshot (or the
    snapshot was written), and the ``nrt-emu conform`` report."""

    ok: bool
    outcome: str  # "matches", "differs" or "updated"
    report: str

    def __bool__(self) -> bool:
        return self.ok


def check_inputs(
    specs: Sequence[TensorSpec], arrays: Mapping[str, object], require_all: bool = True
) -> Dict[str, np.ndarray]:
    """The arrays for a model's inputs, C-contiguous, after checking names, dtypes and shapes;
    :class:`InputError` names the first problem."""
    by_name = {s.name: s for s in specs}
    unknown = [k for k in arrays if k not in by_name]
    if unknown:
        raise InputError(f"the model has no input named {unknown[0]!r} (its inputs: {', '.join(by_name) or 'none'})")
    if require_all:
        missing = [s for s in specs if s.name not in arrays]
        if missing:
            listed = ", ".join(f"{s.name!r} ({s.nrt_dtype} {list(s.shape)})" for s in missing)
            raise InputError(f"missing input{'s' if len(missing) > 1 else ''} {listed}")
    out = {}
    for name, value in arrays.items():
        s = by_name[name]
        a = np.asarray(value)
        if a.dtype != s.dtype:
            raise InputError(f"input {name!r} is {a.dtype}; the model takes {_dtypes.describe(s.nrt_dtype)}")
        if a.shape != s.shape:
            raise InputError(f"input {name!r} has shape {list(a.shape)}; the model takes {list(s.shape)}")
        out[name] = np.ascontiguousarray(a)
    return out


class Device:
    """A libnrt session on a device: ``target`` ``"trn1"`` or ``"trn2"``; ``backend`` ``"sim"``
    (the simulator), ``"driver"`` (the kernel driver on ``/dev/neuron0``: real hardware, or a
    process already under the device shim) or ``"shim"`` (the driver backend under the shipped
    device shim, in a worker process); ``visible_cores`` the cores it uses
    (``NEURON_RT_VISIBLE_CORES``: an index, a range, a list or the variable's text; ``None``
    leaves the variable as the environment has it); ``env`` further ``NEURON_RT_*`` variables
    for ``nrt_init`` (``None`` values remove one).

    Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        target: str = "trn2",
        backend: str = "sim",
        visible_cores: CoresArg = None,
        *,
        env: Optional[Mapping[str, Optional[str]]] = None,
        isolated: bool = False,
        mirror_log: bool = True,
    ):
        if target not in TARGETS:
            raise ValueError(f"target={target!r}: expected one of {', '.join(TARGETS)}")
        if backend not in BACKENDS:
            raise ValueError(f"backend={backend!r}: expected one of {', '.join(BACKENDS)}")
        self.target = target
        self.backend = backend
        settings: Dict[str, Optional[str]] = {
            "NRT_EMU_TARGET": target,
            "NRT_EMU_BACKEND": "sim" if backend == "sim" else "driver",
        }
        cores = visible_cores_value(visible_cores)
        if cores is not None:
            settings["NEURON_RT_VISIBLE_CORES"] = cores
        settings.update(env or {})
        self._models: Dict[int, "Model"] = {}
        if backend == "shim" or isolated:
            process_env = shim_environment(target) if backend == "shim" else {}
            self._session = RemoteSession(process_env, settings, mirror_log)
        else:
            self._session = LocalSession(settings, mirror_log)
        info = self._session.info()
        self.total_cores: int = info["total_vnc_count"]
        self.visible_cores: int = info["visible_vnc_count"]
        self.version: str = info["version"]
        self.log_path: Optional[str] = info["log_path"]

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.visible_cores} of {self.total_cores} cores"
        return f"Device(target={self.target!r}, backend={self.backend!r}; {state})"

    @property
    def closed(self) -> bool:
        return self._session.closed

    def load(self, neff: Union[str, "os.PathLike[str]", bytes, bytearray, memoryview], vnc: int = -1) -> "Model":
        """Loads a NEFF (a path, or its bytes) onto visible core ``vnc`` (-1: the first free
        one)."""
        path = None
        if isinstance(neff, (str, os.PathLike)):
            path = os.fspath(neff)
            with open(path, "rb") as f:
                data = f.read()
        else:
            data = bytes(neff)
        loaded = self._session.load(data, int(vnc))
        model = Model(self, loaded, data, path)
        self._models[loaded["id"]] = model
        return model

    def memory_stats(self, vnc: int = 0) -> MemoryStats:
        """Device memory used and available on visible core ``vnc``."""
        used, limit = self._session.memory_stats(int(vnc))
        return MemoryStats(used, limit)

    def close(self) -> None:
        """Unloads every model and ends the session (``nrt_close``)."""
        for m in list(self._models.values()):
            m._loaded = False
        self._models.clear()
        self._session.close()

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Model:
    """A loaded NEFF. ``inputs`` and ``outputs`` are its tensors (name, dtype, shape, …) in the
    order the model lists them; calling it with one array per input returns its outputs."""

    def __init__(self, device: Device, loaded: dict, neff: bytes, path: Optional[str]):
        self.device = device
        self._id = loaded["id"]
        self.vnc: int = loaded["vnc"]
        specs = loaded["specs"]
        self.inputs: Tuple[TensorSpec, ...] = tuple(s for s in specs if s.usage == "input")
        self.outputs: Tuple[TensorSpec, ...] = tuple(s for s in specs if s.usage == "output")
        self._neff = neff
        self._path = path
        self._loaded = True

    def __repr__(self) -> str:
        io = ", ".join(f"{s.name}: {s.nrt_dtype}{list(s.shape)}" for s in self.inputs)
        return f"Model(vnc={self.vnc}, inputs=({io}), outputs={[s.name for s in self.outputs]})"

    def _session(self):
        if not self._loaded:
            raise RuntimeError("the model was unloaded (or its Device closed)")
        return self.device._session

    def __call__(self, **arrays) -> Dict[str, np.ndarray]:
        """Executes once: one array per input (exact dtype and shape), one array per output
        back."""
        return self._session().run(self._id, check_inputs(self.inputs, arrays))

    def _optional_inputs(self, arrays: Mapping[str, object]) -> Dict[str, np.ndarray]:
        # No arrays at all: zeros. Some: all of them, as for a call.
        return check_inputs(self.inputs, arrays, require_all=bool(arrays))

    def benchmark(self, iterations: int = 100, **arrays) -> Benchmark:
        """Executes ``iterations`` times (inputs as for a call, zeros when none are given) and
        measures each execution's host wall time and simulated device time."""
        if iterations < 1:
            raise ValueError("iterations must be at least 1")
        r = self._session().benchmark(self._id, int(iterations), self._optional_inputs(arrays))
        return Benchmark(
            iterations=int(iterations),
            host_ns=tuple(r["host_ns"]),
            device_ns=tuple(max(ns) for ns in r["device_ns"]),
            device_cycles=tuple(tuple(c) for c in r["device_cycles"]),
        )

    def trace(self, path: Union[str, "os.PathLike[str]"], **arrays) -> Dict[str, np.ndarray]:
        """Executes once under ``nrt_profile_start``/``nrt_profile_stop``, writing the device
        timeline (Chrome/Perfetto trace JSON: a track per engine and DMA queue) to ``path``;
        inputs as for :meth:`benchmark`. The driver backend has no timeline (``NrtError``
        ``NRT_INVALID``)."""
        return self._session().profile(self._id, os.fspath(path), self._optional_inputs(arrays))

    def conform(
        self, snapshot: Union[str, "os.PathLike[str]"], *, update: bool = False, seed: Optional[int] = None
    ) -> ConformResult:
        """Records this NEFF's device-facing trace (load and two executions with seeded inputs:
        descriptors, doorbells, semaphores; symbolic addresses) with the shipped ``nrt-emu
        conform`` on this Device's target and backend, and compares it with ``snapshot`` — or
        writes it there with ``update=True``."""
        with tempfile.TemporaryDirectory(prefix="nrt-emu-conform-") as tmp:
            path = self._path
            if path is None:
                path = os.path.join(tmp, "model.neff")
                with open(path, "wb") as f:
                    f.write(self._neff)
            cmd = [
                _paths.cli_path(),
                "conform",
                path,
                "--target",
                self.device.target,
                "--backend",
                "sim" if self.device.backend == "sim" else "driver",
                "--snapshot",
                os.fspath(snapshot),
            ]
            if update:
                cmd.append("--update")
            if seed is not None:
                cmd += ["--seed", str(seed)]
            env = dict(os.environ)
            if self.device.backend == "shim":
                env.update(shim_environment(self.device.target))
            p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if p.returncode not in (0, 1):
            raise RuntimeError(f"nrt-emu conform failed (exit status {p.returncode}): {p.stderr.strip()}")
        outcome = "updated" if update else ("matches" if p.returncode == 0 else "differs")
        return ConformResult(ok=p.returncode == 0, outcome=outcome, report=p.stdout)

    def unload(self) -> None:
        """Unloads the model (``nrt_unload``) and frees its tensors."""
        session = self._session()
        self._loaded = False
        self.device._models.pop(self._id, None)
        session.unload(self._id)

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc) -> None:
        if self._loaded:
            self.unload()
