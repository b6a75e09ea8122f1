"""``nrt_dtype_t`` values and the NumPy dtypes arrays of each have.

bf16 and the fp8 formats have no NumPy dtype of their own: with ``ml_dtypes`` installed they are
``ml_dtypes.bfloat16``, ``float8_e4m3fn`` (NKI's e4m3: bias 7, no infinities, largest 448) and
``float8_e5m2``; without it, their raw bits as ``uint16`` / ``uint8``. fp8 e3m4 is always raw
bits: this platform's e3m4 saturates at 30 with no infinities, while ``ml_dtypes.float8_e3m4``
is IEEE-like (largest 15.5), so no installed type has its values. fp32r is stored as float32.
"""

from typing import Dict, NamedTuple, Optional

import numpy as np

try:  # optional: the exact types of bf16 and fp8 tensors
    import ml_dtypes as _ml
except ImportError:  # raw bits instead
    _ml = None


class DtypeInfo(NamedTuple):
    """One ``nrt_dtype_t`` value."""

    code: int
    name: str  # the NEFF name ("float32", "bfloat16", "float8e4")
    raw: np.dtype  # the storage the bits fit in
    ml: Optional[str]  # the ml_dtypes type with these values, if any


_TABLE = [
    DtypeInfo(0x1, "uint64", np.dtype("<u8"), None),
    DtypeInfo(0x2, "int8", np.dtype("i1"), None),
    DtypeInfo(0x3, "uint8", np.dtype("u1"), None),
    DtypeInfo(0x4, "int16", np.dtype("<i2"), None),
    DtypeInfo(0x5, "uint16", np.dtype("<u2"), None),
    DtypeInfo(0x6, "bfloat16", np.dtype("<u2"), "bfloat16"),
    DtypeInfo(0x7, "float16", np.dtype("<f2"), None),
    DtypeInfo(0x8, "int32", np.dtype("<i4"), None),
    DtypeInfo(0x9, "uint32", np.dtype("<u4"), None),
    DtypeInfo(0xA, "float32", np.dtype("<f4"), None),
    DtypeInfo(0xB, "float32r", np.dtype("<f4"), None),
    DtypeInfo(0xC, "int64", np.dtype("<i8"), None),
    DtypeInfo(0xD, "float8e3", np.dtype("u1"), None),
    DtypeInfo(0xE, "float8e4", np.dtype("u1"), "float8_e4m3fn"),
    DtypeInfo(0xF, "float8e5", np.dtype("u1"), "float8_e5m2"),
]

BY_CODE: Dict[int, DtypeInfo] = {d.code: d for d in _TABLE}


def have_ml_dtypes() -> bool:
    """Whether bf16 and fp8 arrays use ``ml_dtypes`` types."""
    return _ml is not None


def numpy_dtype(code: int) -> np.dtype:
    """The NumPy dtype of arrays of ``nrt_dtype_t`` ``code``."""
    info = BY_CODE.get(code)
    if info is None:
        raise ValueError(f"nrt_dtype_t value {code} is not a tensor dtype")
    if info.ml is not None and _ml is not None:
        return np.dtype(getattr(_ml, info.ml))
    return info.raw


BY_NAME: Dict[str, DtypeInfo] = {d.name: d for d in _TABLE}


def describe(name: str) -> str:
    """How an array of the NEFF dtype ``name`` is given, for error messages."""
    info = BY_NAME[name]
    dt = numpy_dtype(info.code)
    if info.ml is not None and _ml is None:
        return f"{name} as raw bits ({dt.name}; with ml_dtypes installed: ml_dtypes.{info.ml})"
    if dt.name == name:
        return name
    return f"{name} ({dt.name})"
