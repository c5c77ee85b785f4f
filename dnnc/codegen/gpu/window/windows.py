"""The simt-window strategy: a pooling kernel (a window reduction with its
pointwise epilogue) as one ``gpu.launch`` whose threads each own a tile of
output pixels and a group of channels, and loop over the windows
(dnn-pool-windows).

What the kernel is made of, after bufferization (dnnc/codegen/linalg/
pooling.py's forward lowering, then dnn-fuse's epilogue)::

    fill     acc[n, c, o] = -inf (max) or 0 (avg)               acc: f32
    window   acc[n, c, o] = max / + over taps t of x[n, c, o * s + t - pre]
             (marked dnn.window; a tap on padding is skipped)
    steps    Y[n, c, o] = f(acc[n, c, o], bias[0, c, 0], n, c, o, ...)   (zero or more)

``match`` reads that shape into a ``Window`` and ``build`` emits:

1. **Mapping.** The output's dims are walked in the memory order of x
   (``physical_order``: N, H, W, C for channels-last, N, C, H, W for NCHW),
   innermost fastest, so that consecutive threads read consecutive
   addresses. A thread owns a tile of ``tile`` output pixels (per spatial
   dim: 2 x 2 from the heuristics for 3x3 / 2, dnnc/heuristics/window.py)
   and, when C is x's contiguous dim, ``vector`` consecutive channels (16
   bytes; every x pixel is one vector load); when it is not (NCHW),
   ``vector`` is 1 and the threads run along W.
2. **Loads**, unrolled at compile time, all in flight: the tile's windows
   read x pixel u * s + t - pre (output u of the tile, tap t) per spatial
   dim, and windows that overlap share pixels, each loaded once (3x3 / 2's
   2 x 2 outputs: 25 pixels for 36 taps). A pixel on padding (outside x on
   some dim) contributes the identity (-inf, 0), which is the op's padding
   semantics: it still loads, from its row clamped into x, and a select
   drops the value: no branches, so a thread's loads issue back to back
   rather than one branch's latency after another's.
3. **Windows**, per output of the tile: its taps (at most ``MAX_TAPS``)
   folded in row-major order from the identity, in f32: the CPU back end's
   order, so the results are bit-identical to it whatever the tile.
4. **Epilogue**, per output and channel: the steps' bodies are cloned on
   the f32 value (the avg divisor is one of them: it reads the output's
   indices), and each kernel output is stored, as one vector where its C is
   contiguous too. Where the tile does not divide the output the last
   tile's outputs past the end skip their epilogue and store (a guard).

x and the outputs are read and written in their own strides (a channels-
last graph input needs no copy: dnn-io-strides leaves it to this strategy,
``LAYOUT_FREE``); vector accesses go through an identity-layout view of the
buffer in memory order (``memref.reinterpret_cast``).
"""

import math
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.elementwise.vectorize import broadcast_exprs, identity_layout
from dnnc.codegen.gpu.tensorcore.gemm import Epilogue, Step
from dnnc.codegen.gpu.tensorcore.pair_epilogue import evaluate, store_lanes
from dnnc.heuristics.window import spatial_tile

# Taps unrolled in one thread; a larger window (a global pool) is left to
# simt-generic.
MAX_TAPS = 64
WINDOW_ATTR = "dnn.window"
_index = irutil.index


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
# Emission


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


class Emitter:
    def __init__(self, window, width, threads, stored, tile=()):
        self.w = window
        self.width = width
        self.threads = threads
        self.stored = stored
        self.f32 = ir.F32Type.get()
        shape = window.out_shape
        # Outputs a thread owns per spatial dim (no more than the dim holds).
        self.tile = [min(t, n) for t, n in zip(spatial_tile(tile, len(window.window)),
                                                shape[2:])]
        # Counts per output dim: channels grouped by the vector, spatial
        # dims by the tile.
        self.counts = list(shape)
        self.counts[1] //= width
        for i, t in enumerate(self.tile):
            self.counts[2 + i] = -(-shape[2 + i] // t)
        self.order = physical_order(window.x.type)
        self.total = 1
        for c in self.counts:
            self.total *= c

    def _vec(self, element):
        return ir.VectorType.get([self.width], element)

    def point(self, linear):
        """Output indices [n, c0, o...] of work item ``linear``."""
        from dnnc.codegen.gpu import loops

        counts = [self.counts[d] for d in self.order]
        ivs = loops.delinearize(linear, counts)
        point = [None] * len(counts)
        for d, iv in zip(self.order, ivs):
            point[d] = iv
        if self.width > 1:
            point[1] = arith.muli(point[1], _index(self.width))
        return point

    def _identity(self):
        """The window's identity as a vector: -inf (max), 0 (avg)."""
        vtype = self._vec(self.f32)
        value = -float("inf") if self.w.mode == "max" else 0.0
        return arith.constant(vtype, ir.DenseElementsAttr.get_splat(
            vtype, ir.FloatAttr.get(self.f32, value)))

    def _row(self, i, origin, offset):
        """(row, inside) of x row ``origin * s + offset - pre`` of spatial
        dim ``i`` (``origin``: the tile's first output there): the row
        clamped into x and the predicate that it is inside, unless it is
        inside in every tile (then itself and None). A negative row wraps to
        a huge unsigned value, so one unsigned compare checks both ends."""
        w = self.w
        h = arith.muli(origin, _index(w.stride[i]))
        shift = offset - w.pre[i]
        if shift:
            h = arith.addi(h, _index(shift)) if shift > 0 else arith.subi(h, _index(-shift))
        size = w.in_shape[2 + i]
        last = (self.counts[2 + i] - 1) * self.tile[i] * w.stride[i] + shift
        if offset >= w.pre[i] and last < size:
            return h, None
        inside = arith.cmpi(arith.CmpIPredicate.ult, h, _index(size))
        return arith.minui(h, _index(size - 1)), inside

    def gather(self, origin, x_view, x_order):
        """{input offset: f32 vector} of every x pixel the tile's windows
        read, each loaded once: offset e_i = u_i * s_i + t_i of output u and
        tap t. A pixel on padding loads from a row clamped into x and a
        select turns it into the identity (-inf, 0): no branch, so all the
        tile's loads are in flight at once."""
        w = self.w
        nd = len(w.window)
        offsets = [sorted({u * w.stride[i] + t for u in range(self.tile[i])
                           for t in range(w.window[i])}) for i in range(nd)]
        rows = [{e: self._row(i, origin[2 + i], e) for e in offsets[i]} for i in range(nd)]
        skip = self._identity()
        values = {}
        for e in product(offsets):
            picked = [rows[i][k] for i, k in enumerate(e)]
            ok = None
            for _, inside in picked:
                if inside is not None:
                    ok = inside if ok is None else arith.andi(ok, inside)
            v = self.load(w.x, origin[:2] + [h for h, _ in picked], x_view, x_order)
            values[tuple(e)] = v if ok is None else arith.select(ok, v, skip)
        return values

    def reduce(self, values, u):
        """The f32 window value of output ``u`` of the tile (its offset per
        spatial dim) and the thread's ``width`` channels: the taps folded in
        row-major order from the identity, the CPU back end's order."""
        w = self.w
        acc = self._identity()
        for tap in product(range(k) for k in w.window):
            v = values[tuple(ui * s + t for ui, s, t in zip(u, w.stride, tap))]
            acc = arith.maximumf(acc, v) if w.mode == "max" else arith.addf(acc, v)
        return acc

    def load(self, buffer, logical, view, order):
        """``width`` channels of ``buffer`` at ``logical`` indices, as f32
        (``view``: the identity-layout view in memory ``order``, for
        vectors)."""
        element = ir.MemRefType(buffer.type).element_type
        vtype = self._vec(self.f32)
        if self.width > 1:
            v = vector.load(self._vec(element), view, [logical[d] for d in order],
                            alignment=self.width * irutil.element_bytes(element))
            return v if element == self.f32 else arith.extf(vtype, v)
        v = memref.load(buffer, logical)
        if element != self.f32:
            v = arith.extf(self.f32, v)
        return vector.broadcast(vtype, v)

    def epilogue(self, acc, point):
        """[{buffer: value}] per lane of every buffer written after the window."""
        out = []
        for lane in range(self.width):
            here = list(point)
            if lane:
                here[1] = arith.addi(point[1], _index(lane))
            value = vector.extract(acc, [], [lane])
            out.append(evaluate(self.w.acc, self.w.steps, value, here,
                                index_of=lambda dim, here=here: here[dim]))
        return out

    def store(self, lanes, point):
        for buffer in self.stored:
            if self.width > 1 and channel_contiguous(buffer.type, self.width):
                view, order = memory_order_view(buffer)
                store_lanes([env[buffer] for env in lanes], view, [point[d] for d in order])
                continue
            for lane, env in enumerate(lanes):
                here = list(point)
                if lane:
                    here[1] = arith.addi(point[1], _index(lane))
                memref.store(env[buffer], buffer, here)

    def program(self, linear):
        item = self.point(linear)  # [n, c0, q_i...]: q_i the tile's index
        origin = item[:2] + [arith.muli(q, _index(t)) if t > 1 else q
                             for q, t in zip(item[2:], self.tile)]
        x_view, x_order = (memory_order_view(self.w.x) if self.width > 1 else (self.w.x, None))
        values = self.gather(origin, x_view, x_order)
        for u in product(range(t) for t in self.tile):
            point = origin[:2] + [arith.addi(o, _index(k)) if k else o
                                  for o, k in zip(origin[2:], u)]
            # Where the tile does not divide the output, its last outputs
            # may lie past the end: their epilogue and store are skipped.
            inside = None
            for i, k in enumerate(u):
                n = self.w.out_shape[2 + i]
                if k and (self.counts[2 + i] - 1) * self.tile[i] + k >= n:
                    ok = arith.cmpi(arith.CmpIPredicate.ult, point[2 + i], _index(n))
                    inside = ok if inside is None else arith.andi(inside, ok)
            acc = self.reduce(values, u)
            if inside is None:
                self.store(self.epilogue(acc, point), point)
                continue
            guard = scf.IfOp(inside)
            with ir.InsertionPoint(guard.then_block):
                self.store(self.epilogue(acc, point), point)
                scf.YieldOp([])


def build(fn, window, width, threads, tile=()):
    """Replace kernel ``fn``'s body by the window program of ``window``:
    ``threads`` per block, each owning ``width`` channels of a tile of
    ``tile`` output pixels (per spatial dim, the last dims when shorter; a
    forward only) where x's channels are contiguous (else one output
    element per pixel). Returns the number of blocks."""
    arguments = list(irutil.body(fn).arguments)
    width = vector_width(window, width)
    kind = Emitter
    if window.backward:
        from dnnc.codegen.gpu.window import gradients

        kind = gradients.GradientEmitter
        width = gradients.lanes(window, width)
    if window.backward:
        emitter = kind(window, width, threads, window.stored(arguments))
    else:
        emitter = kind(window, width, threads, window.stored(arguments), tile)
    body = irutil.body(fn)
    first = next(op for op in body.operations if op.operation.name != "arith.constant")
    blocks = -(-emitter.total // threads)
    if emitter.total:
        with ir.InsertionPoint(first), fn.location:
            launch = gpu.LaunchOp((_index(blocks), _index(1), _index(1)),
                                  (_index(threads), _index(1), _index(1)))
            block = launch.regions[0].blocks[0]
            with ir.InsertionPoint(block):
                terminator = gpu.TerminatorOp()
            with ir.InsertionPoint(terminator):
                linear = arith.addi(arith.muli(block.arguments[0], _index(threads)),
                                    block.arguments[3])
                if blocks * threads != emitter.total:
                    inside = arith.cmpi(arith.CmpIPredicate.ult, linear, _index(emitter.total))
                    guard = scf.IfOp(inside)
                    with ir.InsertionPoint(guard.then_block):
                        end = scf.YieldOp([])
                    with ir.InsertionPoint(end):
                        emitter.program(linear)
                else:
                    emitter.program(linear)
    for step in reversed(window.steps):
        step.op.erase()
    window.op.erase()
    window.fill.erase()
    for op in list(body.operations):
        if op.operation.name == "memref.alloc" and not any(True for _ in op.results[0].uses):
            op.operation.erase()
    return blocks
