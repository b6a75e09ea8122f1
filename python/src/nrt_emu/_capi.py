"""ctypes bindings of the shipped ``libnrt.so.1``: the C functions this package calls with their
argument and result types, and the structs they fill (layouts of ``nrt/nrt.h``,
``nrt/nrt_experimental.h`` and ``nrt/nrt_version.h``).

The library is loaded once per process by its path in the wheel, with ``RTLD_GLOBAL``; a later
``ctypes.CDLL("libnrt.so.1")`` or a C extension linked with ``-lnrt`` then resolves to this same
copy (the dynamic linker matches the SONAME), so they all share one runtime session.
"""

import ctypes
import threading
from ctypes import POINTER, c_bool, c_char, c_char_p, c_int, c_int32, c_size_t, c_uint32, c_uint64, c_void_p

from . import _paths

NRT_SUCCESS = 0
NRT_FRAMEWORK_TYPE_NO_FW = 1
NRT_TENSOR_PLACEMENT_DEVICE = 0
NRT_TENSOR_USAGE_INPUT = 0
NRT_TENSOR_USAGE_OUTPUT = 1


class TensorInfo(ctypes.Structure):
    """``nrt_tensor_info_t``."""

    _fields_ = [
        ("name", c_char * 256),
        ("usage", c_uint32),
        ("size", c_size_t),
        ("dtype", c_uint32),
        ("shape", POINTER(c_uint32)),
        ("ndim", c_uint32),
    ]


class ModelInfo(ctypes.Structure):
    """``nrt_model_info_t``."""

    _fields_ = [("vnc", c_uint32)]


class VncMemoryStats(ctypes.Structure):
    """``nrt_vnc_memory_stats_t``."""

    _fields_ = [("bytes_used", c_size_t), ("bytes_limit", c_size_t)]


class Version(ctypes.Structure):
    """``nrt_version_t``."""

    _fields_ = [
        ("rt_major", c_uint64),
        ("rt_minor", c_uint64),
        ("rt_patch", c_uint64),
        ("rt_maintenance", c_uint64),
        ("rt_detail", c_char * 128),
        ("git_hash", c_char * 64),
    ]


_P = POINTER(c_void_p)

# name: (result type, argument types)
SIGNATURES = {
    "nrt_init": (c_int, [c_uint32, c_char_p, c_char_p]),
    "nrt_close": (None, []),
    "nrt_get_version": (c_int, [POINTER(Version), c_size_t]),
    "nrt_get_status_as_str": (c_char_p, [c_int]),
    "nrt_get_total_vnc_count": (c_int, [POINTER(c_uint32)]),
    "nrt_get_visible_vnc_count": (c_int, [POINTER(c_uint32)]),
    "nrt_load": (c_int, [c_char_p, c_size_t, c_int32, c_int32, _P]),
    "nrt_unload": (c_int, [c_void_p]),
    "nrt_get_model_info": (c_int, [c_void_p, POINTER(ModelInfo), c_size_t, POINTER(c_size_t)]),
    "nrt_get_model_tensor_info": (c_int, [c_void_p, _P]),
    "nrt_free_model_tensor_info": (c_int, [c_void_p]),
    "nrt_allocate_tensor_set": (c_int, [_P]),
    "nrt_destroy_tensor_set": (None, [_P]),
    "nrt_add_tensor_to_tensor_set": (c_int, [c_void_p, c_char_p, c_void_p]),
    "nrt_tensor_allocate": (c_int, [c_uint32, c_int, c_size_t, c_char_p, _P]),
    "nrt_tensor_free": (None, [_P]),
    "nrt_tensor_write": (c_int, [c_void_p, c_void_p, c_size_t, c_size_t]),
    "nrt_tensor_read": (c_int, [c_void_p, c_void_p, c_size_t, c_size_t]),
    "nrt_execute": (c_int, [c_void_p, c_void_p, c_void_p]),
    "nrt_get_vnc_memory_stats": (c_int, [c_uint32, POINTER(VncMemoryStats), c_size_t, POINTER(c_size_t)]),
    "nrt_profile_start": (c_int, [c_void_p, c_char_p]),
    "nrt_profile_stop": (c_int, [c_char_p]),
    "nrt_sys_trace_config_allocate": (c_int, [_P]),
    "nrt_sys_trace_config_free": (None, [c_void_p]),
    "nrt_sys_trace_config_set_capture_enabled_for_event_type": (c_int, [c_void_p, c_char_p, c_bool]),
    "nrt_sys_trace_start": (c_int, [c_void_p]),
    "nrt_sys_trace_stop": (c_int, []),
    "nrt_sys_trace_fetch_events": (c_int, [_P, POINTER(c_size_t), c_void_p]),
    "nrt_sys_trace_buffer_free": (None, [c_void_p]),
}

_lock = threading.Lock()
_lib = None


def library() -> ctypes.CDLL:
    """The process's ``libnrt.so.1`` with the signatures above set."""
    global _lib
    with _lock:
        if _lib is None:
            lib = ctypes.CDLL(_paths.libnrt_path(), mode=ctypes.RTLD_GLOBAL)
            for name, (res, args) in SIGNATURES.items():
                f = getattr(lib, name)
                f.restype = res
                f.argtypes = args
            _lib = lib
        return _lib


def status_name(code: int) -> str:
    """``nrt_get_status_as_str``."""
    name = library().nrt_get_status_as_str(code)
    return name.decode() if name else f"NRT_STATUS_{code}"
