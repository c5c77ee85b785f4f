"""What an implicit-GEMM convolution kernel computes: a kernel function
holding one convolution in its linalg form (dnnc/codegen/linalg/conv.py)
and the pointwise epilogue dnn-fuse joined to it, read as a GEMM.

The forward convolution of channels-last tensors is the GEMM

    Y[m, k] = sum over (tap, c) of X(m, tap)[c] * W[k, tap, c]

with m the output pixel (n, p, q) in N·P·Q order, k the output channel, and
X(m, tap) the input pixel that output pixel m reads at filter tap ``tap``
(zero where it falls in the padding). Nothing of im2col is stored: the
kernel's loaders read X through TMA's im2col mode (tc-sm90, sm90/im2col.py)
or gather it by cp.async (tc-sm80, sm80/im2col.py), and W as
``[K, taps, C]`` tiles. Each tap's channels are read in whole K steps of
``bk``, the loader zero-filling past C, so the GEMM's K is taps x C rounded
up to ``bk``.

The linalg form (bufferized, at dnn-map-tensor-cores) keeps the
convolution's semantics for the CPU and for simt-generic: x converted to f32
into a zero-padded buffer, the filter split into groups, a contraction over
(c, taps) into an f32 accumulator ``[N, G, K/G, P, Q]``, then the epilogue's
generics over that shape or its ``[N, K, P, Q]`` collapse, writing the
outputs or buffers copied into them. The geometry the maps fold away is the
function's ``dnn.conv`` attribute (conv.describe).

The data gradient of a stride-1 convolution is such a forward convolution
of dy: padded by the dilated filter's extent less the forward padding, the
filter's taps flipped and its K and C exchanged, so W is read with C (the
GEMM's N) contiguous. A strided one is not (dx's rows between the strided
ones meet other taps): it is split by stride phase into such stride-1
gradients (phases.py; a ``Conv`` that is ``phased`` keeps the forward
convolution's geometry for that split).

A filter gradient dw[K, taps, C] is dyᵀ · im2col(x), its GEMM's N over
(tap, channel) where a tile lies in one tap (C a multiple of the tile's
N), or over C alone with the taps as the GEMM's batch (``tap_batched``),
or, on tc-sm80 only where rows of C are not a multiple of 16 bytes, over
(tap, channel) in tiles that span taps: wgrad_taps.py says which and why.
On tc-sm90 a C below 8 under a filter of several columns has the columns
folded into the channels (fold.py): the GEMM's N is then S x C, its
batch the outer taps, its epilogue's views of dw laid out so.

``match`` checks that shape (the ops before the contraction only pad and
convert x, or, where dnn-fuse joined a prologue to a forward convolution,
compute x from the activation and per-channel tensors (conv_prologue.py:
the GEMM's A then carries it), the filter is a kernel argument, one group,
channels-last operands; for tc-sm90, rows of channels TMA reads in 16-byte
pieces, else ``Unaligned``, which tc-sm80 takes) and returns a ``Conv``:
the geometry, the operand views the loaders describe, and a ``gemm.Gemm``
whose epilogue runs on two-dimensional ``[N·P·Q, K]`` views of the buffers
it reads and writes, so that the tensor-core epilogues (sm90/epilogue.py,
sm80/epilogue.py) treat it as a matmul's. Its reasons name the strategy
that asked (``match``'s ``strategy``).
A filter gradient's bias gradient that dnn-fuse joined (a sum of dy,
conv_bias_grad.py) is set aside as the ``Conv``'s ``bias``, which tc-sm90
sums from dy's tiles (sm90/bias_grad.py); other strategies refuse it.
Anything else raises ``gemm.NotAGemm`` with the reason, before any IR is
changed except the views it made, which the kernel's build erases when
unused.
"""

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore import conv_bias_grad, conv_prologue, fold, wgrad_taps
from dnnc.codegen.gpu.tensorcore.conv_views import (
    VIEW_OPS, Views as _Views, copied_view as _copied_view, copies as _copies,
    group_stride as _group_stride, iterators as _iterators, loop_dims as _loop_dims,
    root as _root, step as _step,
)
from dnnc.codegen.gpu.tensorcore.gemm import (
    TC_ELEMENTS, TF32_ROUNDING, Epilogue, Gemm, NotAGemm, Operand,
)

ATTR = "dnn.conv"
# Body ops a generic before the contraction may hold: it pads and converts x.
PAD_OPS = ("arith.extf", "linalg.yield")
# How tc-sm90 reads the operands' rows of channels, for the reasons: TMA's
# boxes (sm90/im2col.py), 16-byte aligned.
READS = "TMA steps them by multiples of 16 bytes"
ROWS = "by TMA in rows of a multiple of 16 bytes"


@dataclass
class Conv:
    """A forward convolution as an implicit GEMM.

    ``x``: the activation as it lies, ``[N, (D,) H, W, C]`` (a view of the
    kernel argument); ``w``: the filter as ``[K, taps, C]``; ``out``: the
    output's spatial sizes; the geometry per spatial dim, outermost first;
    ``flip``: convolution mode (tap t of x meets the filter's tap
    taps - 1 - t); ``gemm``: M = N·P·Q, N = K, K = taps x channels rounded up
    to the tile's K step, its operands the two views."""

    x: object
    w: object
    channels: int
    filter: list
    out: list
    stride: list
    dilation: list
    pre: list
    post: list
    flip: bool
    gemm: Gemm
    made: list               # the ops match made (views, stand-ins): discard's
    direction: str = "fprop"  # or "dgrad": x is dy, the GEMM's N the filter's C
    groups: int = 1           # the GEMM's batch; ``channels`` are a group's
    # A strided data gradient, built as stride phases
    # (phases.py): stride, dilation, pre, post and flip are the forward
    # convolution's, ``out`` dx's sizes, the gemm dx's whole.
    phased: bool = False
    # A filter gradient whose taps are the GEMM's batch (wgrad_taps.py):
    # N = C, batch b reads x at tap b.
    tap_batched: bool = False
    # A filter gradient's bias gradient, the sum of dy the kernel takes
    # beside it (conv_bias_grad.BiasGrad), or None.
    bias: object = None

    @property
    def tiles_in_tap(self):
        """Whether a filter gradient's tile N must divide C (wgrad_taps.py)."""
        return self.direction == "wgrad" and not self.tap_batched and \
            wgrad_taps.tiles_in_tap(self.channels, self.taps)

    @property
    def taps(self):
        return math.prod(self.filter)

    @property
    def padded_channels(self):
        """C rounded up to whole K steps: the GEMM's K per tap."""
        return self.gemm.k // self.taps


class Unaligned(NotAGemm):
    """tc-sm90's TMA cannot read an operand whose rows of channels are not
    a multiple of 16 bytes; tc-sm80's loaders can (the kernel goes there)."""


def _geometry(fn):
    attrs = ir.DictAttr(fn.attributes[ATTR])
    g = {name: irutil.int_list(attrs[name]) for name in
         ("stride", "dilation", "pre", "post", "operands")}
    g["direction"] = ir.StringAttr(attrs["direction"]).value
    g["flip"] = ir.BoolAttr(attrs["flip"]).value
    g["groups"] = ir.IntegerAttr(attrs["groups"]).value
    # A forward convolution's x computed by a prologue (conv_prologue.py).
    g["prologue"] = "prologue" in attrs and ir.BoolAttr(attrs["prologue"]).value
    return g


def _check_pad(op, operands, strategy, tf32=False):
    """A generic before the contraction only pads and converts the
    convolution's ``operands`` (f32 ones rounded to tf32: ``tf32``)."""
    if "reduction" in _iterators(op):
        raise NotAGemm("a second reduction in the kernel")
    names = [o.name for o in irutil.body_ops(op)]
    allowed = PAD_OPS + (TF32_ROUNDING if tf32 else ())
    if any(name not in allowed for name in names):
        bad = next(name for name in names if name not in allowed)
        raise NotAGemm(f"'{bad}' applied to a convolution operand: a prologue "
                       f"({strategy} convolutions take none yet)")
    for value in op.operands[:len(op.opview.inputs)]:
        root = _root(value)
        if irutil.is_block_argument(root) and root not in operands:
            raise NotAGemm("an op before the convolution reads another kernel input")


def _activation(x, strategy):
    """The ``[N, (D,) H, W, C]`` view of channels-last ``x`` (logical
    ``[N, C, (D,) H, W]``)."""
    shape, strides, offset = irutil.memref_geometry(x.type)
    if strides[1] != 1 and shape[1] != 1:
        raise NotAGemm(f"x has strides {strides}: {strategy} convolutions read channels-last "
                       "activations (C contiguous)")
    order = [0] + list(range(2, len(shape))) + [1]
    view_shape = [shape[d] for d in order]
    view_strides = [strides[d] for d in order]
    view_strides[-1] = 1
    # A dim of one element never steps: give it a stride TMA takes (a
    # multiple of 16 bytes).
    unit = 16 // irutil.element_bytes(ir.MemRefType(x.type).element_type)
    for i in reversed(range(len(view_shape) - 1)):
        if view_shape[i] == 1 and (view_strides[i] % unit or not view_strides[i]):
            dense = view_strides[i + 1] * view_shape[i + 1]
            view_strides[i] = -(-dense // unit) * unit
    t = ir.MemRefType.get(view_shape, ir.MemRefType(x.type).element_type,
                          layout=ir.StridedLayoutAttr.get(offset, view_strides))
    return memref.reinterpret_cast(t, x, [], [], [], [offset], view_shape, view_strides)


def _filter(w, strategy):
    """The ``[K, taps, C]`` view of a KRSC filter (logical ``[K, C, R, S]``)."""
    shape, strides, offset = irutil.memref_geometry(w.type)
    k, c, window = shape[0], shape[1], shape[2:]
    taps = math.prod(window)
    # The taps one pitch apart (C, or C padded: dnn-conv-layouts).
    pitch = next((s for s, n in zip(reversed(strides[2:]), reversed(window)) if n != 1), c)
    expected = [pitch * math.prod(window[i + 1:]) for i in range(len(window))]
    moving = [(s, e) for s, e, n in zip(strides[2:], expected, window) if n != 1]
    if (c != 1 and strides[1] != 1) or pitch < c or any(s != e for s, e in moving):
        raise NotAGemm(f"w has strides {strides}: {strategy} convolutions read KRSC filters "
                       "(C contiguous, then the taps)")
    view_shape = [k, taps, c]
    view_strides = [strides[0] if k != 1 else taps * pitch, pitch, 1]
    t = ir.MemRefType.get(view_shape, ir.MemRefType(w.type).element_type,
                          layout=ir.StridedLayoutAttr.get(offset, view_strides))
    return memref.reinterpret_cast(t, w, [], [], [], [offset], view_shape, view_strides)


def element_of(fn):
    """The operand type of convolution kernel function ``fn`` (its
    im2col operand's: x, or dy of a data gradient), as MLIR spells it;
    None where the kernel computes that operand (a prologue)."""
    operand = irutil.int_list(ir.DictAttr(fn.attributes[ATTR])["operands"])[0]
    if operand < 0:
        return None
    x = list(irutil.body(fn).arguments)[operand]
    return str(ir.MemRefType(x.type).element_type)


def groups_problem(direction, groups, channels, bk):
    """Why a convolution of ``groups`` groups reducing ``channels`` a group
    (forward: C / G; data gradient: K / G) is no implicit GEMM in K steps of
    ``bk``, or None. A K step past a group's channels would read the next
    group's, which the filter's zeros (past its C) cancel only where they
    are finite: a group's channels must fill whole K steps (a depthwise
    convolution's one channel never does)."""
    if groups == 1 or direction == "wgrad" or channels % bk == 0:
        return None
    return (f"{groups} groups of {channels} channels: a group's channels are read in whole K "
            f"steps of {bk}")


def match(fn, bk, strategy="tc-sm90"):
    """The ``Conv`` of kernel function ``fn`` for K steps of ``bk``
    elements; raises NotAGemm, its reason naming ``strategy`` (the one
    that would run it: "tc-sm90" or "tc-sm80")."""
    if ATTR not in fn.attributes:
        raise NotAGemm("not a convolution kernel")
    g = _geometry(fn)
    g["strategy"] = strategy
    direction = g["direction"]
    strided = direction == "dgrad" and any(s != 1 for s in g["stride"])
    groups = g["groups"]
    if groups != 1 and strategy != "tc-sm90":
        raise NotAGemm(f"{groups} groups: {strategy} convolutions take one so far")
    arguments = list(irutil.body(fn).arguments)
    if min(g["operands"]) < 0:
        raise NotAGemm("a convolution operand is computed in the kernel (a prologue)")
    # fprop (x, w), dgrad (dy, w), wgrad (x, dy): the first is read by im2col.
    x, other = (arguments[i] for i in g["operands"])
    element = str(ir.MemRefType(x.type).element_type)
    if element not in TC_ELEMENTS or str(ir.MemRefType(other.type).element_type) != element:
        raise NotAGemm(f"operand types {element} x {ir.MemRefType(other.type).element_type}: "
                       f"{strategy} convolutions take bf16, f16 and f32 as tf32")
    ops = [o.operation for o in irutil.body(fn).operations]
    bias = None
    if direction == "wgrad":
        # The bias gradient dnn-fuse joined (a sum of dy): not the GEMM's
        # epilogue; tc-sm90's consumers take it from dy's tiles.
        try:
            bias = conv_bias_grad.match(ops, other)
        except ValueError as e:
            raise NotAGemm(f"{e} ({strategy})")
        if bias is not None and strategy != "tc-sm90":
            raise NotAGemm(f"a bias gradient beside the filter gradient ({strategy} computes "
                           "none)")
        if bias is not None:
            ops = [o for o in ops if o not in bias.ops]
    generics = [o for o in ops if o.name == "linalg.generic"]
    reductions = [o for o in generics if "reduction" in _iterators(o)]
    if len(reductions) != 1:
        raise NotAGemm(f"{len(reductions)} reductions: expected one convolution")
    contraction = reductions[0]
    position = ops.index(contraction)
    prologue = None
    for op in ops[:position]:
        if op.name == "linalg.generic" and g["prologue"] and prologue is None \
                and any(v == x for v in list(op.operands)[:len(op.opview.inputs)]):
            if strategy != "tc-sm90":
                raise NotAGemm(f"a prologue on x ({strategy} convolutions take none)")
            prologue = conv_prologue.match(op, x, arguments, element)
        elif op.name == "linalg.generic":
            _check_pad(op, (x, other), strategy, element == "f32")
        elif op.name not in VIEW_OPS + ("memref.alloc", "arith.constant", "linalg.copy"):
            raise NotAGemm(f"'{op.name}' before the convolution")
    if len(contraction.opview.inputs) != 2:
        raise NotAGemm(f"the convolution reads {len(contraction.opview.inputs)} operands: "
                       "expected x and the filter")
    if g["prologue"] and prologue is None:
        # No padding: linalg's fusion moved the prologue into the body.
        prologue = conv_prologue.match_body(contraction, x, element)
    inside = set(prologue.ops) if prologue is not None else set()
    body = [o.name for o in irutil.body_ops(contraction) if o not in inside]
    allowed = ("arith.extf", "arith.mulf", "arith.addf", "linalg.yield")
    compute = "f32"
    if element == "f32":
        # f32 operands: only as tf32 (the linalg form rounds both, the pad
        # generic x, the body w: gemm.TF32_ROUNDING). tc-sm90 copies a
        # gradient's MN-major operand K-major (sm90/tf32_conv.py); tc-sm80
        # reads its fragments from the stage as they lie (sm80/loader.py).
        if not any(name == "arith.bitcast" for name in body):
            raise NotAGemm("f32 operands multiplied in f32: the tensor cores take them as "
                           "tf32 (compute_data_type='tf32')")
        allowed += TF32_ROUNDING
        compute = "tf32"
    if any(name not in allowed for name in body):
        raise NotAGemm("the convolution's body is not a multiply-accumulate of converted "
                       "operands")
    if _root(contraction.operands[1]) != other:
        raise NotAGemm(f"the {'dy' if direction == 'wgrad' else 'filter'} is not a kernel "
                       "argument read as it is")
    acc = contraction.operands[2]
    acc_shape = list(ir.MemRefType(acc.type).shape)
    nd = len(acc_shape) - 3
    x_shape = list(ir.MemRefType(x.type).shape)
    other_shape = list(ir.MemRefType(other.type).shape)
    element_bytes = irutil.element_bytes(ir.MemRefType(x.type).element_type)
    batched = folded = False
    batch_taps = 1
    if direction == "wgrad":
        # dw [K, C, *window] = dy^T (pixels x K) times im2col(x) (pixels x
        # taps x C): M = K, N = taps x C, the reduction over N·P·Q; or N =
        # C, the taps the batch (wgrad_taps.py).
        channels, window, out = x_shape[1] // groups, acc_shape[3:], other_shape[2:]
        taps = math.prod(window)
        problem = wgrad_taps.problem(groups, channels, taps)
        if problem:
            raise NotAGemm(f"{problem} ({strategy})")
        folded = strategy == "tc-sm90" and \
            fold.folds(direction, channels, window, element_bytes, bk, groups)
        if folded:
            # Few channels: the filter's columns folded into them (fold.py
            # builds x' at the kernel's build), the GEMM's N their S x C,
            # its batch the outer taps where there are several.
            batch_taps = fold.outer_taps(window)
            batched = batch_taps > 1
            m, n = acc_shape[1], window[-1] * channels
        else:
            if strategy == "tc-sm90" and wgrad_taps.spans_taps(channels, taps, element_bytes):
                # (Whatever x's pitch: a tile of TMA's loads lies in one tap.)
                raise Unaligned(f"a filter gradient of C = {channels} over {taps} filter "
                                f"taps: tc-sm90's tiles lie in one tap, {ROWS} (C a multiple "
                                f"of {16 // element_bytes}); tc-sm80's may span taps")
            batched = wgrad_taps.tap_batched(groups, channels, taps, element_bytes)
            batch_taps = taps
            m, n = acc_shape[1], channels if batched else taps * channels
        k = other_shape[0] * math.prod(out)
    else:
        # fprop: acc [N, 1, K, *out], w [K, C, *window]; dgrad: acc [N, 1, C,
        # *in], w [K, C, *window], dy [N, K, *out].
        channels, window, out = x_shape[1] // groups, other_shape[2:], acc_shape[3:]
        problem = groups_problem(direction, groups, channels, bk)
        if problem:
            raise NotAGemm(f"{problem} ({strategy})")
        if direction == "dgrad":
            # dx is the stride-1 forward convolution of dy, padded by the
            # dilated filter's extent less the forward padding, with the
            # filter flipped and its K and C exchanged (B is read MN-major).
            # Strided: one such gradient per stride phase (phases.py),
            # which splits the forward geometry kept here.
            extent = [(r - 1) * d for r, d in zip(window, g["dilation"])]
            if strided:
                g["phased"] = True
            else:
                g["pre"] = [e - p for e, p in zip(extent, g["pre"])]
                g["post"] = [e - p for e, p in zip(extent, g["post"])]
                g["flip"] = not g["flip"]
        m, n = acc_shape[0] * math.prod(out), acc_shape[2]
        k = math.prod(window) * -(-channels // bk) * bk
    multiple = 16 // (2 if element in ("bf16", "f16") else 4)
    # tc-sm90's loaders step pixels (and filter taps) by TMA, 16-byte
    # aligned: C a multiple of 8 (or a stem whose filter columns fold into
    # its channels, fold.py). tc-sm80's take any pitch: cp.async of the
    # widest size the rows' alignment allows, else element-wise loads, each
    # zero past C (sm80/loader.py), so a convolution tc-sm90 does not take
    # for its channels (``Unaligned``) goes to tc-sm80, the operands where
    # they lie.
    if strategy == "tc-sm90":
        _, x_strides, _ = irutil.memref_geometry(x.type)
        pitch = next((x_strides[d] for d in reversed(range(2, len(x_shape)))
                      if x_shape[d] != 1), channels)
        folds = fold.folds(direction, channels, window, element_bytes, bk, groups)
        if pitch % multiple and not folds:
            raise Unaligned(f"{'dy' if direction == 'dgrad' else 'x'}'s pixels are {pitch} "
                            f"elements apart (C = {channels}): tc-sm90's {READS} ({multiple} "
                            f"{element} elements)")
        # The operand read MN-major must have rows TMA can step: a data
        # gradient's filter rows of C, a filter gradient's dy rows of K.
        # tf32 gradients copy that operand K-major first
        # (sm90/tf32_conv.py), into rows padded to 16 bytes.
        copied = compute == "tf32" and direction != "fprop"
        if direction == "dgrad" and n % multiple and not copied:
            raise Unaligned(f"a data gradient of C = {n}: tc-sm90 reads the filter "
                            f"C-contiguous, {ROWS} (C a multiple of {multiple})")
        if direction == "wgrad" and m % multiple and not copied:
            raise Unaligned(f"a filter gradient of K = {m}: tc-sm90 reads dy K-contiguous, "
                            f"{ROWS} (K a multiple of {multiple})")
    if batched and compute == "tf32" and strategy == "tc-sm90":
        raise NotAGemm(f"a tf32 filter gradient of C = {channels} over {math.prod(window)} "
                       "filter taps: its transposed product takes C a multiple of 64 (a tile "
                       f"lies in one tap) ({strategy})")
    g["prologue"] = prologue
    views = _Views(fn, m, n, batch_taps if batched else groups, tap_batched=batched,
                   folded=folded)
    try:
        conv = _conv(g, views, x, other, element, ops, position, arguments,
                     (channels, window, out, m, n, k, nd), compute)
        conv.bias = bias
        return conv
    except NotAGemm:
        discard(views.made_ops())
        raise


def discard(ops):
    """Erase the views ``match`` made (a Conv's ``made``) that nothing uses:
    when no kernel is built after all."""
    for op in reversed(ops):
        if not any(True for r in op.results for _ in r.uses):
            op.erase()


def _conv(g, views, x, other, element, ops, position, arguments, sizes, compute="f32"):
    """match's second half: the epilogue over views, the operand views."""
    channels, window, out, m, n, k, nd = sizes
    direction = g["direction"]
    acc = ops[position].operands[2]
    copies = _copies(ops[position + 1:], arguments)
    accumulator = views.register_value()
    stored = []
    if acc in copies:
        # The accumulator itself is an output (an f32 result): stored
        # through the output's view, which stands for it.
        rank = len(ir.MemRefType(acc.type).shape)
        sizes = dict(enumerate(ir.MemRefType(acc.type).shape))
        source, dest = copies[acc]
        accumulator = _copied_view(views, source, dest, acc, list(range(rank)), sizes,
                                   _loop_dims(rank, nd, direction, views.groups, sizes,
                                              views.tap_batched, views.folded))
        stored.append(accumulator)
    epilogue = Epilogue(accumulator, outputs=stored)
    # Buffers of the accumulator's values: the accumulator and its views.
    values = {acc: accumulator}
    for op in ops[position + 1:]:
        if op.name in VIEW_OPS and _root(op.operands[0]) in values:
            values[op.results[0]] = values[_root(op.operands[0])]
    for op in ops[position + 1:]:
        if op.name in VIEW_OPS or op.name in ("memref.alloc", "memref.dealloc", "arith.constant",
                                                "func.return", "linalg.copy", "memref.copy"):
            continue
        if op.name != "linalg.generic":
            raise NotAGemm(f"'{op.name}' in the epilogue")
        epilogue.steps.append(_step(op, views, values, copies, epilogue, arguments, nd,
                                    direction))
    if not epilogue.outputs:
        raise NotAGemm("the kernel stores nothing")
    epilogue.pixels = dict(views.pixels) or None
    with ir.InsertionPoint(views.first), ir.Location.unknown():
        x_view = _activation(x, g["strategy"])
        other_view = _pixels_by_channels(other, g["strategy"]) if direction == "wgrad" else \
            _filter(other, g["strategy"])
    views.ops += [irutil.defining_op(x_view), irutil.defining_op(other_view)]
    rank = nd + 2
    if direction == "wgrad":
        # A: dy as [N·P·Q, K], K (the GEMM's M) contiguous; B: x by im2col,
        # C (the GEMM's N) contiguous.
        a = Operand(other_view, {"batch": None, "mn": 1, "k": 0}, element)
        b = Operand(x_view, {"batch": None, "mn": rank - 1, "k": 0}, element)
    else:
        dgrad = direction == "dgrad"
        # A prologue on x runs on each element of A's tiles (sm90/prologue.py).
        a = Operand(x_view, {"batch": None, "mn": 0, "k": rank - 1}, element,
                    g.get("prologue"))
        b = Operand(other_view, {"batch": None, "mn": 2 if dgrad else 0,
                                 "k": 0 if dgrad else 2}, element)
    # The groups are the GEMM's batch (the loaders offset each by its
    # channels, im2col.py), or a filter gradient's taps (wgrad_taps.py).
    gemm = Gemm(a, b, m, n, k, views.groups, epilogue, compute)
    groups = 1 if views.tap_batched else views.groups
    return Conv(x_view, other_view, channels, window, out, g["stride"], g["dilation"], g["pre"],
                g["post"], g["flip"], gemm, views.made_ops(), direction, groups,
                g.get("phased", False), views.tap_batched)


def _pixels_by_channels(dy, strategy):
    """The ``[N·P·Q, K]`` view of channels-last ``dy`` (logical
    ``[N, K, *out]``)."""
    shape, strides, offset = irutil.memref_geometry(dy.type)
    dims = [0] + list(range(2, len(shape)))
    sizes = {d: shape[d] for d in range(len(shape))}
    try:
        pitch = _group_stride({d: strides[d] for d in range(len(shape))}, dims, sizes,
                              "pixel")
    except NotAGemm:
        pitch = None
    if pitch is None and all(shape[d] == 1 for d in dims):
        pitch = shape[1]            # one pixel
    if (shape[1] != 1 and strides[1] != 1) or pitch is None:
        raise NotAGemm(f"dy has strides {strides}: {strategy} filter gradients read channels-"
                       "last gradients (pixels of K contiguous channels)")
    view_shape = [math.prod(shape) // shape[1], shape[1]]
    view_strides = [pitch if view_shape[0] != 1 else shape[1], 1]
    t = ir.MemRefType.get(view_shape, ir.MemRefType(dy.type).element_type,
                          layout=ir.StridedLayoutAttr.get(offset, view_strides))
    return memref.reinterpret_cast(t, dy, [], [], [], [offset], view_shape, view_strides)

