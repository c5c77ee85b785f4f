"""One drawing function per op family: ``draw(family, seed, index)`` is
configuration ``index`` of ``family`` for ``seed``, from a generator
seeded by (seed, family, index) alone, so that ``--only I`` rebuilds
exactly the configuration a full run had as I.

The convolution and attention families take their geometry from the
random GPU test families (test/gpu/gpu_cases/conv_random.py,
attention_random.py, attention_backward_random.py), whose drawing rules
say what they cover; this file turns their draws into configurations.

A share ``EXTREMAL`` of the configurations of the families whose math
stays defined (pointwise, reduction, softmax, matmul, pooling, transposes)
draws extremal inputs (values.py): infinities, NaN, values near the
type's largest and subnormals.
"""

import math
import os
import sys

import numpy as np

from .program import FAMILIES, elements
from .shapes import EDGES, SMALL, channels_last, dims_within, layout, ordered, size

EXTREMAL = 0.2
BUDGET = 1 << 17  # elements of a configuration's largest tensor

UNARY = (("relu", {}), ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}),
         ("swish", {"beta": 1.5}), ("sigmoid", {}), ("tanh", {}), ("elu", {"alpha": 0.7}),
         ("leaky_relu", {"negative_slope": 0.2}), ("softplus", {}),
         ("softplus", {"beta": 2.0, "threshold": 3.0}), ("exp", {}), ("abs", {}), ("neg", {}),
         ("square", {}), ("reciprocal", {}), ("sin", {}), ("cos", {}), ("erf", {}),
         ("floor", {}), ("ceil", {}), ("log", {}), ("sqrt", {}), ("rsqrt", {}))
POSITIVE = ("log", "sqrt", "rsqrt")
BINARY = ("add", "sub", "mul", "div", "max", "min", "pow")
EPILOGUE = ("relu", "gelu", "silu", "tanh", "sigmoid")
REDUCTIONS = ("sum", "mean", "max", "min", "prod", "amax", "norm1", "norm2")


def _dtype(rng, choices=("f32", "f16", "bf16")):
    return str(choices[int(rng.integers(len(choices)))])


def _tensor(dims, dtype, strides=None, draw="normal", scale=1.0):
    return {"dims": [int(d) for d in dims], "strides": strides, "dtype": dtype, "draw": draw,
            "scale": float(scale)}


def _config(family, dtype, tensors, calls, outputs, tolerance=None):
    return {"family": family, "dtype": dtype, "tensors": tensors, "calls": calls,
            "outputs": outputs, "tolerance": tolerance or {}}


def _call(op, args, out, **attrs):
    return {"op": op, "args": args, "attrs": attrs, "out": list(out)}


def _extremal(rng, draw="normal"):
    return "extremal" if rng.random() < EXTREMAL else draw


def _broadcast_of(rng, dims):
    """Dims that broadcast to ``dims``: some set to 1, some leading ones dropped."""
    out = [d if rng.random() < 0.6 else 1 for d in dims]
    return out[int(rng.integers(len(out))):] or [1]


def pointwise(rng):
    dtype = _dtype(rng)
    dims = dims_within(rng, int(rng.integers(1, 5)), BUDGET)
    out_strides = layout(rng, dims, 0.3)
    if rng.random() < 0.5:
        op, attrs = UNARY[int(rng.integers(len(UNARY)))]
        draw = "positive" if op in POSITIVE else "normal"
        tensors = {"x": _tensor(dims, dtype, layout(rng, dims), _extremal(rng, draw), 2.0)}
        calls = [_call(op, {"input": "x"}, ["y"], **attrs)]
    else:
        op = BINARY[int(rng.integers(len(BINARY)))]
        other = _broadcast_of(rng, dims)
        a, b = (dims, other) if rng.random() < 0.5 else (other, dims)
        draw = _extremal(rng)
        tensors = {"a": _tensor(a, dtype, layout(rng, a), draw),
                   "b": _tensor(b, dtype, layout(rng, b), draw)}
        if op == "pow":
            tensors["a"]["draw"], tensors["b"]["scale"] = "positive", 0.5
        calls = [_call(op, {"a": "a", "b": "b"}, ["y"])]
    return _config("pointwise", dtype, tensors, calls, {"y": {"strides": out_strides}})


def reduction(rng):
    dtype = _dtype(rng)
    rank = int(rng.integers(1, 5))
    dims = dims_within(rng, rank, BUDGET)
    axes = sorted(int(a) for a in rng.choice(rank, int(rng.integers(1, rank + 1)),
                                              replace=False))
    mode = REDUCTIONS[int(rng.integers(len(REDUCTIONS)))]
    k = math.prod(dims[a] for a in axes)
    draw = _extremal(rng)
    if mode == "prod":
        # A product of k values near 1 stays in range. Values of 1e15 are not
        # drawn: three of them overflow an f32 partial product in any order a
        # kernel multiplies in (PyTorch's f32 prod gives inf too) where the
        # float64 reference's whole product may be finite.
        draw = "near_one" if draw == "normal" else "extremal_near_one"
    keepdims = bool(rng.random() < 0.7)
    tensors = {"x": _tensor(dims, dtype, layout(rng, dims), draw)}
    calls = [_call("reduction", {"input": "x"}, ["y"], mode=mode, axes=axes, keepdims=keepdims)]
    tolerance = {}
    if mode in ("sum", "norm1", "mean"):
        tolerance["y"] = {"k": k, "a": "x", "b": None, "gain": 1.0 / k if mode == "mean" else 1.0}
    return _config("reduction", dtype, tensors, calls, {"y": {"strides": None}}, tolerance)


def softmax(rng):
    dtype = _dtype(rng)
    rank = int(rng.integers(1, 5))
    dims = dims_within(rng, rank, BUDGET)
    axis = rank - 1 if rng.random() < 0.7 else int(rng.integers(rank))
    op = "softmax" if rng.random() < 0.5 else "log_softmax"
    scale = float((1.0, 4.0, 20.0)[int(rng.integers(3))])
    tensors = {"x": _tensor(dims, dtype, layout(rng, dims), _extremal(rng), scale)}
    calls = [_call(op, {"input": "x"}, ["y"], axis=axis)]
    return _config("softmax", dtype, tensors, calls,
                   {"y": {"strides": layout(rng, dims, 0.3)}})


def norm(rng):
    dtype = _dtype(rng)
    rank = int(rng.integers(2, 5))
    dims = dims_within(rng, rank, BUDGET)
    axis = int(rng.integers(1, rank))
    op = "layernorm" if rng.random() < 0.5 else "rmsnorm"
    training = bool(rng.random() < 0.5)
    param = [1] * axis + dims[axis:]
    tensors = {"x": _tensor(dims, dtype, layout(rng, dims), "normal", 2.0)}
    args = {"input": "x"}
    for name in ("scale", "bias"):
        if rng.random() < 0.7 and not (op == "rmsnorm" and name == "bias" and "scale" not in args):
            tensors[name] = _tensor(param, dtype)
            args[name] = name
    phase = "training" if training else "inference"
    stats = (["mean", "inv_variance"] if op == "layernorm" else ["inv_rms"]) if training else []
    out = ["y"] + stats + ([None] if op == "layernorm" and not training else [])
    calls = [_call(op, args, out, axis=axis, norm_forward_phase=phase, epsilon=1e-5)]
    outputs = {"y": {"strides": layout(rng, dims, 0.3)}}
    outputs.update({s: {"strides": None, "dtype": "keep"} for s in stats})
    return _config("norm", dtype, tensors, calls, outputs)


def batchnorm(rng):
    dtype = _dtype(rng)
    rank = int(rng.integers(3, 6))
    dims = [size(rng, SMALL), size(rng, SMALL)] + dims_within(rng, rank - 2, 4096)
    while elements(dims) > BUDGET:
        dims[0] = max(1, dims[0] // 2)
        dims[2] = max(1, dims[2] // 2)
    c = dims[1]
    cl = rng.random() < 0.5
    x_strides = channels_last(dims) if cl else layout(rng, dims, 0.3)
    y_strides = channels_last(dims) if cl else None
    per_channel = [1, c] + [1] * (rank - 2)
    kind = ("batchnorm", "batchnorm_inference", "groupnorm")[int(rng.integers(3))]
    tensors = {"x": _tensor(dims, dtype, x_strides, "normal", 2.0),
               "scale": _tensor(per_channel, "f32" if kind != "groupnorm" else dtype),
               "bias": _tensor(per_channel, "f32" if kind != "groupnorm" else dtype)}
    args = {"input": "x", "scale": "scale", "bias": "bias"}
    outputs = {"y": {"strides": y_strides}}
    if kind == "batchnorm":
        running = elements(dims) > c and rng.random() < 0.5
        out = ["y", "mean", "inv_variance"]
        if running:
            tensors["running_mean"] = _tensor(per_channel, "f32")
            tensors["running_var"] = _tensor(per_channel, "f32", draw="positive")
            args.update(in_running_mean="running_mean", in_running_var="running_var")
            out += ["next_running_mean", "next_running_var"]
        else:
            out += [None, None]
        calls = [_call("batchnorm", args, out, epsilon=1e-5, momentum=0.1)]
    elif kind == "batchnorm_inference":
        tensors["mean"] = _tensor(per_channel, "f32")
        tensors["variance"] = _tensor(per_channel, "f32", draw="positive")
        args.update(mean="mean", variance="variance")
        calls = [_call("batchnorm_inference", args, ["y"], epsilon=1e-5)]
        out = ["y"]
    else:
        groups = [g for g in range(1, c + 1) if c % g == 0]
        groups = groups[int(rng.integers(len(groups)))]
        out = ["y", "mean", "inv_variance"]
        calls = [_call("groupnorm", args, out, groups=groups, epsilon=1e-5,
                       norm_forward_phase="training")]
    outputs.update({s: {"strides": None, "dtype": "keep"} for s in out[1:] if s})
    return _config("batchnorm", dtype, tensors, calls, outputs)


def pooling(rng):
    dtype = _dtype(rng)
    nd = 2 if rng.random() < 0.75 else 3
    while True:
        window = [int(rng.integers(1, 5)) for _ in range(nd)]
        stride = [int(rng.integers(1, 4)) for _ in range(nd)]
        pad = [int(rng.integers(0, w // 2 + 1)) for w in window]
        image = [size(rng, EDGES[:16] if nd == 2 else SMALL) for _ in range(nd)]
        # PyTorch's pooling takes no window wider than the image, padding or not.
        if all(i >= w for i, w in zip(image, window)):
            break
    dims = [size(rng, SMALL[:6]), size(rng, SMALL)] + image
    while elements(dims) > BUDGET:
        dims[1] = max(1, dims[1] // 2)
        dims[0] = max(1, dims[0] // 2)
    mode = "max" if rng.random() < 0.5 else "avg"
    attrs = dict(mode=mode, window=window, stride=stride, padding=pad,
                 count_include_pad=bool(rng.random() < 0.5))
    cl = rng.random() < 0.5
    strides = channels_last(dims) if cl else None
    # Ties within a window: the first maximum (row-major window order) wins
    # on both sides.
    tensors = {"x": _tensor(dims, dtype, strides, _extremal(rng))}
    out = [dims[0], dims[1]] + [(i + 2 * p - w) // s + 1
                                for i, p, w, s in zip(image, pad, window, stride)]
    if rng.random() < 0.5:
        calls = [_call("pooling", {"input": "x"}, ["y"], **attrs)]
        outputs = {"y": {"strides": channels_last(out) if cl else None}}
    else:
        tensors["x"]["draw"] = "normal"
        tensors["dy"] = _tensor(out, dtype, channels_last(out) if cl else None)
        calls = [_call("pooling_backward", {"grad": "dy", "input": "x"}, ["dx"], **attrs)]
        outputs = {"dx": {"strides": strides}}
    return _config("pooling", dtype, tensors, calls, outputs)


def _matmul_operands(rng, dtype, budget=BUDGET):
    while True:
        m, n, k = size(rng), size(rng), size(rng)
        batch = dims_within(rng, int(rng.integers(0, 3)), 16, SMALL[:5])
        if max(m, n) * k * max(1, elements(batch)) <= budget and m * n * elements(batch) <= budget:
            break
    a_batch = [b if rng.random() < 0.7 else 1 for b in batch]
    b_batch = [b if rng.random() < 0.7 else 1 for b in batch][int(rng.integers(len(batch) + 1)):]
    a, b = a_batch + [m, k], b_batch + [k, n]

    def strides(dims):
        r = rng.random()
        if r < 0.5:
            return None
        order = list(range(len(dims)))
        if r < 0.8:
            order[-2:] = order[-1], order[-2]  # column-major (transposed) matrices
        return ordered(dims, order, int(rng.integers(0, 9)) if rng.random() < 0.5 else 0)
    return {"a": _tensor(a, dtype, strides(a)), "b": _tensor(b, dtype, strides(b))}, k


def matmul(rng):
    dtype = _dtype(rng)
    tensors, k = _matmul_operands(rng, dtype)
    if rng.random() < EXTREMAL:
        tensors["a"]["draw"] = "extremal"
    calls = [_call("matmul", {"A": "a", "B": "b"}, ["y"])]
    return _config("matmul", dtype, tensors, calls, {"y": {"strides": None}},
                   {"y": {"k": k, "a": "a", "b": "b", "gain": 1.0}})


def _gpu_cases():
    here = os.path.dirname(os.path.abspath(__file__))
    cases = os.path.join(os.path.dirname(os.path.dirname(here)), "test", "gpu")
    if cases not in sys.path:
        sys.path.insert(0, cases)
    import gpu_cases.attention_backward_random as abr
    import gpu_cases.attention_random as ar
    import gpu_cases.conv_random as cr
    return cr, ar, abr


def conv(rng):
    cr, _, _ = _gpu_cases()
    dtype = _dtype(rng, ("f16", "bf16"))
    direction = ("fprop", "dgrad", "wgrad")[int(rng.integers(3))]
    c = cr._draw_one(rng, direction)
    geometry = dict(pre_padding=list(c.pre), post_padding=list(c.post), stride=list(c.stride),
                    dilation=list(c.dilation), conv_mode=c.mode)

    def t(dims):
        return _tensor(dims, dtype, c.strides(dims))
    if direction == "fprop":
        tensors = {"x": t(c.x_dims), "w": t(c.w_dims)}
        calls = [_call("conv_fprop", {"image": "x", "weight": "w"}, ["y"], **geometry)]
        out, dims, k, ab = "y", c.y_dims, c.reduced, ("x", "w")
    elif direction == "dgrad":
        tensors = {"dy": t(c.y_dims), "w": t(c.w_dims)}
        calls = [_call("conv_dgrad", {"loss": "dy", "filter": "w"}, ["dx"], dx_dim=c.x_dims,
                       **geometry)]
        out, dims, k, ab = "dx", c.x_dims, c.k // c.groups * math.prod(c.filter), ("dy", "w")
    else:
        tensors = {"x": t(c.x_dims), "dy": t(c.y_dims)}
        calls = [_call("conv_wgrad", {"image": "x", "loss": "dy"}, ["dw"], dw_dim=c.w_dims,
                       **geometry)]
        out, dims, k, ab = "dw", c.w_dims, c.n * math.prod(c.out), ("x", "dy")
    return _config("conv", dtype, tensors, calls,
                   {out: {"strides": c.strides(dims)}},
                   {out: {"k": k, "a": ab[0], "b": ab[1], "gain": 1.0}})


def attention(rng):
    _, ar, abr = _gpu_cases()
    dtype = _dtype(rng, ("f16", "bf16"))
    backward = rng.random() < 0.4
    att = (abr if backward else ar)._draw_one(rng)
    if att.bias is None and rng.random() < 0.3:
        att = ar.with_masks(rng, att)
    masks = att.masks()
    names = ("q", "k", "v")
    tensors = {x: _tensor(att.dims(x), dtype, att.strides(x)) for x in names}
    args = {x: x for x in names}
    bias_type = getattr(att, "bias_type", None)
    if att.bias is not None:
        tensors["bias"] = _tensor(att.bias, "f32" if bias_type == "f32" else
                                  ({"f16": "bf16", "bf16": "f16"}[dtype] if bias_type else dtype))
        args["bias"] = "bias"
    if not backward:
        out = ["o", "stats" if att.stats else None]
        calls = [_call("sdpa", args, out, attn_scale=att.scale, generate_stats=att.stats,
                       **masks)]
        outputs = {"o": {"strides": att.strides("o")}}
        if att.stats:
            outputs["stats"] = {"strides": None, "dtype": "keep"}
        return _config("attention", dtype, tensors, calls, outputs)
    # o and the statistics: the float64 forward of the drawn q, k, v
    # (values.py), o rounded to its type.
    tensors["o"] = _tensor(att.dims("o"), "f32" if "o" in att.wide else dtype,
                           att.strides("o"), "forward_o")
    tensors["stats"] = _tensor([att.batch, att.heads, att.sq, 1], "f32", None, "forward_stats")
    tensors["do"] = _tensor(att.dims("do"), dtype, att.strides("do"))
    args.update(o="o", dO="do", stats="stats")
    calls = [_call("sdpa_backward", args, ["dq", "dk", "dv"], attn_scale=att.scale,
                   use_deterministic_algorithm=att.deterministic, **masks)]
    # An f32 gradient of 16-bit inputs carries the input type's error, not
    # f32's: the kernels round P and dS = P (dP - delta) to the input type
    # before the products dV = P^T dO, dQ = dS K and dK = dS^T Q. So its
    # tolerance is the input type's ("precision"), as in the GPU tests
    # (gpu_cases/attention_backward_random.py: Case.rtol).
    outputs = {x: {"strides": att.strides(x), "dtype": "f32" if x in att.wide else dtype,
                   "precision": dtype} for x in ("dq", "dk", "dv")}
    return _config("attention", dtype, tensors, calls, outputs)


def transpose(rng):
    dtype = _dtype(rng)
    rank = int(rng.integers(1, 5))
    dims = dims_within(rng, rank, BUDGET)
    draw = _extremal(rng)
    tensors = {"x": _tensor(dims, dtype, layout(rng, dims), draw)}
    kind = int(rng.integers(3))
    if kind == 0 or rank == 1 and kind == 2:
        perm = [int(i) for i in rng.permutation(rank)]
        calls = [_call("transpose", {"input": "x"}, ["y"], permutation=perm)]
        out = [dims[p] for p in perm]
    elif kind == 1:
        start = [int(rng.integers(0, d)) for d in dims]
        limit = [int(rng.integers(s + 1, d + 1)) for s, d in zip(start, dims)]
        step = [int(rng.integers(1, 4)) for _ in dims]
        calls = [_call("slice", {"input": "x"}, ["y"], start=start, limit=limit, step=step)]
        out = [-(-(lim - s) // st) for s, lim, st in zip(start, limit, step)]
    else:
        axis = int(rng.integers(rank))
        other = list(dims)
        other[axis] = size(rng, SMALL)
        tensors["x2"] = _tensor(other, dtype, layout(rng, other), draw)
        calls = [_call("concat", {"inputs": ["x", "x2"]}, ["y"], axis=axis)]
        out = list(dims)
        out[axis] += other[axis]
    return _config("transpose", dtype, tensors, calls, {"y": {"strides": layout(rng, out, 0.4)}})


def _epilogue(rng, tensors, calls, y, dims, dtype, channel_axis):
    """A random chain after ``y``: bias, activation, scale, residual; returns
    (the last tensor's name, the gain it multiplies the sums' errors by)."""
    gain = 1.0
    per_channel = [1] * len(dims)
    per_channel[channel_axis] = dims[channel_axis]
    for step in range(int(rng.integers(1, 5))):
        kind = int(rng.integers(4))
        name = f"e{step}"
        if kind == 0:
            tensors[f"bias{step}"] = _tensor(per_channel, dtype)
            calls.append(_call("add", {"a": y, "b": f"bias{step}"}, [name]))
        elif kind == 1:
            op = EPILOGUE[int(rng.integers(len(EPILOGUE)))]
            calls.append(_call(op, {"input": y}, [name]))
            gain *= 1.2
        elif kind == 2:
            tensors[f"scale{step}"] = _tensor(per_channel, dtype, draw="positive")
            calls.append(_call("mul", {"a": y, "b": f"scale{step}"}, [name]))
            gain *= 2.0
        else:
            tensors[f"res{step}"] = _tensor(dims, dtype)
            calls.append(_call("add", {"a": y, "b": f"res{step}"}, [name]))
        y = name
    return y, gain


def fusion(rng):
    dtype = _dtype(rng, ("f16", "bf16"))
    kind = int(rng.integers(3))
    if kind == 0:
        tensors, k = _matmul_operands(rng, dtype)
        calls = [_call("matmul", {"A": "a", "B": "b"}, ["mm"])]
        a, b = tensors["a"]["dims"], tensors["b"]["dims"]
        batch = np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))
        dims = [*batch, a[-2], b[-1]]
        y, gain = _epilogue(rng, tensors, calls, "mm", dims, dtype, len(dims) - 1)
        tolerance = {y: {"k": k, "a": "a", "b": "b", "gain": gain}}
        return _config("fusion", dtype, tensors, calls, {y: {"strides": None}}, tolerance)
    if kind == 1:
        cr, _, _ = _gpu_cases()
        c = cr._draw_one(rng, "fprop")
        tensors = {"x": _tensor(c.x_dims, dtype, c.strides(c.x_dims)),
                   "w": _tensor(c.w_dims, dtype, c.strides(c.w_dims))}
        calls = [_call("conv_fprop", {"image": "x", "weight": "w"}, ["conv"],
                       pre_padding=list(c.pre), post_padding=list(c.post),
                       stride=list(c.stride), dilation=list(c.dilation), conv_mode=c.mode)]
        y, gain = _epilogue(rng, tensors, calls, "conv", c.y_dims, dtype, 1)
        for t in tensors.values():
            if t["dims"] == c.y_dims and t["strides"] is None:
                t["strides"] = c.strides(c.y_dims)
        tolerance = {y: {"k": c.reduced, "a": "x", "b": "w", "gain": gain}}
        return _config("fusion", dtype, tensors, calls, {y: {"strides": c.strides(c.y_dims)}},
                       tolerance)
    # A pointwise chain into a reduction.
    rank = int(rng.integers(1, 5))
    dims = dims_within(rng, rank, BUDGET)
    tensors = {"x": _tensor(dims, dtype, layout(rng, dims))}
    calls, y = [], "x"
    for step in range(int(rng.integers(1, 4))):
        name = f"p{step}"
        if rng.random() < 0.5:
            op = ("relu", "tanh", "sigmoid", "abs", "silu")[int(rng.integers(5))]
            calls.append(_call(op, {"input": y}, [name]))
        else:
            other = _broadcast_of(rng, dims)
            tensors[f"o{step}"] = _tensor(other, dtype)
            op = ("add", "mul", "max")[int(rng.integers(3))]
            calls.append(_call(op, {"a": y, "b": f"o{step}"}, [name]))
        y = name
    axes = sorted(int(a) for a in rng.choice(rank, int(rng.integers(1, rank + 1)),
                                              replace=False))
    mode = ("sum", "max", "mean", "amax")[int(rng.integers(4))]
    calls.append(_call("reduction", {"input": y}, ["r"], mode=mode, axes=axes, keepdims=True))
    k = math.prod(dims[a] for a in axes)
    tolerance = {}
    if mode in ("sum", "mean"):
        # The chain's values are at most |x| times the product of the |o|
        # factors: bounded by a few standard deviations.
        tolerance["r"] = {"k": k, "a": "x", "b": None, "gain": (1.0 / k if mode == "mean"
                                                                else 1.0) * 16.0}
    return _config("fusion", dtype, tensors, calls, {"r": {"strides": None}}, tolerance)


DRAW = {"pointwise": pointwise, "reduction": reduction, "softmax": softmax, "norm": norm,
        "batchnorm": batchnorm, "pooling": pooling, "matmul": matmul, "conv": conv,
        "attention": attention, "transpose": transpose, "fusion": fusion}
assert tuple(DRAW) == FAMILIES


def draw(family, seed, index):
    """Configuration ``index`` of ``family`` for ``seed``."""
    if family not in DRAW:
        raise ValueError(f"family: expected one of {', '.join(FAMILIES)}, got {family!r}")
    rng = np.random.default_rng([int(seed), FAMILIES.index(family), int(index)])
    config = DRAW[family](rng)
    config.update(index=int(index), seed=int(seed))
    return config
