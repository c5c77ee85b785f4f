"""What a depthwise convolution program is (the simt-depthwise strategy):
``match`` reads a kernel function holding one convolution, forward, data
gradient or filter gradient, whose groups are its channels (one input
channel a group, one filter a channel: MobileNet's 3x3, ConvNeXt's 7x7)
and its fused pointwise epilogue into a ``Depthwise``.

A depthwise convolution is a pooling window whose taps are weighted per
channel: ``y[n, c, o] = sum over taps t of x[n, c, o * s + t * dl - pre] *
w[c, 0, t]``. So it runs as the window programs do (program.py, forward.py):
a thread owns a vector of consecutive channels (16 bytes) of a few output
pixels along W, loads channels-last x pixels as vectors, and stores the
epilogue's results as vectors. Unlike a pool it reads a filter, and its
linalg form is the convolution's, so it has its own matcher (here) and
emitter (depthwise_emit.py), reusing the window programs' layout pieces.

What the kernel is made of, after bufferization (dnnc/codegen/linalg/
conv.py's ``lower_conv_fprop``, then dnn-fuse's epilogue); G = C, Kg = 1::

    pad      xp = 0; xp[n, c, pre:pre+H] = f32(x)        (fills, an extf copy)
    views    xp, w split into groups (memref.expand_shape)
    fill     acc[n, g, 0, o] = 0                         acc: [N, C, 1, *out] f32
    conv     acc[n, g, 0, o] += xp[n, g, 0, o * s + t * dl] * w[g, 0, 0, t]
    chain    generics over acc's shape or its [N, C, *out] collapse
             (collapse_shape views of computed buffers; linalg.copy of a
             computed buffer into an output argument)

A data gradient's kernel has the same shape with dy in x's place (placed
into a zero buffer with stride - 1 zeros between its pixels: window.place)
and dx's shape for acc; a filter gradient's reads x and dy and reduces over
N and the output pixels into acc [C, 1, 1, *win], collapsed to dw's
[C, 1, *win]. ``Depthwise`` names the operands by role: ``x`` is the one
read through windows (x, or dy in a data gradient), ``w`` the one read per
channel (the filter, or dy in a filter gradient).

The geometry is read from the function's ``dnn.conv`` attribute
(conv.describe), not from the maps. The chain is kept as a list of links
(``Link``), evaluated per output channel in registers by ``evaluate``: a
step over the 5-D shape is evaluated at ``[n, c, 0, *o]``, one over the
4-D shape at ``[n, c, *o]``; an epilogue input read through an
expand_shape view of a kernel argument (a bias) is loaded from the argument
itself at the view's indices linearized per reassociation group.

Anything else raises ``NotDepthwise`` with the reason, before any IR is
changed.
"""

from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, memref

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.elementwise.vectorize import broadcast_exprs, clone_body

ATTR = "dnn.conv"
# Ops a kernel may hold before the convolution generic: padding x, views.
BEFORE_OPS = ("memref.alloc", "linalg.generic", "memref.subview", "linalg.copy",
              "memref.expand_shape", "arith.constant")
AFTER_OPS = ("linalg.generic", "linalg.copy", "memref.collapse_shape", "memref.expand_shape",
             "memref.alloc", "memref.dealloc", "arith.constant", "func.return")
# Body ops of a generic before the convolution: a fill, or x converted to f32.
PAD_BODY = ("arith.extf", "linalg.yield")


class NotDepthwise(Exception):
    """The kernel is not a depthwise convolution with a pointwise epilogue."""


@dataclass
class Link:
    """One link of the epilogue chain: ``kind`` "alias" (``outputs[0]`` is a
    view of ``source``), "copy" (``source`` copied into ``outputs[0]``) or
    "step" (the generic ``op``, its ``inputs`` as (buffer, exprs), ``rank``
    its loop dims)."""

    kind: str
    outputs: list
    source: object = None
    op: object = None
    inputs: list = field(default_factory=list)
    rank: int = 0


@dataclass
class Depthwise:
    x: object                 # kernel argument read through windows: x, or a dgrad's dy
    w: object                 # kernel argument read per channel: the filter [C, 1, *win],
    #                           or a wgrad's dy [N, C, *out]
    acc: object               # the f32 accumulator [N, C, 1, *out] ([C, 1, 1, *win]: wgrad)
    window: list
    stride: list
    dilation: list
    pre: list
    flip: bool
    chain: list
    stored: list              # kernel arguments the chain writes, [N, C, *out]
    ops: list                 # the kernel's ops, erased once lowered
    direction: str = "fprop"  # "fprop", "dgrad" or "wgrad"
    groups: int = 0           # G (0: one a channel)

    @property
    def ins_per_group(self):
        """Channels a group of the operand read through windows: a
        forward's and a filter gradient's Cg (x), a data gradient's Kg
        (dy); 1 when depthwise."""
        if self.direction == "wgrad":  # acc [G, Kg, Cg, *win]
            return ir.MemRefType(self.acc.type).shape[2]
        ws = ir.MemRefType(self.w.type).shape
        return ws[1] if self.direction == "fprop" else ws[0] // self.groups

    @property
    def outs_per_group(self):
        """Channels a group of the output: a forward's Kg (y), a data
        gradient's Cg (dx), a filter gradient's Kg (dw's K); 1 when
        depthwise."""
        shape = ir.MemRefType(self.acc.type).shape
        return shape[1] if self.direction == "wgrad" else shape[2]

    @property
    def in_shape(self):
        return list(ir.MemRefType(self.x.type).shape)

    @property
    def out_shape(self):
        shape = list(ir.MemRefType(self.acc.type).shape)
        if self.direction == "wgrad":
            return [shape[0] * shape[1], shape[2]] + shape[3:]
        return [shape[0], shape[1] * shape[2]] + shape[3:]

    @property
    def dy_shape(self):
        """A filter gradient's dy [N, C, *out] (the pixels it reduces over)."""
        return list(ir.MemRefType(self.w.type).shape)

    @property
    def element(self):
        return ir.MemRefType(self.x.type).element_type


def _reduces(op):
    return any(not irutil.is_parallel(i) for i in ir.ArrayAttr(op.attributes["iterator_types"]))


def _argument_view(value, arguments):
    """True when ``value`` is a kernel argument or expand_shape views of one."""
    while value not in arguments:
        owner = irutil.defining_op(value)
        if owner is None or owner.name != "memref.expand_shape":
            return False
        value = owner.operands[0]
    return True


def _step(op, known, arguments, ranks):
    rank = irutil.indexing_maps(op)[0].n_dims
    if rank not in ranks or _reduces(op):
        raise NotDepthwise("an op after the convolution is not elementwise over its output")
    for inner in irutil.body_ops(op):
        if len(inner.regions):
            raise NotDepthwise(f"'{inner.name}' with regions after the convolution")
    count = len(op.opview.inputs)
    block = op.regions[0].blocks[0]
    inputs, outputs = [], []
    for i, (value, amap) in enumerate(zip(op.operands, irutil.indexing_maps(op))):
        exprs = broadcast_exprs(amap)
        shape = list(ir.MemRefType(value.type).shape)
        if exprs is None or len(exprs) != len(shape):
            raise NotDepthwise(f"operand map {amap} after the convolution is not a broadcast")
        if i < count:
            if value not in known and not _argument_view(value, arguments):
                raise NotDepthwise("an op after the convolution reads a buffer computed "
                                   "before it")
            if value in known and exprs != list(range(rank)):
                raise NotDepthwise("an op reads the convolution's result through a broadcast")
            inputs.append((value, exprs))
            continue
        if exprs != list(range(rank)) or shape != ranks[rank]:
            raise NotDepthwise("an output after the convolution is not written whole")
        if any(True for _ in list(block.arguments)[i].uses):
            raise NotDepthwise("an op after the convolution reads its output")
        outputs.append(value)
    return Link("step", outputs, op=op, inputs=inputs, rank=rank)


def match(fn):
    """The ``Depthwise`` of kernel function ``fn``; raises NotDepthwise."""
    if ATTR not in fn.attributes:
        raise NotDepthwise("no dnn.conv attribute")
    attrs = ir.DictAttr(fn.attributes[ATTR])
    direction = ir.StringAttr(attrs["direction"]).value
    # The operands as dnn.conv lists them (conv.OPERANDS): fprop (x, w),
    # dgrad (dy, w), wgrad (x, dy); each is (x, w) by role here.
    xi, wi = irutil.int_list(attrs["operands"])
    arguments = list(irutil.body(fn).arguments)
    if xi < 0 or wi < 0:
        raise NotDepthwise("an operand computed in the kernel (a prologue)")
    x, w = arguments[xi], arguments[wi]
    xs, ws = list(ir.MemRefType(x.type).shape), list(ir.MemRefType(w.type).shape)
    groups = ir.IntegerAttr(attrs["groups"]).value
    filter_shape = ws if direction != "wgrad" else None
    if direction == "wgrad":
        if len(ws) != len(xs) or ws[0] != xs[0] or groups < 2 or xs[1] % groups \
                or ws[1] % groups:
            raise NotDepthwise(f"groups {groups} of x {xs} and dy {ws}: expected a grouped "
                               "convolution")
    elif direction == "fprop":
        # Depthwise, or groups of a few channels (grouped_emit.py).
        if len(xs) < 3 or groups < 2 or ws[1] * groups != xs[1] or ws[0] % groups:
            raise NotDepthwise(f"groups {groups} of x {xs} and w {ws}: expected a grouped "
                               "convolution")
    elif len(xs) < 3 or groups < 2 or ws[0] != xs[1] or xs[1] % groups:
        raise NotDepthwise(f"groups {groups} of dy {xs} and w {ws}: expected a grouped "
                           "convolution")
    ops = [o.operation for o in irutil.body(fn).operations]
    convs = [o for o in ops if o.name == "linalg.generic" and _reduces(o)]
    if len(convs) != 1:
        raise NotDepthwise(f"{len(convs)} reducing generics: expected the convolution alone")
    conv = convs[0]
    at = ops.index(conv)
    for o in ops[:at]:
        if o.name not in BEFORE_OPS:
            raise NotDepthwise(f"'{o.name}' before the convolution")
        if o.name == "linalg.generic" and any(b.name not in PAD_BODY for b in irutil.body_ops(o)):
            raise NotDepthwise("an op before the convolution does more than pad x")
    acc = list(conv.operands)[-1]
    nd = len(xs) - 2
    acc_shape = list(ir.MemRefType(acc.type).shape)
    if direction == "wgrad":
        expected = [groups, ws[1] // groups, xs[1] // groups]
        if acc_shape[:3] != expected:
            raise NotDepthwise(f"a filter gradient's accumulator {acc_shape}: expected "
                               f"{expected + ['*window']}")
        filter_shape = [ws[1], xs[1] // groups] + acc_shape[3:]
    # acc is [N, G, K / G, *out] (fprop, dgrad) or [G, K / G, C / G, *win]
    # (wgrad), collapsed by the chain to the output's shape.
    if direction == "wgrad":
        out = [acc_shape[0] * acc_shape[1], acc_shape[2]] + acc_shape[3:]
    else:
        out = [acc_shape[0], acc_shape[1] * acc_shape[2]] + acc_shape[3:]
    ranks = {nd + 3: acc_shape, nd + 2: out}
    known, chain, stored = {acc}, [], []
    for o in ops[at + 1:]:
        if o.name not in AFTER_OPS:
            raise NotDepthwise(f"'{o.name}' after the convolution")
        if o.name in ("memref.collapse_shape", "memref.expand_shape") and o.operands[0] in known:
            chain.append(Link("alias", [o.results[0]], source=o.operands[0]))
            known.add(o.results[0])
        elif o.name == "linalg.copy":
            source, dest = o.operands[0], o.operands[1]
            if source not in known or list(ir.MemRefType(dest.type).shape) != out:
                raise NotDepthwise("a copy after the convolution of another buffer")
            chain.append(Link("copy", [dest], source=source))
            known.add(dest)
        elif o.name == "linalg.generic":
            link = _step(o, known, arguments, ranks)
            chain.append(link)
            known.update(link.outputs)
    for link in chain:
        for buffer in link.outputs:
            if buffer in arguments and buffer not in stored:
                if list(ir.MemRefType(buffer.type).shape) != out:
                    raise NotDepthwise("an output of another shape than y")
                stored.append(buffer)
    if not stored:
        raise NotDepthwise("the kernel stores nothing")
    ints = lambda name: irutil.int_list(attrs[name])  # noqa: E731
    return Depthwise(x, w, acc, filter_shape[2:], ints("stride"), ints("dilation"), ints("pre"),
                     ir.BoolAttr(attrs["flip"]).value, chain, stored, ops, direction, groups)


def _argument_indices(buffer, indices):
    """(kernel argument, indices) of ``buffer`` at ``indices``, through the
    expand_shape views between them: per reassociation group, the source
    index is the group's indices linearized (row-major over the group's
    result sizes); a size-1 dim adds nothing."""
    while True:
        owner = irutil.defining_op(buffer)
        if owner is None or owner.name != "memref.expand_shape":
            return buffer, indices
        shape = list(ir.MemRefType(buffer.type).shape)
        source = []
        for group in ir.ArrayAttr(owner.attributes["reassociation"]):
            dims = [ir.IntegerAttr(d).value for d in ir.ArrayAttr(group)]
            total, scale = None, 1
            for d in reversed(dims):
                if shape[d] != 1:
                    term = indices[d] if scale == 1 else arith.muli(indices[d], irutil.index(scale))
                    total = term if total is None else arith.addi(total, term)
                scale *= shape[d]
            source.append(total if total is not None else irutil.index(0))
        buffer, indices = owner.operands[0], source


def evaluate(found, value, point):
    """{buffer: scalar} of every buffer the chain of ``found`` writes, from
    ``value``, the f32 accumulator at output ``point`` ([n, c, *o])."""
    # The accumulator's point: output channel k is group k / per, channel
    # k % per of it (per: Kg of a forward, Cg of a data gradient); a filter
    # gradient's is dw's [k, c] with k split.
    at = 0 if found.direction == "wgrad" else 1   # the split channel's dim
    per = found.outs_per_group
    if per == 1:
        split = [point[at], irutil.index(0)]
    else:
        split = [arith.divui(point[at], irutil.index(per)),
                 arith.remui(point[at], irutil.index(per))]
    long_point = point[:at] + split + point[at + 1:]
    env = {found.acc: value}
    for link in found.chain:
        if link.kind in ("alias", "copy"):
            env[link.outputs[0]] = env[link.source]
            continue
        here = long_point if link.rank == len(long_point) else point
        args = []
        for buffer, exprs in link.inputs:
            if buffer in env:
                args.append(env[buffer])
                continue
            indices = [here[d] if d is not None else irutil.index(0) for d in exprs]
            args.append(memref.load(*_argument_indices(buffer, indices)))
        args += [value] * len(link.outputs)   # outputs are never read
        results = clone_body(link.op.regions[0].blocks[0], args, lambda d, h=here: h[d])
        env.update(zip(link.outputs, results))
    return env
