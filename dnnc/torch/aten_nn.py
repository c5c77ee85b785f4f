"""ATen's matmuls, convolutions, norms, softmax, reductions and pooling onto
``dnnc.Graph``: the functions aten_map.TABLE holds for them, each
``(low, node) -> value`` (aten_map.py says how they are called).

A norm's statistics take ATen's shapes (reshaped from dnnc's); a backward op
reads what its forward saved; ``amax`` is a max (dnnc's ``amax`` mode is
the largest absolute value).
"""

import torch

from dnnc.errors import UnsupportedError
from dnnc.torch import ops_pool  # noqa: F401 (registers dnnc::pool_backward)
from dnnc.torch.lowering import Filler, arg, axes, dims, example, spatial, used

aten = torch.ops.aten

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
    dy = low.value(node.args[0])
    stride, padding, dilation, _ = _conv_args(node, 4)
    mask = list(node.args[10])
    # Only what a wanted gradient reads becomes an input: dgrad reads the
    # weight, wgrad the input image.
    x_dims, w_dims = dims(node.args[1]), dims(node.args[2])
    w = low.value(node.args[2]) if mask[0] else None
    x = low.value(node.args[1]) if mask[1] else None
    common = dict(padding=padding, stride=stride, dilation=dilation,
                  compute_data_type=low.compute("conv", *[t for t in (dy, w, x) if t]))
    dx = g.conv_dgrad(dy, w, x_dims, **common) if mask[0] else None
    dw = g.conv_wgrad(x, dy, w_dims, **common) if mask[1] else None
    db = None
    if mask[2]:
        db = g.reduction(dy, "sum", [0] + list(range(2, len(dy.dim))), keepdims=False)
    return (dx, dw, db)


# -- normalization ---------------------------------------------------------------------


def _param(low, t, shape):
    return None if t is None else low.graph.reshape(low.value(t), list(shape))


def _layer_norm(low, node):
    # (input, normalized_shape, weight, bias, eps) -> (out, mean, rstd)
    x = low.value(node.args[0])
    axis = len(x.dim) - len(node.args[1])
    pshape = [1] * axis + list(x.dim[axis:])
    training = bool(used(node) & {1, 2})
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
        if used(node) - {0, 3, 4}:
            raise UnsupportedError(f"{node.target}: eval mode: the saved statistics are read")
        y = _batch_norm_inference(low, node, x, w, b, rm, rv, eps)
        return (y, None, None, low.value(rm), low.value(rv))
    return _batch_norm_training(low, node, x, w, b, rm, rv, momentum, eps)


def _batch_norm_no_training(low, node):
    # (input, weight, bias, running_mean, running_var, momentum, eps) -> (out, -, -):
    # the statistics are empty tensors (what its backward saves), Fillers here.
    for i in used(node) - {0}:
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
    if used(node) - {0}:
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
    training = bool(used(node) & {1, 2})
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
            dim, keepdim = None, False
        else:
            dim, keepdim = arg(node, 1, "dim"), arg(node, 2, "keepdim", False)
        over = axes(dim, len(x.dim))
        if not x.dim:
            return low.graph.mul(x, low.value(1.0))
        y = low.graph.reduction(x, mode, over, keepdims=True)
        return y if keepdim else low.graph.reshape(y, dims(node))
    return lower


def _max_pool(low, node):
    # (input, kernel, stride, padding, dilation, ceil_mode) -> (out, indices)
    if 1 in used(node):
        raise UnsupportedError(f"{node.target}: indices: read (saved for the backward); "
                               "dnnc's max pooling makes no indices")
    x = low.value(node.args[0])
    return (low.graph.pooling(x, **_pool(node, "max", x, 1)), None)


def _pool(node, mode, x, first, count_include_pad=False):
    """Graph.pooling's arguments from ATen's (kernel, stride, padding[,
    dilation]) at argument ``first``. Ceil mode needs nothing: where it
    changes the dims, they differ from the example's and the op is refused."""
    window, stride, padding, dilation = _pool_window(node, first, len(x.dim) - 2)
    if mode == "max" and any(d != 1 for d in dilation):
        raise UnsupportedError(f"{node.target}: dilation: expected 1, got {dilation}")
    return dict(mode=mode, window=window, stride=stride, padding=padding,
                count_include_pad=count_include_pad)


def _pool_window(node, first, nd):
    """(window, stride, padding, dilation) of ATen's pooling arguments at
    argument ``first``, ``nd`` values each (the stride the window's where
    left out)."""
    window = spatial(node.args[first], nd, 1)
    stride = spatial(arg(node, first + 1, "stride"), nd, None)
    stride = window if None in stride else stride
    padding = spatial(arg(node, first + 2, "padding", 0), nd, 0)
    dilation = spatial(arg(node, first + 3, "dilation", 1), nd, 1)
    return window, stride, padding, dilation


def _max_pool_backward(low, node):
    # (grad, input, kernel, stride, padding, dilation, ceil_mode, indices)
    x = low.value(node.args[1])
    return low.graph.pooling_backward(low.value(node.args[0]), x,
                                      **_pool(node, "max", x, 2))


def _pool_backward(low, node):
    # dnnc::pool_backward (dy, x, mode, kernel, stride, padding, count_include_pad):
    # what backward_from_input makes of max pooling's backward.
    mode, kernel, stride, padding, include = node.args[2:7]
    return low.graph.pooling_backward(low.value(node.args[0]), low.value(node.args[1]),
                                      mode=mode, window=list(kernel), stride=list(stride),
                                      padding=list(padding), count_include_pad=bool(include))


MAX_POOL_BACKWARD = {aten.max_pool2d_with_indices_backward.default: 2,
                     aten.max_pool3d_with_indices_backward.default: 3}


def backward_from_input(graph):
    """Rewrite each max pooling backward of a joint forward and backward
    graph (``graph``, torch.fx) that dnnc maps (no dilation, no ceil mode,
    padding at most half the window) into ``dnnc::pool_backward``, which
    reads the forward's input and not its indices: dnnc's pooling backward
    finds each window's maximum again, the first one as torch's indices
    hold it, so the gradient is the same. The forward's indices are then
    read by nothing, so AOTAutograd's partition does not save them and
    dnnc runs the forward pooling too (its max pooling makes no indices:
    ``_max_pool``), which would otherwise stay in torch to make them: 128
    images of ResNet-50's stem pooled there took 1.74 ms on an H200 against
    0.42 in eager torch (2026-11-28). Returns how many were rewritten."""
    rewritten = 0
    for node in list(graph.nodes):
        nd = MAX_POOL_BACKWARD.get(node.target) if node.op == "call_function" else None
        if nd is None:
            continue
        kernel, stride, padding, dilation = _pool_window(node, 2, nd)
        if any(d != 1 for d in dilation) or arg(node, 6, "ceil_mode", False) or \
                any(2 * p > k for p, k in zip(padding, kernel)):
            continue
        with graph.inserting_before(node):
            new = graph.call_function(torch.ops.dnnc.pool_backward.default,
                                      (node.args[0], node.args[1], "max", list(kernel),
                                       list(stride), list(padding), False))
        new.meta = dict(node.meta)
        node.replace_all_uses_with(new)
        graph.erase_node(node)
        rewritten += 1
    return rewritten


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
    window = _adaptive_window(node, x, dims(node)[2:])
    return low.graph.pooling(x, "avg", window, stride=window)


def _adaptive_avg_pool_backward(low, node):   # (grad, input)
    x, dy = low.value(node.args[1]), low.value(node.args[0])
    window = _adaptive_window(node, x, dy.dim[2:])
    return low.graph.pooling_backward(dy, x, "avg", window, stride=window)


def _table():
    t = {}
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
    t[torch.ops.dnnc.pool_backward.default] = _pool_backward
    t[aten.avg_pool2d.default] = _avg_pool
    t[aten.avg_pool3d.default] = _avg_pool
    t[aten.avg_pool2d_backward.default] = _avg_pool_backward
    t[aten.avg_pool3d_backward.default] = _avg_pool_backward
    t[aten._adaptive_avg_pool2d.default] = _adaptive_avg_pool
    t[aten._adaptive_avg_pool2d_backward.default] = _adaptive_avg_pool_backward
    return t


TABLE = _table()
