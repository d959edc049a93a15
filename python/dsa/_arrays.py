"""numpy <-> the extension's raw arrays: (element, C-contiguous array), element one of dsa's element types.

bf16 is ml_dtypes.bfloat16 (carried as its uint16 bit patterns), f32 float32, i1 bool, i32 int32, i64 int64
(a Python int is an i64 scalar). Nothing is converted silently: any other dtype is an error naming the argument.
"""
import ml_dtypes
import numpy as np

from ._dsa import Error

bfloat16 = ml_dtypes.bfloat16

_ELEMENTS = {np.dtype(np.float32): "f32", np.dtype(np.bool_): "i1", np.dtype(np.int32): "i32",
             np.dtype(np.int64): "i64"}


def to_raw(value, what):
    if isinstance(value, (bool, np.bool_)):
        return "i1", np.array(value, dtype=np.bool_)
    if isinstance(value, (int, np.integer)) and np.ndim(value) == 0 and not isinstance(value, np.ndarray):
        return "i64", np.array(value, dtype=np.int64)
    a = np.asarray(value)
    if a.dtype == bfloat16:
        return "bf16", np.ascontiguousarray(a).view(np.uint16)
    element = _ELEMENTS.get(a.dtype)
    if element is None:
        raise Error(f"{what}: numpy dtype {a.dtype} is not one of dsa's element types (ml_dtypes.bfloat16, float32, "
                    f"bool, int32, int64)")
    return element, np.ascontiguousarray(a)


def from_raw(raw):
    element, a = raw
    if element == "bf16":
        return a.view(bfloat16)
    return a
