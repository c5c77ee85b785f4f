"""Helpers shared by the reference tests: run one op of the NumPy reference
with the result shapes the dialect infers, as the compiler's callers do."""

import numpy as np

import dnnc.dialect as D
from dnnc import reference as ref
from dnnc.dialect import opdef
from dnnc.dialect.opdef import TensorInfo
from dnnc.dialect.types import data_type


def rng():
    return np.random.default_rng(0)


def _info(value):
    if isinstance(value, list):
        return [_info(v) for v in value]
    if value is None:
        return None
    value = np.asarray(value)
    return TensorInfo(value.shape, data_type.BOOLEAN if value.dtype == np.bool_ else None)


def run(name, operands, declared=None, **attrs):
    """Evaluate op ``name`` on ``operands``; returns the results by name."""
    declared = {k: TensorInfo(s) for k, s in (declared or {}).items()}
    infos = {k: _info(v) for k, v in operands.items()}
    results, full = opdef.infer(D.get(name), infos, attrs, declared)
    return ref.evaluate(name, operands, full, results)


def typed(value, dtype):
    """``value`` as an array of ``dtype``'s own NumPy type (ml_dtypes' for
    bf16 and fp8, bool for booleans), rounded once from float64 as the
    reference rounds its inputs: what an executable takes, on the CPU as on
    the GPU (both refuse an array of another type)."""
    from dnnc.dialect.types import as_data_type

    dtype = as_data_type(dtype)
    a = np.asarray(value)
    if a.dtype == dtype.numpy:
        return a
    if dtype is data_type.BOOLEAN:
        return a.astype(np.bool_)
    return ref.round_to(a.astype(np.float64), dtype).astype(dtype.numpy)
