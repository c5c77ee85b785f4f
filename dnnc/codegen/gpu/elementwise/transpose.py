"""Transposing copies through shared memory: the ``simt-transpose`` strategy
(a transpose that moves the innermost dim, dnn-tile-transposes) and the
copy tc-sm90 runs ahead of a GEMM whose operand wgmma or TMA cannot read
where it lies (``sm90.transposed_operands``).

A copy is described by its axes (``Axis``: a size, a stride in the source
and one in the destination), after size-1 dims are dropped and dims that
stay adjacent in both are merged (``copy_axes``): ``r``, the axis the
source is contiguous along, ``k``, the one the destination is contiguous
along, and any number of batch axes. A row-major ``K x R`` to ``R x K``
transpose is ``r = Axis(R, 1, K)``, ``k = Axis(K, R, 1)``; NCHW to NHWC is
the same over a batch of N, with R = H * W and K = C.

One block of ``threads`` (256 by default) per TILE x TILE tile of (k, r)
per batch index, through a shared tile of TILE rows of k::

    1. read    each thread loads its vectors along r (``read_width``
               elements: 16 bytes where the source's strides allow, fewer
               down to 1), every load before the first store to shared
               memory so that they are all in flight together; a load past
               the end of r or k reads the last vector or row instead (in
               bounds, and never written out), so the loads need no branch
    2. barrier
    3. write   each thread gathers ``write_width`` elements of a column of
               the shared tile (consecutive k at one r), puts each through
               the kernel's pointwise ops where it has some (the epilogue
               dnn-fuse joins to a transpose: a cast, a relu, a scale), and
               stores them as one vector along k, skipped past the end of r
               or k

The shared tile's rows are padded to an odd number of 4-byte words, so
that the column reads of step 3 and the row writes of step 1 fall in
distinct banks but for a 2-way overlap (a memory-bound copy does not feel
it: shared memory has several times the bandwidth a block's DRAM share
needs). Blocks are numbered r tile fastest, then k tile, then batch.
"""

from dataclasses import dataclass
from math import prod

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.elementwise.vectorize import clone_body

TILE = 64        # rows of k and columns of r per block
THREADS = 256
VECTOR_BYTES = 16


class NotATranspose(Exception):
    """The strategy does not take this kernel; the message says why."""


@dataclass(frozen=True)
class Axis:
    size: int
    src: int     # stride in the source, elements
    dst: int     # stride in the destination, elements


@dataclass(frozen=True)
class Copy:
    """What a transposing copy moves: ``r`` (the source's contiguous axis),
    ``k`` (the destination's), ``batch`` (the others, outermost first) and
    the element offsets of both buffers."""
    r: Axis
    k: Axis
    batch: tuple = ()
    src_offset: int = 0
    dst_offset: int = 0

    @property
    def batches(self):
        return prod(a.size for a in self.batch)


def _idx(n):
    return irutil.index(n)


def _cmp(pred, a, b):
    return arith.cmpi(getattr(arith.CmpIPredicate, pred), a, b)


def _width(eb, unit, size, steps):
    """The widest vector (elements, at most 16 bytes) along an axis of
    stride ``unit`` and ``size`` elements at whose every start the other
    ``steps`` (strides and the offset) keep it aligned; 1 when none."""
    if unit != 1:
        return 1
    for width in (VECTOR_BYTES // eb, 8 // eb, 4 // eb, 2 // eb):
        if width > 1 and size % width == 0 and all(s % width == 0 for s in steps):
            return width
    return 1


def read_width(copy, eb):
    """Elements a thread reads at once along r."""
    return _width(eb, copy.r.src, copy.r.size,
                  [copy.k.src, copy.src_offset] + [a.src for a in copy.batch])


def write_width(copy, eb):
    """Elements a thread writes at once along k (``eb``: the destination's
    element bytes)."""
    return _width(eb, copy.k.dst, copy.k.size,
                  [copy.r.dst, copy.dst_offset] + [a.dst for a in copy.batch])


def merged_axes(sizes, src_strides, dst_strides):
    """The Axis of each loop dim of more than one element, outermost first
    in the destination, an axis merged into the one before it where both
    buffers step over the two as over one longer axis."""
    axes = [Axis(s, a, b) for s, a, b in zip(sizes, src_strides, dst_strides) if s != 1]
    axes.sort(key=lambda a: -a.dst)
    merged = []
    for axis in axes:
        if merged and merged[-1].src == axis.src * axis.size \
                and merged[-1].dst == axis.dst * axis.size:
            outer = merged.pop()
            axis = Axis(outer.size * axis.size, axis.src, axis.dst)
        merged.append(axis)
    return merged


def copy_axes(sizes, src_strides, dst_strides, src_offset=0, dst_offset=0):
    """The Copy of a copy over loop dims of ``sizes`` whose elements lie at
    ``src_strides`` in the source and ``dst_strides`` in the destination.
    Raises NotATranspose when both are contiguous along the same axis (a
    plain copy, which simt-pointwise moves by vectors)."""
    merged = merged_axes(sizes, src_strides, dst_strides)
    if len(merged) < 2:
        raise NotATranspose(f"{'one axis' if merged else 'one element'} to copy, in the "
                            "same order in both buffers")
    k = min(merged, key=lambda a: a.dst)
    r = min((a for a in merged if a is not k), key=lambda a: a.src)
    if k.src < r.src:
        raise NotATranspose("the source and the destination are contiguous along the same "
                            "dim: a plain copy")
    batch = tuple(a for a in merged if a is not r and a is not k)
    return Copy(r, k, batch, src_offset, dst_offset)


def check_threads(threads, copy, eb, out_eb=None):
    """Raise NotATranspose unless ``threads`` fit the tile's reads and writes
    (``eb``, ``out_eb``: the source's and the destination's element bytes)."""
    for width in (read_width(copy, eb), write_width(copy, out_eb or eb)):
        per = TILE // width
        if threads % per or threads // per > TILE or TILE % (threads // per):
            raise NotATranspose(f"blocks of {threads} threads: expected a multiple of {per} "
                                f"(threads a row of {TILE} elements in vectors of {width}) "
                                f"that divides {TILE * per}")


def _flat(buffer, extent):
    """``buffer`` viewed as 1-D from its base: ``extent`` elements."""
    element = ir.MemRefType(buffer.type).element_type
    return memref.reinterpret_cast(ir.MemRefType.get([extent], element), buffer, [], [], [],
                                   [0], [extent], [1])


def _extent(offset, axes, which):
    return offset + 1 + sum((a.size - 1) * getattr(a, which) for a in axes)


def emit(copy, source, dest, threads=THREADS, apply=None):
    """Emit the copy's launch at the current insertion point (host side).
    ``apply``, given, maps each element moved (a scalar of the source's
    type) to the one stored (the destination's type)."""
    element = ir.MemRefType(source.type).element_type
    out_element = ir.MemRefType(dest.type).element_type
    eb, out_eb = irutil.element_bytes(element), irutil.element_bytes(out_element)
    check_threads(threads, copy, eb, out_eb)
    axes = (copy.r, copy.k) + copy.batch
    src = _flat(source, _extent(copy.src_offset, axes, "src"))
    dst = _flat(dest, _extent(copy.dst_offset, axes, "dst"))
    rw, ww = read_width(copy, eb), write_width(copy, out_eb)
    # An odd number of 4-byte words a row (see the module docstring).
    pitch = TILE + max(1, 4 // eb)
    smem_type = ir.MemRefType.get([TILE, pitch], element, memory_space=ir.Attribute.parse(
        "#gpu.address_space<workgroup>"))
    r_tiles, k_tiles = -(-copy.r.size // TILE), -(-copy.k.size // TILE)
    blocks = r_tiles * k_tiles * copy.batches
    launch = gpu.LaunchOp((_idx(blocks), _idx(1), _idx(1)), (_idx(threads), _idx(1), _idx(1)))
    launch.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
        ir.IntegerType.get_signless(64), 1)
    block = launch.regions[0].blocks[0]
    smem = block.add_argument(smem_type, ir.Location.unknown())
    with ir.InsertionPoint(block):
        tid = gpu.thread_id(gpu.Dimension.x)
        bid = gpu.block_id(gpu.Dimension.x)
        r0 = arith.muli(arith.remui(bid, _idx(r_tiles)), _idx(TILE))
        rest = arith.divui(bid, _idx(r_tiles))
        k0 = arith.muli(arith.remui(rest, _idx(k_tiles)), _idx(TILE))
        rest = arith.divui(rest, _idx(k_tiles))
        src_base, dst_base = _idx(copy.src_offset), _idx(copy.dst_offset)
        for i, axis in reversed(list(enumerate(copy.batch))):
            at = arith.remui(rest, _idx(axis.size)) if i else rest
            src_base = arith.addi(src_base, arith.muli(at, _idx(axis.src)))
            dst_base = arith.addi(dst_base, arith.muli(at, _idx(axis.dst)))
            if i:
                rest = arith.divui(rest, _idx(axis.size))

        # 1. Read: thread t loads vector t % per of rows t / per + i * rows.
        per = TILE // rw
        rows = threads // per
        column = arith.muli(arith.remui(tid, _idx(per)), _idx(rw))
        first = arith.divui(tid, _idx(per))
        # The last in-bounds vector and row stand in for those past the end.
        r = arith.minui(arith.addi(r0, column), _idx(copy.r.size - rw))
        at_r = arith.addi(src_base, arith.muli(r, _idx(copy.r.src)))
        vector_type = ir.VectorType.get([rw], element)
        loaded = []
        for i in range(TILE // rows):
            row = arith.addi(first, _idx(i * rows))
            k = arith.minui(arith.addi(k0, row), _idx(copy.k.size - 1))
            where = [arith.addi(at_r, arith.muli(k, _idx(copy.k.src)))]
            if rw == 1:
                loaded.append((row, [memref.load(src, where)]))
            else:
                got = vector.load(vector_type, src, where, alignment=rw * eb)
                loaded.append((row, [vector.extract(got, [], [j]) for j in range(rw)]))
        for row, values in loaded:
            for j, value in enumerate(values):
                memref.store(value, smem, [row, arith.addi(column, _idx(j))])
        gpu.barrier()

        # 3. Write: thread t stores vector t % per of columns t / per + i * rows.
        per = TILE // ww
        rows = threads // per
        kk = arith.muli(arith.remui(tid, _idx(per)), _idx(ww))
        first = arith.divui(tid, _idx(per))
        k = arith.addi(k0, kk)
        k_ok = _cmp("ult", k, _idx(copy.k.size))
        at_k = arith.addi(dst_base, arith.muli(k, _idx(copy.k.dst)))
        vector_type = ir.VectorType.get([ww], out_element)
        for i in range(TILE // rows):
            c = arith.addi(first, _idx(i * rows))
            values = [memref.load(smem, [arith.addi(kk, _idx(j)), c]) for j in range(ww)]
            if apply is not None:
                values = [apply(v) for v in values]
            r = arith.addi(r0, c)
            ok = arith.andi(k_ok, _cmp("ult", r, _idx(copy.r.size)))
            guard = scf.IfOp(ok, [], has_else=False)
            with ir.InsertionPoint(guard.then_block):
                where = [arith.addi(at_k, arith.muli(r, _idx(copy.r.dst)))]
                if ww == 1:
                    memref.store(values[0], dst, where)
                else:
                    vector.store(vector.from_elements(vector_type, values), dst, where,
                                 alignment=ww * out_eb)
                scf.YieldOp([])
        gpu.TerminatorOp()
    return launch


def transposed_copy(source, dims, extent, k, batch, pitch=None):
    """tc-sm90's copy of an operand: emit it at the current insertion point
    (host side of a kernel function) and return the new buffer, ``[batch,]
    extent x k`` row-major with ``copy[b, r, kk] = source[b, kk, r]``.
    ``dims`` gives the source's "batch" (None when it has none), "k" and "mn"
    dims; a source dim in none of them has size 1. ``pitch`` (elements,
    more than ``k``): the copy's rows lie that far apart, and what is
    returned is the view of their first ``k`` elements (TMA reads it, zero
    past K; the rest of each row is never written nor read)."""
    _, strides, offset = irutil.memref_geometry(source.type)
    element = ir.MemRefType(source.type).element_type
    batched = dims["batch"] is not None
    pitch = pitch or k
    lead = [batch] if batched else []
    dest = memref.alloc(ir.MemRefType.get(lead + [extent, pitch], element), [], [])
    copy = Copy(Axis(extent, strides[dims["mn"]], pitch), Axis(k, strides[dims["k"]], 1),
                (Axis(batch, strides[dims["batch"]], extent * pitch),) if batched else (),
                offset, 0)
    emit(copy, source, dest)
    if pitch == k:
        return dest
    view_strides = ([extent * pitch] if batched else []) + [pitch, 1]
    view_type = ir.MemRefType.get(lead + [extent, k], element,
                                  layout=ir.StridedLayoutAttr.get(0, view_strides))
    return memref.reinterpret_cast(view_type, dest, [], [], [], [0], lead + [extent, k],
                                   view_strides)


def _the_copy(fn):
    """(generic op, sizes, [(per-loop strides, offset)] of its source and
    destination) of kernel function ``fn``'s one transposing copy; raises
    NotATranspose when ``fn`` is no such kernel."""
    ops = [op.operation for op in irutil.body(fn).operations
           if op.operation.name not in ("arith.constant", "func.return")]
    if len(ops) != 1 or ops[0].name != "linalg.generic":
        raise NotATranspose(f"{len(ops)} ops in the kernel: expected one copy")
    op = ops[0]
    block = op.regions[0].blocks[0]
    if len(op.operands) != 2:
        raise NotATranspose(f"{len(op.operands) - 1} inputs: expected one")
    body = [o.operation for o in block.operations][:-1]
    if any(o.name == "linalg.index" or len(o.regions) for o in body) or \
            list(block.arguments[1].uses):
        raise NotATranspose("the kernel's body reads its output or its indices")
    if any(not irutil.is_parallel(i) for i in ir.ArrayAttr(op.attributes["iterator_types"])):
        raise NotATranspose("the kernel reduces")
    sizes = [0] * len(ir.ArrayAttr(op.attributes["iterator_types"]))
    strides_of = []
    for value, amap in zip(op.operands, irutil.indexing_maps(op)):
        if not amap.is_permutation:
            raise NotATranspose(f"a map {amap} that is not a permutation")
        shape, strides, offset = irutil.memref_geometry(value.type)
        per_loop = [0] * len(sizes)
        for position, expr in enumerate(amap.results):
            d = ir.AffineDimExpr(expr).position
            per_loop[d] = strides[position]
            sizes[d] = shape[position]
        strides_of.append((per_loop, offset))
    return op, sizes, strides_of


def flatten_plain_copy(fn):
    """Rewrite kernel function ``fn``'s one copy, where its source and
    destination both lie contiguously in the same order (a transpose op whose
    operand a view already permuted), as a copy between the two buffers'
    flat views: one axis, identity maps, the body kept, which
    simt-pointwise moves by vectors. Returns the number of elements, or
    None (``fn`` unchanged) when it is no such copy."""
    try:
        op, sizes, ((src, src_offset), (dst, dst_offset)) = _the_copy(fn)
    except NotATranspose:
        return None
    merged = merged_axes(sizes, src, dst)
    if len(merged) != 1 or merged[0].src != 1 or merged[0].dst != 1 \
            or min(src_offset, dst_offset) < 0:   # (a dynamic offset)
        return None
    count = merged[0].size
    with ir.InsertionPoint(op), op.location:
        for i, (value, offset) in enumerate(zip(list(op.operands),
                                                (src_offset, dst_offset))):
            element = ir.MemRefType(value.type).element_type
            flat = ir.MemRefType.get([count], element, layout=ir.StridedLayoutAttr.get(
                offset, [1])) if offset else ir.MemRefType.get([count], element)
            op.operands[i] = memref.reinterpret_cast(flat, value, [], [], [], [offset],
                                                     [count], [1])
    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(1))
    op.attributes["indexing_maps"] = ir.ArrayAttr.get([identity, identity])
    op.attributes["iterator_types"] = ir.ArrayAttr.get(
        [ir.Attribute.parse("#linalg.iterator_type<parallel>")])
    return count


def lower_kernel(fn, threads):
    """Replace the one ``linalg.generic`` of kernel function ``fn`` (a
    transpose: its input read through a permuted map, its body a function
    of that input alone, such as a cast) by the tiled launch; return what
    the plan says of it. Raises NotATranspose, leaving ``fn`` as it is, when
    it is no such kernel."""
    op, sizes, strides_of = _the_copy(fn)
    block = op.regions[0].blocks[0]
    body = [o.operation for o in block.operations][:-1]
    source, dest = op.operands[0], op.operands[1]
    (src_strides, src_offset), (dst_strides, dst_offset) = strides_of
    copy = copy_axes(sizes, src_strides, dst_strides, src_offset, dst_offset)
    def apply(x):
        """The body on one element (its output argument is never read)."""
        (y,) = clone_body(block, [x, x], None)
        return y
    with ir.InsertionPoint(op):  # emit checks the threads before it builds anything
        emit(copy, source, dest, threads, apply if body else None)
    op.erase()
    applied = ", each element through the kernel's pointwise ops" if body else ""
    return describe(copy, irutil.element_bytes(ir.MemRefType(source.type).element_type),
                    irutil.element_bytes(ir.MemRefType(dest.type).element_type)) + applied


def describe(copy, eb, out_eb):
    """What the plan says of a copy: "a 64 x 3136 transpose over a batch of
    8 in 64 x 64 tiles: 16-byte reads, 16-byte writes"."""
    batch = f" over a batch of {copy.batches}" if copy.batch else ""
    return (f"a {copy.k.size} x {copy.r.size} transpose{batch} in {TILE} x {TILE} tiles: "
            f"{read_width(copy, eb) * eb}-byte reads, "
            f"{write_width(copy, out_eb) * out_eb}-byte writes")
