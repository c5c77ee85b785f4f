"""An implicit GEMM's epilogue over views: the pointwise generics after a
convolution's contraction (tensorcore/conv.py) read as the steps of a
``gemm.Epilogue`` whose buffers are ``[M, N]`` (``[G, M, N]`` for G > 1
groups) views of the kernel's arguments, so that the tensor-core epilogues
(sm90/epilogue.py, sm80/epilogue.py) evaluate and store them as a matmul's.

The steps' loop spaces are the accumulator's, ``[N, G, K, *out]`` (a
filter gradient's ``[G, K, C, *window]``) or its collapse; ``loop_dims``
says which loops are the GEMM's batch (the groups), rows (the output
pixels, or a filter gradient's K) and columns (the channels, or a filter
gradient's taps then C, or C alone where the taps are the batch:
``Views.tap_batched``). A buffer is viewed along those when its strides
flatten each group of loops to one stride (channels-last ones do). An
input that does not (broadcast along some of a group's dims and not the
others, or laid out with them apart) is read through a split view
(``Views._split``): a stand-in ``[[G,] M, N]`` buffer that the epilogue's
``pixels`` map sends to a view over the dims themselves, each with its own
stride (pair_epilogue.at splits the GEMM's indices into them). An output
that does not is ``NotAGemm``, naming the buffer (dnn-conv-layouts lays
outputs out channels-last).
"""

from mlir import ir
from mlir.dialects import memref

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.elementwise.vectorize import broadcast_exprs
from dnnc.codegen.gpu.tensorcore.gemm import NotAGemm, Step

VIEW_OPS = ("memref.expand_shape", "memref.collapse_shape", "memref.subview", "memref.cast",
            "memref.reinterpret_cast")


def iterators(op):
    return ["parallel" if irutil.is_parallel(i) else "reduction"
            for i in ir.ArrayAttr(op.attributes["iterator_types"])]


def root(value):
    """The value ``value`` is a view of (through reshapes, subviews, casts)."""
    while True:
        op = irutil.defining_op(value)
        if op is None or op.name not in VIEW_OPS:
            return value
        value = op.operands[0]

def _strides(value, exprs, sizes, split=None, groups=1):
    """{loop dim: stride in elements} of buffer ``value`` read through
    ``exprs`` (a loop dim or None per buffer dim), over its dims of more than
    one element; and its static offset. With ``groups`` > 1, loop dim
    ``split`` (a collapsed [groups x channels] dim) reads as two:
    ("outer", split), the group, and ("inner", split), the channel."""
    shape, strides, offset = irutil.memref_geometry(value.type)
    out = {}
    for d, n, s in zip(exprs, shape, strides):
        if d is None or n == 1:
            continue
        if d == split and groups > 1:
            inner = sizes[("inner", d)]
            if n != groups * inner:
                raise NotAGemm("an epilogue operand covers part of a loop dim")
            out[("outer", d)], out[("inner", d)] = s * inner, s
            continue
        if n != sizes[d]:
            raise NotAGemm("an epilogue operand covers part of a loop dim")
        out[d] = s
    return out, offset


def _describe(value):
    """What a buffer the epilogue reads or writes is, for a reason."""
    shape, strides, _ = irutil.memref_geometry(root(value).type)
    what = "the kernel's" if irutil.is_block_argument(root(value)) else "a"
    return f"{what} {'x'.join(map(str, shape))} buffer with strides {strides}"


def group_stride(strides, dims, sizes, what):
    """The stride of the flattened ``dims`` (outermost first) of a buffer
    with ``strides`` per loop dim, None when it is broadcast along all of
    them; raises NotAGemm when they do not flatten to one stride."""
    moving = [d for d in dims if sizes[d] != 1]
    used = [d for d in moving if d in strides]
    if not used:
        return None
    if used != moving:
        raise NotAGemm(f"an epilogue operand varies along some of the {what} dims only")
    step = strides[moving[-1]]
    for d in reversed(moving):
        if strides[d] != step:
            raise NotAGemm(f"an epilogue operand's {what} dims do not flatten to one stride "
                           "(channels-last operands do)")
        step *= sizes[d]
    return strides[moving[-1]]


class Views:
    """``[M, N]`` views (memref.reinterpret_cast) of the epilogue's buffers,
    ``[G, M, N]`` for a convolution of G > 1 groups (the GEMM's batch), made
    at the top of the kernel function; and stand-in values for the buffers
    that live in registers only."""

    def __init__(self, fn, m, n, groups=1, tap_batched=False, folded=False):
        self.fn, self.m, self.n, self.groups = fn, m, n, groups
        # A filter gradient whose taps are the batch (``groups`` of them,
        # wgrad_taps.py): its views are [taps, K, C]; ``folded`` (fold.py):
        # [outer taps, K, S x C].
        self.tap_batched = tap_batched
        self.folded = folded
        self.made = {}
        self.first = list(irutil.body(fn).operations)[0]
        self.ops = []
        # {stand-in [[G,] M, N] view: (view, row radices, column radices,
        # batch radices)} of the inputs read through split views (_split),
        # radices None for a side that stays one dim: the epilogue's
        # ``pixels`` (pair_epilogue.at).
        self.pixels = {}

    def made_ops(self):
        return list(self.ops)

    def view(self, value, exprs, sizes, dims, strides=None, read=False):
        """(the view, its exprs over ([g,] m, n)) of ``value`` read through
        ``exprs`` in a loop space of ``sizes``; ``dims`` = (group dims,
        output pixel dims, channel dims) of that space; ``strides``, given,
        are the buffer's per loop dim instead of what ``exprs`` say.
        ``read``: an input, which may be a split view (``_split``) where its
        group, pixel or channel dims do not flatten to one stride."""
        b_dims, m_dims, n_dims, split = dims
        offset = irutil.memref_geometry(value.type)[2]
        if strides is None:
            strides, offset = _strides(value, exprs, sizes, split, self.groups)
        try:
            sb = group_stride(strides, b_dims, sizes, "group") if self.groups > 1 else None
            sm = group_stride(strides, m_dims, sizes, "output pixel")
            sn = group_stride(strides, n_dims, sizes, "channel")
        except NotAGemm as why:
            if read:
                return self._split(value, strides, offset, sizes, (b_dims, m_dims, n_dims))
            raise NotAGemm(f"{why}; it is {_describe(value)}") from None
        key = (value, sb, sm, sn)
        if key not in self.made:
            shape = [self.m if sm is not None else 1, self.n if sn is not None else 1]
            pitch = [sm if sm is not None else shape[1], sn if sn is not None else 1]
            if self.groups > 1:
                shape = [self.groups if sb is not None else 1] + shape
                pitch = [sb if sb is not None else shape[1] * shape[2]] + pitch
            element = ir.MemRefType(value.type).element_type
            if pitch == irutil.row_major_strides(shape) and offset == 0:
                t = ir.MemRefType.get(shape, element)
            else:
                t = ir.MemRefType.get(shape, element,
                                      layout=ir.StridedLayoutAttr.get(offset, pitch))
            # At the top, or right after ``value`` where the body defines
            # it (a reshape of an argument).
            source = irutil.defining_op(value)
            where = ir.InsertionPoint(self.first) if source is None else \
                ir.InsertionPoint.after(source)
            with where, ir.Location.unknown():
                self.made[key] = memref.reinterpret_cast(t, value, [], [], [], [offset], shape,
                                                         pitch)
                self.ops.append(irutil.defining_op(self.made[key]))
        exprs = [0 if sm is not None else None, 1 if sn is not None else None]
        if self.groups > 1:
            exprs = [0 if sb is not None else None] + [e + 1 if e is not None else None
                                                       for e in exprs]
        return self.made[key], exprs

    def _split(self, value, strides, offset, sizes, sides):
        """(the view, its exprs) of input ``value`` whose group, pixel or
        channel dims do not flatten to one stride: an operand broadcast
        along some of them (``[1, K, P, Q]`` over the images, ``[N, K, 1,
        1]`` over the pixels of each, a filter gradient's ``[1, C, 1, 1]``
        over its taps) or laid out with them apart. The view is an ``[[G,]
        M, N]`` stand-in whose loads ``pixels`` sends to a view over the
        dims themselves, ``[[*group dims,] *pixel dims, *channel dims]``,
        each with its own stride (0 where the operand is broadcast):
        pair_epilogue.at splits C's batch, row and column into their
        coordinates. A side that flattens stays one dim there."""
        parts = []   # per side: (radices or None, view sizes, view strides, varies)
        totals = (self.groups, self.m, self.n)
        for i, (dims, total) in enumerate(zip(sides, totals)):
            if i == 0 and self.groups == 1:
                parts.append((None, [], [], False))
                continue
            try:
                stride = group_stride(strides, dims, sizes, "")
            except NotAGemm:
                radices = [sizes[d] for d in dims]
                steps = [strides.get(d, 0) if sizes[d] != 1 else 0 for d in dims]
                parts.append((radices, radices, steps, True))
                continue
            parts.append((None, [total if stride is not None else 1],
                          [stride if stride is not None else 0], stride is not None))
        key = (value, "split", tuple(sorted(strides.items(), key=str)))
        if key not in self.made:
            shape = [total if varies else 1 for (_, _, _, varies), total in zip(parts, totals)]
            shape = shape if self.groups > 1 else shape[1:]
            view_shape = [n for _, sizes_, _, _ in parts for n in sizes_]
            view_strides = [s for _, _, steps, _ in parts for s in steps]
            element = ir.MemRefType(value.type).element_type
            source = irutil.defining_op(value)
            where = ir.InsertionPoint(self.first) if source is None else \
                ir.InsertionPoint.after(source)
            t = ir.MemRefType.get(view_shape, element,
                                  layout=ir.StridedLayoutAttr.get(offset, view_strides))
            with where, ir.Location.unknown():
                pixel = memref.reinterpret_cast(t, value, [], [], [], [offset], view_shape,
                                                view_strides)
                # The stand-in: only its type (shape, element) is read; at()
                # addresses ``pixel`` instead.
                stand_in = memref.reinterpret_cast(
                    ir.MemRefType.get(shape, element), value, [], [], [], [0], shape,
                    irutil.row_major_strides(shape))
            self.ops += [irutil.defining_op(pixel), irutil.defining_op(stand_in)]
            (batches, *_), (rows, *_), (cols, *_) = parts
            self.pixels[stand_in] = (pixel, rows, cols, batches)
            self.made[key] = stand_in
        exprs = [0 if parts[1][3] else None, 1 if parts[2][3] else None]
        if self.groups > 1:
            exprs = [0 if parts[0][3] else None] + [e + 1 if e is not None else None
                                                    for e in exprs]
        return self.made[key], exprs

    def register_value(self):
        """A stand-in ``[[G,] M, N]`` f32 buffer for one that lives in registers."""
        shape = ([self.groups] if self.groups > 1 else []) + [self.m, self.n]
        t = ir.MemRefType.get(shape, ir.F32Type.get())
        with ir.InsertionPoint(self.first), ir.Location.unknown():
            value = memref.alloc(t, [], [])
        self.ops.append(irutil.defining_op(value))
        return value

    @property
    def whole(self):
        """The exprs of a buffer of the accumulator's shape."""
        return list(range(3 if self.groups > 1 else 2))


def copies(ops, arguments):
    """{buffer: the kernel argument a copy after the epilogue writes it to}."""
    out = {}
    for op in ops:
        if op.name in ("linalg.copy", "memref.copy"):
            source, dest = op.operands[0], op.operands[1]
            if root(dest) not in arguments:
                raise NotAGemm("the epilogue copies into a buffer that is not an output")
            out[root(source)] = (source, dest)
    return out


def step(op, views, values, copies, epilogue, arguments, nd, direction):
    """The epilogue Step of elementwise generic ``op`` over ``views``."""
    kinds = iterators(op)
    if any(i != "parallel" for i in kinds):
        raise NotAGemm("an op after the convolution is not elementwise")
    for inner in irutil.body_ops(op):
        if inner.regions and len(inner.regions) or inner.name == "linalg.index":
            raise NotAGemm(f"'{inner.name}' in the epilogue")
    rank = len(kinds)
    # The loop space: [N, G, K, *out] or its collapse [N, G·K, *out]; a
    # filter gradient's [G, K, C, *window] or [G·K, C, *window], whose N
    # runs over the taps, then C. Collapsed, the G·K dim reads as two
    # (strides' split) where G > 1.
    if rank not in (2 + nd, 3 + nd):
        raise NotAGemm(f"an epilogue op of {rank} loops over a {2 + nd}-D output")
    maps = irutil.indexing_maps(op)
    ins = len(op.opview.inputs)
    sizes = dict(enumerate(_loop_sizes(op, maps)))
    dims = loop_dims(rank, nd, direction, views.groups, sizes, views.tap_batched,
                     views.folded)
    inputs, outputs = [], []
    block = op.regions[0].blocks[0]
    for i, (value, amap) in enumerate(zip(op.operands, maps)):
        exprs = broadcast_exprs(amap)
        if exprs is None:
            raise NotAGemm(f"epilogue operand map {amap} is not a broadcast")
        origin = root(value)
        if i < ins:
            if origin in values:
                if sorted(d for d in exprs if d is not None) != list(range(rank)):
                    raise NotAGemm("the epilogue reads the accumulator through a broadcast")
                inputs.append((values[origin], views.whole))
            elif origin in arguments:
                inputs.append(views.view(value, exprs, sizes, dims, read=True))
            else:
                raise NotAGemm("the epilogue reads a buffer computed before the convolution")
            continue
        if exprs != list(range(rank)):
            raise NotAGemm("an epilogue output is not written whole")
        if any(True for _ in list(block.arguments)[i].uses):
            raise NotAGemm("an epilogue op reads its output")
        if origin in arguments:
            target = views.view(value, exprs, sizes, dims)[0]
            epilogue.outputs.append(target)
        elif origin in copies:
            source, dest = copies[origin]
            target = copied_view(views, source, dest, value, exprs, sizes, dims)
            epilogue.outputs.append(target)
        else:
            target = views.register_value()
        values[origin] = target
        outputs.append(target)
    return Step(op, inputs, outputs)


def loop_dims(rank, nd, direction, groups, sizes, tap_batched=False, folded=False):
    """(group dims, output pixel dims, channel dims, the split dim or None)
    of an epilogue's loop space of ``rank`` loops, ``sizes`` (a dict, which
    gains the split dim's halves). ``tap_batched``: a filter gradient of
    one group whose batch is the filter taps (wgrad_taps.py), its columns
    C alone; ``folded`` too (fold.py): the batch the outer taps, the
    columns the last filter dim's taps by C."""
    spatial = list(range(rank - nd, rank))
    wgrad = direction == "wgrad"
    if tap_batched:
        # [1, K, C, *window] or [K, C, *window]: the taps flatten to the
        # batch (stride C in a KRSC filter), K the rows, C the columns;
        # folded, the last filter dim's taps and C flatten to the columns
        # (strides C and 1) and the outer taps to the batch (stride S x C).
        first = rank - nd - 2
        if folded:
            return spatial[:-1], [first], [spatial[-1], first + 1], None
        return spatial, [first], [first + 1], None
    if rank == 3 + nd:
        b_dims = [0] if wgrad else [1]
        m_dims, n_dims = ([1], spatial + [2]) if wgrad else ([0] + spatial, [2])
        return b_dims, m_dims, n_dims, None
    merged = 0 if wgrad else 1
    split = merged if groups > 1 else None
    inner = ("inner", merged) if split is not None else merged
    b_dims = [("outer", merged)] if split is not None else []
    if split is not None:
        sizes[("outer", merged)] = groups
        sizes[("inner", merged)] = sizes[merged] // groups
    m_dims, n_dims = ([inner], spatial + [1]) if wgrad else ([0] + spatial, [inner])
    return b_dims, m_dims, n_dims, split


def copied_view(views, source, dest, value, exprs, sizes, dims):
    """The view of output ``dest`` that a copy from ``source`` (a view of
    the buffer ``value`` a step writes) fills: ``dest`` read through the
    step's loops, where the copy's source is ``value`` or its collapse to
    ``dest``'s shape (the groups' [G, K] collapsed to G·K)."""
    if source == value:
        return views.view(dest, exprs, sizes, dims)[0]
    op = irutil.defining_op(source)
    if op is None or op.name != "memref.collapse_shape" or op.operands[0] != value:
        raise NotAGemm("the epilogue's output reaches the kernel's output through views "
                       "other than a collapse")
    groups = [irutil.int_list(g) for g in ir.ArrayAttr(op.attributes["reassociation"])]
    # dest's dim i holds group i of value's dims: each loop reading one of
    # them steps dest's stride times the sizes of the dims inside it.
    shape = list(ir.MemRefType(value.type).shape)
    dest_shape, dest_strides, _ = irutil.memref_geometry(dest.type)
    strides = {}
    for group, size, stride in zip(groups, dest_shape, dest_strides):
        step = stride
        for d in reversed(group):
            if shape[d] != 1 and exprs[d] is not None:
                strides[exprs[d]] = step
            step *= shape[d]
    return views.view(dest, None, sizes, dims, strides=strides)[0]


def _loop_sizes(op, maps):
    """Each loop's size, read from the operands its dims index alone."""
    sizes = {}
    for value, amap in zip(op.operands, maps):
        shape = list(ir.MemRefType(value.type).shape)
        for expr, n in zip(amap.results, shape):
            if isinstance(expr, ir.AffineDimExpr):
                sizes[expr.position] = max(sizes.get(expr.position, 1), n)
    return [sizes.get(d, 1) for d in range(len(iterators(op)))]
