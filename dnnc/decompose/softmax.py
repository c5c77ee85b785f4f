"""Softmax and log-softmax, forward and backward, as reductions and pointwise ops.

    m = max(x), 0 where max(x) = -inf   (along axis, kept as a size-1 dim)
    s = sum(exp(x - m))
    softmax:      y = exp(x - m) / max(s, 1)
    log_softmax:  y = (x - m) - log(max(s, 1))
    softmax_backward:      dx = y * (dy - sum(dy * y))
    log_softmax_backward:  dx = dy - exp(y) * sum(dy)

Subtracting the row maximum keeps exp from overflowing. A row with a finite
maximum has s >= 1 (its maximum contributes exp(0)), so max(s, 1) changes
nothing there; a row that is all -inf has s = 0 and gives y = 0 (log_softmax:
-inf) instead of NaN, as the ops' definitions in dnnc/dialect/ops_reduce.py say.
"""


def _shifted(b, x, axis):
    """x - max(x) along ``axis``, with an all -inf row shifted by 0."""
    m = b.max(x, [axis])
    return b.sub(x, b.where_eq(m, float("-inf"), 0.0))


def softmax(b, v):
    axis = v.attrs["axis"]
    e = b.unary("exp", _shifted(b, v.operands["x"], axis))
    total = b.binary("max", b.sum(e, [axis]), 1.0)
    return {"y": b.div(e, total, out=b.out("y"))}


def log_softmax(b, v):
    axis = v.attrs["axis"]
    shifted = _shifted(b, v.operands["x"], axis)
    total = b.binary("max", b.sum(b.unary("exp", shifted), [axis]), 1.0)
    return {"y": b.sub(shifted, b.unary("log", total), out=b.out("y"))}


def softmax_backward(b, v):
    axis, dy, y = v.attrs["axis"], v.operands["dy"], v.operands["y"]
    inner = b.sum(b.mul(dy, y), [axis])
    return {"dx": b.mul(y, b.sub(dy, inner), out=b.out("dx"))}


def log_softmax_backward(b, v):
    axis, dy, y = v.attrs["axis"], v.operands["dy"], v.operands["y"]
    weighted = b.mul(b.unary("exp", y), b.sum(dy, [axis]))
    return {"dx": b.sub(dy, weighted, out=b.out("dx"))}


RULES = {
    "softmax": softmax,
    "log_softmax": log_softmax,
    "softmax_backward": softmax_backward,
    "log_softmax_backward": log_softmax_backward,
}
