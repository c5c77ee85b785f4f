"""Convolution forward, data gradient and filter gradient (2D and 3D, groups,
padding, stride, dilation, both modes) as linalg.generic with affine maps.

Layout: x (N, C, *in), w (K, Cg, *win), y (N, K, *out); groups G = C / Cg and
Kg = K / G. Channels are split into (G, Cg) and (G, Kg) with expand_shape so
that every loop appears alone in some indexing map (linalg infers loop ranges
from those). Operands are first converted to f32 (tf32-rounded in tf32 mode);
x is zero-padded. The window flip of ``mode = "convolution"`` goes into the
data operand's index (R - 1 - r), so the filter is always read at its own
tap r. Accumulation is f32, rounded once to the result type; a forward
convolution of int8 / uint8 operands (``compute_type = i32``) converts them
to i32 instead and accumulates exactly in i32 (contraction.py).

Below, per spatial dim: s stride, dl dilation, R window, pre padding.
"""

from mlir.dialects import arith

from dnnc.codegen.linalg import contraction, emit, window
from dnnc.codegen.linalg.emit import PARALLEL, REDUCTION, d


def _groups_split(value, at, first, second):
    """(.., X, ..) -> (.., first, second, ..) splitting dim ``at`` (X = first * second)."""
    shape = list(emit.shape_of(value))
    new = shape[:at] + [first, second] + shape[at + 1:]
    # Reassociation per source dim: dim ``at`` becomes result dims at, at + 1.
    groups = ([[i] for i in range(at)] + [[at, at + 1]]
              + [[i + 1] for i in range(at + 1, len(shape))])
    return emit.expand(value, groups, new)


def _groups_merge(value, at):
    """Inverse of _groups_split: merge dims ``at`` and ``at + 1``."""
    shape = list(emit.shape_of(value))
    new = shape[:at] + [shape[at] * shape[at + 1]] + shape[at + 2:]
    groups = [[i] for i in range(at)] + [[at, at + 1]] + [[i] for i in range(at + 2, len(shape))]
    return emit.collapse(value, groups, new)


def _tap(r_loop, window_len, dilation, flip):
    """Offset of tap ``r`` along a spatial dim: r * dl, or (R - 1 - r) * dl
    when the window is flipped."""
    r = d(r_loop)
    return ((window_len - 1) - r) * dilation if flip else r * dilation


def _padded_f32(x, pre, post, compute_type):
    """x zero-padded, in the accumulator's type (f32, or i32 in i32 mode)."""
    scalar = contraction.operand_scalar(emit.logical_info(x).dtype, compute_type)
    return window.pad(x, pre, post, 0.0, contraction.accumulator(compute_type), scalar)


def _mac(x, y, acc):
    return [arith.addf(acc, arith.mulf(x, y))]


def lower_conv_fprop(view):
    a = view.attrs
    x, w = view.operands["x"], view.operands["w"]
    ix, iw = emit.logical_info(x), emit.logical_info(w)
    out = emit.logical_info(view.results["y"])
    nd = len(ix.shape) - 2
    (n, c), (k, cg), win = ix.shape[:2], iw.shape[:2], iw.shape[2:]
    g = c // cg
    flip = a["mode"] == "convolution"
    xs = _groups_split(_padded_f32(x, a["pre_padding"], a["post_padding"], a["compute_type"]),
                       1, g, cg)
    ws = _groups_split(contraction.as_compute(w, a["compute_type"]), 0, g, k // g)
    # Loops: n, g, kg, o_i (parallel) | c, r_i (reduction).
    o0, c_loop, r0 = 3, 3 + nd, 4 + nd
    loops = 4 + 2 * nd
    # The padded input row of output o and tap r: o * s + r * dl (flipped tap
    # in convolution mode).
    x_map = emit.amap(loops, [d(0), d(1), d(c_loop)] + [
        d(o0 + i) * a["stride"][i] + _tap(r0 + i, win[i], a["dilation"][i], flip)
        for i in range(nd)])
    w_map = emit.amap(loops, [d(1), d(2), d(c_loop)] + [d(r0 + i) for i in range(nd)])
    y_map = emit.amap(loops, [d(0), d(1), d(2)] + [d(o0 + i) for i in range(nd)])
    ct = a["compute_type"]
    acc = emit.filled([n, g, k // g] + list(out.shape[2:]), contraction.accumulator(ct), 0.0)
    acc = emit.generic([xs, ws], [acc], [x_map, w_map, y_map],
                       [PARALLEL] * (3 + nd) + [REDUCTION] * (1 + nd), contraction.mac(ct))[0]
    return {"y": contraction.finish(_groups_merge(acc, 1), out.dtype, ct)}


def lower_conv_dgrad(view):
    a = view.attrs
    dy, w = view.operands["dy"], view.operands["w"]
    iw = emit.logical_info(w)
    out = emit.logical_info(view.results["dx"])
    nd = len(out.shape) - 2
    (n, c), (k, cg), win = out.shape[:2], iw.shape[:2], iw.shape[2:]
    g = c // cg
    spatial, dil = out.shape[2:], a["dilation"]
    flip = a["mode"] != "convolution"  # see the derivation below
    # fprop pairs padded row o * s + r * dl with dy[o] and w[r]; so dx[h]
    # gathers dy[o] * w[r] over h + pre = o * s + r * dl. Place dy[o] at
    # z = o * s + (R - 1) * dl - pre in a zero tensor of length
    # H + (R - 1) * dl (stride - 1 zeros between elements, padded or cropped):
    # then dx[h] = sum_r Z[h + (R - 1 - r) * dl] * w[r]. In convolution mode
    # w[R - 1 - r] is applied at tap r, and the tap index is r * dl instead.
    lengths = [h + (r - 1) * dl for h, r, dl in zip(spatial, win, dil)]
    offsets = [(r - 1) * dl - p for r, dl, p in zip(win, dil, a["pre_padding"])]
    scalar = contraction.operand_scalar(emit.logical_info(dy).dtype, a["compute_type"])
    z = window.place(dy, lengths, a["stride"], offsets, 0.0, emit.f32(), scalar)
    zs = _groups_split(z, 1, g, k // g)
    ws = _groups_split(contraction.as_compute(w, a["compute_type"]), 0, g, k // g)
    # Loops: n, g, c, h_i (parallel) | kg, r_i (reduction).
    h0, kg_loop, r0 = 3, 3 + nd, 4 + nd
    loops = 4 + 2 * nd
    z_map = emit.amap(loops, [d(0), d(1), d(kg_loop)] + [
        d(h0 + i) + _tap(r0 + i, win[i], dil[i], flip) for i in range(nd)])
    w_map = emit.amap(loops, [d(1), d(kg_loop), d(2)] + [d(r0 + i) for i in range(nd)])
    dx_map = emit.amap(loops, [d(0), d(1), d(2)] + [d(h0 + i) for i in range(nd)])
    acc = emit.filled([n, g, cg] + list(spatial), emit.f32(), 0.0)
    acc = emit.generic([zs, ws], [acc], [z_map, w_map, dx_map],
                       [PARALLEL] * (3 + nd) + [REDUCTION] * (1 + nd), _mac)[0]
    return {"dx": contraction.finish(_groups_merge(acc, 1), out.dtype)}


def lower_conv_wgrad(view):
    a = view.attrs
    dy, x = view.operands["dy"], view.operands["x"]
    ix = emit.logical_info(x)
    out = emit.logical_info(view.results["dw"])
    nd = len(out.shape) - 2
    (k, cg), win = out.shape[:2], out.shape[2:]
    n, c = ix.shape[:2]
    g = c // cg
    flip = a["mode"] == "convolution"
    xs = _groups_split(_padded_f32(x, a["pre_padding"], a["post_padding"], a["compute_type"]),
                       1, g, cg)
    dys = _groups_split(contraction.as_compute(dy, a["compute_type"]), 1, g, k // g)
    # Loops: g, kg, c, r_i (parallel) | n, o_i (reduction).
    r0, n_loop, o0 = 3, 3 + nd, 4 + nd
    loops = 4 + 2 * nd
    # dw[r] = sum_o dy[o] * xpad[o * s + r * dl] (flipped tap in convolution mode).
    x_map = emit.amap(loops, [d(n_loop), d(0), d(2)] + [
        d(o0 + i) * a["stride"][i] + _tap(r0 + i, win[i], a["dilation"][i], flip)
        for i in range(nd)])
    dy_map = emit.amap(loops, [d(n_loop), d(0), d(1)] + [d(o0 + i) for i in range(nd)])
    dw_map = emit.amap(loops, [d(0), d(1), d(2)] + [d(r0 + i) for i in range(nd)])
    acc = emit.filled([g, k // g, cg] + list(win), emit.f32(), 0.0)
    acc = emit.generic([xs, dys], [acc], [x_map, dy_map, dw_map],
                       [PARALLEL] * (3 + nd) + [REDUCTION] * (1 + nd), _mac)[0]
    return {"dw": contraction.finish(_groups_merge(acc, 0), out.dtype)}


# The operands of each direction, in the order ``describe`` lists their
# kernel arguments.
OPERANDS = {"conv_fprop": ("x", "w"), "conv_dgrad": ("dy", "w"), "conv_wgrad": ("x", "dy")}


def describe(view, arguments):
    """What an implicit-GEMM kernel needs to know of the convolution ``view``
    that the linalg form no longer says plainly, as the ``dnn.conv``
    attribute of its kernel function: the direction, the geometry per
    spatial dim, the groups, and which of the function's ``arguments`` (its
    block arguments) each operand is (-1 for one computed in the kernel).
    A forward convolution's x that pointwise ops of the kernel compute from
    one argument of its shape (a prologue dnn-fuse joined: relu(x * scale +
    shift)) names that argument, and ``prologue`` is true."""
    from mlir import ir

    a = view.attrs
    w = emit.logical_info(view.operands["w"] if "w" in view.operands else view.results["dw"])
    x = emit.logical_info(view.operands["x"] if "x" in view.operands else view.results["dx"])
    i64 = ir.IntegerType.get_signless(64)

    def ints(values):
        return ir.DenseI64ArrayAttr.get([int(v) for v in values])

    def index(value):
        return next((i for i, arg in enumerate(arguments) if arg == value), -1)

    x_source = _prologue_source(view.operands["x"], arguments) \
        if view.name == "conv_fprop" else None

    fields = {
        "direction": ir.StringAttr.get(view.name[len("conv_"):]),
        "stride": ints(a["stride"]), "dilation": ints(a["dilation"]),
        "pre": ints(a["pre_padding"]), "post": ints(a["post_padding"]),
        "flip": ir.BoolAttr.get(a["mode"] == "convolution"),
        "groups": ir.IntegerAttr.get(i64, x.shape[1] // w.shape[1]),
        "operands": ints(index(x_source if name == "x" and x_source is not None
                               else view.operands[name]) for name in OPERANDS[view.name]),
    }
    if x_source is not None:
        fields["prologue"] = ir.BoolAttr.get(True)
    return ir.DictAttr.get(fields)


def _prologue_source(x, arguments):
    """The function argument that the elementwise generics computing ``x``
    read at x's shape (their other inputs broadcast: per-channel scale and
    shift), or None where x is an argument or not so computed."""
    from mlir import ir

    value, steps = x, 0
    while not any(value == arg for arg in arguments):
        owner = value.owner
        op = None if isinstance(owner, ir.Block) else owner.operation
        if op is None or op.name != "linalg.generic":
            return None
        inputs = list(op.operands)[:len(op.opview.inputs)]
        shape = list(ir.ShapedType(x.type).shape)
        same = [v for v in inputs if list(ir.ShapedType(v.type).shape) == shape]
        if len(same) != 1:
            return None
        value, steps = same[0], steps + 1
    return value if steps else None
