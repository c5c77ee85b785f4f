"""Batchnorm, forward (training and inference) and backward, as per-channel
sums and pointwise ops laid out for the kernels dnn-fuse makes of them.

Batchnorm reduces every dim of x but the channels (dim 1). The rules view x
so that those sums are the fast reductions:

* **rows** — x stored channels-last (a graph input whose strides put C
  innermost, dnnc/decompose/layout.py; in training and backward, a
  convolution's output, which the GPU's convolutions write channels-last)
  or of rank 2: x in its memory order,
  ``reshape(transpose(x, order), (R, C))`` with R = N * spatial, where a
  per-channel sum is a column sum over R (a column program, read once by
  every thread's 16-byte vectors) and the pointwise passes run over the same
  (R, C) view; results go back through the inverse transpose. On the GPU
  these transposes and reshapes are views of the graph's buffers
  (dnn-layout-views): no copy.
* **planes** — any other x, row-major: ``(N, C, S)`` with S the spatial
  size, where a per-channel sum is a row sum over S per (sample, channel)
  (a row program) then a column sum over N of the (N, C) partial sums.

Per-channel values are computed on (1, C) tensors, so that the pointwise
ops on them join the column programs that make them; they broadcast on the
view as (1, C) (rows) or (1, C, 1) (planes), and are returned as [1, C, 1,
...] through reshapes (views on the GPU).

    training   mean = sum(x) / count, var = sum((x - mean)^2) / count
               (two passes, f32: no cancellation), inv = rsqrt(var + eps),
               y = (x - mean) * (inv * scale) + bias; running statistics
               (1 - momentum) * running + momentum * (mean, unbiased var)
    inference  y = x * a + c, a = scale * rsqrt(var + eps), c = bias - mean * a
               (planes: on x as it is, the form that fuses into a
               convolution's epilogue)
    backward   xhat = (x - mean) * inv, dbias = sum(dy), dscale = sum(dy * xhat)
               (one pass over dy and x), dx = inv * scale *
               (dy - dbias / count - xhat * dscale / count)

Semantics: dnnc/dialect/ops_norm.py. Lit test: test/lit/passes/dnn_decompose.mlir.
"""

import math

from dnnc.decompose import layout


class _Channels:
    """x's elements grouped per channel, in the rows or the planes form."""

    def __init__(self, b, x, strided_only=False):
        self.b = b
        self.shape = tuple(b.shape_of(x))
        c = self.shape[1]
        self.count = math.prod(self.shape) // c
        order = list(range(len(self.shape))) if len(self.shape) == 2 else \
            layout.channel_last_order(self.shape, layout.input_strides(x))
        if order is None and not strided_only and len(self.shape) > 2 and \
                layout.written_channels_last(x):
            # A convolution's output: channels-last on the GPU where its
            # readers take any layout, as this view's transpose does.
            order = [0] + list(range(2, len(self.shape))) + [1]
        if strided_only and order is not None and order == sorted(order):
            order = None
        self.order = order
        self.param_shape = (1, c) + (1,) * (len(self.shape) - 2)
        self.spread_shape = (1, c) if order is not None else (1, c, 1)

    @property
    def rows(self):
        return self.order is not None

    def view(self, t):
        """A tensor of x's shape in the working view, (R, C) or (N, C, S)."""
        b, shape = self.b, self.shape
        if self.rows:
            if self.order != sorted(self.order):
                t = b.transpose(t, self.order)
            return b.reshape(t, (self.count, shape[1]))
        return b.reshape(t, shape[:2] + (math.prod(shape[2:]),))

    def restore(self, t):
        """The inverse of ``view``."""
        b = self.b
        if not self.rows:
            return b.reshape(t, self.shape)
        t = b.reshape(t, [self.shape[d] for d in self.order])
        if self.order != sorted(self.order):
            t = b.transpose(t, [self.order.index(d) for d in range(len(self.order))])
        return t

    def channel(self, p):
        """A [1, C, 1, ...] parameter as a (1, C) tensor."""
        return self.b.reshape(p, (1, self.shape[1]))

    def spread(self, t):
        """A (1, C) value as it broadcasts on the working view."""
        return self.b.reshape(t, self.spread_shape)

    def result(self, t, out):
        """A (1, C) value as a [1, C, 1, ...] result of element type ``out``."""
        return self.b.reshape(self.b.cast(t, out), self.param_shape)

    def sum(self, t):
        """Per-channel f32 sum of a working-view tensor, (1, C)."""
        b = self.b
        if self.rows:
            return b.sum(t, [0])
        planes = b.sum(t, [2])  # (N, C, 1): a row sum per (sample, channel)
        return b.sum(b.reshape(planes, self.shape[:2]), [0])


def batchnorm(b, v):
    o, momentum = v.operands, v.attrs["momentum"]
    ch = _Channels(b, o["x"])
    x = ch.view(o["x"])
    mean = b.mul(ch.sum(x), 1.0 / ch.count)
    centered = b.sub(x, ch.spread(mean))
    var = b.mul(ch.sum(b.unary("square", centered)), 1.0 / ch.count)
    inv = b.unary("rsqrt", b.add(var, v.attrs["epsilon"]))
    a = b.mul(inv, ch.channel(o["scale"]))
    y = b.add(b.mul(centered, ch.spread(a)), ch.spread(ch.channel(o["bias"])),
              out=b.out("y"))
    out = {"y": ch.restore(y), "mean": ch.result(mean, b.out("mean")),
           "inv_variance": ch.result(inv, b.out("inv_variance"))}
    if o["running_mean"] is not None:
        unbiased = ch.count / (ch.count - 1) if ch.count > 1 else math.inf
        keep = 1.0 - momentum
        running = {"next_running_mean": (o["running_mean"], mean, momentum),
                   "next_running_var": (o["running_var"], var, momentum * unbiased)}
        for name, (old, batch, weight) in running.items():
            # keep * old + weight * batch, each op reading the batch statistic
            # so that all join the column program that makes it.
            new = b.mul(batch, weight)
            if keep:
                new = b.mul(b.add(b.mul(batch, weight / keep), ch.channel(old)), keep)
            out[name] = ch.result(new, b.out(name))
    return out


def batchnorm_inference(b, v):
    o = v.operands
    ch = _Channels(b, o["x"], strided_only=True)
    if not ch.rows:  # per-channel broadcasts on x itself: fuses into an epilogue
        a = b.mul(o["scale"], b.unary("rsqrt", b.add(o["variance"], v.attrs["epsilon"])))
        c = b.sub(o["bias"], b.mul(o["mean"], a))
        return {"y": b.add(b.mul(o["x"], a), c, out=b.out("y"))}
    inv = b.unary("rsqrt", b.add(ch.channel(o["variance"]), v.attrs["epsilon"]))
    a = b.mul(ch.channel(o["scale"]), inv)
    c = b.sub(ch.channel(o["bias"]), b.mul(ch.channel(o["mean"]), a))
    y = b.add(b.mul(ch.view(o["x"]), a), c, out=b.out("y"))
    return {"y": ch.restore(y)}


def batchnorm_backward(b, v):
    o = v.operands
    ch = _Channels(b, o["x"])
    dy, x = ch.view(o["dy"]), ch.view(o["x"])
    mean, inv = ch.channel(o["mean"]), ch.channel(o["inv_variance"])
    xhat = b.mul(b.sub(x, ch.spread(mean)), ch.spread(inv))
    dbias = ch.sum(dy)
    dscale = ch.sum(b.mul(dy, xhat))
    m1, m2 = b.mul(dbias, 1.0 / ch.count), b.mul(dscale, 1.0 / ch.count)
    h = b.sub(b.sub(dy, ch.spread(m1)), b.mul(xhat, ch.spread(m2)))
    # inv and scale applied one after the other: a product of the two alone
    # (reading no sum) would be a kernel of its own.
    dx = b.mul(b.mul(h, ch.spread(inv)), ch.spread(ch.channel(o["scale"])), out=b.out("dx"))
    out = {"dx": ch.restore(dx)}
    for name, t in (("dscale", dscale), ("dbias", dbias)):
        if v.results.get(name) is not None:
            out[name] = ch.result(t, b.out(name))
    return out


RULES = {
    "batchnorm": batchnorm,
    "batchnorm_inference": batchnorm_inference,
    "batchnorm_backward": batchnorm_backward,
}
