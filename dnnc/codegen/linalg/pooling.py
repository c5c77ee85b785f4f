"""Max and average pooling, forward and backward, 2D and 3D.

x is (N, C, *in), y (N, C, *out); per spatial dim: window W, stride s,
padding pre / post. Window o covers padded rows o * s + t (t < W), i.e. input
rows o * s + t - pre. Every window holds at least one real row (the op
requires padding smaller than the window).

* max: x padded with -inf, reduced with maximumf (NaN propagates).
* avg: x padded with 0, summed, divided by W_1 * W_2 ... (count_include_pad)
  or by the number of real rows, computed per output from its indices.
* max backward: a first generic finds each window's first maximum (row-major
  tap order, padding excluded, NaN wins) as a flat tap number; dy and those
  tap numbers are then spread like a data gradient (see ``_spread``) and each
  dx row sums the dy of the windows whose chosen tap it is.
* avg backward: dy / divisor spread over the window the same way.
"""

import math as pymath

from mlir.dialects import arith

from dnnc.codegen.linalg import emit, window
from dnnc.codegen.linalg.emit import PARALLEL, REDUCTION, cf, ci, d
from dnnc.dialect.types import data_type

_P = arith.CmpFPredicate
_I = arith.CmpIPredicate


def _geometry(view, x_info):
    a = view.attrs
    nd = len(x_info.shape) - 2
    return nd, a["window"], a["stride"], a["pre_padding"], a["post_padding"]


def _idx(value):
    return emit.const(emit.index_type(), value)


def _divisor(view, x_info, first_out_loop):
    """f32 divisor of the window at the current output (loops from
    ``first_out_loop`` are the output's spatial indices)."""
    nd, win, stride, pre, _ = _geometry(view, x_info)
    if view.attrs["count_include_pad"]:
        return cf(float(pymath.prod(win)))
    count = _idx(1)
    for i in range(nd):
        # Real rows of window o: [max(start, 0), min(start + W, in)),
        # start = o * s - pre.
        start = arith.subi(arith.muli(emit.index(first_out_loop + i), _idx(stride[i])),
                           _idx(pre[i]))
        hi = arith.minsi(arith.addi(start, _idx(win[i])), _idx(x_info.shape[2 + i]))
        lo = arith.maxsi(start, _idx(0))
        count = arith.muli(count, arith.subi(hi, lo))
    return arith.sitofp(emit.f32(), arith.index_cast(emit.i32(), count))


def _pool_generic(xs, win, stride, outs, body):
    """linalg.generic over loops (n, c, o_i | t_i) reading xs (padded) at
    o * s + t; ``outs`` are (N, C, *out) accumulators."""
    nd = len(win)
    loops = 2 + 2 * nd
    t0 = 2 + nd
    x_map = emit.amap(loops, [d(0), d(1)] + [d(2 + i) * stride[i] + d(t0 + i) for i in range(nd)])
    out_map = emit.amap(loops, [d(i) for i in range(2 + nd)])
    return emit.generic([xs, window.window_operand(win)], outs,
                        [x_map, window.window_map(loops, t0, nd)] + [out_map] * len(outs),
                        [PARALLEL] * (2 + nd) + [REDUCTION] * nd, body)


def lower_pooling(view):
    x = view.operands["x"]
    ix = emit.logical_info(x)
    out = emit.logical_info(view.results["y"])
    nd, win, stride, pre, post = _geometry(view, ix)
    to_f32 = emit.f32_scalar(ix.dtype)
    if view.attrs["mode"] == "max":
        xs = window.pad(x, pre, post, -float("inf"), emit.f32(), to_f32)
        acc = emit.filled(out.shape, emit.f32(), -float("inf"))
        acc = _pool_generic(xs, win, stride, [acc],
                            lambda v, _, m: [arith.maximumf(m, v)])[0]
        if out.dtype is data_type.FLOAT:
            return {"y": acc}
        return {"y": emit.convert(acc, data_type.FLOAT, out.dtype)}
    xs = window.pad(x, pre, post, 0.0, emit.f32(), to_f32)
    acc = emit.filled(out.shape, emit.f32(), 0.0)
    acc = _pool_generic(xs, win, stride, [acc], lambda v, _, s: [arith.addf(s, v)])[0]
    y = emit.empty(out.shape, emit.storage_element(out.dtype))
    rank = len(out.shape)

    def finish(s, _):
        return [emit.from_f32(arith.divf(s, _divisor(view, ix, 2)), out.dtype)]

    return {"y": emit.generic([acc], [y], [emit.identity(rank)] * 2, [PARALLEL] * rank,
                              finish)[0]}


def _flat_tap(first_loop, win):
    """Row-major number (i32) of the window tap given by loops first_loop.."""
    flat = ci(0)
    for i, w in enumerate(win):
        t = emit.index_i32(first_loop + i)
        flat = arith.addi(arith.muli(flat, ci(w)), t)
    return flat


def _argmax(x, ix, win, stride, pre, post):
    """Per window: flat tap number of the first maximum (i32)."""
    nd = len(win)
    xs = window.pad(x, pre, post, 0.0, emit.f32(), emit.f32_scalar(ix.dtype))
    out_shape = list(emit.shape_of(xs)[:2]) + [
        (n + a + b - w) // s + 1 for n, a, b, w, s in zip(ix.shape[2:], pre, post, win, stride)]
    best = emit.filled(out_shape, emit.f32(), -float("inf"))
    arg = emit.filled(out_shape, emit.i32(), -1)
    t0 = 2 + nd

    def body(v, _, m, k):
        real = None
        for i in range(nd):
            # Input row of this tap: o * s + t - pre; real when in [0, in).
            row = arith.subi(arith.addi(arith.muli(emit.index_i32(2 + i), ci(stride[i])),
                                        emit.index_i32(t0 + i)), ci(pre[i]))
            ok = arith.andi(arith.cmpi(_I.sge, row, ci(0)),
                            arith.cmpi(_I.slt, row, ci(ix.shape[2 + i])))
            real = ok if real is None else arith.andi(real, ok)
        unseen = arith.cmpi(_I.slt, k, ci(0))
        better = arith.cmpf(_P.OGT, v, m)
        nan_wins = arith.andi(arith.cmpf(_P.UNO, v, v), arith.cmpf(_P.ORD, m, m))
        take = arith.andi(real, arith.ori(unseen, arith.ori(better, nan_wins)))
        return [arith.select(take, v, m), arith.select(take, _flat_tap(t0, win), k)]

    return _pool_generic(xs, win, stride, [best, arg], body)[1]


def _spread(value, element_type, fill, scalar, ix, win, stride, pre):
    """Place window o's value at z = o * s + (W - 1) - pre of a tensor of
    length in + W - 1: then the windows holding input row h at tap t are
    read at z = h + (W - 1 - t) (h + pre = o * s + t)."""
    lengths = [n + w - 1 for n, w in zip(ix.shape[2:], win)]
    offsets = [w - 1 - p for w, p in zip(win, pre)]
    return window.place(value, lengths, stride, offsets, fill, element_type, scalar)


def _gather_generic(inputs, ix, win, out_dtype, body):
    """dx over loops (n, c, h_i | t_i), reading each spread input at
    h + (W - 1 - t); body(*elements) -> f32 contribution."""
    nd = len(win)
    loops = 2 + 2 * nd
    t0 = 2 + nd
    z_map = emit.amap(loops, [d(0), d(1)] + [d(2 + i) + (win[i] - 1) - d(t0 + i)
                                             for i in range(nd)])
    out_map = emit.amap(loops, [d(i) for i in range(2 + nd)])
    acc = emit.filled(ix.shape, emit.f32(), 0.0)
    acc = emit.generic(list(inputs) + [window.window_operand(win)], [acc],
                       [z_map] * len(inputs) + [window.window_map(loops, t0, nd)] + [out_map],
                       [PARALLEL] * (2 + nd) + [REDUCTION] * nd,
                       lambda *args: [arith.addf(args[-1], body(*args[:-2]))])[0]
    if out_dtype is data_type.FLOAT:
        return acc
    return emit.convert(acc, data_type.FLOAT, out_dtype)


def lower_pooling_backward(view):
    dy, x = view.operands["dy"], view.operands["x"]
    ix, idy = emit.logical_info(x), emit.logical_info(dy)
    out = emit.logical_info(view.results["dx"])
    nd, win, stride, pre, post = _geometry(view, ix)
    dy_f32 = emit.f32_scalar(idy.dtype)
    if view.attrs["mode"] == "max":
        arg = _argmax(x, ix, win, stride, pre, post)
        z_dy = _spread(dy, emit.f32(), 0.0, dy_f32, ix, win, stride, pre)
        z_arg = _spread(arg, emit.i32(), -1, None, ix, win, stride, pre)
        t0 = 2 + nd

        def body(g, k):
            # Tap of row h in the window read here is t; take dy when the
            # window's first maximum is exactly that tap. A select, so an inf
            # or NaN dy of another window does not leak in.
            hit = arith.cmpi(_I.eq, k, _flat_tap(t0, win))
            return arith.select(hit, g, cf(0.0))

        return {"dx": _gather_generic([z_dy, z_arg], ix, win, out.dtype, body)}
    rank = len(idy.shape)
    share = emit.empty(idy.shape, emit.f32())
    share = emit.generic([dy], [share], [emit.identity(rank)] * 2, [PARALLEL] * rank,
                         lambda g, _: [arith.divf(emit.to_f32(g, idy.dtype),
                                                  _divisor(view, ix, 2))])[0]
    z = _spread(share, emit.f32(), 0.0, None, ix, win, stride, pre)
    return {"dx": _gather_generic([z], ix, win, out.dtype, lambda g: g)}
