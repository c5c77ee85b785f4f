"""A configuration's calls computed by PyTorch (the run side's reference):
float64 for every family, float32 on the GPU for the huge set. Each
function follows dnnc's definition of the op (docs/ops.md), written with
torch functions, so that the reference owes nothing to dnnc's code.
"""

import math

import torch
import torch.nn.functional as F


def _softplus(x, beta=1.0, threshold=20.0):
    bx = beta * x
    return torch.where(bx > threshold, x, torch.logaddexp(torch.zeros_like(bx), bx) / beta)


def _gelu(x, approximate="none"):
    return F.gelu(x, approximate=approximate)


UNARY = {
    "relu": lambda x: torch.where(torch.isnan(x), x, torch.clamp(x, min=0)),
    "gelu": _gelu, "silu": F.silu,
    "swish": lambda x, beta=1.0: x * torch.sigmoid(beta * x),
    "sigmoid": torch.sigmoid, "tanh": torch.tanh,
    "elu": lambda x, alpha=1.0: torch.where(x > 0, x, alpha * torch.expm1(x)),
    "leaky_relu": lambda x, negative_slope=0.01: torch.where(x >= 0, x, negative_slope * x),
    "softplus": _softplus, "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt, "abs": torch.abs, "neg": torch.neg, "square": torch.square,
    "reciprocal": torch.reciprocal, "sin": torch.sin, "cos": torch.cos, "erf": torch.erf,
    "floor": torch.floor, "ceil": torch.ceil,
}
BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
          "max": torch.maximum, "min": torch.minimum, "pow": torch.pow}


def reduction(input, mode, axes, keepdims=True):
    x, dims = input, tuple(axes)
    if mode == "sum":
        return x.sum(dims, keepdim=keepdims)
    if mode == "mean":
        return x.mean(dims, keepdim=keepdims)
    if mode in ("max", "min", "amax"):
        y = x.abs() if mode == "amax" else x
        return y.amax(dims, keepdim=keepdims) if mode != "min" else y.amin(dims, keepdim=keepdims)
    if mode == "prod":
        for d in sorted(dims, reverse=True):
            x = x.prod(d, keepdim=True)
        return x if keepdims else x.squeeze(dims)
    if mode == "norm1":
        return x.abs().sum(dims, keepdim=keepdims)
    if mode == "norm2":
        return (x * x).sum(dims, keepdim=keepdims).sqrt()
    raise ValueError(f"reduction: mode {mode!r} unknown to the fuzzer")


def _shifted(x, axis):
    """x minus its maximum along ``axis``; an all -inf row is shifted by 0."""
    m = x.amax(axis, keepdim=True)
    return x - torch.where(m == -math.inf, torch.zeros_like(m), m)


def softmax(input, axis):
    e = torch.exp(_shifted(input, axis))
    return e / torch.clamp(e.sum(axis, keepdim=True), min=1.0)


def log_softmax(input, axis):
    s = _shifted(input, axis)
    return s - torch.log(torch.clamp(torch.exp(s).sum(axis, keepdim=True), min=1.0))


def _affine(y, scale, bias):
    y = y if scale is None else y * scale
    return y if bias is None else y + bias


def layernorm(input, scale=None, bias=None, epsilon=1e-5, axis=1, norm_forward_phase=None):
    dims = tuple(range(axis, input.dim()))
    mean = input.mean(dims, keepdim=True)
    inv = torch.rsqrt(((input - mean) ** 2).mean(dims, keepdim=True) + epsilon)
    return _affine((input - mean) * inv, scale, bias), mean, inv


def rmsnorm(input, scale=None, bias=None, epsilon=1e-5, axis=1, norm_forward_phase=None):
    dims = tuple(range(axis, input.dim()))
    inv = torch.rsqrt((input * input).mean(dims, keepdim=True) + epsilon)
    return _affine(input * inv, scale, bias), inv


def batchnorm(input, scale, bias, in_running_mean=None, in_running_var=None, epsilon=1e-5,
              momentum=0.1):
    dims = (0,) + tuple(range(2, input.dim()))
    mean = input.mean(dims, keepdim=True)
    var = ((input - mean) ** 2).mean(dims, keepdim=True)
    inv = torch.rsqrt(var + epsilon)
    y = _affine((input - mean) * inv, scale, bias)
    if in_running_mean is None:
        return y, mean, inv, None, None
    count = input.numel() // input.shape[1]
    return (y, mean, inv, (1 - momentum) * in_running_mean + momentum * mean,
            (1 - momentum) * in_running_var + momentum * var * count / (count - 1))


def batchnorm_inference(input, mean, variance, scale, bias, epsilon=1e-5):
    return _affine((input - mean) * torch.rsqrt(variance + epsilon), scale, bias)


def groupnorm(input, groups, scale=None, bias=None, epsilon=1e-5, norm_forward_phase=None):
    n, c = input.shape[:2]
    xg = input.reshape(n, groups, -1)
    mean = xg.mean(2, keepdim=True)
    inv = torch.rsqrt(((xg - mean) ** 2).mean(2, keepdim=True) + epsilon)
    y = ((xg - mean) * inv).reshape(input.shape)
    stats = (n, groups) + (1,) * (input.dim() - 2)
    return _affine(y, scale, bias), mean.reshape(stats), inv.reshape(stats)


def _pool(x, mode, window, stride, padding, count_include_pad):
    nd = len(window)
    if mode == "max":
        return (F.max_pool2d if nd == 2 else F.max_pool3d)(x, window, stride, padding)
    return (F.avg_pool2d if nd == 2 else F.avg_pool3d)(x, window, stride, padding,
                                                       count_include_pad=count_include_pad)


def pooling(input, **attrs):
    return _pool(input, **attrs)


def pooling_backward(grad, input, **attrs):
    x = input.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        _pool(x, **attrs).backward(grad)
    return x.grad


def _conv(x, w, pre_padding, post_padding, stride, dilation, conv_mode, groups):
    """dnnc's convolution: padding before and after each spatial dim, a
    flipped filter in convolution mode."""
    nd = x.dim() - 2
    pads = []
    for a, b in zip(reversed(pre_padding), reversed(post_padding)):
        pads += [a, b]
    x = F.pad(x, pads)
    if conv_mode == "convolution":
        w = torch.flip(w, tuple(range(2, 2 + nd)))
    return (F.conv2d if nd == 2 else F.conv3d)(x, w, stride=stride, dilation=dilation,
                                               groups=groups)


def conv_fprop(image, weight, **geometry):
    return _conv(image, weight, groups=image.shape[1] // weight.shape[1], **geometry)


def conv_dgrad(loss, filter, dx_dim, **geometry):
    x = torch.zeros(dx_dim, dtype=loss.dtype, device=loss.device, requires_grad=True)
    with torch.enable_grad():
        _conv(x, filter, groups=dx_dim[1] // filter.shape[1], **geometry).backward(loss)
    return x.grad


def conv_wgrad(image, loss, dw_dim, **geometry):
    w = torch.zeros(dw_dim, dtype=loss.dtype, device=loss.device, requires_grad=True)
    with torch.enable_grad():
        _conv(image, w, groups=image.shape[1] // dw_dim[1], **geometry).backward(loss)
    return w.grad


def _mask(sq, skv, device, use_causal_mask=False, use_causal_mask_bottom_right=False,
          sliding_window_length=None):
    """True where row i may see column j (None: everywhere)."""
    if not (use_causal_mask or use_causal_mask_bottom_right or sliding_window_length):
        return None
    i = torch.arange(sq, device=device).reshape(-1, 1)
    j = torch.arange(skv, device=device).reshape(1, -1)
    diagonal = i + (skv - sq if use_causal_mask_bottom_right else 0)
    keep = j <= diagonal
    if sliding_window_length:
        keep &= j > diagonal - sliding_window_length
    return keep


def _scores(q, k, bias, attn_scale, masks):
    heads = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(heads, dim=1)
    s = torch.matmul(q, k.transpose(-1, -2)) * (attn_scale if attn_scale is not None
                                                else 1.0 / math.sqrt(q.shape[-1]))
    if bias is not None:
        s = s + bias
    keep = _mask(q.shape[2], k.shape[2], q.device, **masks)
    if keep is not None:
        s = s.masked_fill(~keep, -math.inf)
    return s


def sdpa(q, k, v, bias=None, attn_scale=None, generate_stats=False, **masks):
    s = _scores(q, k, bias, attn_scale, masks)
    m = s.amax(-1, keepdim=True)
    shift = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    total = torch.exp(s - shift).sum(-1, keepdim=True)
    stats = shift + torch.log(total)  # -inf for a fully masked row
    p = torch.where(torch.isneginf(stats), torch.zeros_like(s), torch.exp(s - stats))
    o = torch.matmul(p, v.repeat_interleave(q.shape[1] // v.shape[1], dim=1))
    return o, (stats if generate_stats else None)


def sdpa_backward(q, k, v, o, dO, stats, bias=None, attn_scale=None,
                  use_deterministic_algorithm=False, **masks):
    """The gradients from the given o and statistics (as the kernels take
    them), not from a forward recomputed here: D = rowsum(dO o) uses the
    o passed in, rounded to its type."""
    scale = attn_scale if attn_scale is not None else 1.0 / math.sqrt(q.shape[-1])
    heads, kv_heads = q.shape[1], k.shape[1]
    kx = k.repeat_interleave(heads // kv_heads, dim=1)
    vx = v.repeat_interleave(heads // kv_heads, dim=1)
    s = _scores(q, k, bias, attn_scale, masks)
    p = torch.where(torch.isneginf(stats), torch.zeros_like(s), torch.exp(s - stats))
    dv = torch.matmul(p.transpose(-1, -2), dO)
    dp = torch.matmul(dO, vx.transpose(-1, -2))
    ds = p * (dp - (dO * o).sum(-1, keepdim=True))
    dq = torch.matmul(ds, kx) * scale
    dk = torch.matmul(ds.transpose(-1, -2), q) * scale

    def per_kv_head(t):  # the query heads that share a kv head add up
        b, _, n, d = t.shape
        return t.reshape(b, kv_heads, heads // kv_heads, n, d).sum(2)
    return dq, per_kv_head(dk), per_kv_head(dv)


def slice_(input, start, limit, step):
    return input[tuple(slice(a, b, c) for a, b, c in zip(start, limit, step))]


OPS = {
    "reduction": reduction, "softmax": softmax, "log_softmax": log_softmax,
    "layernorm": layernorm, "rmsnorm": rmsnorm, "batchnorm": batchnorm,
    "batchnorm_inference": batchnorm_inference, "groupnorm": groupnorm,
    "pooling": pooling, "pooling_backward": pooling_backward,
    "matmul": lambda A, B: torch.matmul(A, B),
    "conv_fprop": conv_fprop, "conv_dgrad": conv_dgrad, "conv_wgrad": conv_wgrad,
    "sdpa": sdpa, "sdpa_backward": sdpa_backward,
    "transpose": lambda input, permutation: input.permute(permutation),
    "slice": slice_, "concat": lambda inputs, axis: torch.cat(inputs, axis),
}


def call(op, args, attrs):
    """One call of ``op`` on tensors ``args`` (by keyword): a tuple of results."""
    if op in UNARY:
        out = UNARY[op](args["input"], **attrs)
    elif op in BINARY:
        out = BINARY[op](args["a"], args["b"])
    elif op in OPS:
        out = OPS[op](**args, **attrs)
    else:
        raise ValueError(f"op {op!r} unknown to the fuzzer's reference")
    return out if isinstance(out, tuple) else (out,)


def derive(config, values, dtype=torch.float64):
    """The attention backward's o and statistics (``forward_o`` and
    ``forward_stats`` draws): its forward of the drawn q, k, v (and bias)
    in ``dtype``, o rounded to its type; added to ``values``."""
    wanted = {n: s for n, s in config["tensors"].items() if s["draw"].startswith("forward_")}
    if not wanted:
        return values
    (backward,) = [c for c in config["calls"] if c["op"] == "sdpa_backward"]
    attrs = {k: v for k, v in backward["attrs"].items() if k != "use_deterministic_algorithm"}
    args = {k: values[v].to(dtype) for k, v in backward["args"].items() if k in ("q", "k", "v",
                                                                               "bias")}
    o, stats = sdpa(**args, **attrs, generate_stats=True)
    from .values import TORCH
    for name, spec in wanted.items():
        value = o if spec["draw"] == "forward_o" else stats
        values[name] = value.to(TORCH[spec["dtype"]])
    return values


def reference(config, values, dtype=torch.float64):
    """{output name: ``dtype`` tensor} of ``config`` on inputs ``values``
    (name -> tensor of its type)."""
    tensors = {name: v.to(dtype) for name, v in values.items()}

    def arg(value):
        return [tensors[v] for v in value] if isinstance(value, list) else tensors[value]
    for c in config["calls"]:
        results = call(c["op"], {k: arg(v) for k, v in c["args"].items()}, c["attrs"])
        for name, t in zip(c["out"], results):
            if name is not None:
                tensors[name] = t
    return {name: tensors[name] for name in config["outputs"]}
