"""Group and instance norms of a channels-last x, in x's memory order.

A graph input x (N, C, spatial...) stored channels-last (strides that put C
innermost and N outermost, dnnc/decompose/layout.py) is, in memory, a
row-major (N, S, C) array with S the spatial size. Its per-(sample,
channel) sums are then sums over the middle axis of that view: column
programs with the sample as the outer index (simt-reduce-columns), whose
threads read C contiguous channels in 16-byte vectors. The row-major form
of dnnc/decompose/norm.py instead views x as (N, C, S) rows, which for a
channels-last x is a transposing copy before the row program and another
after it.

The view is ``reshape(transpose(x, order), (N, S, C))``; results go back
through the inverse transpose. On the GPU both are views of the graph's
buffers (dnn-layout-views): no copy. A (1, C, 1, ...) parameter is read as
(1, 1, C) (a reshape of its C values, whatever strides its unit dims
declare), a per-(sample, channel) value as (N, 1, C).

Forward, G groups of C/G channels, count = S * C/G elements a group:

    sums   = sum(x, S)                      (N, 1, C)   column program
    mean_g = sum(sums per group) / count    (N, G, 1)   small row program
    d      = x - mean_c                     mean_g spread to its channels
    var_g  = sum(sum(d^2, S) per group) / count         the same two steps
    inv_g  = rsqrt(var_g + eps)
    y      = d * inv_c * scale + bias                   pointwise

(an instance norm, one channel a group, takes mean = sum(x, S) / S and the
like directly). Two passes for the variance, as the batchnorm rules take:
no cancellation of E[x^2] - E[x]^2 in f32.

The backward (norm.groupnorm_backward) takes the same view for its
per-(sample, channel) sums of dy and dy * x and for dx = a * dy + p * x + q.

Lit test: test/lit/passes/dnn_decompose.mlir (groupnorm channels-last).
"""

import math

from dnnc.decompose import layout


class ChannelsLast:
    """x (N, C, spatial...) viewed as (N, S, C) in its memory order."""

    def __init__(self, shape, order):
        self.shape = tuple(shape)
        self.order = order
        self.n, self.c = shape[0], shape[1]
        self.s = math.prod(shape[2:])

    @staticmethod
    def of(b, x):
        """The view of x when it is a channels-last graph input with spatial
        dims of more than one element, N outermost; None otherwise."""
        shape = tuple(b.shape_of(x))
        if len(shape) < 3 or math.prod(shape[2:]) <= 1 or shape[1] <= 1:
            return None
        order = layout.channel_last_order(shape, layout.input_strides(x))
        if order is None:
            return None
        moved = [d for d in order if shape[d] != 1]
        if shape[0] != 1 and moved[0] != 0:  # N not outermost: no (N, S, C) view
            return None
        return ChannelsLast(shape, order)

    @property
    def view_shape(self):
        return (self.n, self.s, self.c)

    @property
    def channel_shape(self):
        """A value per (sample, channel) as it broadcasts on the view."""
        return (self.n, 1, self.c)

    def view(self, b, t):
        """A tensor of x's shape as (N, S, C)."""
        if self.order != sorted(self.order):
            t = b.transpose(t, self.order)
        return b.reshape(t, self.view_shape)

    def restore(self, b, t):
        """The inverse of ``view``."""
        t = b.reshape(t, [self.shape[d] for d in self.order])
        if self.order != sorted(self.order):
            t = b.transpose(t, [self.order.index(d) for d in range(len(self.order))])
        return t

    def parameter(self, b, p):
        """A (1, C, 1, ...) parameter as (1, 1, C); None stays None."""
        return None if p is None else b.reshape(p, (1, 1, self.c))

    def spatial_sum(self, b, t):
        """Per (sample, channel), the sum over S of a view-shaped tensor: (N, 1, C)."""
        return b.sum(t, [1])


def group_sum(b, cl, sums, groups):
    """Per (sample, group) sums (N, G, 1) of per-channel ``sums`` (N, 1, C);
    one channel a group: ``sums`` as they are."""
    per_group = cl.c // groups
    if per_group == 1:
        return sums
    return b.sum(b.reshape(sums, (cl.n, groups, per_group)), [2])


def per_channel(b, cl, value, groups, like):
    """A per-group value (N, G, 1) as it broadcasts on the view, (N, 1, C);
    ``like`` is any per-channel (N, 1, C) tensor (its shape alone is read).
    One channel a group: ``value`` is (N, 1, C) already."""
    if groups == cl.c:
        return value
    grouped = b.reshape(like, (cl.n, groups, cl.c // groups))
    return b.reshape(b.spread(value, grouped), cl.channel_shape)


def groupnorm(b, v, cl):
    """groupnorm of the channels-last x that ``cl`` views (see the module
    docstring); the results as norm.groupnorm returns them."""
    o, groups = v.operands, v.attrs["groups"]
    count = cl.s * (cl.c // groups)
    x = cl.view(b, o["x"])
    sums = cl.spatial_sum(b, x)
    mean = b.mul(group_sum(b, cl, sums, groups), 1.0 / count)
    centered = b.sub(x, per_channel(b, cl, mean, groups, sums))
    squares = cl.spatial_sum(b, b.unary("square", centered))
    var = b.mul(group_sum(b, cl, squares, groups), 1.0 / count)
    inv = b.unary("rsqrt", b.add(var, v.attrs["epsilon"]))
    scale, bias = cl.parameter(b, o["scale"]), cl.parameter(b, o["bias"])
    y = b.mul(centered, per_channel(b, cl, inv, groups, squares),
              out=b.out("y") if scale is None and bias is None else None)
    if scale is not None:
        y = b.mul(y, scale, out=b.out("y") if bias is None else None)
    if bias is not None:
        y = b.add(y, bias, out=b.out("y"))
    stat = (cl.n, groups) + (1,) * (len(cl.shape) - 2)
    return {"y": cl.restore(b, y), "mean": b.reshape(mean, stat),
            "inv_variance": b.reshape(inv, stat)}
