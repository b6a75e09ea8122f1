"""The process's libnrt session: ``nrt_init`` with the environment a Device asks for, and the
calls the NumPy API makes, each checked (a failed status raises :class:`NrtError` with the
library's message).

libnrt's state is process-wide and, as in AWS's library, a process has one ``nrt_init`` …
``nrt_close`` lifetime: after ``nrt_close`` every call, ``nrt_init`` included, answers
``NRT_CLOSED``. So a process holds at most one LocalSession, ever; every further Device runs
its session in a worker process (``_worker``), which serves the same methods over a pipe.
"""

import contextlib
import ctypes
import itertools
import json
import os
import shutil
import tempfile
import threading
import time
from ctypes import byref, c_size_t, c_uint32, c_void_p
from typing import Dict, Iterator, List, Mapping, Optional

import numpy as np

from . import _capi, _dtypes
from ._log import LogTap
from .errors import NrtError
from .spec import TensorSpec

_open_lock = threading.Lock()
_open: Optional["LocalSession"] = None
_used = False  # whether this process's libnrt session was ever opened


@contextlib.contextmanager
def environment(settings: Mapping[str, Optional[str]]) -> Iterator[None]:
    """Sets (or, for ``None``, removes) variables for the duration; then restores them."""
    saved = {k: os.environ.get(k) for k in settings}
    try:
        for k, v in settings.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class _Loaded:
    """A loaded model and the device tensors its executions use."""

    def __init__(self, handle: c_void_p, vnc: int, specs: List[TensorSpec]):
        self.handle = handle
        self.vnc = vnc
        self.specs = specs
        self.tensors: Dict[str, c_void_p] = {}
        self.in_set = c_void_p()
        self.out_set = c_void_p()
        self.lock = threading.Lock()

    @property
    def inputs(self) -> List[TensorSpec]:
        return [s for s in self.specs if s.usage == "input"]

    @property
    def outputs(self) -> List[TensorSpec]:
        return [s for s in self.specs if s.usage == "output"]


class LocalSession:
    """libnrt in this process, between ``nrt_init`` and ``nrt_close``."""

    def __init__(self, env: Mapping[str, Optional[str]], mirror_log: bool = True):
        global _open, _used
        with _open_lock:
            if _open is not None:
                raise RuntimeError(
                    "a Device is already open in this process (libnrt's state is process-wide): "
                    "pass isolated=True to run the new Device in a worker process"
                )
            if _used:
                raise RuntimeError(
                    "this process's libnrt session was opened before (libnrt allows one nrt_init … "
                    "nrt_close per process; a second nrt_init answers NRT_CLOSED): pass isolated=True "
                    "to run the new Device in a worker process"
                )
            _open = self
        self._lib = _capi.library()
        self._models: Dict[int, _Loaded] = {}
        self._ids = itertools.count(1)
        self._log_dir = None
        settings = dict(env)
        if "NEURON_RT_LOG_LOCATION_NRT" in os.environ or "NEURON_RT_LOG_LOCATION_NRT" in settings:
            location = settings.get("NEURON_RT_LOG_LOCATION_NRT", os.environ.get("NEURON_RT_LOG_LOCATION_NRT"))
            path = location if location and location.upper() not in ("CONSOLE", "SYSLOG") else None
        else:
            self._log_dir = tempfile.mkdtemp(prefix="nrt-emu-log-")
            path = os.path.join(self._log_dir, "nrt.log")
            settings["NEURON_RT_LOG_LOCATION_NRT"] = path
        self.log = LogTap(path, mirror=mirror_log)
        self.log_path = path
        try:
            with environment(settings):
                self._check(self._lib.nrt_init(_capi.NRT_FRAMEWORK_TYPE_NO_FW, b"", b""), "nrt_init")
        except BaseException:
            self._forget()  # a failed nrt_init leaves the library uninitialised: it may be retried
            raise
        _used = True
        self.closed = False

    # -- plumbing ---------------------------------------------------------------------------

    def _check(self, status: int, function: str) -> None:
        if status == _capi.NRT_SUCCESS:
            return
        name = _capi.status_name(status)
        raise NrtError(name, status, self.log.error_of(function, name), function)

    def _forget(self) -> None:
        global _open
        self.log.drain()
        if self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)
            self._log_dir = None
        with _open_lock:
            if _open is self:
                _open = None

    def _model(self, mid: int) -> _Loaded:
        m = self._models.get(mid)
        if m is None:
            raise NrtError("NRT_INVALID", 2, f"model {mid} is not loaded (unloaded already?)")
        return m

    def _count(self, function: str) -> int:
        n = c_uint32()
        self._check(getattr(self._lib, function)(byref(n)), function)
        return n.value

    # -- the session ------------------------------------------------------------------------

    def info(self) -> dict:
        """Core counts and the library's version."""
        v = _capi.Version()
        self._check(self._lib.nrt_get_version(byref(v), ctypes.sizeof(v)), "nrt_get_version")
        return {
            "total_vnc_count": self._count("nrt_get_total_vnc_count"),
            "visible_vnc_count": self._count("nrt_get_visible_vnc_count"),
            "version": v.rt_detail.decode(errors="replace"),
            "log_path": self.log_path,
        }

    def close(self) -> None:
        """Unloads what is loaded (``nrt_close`` frees the rest) and ends the session."""
        if getattr(self, "closed", True):
            return
        for mid in list(self._models):
            with contextlib.suppress(NrtError):
                self.unload(mid)
        self._lib.nrt_close()
        self.closed = True
        self._forget()

    def memory_stats(self, vnc: int) -> tuple:
        """``nrt_get_vnc_memory_stats``: (bytes used, bytes limit)."""
        stats = _capi.VncMemoryStats()
        out = c_size_t()
        self._check(
            self._lib.nrt_get_vnc_memory_stats(vnc, byref(stats), ctypes.sizeof(stats), byref(out)),
            "nrt_get_vnc_memory_stats",
        )
        return stats.bytes_used, stats.bytes_limit

    # -- models -----------------------------------------------------------------------------

    def load(self, neff: bytes, vnc: int) -> dict:
        """``nrt_load``, the model's IO (``nrt_get_model_tensor_info``) and one device tensor per
        IO tensor on the model's core, bound into an input and an output set."""
        handle = c_void_p()
        self._check(self._lib.nrt_load(neff, len(neff), vnc, -1, byref(handle)), "nrt_load")
        m = None
        try:
            info = _capi.ModelInfo()
            out = c_size_t()
            self._check(
                self._lib.nrt_get_model_info(handle, byref(info), ctypes.sizeof(info), byref(out)),
                "nrt_get_model_info",
            )
            m = _Loaded(handle, info.vnc, self._tensor_info(handle))
            self._bind(m)
        except BaseException:
            if m is not None:
                self._release(m)
            self._lib.nrt_unload(handle)
            raise
        mid = next(self._ids)
        self._models[mid] = m
        return {"id": mid, "vnc": m.vnc, "specs": m.specs}

    def _tensor_info(self, handle: c_void_p) -> List[TensorSpec]:
        arr = c_void_p()
        self._check(self._lib.nrt_get_model_tensor_info(handle, byref(arr)), "nrt_get_model_tensor_info")
        try:
            count = c_uint64_at(arr.value)
            entries = (_capi.TensorInfo * count).from_address(arr.value + 8)
            specs = []
            usages = {_capi.NRT_TENSOR_USAGE_INPUT: "input", _capi.NRT_TENSOR_USAGE_OUTPUT: "output"}
            for e in entries:
                usage = usages.get(e.usage)
                info = _dtypes.BY_CODE.get(e.dtype)
                if usage is None or info is None:
                    raise NrtError(
                        "NRT_INVALID",
                        2,
                        f"tensor {e.name!r} has usage {e.usage} and nrt_dtype_t {e.dtype}: not a tensor this API knows",
                        "nrt_get_model_tensor_info",
                    )
                specs.append(
                    TensorSpec(
                        name=e.name.decode(),
                        usage=usage,
                        dtype=_dtypes.numpy_dtype(e.dtype),
                        shape=tuple(e.shape[i] for i in range(e.ndim)),
                        nrt_dtype=info.name,
                        size=e.size,
                    )
                )
            return specs
        finally:
            self._lib.nrt_free_model_tensor_info(arr)

    def _bind(self, m: _Loaded) -> None:
        lib = self._lib
        self._check(lib.nrt_allocate_tensor_set(byref(m.in_set)), "nrt_allocate_tensor_set")
        self._check(lib.nrt_allocate_tensor_set(byref(m.out_set)), "nrt_allocate_tensor_set")
        for s in m.specs:
            t = c_void_p()
            name = s.name.encode()
            self._check(
                lib.nrt_tensor_allocate(_capi.NRT_TENSOR_PLACEMENT_DEVICE, m.vnc, s.size, name, byref(t)),
                "nrt_tensor_allocate",
            )
            m.tensors[s.name] = t
            target = m.in_set if s.usage == "input" else m.out_set
            self._check(lib.nrt_add_tensor_to_tensor_set(target, name, t), "nrt_add_tensor_to_tensor_set")

    def _release(self, m: _Loaded) -> None:
        for t in m.tensors.values():
            self._lib.nrt_tensor_free(byref(t))
        m.tensors.clear()
        for s in (m.in_set, m.out_set):
            if s.value:
                self._lib.nrt_destroy_tensor_set(byref(s))

    def unload(self, mid: int) -> None:
        """Frees the model's tensors and ``nrt_unload``s it."""
        m = self._model(mid)
        with m.lock:
            del self._models[mid]
            self._release(m)
            self._check(self._lib.nrt_unload(m.handle), "nrt_unload")

    # -- execution --------------------------------------------------------------------------

    def _write_inputs(self, m: _Loaded, arrays: Mapping[str, np.ndarray]) -> None:
        write = self._lib.nrt_tensor_write
        for s in m.inputs:
            a = arrays.get(s.name)
            if a is None:  # benchmark and trace without inputs: zeros
                self._check(self._lib.nrt_tensor_write(m.tensors[s.name], bytes(s.size), 0, s.size), "nrt_tensor_write")
                continue
            st = write(m.tensors[s.name], a.ctypes.data, 0, min(a.nbytes, s.size))
            if st:
                self._check(st, "nrt_tensor_write")

    def _read_outputs(self, m: _Loaded) -> Dict[str, np.ndarray]:
        read = self._lib.nrt_tensor_read
        out = {}
        for s in m.outputs:
            a = np.empty(s.shape, s.dtype)
            st = read(m.tensors[s.name], a.ctypes.data, 0, min(a.nbytes, s.size))
            if st:
                self._check(st, "nrt_tensor_read")
            out[s.name] = a
        return out

    def _execute(self, m: _Loaded) -> None:
        st = self._lib.nrt_execute(m.handle, m.in_set, m.out_set)
        if st:
            self._check(st, "nrt_execute")

    def run(self, mid: int, arrays: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
        """Writes the inputs (checked, C-contiguous arrays), executes, reads the outputs."""
        m = self._model(mid)
        with m.lock:
            self._write_inputs(m, arrays)
            self._execute(m)
            return self._read_outputs(m)

    def profile(self, mid: int, path: str, arrays: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
        """One execution between ``nrt_profile_start`` and ``nrt_profile_stop``: the device
        timeline as Perfetto-readable JSON at ``path``."""
        m = self._model(mid)
        p = os.fsencode(path)
        with m.lock:
            self._write_inputs(m, arrays)
            self._check(self._lib.nrt_profile_start(m.handle, p), "nrt_profile_start")
            try:
                self._execute(m)
            finally:
                self._check(self._lib.nrt_profile_stop(p), "nrt_profile_stop")
            return self._read_outputs(m)

    def benchmark(self, mid: int, iterations: int, arrays: Mapping[str, np.ndarray]) -> dict:
        """``iterations`` executions under the system trace: each ``nrt_execute``'s host wall
        time, and its device time from the trace's ``nc_exec`` events."""
        m = self._model(mid)
        lib = self._lib
        cfg = c_void_p()
        self._check(lib.nrt_sys_trace_config_allocate(byref(cfg)), "nrt_sys_trace_config_allocate")
        try:
            for kind in (b"model_load", b"model_unload", b"async_tensor_op", b"async_exec_schedule"):
                self._check(
                    lib.nrt_sys_trace_config_set_capture_enabled_for_event_type(cfg, kind, False),
                    "nrt_sys_trace_config_set_capture_enabled_for_event_type",
                )
            host: List[int] = []
            with m.lock:
                self._write_inputs(m, arrays)
                self._check(lib.nrt_sys_trace_start(cfg), "nrt_sys_trace_start")
                try:
                    for _ in range(iterations):
                        t0 = time.perf_counter_ns()
                        st = lib.nrt_execute(m.handle, m.in_set, m.out_set)
                        host.append(time.perf_counter_ns() - t0)
                        if st:
                            self._check(st, "nrt_execute")
                    events = self._fetch_events()
                finally:
                    self._check(lib.nrt_sys_trace_stop(), "nrt_sys_trace_stop")
        finally:
            lib.nrt_sys_trace_config_free(cfg)
        mine = [
            e
            for e in events
            if e.get("event_type") == "nc_exec" and e.get("nc_idx") == m.vnc and e.get("status_code") == 0
        ]
        return {
            "host_ns": host,
            "device_cycles": [e["device_cycles"] for e in mine],
            "device_ns": [e["device_ns"] for e in mine],
        }

    def _fetch_events(self) -> list:
        buf = c_void_p()
        size = c_size_t()
        self._check(self._lib.nrt_sys_trace_fetch_events(byref(buf), byref(size), None), "nrt_sys_trace_fetch_events")
        try:
            doc = ctypes.string_at(buf.value, size.value)
        finally:
            self._lib.nrt_sys_trace_buffer_free(buf)
        return json.loads(doc)["events"]


def c_uint64_at(address: int) -> int:
    """The ``uint64_t`` at ``address``."""
    return ctypes.c_uint64.from_address(address).value
