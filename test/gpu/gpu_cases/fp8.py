"""fp8 cases: conversions to and from e4m3 and e5m2 at their edges
(saturation, ties, subnormals, infinities, NaN) and of every code, and
pointwise ops whose inputs and outputs are fp8.
"""

import numpy as np

import dnnc

from .case import BF16, E4M3, E5M2, F16, F32, Case, outputs


# Conversions to fp8 at their edges: zeros, infinities, NaN, the largest
# finite values and the ties just beyond them (they saturate), ties between
# neighbours (to the even code), subnormals and their ties, values below
# half the smallest subnormal; each also negated.
_E4M3_EDGES = [0.0, 1.0, 448.0, 449.0, 464.0, 480.0, 1e6, float("inf"), float("nan"),
               1.0625, 1.1875, 2.0 ** -9, 2.0 ** -10, 1.5 * 2.0 ** -10, 3 * 2.0 ** -10,
               2.0 ** -6, 0.9 * 2.0 ** -6, 3e-8]
_E5M2_EDGES = [57344.0, 60000.0, 61440.0, 65504.0, 1e9, 1.125, 1.375, 2.0 ** -16,
               2.0 ** -17, 1.5 * 2.0 ** -17, 3 * 2.0 ** -17, 2.0 ** -14, 1e-7]
FP8_EDGES = [v for e in _E4M3_EDGES + _E5M2_EDGES for v in (e, -e)]


def _all_codes(dtype):
    """The value of every fp8 code of ``dtype`` (NaN codes as NaN)."""
    return np.arange(256, dtype=np.uint8).view(dtype.numpy).astype(np.float64)


def fp8_edges():
    """Encodes of FP8_EDGES from f32 and bf16 (every value is also a bf16
    value but 449 and 60000, whose bf16 rounding is checked too), and decodes
    of every fp8 code, on 1024 elements (the vector path)."""
    g = dnnc.Graph()
    x = g.tensor(name="x", dim=[1024], data_type=F32)
    h = g.tensor(name="h", dim=[1024], data_type=BF16)
    a = g.tensor(name="a", dim=[1024], data_type=E4M3)
    b = g.tensor(name="b", dim=[1024], data_type=E5M2)
    outputs(g.cast(x, E4M3).set_name("x_to_e4m3"), g.cast(x, E5M2).set_name("x_to_e5m2"),
            g.cast(h, E4M3).set_name("h_to_e4m3"), g.cast(h, E5M2).set_name("h_to_e5m2"),
            g.cast(a, F32).set_name("a_to_f32"), g.cast(b, F32).set_name("b_to_f32"),
            g.cast(a, BF16).set_name("a_to_bf16"), g.cast(b, F16).set_name("b_to_f16"))
    return g


def fp8_pointwise(fmt):
    def build():
        g = dnnc.Graph(io_data_type=fmt)
        a = g.tensor(name="a", dim=[7, 127])
        b = g.tensor(name="b", dim=[127])
        outputs(g.add(a, b).set_name("add"), g.mul(a, b).set_name("mul"),
                g.relu(a).set_name("relu"), g.gelu(a).set_name("gelu"),
                g.max(a, b).set_name("max"))
        return g
    return build


CASES = [
    Case("fp8_edges", fp8_edges, fp8_ulps=0, rtol=1e-9,
         fixed={"x": FP8_EDGES, "h": FP8_EDGES, "a": _all_codes(E4M3), "b": _all_codes(E5M2)}),
    *(Case(f"fp8_pointwise_{d.mlir}", fp8_pointwise(d), scale=4.0) for d in (E4M3, E5M2)),
]
