"""The simt-pointwise strategy: an elementwise ``linalg.generic`` on buffers
becomes a loop over 16-byte vectors (dnn-vectorize-pointwise).

A thread handles ``unroll`` vectors of ``vector`` consecutive elements along
the innermost dim. The rewrite of one generic, in steps:

1. ``plan`` checks that the generic is vectorizable and says how each operand
   is read: every loop parallel; every operand an identity-layout buffer whose
   indexing map keeps the loop order (each result a loop dim or the constant
   0 of a broadcast); outputs indexed by the identity map; the innermost dim a
   multiple of ``vector``. An operand that runs along the innermost loop is
   loaded as a ``vector<V x T>``; one that is broadcast along it is loaded as
   a scalar and used by every lane. Anything else: ``None`` (the generic stays
   for convert-linalg-to-parallel-loops, one thread per element).
2. ``rewrite`` replaces the generic by a 1-D ``scf.parallel`` over groups of
   ``unroll`` vectors. dnn-distribute-loops gives each thread of a block of
   ``T`` threads one group: vector ``u`` of group ``g`` is
   ``(g / T) * T * unroll + u * T + g % T``, so that at every ``u`` the
   threads of a warp read consecutive vectors (coalesced). When the vector
   count is not a multiple of ``T * unroll`` each vector is guarded.
3. Per vector: every load first (all of a thread's vectors are in flight at
   once), then the body of the generic, cloned once per lane on scalars
   extracted from the vectors, then one ``vector.store`` per output. The
   loads and stores carry ``alignment = V * element bytes``: the runtime
   checks that every tensor's address is 16-byte aligned, the workspace puts
   intermediates at 256-byte offsets, and a row of a multiple of V elements
   keeps every vector aligned.

NVPTX turns each aligned ``vector<8 x bf16>`` load into one
``ld.global.v4.b32``.
"""

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, memref, scf, vector

from dnnc.codegen.gpu import irutil, loops


@dataclass
class Operand:
    value: object        # the buffer
    exprs: list          # per buffer dim: loop dim index, or None (constant 0)
    vectorized: bool     # runs along the innermost loop: loaded as a vector
    element: object      # the element type


@dataclass
class Plan:
    generic: object
    dims: list           # loop extents
    inputs: list         # Operand per input
    outputs: list        # Operand per output
    reads_outputs: list  # per output: the body reads its current value


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


def plan(generic, width):
    """How to vectorize ``generic`` by ``width`` elements, or None."""
    op = generic.operation
    iterators = list(ir.ArrayAttr(op.attributes["iterator_types"]))
    rank = len(iterators)
    if rank == 0 or not all(irutil.is_parallel(i) for i in iterators):
        return None
    if any(len(r.blocks) != 1 for r in op.regions):
        return None
    maps = irutil.indexing_maps(op)
    n_in = len(generic.inputs)
    values = list(generic.inputs) + list(generic.outputs)
    if len(maps) != len(values) or any(m.n_symbols for m in maps):
        return None
    dims = [None] * rank
    operands = []
    for i, (value, amap) in enumerate(zip(values, maps)):
        if not identity_layout(value.type):
            return None
        t = ir.MemRefType(value.type)
        exprs = broadcast_exprs(amap)
        if exprs is None or len(exprs) != t.rank:
            return None
        for d, size in zip(exprs, t.shape):
            if d is not None:
                if dims[d] not in (None, size):
                    return None
                dims[d] = size
        if i >= n_in and exprs != list(range(rank)):
            return None  # outputs are written whole, one vector at a time
        operands.append(Operand(value, exprs, bool(exprs) and exprs[-1] == rank - 1,
                                t.element_type))
    if any(d is None for d in dims) or dims[-1] % width:
        return None
    body = op.regions[0].blocks[0]
    for inner in list(body.operations)[:-1]:
        if len(inner.operation.regions):
            return None
    out_args = list(body.arguments)[n_in:]
    reads = [any(True for _ in arg.uses) for arg in out_args]
    return Plan(generic, dims, operands[:n_in], operands[n_in:], reads)


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
    body = p.generic.operation.regions[0].blocks[0]
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
            if d != rank - 1 or lane == 0:
                return ivs[d]
            return arith.addi(ivs[d], _index(lane))

        for k, value in enumerate(clone_body(body, args, index_of)):
            lanes[k].append(value)
    for operand, values in zip(p.outputs, lanes):
        vec = vector.from_elements(_vector_type(width, operand.element), values)
        vector.store(vec, operand.value, _operand_indices(operand, ivs),
                     alignment=_alignment(width, operand.element))


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


def vectorize_function(fn, width, unroll, threads):
    """Rewrite every vectorizable top-level generic of kernel ``fn``; returns
    (rewritten, total) generic counts."""
    generics = [op for op in irutil.body(fn).operations
                if op.operation.name == "linalg.generic"]
    done = 0
    for generic in generics:
        p = plan(generic, width)
        if p is not None:
            rewrite(p, width, unroll, threads)
            done += 1
    return done, len(generics)
