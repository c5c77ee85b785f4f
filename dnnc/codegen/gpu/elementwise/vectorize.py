"""The simt-pointwise strategy: an elementwise ``linalg.generic`` or a
``linalg.copy`` on buffers becomes a loop over 16-byte vectors
(dnn-vectorize-pointwise).

A thread handles ``unroll`` vectors of ``vector`` consecutive elements along
the innermost dim. The rewrite of one op, in steps:

1. ``plan`` checks that the op is vectorizable and says how each operand
   is read: every loop parallel; each operand's indexing map a permutation
   of the loops (each result a loop dim or the constant 0 of a broadcast;
   a transpose's input reads them in another order); outputs indexed by the
   identity map; the innermost dim a multiple of ``vector``. An operand that
   reads the innermost loop dim must read it as its own innermost dim, with
   a layout that keeps vectors whole and aligned (identity, or static
   strides: the innermost 1, the others and the offset multiples of the
   vector: a slice, a concat's part of its output); it is loaded as a
   ``vector<V x T>``. One that is broadcast along it is loaded as a scalar
   and used by every lane. A copy's input and output are identity maps.
   Anything else: ``None`` and the reason (the op stays for
   convert-linalg-to-parallel-loops, one thread per element).
2. ``rewrite`` replaces the generic by a 1-D ``scf.parallel`` over groups of
   ``unroll`` vectors. dnn-distribute-loops gives each thread of a block of
   ``T`` threads one group: vector ``u`` of group ``g`` is
   ``(g / T) * T * unroll + u * T + g % T``, so that at every ``u`` the
   threads of a warp read consecutive vectors (coalesced). When the vector
   count is not a multiple of ``T * unroll`` each vector is guarded.
3. Per vector: every load first (all of a thread's vectors are in flight at
   once), then the body of the generic, cloned once per lane on scalars
   extracted from the vectors (a copy stores what it loaded), then one
   ``vector.store`` per output. The
   loads and stores carry ``alignment = V * element bytes``: the runtime
   checks that every tensor's address is 16-byte aligned, the workspace puts
   intermediates at 256-byte offsets, and a row of a multiple of V elements
   keeps every vector aligned.

NVPTX turns each aligned ``vector<8 x bf16>`` load into one
``ld.global.v4.b32``.

4. A kernel of copies into disjoint parts of one buffer (a concat's slabs)
   gets one loop for all of them (``merge_parts``): one launch, where each
   copy took its own.
"""

import math
from dataclasses import dataclass, replace

from mlir import ir
from mlir.dialects import arith, memref, scf, vector

from dnnc.codegen.gpu import irutil, loops


@dataclass
class Operand:
    value: object        # the buffer
    exprs: list          # per buffer dim: loop dim index, or None (constant 0)
    vectorized: bool     # runs along the innermost loop: loaded as a vector
    element: object      # the element type
    kept: int = None     # read through a view of its first ``kept`` dims (the
                         # rest are trailing unit dims of trailing unit loops)


@dataclass
class Plan:
    generic: object
    dims: list           # loop extents
    inputs: list         # Operand per input
    outputs: list        # Operand per output
    reads_outputs: list  # per output: the body reads its current value
    copy: bool = False   # a linalg.copy: each output vector is the input's


def broadcast_exprs(amap):
    """Per result: the loop dim it reads, or None for the constant 0; None
    when the map is not a broadcast of the loops in order."""
    out, last = [], -1
    for expr in amap.results:
        if isinstance(expr, ir.AffineDimExpr):
            d = expr.position
            if d <= last:
                return None
            out.append(d)
            last = d
        elif isinstance(expr, ir.AffineConstantExpr) and expr.value == 0:
            out.append(None)
        else:
            return None
    return out


def identity_layout(type_):
    if not isinstance(type_, ir.MemRefType):
        return False
    t = ir.MemRefType(type_)
    if not isinstance(t.layout, ir.AffineMapAttr):  # strided<[...]>: not the identity
        return False
    return ir.AffineMapAttr(t.layout).value == ir.AffineMap.get_identity(t.rank)


def projected_exprs(amap):
    """Per result: the loop dim it reads, or None for the constant 0, in any
    order but each dim once (a transpose's map); None otherwise."""
    out = []
    for expr in amap.results:
        if isinstance(expr, ir.AffineDimExpr):
            if expr.position in out:
                return None
            out.append(expr.position)
        elif isinstance(expr, ir.AffineConstantExpr) and expr.value == 0:
            out.append(None)
        else:
            return None
    return out


def aligned_vectors(type_, width):
    """True when vectors of ``width`` elements along the innermost dim of a
    buffer of ``type_`` can be loaded whole and aligned: an identity layout,
    or static strides whose innermost is 1 and whose others, like the
    offset, are multiples of ``width`` (a slice, or a concat's part of its
    output, at a vector boundary). The caller checks the innermost extent."""
    if identity_layout(type_):
        return True
    t = ir.MemRefType(type_)
    if not isinstance(t.layout, ir.StridedLayoutAttr):
        return False
    strides, offset = t.get_strides_and_offset()
    if any(t.is_dynamic_stride_or_offset(v) for v in strides + [offset]):
        return False
    return strides[-1] == 1 and offset % width == 0 and all(v % width == 0 for v in strides[:-1])


def _without_unit_loops(dims, operands, width):
    """(dims, operands, None) of a loop nest whose trailing loops run over
    one element (cudnn-frontend's ``[rows, hidden, 1, 1]``) without them:
    each operand read through a view of its leading dims, vectors along the
    last loop longer than one; (.., reason) when an operand's trailing unit
    dims are not those loops' or its layout is not the identity."""
    keep = max(d for d, n in enumerate(dims) if n > 1) + 1
    out = []
    for i, o in enumerate(operands):
        t = ir.MemRefType(o.value.type)
        kept = next((p for p in range(t.rank, 0, -1)
                     if o.exprs[p - 1] is not None and o.exprs[p - 1] < keep), 0)
        if any(n != 1 for n in t.shape[kept:]) or \
                any(e is not None and e >= keep for e in o.exprs[:kept]):
            return None, None, f"operand {i}: trailing unit loops that are not its last dims"
        if not identity_layout(o.value.type):
            return None, None, (f"operand {i}: trailing unit dims in a layout ({t.layout}) "
                                "that is not the identity")
        exprs = o.exprs[:kept]
        along = keep - 1 in exprs
        if along and exprs[-1] != keep - 1:
            return None, None, f"operand {i} reads the vector loop at another dim than its last"
        out.append(Operand(o.value, exprs, along, o.element, kept))
    return dims[:keep], out, None


def _squeezed(operand):
    """The view of an operand that ``_without_unit_loops`` reads (made at the
    current insertion point), or the operand itself."""
    if operand.kept is None:
        return operand
    t = ir.MemRefType(operand.value.type)
    shape = list(t.shape[:operand.kept])
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    view = memref.reinterpret_cast(ir.MemRefType.get(shape, t.element_type), operand.value,
                                   [], [], [], [0], shape, strides)
    return Operand(view, operand.exprs, operand.vectorized, operand.element)


def plan(op, width):
    """How to vectorize ``op`` (a linalg.generic or linalg.copy) by
    ``width`` elements, or None."""
    return plan_or_reason(op, width)[0]


def plan_or_reason(op, width):
    """(Plan, None), or (None, why ``op`` does not vectorize by ``width``)."""
    op = getattr(op, "operation", op)
    copy = op.name == "linalg.copy"
    if copy:
        values, n_in = list(op.operands), 1
        rank = ir.MemRefType(values[1].type).rank
        if ir.MemRefType(values[0].type).element_type != ir.MemRefType(values[1].type).element_type:
            return None, "a copy that converts"
        maps = [ir.AffineMap.get_identity(rank)] * 2
    else:
        iterators = list(ir.ArrayAttr(op.attributes["iterator_types"]))
        rank = len(iterators)
        if not all(irutil.is_parallel(i) for i in iterators):
            return None, "a reduction"
        if any(len(r.blocks) != 1 for r in op.regions):
            return None, "a loop nest of several blocks"
        maps = irutil.indexing_maps(op)
        opview = op.opview
        n_in = len(opview.inputs)
        values = list(opview.inputs) + list(opview.outputs)
        if len(maps) != len(values) or any(m.n_symbols for m in maps):
            return None, "indexing maps with symbols"
    if rank == 0:
        return None, "no loop"
    dims = [None] * rank
    operands = []
    for i, (value, amap) in enumerate(zip(values, maps)):
        if not isinstance(value.type, ir.MemRefType):
            return None, "an operand that is not a buffer"
        t = ir.MemRefType(value.type)
        exprs = projected_exprs(amap)
        if exprs is None or len(exprs) != t.rank:
            return None, f"operand {i}: an indexing map that is not a permutation of the loops"
        if i >= n_in and exprs != list(range(rank)):
            return None, f"output {i - n_in}: written through a map that is not the identity"
        along = rank - 1 in exprs
        if along and exprs[-1] != rank - 1:
            return None, (f"operand {i} reads the innermost loop dim at its dim "
                          f"{exprs.index(rank - 1)} of {t.rank}: the copy moves the innermost dim")
        if along and not aligned_vectors(value.type, width):
            return None, f"operand {i}: a layout ({t.layout}) that breaks vectors of {width}"
        if not along and not (identity_layout(value.type) or
                              isinstance(t.layout, ir.StridedLayoutAttr)):
            return None, f"operand {i}: a layout ({t.layout}) that is not strided"
        for d, size in zip(exprs, t.shape):
            if d is not None:
                if dims[d] not in (None, size):
                    return None, f"loop {d} runs over {dims[d]} and {size}"
                dims[d] = size
        operands.append(Operand(value, exprs, along, t.element_type))
    if any(d is None for d in dims):
        return None, "a loop no operand indexes"
    if dims[-1] == 1 and any(d > 1 for d in dims):
        dims, operands, why = _without_unit_loops(dims, operands, width)
        if why:
            return None, why
    if dims[-1] % width:
        return None, f"an innermost dim of {dims[-1]}, not a multiple of {width}"
    if copy:
        return Plan(op, dims, operands[:1], operands[1:], [False], copy=True), None
    body = op.regions[0].blocks[0]
    for inner in list(body.operations)[:-1]:
        if len(inner.operation.regions):
            return None, f"'{inner.operation.name}' with a region in the body"
    out_args = list(body.arguments)[n_in:]
    reads = [any(True for _ in arg.uses) for arg in out_args]
    return Plan(op, dims, operands[:n_in], operands[n_in:], reads), None


# ----------------------------------------------------------------------------
# Rewrite


_index = irutil.index


def _vector_type(width, element):
    return ir.VectorType.get([width], element)


def _alignment(width, element):
    return width * irutil.element_bytes(element)


def _operand_indices(operand, ivs):
    zero = _index(0)
    return [zero if d is None else ivs[d] for d in operand.exprs]


def _load(operand, ivs, width):
    indices = _operand_indices(operand, ivs)
    if operand.vectorized:
        return vector.load(_vector_type(width, operand.element), operand.value, indices,
                           alignment=_alignment(width, operand.element))
    return memref.load(operand.value, indices)


def _lane(value, operand, lane):
    if operand.vectorized:
        return vector.extract(value, [], [lane])
    return value


def clone_body(body, args, index_of):
    """The generic's body on scalars ``args``: the values it yields."""
    mapping = dict(zip(body.arguments, args))
    ops = list(body.operations)
    for op in ops[:-1]:
        op = op.operation
        if op.name == "linalg.index":
            mapping[op.results[0]] = index_of(ir.IntegerAttr(op.attributes["dim"]).value)
            continue
        new = irutil.clone_op(op, [mapping.get(v, v) for v in op.operands], op.location)
        for old, value in zip(op.results, new.results):
            mapping[old] = value
    return [mapping.get(v, v) for v in ops[-1].operation.operands]


def _compute_and_store(p, ivs, loaded, width):
    """Clone the body per lane and store one vector per output."""
    if p.copy:
        (out,) = p.outputs
        vector.store(loaded[0], out.value, _operand_indices(out, ivs),
                     alignment=_alignment(width, out.element))
        return
    body = p.generic.operation.regions[0].blocks[0]
    moved = _moved_inputs(p, body)
    if moved is not None:  # the body only yields inputs: store their vectors
        for out, k in zip(p.outputs, moved):
            vector.store(loaded[k], out.value, _operand_indices(out, ivs),
                         alignment=_alignment(width, out.element))
        return
    operands = p.inputs + p.outputs
    rank = len(p.dims)
    lanes = [[] for _ in p.outputs]
    for lane in range(width):
        args = []
        for k, operand in enumerate(operands):
            if k < len(p.inputs) or p.reads_outputs[k - len(p.inputs)]:
                args.append(_lane(loaded[k], operand, lane))
            else:  # an output the body does not read: any value of its type
                args.append(arith.constant(operand.element, irutil.zero_attr(operand.element)))

        def index_of(d, lane=lane):
            if d >= rank:  # a trailing unit loop
                return _index(0)
            if d != rank - 1 or lane == 0:
                return ivs[d]
            return arith.addi(ivs[d], _index(lane))

        for k, value in enumerate(clone_body(body, args, index_of)):
            lanes[k].append(value)
    for operand, values in zip(p.outputs, lanes):
        vec = vector.from_elements(_vector_type(width, operand.element), values)
        vector.store(vec, operand.value, _operand_indices(operand, ivs),
                     alignment=_alignment(width, operand.element))


def _moved_inputs(p, body):
    """Per output, the input (by position) that the body yields as it is,
    loaded as a vector of the output's type; None unless every output is one
    (a transpose, a permuting copy)."""
    ops = list(body.operations)
    if len(ops) != 1:
        return None
    args = list(body.arguments)
    moved = []
    for value, out in zip(ops[0].operation.operands, p.outputs):
        k = next((i for i, a in enumerate(args[:len(p.inputs)]) if a == value), None)
        if k is None or not p.inputs[k].vectorized or p.inputs[k].element != out.element:
            return None
        moved.append(k)
    return moved


def rewrite(p, width, unroll, threads):
    """Replace the generic of plan ``p`` by its vector loop; returns the new
    ``scf.parallel``."""
    op = p.generic.operation
    counts = list(p.dims[:-1]) + [p.dims[-1] // width]
    vectors = 1
    for c in counts:
        vectors *= c
    per_block = threads * unroll
    blocks = -(-vectors // per_block)
    guarded = vectors % per_block != 0
    with ir.InsertionPoint(op), op.location:
        p = replace(p, inputs=[_squeezed(o) for o in p.inputs],
                    outputs=[_squeezed(o) for o in p.outputs])
        zero, one = _index(0), _index(1)
        loop = scf.ParallelOp([], [zero], [_index(blocks * threads)], [one], [])
        body = loop.regions[0].blocks.append(ir.IndexType.get())
        with ir.InsertionPoint(body):
            terminator = scf.ReduceOp([], 0)
        with ir.InsertionPoint(terminator):
            g = body.arguments[0]
            if unroll == 1:
                linears = [g]
            else:
                base = arith.muli(arith.divui(g, _index(threads)), _index(per_block))
                lane = arith.remui(g, _index(threads))
                linears = [arith.addi(base, arith.addi(lane, _index(u * threads)))
                           if u else arith.addi(base, lane) for u in range(unroll)]
            if guarded:
                for linear in linears:
                    inside = arith.cmpi(arith.CmpIPredicate.ult, linear, _index(vectors))
                    guard = scf.IfOp(inside)
                    with ir.InsertionPoint(guard.then_block):
                        yield_ = scf.YieldOp([])
                    with ir.InsertionPoint(yield_):
                        _one_vector(p, linear, counts, width)
            else:
                # Every load of every vector, then the math and the stores.
                staged = []
                for linear in linears:
                    ivs = _element_indices(linear, counts, width)
                    staged.append((ivs, _loads(p, ivs, width)))
                for ivs, loaded in staged:
                    _compute_and_store(p, ivs, loaded, width)
    op.erase()
    return loop


def _element_indices(linear, counts, width):
    ivs = loops.delinearize(linear, counts)
    if width != 1:
        ivs[-1] = arith.muli(ivs[-1], _index(width))
    return ivs


def _loads(p, ivs, width):
    loaded = [_load(o, ivs, width) for o in p.inputs]
    for operand, reads in zip(p.outputs, p.reads_outputs):
        loaded.append(_load(operand, ivs, width) if reads else None)
    return loaded


def _one_vector(p, linear, counts, width):
    ivs = _element_indices(linear, counts, width)
    _compute_and_store(p, ivs, _loads(p, ivs, width), width)


def vectorize_ops(fn, width, unroll, threads):
    """Rewrite every vectorizable top-level ``linalg.generic`` and
    ``linalg.copy`` of kernel ``fn``; returns (rewritten, total, why the
    first that was not did not). Copies into disjoint parts of one buffer
    (a concat's inputs into its slabs) become one loop (merge_parts)."""
    ops = [op for op in irutil.body(fn).operations
           if op.operation.name in ("linalg.generic", "linalg.copy")]
    done, why, parts = 0, None, []
    for op in ops:
        p, reason = plan_or_reason(op, width)
        if p is not None:
            parts.append((p.outputs[0].value if p.copy else None,
                          [o.value for o in p.inputs], rewrite(p, width, unroll, threads)))
            done += 1
        elif why is None:
            why = reason
    if done == len(ops) and len(parts) > 1 and _disjoint_parts(parts):
        merge_parts([loop for *_, loop in parts], threads)
    return done, len(ops), why


def _subview(value):
    """(source, static offsets, static sizes) of a memref.subview with unit
    strides, or None."""
    op = irutil.defining_op(value)
    if op is None or op.name != "memref.subview" or op.operands[1:]:
        return None
    view = op.opview
    if any(s != 1 for s in view.static_strides):
        return None
    return op.operands[0], list(view.static_offsets), list(view.static_sizes)


def _disjoint_parts(parts):
    """True when every (output, inputs, loop) of ``parts`` is a copy into a
    part of one buffer (a static, unit-stride subview), no two parts share
    an element (their ranges are apart along some dim), and no input is
    that buffer or a view of it: the copies may run in any order, at once."""
    views = [_subview(out) if out is not None else None for out, _, _ in parts]
    if any(v is None for v in views):
        return False
    base = views[0][0]
    if any(v[0] != base for v in views):
        return False
    for out, inputs, _ in parts:
        for value in inputs:
            seen = value
            while True:
                if seen == base:
                    return False
                owner = irutil.defining_op(seen)
                if owner is None or not owner.operands:
                    break
                seen = owner.operands[0]
    for a in range(len(views)):
        for b in range(a + 1, len(views)):
            (_, oa, sa), (_, ob, sb) = views[a], views[b]
            if not any(x + m <= y or y + n <= x for x, m, y, n in zip(oa, sa, ob, sb)):
                return False
    return True


def merge_parts(loops, threads):
    """One ``scf.parallel`` for the 1-D ``loops`` (each over a multiple of
    ``threads`` groups, independent of the others), in place of the last:
    group ``g`` runs loop k's body at ``g - start_k`` where ``start_k <= g <
    start_k + n_k``. Each block's groups lie in one loop's range (the
    distribution gives a block ``threads`` consecutive groups), so a block
    takes one branch: a concat is one launch, not one per input. None (the
    loops left as they are) when a count is not such a multiple."""
    counts = [irutil.constant_int(loop.upperBound[0]) for loop in loops]
    if any(n is None or n % threads for n in counts):
        return None
    last = loops[-1]
    with ir.InsertionPoint(last), last.location:
        merged = scf.ParallelOp([], [_index(0)], [_index(sum(counts))], [_index(1)], [])
        body = merged.regions[0].blocks.append(ir.IndexType.get())
        with ir.InsertionPoint(body):
            place = scf.ReduceOp([], 0)
    g = body.arguments[0]
    start = 0
    for k, (loop, n) in enumerate(zip(loops, counts)):
        with ir.InsertionPoint(place), last.location:
            here = place
            if k + 1 < len(loops):
                branch = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, g, _index(start + n)),
                                  has_else=True)
                with ir.InsertionPoint(branch.then_block):
                    here = scf.YieldOp([])
                with ir.InsertionPoint(branch.else_block):
                    place = scf.YieldOp([])
        with ir.InsertionPoint(here), last.location:
            index = arith.subi(g, _index(start)) if start else g
        old = loop.regions[0].blocks[0]
        old.arguments[0].replace_all_uses_with(index)
        for op in list(old.operations)[:-1]:
            op.move_before(here)
        start += n
    for loop in loops:
        loop.operation.erase()
    return merged
