"""Data types of dnn tensors and their spellings in MLIR, NumPy and the graph API.

Storage types are f32, f16, bf16, the two fp8 formats, bool (results of
comparisons), int32 (an attention padding mask's per-batch sequence lengths,
and the exact result of an int8 convolution or matmul) and int8 / uint8
(quantized operands of convolution and matmul, which accumulate them in
int32; casts take them to and from every other type). ``tf32`` is a compute
mode only: it can be a matmul or convolution's ``compute_type`` but never a
tensor's type; ``int32`` is both a storage type and a compute type.

int8 and uint8 are spelled ``si8`` and ``ui8`` in MLIR, not ``i8``: a
boolean is stored as ``i8`` once lowered (dnnc/codegen/linalg/emit.py), and
the lowering must tell the two apart by type.

NumPy and ml_dtypes are imported when a type's NumPy dtype is first asked
for, not with this module: ``import dnnc`` (and ``dnnc.frontend``) and a
JIT cache hit never need them (ml_dtypes alone costs milliseconds).
"""

import enum
import sys

from dnnc.errors import GraphError


class data_type(enum.Enum):
    """Tensor and compute data types, named as in cudnn-frontend."""

    FLOAT = "f32"
    HALF = "f16"
    BFLOAT16 = "bf16"
    FP8_E4M3 = "f8E4M3FN"
    FP8_E5M2 = "f8E5M2"
    BOOLEAN = "i1"
    INT32 = "i32"
    INT8 = "si8"
    UINT8 = "ui8"
    TF32 = "tf32"

    @property
    def mlir(self):
        """The MLIR spelling of the element type (``bf16``, ``f8E4M3FN``...)."""
        return self.value

    @property
    def numpy(self):
        """The NumPy dtype that stores this type on the host."""
        if self is data_type.TF32:
            raise GraphError("tf32 is a compute type, not a storage type")
        return (_NUMPY or _numpy_dtypes())[self]

    @property
    def is_float(self):
        return self not in (data_type.BOOLEAN, data_type.INT32, data_type.INT8,
                            data_type.UINT8)

    @property
    def is_integer(self):
        """int32, int8 and uint8 (not bool)."""
        return self in (data_type.INT32, data_type.INT8, data_type.UINT8)

    @property
    def is_storage(self):
        return self is not data_type.TF32

    @property
    def itemsize(self):
        if self is data_type.TF32:
            raise GraphError("tf32 is a compute type, not a storage type")
        return _ITEMSIZE[self]

    def __str__(self):
        return self.value


# Bytes per element of each storage type (the NumPy dtypes' itemsize).
_ITEMSIZE = {
    data_type.FLOAT: 4, data_type.HALF: 2, data_type.BFLOAT16: 2, data_type.FP8_E4M3: 1,
    data_type.FP8_E5M2: 1, data_type.BOOLEAN: 1, data_type.INT32: 4, data_type.INT8: 1,
    data_type.UINT8: 1,
}

_NUMPY = {}   # filled by _numpy_dtypes on first use


def _numpy_dtypes():
    """The NumPy dtype of each storage type (imports NumPy and ml_dtypes)."""
    import ml_dtypes
    import numpy as np

    _NUMPY.update({
        data_type.FLOAT: np.dtype(np.float32),
        data_type.HALF: np.dtype(np.float16),
        data_type.BFLOAT16: np.dtype(ml_dtypes.bfloat16),
        data_type.FP8_E4M3: np.dtype(ml_dtypes.float8_e4m3fn),
        data_type.FP8_E5M2: np.dtype(ml_dtypes.float8_e5m2),
        data_type.BOOLEAN: np.dtype(np.bool_),
        data_type.INT32: np.dtype(np.int32),
        data_type.INT8: np.dtype(np.int8),
        data_type.UINT8: np.dtype(np.uint8),
    })
    return _NUMPY

_ALIASES = {
    "float": data_type.FLOAT, "float32": data_type.FLOAT, "f32": data_type.FLOAT,
    "half": data_type.HALF, "float16": data_type.HALF, "f16": data_type.HALF,
    "bfloat16": data_type.BFLOAT16, "bf16": data_type.BFLOAT16,
    "fp8_e4m3": data_type.FP8_E4M3, "float8_e4m3fn": data_type.FP8_E4M3,
    "f8e4m3fn": data_type.FP8_E4M3,
    "fp8_e5m2": data_type.FP8_E5M2, "float8_e5m2": data_type.FP8_E5M2,
    "f8e5m2": data_type.FP8_E5M2,
    "bool": data_type.BOOLEAN, "boolean": data_type.BOOLEAN, "i1": data_type.BOOLEAN,
    "int32": data_type.INT32, "i32": data_type.INT32,
    "int8": data_type.INT8, "si8": data_type.INT8,
    "uint8": data_type.UINT8, "ui8": data_type.UINT8,
    "tf32": data_type.TF32,
}


def as_data_type(value):
    """Accept a data_type, its name, an MLIR/NumPy spelling or a torch dtype."""
    if isinstance(value, data_type):
        return value
    key = value.lower() if isinstance(value, str) else _key_of(value)
    try:
        return _ALIASES[key.lower()]
    except KeyError:
        names = ", ".join(sorted({d.name for d in data_type}))
        raise GraphError(f"unknown data type {value!r}: expected one of {names}") from None


def _key_of(value):
    """The alias of a dtype object: NumPy's name for it (NumPy and ml_dtypes
    dtypes and scalar types), else the last dotted part of its text (torch
    dtypes: "torch.bfloat16"). A torch dtype is named without importing
    NumPy when NumPy is not imported yet (then the value is no NumPy type)."""
    text = str(value).rsplit(".", 1)[-1]
    if "numpy" not in sys.modules and text.lower() in _ALIASES:
        return text
    import numpy as np

    try:
        return np.dtype(value).name
    except TypeError:
        return text


def from_mlir(spelling):
    """data_type for an MLIR element type spelling (``str(type)``)."""
    for dt in data_type:
        if dt.value == spelling:
            return dt
    raise GraphError(f"unsupported element type {spelling}: expected f32, f16, bf16, "
                     "f8E4M3FN, f8E5M2, i1, i32, si8 or ui8")
