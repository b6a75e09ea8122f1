"""A model's input or output, as ``nrt_get_model_tensor_info`` describes it."""

from typing import NamedTuple, Tuple

import numpy as np


class TensorSpec(NamedTuple):
    """One input or output of a model."""

    name: str
    usage: str  # "input" or "output"
    dtype: np.dtype  # the NumPy dtype of its arrays (see nrt_emu._dtypes)
    shape: Tuple[int, ...]
    nrt_dtype: str  # the NEFF dtype name: "float32", "bfloat16", "float8e4", ...
    size: int  # bytes of the device tensor
