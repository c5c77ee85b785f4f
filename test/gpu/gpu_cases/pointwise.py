"""Pointwise cases: every activation and its backward, the binary ops with
broadcasting, comparisons, logic and select, casts between the types, on
shapes that are multiples of nothing (7 x 127, 1000); then pointwise ops on
channels-last inputs and outputs, and on a larger tensor.
"""

import dnnc

from .case import BF16, BOOL, E4M3, E5M2, F16, F32, Case, outputs


UNARY = [("relu", {}), ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}),
         ("swish", {"beta": 1.5}), ("sigmoid", {}), ("tanh", {}), ("elu", {"alpha": 0.7}),
         ("leaky_relu", {"negative_slope": 0.2}), ("softplus", {}),
         ("softplus", {"beta": 2.0, "threshold": 3.0}), ("exp", {}), ("abs", {}), ("neg", {}),
         ("square", {}), ("reciprocal", {}), ("sin", {}), ("cos", {}), ("erf", {}),
         ("floor", {}), ("ceil", {})]
POSITIVE_UNARY = ["log", "sqrt", "rsqrt"]


def unary(dtype):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[7, 127])
        xp = g.tensor(name="xp", dim=[1000])
        for i, (op, attrs) in enumerate(UNARY):
            outputs(getattr(g, op)(x, **attrs).set_name(f"{op}{i}"))
        for op in POSITIVE_UNARY:
            outputs(getattr(g, op)(xp).set_name(op))
        return g
    return build


def activation_backward(dtype):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        dy = g.tensor(name="dy", dim=[7, 127])
        x = g.tensor(name="x", dim=[127])
        outputs(g.relu_backward(dy, x).set_name("relu_bwd"),
                g.gelu_backward(dy, x).set_name("gelu_bwd"),
                g.gelu_backward(dy, x, approximate="tanh").set_name("gelu_tanh_bwd"),
                g.silu_backward(dy, x).set_name("silu_bwd"),
                g.sigmoid_backward(dy, x).set_name("sigmoid_bwd"),
                g.tanh_backward(dy, x).set_name("tanh_bwd"),
                g.swish_backward(dy, x, beta=1.5).set_name("swish_bwd"),
                g.elu_backward(dy, x, alpha=0.7).set_name("elu_bwd"),
                g.leaky_relu_backward(dy, x, negative_slope=0.2).set_name("leaky_relu_bwd"),
                g.softplus_backward(dy, x, beta=2.0, threshold=2.5).set_name("softplus_bwd"))
        return g
    return build


def binary(dtype):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        a = g.tensor(name="a", dim=[7, 1, 127])
        b = g.tensor(name="b", dim=[5, 1])
        c = g.tensor(name="c", dim=[1])
        for op in ("add", "sub", "mul", "div", "max", "min"):
            outputs(getattr(g, op)(a, b).set_name(op))
        outputs(g.pow(g.abs(a), b).set_name("pow"), g.add(c, a).set_name("add_rank1"))
        return g
    return build


def compare_logic_select():
    g = dnnc.Graph(io_data_type=F32)
    a = g.tensor(name="a", dim=[7, 127])
    b = g.tensor(name="b", dim=[127])
    m = g.tensor(name="m", dim=[7, 1], data_type=BOOL)
    cmps = [getattr(g, op)(a, b).set_name(op)
            for op in ("cmp_eq", "cmp_ne", "cmp_lt", "cmp_le", "cmp_gt", "cmp_ge")]
    outputs(*cmps)
    either = g.logical_or(cmps[0], m).set_name("or")
    outputs(g.logical_and(cmps[2], m).set_name("and"), either,
            g.logical_not(either).set_name("not"),
            g.select(cmps[4], a, b).set_name("select"),
            g.select(m, b, a).set_name("select_input"),
            g.cast(m, F32).set_name("bool_to_f32"), g.cast(a, BOOL).set_name("f32_to_bool"))
    return g


def casts():
    g = dnnc.Graph()
    x = g.tensor(name="x", dim=[1000], data_type=F32)
    h = g.tensor(name="h", dim=[1000], data_type=F16)
    e = g.tensor(name="e", dim=[1000], data_type=E5M2)
    q = g.tensor(name="q", dim=[1000], data_type=E4M3)
    for target in (F16, BF16, E4M3, E5M2, BOOL):
        outputs(g.cast(x, target).set_name(f"x_to_{target.mlir}"))
    outputs(g.cast(h, BF16).set_name("h_to_bf16"), g.cast(h, E4M3).set_name("h_to_e4m3"),
            g.cast(e, F16).set_name("e_to_f16"), g.cast(e, E4M3).set_name("e_to_e4m3"),
            g.cast(q, F32).set_name("q_to_f32"))
    return g


def large_arguments(dtype):
    """sin and cos of arguments past 2^20, where the reduction by pi/2 (f32
    results) or 2 pi (16-bit results) must be exact (math/turns.py; the
    fuzzer's pointwise f32 #89 and #261 of seed 1 gave 0.7071 for cos of
    1e15 to 2e15); gelu at -inf and far below 0, where erf must be exactly
    -1 (bf16 #161 gave -inf where the reference is NaN). Inputs: ``LARGE``
    and ``GELU`` (``Case.fixed``), cycled over 1000 elements."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[1000])
        xg = g.tensor(name="xg", dim=[1000])
        outputs(g.sin(x).set_name("sin"), g.cos(x).set_name("cos"),
                g.gelu(xg).set_name("gelu"))
        return g
    return build


# f32 and bf16 reach 3.4e38; f16 stops at 65504, below the exact reduction.
LARGE = {F32: [1e15, -1.5e15, 2e15, 1048577.0, -3.3e38, 7.7291789e28, 123456789.0, 0.5, -2.0],
         BF16: [1e15, -1.5e15, 2e15, 1.05e6, -3.3e38, 7.7e28, 1.2e8, 0.5, -2.0],
         F16: [65504.0, -65504.0, 40000.0, 1.05e4, 0.5, -2.0]}
GELU = [-float("inf"), -1e4, -10.0, -5.5, float("inf"), float("nan"), 1.0, -1.0, 3.0]


def pointwise_nhwc(dtype):
    def build():
        n, c, h, w = 2, 3, 7, 127
        nhwc = [h * w * c, 1, w * c, c]
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[n, c, h, w], stride=nhwc)
        r = g.tensor(name="r", dim=[n, c, h, w])
        y = g.add(g.mul(x, r), g.exp(x)).set_name("y")
        y.set_stride(nhwc)
        t = g.tanh(r).set_name("t")
        t.set_stride(nhwc)
        outputs(y, t, g.reduction(x, "sum", [1]).set_name("sum_c"))
        return g
    return build


def pointwise_unit_dims(dtype):
    """A chain over cudnn-frontend's [rows, hidden, 1, 1] with a per-row and a
    per-hidden operand: vectors along hidden through views without the
    trailing unit dims; and a hidden of 770, vectors of 2."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        outs = []
        for name, (rows, hidden) in (("a", (37, 1024)), ("b", (5, 770))):
            x = g.tensor(name=f"x_{name}", dim=[rows, hidden, 1, 1])
            r = g.tensor(name=f"r_{name}", dim=[rows, 1, 1, 1])
            p = g.tensor(name=f"p_{name}", dim=[1, hidden, 1, 1])
            outs.append(g.gelu(g.add(g.mul(x, r), p)).set_name(f"y_{name}"))
        outputs(*outs)
        return g
    return build


def big_pointwise():
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[1000, 127])
    b = g.tensor(name="b", dim=[127])
    outputs(g.relu(g.add(x, b)).set_name("y"))
    return g


CASES = [
    *(Case(f"unary_{d.mlir}", unary(d), positive=("xp",), scale=2.0) for d in (F32, F16, BF16)),
    *(Case(f"activation_backward_{d.mlir}", activation_backward(d), scale=2.0)
      for d in (F32, F16, BF16)),
    *(Case(f"binary_{d.mlir}", binary(d)) for d in (F32, F16, BF16)),
    Case("compare_logic_select_f32", compare_logic_select),
    *(Case(f"pointwise_large_arguments_{d.mlir}", large_arguments(d),
           fixed={"x": LARGE[d], "xg": GELU}) for d in (F32, F16, BF16)),
    Case("casts", casts, scale=30.0),
]


# Listed after the convolutions.
NHWC_AND_BIG_CASES = [
    *(Case(f"pointwise_nhwc_{d.mlir}", pointwise_nhwc(d)) for d in (F32, BF16)),
    Case("big_pointwise_f32", big_pointwise),
    *(Case(f"pointwise_unit_dims_{d.mlir}", pointwise_unit_dims(d)) for d in (F32, BF16)),
]
