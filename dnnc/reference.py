"""The NumPy reference of every ``dnn`` op: the oracle the compiled kernels are
checked against.

Arithmetic is float64 (bool for i1 tensors). ``evaluate`` runs one op and does
not round its results; the caller rounds with ``round_to`` to the result's
storage type. Each op is one small function in the dispatch table ``_OPS`` at the
end of the file, grouped by family as in ``dnnc/dialect/ops_*.py``, whose
docstrings are the specification implemented here.

Every op function has the signature ``fn(o, a, r) -> dict``: ``o`` the operands
by name (arrays, None for an absent optional operand), ``a`` the attributes with
defaults filled, ``r`` the present results (name -> TensorInfo). It may return
more results than asked for; ``evaluate`` keeps the present ones.

Floating-point exceptions (overflow in exp, log of a negative number, 0/0) give
their IEEE values silently, as on the device.
"""

import itertools
import math

import ml_dtypes
import numpy as np

from dnnc.dialect.ops_conv import output_size
from dnnc.dialect.ops_matmul import SCALE_BLOCK
from dnnc.dialect.types import as_data_type, data_type
from dnnc.errors import UnsupportedError
from dnnc.reference_attention import sdpa, sdpa_backward

__all__ = ["evaluate", "round_to", "round_tf32"]


# ----------------------------------------------------------------------------
# Public interface
# ----------------------------------------------------------------------------

def evaluate(name, operands, attrs, results):
    """Run op ``name`` (without the 'dnn.' prefix) on NumPy arrays.

    operands: dict operand name -> np.ndarray (float64, or bool for i1 tensors),
    None for an absent optional operand, a list of arrays for a variadic operand.
    attrs: dict of all attributes, defaults filled ('type' attributes as strings).
    results: dict result name -> TensorInfo for the results that are present.
    Returns dict result name -> np.ndarray (float64, or bool for i1 results)
    with exactly the shape in ``results[name].shape``; nothing is rounded.
    """
    key = name[4:] if name.startswith("dnn.") else name
    if key not in _OPS:
        raise UnsupportedError(f"no reference for op 'dnn.{key}'")
    o = {k: _as_operand(v) for k, v in operands.items()}
    with np.errstate(all="ignore"):
        out = _OPS[key](o, attrs, results)
    return {res: _as_result(key, res, out.get(res), info) for res, info in results.items()}


def round_to(array, dtype):
    """Round a float64 array to the storage precision of ``dtype`` and return it
    as float64 (bool arrays pass through; BOOLEAN converts to bool, INT32
    truncates toward zero, INT8 and UINT8 round to nearest even and saturate).

    Rounding is to nearest even, done once from float64. fp8 types saturate:
    finite values beyond the largest finite value become +-max; inf becomes
    +-max in E4M3FN (which has no inf) and stays inf in E5M2; NaN stays NaN.
    """
    dtype = as_data_type(dtype)
    a = np.asarray(array)
    if a.dtype == np.bool_:
        return a
    if dtype is data_type.BOOLEAN:
        return a != 0
    if dtype is data_type.INT32:  # toward zero, as a conversion to int32 does
        return np.trunc(a.astype(np.float64))
    if dtype in (data_type.INT8, data_type.UINT8):
        return round_to_byte(a, dtype)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf is the rounding
        return _round_float(a.astype(np.float64), dtype)


def round_to_byte(array, dtype):
    """float64 -> the int8 / uint8 value: to nearest even, saturated to the
    type's range, NaN giving 0 (PTX's cvt.rni.sat); returned as float64."""
    info = np.iinfo(as_data_type(dtype).numpy)
    a = np.asarray(array, dtype=np.float64)
    return np.where(np.isnan(a), 0.0, np.clip(np.rint(a), info.min, info.max))


def _round_float(a, dtype):
    if dtype is data_type.TF32:
        return round_tf32(a)
    if dtype is data_type.FLOAT or dtype is data_type.HALF:
        # NumPy converts float64 to float32 and float16 directly (one rounding).
        return a.astype(dtype.numpy).astype(np.float64)
    if dtype in (data_type.FP8_E4M3, data_type.FP8_E5M2):
        limit = float(ml_dtypes.finfo(dtype.numpy).max)
        # Saturate finite values; np.clip keeps NaN. E5M2 has an infinity and keeps
        # it; E4M3FN has none, so inf saturates too.
        clipped = np.clip(a, -limit, limit)
        a = np.where(np.isinf(a), a, clipped) if dtype is data_type.FP8_E5M2 else clipped
    # ml_dtypes converts through float32: make that first step round-to-odd so
    # the two roundings give the correctly rounded result (no double rounding).
    return _float32_round_to_odd(a).astype(dtype.numpy).astype(np.float64)


def round_tf32(array):
    """Round to tf32 (float32 with 10 explicit mantissa bits), to nearest even
    on the float32 bit pattern; returned as float64. Inf and NaN are kept."""
    with np.errstate(over="ignore"):
        f = np.asarray(array, dtype=np.float64).astype(np.float32)
    bits = f.view(np.uint32)  # same item size: a view of any layout
    # Drop the 13 low mantissa bits: add half an ulp minus one, plus the lowest
    # kept bit (ties go to even), then clear them. A carry into the exponent is
    # the correct rounding up (to the next binade or to inf).
    kept_lsb = (bits >> np.uint32(13)) & np.uint32(1)
    rounded = (bits + np.uint32(0xFFF) + kept_lsb) & np.uint32(0xFFFFE000)
    out = np.where(np.isfinite(f), rounded.view(np.float32), f)
    return out.astype(np.float64)


def _float32_round_to_odd(a):
    """float64 -> float32 truncated toward zero, with the last bit set when inexact."""
    f = a.astype(np.float32)
    too_big = np.abs(f.astype(np.float64)) > np.abs(a)
    f = np.where(too_big, np.nextafter(f, np.float32(0)), f)
    inexact = (f.astype(np.float64) != a) & np.isfinite(a)
    bits = f.view(np.uint32) | inexact.astype(np.uint32)
    return np.where(np.isfinite(a), bits.view(np.float32), a.astype(np.float32))


def _as_operand(value):
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [_as_operand(v) for v in value]
    a = np.asarray(value)
    return a if a.dtype == np.bool_ else a.astype(np.float64)


def _as_result(op, name, value, info):
    if value is None:
        raise UnsupportedError(f"reference of 'dnn.{op}' does not compute result '{name}'")
    a = np.asarray(value)
    if info.dtype is data_type.BOOLEAN and a.dtype != np.bool_:
        a = a != 0
    elif a.dtype != np.bool_:
        a = a.astype(np.float64)
    if a.shape != tuple(info.shape):
        raise ValueError(f"reference of 'dnn.{op}' result '{name}': expected shape "
                         f"{tuple(info.shape)}, got {a.shape}")
    return a


# ----------------------------------------------------------------------------
# Pointwise: unary math and activations, binary, comparisons, logic, select,
# gen_index, activation backward. Binary ops broadcast as NumPy does.
# ----------------------------------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _gelu(x, a):
    if a["approximate"] == "tanh":
        return 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + _GELU_CUBIC * x ** 3)))
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _softplus(x, a):
    # log(1 + exp(beta x)) / beta, computed as logaddexp(0, beta x) so it does
    # not overflow; PyTorch's linear region above the threshold.
    bx = a["beta"] * x
    return np.where(bx > a["threshold"], x, np.logaddexp(0.0, bx) / a["beta"])


UNARY = {
    "relu": lambda x, a: np.maximum(x, 0.0),
    "gelu": _gelu,
    "silu": lambda x, a: x * _sigmoid(x),
    "swish": lambda x, a: x * _sigmoid(a["beta"] * x),
    "sigmoid": lambda x, a: _sigmoid(x),
    "tanh": lambda x, a: np.tanh(x),
    "elu": lambda x, a: np.where(x > 0, x, a["alpha"] * np.expm1(x)),
    "leaky_relu": lambda x, a: np.where(x >= 0, x, a["negative_slope"] * x),
    "softplus": _softplus,
    "exp": lambda x, a: np.exp(x),
    "log": lambda x, a: np.log(x),
    "sqrt": lambda x, a: np.sqrt(x),
    "rsqrt": lambda x, a: 1.0 / np.sqrt(x),
    "abs": lambda x, a: np.abs(x),
    "neg": lambda x, a: -x,
    "square": lambda x, a: x * x,
    "reciprocal": lambda x, a: 1.0 / x,
    "sin": lambda x, a: np.sin(x),
    "cos": lambda x, a: np.cos(x),
    "erf": lambda x, a: _erf(x),
    "floor": lambda x, a: np.floor(x),
    "ceil": lambda x, a: np.ceil(x),
}

BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "max": np.maximum, "min": np.minimum,  # both propagate NaN
    "pow": np.power,
    "cmp_eq": np.equal, "cmp_ne": np.not_equal, "cmp_lt": np.less,
    "cmp_le": np.less_equal, "cmp_gt": np.greater, "cmp_ge": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or,
}


def _gelu_derivative(x, a):
    if a["approximate"] == "tanh":
        # d/dx 0.5 x (1 + tanh(u)), u = c (x + k x^3).
        t = np.tanh(_SQRT_2_OVER_PI * (x + _GELU_CUBIC * x ** 3))
        du = _SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_CUBIC * x * x)
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du
    # d/dx x Phi(x) = Phi(x) + x phi(x).
    cdf = 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))
    return cdf + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _silu_derivative(x, a):
    s = _sigmoid(x)
    return s * (1.0 + x * (1.0 - s))


def _swish_derivative(x, a):
    s = _sigmoid(a["beta"] * x)
    return s * (1.0 + a["beta"] * x * (1.0 - s))


# f'(x) of each activation; the op is dx = dy * f'(x).
ACTIVATION_DERIVATIVES = {
    "gelu_backward": _gelu_derivative,
    "silu_backward": _silu_derivative,
    "sigmoid_backward": lambda x, a: _sigmoid(x) * (1.0 - _sigmoid(x)),
    "tanh_backward": lambda x, a: 1.0 - np.tanh(x) ** 2,
    "swish_backward": _swish_derivative,
    "softplus_backward": lambda x, a: np.where(a["beta"] * x > a["threshold"], 1.0,
                                               _sigmoid(a["beta"] * x)),
}


def _unary(fn):
    return lambda o, a, r: {"y": fn(o["x"], a)}


def _binary(fn):
    return lambda o, a, r: {"y": fn(o["a"], o["b"])}


def _activation_backward(derivative):
    return lambda o, a, r: {"dx": o["dy"] * derivative(o["x"], a)}


def _relu_backward(o, a, r):
    # A select, not dy * (x > 0): an inf dy where x <= 0 gives 0, not NaN.
    return {"dx": np.where(o["x"] > 0, o["dy"], 0.0)}


def _elu_backward(o, a, r):
    # Selects, as relu_backward: the negative side's slope is PyTorch's at 0.
    x, dy = o["x"], o["dy"]
    return {"dx": np.where(x > 0, dy, dy * (a["alpha"] * np.exp(np.minimum(x, 0.0))))}


def _leaky_relu_backward(o, a, r):
    return {"dx": np.where(o["x"] > 0, o["dy"], o["dy"] * a["negative_slope"])}


def _logical_not(o, a, r):
    return {"y": np.logical_not(o["x"])}


def _select(o, a, r):
    return {"y": np.where(o["cond"].astype(bool), o["a"], o["b"])}


def _gen_index(o, a, r):
    """Each element's position along ``axis``; x gives only the shape."""
    x, axis = o["x"], a["axis"]
    along = [1] * x.ndim
    along[axis] = x.shape[axis]
    positions = np.arange(x.shape[axis], dtype=np.float64).reshape(along)
    return {"y": np.broadcast_to(positions, x.shape).copy()}


# ----------------------------------------------------------------------------
# Tensor ops: cast, constant, reshape, transpose, slice, concat.
# ----------------------------------------------------------------------------

def _cast(o, a, r):
    """Identity in float64 (the caller rounds to the target); to i1: x != 0."""
    x = o["x"]
    if r["y"].dtype is data_type.BOOLEAN:
        return {"y": x != 0}
    return {"y": x.astype(np.float64)}


def _constant(o, a, r):
    return {"y": np.array(float(a["value"]))}


def _reshape(o, a, r):
    return {"y": np.reshape(o["x"], r["y"].shape)}  # row-major (C order)


def _transpose(o, a, r):
    return {"y": np.transpose(o["x"], tuple(a["permutation"]))}


def _slice(o, a, r):
    index = tuple(slice(s, e, k) for s, e, k in zip(a["start"], a["limit"], a["step"]))
    return {"y": o["x"][index]}


def _concat(o, a, r):
    return {"y": np.concatenate([o["a"], o["b"]], axis=a["axis"])}


# ----------------------------------------------------------------------------
# Matmul: batch dims broadcast; compute_type tf32 rounds both operands first.
# ----------------------------------------------------------------------------

def _compute_operands(a, *arrays):
    """The operands as the multiply sees them: rounded to tf32 in tf32 mode,
    exact int64 in i32 mode (int8 / uint8 operands)."""
    if str(a.get("compute_type", "f32")) == "tf32":
        return tuple(round_tf32(t) for t in arrays)
    if _integer(a):
        return tuple(np.asarray(t).astype(np.int64) for t in arrays)
    return arrays


def _integer(a):
    return str(a.get("compute_type", "f32")) == "i32"


def _int32_result(acc, info):
    """An exact int64 sum as the int32 accumulator holds it (wrapping past
    2^31, as s32 adds do), then as the result type receives it: int32 and the
    byte types from the integer, f32 rounded once, other floats through f32
    (the lowering converts the accumulator to f32 first)."""
    wrapped = ((np.asarray(acc, dtype=np.int64) + 2**31) % 2**32 - 2**31).astype(np.float64)
    if info.dtype.is_integer or info.dtype in (data_type.FLOAT, data_type.BOOLEAN):
        return wrapped
    return wrapped.astype(np.float32).astype(np.float64)


def _matmul(o, a, r):
    x, y = _compute_operands(a, o["a"], o["b"])
    if _integer(a):
        return {"c": _int32_result(np.matmul(x, y), r["c"])}
    return {"c": np.matmul(x, y)}


def block_scaled_matmul(a, b, a_scale, b_scale, block=128):
    """A @ B with A's rows scaled per ``block``-wide K block (``a_scale``,
    M x ceil(K/block)) and B's ``block`` x ``block`` blocks (``b_scale``,
    ceil(K/block) x ceil(N/block)): each operand dequantized block by block,
    then multiplied in float64. Shared by the reference of
    dnn.matmul_block_scaled and the tests that check it."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    k = a.shape[-1]
    rows = np.repeat(np.asarray(a_scale, np.float64), block, axis=-1)[..., :k]
    blocks = np.repeat(np.repeat(np.asarray(b_scale, np.float64), block, axis=-2), block,
                       axis=-1)[..., :k, :b.shape[-1]]
    return np.matmul(a * rows, b * blocks)


def _matmul_block_scaled(o, a, r):
    return {"c": block_scaled_matmul(o["a"], o["b"], o["a_scale"], o["b_scale"], SCALE_BLOCK)}


# ----------------------------------------------------------------------------
# Convolution (2D and 3D): x (N, C, *in), w (K, C/G, *window), y (N, K, *out).
# Each filter tap reads a strided view of the zero-padded input; fprop sums the
# taps, dgrad scatters each tap back (its adjoint), wgrad correlates dy with the
# tap's view. "convolution" mode is cross-correlation with the flipped filter.
# ----------------------------------------------------------------------------

def _taps(window):
    """Every filter (or pooling window) position, in row-major order."""
    return itertools.product(*(range(w) for w in window))


def _tap_view(tap, dilation, stride, out):
    """Index into the padded (N, C, *spatial) input of the elements that tap
    ``tap`` reads for every output position."""
    return (slice(None), slice(None)) + tuple(
        slice(t * d, t * d + (n - 1) * s + 1, s)
        for t, d, s, n in zip(tap, dilation, stride, out))


def _pad(x, pre, post, value=0.0):
    widths = ((0, 0), (0, 0)) + tuple(zip(pre, post))
    return np.pad(x, widths, mode="constant", constant_values=value)


def _crop(xp, pre, shape):
    """The unpadded (N, C, *shape) part of a padded tensor."""
    return xp[(slice(None), slice(None)) + tuple(slice(p, p + n) for p, n in zip(pre, shape))]


def _oriented(w, a):
    """The filter as cross-correlation applies it (flipped in 'convolution' mode)."""
    if a["mode"] == "convolution":
        return np.flip(w, axis=tuple(range(2, w.ndim)))
    return w


def _conv_out(in_spatial, window, a):
    return tuple(output_size(n, k, p, q, s, d) for n, k, p, q, s, d in zip(
        in_spatial, window, a["pre_padding"], a["post_padding"], a["stride"], a["dilation"]))


def _conv_fprop(o, a, r):
    x, w = _compute_operands(a, o["x"], o["w"])
    w = _oriented(w, a)
    n, (k, cg), g = x.shape[0], w.shape[:2], x.shape[1] // w.shape[1]
    out = _conv_out(x.shape[2:], w.shape[2:], a)
    xp = _pad(x, a["pre_padding"], a["post_padding"])
    taps, points = math.prod(w.shape[2:]), math.prod(out)
    wg = w.reshape(g, k // g, cg, taps)  # taps flattened in row-major order
    y = np.zeros((n, g, k // g, points), dtype=xp.dtype)
    for t, tap in enumerate(_taps(w.shape[2:])):
        xs = xp[_tap_view(tap, a["dilation"], a["stride"], out)].reshape(n, g, cg, points)
        y += np.einsum("ngcp,gkc->ngkp", xs, wg[..., t])
    y = y.reshape((n, k) + out)
    return {"y": _int32_result(y, r["y"]) if _integer(a) else y}


def _conv_dgrad(o, a, r):
    dy, w = _compute_operands(a, o["dy"], o["w"])
    w = _oriented(w, a)
    shape = tuple(r["dx"].shape)
    (n, c), (k, cg), g = shape[:2], w.shape[:2], shape[1] // w.shape[1]
    out = dy.shape[2:]
    pre, post = a["pre_padding"], a["post_padding"]
    dxp = np.zeros((n, c) + tuple(s + p + q for s, p, q in zip(shape[2:], pre, post)))
    dyg = dy.reshape(n, g, k // g, math.prod(out))
    wg = w.reshape(g, k // g, cg, math.prod(w.shape[2:]))
    for t, tap in enumerate(_taps(w.shape[2:])):
        # Scatter-add: the adjoint of fprop's gather for this tap. Padded
        # positions that no window reaches keep a zero gradient.
        back = np.einsum("ngkp,gkc->ngcp", dyg, wg[..., t]).reshape((n, c) + out)
        dxp[_tap_view(tap, a["dilation"], a["stride"], out)] += back
    return {"dx": _crop(dxp, pre, shape[2:])}


def _conv_wgrad(o, a, r):
    dy, x = _compute_operands(a, o["dy"], o["x"])
    shape = tuple(r["dw"].shape)
    n, (k, cg), g = x.shape[0], shape[:2], x.shape[1] // shape[1]
    out = dy.shape[2:]
    xp = _pad(x, a["pre_padding"], a["post_padding"])
    dyg = dy.reshape(n, g, k // g, math.prod(out))
    dw = np.zeros((g, k // g, cg, math.prod(shape[2:])))
    for t, tap in enumerate(_taps(shape[2:])):
        xs = xp[_tap_view(tap, a["dilation"], a["stride"], out)].reshape(n, g, cg,
                                                                          math.prod(out))
        dw[..., t] = np.einsum("ngkp,ngcp->gkc", dyg, xs)  # sum over n and outputs
    # fprop applied the flipped filter in 'convolution' mode: flip the gradient back.
    return {"dw": _oriented(dw.reshape(shape), a)}


# ----------------------------------------------------------------------------
# Normalizations (see ops_norm.py). Statistics keep the rank of x. Forward:
# xhat = (x - mean) * inv_variance (rmsnorm: x * inv_rms), y = xhat * scale +
# bias with absent scale = 1, bias = 0. Backward ops use the saved statistics.
# ----------------------------------------------------------------------------

def _moments(x, axes):
    """Mean and biased variance over ``axes``, keepdims."""
    mean = x.mean(axis=axes, keepdims=True)
    return mean, ((x - mean) ** 2).mean(axis=axes, keepdims=True)


def _affine(xhat, scale, bias):
    y = xhat if scale is None else xhat * scale
    return y if bias is None else y + bias


def _centered_grad(g, xhat, inv, axes):
    """dL/dx of xhat = (x - mean) * inv over ``axes`` (inv = 1/sqrt(var + eps)),
    from g = dL/dxhat: inv * (g - mean(g) - xhat * mean(g * xhat)). Exact:
    d inv / dx_j = -inv^3 (x_j - mean) / n."""
    mean_g = g.mean(axis=axes, keepdims=True)
    return inv * (g - mean_g - xhat * (g * xhat).mean(axis=axes, keepdims=True))


def _param_grads(dy, xhat, axes, r):
    """dscale = sum(dy * xhat), dbias = sum(dy) over the dims the parameters
    broadcast along; only the requested ones."""
    out = {}
    if "dscale" in r:
        out["dscale"] = (dy * xhat).sum(axis=axes, keepdims=True)
    if "dbias" in r:
        out["dbias"] = dy.sum(axis=axes, keepdims=True)
    return out


def _scaled(dy, scale):
    """dL/dxhat = dy * scale."""
    return dy if scale is None else dy * scale


def _feature_axes(x, a):
    return tuple(range(a["axis"], x.ndim)), tuple(range(a["axis"]))


def _epsilon(o, a):
    """layernorm's and rmsnorm's epsilon: the operand (a runtime scalar) if given."""
    given = o.get("epsilon")
    return a["epsilon"] if given is None else float(given)


def _layernorm(o, a, r):
    x = o["x"]
    axes, _ = _feature_axes(x, a)
    mean, var = _moments(x, axes)
    inv = 1.0 / np.sqrt(var + _epsilon(o, a))
    y = _affine((x - mean) * inv, o.get("scale"), o.get("bias"))
    return {"y": y, "mean": mean, "inv_variance": inv}


def _layernorm_backward(o, a, r):
    dy, x = o["dy"], o["x"]
    axes, param_axes = _feature_axes(x, a)
    inv = o["inv_variance"]
    xhat = (x - o["mean"]) * inv
    out = {"dx": _centered_grad(_scaled(dy, o.get("scale")), xhat, inv, axes)}
    out.update(_param_grads(dy, xhat, param_axes, r))
    return out


def _rmsnorm(o, a, r):
    x = o["x"]
    axes, _ = _feature_axes(x, a)
    inv = 1.0 / np.sqrt((x * x).mean(axis=axes, keepdims=True) + _epsilon(o, a))
    return {"y": _affine(x * inv, o.get("scale"), o.get("bias")), "inv_rms": inv}


def _rmsnorm_backward(o, a, r):
    dy, x, inv = o["dy"], o["x"], o["inv_rms"]
    axes, param_axes = _feature_axes(x, a)
    xhat = x * inv
    g = _scaled(dy, o.get("scale"))
    # d inv / dx_j = -inv^3 x_j / n, so dx = inv * (g - xhat * mean(g * xhat)).
    dx = inv * (g - xhat * (g * xhat).mean(axis=axes, keepdims=True))
    out = {"dx": dx}
    out.update(_param_grads(dy, xhat, param_axes, r))
    return out


def _channel_axes(x):
    """Every dim but the channel dim 1."""
    return (0,) + tuple(range(2, x.ndim))


def _batchnorm(o, a, r):
    x = o["x"]
    axes = _channel_axes(x)
    mean, var = _moments(x, axes)
    inv = 1.0 / np.sqrt(var + a["epsilon"])
    out = {"y": _affine((x - mean) * inv, o["scale"], o["bias"]),
           "mean": mean, "inv_variance": inv}
    if o.get("running_mean") is not None:
        m, count = a["momentum"], x.size // x.shape[1]
        unbiased = var * count / (count - 1)
        out["next_running_mean"] = (1.0 - m) * o["running_mean"] + m * mean
        out["next_running_var"] = (1.0 - m) * o["running_var"] + m * unbiased
    return out


def _batchnorm_inference(o, a, r):
    xhat = (o["x"] - o["mean"]) / np.sqrt(o["variance"] + a["epsilon"])
    return {"y": _affine(xhat, o["scale"], o["bias"])}


def _batchnorm_backward(o, a, r):
    dy, x, inv = o["dy"], o["x"], o["inv_variance"]
    axes = _channel_axes(x)
    xhat = (x - o["mean"]) * inv
    out = {"dx": _centered_grad(_scaled(dy, o["scale"]), xhat, inv, axes)}
    out.update(_param_grads(dy, xhat, axes, r))
    return out


def _grouped(t, groups):
    """(N, C, ...) -> (N, G, C/G, ...): a group's channels and spatial dims are dims 2.."""
    return t.reshape((t.shape[0], groups, t.shape[1] // groups) + t.shape[2:])


def _group_norm(o, a, groups):
    """groupnorm forward; instancenorm is the case groups = C."""
    x = o["x"]
    xg = _grouped(x, groups)
    mean, var = _moments(xg, tuple(range(2, xg.ndim)))
    inv = 1.0 / np.sqrt(var + a["epsilon"])
    y = _affine(((xg - mean) * inv).reshape(x.shape), o.get("scale"), o.get("bias"))
    # Statistics (N, G, 1, 1, ...) -> (N, G, 1, ...): drop the grouped channel dim.
    return {"y": y, "mean": mean[:, :, 0], "inv_variance": inv[:, :, 0]}


def _group_norm_backward(o, r, groups):
    dy, x = o["dy"], o["x"]
    xg = _grouped(x, groups)
    mean, inv = o["mean"][:, :, None], o["inv_variance"][:, :, None]
    xhat = (xg - mean) * inv
    g = _grouped(_scaled(dy, o.get("scale")), groups)
    dx = _centered_grad(g, xhat, inv, tuple(range(2, xg.ndim))).reshape(x.shape)
    out = {"dx": dx}
    out.update(_param_grads(dy, xhat.reshape(x.shape), _channel_axes(x), r))
    return out


def _groupnorm(o, a, r):
    return _group_norm(o, a, a["groups"])


def _groupnorm_backward(o, a, r):
    return _group_norm_backward(o, r, a["groups"])


def _instancenorm(o, a, r):
    return _group_norm(o, a, o["x"].shape[1])


def _instancenorm_backward(o, a, r):
    return _group_norm_backward(o, r, o["x"].shape[1])


# ----------------------------------------------------------------------------
# Softmax and log-softmax along ``axis`` (max-subtracted), and their backward
# ops from the forward output y.
# ----------------------------------------------------------------------------

def _shifted(x, axis):
    """x minus its row maximum; a row that is all -inf is shifted by 0."""
    m = x.max(axis=axis, keepdims=True)
    return x - np.where(m == -np.inf, 0.0, m)


def _softmax(o, a, r):
    # A row with a finite max sums to >= 1; an all -inf row sums to 0 and gives 0.
    e = np.exp(_shifted(o["x"], a["axis"]))
    return {"y": e / np.maximum(e.sum(axis=a["axis"], keepdims=True), 1.0)}


def _log_softmax(o, a, r):
    shifted = _shifted(o["x"], a["axis"])
    total = np.maximum(np.exp(shifted).sum(axis=a["axis"], keepdims=True), 1.0)
    return {"y": shifted - np.log(total)}


def _softmax_backward(o, a, r):
    dy, y = o["dy"], o["y"]
    return {"dx": y * (dy - (dy * y).sum(axis=a["axis"], keepdims=True))}


def _log_softmax_backward(o, a, r):
    dy, y = o["dy"], o["y"]
    return {"dx": dy - np.exp(y) * dy.sum(axis=a["axis"], keepdims=True)}


# ----------------------------------------------------------------------------
# Reductions over ``axes``.
# ----------------------------------------------------------------------------

REDUCERS = {
    "sum": lambda x, **k: np.sum(x, **k),
    "mean": lambda x, **k: np.mean(x, **k),
    "max": lambda x, **k: np.max(x, **k),
    "min": lambda x, **k: np.min(x, **k),
    "prod": lambda x, **k: np.prod(x, **k),
    "amax": lambda x, **k: np.max(np.abs(x), **k),  # cuDNN AMAX: largest |x|
    "norm1": lambda x, **k: np.sum(np.abs(x), **k),
    "norm2": lambda x, **k: np.sqrt(np.sum(x * x, **k)),
}


def _reduction(o, a, r):
    reduce = REDUCERS[a["mode"]]
    return {"y": reduce(o["x"], axis=tuple(a["axes"]), keepdims=bool(a["keepdims"]))}


# ----------------------------------------------------------------------------
# Pooling (2D and 3D) over the spatial dims of (N, C, *in). Windows read strided
# views of the padded input, as convolution taps do. Max ignores padding and
# the first maximum (row-major window order) wins; avg divides by the window
# size (count_include_pad) or by the number of real elements in the window.
# ----------------------------------------------------------------------------

def _pool_out(shape, a):
    return tuple(output_size(n, w, p, q, s, 1) for n, w, p, q, s in zip(
        shape[2:], a["window"], a["pre_padding"], a["post_padding"], a["stride"]))


def _pool_views(a, out):
    """(tap number, index of the padded input it reads) for every window position."""
    ones = (1,) * len(out)
    for t, tap in enumerate(_taps(a["window"])):
        yield t, _tap_view(tap, ones, a["stride"], out)


def _max_pool(x, a, out):
    """Window maxima and the tap number of each window's first maximum."""
    pre, post = a["pre_padding"], a["post_padding"]
    xp = _pad(x, pre, post, -np.inf)
    real = _pad(np.ones(x.shape, dtype=bool), pre, post, False)
    best = np.full(x.shape[:2] + out, -np.inf)
    seen = np.zeros(best.shape, dtype=bool)
    arg = np.zeros(best.shape, dtype=np.int64)
    for t, view in _pool_views(a, out):
        v = xp[view]
        # Strictly greater keeps the first maximum; NaN wins (and propagates).
        # The first real element is taken even when it is -inf.
        take = real[view] & (~seen | (v > best) | (np.isnan(v) & ~np.isnan(best)))
        best, arg, seen = np.where(take, v, best), np.where(take, t, arg), seen | take
    return best, arg


def _pool_divisor(shape, a, out):
    if a["count_include_pad"]:
        return float(math.prod(a["window"]))
    real = _pad(np.ones((1, 1) + tuple(shape[2:])), a["pre_padding"], a["post_padding"])
    return sum(real[view] for _, view in _pool_views(a, out))


def _pooling(o, a, r):
    x = o["x"]
    out = _pool_out(x.shape, a)
    if a["mode"] == "max":
        return {"y": _max_pool(x, a, out)[0]}
    xp = _pad(x, a["pre_padding"], a["post_padding"])
    total = sum(xp[view] for _, view in _pool_views(a, out))
    return {"y": total / _pool_divisor(x.shape, a, out)}


def _pooling_backward(o, a, r):
    dy, x = o["dy"], o["x"]
    out = _pool_out(x.shape, a)
    dxp = _pad(np.zeros(x.shape), a["pre_padding"], a["post_padding"])
    if a["mode"] == "max":
        _, arg = _max_pool(x, a, out)
        for t, view in _pool_views(a, out):
            dxp[view] += np.where(arg == t, dy, 0.0)
    else:
        share = dy / _pool_divisor(x.shape, a, out)
        for _, view in _pool_views(a, out):
            dxp[view] += share  # what lands on padding is dropped by the crop
    return {"dx": _crop(dxp, a["pre_padding"], x.shape[2:])}


# ----------------------------------------------------------------------------
# Dispatch table: op name -> fn(operands, attrs, results) -> {result: array}.
# ----------------------------------------------------------------------------

_OPS = {}
_OPS.update({name: _unary(fn) for name, fn in UNARY.items()})
_OPS.update({name: _binary(fn) for name, fn in BINARY.items()})
_OPS.update({name: _activation_backward(fn) for name, fn in ACTIVATION_DERIVATIVES.items()})
_OPS.update({
    "logical_not": _logical_not, "select": _select, "gen_index": _gen_index,
    "relu_backward": _relu_backward, "elu_backward": _elu_backward,
    "leaky_relu_backward": _leaky_relu_backward,
    # tensor
    "cast": _cast, "constant": _constant, "reshape": _reshape,
    "transpose": _transpose, "slice": _slice, "concat": _concat,
    # matmul, convolution, attention
    "matmul": _matmul, "matmul_block_scaled": _matmul_block_scaled,
    "conv_fprop": _conv_fprop, "conv_dgrad": _conv_dgrad, "conv_wgrad": _conv_wgrad,
    "sdpa": sdpa, "sdpa_backward": sdpa_backward,
    # normalization
    "layernorm": _layernorm, "layernorm_backward": _layernorm_backward,
    "rmsnorm": _rmsnorm, "rmsnorm_backward": _rmsnorm_backward,
    "batchnorm": _batchnorm, "batchnorm_inference": _batchnorm_inference,
    "batchnorm_backward": _batchnorm_backward,
    "groupnorm": _groupnorm, "groupnorm_backward": _groupnorm_backward,
    "instancenorm": _instancenorm, "instancenorm_backward": _instancenorm_backward,
    # softmax, reduction, pooling
    "softmax": _softmax, "log_softmax": _log_softmax,
    "softmax_backward": _softmax_backward, "log_softmax_backward": _log_softmax_backward,
    "reduction": _reduction,
    "pooling": _pooling, "pooling_backward": _pooling_backward,
})


def supported_ops():
    """Names of the ops the reference implements."""
    return set(_OPS)
