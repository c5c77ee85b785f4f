"""cudnn-frontend's enums, member for member, and the data type conversions.

Every member cudnn-frontend (v1.x) exposes is here, so code that names one
imports and builds; what a member means for dnnc is said where it is used
(a data type dnnc has no storage for raises ``UnsupportedDataTypeError`` when
a graph uses it, a heuristics mode selects nothing dnnc does not have).

``library_type`` accepts what cudnn-frontend accepts for a data type: a
``data_type`` member, a torch dtype (read by name, so torch is not
imported), and, as dnnc does, a NumPy dtype, a dnnc ``data_type`` or a name.
"""

import enum
import sys

from dnnc.dialect.types import data_type as dnnc_data_type
from dnnc.frontend.errors import UnsupportedDataTypeError


class data_type(enum.Enum):  # noqa: N801 (cudnn-frontend's names, here and below)
    """cuDNN's tensor data types (cudnn_frontend::DataType_t)."""

    FLOAT = 0
    DOUBLE = 1
    HALF = 2
    INT8 = 3
    INT32 = 4
    INT8x4 = 5
    UINT8 = 6
    UINT8x4 = 7
    INT8x32 = 8
    BFLOAT16 = 9
    INT64 = 10
    BOOLEAN = 11
    FP8_E4M3 = 12
    FP8_E5M2 = 13
    FAST_FLOAT_FOR_FP8 = 14
    FP8_E8M0 = 15
    FP4_E2M1 = 16
    INT4 = 17
    NOT_SET = 18


class tensor_reordering(enum.Enum):
    NONE = 0
    INT8x32 = 1
    F16x16 = 2
    F8_128x4 = 3


class scalar_type(enum.Enum):
    RUNTIME_PARAM = 0
    COMPILE_TIME_CONST = 1


class reshape_mode(enum.Enum):
    VIEW_ONLY = 0
    LOGICAL = 1


class norm_forward_phase(enum.Enum):
    INFERENCE = 0
    TRAINING = 1
    NOT_SET = 2


class heur_mode(enum.Enum):
    """Heuristics modes. dnnc has one ranking (dnnc/heuristics/); every mode
    asks it, and each gives the same single plan."""

    A = 0
    B = 1
    FALLBACK = 2
    OPENSOURCE = 3


class convolution_mode(enum.Enum):
    CONVOLUTION = 0
    CROSS_CORRELATION = 1


class reduction_mode(enum.Enum):
    ADD = 0
    MUL = 1
    MIN = 2
    MAX = 3
    AMAX = 4
    AVG = 5
    NORM1 = 6
    NORM2 = 7
    MUL_NO_ZEROS = 8
    NOT_SET = 9


class build_plan_policy(enum.Enum):
    HEURISTICS_CHOICE = 0
    ALL = 1


class numerical_note(enum.Enum):
    TENSOR_CORE = 0
    DOWN_CONVERT_INPUTS = 1
    REDUCED_PRECISION_REDUCTION = 2
    FFT = 3
    NONDETERMINISTIC = 4
    WINOGRAD = 5
    WINOGRAD_TILE_4x4 = 6
    WINOGRAD_TILE_6x6 = 7
    WINOGRAD_TILE_13x13 = 8
    STRICT_NAN_PROP = 9


class behavior_note(enum.Enum):
    RUNTIME_COMPILATION = 0
    REQUIRES_FILTER_INT8x32_REORDER = 1
    REQUIRES_BIAS_INT8x32_REORDER = 2
    SUPPORTS_CUDA_GRAPH_NATIVE_API = 3
    CUBLASLT_DEPENDENCY = 4


class diagonal_alignment(enum.Enum):
    TOP_LEFT = 0
    BOTTOM_RIGHT = 1


class attention_implementation(enum.Enum):
    AUTO = 0
    COMPOSITE = 1
    UNIFIED = 2


class moe_grouped_matmul_mode(enum.Enum):
    NONE = 0
    GATHER = 1
    SCATTER = 2


class knob_type(enum.Enum):
    NOT_SET = 0
    SWIZZLE = 1
    TILE_SIZE = 2
    EDGE = 3
    MULTIPLY = 4
    SPLIT_K_BUF = 5
    TILEK = 6
    STAGES = 7
    REDUCTION_MODE = 8
    SPLIT_K_SLC = 9
    IDX_MODE = 10
    SPECFILT = 11
    KERNEL_CFG = 12
    WORKSPACE = 13
    TILE_CGA_M = 14
    TILE_CGA_N = 15
    BLOCK_SIZE = 16
    OCCUPANCY = 17
    ARRAY_SIZE_PER_THREAD = 18
    SPLIT_COLS = 19
    TILE_ROWS = 20
    TILE_COLS = 21
    LOAD_SIZE = 22
    CTA_COUNT = 23
    STREAM_K = 24
    SPLIT_P_SLC = 25
    TILE_M = 26
    TILE_N = 27
    WARP_SPEC_CFG = 28


class knob:
    """A tunable of an engine, as ``get_knobs_for_engine`` lists them. dnnc's
    one engine lists none: its configs come from the heuristics and the
    tuning database (``mode="autotune"``), not from knobs."""

    def __init__(self, knob_type=knob_type.NOT_SET, max_value=None, min_value=None, stride=None):
        self.type = knob_type
        self.max_value = max_value
        self.min_value = min_value
        self.stride = stride

    def __repr__(self):
        return (f'{{"knob_type":"{self.type.name}","max_value":{self.max_value},'
                f'"min_value":{self.min_value},"stride":{self.stride}}}')


# -- data types ---------------------------------------------------------------

# The cuDNN types dnnc stores; FAST_FLOAT_FOR_FP8 is a compute type (fp32).
_TO_DNNC = {
    data_type.FLOAT: dnnc_data_type.FLOAT,
    data_type.HALF: dnnc_data_type.HALF,
    data_type.BFLOAT16: dnnc_data_type.BFLOAT16,
    data_type.FP8_E4M3: dnnc_data_type.FP8_E4M3,
    data_type.FP8_E5M2: dnnc_data_type.FP8_E5M2,
    data_type.BOOLEAN: dnnc_data_type.BOOLEAN,
    data_type.INT32: dnnc_data_type.INT32,
    data_type.INT8: dnnc_data_type.INT8,
    data_type.UINT8: dnnc_data_type.UINT8,
    data_type.FAST_FLOAT_FOR_FP8: dnnc_data_type.FLOAT,
}
_FROM_DNNC = {v: k for k, v in _TO_DNNC.items() if k is not data_type.FAST_FLOAT_FOR_FP8}
_FROM_DNNC[dnnc_data_type.TF32] = data_type.FLOAT  # a compute mode, fp32 storage

# Names of torch and NumPy dtypes (``str(torch.bfloat16)`` is "torch.bfloat16").
_BY_NAME = {
    "float32": data_type.FLOAT, "float": data_type.FLOAT, "float64": data_type.DOUBLE,
    "double": data_type.DOUBLE, "float16": data_type.HALF, "half": data_type.HALF,
    "bfloat16": data_type.BFLOAT16, "int8": data_type.INT8, "uint8": data_type.UINT8,
    "int32": data_type.INT32, "int": data_type.INT32, "int64": data_type.INT64,
    "long": data_type.INT64, "bool": data_type.BOOLEAN,
    "float8_e4m3fn": data_type.FP8_E4M3, "float8_e5m2": data_type.FP8_E5M2,
    "float8_e8m0fnu": data_type.FP8_E8M0, "float4_e2m1fn_x2": data_type.FP4_E2M1,
}


def library_type(value):
    """``value`` as a cudnn-frontend ``data_type`` (None: NOT_SET)."""
    if value is None:
        return data_type.NOT_SET
    if isinstance(value, data_type):
        return value
    if isinstance(value, dnnc_data_type):
        return _FROM_DNNC[value]
    key = (value if isinstance(value, str) else _dtype_name(value)).rsplit(".", 1)[-1]
    if key.upper() in data_type.__members__:
        return data_type[key.upper()]
    try:
        return _BY_NAME[key.lower()]
    except KeyError:
        from dnnc.frontend.errors import InvalidGraphError

        raise InvalidGraphError(f"data type {value!r}: expected a cudnn.data_type, a torch or "
                                "NumPy dtype, or a type name") from None


def _dtype_name(value):
    """NumPy's name for a dtype object (NumPy, ml_dtypes, Python's scalar
    types), else its text ("torch.bfloat16"). A torch dtype is named without
    importing NumPy when NumPy is not imported yet (the value is then no
    NumPy type)."""
    text = str(value)
    if "numpy" not in sys.modules:
        name = text.rsplit(".", 1)[-1]
        if name.upper() in data_type.__members__ or name.lower() in _BY_NAME:
            return text
    import numpy as np

    try:
        return np.dtype(value).name
    except TypeError:
        return text


def to_dnnc(value, what):
    """The dnnc ``data_type`` of a cuDNN one (None for NOT_SET).
    ``UnsupportedDataTypeError`` naming ``what`` (a tensor, a graph setting)
    for a type dnnc has no storage for."""
    dt = library_type(value)
    if dt is data_type.NOT_SET:
        return None
    try:
        return _TO_DNNC[dt]
    except KeyError:
        supported = ", ".join(t.name for t in _TO_DNNC)
        raise UnsupportedDataTypeError(f"{what}: data type {dt.name} is not supported by dnnc: "
                                       f"expected one of {supported}") from None


def enum_member(enum_type, value, what):
    """``value`` as a member of ``enum_type``: a member, its name, or (as
    dnnc.Graph takes them) a lower-case string."""
    if isinstance(value, enum_type):
        return value
    name = getattr(value, "name", value)
    try:
        return enum_type[str(name).upper()]
    except KeyError:
        from dnnc.frontend.errors import InvalidGraphError

        members = ", ".join(enum_type.__members__)
        raise InvalidGraphError(f"{what}: expected one of {members}, got {value!r}") from None
