"""The checks a host (NumPy) array passes before any back end reads it.

A NumPy array given to the GPU runtime (binding.py stages it through a copy)
and an array given to dnnc's CPU back end (``Graph.compile(target="cpu")``)
are held to one rule, here, so that an input the GPU refuses is refused on
the CPU too, with the same ``ArgumentError`` and the same words:

* its dtype is the tensor's own storage type, exactly: ``float32`` for f32,
  ``ml_dtypes.bfloat16`` for bf16, ``bool`` for i1, ``int32`` for i32. No
  conversion happens on the way in. A float64 array for an f32 input is far
  more often a bug than a wish (a missing ``astype``, a reference computed in
  the wrong precision), and converting it on one back end but not the other
  would let such a bug pass on the CPU and fail on the GPU;
* its shape is the tensor's logical dims, exactly (no broadcasting of the
  argument itself: a graph input declared with a stride-0 dim still takes an
  array of its full dims, as the GPU does);
* along a dim the tensor broadcasts (stride 0, more than one element), its
  elements are equal, bit for bit. One element is stored there: the GPU's
  staging copy would keep one of the differing values and the CPU back end,
  which reads the logical array, every one of them, so the two would differ
  where the caller meant something else. Refused, nothing is lost.

The array's own strides are not checked: a host array is copied into the
layout the compiled code reads. This module imports numpy only (ml_dtypes when a bf16 or
fp8 tensor needs it), so the compiler imports it without the GPU runtime's
CUDA layer.
"""

import numpy as np

from .errors import ArgumentError

# Manifest (MLIR) spellings -> NumPy dtype names; ml_dtypes holds the ones
# NumPy lacks.
_NUMPY_NAMES = {"f32": "float32", "f16": "float16", "i1": "bool", "i32": "int32",
                "si8": "int8", "ui8": "uint8"}
_ML_DTYPES = {"bf16": "bfloat16", "f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2"}

_numpy_dtypes = {}


def numpy_dtype(dtype, label="tensor"):
    """The NumPy dtype that stores manifest type ``dtype`` on the host (bf16
    and fp8 need ml_dtypes; ``label`` names the tensor if it is missing)."""
    t = _numpy_dtypes.get(dtype)
    if t is None:
        if dtype in _ML_DTYPES:
            try:
                import ml_dtypes
            except ImportError as e:
                raise ArgumentError(f"{label}: NumPy has no {dtype}; install ml_dtypes to pass "
                                    f"{dtype} NumPy arrays", tensor=None) from e
            t = np.dtype(getattr(ml_dtypes, _ML_DTYPES[dtype]))
        else:
            t = np.dtype(_NUMPY_NAMES[dtype])
        _numpy_dtypes[dtype] = t
    return t


def check(array, dtype, dims, label, name, strides=None):
    """Refuse ``array`` (a NumPy array) unless it has exactly manifest type
    ``dtype`` and shape ``dims`` and, where ``strides`` (the tensor's, in
    elements; None: not known) broadcast a dim, one value along it. ``label``
    is how messages name the tensor (``input 'x'``), ``name`` what the
    ArgumentError's ``tensor`` holds."""
    want = numpy_dtype(dtype, label)
    if array.dtype != want:
        raise ArgumentError(f"{label}: expected dtype {dtype} (numpy {want}), got numpy "
                            f"{array.dtype}", tensor=name)
    if tuple(array.shape) != tuple(dims):
        raise ArgumentError(f"{label}: expected shape {list(dims)}, got {list(array.shape)}",
                            tensor=name)
    if strides is None or array.size == 0:
        return
    for d, (n, stride) in enumerate(zip(dims, strides)):
        if stride == 0 and n > 1:
            _check_broadcast(array, d, label, name)


def _check_broadcast(array, d, label, name):
    # Compared as bytes: bf16 and fp8 have no NumPy comparison of their own,
    # and a NaN must equal itself.
    raw = np.ascontiguousarray(array).view(np.uint8).reshape(array.shape + (array.itemsize,))
    differs = (raw != np.take(raw, [0], axis=d)).any(axis=-1)
    if differs.any():
        at = [int(i) for i in np.argwhere(differs)[0]]
        first = list(at)
        first[d] = 0
        raise ArgumentError(f"{label}: dim {d} has stride 0 (one element stored, broadcast): "
                            f"expected equal values along it, got element {at} differing from "
                            f"{first}", tensor=name)
