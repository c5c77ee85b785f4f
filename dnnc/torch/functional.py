"""``dnnc.torch``'s functions: PyTorch's signatures (``torch.nn.functional``
and ``torch.matmul``), computed by the ``dnnc::`` ops, with autograd.

Each function first decides, from the call alone, whether dnnc runs it: the
tensors must be float32 / float16 / bfloat16, dense, on the CPU or one CUDA
device, and the arguments ones dnnc implements. Otherwise PyTorch's own
function runs, after a ``FallbackWarning`` (once per function and reason),
or ``UnsupportedError`` is raised when strict (fallback.py: ``strict=True``
on the call, a ``dnnc.torch.strict()`` block, or ``dnnc.torch.set_strict``).
What falls back, by function:

| function | falls back for |
|---|---|
| every one | another dtype (float64, integers), a sparse tensor, a device other than CPU / CUDA, tensors on two devices |
| conv2d, conv3d | an image of another rank; ``padding="same"`` with a stride above 1 (torch refuses it) |
| scaled_dot_product_attention | ``dropout_p > 0``; q, k, v not of rank 4; an ``attn_mask`` that needs a gradient; ``is_causal`` with an ``attn_mask`` (torch refuses it); heads that differ without ``enable_gqa`` |
| batch_norm | ``momentum=None`` (a cumulative average) |
| max_pool2d/3d, avg_pool2d/3d | ``ceil_mode``, ``dilation`` above 1, ``return_indices``, ``divisor_override``; padding above half the window |
| activations | ``inplace=True`` (dnnc writes a new tensor) |
"""

import math

import torch
import torch.nn.functional as F

from dnnc.torch import fallback
from dnnc.torch import ops_attention, ops_conv, ops_matmul, ops_norm, ops_pointwise, ops_pool

_ops = torch.ops.dnnc


def _run(op, tensors, reason, strict, theirs, ours):
    """``ours()`` if dnnc takes the call, else (after the fallback policy) ``theirs()``."""
    why = reason or fallback.tensor_reason(tensors)
    if why:
        fallback.unsupported(op, why, strict)
        return theirs()
    return ours()


def _tuple(value, n, what):
    if isinstance(value, int):
        return [value] * n
    value = [int(v) for v in value]
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise ValueError(f"{what}: expected {n} values, got {len(value)}")
    return value


# ---------------------------------------------------------------- convolution

def _conv(op, nd, torch_fn, input, weight, bias, stride, padding, dilation, groups, strict):
    reason = None
    if input.dim() not in (nd + 1, nd + 2):
        reason = f"input: expected rank {nd + 2} (or {nd + 1} unbatched), got rank {input.dim()}"
    stride_ = _tuple(stride, nd, "stride")
    dilation_ = _tuple(dilation, nd, "dilation")
    if isinstance(padding, str):
        if padding == "same" and any(s != 1 for s in stride_):
            reason = "padding='same' with a stride above 1 (torch refuses it too)"
    theirs = lambda: torch_fn(input, weight, bias, stride, padding, dilation, groups)  # noqa: E731
    tensors = [("input", input), ("weight", weight), ("bias", bias)]

    def ours():
        x = input if input.dim() == nd + 2 else input.unsqueeze(0)
        if isinstance(padding, str):
            if padding == "valid":
                pre = post = [0] * nd
            elif padding == "same":
                total = [d * (k - 1) for d, k in zip(dilation_, weight.shape[2:])]
                pre = [t // 2 for t in total]
                post = [t - p for t, p in zip(total, pre)]
            else:
                raise ValueError(f"{op}: padding: expected 'valid', 'same' or integers, "
                                 f"got {padding!r}")
        else:
            pre = post = _tuple(padding, nd, "padding")
        y = _ops.conv(x, weight, bias, stride_, pre, post, dilation_, int(groups))
        return y if input.dim() == nd + 2 else y.squeeze(0)

    return _run(op, tensors, reason, strict, theirs, ours)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *,
           strict=None):
    """``torch.nn.functional.conv2d`` on dnnc (NCHW or channels-last images)."""
    return _conv("conv2d", 2, F.conv2d, input, weight, bias, stride, padding, dilation, groups,
                 strict)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *,
           strict=None):
    """``torch.nn.functional.conv3d`` on dnnc (NCDHW or channels-last images)."""
    return _conv("conv3d", 3, F.conv3d, input, weight, bias, stride, padding, dilation, groups,
                 strict)


# ---------------------------------------------------------------- matmul

def linear(input, weight, bias=None, *, strict=None):
    """``torch.nn.functional.linear`` on dnnc: input (..., in) -> (..., out)."""
    def ours():
        x = input.reshape(-1, input.shape[-1])
        y = _ops.linear(x, weight, bias)
        return y.reshape(*input.shape[:-1], weight.shape[0])

    reason = None if weight.dim() == 2 else f"weight: expected rank 2, got rank {weight.dim()}"
    return _run("linear", [("input", input), ("weight", weight), ("bias", bias)], reason, strict,
                lambda: F.linear(input, weight, bias), ours)


def matmul(input, other, *, strict=None):
    """``torch.matmul`` on dnnc (vectors, matrices and broadcast batches)."""
    def ours():
        a = input.unsqueeze(0) if input.dim() == 1 else input
        b = other.unsqueeze(-1) if other.dim() == 1 else other
        y = _ops.matmul(a, b)
        if other.dim() == 1:
            y = y.squeeze(-1)
        if input.dim() == 1:
            y = y.squeeze(-2)
        return y

    reason = None
    if input.dim() == 0 or other.dim() == 0:
        reason = "a 0-dim operand (torch refuses it too)"
    return _run("matmul", [("input", input), ("other", other)], reason, strict,
                lambda: torch.matmul(input, other), ours)


# ---------------------------------------------------------------- attention

def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False, *,
                                 strict=None):
    """``torch.nn.functional.scaled_dot_product_attention`` on dnnc: (B, H, S, D)
    tensors, a boolean or additive ``attn_mask`` broadcast to (B, H, Sq, Skv),
    ``is_causal`` (top-left aligned), ``scale``, grouped heads with
    ``enable_gqa``."""
    reason = None
    if dropout_p > 0.0:
        reason = f"dropout_p: expected 0, got {dropout_p} (dnnc's attention has no dropout)"
    elif any(t.dim() != 4 for t in (query, key, value)):
        reason = (f"query, key, value: expected rank 4 (B, H, S, D), got ranks "
                  f"{query.dim()}, {key.dim()}, {value.dim()}")
    elif attn_mask is not None and is_causal:
        reason = "attn_mask with is_causal (torch refuses it too)"
    elif attn_mask is not None and attn_mask.requires_grad and torch.is_grad_enabled():
        reason = "attn_mask needs a gradient (dnnc's sdpa_backward gives none for the bias)"
    elif query.shape[1] != key.shape[1] and not enable_gqa:
        reason = (f"key dim 1: expected {query.shape[1]} heads (of query) without enable_gqa, "
                  f"got {key.shape[1]}")
    elif attn_mask is not None and attn_mask.dim() > 4:
        reason = f"attn_mask: expected rank <= 4, got rank {attn_mask.dim()}"

    def theirs():
        return F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask,
                                              dropout_p=dropout_p, is_causal=is_causal,
                                              scale=scale, enable_gqa=enable_gqa)

    def ours():
        bias = attn_mask
        if bias is not None:
            if bias.dtype == torch.bool:
                bias = torch.zeros(bias.shape, dtype=query.dtype, device=bias.device) \
                    .masked_fill(~bias, -math.inf)
            bias = bias.reshape([1] * (4 - bias.dim()) + list(bias.shape))
        s = scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])
        return _ops.sdpa(query, key, value, bias, bool(is_causal), float(s))[0]

    mask = attn_mask if attn_mask is not None and attn_mask.dtype != torch.bool else None
    return _run("scaled_dot_product_attention",
                [("query", query), ("key", key), ("value", value), ("attn_mask", mask)],
                reason, strict, theirs, ours)


# ---------------------------------------------------------------- normalization

def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, *, strict=None):
    """``torch.nn.functional.layer_norm`` on dnnc."""
    shape = [int(normalized_shape)] if isinstance(normalized_shape, int) else \
        [int(d) for d in normalized_shape]
    return _run("layer_norm", [("input", input), ("weight", weight), ("bias", bias)], None,
                strict, lambda: F.layer_norm(input, normalized_shape, weight, bias, eps),
                lambda: _ops.layer_norm(input, shape, weight, bias, float(eps))[0])


def rms_norm(input, normalized_shape, weight=None, eps=None, *, strict=None):
    """``torch.nn.functional.rms_norm`` on dnnc (``eps=None``: the dtype's epsilon)."""
    shape = [int(normalized_shape)] if isinstance(normalized_shape, int) else \
        [int(d) for d in normalized_shape]

    def ours():
        e = torch.finfo(input.dtype).eps if eps is None else eps
        return _ops.rms_norm(input, shape, weight, float(e))[0]

    return _run("rms_norm", [("input", input), ("weight", weight)], None, strict,
                lambda: F.rms_norm(input, normalized_shape, weight, eps), ours)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5, *, strict=None):
    """``torch.nn.functional.batch_norm`` on dnnc; in training the running
    statistics (when given) are updated in place, as PyTorch's."""
    reason = None
    if momentum is None and training and running_mean is not None:
        reason = "momentum=None (a cumulative moving average)"

    def ours():
        c = input.shape[1]
        w = weight if weight is not None else torch.ones(c, dtype=input.dtype,
                                                         device=input.device)
        b = bias if bias is not None else torch.zeros(c, dtype=input.dtype, device=input.device)
        y, _, _, next_mean, next_var = _ops.batch_norm(
            input, w, b, running_mean, running_var, bool(training),
            float(momentum if momentum is not None else 0.0), float(eps))
        if training and running_mean is not None:
            with torch.no_grad():
                running_mean.copy_(next_mean)
                running_var.copy_(next_var)
        return y

    tensors = [("input", input), ("weight", weight), ("bias", bias),
               ("running_mean", running_mean), ("running_var", running_var)]
    return _run("batch_norm", tensors, reason, strict,
                lambda: F.batch_norm(input, running_mean, running_var, weight, bias, training,
                                     momentum, eps), ours)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, *, strict=None):
    """``torch.nn.functional.group_norm`` on dnnc."""
    return _run("group_norm", [("input", input), ("weight", weight), ("bias", bias)], None,
                strict, lambda: F.group_norm(input, num_groups, weight, bias, eps),
                lambda: _ops.group_norm(input, int(num_groups), weight, bias, float(eps))[0])


# ---------------------------------------------------------------- softmax

def _softmax(op, log, input, dim, dtype, strict):
    if dim is None:
        raise ValueError(f"dnnc.torch.{op}: dim: expected an int, got None")
    x = input.to(dtype) if dtype is not None else input
    torch_fn = F.log_softmax if log else F.softmax
    return _run(op, [("input", x)], None, strict, lambda: torch_fn(x, dim),
                lambda: _ops.softmax(x, int(dim), log))


def softmax(input, dim, dtype=None, *, strict=None):
    """``torch.nn.functional.softmax`` on dnnc (``dtype``: the input is cast first)."""
    return _softmax("softmax", False, input, dim, dtype, strict)


def log_softmax(input, dim, dtype=None, *, strict=None):
    """``torch.nn.functional.log_softmax`` on dnnc."""
    return _softmax("log_softmax", True, input, dim, dtype, strict)


# ---------------------------------------------------------------- pooling

def _pool(op, nd, mode, theirs, input, kernel_size, stride, padding, count_include_pad,
          reason, strict):
    kernel = _tuple(kernel_size, nd, "kernel_size")
    stride_ = _tuple(stride, nd, "stride") if stride not in (None, []) else kernel
    padding_ = _tuple(padding, nd, "padding")
    if reason is None and any(2 * p > k for p, k in zip(padding_, kernel)):
        reason = f"padding {padding_}: expected at most half the window {kernel}"
    if reason is None and input.dim() not in (nd + 1, nd + 2):
        reason = f"input: expected rank {nd + 2} (or {nd + 1} unbatched), got rank {input.dim()}"

    def ours():
        x = input if input.dim() == nd + 2 else input.unsqueeze(0)
        y = _ops.pool(x, mode, kernel, stride_, padding_, bool(count_include_pad))
        return y if input.dim() == nd + 2 else y.squeeze(0)

    return _run(op, [("input", input)], reason, strict, theirs, ours)


def _max_reason(dilation, ceil_mode, return_indices, nd):
    if return_indices:
        return "return_indices=True (dnnc's max pooling gives no indices)"
    if ceil_mode:
        return "ceil_mode=True"
    if any(d != 1 for d in _tuple(dilation, nd, "dilation")):
        return f"dilation {dilation}: expected 1"
    return None


def _avg_reason(ceil_mode, divisor_override):
    if ceil_mode:
        return "ceil_mode=True"
    if divisor_override is not None:
        return "divisor_override"
    return None


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False, *, strict=None):
    """``torch.nn.functional.max_pool2d`` on dnnc."""
    return _pool("max_pool2d", 2, "max",
                 lambda: F.max_pool2d(input, kernel_size, stride, padding, dilation,
                                      ceil_mode=ceil_mode, return_indices=return_indices),
                 input, kernel_size, stride, padding, False,
                 _max_reason(dilation, ceil_mode, return_indices, 2), strict)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False, *, strict=None):
    """``torch.nn.functional.max_pool3d`` on dnnc."""
    return _pool("max_pool3d", 3, "max",
                 lambda: F.max_pool3d(input, kernel_size, stride, padding, dilation,
                                      ceil_mode=ceil_mode, return_indices=return_indices),
                 input, kernel_size, stride, padding, False,
                 _max_reason(dilation, ceil_mode, return_indices, 3), strict)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None, *, strict=None):
    """``torch.nn.functional.avg_pool2d`` on dnnc."""
    return _pool("avg_pool2d", 2, "avg",
                 lambda: F.avg_pool2d(input, kernel_size, stride, padding, ceil_mode,
                                      count_include_pad, divisor_override),
                 input, kernel_size, stride, padding, count_include_pad,
                 _avg_reason(ceil_mode, divisor_override), strict)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None, *, strict=None):
    """``torch.nn.functional.avg_pool3d`` on dnnc."""
    return _pool("avg_pool3d", 3, "avg",
                 lambda: F.avg_pool3d(input, kernel_size, stride, padding, ceil_mode,
                                      count_include_pad, divisor_override),
                 input, kernel_size, stride, padding, count_include_pad,
                 _avg_reason(ceil_mode, divisor_override), strict)


# ---------------------------------------------------------------- activations

def _activation(name, torch_fn, input, values, inplace, strict):
    reason = "inplace=True (dnnc writes a new tensor)" if inplace else None
    op = ops_pointwise.OPS[name][0]
    return _run(name, [("input", input)], reason, strict, torch_fn, lambda: op(input, *values))


def relu(input, inplace=False, *, strict=None):
    """``torch.nn.functional.relu`` on dnnc."""
    return _activation("relu", lambda: F.relu(input, inplace), input, (), inplace, strict)


def gelu(input, approximate="none", *, strict=None):
    """``torch.nn.functional.gelu`` on dnnc (``approximate`` "none" or "tanh")."""
    def theirs():
        return F.gelu(input, approximate=approximate)

    if approximate not in ("none", "tanh"):
        fallback.unsupported("gelu", f"approximate: expected 'none' or 'tanh', got "
                             f"{approximate!r}", strict)
        return theirs()
    return _activation("gelu", theirs, input, (approximate,), False, strict)


def silu(input, inplace=False, *, strict=None):
    """``torch.nn.functional.silu`` on dnnc."""
    return _activation("silu", lambda: F.silu(input, inplace), input, (), inplace, strict)


def sigmoid(input, *, strict=None):
    """``torch.sigmoid`` on dnnc."""
    return _activation("sigmoid", lambda: torch.sigmoid(input), input, (), False, strict)


def tanh(input, *, strict=None):
    """``torch.tanh`` on dnnc."""
    return _activation("tanh", lambda: torch.tanh(input), input, (), False, strict)


def leaky_relu(input, negative_slope=0.01, inplace=False, *, strict=None):
    """``torch.nn.functional.leaky_relu`` on dnnc."""
    return _activation("leaky_relu", lambda: F.leaky_relu(input, negative_slope, inplace),
                       input, (float(negative_slope),), inplace, strict)


def elu(input, alpha=1.0, inplace=False, *, strict=None):
    """``torch.nn.functional.elu`` on dnnc."""
    return _activation("elu", lambda: F.elu(input, alpha, inplace), input, (float(alpha),),
                       inplace, strict)


def softplus(input, beta=1.0, threshold=20.0, *, strict=None):
    """``torch.nn.functional.softplus`` on dnnc."""
    return _activation("softplus", lambda: F.softplus(input, beta, threshold), input,
                       (float(beta), float(threshold)), False, strict)


# The op modules are imported for their registrations; named here so that a
# reader sees which ones this module stands on.
REGISTERED = (ops_attention, ops_conv, ops_matmul, ops_norm, ops_pointwise, ops_pool)
