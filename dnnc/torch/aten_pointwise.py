"""ATen's pointwise ops, casts and data movement onto ``dnnc.Graph``: the
functions aten_map.TABLE holds for them, each ``(low, node) -> value``
(aten_map.py says how they are called).

Pointwise math is f32 in dnnc; an op with an integer result stays in torch.
``sigmoid_backward`` and ``tanh_backward`` take the forward's output, as
ATen's do (dnnc's activation backwards take its input), so they are
written out as products. A transpose of a region input is an input of
transposed strides (Lowering.permuted).
"""

import math
import operator

import torch

from dnnc.errors import UnsupportedError
from dnnc.graph import contiguous_strides
from dnnc.torch.lowering import arg, dims, dnnc_type, example

aten = torch.ops.aten

# -- pointwise ---------------------------------------------------------------------


def _no_integer_math(node):
    val = example(node)
    if isinstance(val, torch.Tensor) and not (val.dtype.is_floating_point or
                                               val.dtype == torch.bool):
        raise UnsupportedError(f"{node.target}: a {val.dtype} result: dnnc computes "
                               "pointwise math in f32 (exact integers up to 2^24 only)")


def _binary(method, alpha_of=None):
    def lower(low, node):
        _no_integer_math(node)
        a, b = low.value(node.args[0]), low.value(node.args[1])
        alpha = arg(node, 2, "alpha", 1) if alpha_of else 1
        if alpha != 1:
            b = low.graph.mul(b, low.value(alpha))
        return low.shaped(getattr(low.graph, method)(a, b), node)
    return lower


def _rbinary(method):
    def lower(low, node):   # rsub(x, other, alpha): other - alpha * x
        _no_integer_math(node)
        x = low.value(node.args[0])
        alpha = arg(node, 2, "alpha", 1)
        if alpha != 1:
            x = low.graph.mul(x, low.value(alpha))
        return low.shaped(getattr(low.graph, method)(low.value(node.args[1]), x), node)
    return lower


def _compare(method):
    def lower(low, node):
        return low.shaped(getattr(low.graph, method)(low.value(node.args[0]),
                                                     low.value(node.args[1])), node)
    return lower


def _unary(method, **attrs):
    def lower(low, node):
        _no_integer_math(node)
        return getattr(low.graph, method)(low.value(node.args[0]), **attrs)
    return lower


def _gelu(low, node):
    approximate = node.kwargs.get("approximate", arg(node, 1, "approximate", "none"))
    return low.graph.gelu(low.value(node.args[0]), approximate=approximate)


def _leaky_relu(low, node):
    return low.graph.leaky_relu(low.value(node.args[0]),
                                negative_slope=float(arg(node, 1, "negative_slope", 0.01)))


def _softplus(low, node):
    return low.graph.softplus(low.value(node.args[0]), beta=float(arg(node, 1, "beta", 1.0)),
                              threshold=float(arg(node, 2, "threshold", 20.0)))


def _elu(low, node):
    alpha, scale = arg(node, 1, "alpha", 1.0), arg(node, 2, "scale", 1.0)
    if scale != 1 or arg(node, 3, "input_scale", 1.0) != 1:
        raise UnsupportedError(f"{node.target}: scale and input_scale: expected 1, got "
                               f"{scale} and {arg(node, 3, 'input_scale', 1.0)}")
    return low.graph.elu(low.value(node.args[0]), alpha=float(alpha))


def _clamp(low, node):
    x = low.value(node.args[0])
    lo, hi = arg(node, 1, "min"), arg(node, 2, "max")
    if node.target is aten.clamp_min.default:
        lo, hi = node.args[1], None
    elif node.target is aten.clamp_max.default:
        lo, hi = None, node.args[1]
    if lo is not None:
        x = low.graph.max(x, low.value(lo))
    if hi is not None:
        x = low.graph.min(x, low.value(hi))
    return low.shaped(x, node)


def _hardtanh(low, node):
    x = low.value(node.args[0])
    x = low.graph.max(x, low.value(float(arg(node, 1, "min_val", -1.0))))
    return low.graph.min(x, low.value(float(arg(node, 2, "max_val", 1.0))))


def _pow_scalar(low, node):
    _no_integer_math(node)
    x, e = node.args[0], node.args[1]
    if e == 2:
        return low.graph.square(low.value(x))
    if e == 1:
        return low.graph.mul(low.value(x), low.value(1.0))
    if e == 0.5:
        return low.graph.sqrt(low.value(x))
    if e == -0.5:
        return low.graph.rsqrt(low.value(x))
    return low.graph.pow(low.value(x), low.value(e))


def _where(low, node):
    cond = low.value(node.args[0])
    return low.shaped(low.graph.select(cond, low.value(node.args[1]),
                                       low.value(node.args[2])), node)


def _logical(method):
    def lower(low, node):
        return low.shaped(getattr(low.graph, method)(low.value(node.args[0]),
                                                     low.value(node.args[1])), node)
    return lower


def _activation_backward(method, **attrs):
    def lower(low, node):   # (grad, forward input)
        return getattr(low.graph, method)(low.value(node.args[0]), low.value(node.args[1]),
                                          **attrs)
    return lower


def _threshold_backward(low, node):
    if node.args[2] != 0:
        raise UnsupportedError(f"{node.target}: threshold: expected 0 (relu's), got "
                               f"{node.args[2]}")
    return low.graph.relu_backward(low.value(node.args[0]), low.value(node.args[1]))


def _gelu_backward(low, node):
    approximate = node.kwargs.get("approximate", arg(node, 2, "approximate", "none"))
    return low.graph.gelu_backward(low.value(node.args[0]), low.value(node.args[1]),
                                   approximate=approximate)


def _leaky_relu_backward(low, node):
    if arg(node, 3, "self_is_result", False):
        raise UnsupportedError(f"{node.target}: self_is_result: expected False (dnnc reads the "
                               "forward's input), got True")
    return low.graph.leaky_relu_backward(low.value(node.args[0]), low.value(node.args[1]),
                                         negative_slope=float(node.args[2]))


def _softplus_backward(low, node):
    return low.graph.softplus_backward(low.value(node.args[0]), low.value(node.args[1]),
                                       beta=float(node.args[2]), threshold=float(node.args[3]))


def _sigmoid_backward(low, node):   # (grad, output): grad * y * (1 - y)
    g, y = low.graph, low.value(node.args[1])
    return g.mul(low.value(node.args[0]), g.mul(y, g.sub(low.value(1.0), y)))


def _tanh_backward(low, node):      # (grad, output): grad * (1 - y^2)
    g, y = low.graph, low.value(node.args[1])
    return g.mul(low.value(node.args[0]), g.sub(low.value(1.0), g.square(y)))


# -- casts and data movement ---------------------------------------------------------


def _to_copy(low, node):
    val, src = example(node), example(node.args[0])
    if val.device != src.device:
        raise UnsupportedError(f"{node.target}: a copy from {src.device} to {val.device}: "
                               "expected one device")
    return low.graph.cast(low.value(node.args[0]), dnnc_type(val.dtype, str(node.target)))


def _identity(low, node):
    return low.value(node.args[0])


def _reshape(low, node):
    return low.graph.reshape(low.value(node.args[0]), dims(node))


def _t(low, node):
    if len(dims(node)) < 2:
        return low.value(node.args[0])
    return low.permuted(node.args[0], [1, 0])


def _transpose(low, node):
    rank = len(dims(node))
    perm = list(range(rank))
    a, b = int(node.args[1]) % rank, int(node.args[2]) % rank
    perm[a], perm[b] = perm[b], perm[a]
    return low.permuted(node.args[0], perm)


def _permute(low, node):
    rank = len(dims(node))
    return low.permuted(node.args[0], [int(d) % rank for d in node.args[1]])


def _expand(low, node):
    return low.shaped(low.value(node.args[0]), node)


def _slice(low, node):
    x = low.value(node.args[0])
    rank = len(x.dim)
    dim = int(arg(node, 1, "dim", 0)) % rank
    start, end = arg(node, 2, "start", None), arg(node, 3, "end", None)
    step = int(arg(node, 4, "step", 1))
    slices = [slice(None)] * rank
    slices[dim] = slice(start, end, step)
    return low.graph.slice(x, slices)


def _select(low, node):
    x = low.value(node.args[0])
    rank = len(x.dim)
    dim, index = int(node.args[1]) % rank, int(node.args[2])
    index %= x.dim[dim]
    slices = [slice(None)] * rank
    slices[dim] = slice(index, index + 1)
    return low.graph.reshape(low.graph.slice(x, slices), dims(node))


def _split(low, node):
    x = low.value(node.args[0])
    rank = len(x.dim)
    dim = int(arg(node, 2, "dim", 0)) % rank
    parts = []
    start = 0
    for val in example(node):
        size = int(val.shape[dim])
        slices = [slice(None)] * rank
        slices[dim] = slice(start, start + size)
        parts.append(low.graph.slice(x, slices))
        start += size
    return tuple(parts)


def _cat(low, node):
    tensors = [low.value(t) for t in node.args[0]]
    tensors = [t for t in tensors if any(d != 0 for d in t.dim)] or tensors[:1]
    dim = int(arg(node, 1, "dim", 0))
    if len(tensors) == 1:
        return tensors[0]
    return low.graph.concat(tensors, dim % len(tensors[0].dim))


def _full(low, node):
    val = example(node)
    value = low.graph.constant(float(node.args[1]) if node.target is aten.full.default
                               else (1.0 if node.target is aten.ones.default else 0.0))
    return low.graph.cast(low.full(value, val.shape), dnnc_type(val.dtype, str(node.target)))


def _dense_strides(shape, strides):
    """Whether ``strides`` are row-major over ``shape`` (dims of size 1 aside)."""
    return all(n == 1 or a == b
               for n, a, b in zip(shape, strides, contiguous_strides(list(shape))))


def _as_strided(low, node):
    # (input, size, stride, storage_offset): what functionalized views leave.
    # dnnc's values are logical, so only two forms are taken: the input's own
    # layout (an identity) and a row-major view of a row-major input (a reshape).
    x, size, stride = node.args[0], [int(d) for d in node.args[1]], list(node.args[2])
    offset = arg(node, 3, "storage_offset", 0) or 0
    val = example(x)
    if val.storage_offset() != 0:   # as_strided counts from its storage's start
        raise UnsupportedError(f"{node.target}: an input at storage offset "
                               f"{val.storage_offset()}: expected 0")
    if offset == 0 and size == list(val.shape) and all(
            n == 1 or a == b for n, a, b in zip(size, stride, val.stride())):
        return low.value(x)
    if offset == 0 and val.numel() == math.prod(size) and \
            _dense_strides(val.shape, val.stride()) and _dense_strides(size, stride):
        return low.graph.reshape(low.value(x), size)
    raise UnsupportedError(f"{node.target}: size {size}, stride {stride}, offset {offset} of "
                           f"an input of dims {list(val.shape)} strides {list(val.stride())}: "
                           "expected its own layout or a row-major view of a row-major input")


def _as_strided_scatter(low, node):
    # (base, src, size, stride, storage_offset): src written over all of base.
    base, src = node.args[0], node.args[1]
    size, stride = [int(d) for d in node.args[2]], list(node.args[3])
    offset = arg(node, 4, "storage_offset", 0) or 0
    val = example(base)
    if offset == 0 and val.storage_offset() == 0 and val.numel() == math.prod(size) and \
            _dense_strides(val.shape, val.stride()) and _dense_strides(size, stride):
        return low.graph.cast(low.graph.reshape(low.value(src), dims(node)),
                              dnnc_type(val.dtype, str(node.target)))
    raise UnsupportedError(f"{node.target}: a scatter over part of the base (size {size}, "
                           f"stride {stride}, offset {offset}): expected all of it, row-major")


def _copy(low, node):   # (dst, src): src broadcast to dst's dims, in dst's type
    val = example(node)
    src = low.shaped(low.value(node.args[1]), node)
    return low.graph.cast(src, dnnc_type(val.dtype, str(node.target)))


def _new_zeros(low, node):   # (input, size): zeros of the input's type
    val = example(node)
    return low.graph.cast(low.full(low.graph.constant(0.0), val.shape),
                          dnnc_type(val.dtype, str(node.target)))


def _scalar_tensor(low, node):
    val = example(node)
    return low.graph.cast(low.graph.constant(float(node.args[0])),
                          dnnc_type(val.dtype, str(node.target)))


def _getitem(low, node):
    values = low.env[node.args[0]]
    if not isinstance(values, tuple):
        raise UnsupportedError(f"getitem: expected a tuple from {node.args[0].name}")
    v = values[node.args[1]]
    if v is None and node.users and isinstance(example(node), torch.Tensor):
        raise UnsupportedError(f"{node.args[0].target}: result {node.args[1]} is not made "
                               "by dnnc's op")
    return v   # None for a result no one reads, or one that is None or a number


def _table():
    t = {}
    t = {}
    for op, method, alpha in (("add", "add", True), ("sub", "sub", True), ("mul", "mul", False),
                              ("div", "div", False)):
        packet = getattr(aten, op)
        t[packet.Tensor] = _binary(method, alpha)
        t[packet.Scalar] = _binary(method, alpha)
    t[aten.rsub.Scalar] = _rbinary("sub")
    t[aten.rsub.Tensor] = _rbinary("sub")
    t[aten.maximum.default] = _binary("max")
    t[aten.minimum.default] = _binary("min")
    t[aten.pow.Tensor_Tensor] = _binary("pow")
    t[aten.pow.Tensor_Scalar] = _pow_scalar
    for op, method in (("eq", "cmp_eq"), ("ne", "cmp_ne"), ("lt", "cmp_lt"), ("le", "cmp_le"),
                       ("gt", "cmp_gt"), ("ge", "cmp_ge")):
        t[getattr(aten, op).Tensor] = _compare(method)
        t[getattr(aten, op).Scalar] = _compare(method)
    t[aten.logical_and.default] = _logical("logical_and")
    t[aten.logical_or.default] = _logical("logical_or")
    t[aten.logical_not.default] = lambda low, n: low.graph.logical_not(low.value(n.args[0]))
    t[aten.where.self] = _where
    for op in ("relu", "silu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "abs", "neg",
               "reciprocal", "sin", "cos", "erf", "floor", "ceil"):
        t[getattr(aten, op).default] = _unary(op)
    t[aten.square.default] = _unary("square")
    t[aten.gelu.default] = _gelu
    t[aten.leaky_relu.default] = _leaky_relu
    t[aten.softplus.default] = _softplus
    t[aten.elu.default] = _elu
    t[aten.clamp.default] = _clamp
    t[aten.clamp_min.default] = _clamp
    t[aten.clamp_max.default] = _clamp
    t[aten.hardtanh.default] = _hardtanh
    t[aten.threshold_backward.default] = _threshold_backward
    t[aten.gelu_backward.default] = _gelu_backward
    t[aten.silu_backward.default] = _activation_backward("silu_backward")
    t[aten.sigmoid_backward.default] = _sigmoid_backward
    t[aten.tanh_backward.default] = _tanh_backward
    t[aten.leaky_relu_backward.default] = _leaky_relu_backward
    t[aten.softplus_backward.default] = _softplus_backward
    # casts and data movement
    t[aten._to_copy.default] = _to_copy
    t[torch.ops.prims.convert_element_type.default] = _to_copy
    for op in (aten.clone.default, aten.detach.default, aten.alias.default,
               aten.lift_fresh_copy.default):
        t[op] = _identity
    for op in (aten.view.default, aten._unsafe_view.default, aten.reshape.default,
               aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims,
               aten.squeeze.default, aten.flatten.using_ints):
        t[op] = _reshape
    t[aten.t.default] = _t
    t[aten.transpose.int] = _transpose
    t[aten.permute.default] = _permute
    t[aten.expand.default] = _expand
    t[aten.slice.Tensor] = _slice
    t[aten.select.int] = _select
    t[aten.split.Tensor] = _split
    t[aten.split_with_sizes.default] = _split
    t[aten.cat.default] = _cat
    t[aten.full.default] = _full
    t[aten.zeros.default] = _full
    t[aten.ones.default] = _full
    t[aten.scalar_tensor.default] = _scalar_tensor
    t[aten.as_strided.default] = _as_strided
    t[aten.as_strided_scatter.default] = _as_strided_scatter
    t[aten.copy.default] = _copy
    t[aten.new_zeros.default] = _new_zeros
    t[operator.getitem] = _getitem
    return t


TABLE = _table()

# Ops that compute nothing: a region of only these stays in torch.
DATA_MOVEMENT = frozenset(op for op, fn in TABLE.items()
                          if fn in (_identity, _reshape, _t, _transpose, _permute, _expand,
                                    _slice, _select, _split, _getitem, _as_strided))
