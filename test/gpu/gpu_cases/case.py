"""What a GPU test case is, and how its outputs are compared.

``Case`` names a graph builder and how its inputs are drawn (or derived
from the others drawn); ``outputs`` marks a builder's results as graph
outputs; ``contracted`` marks an output that sums K products, whose
tolerance ``comparison`` then scales with K and the operands (RTOL, TAIL)
instead of with the largest output.
"""

from dataclasses import dataclass, field

import numpy as np

from dnnc.dialect.types import data_type as dt

F32, F16, BF16 = dt.FLOAT, dt.HALF, dt.BFLOAT16
E4M3, E5M2, BOOL = dt.FP8_E4M3, dt.FP8_E5M2, dt.BOOLEAN

# |got - ref| <= atol + rtol |ref|, with atol = rtol * max(1, max |ref|): the
# GPU computes in f32 (fma-contracted, expanded math) against float64. An
# output that sums K products (``contracted``) takes atol = rtol * max(1,
# TAIL sqrt(K) rms(a) rms(b) gain) instead: the rounding errors of its K
# products add up like a random walk of K steps of their size, TAIL covers
# the largest of some 10^5 such sums, and ``gain`` bounds what scales of the
# operands multiply them by. Its values near 0 (where the relative term
# vanishes) are held to that, not to the largest output.
RTOL = {"f32": 2e-4, "f16": 2e-3, "bf16": 1.6e-2}
TAIL = 4.0

# Output name -> (a, b, K) of the graph being built (see ``contracted``).
CONTRACTIONS = {}


def contracted(out, a, b, k, gain=1.0, rounded=None):
    """Mark ``out`` (or the epilogue ending in it) as a sum of ``k``
    products of graph inputs ``a`` and ``b`` (tensors), scaled by at most
    ``gain`` on the way, for its tolerance. ``rounded``: the type (a
    data_type or its name) the value is rounded to on the way to a wider output (an f32
    cast of a bf16 intermediate): its RTOL holds where larger, since GPU
    and reference may round an f32 sum to either side of a 16-bit step."""
    CONTRACTIONS[out.name] = (a.name, b.name, int(k), float(gain),
                              getattr(rounded, "mlir", rounded))
    return out


@dataclass
class Case:
    """A test graph: ``build()`` returns the Graph; ``positive`` names inputs
    drawn from [0.5, 2) (logs, roots, variances); ``scale`` multiplies the
    standard normal draws of the others."""

    name: str
    build: object
    positive: tuple = ()
    scale: float = 1.0
    seed: int = 0
    notes: str = ""
    integers: tuple = field(default_factory=tuple)  # inputs drawn from {-2..2} (ties)
    normal: dict = field(default_factory=dict)  # input name -> (mean, std) of its draws
    rtol: float = None       # instead of the output type's RTOL (tf32 multiplies)
    config: str = None       # a config override (Options.config): force a strategy
    fixed: dict = field(default_factory=dict)  # input name -> values, repeated to its size
    # values -> {input name: values}: inputs that must agree with the others
    # (an sdpa backward's o and statistics, its forward's of the drawn q, k
    # and v), computed once those are drawn.
    derived: object = None
    fp8_ulps: int = 1        # codes an fp8 output may be off by
    # values -> {output name: bool mask}: the elements the op leaves as they
    # were (a ragged output's rows no batch entry owns), NaN in the expected
    # output, so that the GPU must leave them poisoned with NaN.
    unspecified: object = None
    # Runs of the package after the first, each with other values of its
    # runtime scalars ({input name: value}): the package is compiled once
    # and checked against the reference for every run (gpu_cases/scalars.py).
    runs: tuple = ()


def graph_of(add, dtype, configs):
    """A case's build: one graph of ``dtype`` tensors into which ``add(g, i,
    config)`` puts each of ``configs`` (attention families draw several
    configurations per package)."""
    def build():
        import dnnc

        g = dnnc.Graph(io_data_type=dtype)
        for i, config in enumerate(configs):
            add(g, i, config)
        return g
    return build


def outputs(*tensors):
    """Make each of ``tensors`` (None skipped) an output of its graph."""
    for t in tensors:
        if t is not None:
            t.set_output(True)


def _rms(x):
    x = np.asarray(x, np.float64)
    return float(np.sqrt(np.mean(x * x))) if x.size else 0.0


def _contraction_scale(contraction, data):
    """The magnitude a sum of ``k`` products of ``a`` and ``b`` (scaled by
    ``gain``) reaches in its tail: what its absolute tolerance scales with."""
    a, b, k, gain = contraction[:4]
    return max(1.0, TAIL * np.sqrt(k) * _rms(data[a]) * _rms(data[b]) * gain)


def comparison(dtype, expected, rtol=None, contraction=None, data=None, fp8_ulps=1):
    """How to compare an output: ``contraction`` is its (a, b, K) from
    ``contracted`` (then ``data`` holds the inputs' values)."""
    if dtype is BOOL or dtype.is_integer:
        return {"compare": "exact"}
    if dtype in (E4M3, E5M2):
        rule = {"compare": "fp8_ulps", "ulps": fp8_ulps}
        if contraction is not None:
            # The f32 sum an fp8 output is rounded from carries the error of
            # an f32 output of the same contraction (wgmma's fp8 products
            # accumulate in fewer bits than f32, as cuBLASLt's fast
            # accumulation does); near zero, where the fp8 codes lie
            # densely, that error spans several codes. An element within
            # the f32 output's absolute tolerance passes whatever its code.
            rule["atol"] = RTOL["f32"] * _contraction_scale(contraction, data)
        return rule
    rtol = rtol or RTOL[dtype.mlir]
    if contraction is not None and len(contraction) > 4 and contraction[4]:
        rtol = max(rtol, RTOL[contraction[4]])
    if contraction is not None:
        return {"compare": "allclose", "rtol": rtol,
                "atol": rtol * _contraction_scale(contraction, data)}
    finite = expected[np.isfinite(expected)]
    scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
    return {"compare": "allclose", "rtol": rtol, "atol": rtol * scale}
