"""Reductions over axes as a linalg.generic with reduction iterators.

The accumulator is f32, initialized with the mode's neutral element; a second
(pointwise) generic finishes the value (mean divides by the element count,
norm2 takes the square root) and rounds it to the result type. With keepdims
the reduced dims stay as size 1 (indexing map constant 0); without, they are
dropped from the result's map.
"""

import math as pymath

from mlir.dialects import arith, math

from dnnc.codegen.linalg import emit
from dnnc.codegen.linalg.emit import PARALLEL, REDUCTION, cf, d, zero_expr
from dnnc.dialect.types import data_type

INF = float("inf")

# mode -> (neutral element, step(acc, x) -> acc), all in f32.
MODES = {
    "sum": (0.0, arith.addf),
    "mean": (0.0, arith.addf),
    "max": (-INF, arith.maximumf),  # propagates NaN
    "min": (INF, arith.minimumf),
    "prod": (1.0, arith.mulf),
    "amax": (0.0, lambda acc, x: arith.maximumf(acc, math.absf(x))),
    "norm1": (0.0, lambda acc, x: arith.addf(acc, math.absf(x))),
    "norm2": (0.0, lambda acc, x: arith.addf(acc, arith.mulf(x, x))),
}


def lower_reduction(view):
    x = view.operands["x"]
    ix = emit.logical_info(x)
    out = emit.logical_info(view.results["y"])
    mode, axes, keep = view.attrs["mode"], set(view.attrs["axes"]), view.attrs["keepdims"]
    rank = len(ix.shape)
    neutral, step = MODES[mode]
    exprs = []
    for i in range(rank):
        if i not in axes:
            exprs.append(d(i))
        elif keep:
            exprs.append(zero_expr())
    acc = emit.filled(out.shape, emit.f32(), neutral)
    iterators = [REDUCTION if i in axes else PARALLEL for i in range(rank)]
    acc = emit.generic([x], [acc], [emit.identity(rank), emit.amap(rank, exprs)], iterators,
                       lambda v, a: [step(a, emit.to_f32(v, ix.dtype))])[0]
    count = pymath.prod(ix.shape[i] for i in axes)
    if mode == "mean":
        # x / 0 for an empty reduction gives NaN, as NumPy's mean does.
        return {"y": emit.convert(acc, data_type.FLOAT, out.dtype,
                                  lambda v: arith.divf(v, cf(float(count))))}
    if mode == "norm2":
        return {"y": emit.convert(acc, data_type.FLOAT, out.dtype, math.sqrt)}
    if out.dtype is data_type.FLOAT:
        return {"y": acc}
    return {"y": emit.convert(acc, data_type.FLOAT, out.dtype)}
