"""ATen ops onto ``dnnc.Graph``: the table of the torch.compile backend.

``TABLE`` maps an ATen overload (what AOTAutograd's graphs hold) to a
function ``(low, node) -> value`` that adds the op to ``low.graph``
(a lowering.Lowering) and returns its dnnc tensor, or a tuple of them for
an op of several results (``operator.getitem`` picks one). A function
raises ``UnsupportedError`` saying why for arguments dnnc cannot take (a
transposed convolution, dropout, an attention mask of booleans); dnnc's own
errors (``GraphError``, ``VerificationError``) say the same for shapes and
types its ops refuse. ``support(node)`` tries a node alone and returns None
or that reason, which ``dnnc.torch.explain`` reports.

Semantics follow ATen's: ``amax`` is a max (dnnc's ``amax`` mode is the
largest absolute value); a norm's statistics have ATen's shapes (reshaped
from dnnc's); a backward op reads what its forward saved.
"""

import operator

import torch

from dnnc.errors import DnncError, UnsupportedError
from dnnc.graph import Tensor
from dnnc.torch.lowering import Filler, Lowering, check_static, dnnc_type, example

aten = torch.ops.aten


def arg(node, i, name, default=None):
    """Argument ``i`` (keyword ``name``) of ``node``, else ``default``."""
    if i < len(node.args):
        return node.args[i]
    return node.kwargs.get(name, default)


def _dims(node):
    return [int(d) for d in example(node).shape]


def _axes(axes, rank):
    if axes is None or (isinstance(axes, (list, tuple)) and len(axes) == 0):
        return list(range(rank))
    if isinstance(axes, int):
        axes = [axes]
    return sorted({int(a) % rank for a in axes})


def _used(node):
    """The result indices of a multi-result ``node`` that some node reads."""
    return {u.args[1] for u in node.users if u.target is operator.getitem and u.users}


def _spatial(value, nd, default):
    if value is None or (isinstance(value, (list, tuple)) and len(value) == 0):
        return [default] * nd
    value = [int(v) for v in (value if isinstance(value, (list, tuple)) else [value])]
    return value * nd if len(value) == 1 else value


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
    return low.graph.reshape(low.value(node.args[0]), _dims(node))


def _t(low, node):
    if len(_dims(node)) < 2:
        return low.value(node.args[0])
    return low.permuted(node.args[0], [1, 0])


def _transpose(low, node):
    rank = len(_dims(node))
    perm = list(range(rank))
    a, b = int(node.args[1]) % rank, int(node.args[2]) % rank
    perm[a], perm[b] = perm[b], perm[a]
    return low.permuted(node.args[0], perm)


def _permute(low, node):
    rank = len(_dims(node))
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
    return low.graph.reshape(low.graph.slice(x, slices), _dims(node))


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


# -- matmul and convolution ----------------------------------------------------------


def _matmul(low, node):
    a, b = low.value(node.args[0]), low.value(node.args[1])
    return low.graph.matmul(a, b, compute_data_type=low.compute("matmul", a, b))


def _addmm(low, node):   # beta * bias + alpha * (a @ b)
    g = low.graph
    a, b = low.value(node.args[1]), low.value(node.args[2])
    y = g.matmul(a, b, compute_data_type=low.compute("matmul", a, b))
    beta, alpha = arg(node, 3, "beta", 1), arg(node, 4, "alpha", 1)
    if alpha != 1:
        y = g.mul(y, low.value(alpha))
    if beta == 0:
        return y
    bias = low.value(node.args[0])
    if beta != 1:
        bias = g.mul(bias, low.value(beta))
    return low.shaped(g.add(y, bias), node)


def _conv_args(node, first):
    """stride, padding, dilation, transposed, output_padding, groups from
    argument ``first`` on."""
    stride, padding, dilation, transposed, output_padding, groups = node.args[first:first + 6]
    if transposed:
        raise UnsupportedError(f"{node.target}: transposed: expected False (a transposed "
                               "convolution stays in torch), got True")
    return list(stride), list(padding), list(dilation), int(groups)


def _channel_view(low, t, rank):
    """A per-channel vector [C] as [1, C, 1, ...] of ``rank``."""
    return low.graph.reshape(t, [1, t.dim[0]] + [1] * (rank - 2))


def _convolution(low, node):
    x, w = low.value(node.args[0]), low.value(node.args[1])
    stride, padding, dilation, _ = _conv_args(node, 3)
    y = low.graph.conv_fprop(x, w, padding=padding, stride=stride, dilation=dilation,
                             compute_data_type=low.compute("conv", x, w))
    if node.args[2] is not None:
        y = low.graph.add(y, _channel_view(low, low.value(node.args[2]), len(x.dim)))
    return y


def _convolution_backward(low, node):
    # (grad, input, weight, bias_sizes, stride, padding, dilation, transposed,
    #  output_padding, groups, output_mask) -> (dx, dw, dbias)
    g = low.graph
    dy, x, w = (low.value(a) for a in node.args[:3])
    stride, padding, dilation, _ = _conv_args(node, 4)
    mask = list(node.args[10])
    common = dict(padding=padding, stride=stride, dilation=dilation,
                  compute_data_type=low.compute("conv", dy, w, x))
    dx = g.conv_dgrad(dy, w, x.dim, **common) if mask[0] else None
    dw = g.conv_wgrad(x, dy, w.dim, **common) if mask[1] else None
    db = None
    if mask[2]:
        axes = [0] + list(range(2, len(dy.dim)))
        db = g.reduction(dy, "sum", axes, keepdims=False)
    return (dx, dw, db)


# -- normalization ---------------------------------------------------------------------


def _param(low, t, shape):
    return None if t is None else low.graph.reshape(low.value(t), list(shape))


def _layer_norm(low, node):
    # (input, normalized_shape, weight, bias, eps) -> (out, mean, rstd)
    x = low.value(node.args[0])
    axis = len(x.dim) - len(node.args[1])
    pshape = [1] * axis + list(x.dim[axis:])
    training = bool(_used(node) & {1, 2})
    y, mean, rstd = low.graph.layernorm(
        x, _param(low, node.args[2], pshape), _param(low, node.args[3], pshape),
        epsilon=float(node.args[4]), axis=axis,
        norm_forward_phase="training" if training else "inference")
    return (y, mean, rstd)


def _layer_norm_backward(low, node):
    # (grad, input, normalized_shape, mean, rstd, weight, bias, output_mask)
    x = low.value(node.args[1])
    axis = len(x.dim) - len(node.args[2])
    pshape = [1] * axis + list(x.dim[axis:])
    weight, bias, mask = node.args[5], node.args[6], list(node.args[7])
    dx, dscale, dbias = low.graph.layernorm_backward(
        low.value(node.args[0]), x, _param(low, weight, pshape), low.value(node.args[3]),
        low.value(node.args[4]), axis=axis, has_bias=bias is not None and mask[2])
    flat = list(x.dim[axis:])
    return (dx, dscale and low.graph.reshape(dscale, flat),
            dbias and low.graph.reshape(dbias, flat))


def _batch_norm_training(low, node, x, w, b, rm, rv, momentum, eps):
    g = low.graph
    rank = len(x.dim)
    if w is None or b is None:
        raise UnsupportedError(f"{node.target}: weight and bias: expected both (affine=True), "
                               "got None")
    cshape = [1, x.dim[1]] + [1] * (rank - 2)
    y, mean, inv, nrm, nrv = g.batchnorm(
        x, _param(low, w, cshape), _param(low, b, cshape), _param(low, rm, cshape),
        _param(low, rv, cshape), epsilon=float(eps), momentum=float(momentum))
    flat = lambda t: t and g.reshape(t, [x.dim[1]])  # noqa: E731
    return (y, flat(mean), flat(inv), flat(nrm), flat(nrv))


def _batch_norm_inference(low, node, x, w, b, rm, rv, eps):
    if rm is None or rv is None or w is None or b is None:
        raise UnsupportedError(f"{node.target}: eval mode: expected weight, bias and running "
                               "statistics, got None")
    cshape = [1, x.dim[1]] + [1] * (len(x.dim) - 2)
    return low.graph.batchnorm_inference(x, _param(low, rm, cshape), _param(low, rv, cshape),
                                         _param(low, w, cshape), _param(low, b, cshape),
                                         epsilon=float(eps))


def _batch_norm_functional(low, node):
    # (input, weight, bias, running_mean, running_var, training, momentum, eps)
    # -> (out, save_mean, save_rstd, new_running_mean, new_running_var)
    x = low.value(node.args[0])
    w, b, rm, rv, training, momentum, eps = node.args[1:8]
    if not training:
        if _used(node) - {0, 3, 4}:
            raise UnsupportedError(f"{node.target}: eval mode: the saved statistics are read")
        y = _batch_norm_inference(low, node, x, w, b, rm, rv, eps)
        return (y, None, None, low.value(rm), low.value(rv))
    return _batch_norm_training(low, node, x, w, b, rm, rv, momentum, eps)


def _batch_norm_no_training(low, node):
    # (input, weight, bias, running_mean, running_var, momentum, eps) -> (out, -, -):
    # the statistics are empty tensors (what its backward saves), Fillers here.
    for i in _used(node) - {0}:
        if example(node)[i].numel():
            raise UnsupportedError(f"{node.target}: result {i} (not empty) is read")
    x = low.value(node.args[0])
    w, b, rm, rv, _, eps = node.args[1:7]
    return (_batch_norm_inference(low, node, x, w, b, rm, rv, eps), Filler(), Filler())


def _batch_norm_no_stats(low, node):
    # (input, weight, bias, training, momentum, eps) -> (out, save_mean, save_rstd)
    x = low.value(node.args[0])
    w, b, training, momentum, eps = node.args[1:6]
    if not training:
        raise UnsupportedError(f"{node.target}: eval mode without running statistics")
    return _batch_norm_training(low, node, x, w, b, None, None, momentum, eps)[:3]


def _native_batch_norm(low, node):
    # (input, weight, bias, running_mean, running_var, training, momentum, eps)
    x = low.value(node.args[0])
    w, b, rm, rv, training, momentum, eps = node.args[1:8]
    if training and rm is not None:
        raise UnsupportedError(f"{node.target}: training with running statistics updates them "
                               "in place (functionalized graphs use "
                               "_native_batch_norm_legit_functional)")
    if training:
        return _batch_norm_training(low, node, x, w, b, None, None, momentum, eps)[:3]
    if _used(node) - {0}:
        raise UnsupportedError(f"{node.target}: eval mode: the saved statistics are read")
    return (_batch_norm_inference(low, node, x, w, b, rm, rv, eps), None, None)


def _batch_norm_backward(low, node):
    # (grad, input, weight, running_mean, running_var, save_mean, save_invstd,
    #  train, eps, output_mask) -> (dx, dweight, dbias)
    g = low.graph
    x = low.value(node.args[1])
    w, train = node.args[2], node.args[7]
    if not train:
        raise UnsupportedError(f"{node.target}: train: expected True (an eval-mode backward "
                               "stays in torch), got False")
    if w is None:
        raise UnsupportedError(f"{node.target}: weight: expected a tensor, got None")
    cshape = [1, x.dim[1]] + [1] * (len(x.dim) - 2)
    dx, dw, db = g.batchnorm_backward(low.value(node.args[0]), x, _param(low, w, cshape),
                                      _param(low, node.args[5], cshape),
                                      _param(low, node.args[6], cshape))
    return (dx, g.reshape(dw, [x.dim[1]]), g.reshape(db, [x.dim[1]]))


def _group_norm(low, node):
    # (input, weight, bias, N, C, HxW, group, eps) -> (out, mean [N, G], rstd [N, G])
    g = low.graph
    x = low.value(node.args[0])
    groups = int(node.args[6])
    cshape = [1, x.dim[1]] + [1] * (len(x.dim) - 2)
    training = bool(_used(node) & {1, 2})
    y, mean, rstd = g.groupnorm(x, groups, _param(low, node.args[1], cshape),
                                _param(low, node.args[2], cshape), epsilon=float(node.args[7]),
                                norm_forward_phase="training" if training else "inference")
    flat = lambda t: t and g.reshape(t, [x.dim[0], groups])  # noqa: E731
    return (y, flat(mean), flat(rstd))


def _group_norm_backward(low, node):
    # (grad, input, mean, rstd, weight, N, C, HxW, group, output_mask)
    g = low.graph
    x = low.value(node.args[1])
    groups, mask = int(node.args[8]), list(node.args[9])
    rank = len(x.dim)
    cshape = [1, x.dim[1]] + [1] * (rank - 2)
    sshape = [x.dim[0], groups] + [1] * (rank - 2)
    dx, dw, db = g.groupnorm_backward(
        low.value(node.args[0]), x, groups, _param(low, node.args[4], cshape),
        _param(low, node.args[2], sshape), _param(low, node.args[3], sshape),
        has_bias=bool(mask[2]))
    flat = lambda t: t and g.reshape(t, [x.dim[1]])  # noqa: E731
    return (dx, flat(dw), flat(db))


# -- softmax, reductions, pooling --------------------------------------------------------


def _softmax(method):
    def lower(low, node):
        return getattr(low.graph, method)(low.value(node.args[0]), axis=int(node.args[1]))
    return lower


def _softmax_backward(method):
    def lower(low, node):   # (grad, output, dim, input_dtype)
        return getattr(low.graph, method)(low.value(node.args[0]), low.value(node.args[1]),
                                          axis=int(node.args[2]))
    return lower


def _reduction(mode):
    def lower(low, node):
        x = low.value(node.args[0])
        if node.target in (aten.sum.default,):
            axes, keepdim = None, False
        else:
            axes, keepdim = arg(node, 1, "dim"), arg(node, 2, "keepdim", False)
        axes = _axes(axes, len(x.dim))
        if not x.dim:
            return low.graph.mul(x, low.value(1.0))
        y = low.graph.reduction(x, mode, axes, keepdims=True)
        return y if keepdim else low.graph.reshape(y, _dims(node))
    return lower


def _max_pool(low, node):
    # (input, kernel, stride, padding, dilation, ceil_mode) -> (out, indices)
    if 1 in _used(node):
        raise UnsupportedError(f"{node.target}: indices: read (saved for the backward); "
                               "dnnc's max pooling makes no indices")
    x = low.value(node.args[0])
    return (low.graph.pooling(x, **_pool(node, "max", x, 1)), None)


def _pool(node, mode, x, first, count_include_pad=False):
    """Graph.pooling's arguments from ATen's (kernel, stride, padding[,
    dilation]) at argument ``first``. Ceil mode needs nothing: where it
    changes the dims, they differ from the example's and the op is refused."""
    nd = len(x.dim) - 2
    window = _spatial(node.args[first], nd, 1)
    stride = _spatial(arg(node, first + 1, "stride"), nd, None)
    stride = window if None in stride else stride
    padding = _spatial(arg(node, first + 2, "padding", 0), nd, 0)
    if mode == "max":
        dilation = _spatial(arg(node, first + 3, "dilation", 1), nd, 1)
        if any(d != 1 for d in dilation):
            raise UnsupportedError(f"{node.target}: dilation: expected 1, got {dilation}")
    return dict(mode=mode, window=window, stride=stride, padding=padding,
                count_include_pad=count_include_pad)


def _max_pool_backward(low, node):
    # (grad, input, kernel, stride, padding, dilation, ceil_mode, indices)
    x = low.value(node.args[1])
    return low.graph.pooling_backward(low.value(node.args[0]), x,
                                      **_pool(node, "max", x, 2))


def _avg_pool(low, node):
    # (input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    x = low.value(node.args[0])
    if arg(node, 6, "divisor_override") is not None:
        raise UnsupportedError(f"{node.target}: divisor_override: expected None, got "
                               f"{arg(node, 6, 'divisor_override')}")
    return low.graph.pooling(x, **_pool(node, "avg", x, 1,
                                        bool(arg(node, 5, "count_include_pad", True))))


def _avg_pool_backward(low, node):
    # (grad, input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    x = low.value(node.args[1])
    if arg(node, 7, "divisor_override") is not None:
        raise UnsupportedError(f"{node.target}: divisor_override: expected None")
    return low.graph.pooling_backward(low.value(node.args[0]), x,
                                      **_pool(node, "avg", x, 2, bool(node.args[6])))


def _adaptive_window(node, x, out):
    window = []
    for i, (n, o) in enumerate(zip(x.dim[2:], out)):
        if o < 1 or n % o:
            raise UnsupportedError(f"{node.target}: output_size dim {i}: expected a divisor of "
                                   f"the input's {n}, got {o}")
        window.append(n // o)
    return window


def _adaptive_avg_pool(low, node):
    x = low.value(node.args[0])
    window = _adaptive_window(node, x, _dims(node)[2:])
    return low.graph.pooling(x, "avg", window, stride=window)


def _adaptive_avg_pool_backward(low, node):   # (grad, input)
    x, dy = low.value(node.args[1]), low.value(node.args[0])
    window = _adaptive_window(node, x, dy.dim[2:])
    return low.graph.pooling_backward(dy, x, "avg", window, stride=window)


# -- attention ---------------------------------------------------------------------------
# ATen's fused attention ops differ in their arguments and in what they save:
# each entry below says where its (dropout_p, is_causal, mask, scale) are and
# how its logsumexp is shaped. dnnc's statistics are (B, H, Sq, 1) f32, the
# same numbers.

# overload name -> (index of dropout_p, of is_causal, of the mask (None: no
# mask argument), its keyword name)
_SDPA = {
    "_scaled_dot_product_flash_attention_for_cpu": (3, 4, None, "attn_mask"),
    "_scaled_dot_product_flash_attention": (3, 4, None, None),
    "_scaled_dot_product_efficient_attention": (5, 6, 3, "attn_bias"),
    "_scaled_dot_product_cudnn_attention": (5, 6, 3, "attn_bias"),
}
_SDPA_BACKWARD = {
    # name -> (dropout_p, is_causal, mask index, mask keyword, out index, lse index)
    "_scaled_dot_product_flash_attention_for_cpu_backward": (6, 7, None, "attn_mask", 4, 5),
    "_scaled_dot_product_flash_attention_backward": (10, 11, None, None, 4, 5),
    "_scaled_dot_product_efficient_attention_backward": (9, 11, 4, "attn_bias", 5, 6),
    "_scaled_dot_product_cudnn_attention_backward": (13, 14, 8, "attn_bias", 4, 5),
}


def _attention_args(low, node, dropout_at, causal_at, mask_at, mask_key):
    dropout = arg(node, dropout_at, "dropout_p", 0.0)
    if dropout:
        raise UnsupportedError(f"{node.target}: dropout_p: expected 0 (dnnc's attention has no "
                               f"dropout), got {dropout}")
    mask = node.kwargs.get(mask_key) if mask_key else None
    if mask is None and mask_at is not None and mask_at < len(node.args):
        mask = node.args[mask_at]
    bias = None
    if mask is not None:
        if example(mask).dtype == torch.bool:
            raise UnsupportedError(f"{node.target}: a boolean attention mask: expected an "
                                   "additive float mask (dnnc's bias)")
        bias = low.value(mask)
    scale = node.kwargs.get("scale")
    return bias, bool(arg(node, causal_at, "is_causal", False)), scale


def _sdpa(low, node):
    name = node.target._schema.name.split("::")[-1]
    q, k, v = (low.value(a) for a in node.args[:3])
    bias, causal, scale = _attention_args(low, node, *_SDPA[name])
    used = _used(node)
    o, stats = low.graph.sdpa(q, k, v, attn_scale=scale, bias=bias, use_causal_mask=causal,
                              generate_stats=1 in used)
    results = [o, None]
    if 1 in used:
        results[1] = _logsumexp(low, node, stats)
    for i, val in enumerate(example(node)[2:], start=2):
        # The random state of dropout (off) and sequence bookkeeping: tensors
        # made as zeros, numbers (the maximal lengths) and Nones as they are.
        if not isinstance(val, torch.Tensor):
            results.append(val)
        else:
            results.append(Filler() if i in used else None)
    return tuple(results)


def _logsumexp(low, node, stats):
    """dnnc's statistics (B, H, Sq, 1) in the form of ``node``'s logsumexp:
    (B, H, Sq) or (B, H, Sq, 1); the efficient kernel's rows padded to a
    multiple of 32 are zeros past Sq (no backward reads them)."""
    lse = [int(d) for d in example(node)[1].shape]
    b, h, sq, _ = stats.dim
    if lse[:2] != [b, h] or len(lse) not in (3, 4) or lse[2] < sq or lse[3:] not in ([], [1]):
        raise UnsupportedError(f"{node.target}: logsumexp of dims {lse}: expected "
                               f"[{b}, {h}, {sq}] (one per query row) or padded rows")
    rows = low.graph.reshape(stats, [b, h, sq])
    if lse[2] > sq:
        rows = low.graph.concat([rows, low.zeros([b, h, lse[2] - sq])], axis=2)
    return low.graph.reshape(rows, lse) if len(lse) == 4 else rows


def _sdpa_backward(low, node):
    name = node.target._schema.name.split("::")[-1]
    dropout_at, causal_at, mask_at, mask_key, out_at, lse_at = _SDPA_BACKWARD[name]
    do, q, k, v = (low.value(a) for a in node.args[:4])
    bias, causal, scale = _attention_args(low, node, dropout_at, causal_at, mask_at, mask_key)
    o = low.value(node.args[out_at])
    lse = low.value(node.args[lse_at])
    b, h, sq = q.dim[0], q.dim[1], q.dim[2]
    if list(lse.dim[:3]) != [b, h, sq] and len(lse.dim) == 3 and lse.dim[2] >= sq:
        lse = low.graph.slice(lse, [slice(None), slice(None), slice(0, sq)])  # padded rows
    stats = low.graph.reshape(lse, [b, h, sq, 1])
    dq, dk, dv = low.graph.sdpa_backward(q, k, v, o, do, stats, attn_scale=scale, bias=bias,
                                         use_causal_mask=causal)
    results = [dq, dk, dv]
    if len(example(node)) > 3:
        if 3 in _used(node):
            raise UnsupportedError(f"{node.target}: the mask's gradient is read: dnnc's "
                                   "attention backward makes none")
        results.append(None)
    return tuple(results)


# -- the table -------------------------------------------------------------------------


def _table():
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
    t[operator.getitem] = _getitem
    # matmul, convolution
    t[aten.mm.default] = _matmul
    t[aten.bmm.default] = _matmul
    t[aten.addmm.default] = _addmm
    t[aten.convolution.default] = _convolution
    t[aten.convolution_backward.default] = _convolution_backward
    # normalization
    t[aten.native_layer_norm.default] = _layer_norm
    t[aten.native_layer_norm_backward.default] = _layer_norm_backward
    t[aten._native_batch_norm_legit_functional.default] = _batch_norm_functional
    t[aten._native_batch_norm_legit_no_training.default] = _batch_norm_no_training
    t[aten._native_batch_norm_legit.no_stats] = _batch_norm_no_stats
    t[aten.native_batch_norm.default] = _native_batch_norm
    t[aten.native_batch_norm_backward.default] = _batch_norm_backward
    t[aten.native_group_norm.default] = _group_norm
    t[aten.native_group_norm_backward.default] = _group_norm_backward
    # softmax, reductions, pooling
    t[aten._softmax.default] = _softmax("softmax")
    t[aten._log_softmax.default] = _softmax("log_softmax")
    t[aten._softmax_backward_data.default] = _softmax_backward("softmax_backward")
    t[aten._log_softmax_backward_data.default] = _softmax_backward("log_softmax_backward")
    t[aten.sum.dim_IntList] = _reduction("sum")
    t[aten.sum.default] = _reduction("sum")
    t[aten.mean.dim] = _reduction("mean")
    t[aten.amax.default] = _reduction("max")
    t[aten.amin.default] = _reduction("min")
    t[aten.max_pool2d_with_indices.default] = _max_pool
    t[aten.max_pool3d_with_indices.default] = _max_pool
    t[aten.max_pool2d_with_indices_backward.default] = _max_pool_backward
    t[aten.max_pool3d_with_indices_backward.default] = _max_pool_backward
    t[aten.avg_pool2d.default] = _avg_pool
    t[aten.avg_pool3d.default] = _avg_pool
    t[aten.avg_pool2d_backward.default] = _avg_pool_backward
    t[aten.avg_pool3d_backward.default] = _avg_pool_backward
    t[aten._adaptive_avg_pool2d.default] = _adaptive_avg_pool
    t[aten._adaptive_avg_pool2d_backward.default] = _adaptive_avg_pool_backward
    # attention
    for name in _SDPA:
        t[getattr(aten, name).default] = _sdpa
    for name in _SDPA_BACKWARD:
        t[getattr(aten, name).default] = _sdpa_backward
    return t


TABLE = _table()

# Ops that compute nothing: a region of only these stays in torch.
DATA_MOVEMENT = frozenset(op for op, fn in TABLE.items()
                          if fn in (_identity, _reshape, _t, _transpose, _permute, _expand,
                                    _slice, _select, _split, _getitem))


def op_name(node):
    """How reports name ``node``'s op: ``aten.addmm`` (its overload packet)."""
    target = node.target
    if target is operator.getitem:
        return "getitem"
    schema = getattr(target, "_schema", None)
    if schema is not None:
        return schema.name.replace("::", ".")
    return getattr(target, "__name__", str(target))


def lower(low, node):
    """Add ``node`` to ``low`` and record its value; UnsupportedError (or
    dnnc's error) when dnnc cannot take it, or when what it made has other
    dims than the node's example."""
    fn = TABLE.get(node.target)
    if fn is None:
        raise UnsupportedError(f"{op_name(node)}: no dnnc mapping")
    val = example(node)
    check_static(val, op_name(node))
    value = fn(low, node)
    _check_dims(node, value, val)
    low.env[node] = value
    return value


def _check_dims(node, value, val):
    if isinstance(val, (tuple, list)):
        for i, (v, e) in enumerate(zip(value, val)):
            if isinstance(v, Tensor) and isinstance(e, torch.Tensor):
                _same(node, v, e, f" result {i}")
    elif isinstance(val, torch.Tensor) and isinstance(value, Tensor):
        _same(node, value, val, "")


def _same(node, v, e, which):
    if list(v.dim) != [int(d) for d in e.shape]:
        raise UnsupportedError(f"{op_name(node)}{which}: dnnc makes dims {list(v.dim)}, ATen "
                               f"{[int(d) for d in e.shape]}")


def support(node, device_type="cpu"):
    """None when dnnc takes ``node`` (tried alone, its tensor arguments as
    inputs), else why not, as a sentence."""
    if node.op != "call_function":
        return f"{node.op}: not an op"
    if node.target not in TABLE:
        return f"{op_name(node)}: no dnnc mapping"
    low = Lowering(f"try_{node.name}", device_type)
    try:
        if node.target is operator.getitem:
            return None   # goes with its producer (partition.py)
        lower(low, node)
        for v in (low.env[node] if isinstance(low.env[node], tuple) else [low.env[node]]):
            if isinstance(v, Tensor):
                low.graph._resolve_dtype(v)
    except (UnsupportedError, DnncError) as err:
        return str(err)
    except (TypeError, ValueError, IndexError, KeyError, AttributeError) as err:
        # An argument form the mapping does not know (a newer ATen schema).
        return f"{op_name(node)}: arguments not understood ({type(err).__name__}: {err})"
    return None
