"""Max and average pooling, forward and backward, 2D and 3D.

x is (N, C, *in), y (N, C, *out); per spatial dim: window W, stride s,
padding pre / post. Window o covers padded rows o * s + t (t < W), i.e. input
rows o * s + t - pre. Every window holds at least one real row (the op
requires padding smaller than the window).

* forward: one reduction generic over loops (n, c, o_i | t_i) that reads x
  itself (``tensor.extract`` at o * s + t - pre, clamped into x, the tap
  dropped where it falls on padding), so no padded copy of x is made and x
  may lie in any layout. It carries ``dnn.window`` (the geometry and mode),
  by which the simt-window strategy (dnnc/codegen/gpu/window/program.py) finds it.
  max reduces with maximumf from -inf (NaN propagates); avg sums, then a
  pointwise generic divides by W_1 * W_2 ... (count_include_pad) or by the
  number of real rows, computed per output from its indices.
* backward, gathered: one reduction generic over loops (n, c, h_i | t_i),
  one thread's worth of work per dx element, no atomics and no padded or
  spread copies: input row h is tap t of window o = (h + pre - t) / s when
  s divides it and 0 <= o < out. max recomputes window o's first maximum
  from x (row-major tap order, padding excluded, NaN wins: the reference's
  rule) and takes dy[o] when that is tap t; avg takes dy[o] / divisor(o).
  dy and x are read in place (``tensor.extract``), dy first; the generic
  carries ``dnn.window`` with ``backward = true``, by which simt-window
  finds it too (and dnnc/codegen/gpu/window/gradients.py gathers dx).
"""

import math as pymath

from mlir import ir
from mlir.dialects import arith, tensor

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


def _divisor(view, x_info, outs):
    """f32 divisor of window ``outs`` (its spatial indices, index values)."""
    nd, win, stride, pre, _ = _geometry(view, x_info)
    if view.attrs["count_include_pad"]:
        return cf(float(pymath.prod(win)))
    count = _idx(1)
    for i in range(nd):
        # Real rows of window o: [max(start, 0), min(start + W, in)),
        # start = o * s - pre.
        start = arith.subi(arith.muli(outs[i], _idx(stride[i])), _idx(pre[i]))
        hi = arith.minsi(arith.addi(start, _idx(win[i])), _idx(x_info.shape[2 + i]))
        lo = arith.maxsi(start, _idx(0))
        count = arith.muli(count, arith.subi(hi, lo))
    return arith.sitofp(emit.f32(), arith.index_cast(emit.i32(), count))


WINDOW_ATTR = "dnn.window"


def window_attr(mode, win, stride, pre, count_include_pad, backward=False):
    """The ``dnn.window`` dictionary of a window generic (the forward's
    reduction or the backward's gather): what the simt-window strategy needs
    besides the generic's operands."""
    def ints(values):
        return ir.DenseI64ArrayAttr.get([int(v) for v in values])

    fields = {"mode": ir.StringAttr.get(mode), "window": ints(win), "stride": ints(stride),
              "pre_padding": ints(pre),
              "count_include_pad": ir.BoolAttr.get(bool(count_include_pad))}
    if backward:  # absent on the forward
        fields["backward"] = ir.BoolAttr.get(True)
    return ir.DictAttr.get(fields)


def _window_reduce(x, ix, mode, win, stride, pre, out_shape, count_include_pad):
    """max or sum (f32) of every window of x, read in place: loops
    (n, c, o_i | t_i); the tap at input row h = o * s + t - pre counts when
    0 <= h < in (else it is padding: max skips it, the sum adds 0)."""
    nd = len(win)
    t0 = 2 + nd
    loops = 2 + 2 * nd
    identity = -float("inf") if mode == "max" else 0.0
    acc = emit.filled(out_shape, emit.f32(), identity)
    out_map = emit.amap(loops, [d(i) for i in range(2 + nd)])

    def body(_, m):
        rows, real = [], None
        for i in range(nd):
            h = arith.subi(arith.addi(arith.muli(emit.index(2 + i), _idx(stride[i])),
                                      emit.index(t0 + i)), _idx(pre[i]))
            ok = arith.andi(arith.cmpi(_I.sge, h, _idx(0)),
                            arith.cmpi(_I.slt, h, _idx(ix.shape[2 + i])))
            real = ok if real is None else arith.andi(real, ok)
            rows.append(h)
        # Read a clamped row where the tap is padding, then drop the value.
        rows = [arith.select(real, h, _idx(0)) for h in rows]
        v = tensor.extract(x, [emit.index(0), emit.index(1)] + rows)
        v = emit.to_f32(v, ix.dtype)
        if mode == "max":
            return [arith.select(real, arith.maximumf(m, v), m)]
        return [arith.addf(m, arith.select(real, v, cf(0.0)))]

    result = emit.generic([window.window_operand(win)], [acc],
                          [window.window_map(loops, t0, nd), out_map],
                          [PARALLEL] * (2 + nd) + [REDUCTION] * nd, body)[0]
    result.owner.attributes[WINDOW_ATTR] = window_attr(mode, win, stride, pre,
                                                       count_include_pad)
    return result


def lower_pooling(view):
    x = view.operands["x"]
    ix = emit.logical_info(x)
    out = emit.logical_info(view.results["y"])
    nd, win, stride, pre, post = _geometry(view, ix)
    mode = view.attrs["mode"]
    acc = _window_reduce(x, ix, mode, win, stride, pre, out.shape,
                         view.attrs["count_include_pad"])
    if mode == "max":
        if out.dtype is data_type.FLOAT:
            return {"y": acc}
        return {"y": emit.convert(acc, data_type.FLOAT, out.dtype)}
    y = emit.empty(out.shape, emit.storage_element(out.dtype))
    rank = len(out.shape)

    def finish(s, _):
        outs = [emit.index(2 + i) for i in range(nd)]
        return [emit.from_f32(arith.divf(s, _divisor(view, ix, outs)), out.dtype)]

    return {"y": emit.generic([acc], [y], [emit.identity(rank)] * 2, [PARALLEL] * rank,
                              finish)[0]}


def _flat_tap(first_loop, win):
    """Row-major number (i32) of the window tap given by loops first_loop.."""
    flat = ci(0)
    for i, w in enumerate(win):
        t = emit.index_i32(first_loop + i)
        flat = arith.addi(arith.muli(flat, ci(w)), t)
    return flat


def _first_max(x, ix, lead, outs, win, stride, pre):
    """Flat tap number (i32) of the first maximum of window ``outs`` of x
    (row-major tap order, padding excluded, NaN wins; the first real tap is
    taken even when it is -inf), the taps unrolled."""
    best, arg = cf(-float("inf")), ci(-1)
    taps = [[]]
    for w in win:
        taps = [t + [k] for t in taps for k in range(w)]
    for flat, tap in enumerate(taps):
        rows, real = [], None
        for i, (o, k) in enumerate(zip(outs, tap)):
            # Input row of the tap: o * s + k - pre, real when in [0, in).
            h = arith.subi(arith.addi(arith.muli(o, _idx(stride[i])), _idx(k)), _idx(pre[i]))
            ok = arith.andi(arith.cmpi(_I.sge, h, _idx(0)),
                            arith.cmpi(_I.slt, h, _idx(ix.shape[2 + i])))
            real = ok if real is None else arith.andi(real, ok)
            rows.append(h)
        rows = [arith.select(real, h, _idx(0)) for h in rows]
        v = emit.to_f32(tensor.extract(x, lead + rows), ix.dtype)
        unseen = arith.cmpi(_I.slt, arg, ci(0))
        better = arith.cmpf(_P.OGT, v, best)
        nan_wins = arith.andi(arith.cmpf(_P.UNO, v, v), arith.cmpf(_P.ORD, best, best))
        take = arith.andi(real, arith.ori(unseen, arith.ori(better, nan_wins)))
        best, arg = arith.select(take, v, best), arith.select(take, ci(flat), arg)
    return arg


def _window_gradient(view, dy, x, ix, idy):
    """dx (f32) gathered per input element: loops (n, c, h_i | t_i); input
    row h is tap t of window o = (h + pre - t) / s when s divides it and
    0 <= o < out. max takes dy[o] when o's first maximum is tap t, avg takes
    dy[o] / divisor(o). Marked ``dnn.window`` (backward), as the forward."""
    nd, win, stride, pre, _ = _geometry(view, ix)
    mode = view.attrs["mode"]
    t0 = 2 + nd
    loops = 2 + 2 * nd
    acc = emit.filled(ix.shape, emit.f32(), 0.0)
    out_map = emit.amap(loops, [d(i) for i in range(2 + nd)])

    def body(_, total):
        outs, valid = [], None
        for i in range(nd):
            a = arith.subi(arith.addi(emit.index(2 + i), _idx(pre[i])), emit.index(t0 + i))
            whole = arith.maxsi(a, _idx(0))
            o = arith.divsi(whole, _idx(stride[i]))
            ok = arith.andi(arith.cmpi(_I.sge, a, _idx(0)),
                            arith.cmpi(_I.eq, arith.remsi(whole, _idx(stride[i])), _idx(0)))
            ok = arith.andi(ok, arith.cmpi(_I.slt, o, _idx(idy.shape[2 + i])))
            valid = ok if valid is None else arith.andi(valid, ok)
            outs.append(o)
        # Read window 0 where the tap belongs to none, then drop the value
        # (a select, so that an inf or NaN dy of another window cannot leak).
        outs = [arith.select(valid, o, _idx(0)) for o in outs]
        lead = [emit.index(0), emit.index(1)]
        g = emit.to_f32(tensor.extract(dy, lead + outs), idy.dtype)
        if mode == "max":
            hit = arith.cmpi(_I.eq, _first_max(x, ix, lead, outs, win, stride, pre),
                             _flat_tap(t0, win))
            part = arith.select(arith.andi(valid, hit), g, cf(0.0))
        else:
            part = arith.select(valid, arith.divf(g, _divisor(view, ix, outs)), cf(0.0))
        return [arith.addf(total, part)]

    result = emit.generic([window.window_operand(win)], [acc],
                          [window.window_map(loops, t0, nd), out_map],
                          [PARALLEL] * (2 + nd) + [REDUCTION] * nd, body)[0]
    result.owner.attributes[WINDOW_ATTR] = window_attr(
        mode, win, stride, pre, view.attrs["count_include_pad"], backward=True)
    return result


def lower_pooling_backward(view):
    dy, x = view.operands["dy"], view.operands["x"]
    ix, idy = emit.logical_info(x), emit.logical_info(dy)
    out = emit.logical_info(view.results["dx"])
    dx = _window_gradient(view, dy, x, ix, idy)
    if out.dtype is data_type.FLOAT:
        return {"dx": dx}
    return {"dx": emit.convert(dx, data_type.FLOAT, out.dtype)}
