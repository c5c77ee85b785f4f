"""What a window program is (the simt-window strategy): ``match`` reads a
pooling kernel, forward or backward, into a ``Window``, and the layout
pieces here serve both emitters.

What the kernel is made of, after bufferization (dnnc/codegen/linalg/
pooling.py's forward lowering, then dnn-fuse's epilogue)::

    fill     acc[n, c, o] = -inf (max) or 0 (avg)               acc: f32
    window   acc[n, c, o] = max / + over taps t of x[n, c, o * s + t - pre]
             (marked dnn.window; a tap on padding is skipped)
    steps    Y[n, c, o] = f(acc[n, c, o], bias[0, c, 0], n, c, o, ...)   (zero or more)

A backward (pooling.py's backward lowering, ``backward = true`` in
``dnn.window``) has the same shape with the roles turned round: ``acc`` has
dx's shape, the window generic reads dy and, for max, x (``Window.dy``).
Anything else raises ``NotAWindowProgram`` with the reason, before any IR
is changed.

Layout: ``vector_width`` gives the channels a thread owns (``vector`` where
C is contiguous in x, and in a backward's dy, else 1); vector accesses go
through an identity-layout view of a buffer in its memory order
(``memory_order_view``: a ``memref.reinterpret_cast``).

The forward emitter is forward.py's ``Emitter``, the gradient's
gradients.py's ``GradientEmitter``; windows.py's ``build`` picks one and
lays the launch around it.
"""

import math
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import memref

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.elementwise.vectorize import broadcast_exprs, identity_layout
from dnnc.codegen.gpu.tensorcore.gemm import Epilogue, Step

# Taps unrolled in one thread; a larger window (a global pool) is left to
# simt-generic.
MAX_TAPS = 64
WINDOW_ATTR = "dnn.window"


class NotAWindowProgram(Exception):
    """The kernel is not a window reduction with a pointwise epilogue."""


@dataclass
class Window:
    op: object               # the window linalg.generic
    x: object                # the input buffer (a kernel argument)
    acc: object              # the f32 buffer the window reduction writes
    mode: str                # "max" or "avg"
    window: list
    stride: list
    pre: list
    steps: list = field(default_factory=list)
    fill: object = None      # the generic filling acc
    dy: object = None        # a backward's gradient buffer (then acc is dx's shape)

    @property
    def backward(self):
        return self.dy is not None

    @property
    def out_shape(self):
        return list(ir.MemRefType(self.acc.type).shape)

    @property
    def in_shape(self):
        return list(ir.MemRefType(self.x.type).shape)

    def stored(self, arguments):
        """The buffers the kernel writes that are its arguments (outputs)."""
        return Epilogue(self.acc, self.steps).stored(arguments)


def _parallel_only(op):
    return all(irutil.is_parallel(i) for i in ir.ArrayAttr(op.attributes["iterator_types"]))


def _fill_value(op):
    """The constant a generic with one output and no input writes, else None."""
    if len(op.opview.inputs) or len(op.operands) != 1 or not _parallel_only(op):
        return None
    body = irutil.body_ops(op)
    if len(body) != 1 or body[0].name != "linalg.yield":
        return None
    return irutil.constant_scalar(body[0].operands[0])


def _step(op, shape):
    """The Step of an elementwise generic over ``shape`` after the window."""
    rank = len(shape)
    if not _parallel_only(op) or len(irutil.indexing_maps(op)[0].results) > rank:
        raise NotAWindowProgram("an op after the window reduction is not elementwise")
    for inner in irutil.body_ops(op):
        if len(inner.regions):
            raise NotAWindowProgram(f"'{inner.name}' with regions after the window reduction")
    block = op.regions[0].blocks[0]
    count = len(op.opview.inputs)
    inputs, outputs = [], []
    for i, (value, amap) in enumerate(zip(op.operands, irutil.indexing_maps(op))):
        t = ir.MemRefType(value.type)
        exprs = broadcast_exprs(amap)
        if amap.n_dims != rank or exprs is None or len(exprs) != t.rank:
            raise NotAWindowProgram(f"operand map {amap} after the window reduction is not "
                                    "a broadcast over the output")
        if i < count:
            inputs.append((value, exprs))
            continue
        if exprs != list(range(rank)) or list(t.shape) != list(shape):
            raise NotAWindowProgram("an output after the window reduction is not written whole")
        if any(True for _ in list(block.arguments)[i].uses):
            raise NotAWindowProgram("an op after the window reduction reads its output")
        outputs.append(value)
    return Step(op, inputs, outputs)


def _geometry(op):
    attrs = ir.DictAttr(op.attributes[WINDOW_ATTR])
    backward = "backward" in attrs and ir.BoolAttr(attrs["backward"]).value
    return (ir.StringAttr(attrs["mode"]).value, irutil.int_list(attrs["window"]),
            irutil.int_list(attrs["stride"]), irutil.int_list(attrs["pre_padding"]), backward)


def _read(op, arguments, backward):
    """(x, dy) of the window generic ``op`` from the buffers it loads: the
    forward reads x alone; the backward reads dy first, then (max) x, which
    avg does not read (dy then also gives the layout: x is dy)."""
    buffers = []
    for load in irutil.ops(op, "memref.load"):
        if load.operands[0] not in buffers:
            buffers.append(load.operands[0])
    if any(b not in arguments for b in buffers):
        raise NotAWindowProgram("the window reduction reads a buffer that is not a kernel "
                                "argument")
    if not backward:
        if len(buffers) != 1:
            raise NotAWindowProgram("the window reduction does not read one kernel argument")
        return buffers[0], None
    if len(buffers) not in (1, 2):
        raise NotAWindowProgram(f"the window gradient reads {len(buffers)} buffers: expected "
                                "dy and x")
    return buffers[-1], buffers[0]


def match(fn):
    """The ``Window`` of kernel function ``fn``; raises NotAWindowProgram."""
    ops = [o.operation for o in irutil.body(fn).operations]
    others = [o for o in ops if o.name not in ("linalg.generic", "memref.alloc", "arith.constant",
                                                "func.return", "memref.dealloc")]
    if others:
        raise NotAWindowProgram(f"'{others[0].name}' in the kernel")
    generics = [o for o in ops if o.name == "linalg.generic"]
    marked = [g for g in generics if WINDOW_ATTR in g.attributes]
    if len(marked) != 1:
        raise NotAWindowProgram(f"{len(marked)} window reductions: expected one")
    op = marked[0]
    mode, win, stride, pre, backward = _geometry(op)
    acc = list(op.operands)[-1]
    position = generics.index(op)
    before, after = generics[:position], generics[position + 1:]
    identity = -float("inf") if mode == "max" and not backward else 0.0
    if len(before) != 1 or before[0].operands[0] != acc or _fill_value(before[0]) != identity:
        raise NotAWindowProgram(f"the accumulator is not filled with {identity} right before "
                                "the window reduction")
    arguments = list(irutil.body(fn).arguments)
    x, dy = _read(op, arguments, backward)
    found = Window(op, x, acc, mode, win, stride, pre, fill=before[0], dy=dy)
    if str(ir.MemRefType(acc.type).element_type) != "f32":
        raise NotAWindowProgram("the accumulator is not f32")
    known = {acc}
    for g in after:
        step = _step(g, found.out_shape)
        for value, exprs in step.inputs:
            if value in known and exprs != list(range(len(found.out_shape))):
                raise NotAWindowProgram("an op reads the window result through a broadcast")
            if value not in known and value not in arguments:
                raise NotAWindowProgram("an op reads a buffer computed before the window")
        known.update(step.outputs)
        found.steps.append(step)
    shape_only = set(op.opview.inputs)  # the window operand: its extent only
    for alloc in (o for o in ops if o.name == "memref.alloc"):
        if alloc.results[0] not in known and alloc.results[0] not in shape_only:
            raise NotAWindowProgram("an allocation the window program does not write")
    if not found.stored(arguments):
        raise NotAWindowProgram("the kernel stores nothing")
    if math.prod(win) > MAX_TAPS:
        raise NotAWindowProgram(f"a window of {math.prod(win)} taps: expected at most "
                                f"{MAX_TAPS}")
    return found


# ----------------------------------------------------------------------------
# Layout


physical_order = irutil.memory_order


def dense_view(type_):
    """(physical order, identity-layout type of the buffer in that order)
    when ``type_`` lays its elements out densely at offset 0 in some dim
    order, else None."""
    shape, strides, offset = irutil.memref_geometry(type_)
    order = physical_order(type_)
    step = 1
    for d in reversed(order):
        if shape[d] != 1 and strides[d] != step:
            return None
        step *= shape[d]
    if offset != 0:
        return None
    t = ir.MemRefType(type_)
    return order, ir.MemRefType.get([shape[d] for d in order], t.element_type)


def channel_contiguous(type_, width):
    """True when dim 1 (C) of ``type_`` is contiguous, divisible by ``width``
    and the buffer is dense, so that ``width`` channels are one aligned vector."""
    shape, strides, _ = irutil.memref_geometry(type_)
    return (len(shape) > 2 and shape[1] % width == 0 and strides[1] == 1
            and dense_view(type_) is not None)


def vector_width(window, width):
    """Channels per thread: ``width`` when x (and a backward's dy) can be
    read as vectors (C contiguous, divisible), else 1."""
    read = [window.x] + ([window.dy] if window.backward else [])
    while width > 1 and not all(channel_contiguous(b.type, width) for b in read):
        width //= 2
    return width


# ----------------------------------------------------------------------------
# Emission, shared by the forward and gradient emitters


def product(ranges):
    """Every index tuple of ``ranges``, row-major (the last fastest)."""
    out = [[]]
    for r in ranges:
        out = [o + [k] for o in out for k in r]
    return out


def memory_order_view(buffer):
    """``buffer`` as an identity-layout memref in memory order (for vector
    accesses), and that order."""
    order, type_ = dense_view(buffer.type)
    if identity_layout(ir.MemRefType(buffer.type)) and order == sorted(order):
        return buffer, order
    shape = list(type_.shape)
    view = memref.reinterpret_cast(type_, buffer, [], [], [], static_offsets=[0],
                                   static_sizes=shape,
                                   static_strides=irutil.row_major_strides(shape))
    return view, order
