"""What a tensor-core kernel computes: a kernel function read as one GEMM
plus the pointwise work fused before and after it.

After bufferization a matmul kernel (dnn-fuse's group: matmul, then its
pointwise consumers) is a short list of ``linalg.generic`` ops on buffers::

    fill      C[m, n] = 0                        (C: an f32 buffer)
    contract  C[m, n] += ext(A[m, k]) * ext(B[k, n])   (or B[n, k], A[k, m])
              (or ext(f(A[m, k])) with f a pointwise prologue that dnn-fuse
              joined and linalg's elementwise fusion moved into the body:
              ``Prologue``, one per operand)
              (f32 operands: a * b, or tf32(a) * tf32(b) for a matmul whose
              compute type is tf32: ``Gemm.compute``)
    epilogue  Y[m, n] = f(C[m, n], bias[0, n], R[m, n], ...)   (zero or more)
    amax      fill a = 0; a = max(a, |Y[m, n]|) over all m, n      (zero or more,
              anywhere among the epilogue's ops: ``Epilogue.amax``)

Operands are bf16, f16, f32, or fp8 (e4m3 and e5m2 in any pairing:
``Gemm.fp8``). ``match`` recognizes that shape and returns a ``Gemm``: the operands with
the side their K runs along (the layout the operand loaders need), the
problem size, and the ``Epilogue``: the elementwise generics after the
contraction in program order, which the kernel builders evaluate on each
accumulator value in registers. Anything else (a reduction that is not a
plain multiply-accumulate, a prologue on f32 operands, a generic
that reads C through a transposing map, reshapes between the ops) raises
``NotAGemm`` with the reason, before any IR is changed; the lowering pass
then leaves the kernel to simt-generic and says so in its reason.

This module is the seam between the linalg level and every tensor-core
strategy: tc-sm90 (dnnc/codegen/gpu/tensorcore/sm90/) and tc-sm80
(dnnc/codegen/gpu/tensorcore/sm80/) read a ``Gemm``, and an
implicit-GEMM convolution or an attention kernel would hand it one too (with
their own operand loaders).
"""

from dataclasses import dataclass, field

from mlir import ir

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.elementwise.vectorize import broadcast_exprs, identity_layout
from dnnc.dialect.ops_matmul import SCALE_BLOCK

# Element types the tensor cores multiply, and what the kernel names them.
TC_ELEMENTS = ("bf16", "f16", "f32")
# fp8 operands a matmul may multiply, in any pairing (e4m3 x e5m2 too:
# wgmma's fp8 forms take the two types independently). Only tc-sm90 takes
# them (sm90/support.py); convolutions keep to TC_ELEMENTS.
FP8_ELEMENTS = ("f8E4M3FN", "f8E5M2")


class NotAGemm(Exception):
    """The kernel is not a GEMM with a pointwise epilogue; the message says why."""


@dataclass
class Prologue:
    """The pointwise ops a GEMM applies to each element of one operand as it
    loads it, before the multiply: a slice of the contraction's body from the
    operand's block argument (an element as stored, of type ``source``) to
    the value the multiply extends to f32 (of the multiplied type). The
    operand loader of a tensor-core kernel runs ``apply`` on the elements of
    each tile it loads, between the global load and the multiply."""

    argument: object         # the body's block argument of the operand
    ops: list                # the body ops from it to ``result``, in program order
    result: object           # what the multiply's extf reads

    @property
    def source(self):
        return str(self.argument.type)

    def apply(self, value):
        """The ops cloned at the insertion point on the scalar ``value`` (an
        element as stored); returns the element to multiply."""
        mapping = {self.argument: value}
        for op in self.ops:
            new = irutil.clone_op(op, [mapping.get(v, v) for v in op.operands], op.location)
            mapping.update(zip(op.results, new.results))
        return mapping[self.result]


@dataclass
class Operand:
    """One GEMM input: the buffer and which of its dims are batch, M (or N)
    and K. ``k_major``: K is the innermost (contiguous) dim, the layout the
    tensor cores read without a transpose. ``element`` is the type the
    tensor cores multiply; with a ``prologue`` the buffer holds ``stored``
    elements that the prologue turns into it."""

    value: object            # the memref (a kernel function argument)
    dims: dict               # "batch" / "mn" / "k" -> buffer dim (batch: None if broadcast)
    element: str             # "bf16", "f16", "f32", "f8E4M3FN", "f8E5M2"
    prologue: Prologue = None
    # With several batch dims (``Gemm.batch_shape``): the buffer dim of each,
    # outermost first, None where the operand is broadcast along it; then
    # dims["batch"] is None and the loaders address the batch through these.
    batches: tuple = None

    @property
    def stored(self):
        """The element type of the buffer."""
        return str(ir.MemRefType(self.value.type).element_type)

    @property
    def k_major(self):
        """K is contiguous in memory: the innermost dim of a row-major buffer,
        or a strided one whose K stride is 1 (a graph input declared with
        transposed strides, such as a linear layer's weight read as K x N)."""
        t = ir.MemRefType(self.value.type)
        if identity_layout(t):
            return self.dims["k"] == t.rank - 1
        _, strides, _ = irutil.memref_geometry(t)
        return strides[self.dims["k"]] == 1


@dataclass
class Step:
    """One elementwise generic of the epilogue."""

    op: object               # the linalg.generic
    inputs: list             # (value, exprs): exprs per buffer dim: loop dim or None (0)
    outputs: list            # the buffers it writes (identity map)


@dataclass
class Epilogue:
    """The pointwise work after the contraction, as the kernel builders see it.

    ``accumulator`` is the buffer the contraction writes (C). Each step reads
    C, kernel arguments (bias, residual, scale...) and earlier steps' outputs,
    and writes its outputs; a written buffer that is a kernel argument (an
    output of the kernel) is stored, any other (an intermediate allocation)
    lives in registers only. C itself is stored when it is a kernel argument.
    """

    accumulator: object
    steps: list = field(default_factory=list)
    # The buffers the kernel stores, where they are not kernel arguments
    # (views of them: an implicit GEMM's, conv.py); None: the arguments written.
    outputs: list = None
    # {[M, N] view: (pixel view, radices of the row[, of the column, of the
    # batch])}: the views a stride phase of a data gradient reads and writes
    # instead (tensorcore/phases.py), and those an implicit GEMM reads an
    # input through whose dims do not flatten (a split view:
    # conv_views.Views._split); pair_epilogue.at addresses them. None: the
    # buffers as they are.
    pixels: dict = None
    # [(buffer, output)]: the amax (the largest |value|, NaN if any is NaN)
    # of every element of C or of a step's output ``buffer``, into the
    # kernel's one-element ``output`` (zero before the GEMM), which dnn-fuse
    # joined beside the chain (``_amax_step``).
    amax: list = field(default_factory=list)

    def stored(self, arguments):
        """The buffers the kernel must store: outputs that are in ``arguments``."""
        if self.outputs is not None:
            return list(self.outputs)
        out = [self.accumulator] if self.accumulator in arguments else []
        for step in self.steps:
            out += [v for v in step.outputs if v in arguments and v not in out]
        return out


@dataclass
class BlockScales:
    """The f32 scales of a block-scaled fp8 GEMM (dnn.matmul_block_scaled):
    ``a`` M x ceil(K / block), one per row of A and K block; ``b``
    ceil(K / block) x ceil(N / block), one per block x block block of B.
    The kernel sums each K block's products apart, then adds them to the
    accumulator scaled by a[m, kb] * b[kb, n / block]."""

    a: object                # the memref of A's scales (a kernel argument)
    b: object                # the memref of B's scales (a kernel argument)
    block: int = 128


@dataclass
class Gemm:
    a: Operand
    b: Operand
    m: int
    n: int
    k: int
    batch: int               # 1: not batched
    epilogue: Epilogue
    # What the multiply sees: "f32" (bf16, f16 and plain f32 operands are
    # multiplied exactly), or "tf32" when the contraction rounds both f32
    # operands to tf32 first (a matmul with compute_type tf32).
    compute: str = "f32"
    # C's batch dims, outermost first, where there are several (two batch
    # dims broadcast against each other: [2, 1, M, K] @ [3, K, N]); ``batch``
    # is their product, the kernels' flat batch index running over them
    # row-major. None: one batch dim or none.
    batch_shape: tuple = None
    # Block scales (dnn.matmul_block_scaled); None: a plain product.
    scales: BlockScales = None

    @property
    def element(self):
        return self.a.element

    @property
    def fp8(self):
        """Both operands are fp8 (FP8_ELEMENTS; their types may differ)."""
        return self.a.element in FP8_ELEMENTS and self.b.element in FP8_ELEMENTS


def _iterators(op):
    return ["parallel" if irutil.is_parallel(i) else "reduction"
            for i in ir.ArrayAttr(op.attributes["iterator_types"])]


def _is_zero_fill(op):
    """A generic that only writes a 0.0 constant into its one output."""
    if len(op.operands) != 1 or not all(i == "parallel" for i in _iterators(op)):
        return False
    body = irutil.body_ops(op)
    if len(body) != 1 or body[0].name != "linalg.yield":
        return False
    value = irutil.constant_scalar(body[0].operands[0])
    return value == 0.0


# The ops of dnnc.codegen.linalg.contraction.round_tf32 on one operand, in
# order: bitcast, round to nearest even at bit 13 (shrui, andi, addi, addi,
# andi), keep inf / NaN (andi, cmpi, select), bitcast back.
TF32_ROUNDING = ("arith.bitcast", "arith.shrui", "arith.andi", "arith.addi", "arith.addi",
                 "arith.andi", "arith.andi", "arith.cmpi", "arith.select", "arith.bitcast")


def _tf32_source(value):
    """The f32 value that ``value`` rounds to tf32 (round_tf32's exact
    pattern and constants), or None."""
    def op_of(v, name):
        op = irutil.defining_op(v)
        return op if op is not None and op.name == name else None

    def const(v, number):
        return irutil.constant_int(v) == number

    out = op_of(value, "arith.bitcast")
    select = None if out is None else op_of(out.operands[0], "arith.select")
    if select is None:
        return None
    finite, rounded, bits = select.operands
    cast = op_of(bits, "arith.bitcast")
    cmp = op_of(finite, "arith.cmpi")
    mask = op_of(rounded, "arith.andi")
    if cast is None or cmp is None or mask is None or not const(mask.operands[1], -0x2000):
        return None
    exponent = op_of(cmp.operands[0], "arith.andi")
    if exponent is None or exponent.operands[0] != bits \
            or not const(exponent.operands[1], 0x7F800000) \
            or not const(cmp.operands[1], 0x7F800000):
        return None
    total = op_of(mask.operands[0], "arith.addi")
    if total is None:
        return None
    half = op_of(total.operands[0], "arith.addi")
    lsb = op_of(total.operands[1], "arith.andi")
    shift = None if lsb is None else op_of(lsb.operands[0], "arith.shrui")
    if half is None or shift is None or half.operands[0] != bits \
            or not const(half.operands[1], 0xFFF) or not const(lsb.operands[1], 1) \
            or shift.operands[0] != bits or not const(shift.operands[1], 13):
        return None
    return cast.operands[0]


def _cone(value, order):
    """(the body ops ``value`` depends on, in program order; the block
    arguments it reads). ``order``: the body's ops -> position; values
    defined outside the body (constants) are read as they are."""
    cone, arguments, todo = set(), set(), [value]
    while todo:
        v = todo.pop()
        if irutil.is_block_argument(v):
            arguments.add(v)
            continue
        op = irutil.defining_op(v)
        if op in order and op not in cone:
            cone.add(op)
            todo.extend(op.operands)
    return sorted(cone, key=order.__getitem__), arguments


def _contraction_body(op, elements):
    """Check the body is acc + ext(f(a)) * ext(g(b)) (f, g: prologues, or
    none) for bf16 / f16 multiplies and fp8 ones (e4m3 and e5m2 in any
    pairing), acc + a * b or acc + tf32(a) * tf32(b) for f32; returns (what the multiply sees (``Gemm.compute``): "tf32" for
    the rounded form, else "f32"; the element each side multiplies; the
    Prologue of each side)."""
    body = irutil.body_ops(op)
    names = [o.name for o in body]
    if names[-3:] != ["arith.mulf", "arith.addf", "linalg.yield"]:
        raise NotAGemm("the contraction body does not end in a multiply-accumulate")
    block = op.regions[0].blocks[0]
    a, b, acc = list(block.arguments)
    mul, add = body[-3], body[-2]
    if add.operands[0] != acc and add.operands[1] != acc:
        raise NotAGemm("the contraction does not accumulate into its output")
    if add.operands[0] != mul.results[0] and add.operands[1] != mul.results[0]:
        raise NotAGemm("the contraction does not accumulate the product")
    extended = [irutil.defining_op(v) for v in mul.operands]
    extended = all(e is not None and e.name == "arith.extf" for e in extended)
    if not extended and elements != ("f32", "f32"):
        raise NotAGemm(f"operand types {elements[0]} x {elements[1]} multiplied in f32 without "
                       "an extension of both")
    if not extended and len(body) > 3:
        sources = {_tf32_source(mul.operands[0]), _tf32_source(mul.operands[1])}
        if sources != {a, b}:
            raise NotAGemm("the contraction body is not a * b or tf32(a) * tf32(b): "
                           "a prologue on f32 operands")
        return "tf32", ("f32", "f32"), (None, None)
    if not extended:
        if {mul.operands[0], mul.operands[1]} != {a, b}:
            raise NotAGemm("the contraction body is not a * b")
        return "f32", ("f32", "f32"), (None, None)
    order = {o: i for i, o in enumerate(body)}
    sides = {}
    for v in mul.operands:
        value = irutil.defining_op(v).operands[0]
        ops, arguments = _cone(value, order)
        if len(arguments) == 1 and arguments <= {a, b}:
            sides[arguments.pop()] = (value, ops)
    multiplied, prologues = [], []
    for argument, name in ((a, "A"), (b, "B")):
        if argument not in sides:
            raise NotAGemm(f"the contraction body does not multiply ext({name}) by the "
                           "other operand")
        value, ops = sides[argument]
        for inner in ops:
            if inner.regions and len(inner.regions) or inner.name == "linalg.index":
                raise NotAGemm(f"'{inner.name}' in the prologue of {name}: expected "
                               "elementwise ops of the element alone")
        multiplied.append(str(value.type))
        prologues.append(Prologue(argument, ops, value) if ops else None)
    fp8 = all(t in FP8_ELEMENTS for t in multiplied)
    if not fp8 and (multiplied[0] != multiplied[1] or multiplied[0] not in ("bf16", "f16")):
        raise NotAGemm(f"the contraction multiplies {multiplied[0]} x {multiplied[1]}: "
                       "expected both bf16, both f16, or both fp8 (f8E4M3FN, f8E5M2)")
    inside = set(o for p in prologues if p for o in p.ops)
    extra = [o for o in body[:-3] if o.name != "arith.extf" and o not in inside]
    if extra or len(body) - 3 - len(inside) != 2:
        raise NotAGemm("the contraction body computes more than the operands' prologues")
    return "f32", tuple(multiplied), tuple(prologues)


# The body of a block-scaled contraction (contraction.lower_matmul_block_scaled):
# acc + (ext(a) * ext(b)) * (s * t).
SCALED_BODY = ["arith.extf", "arith.extf", "arith.mulf", "arith.mulf", "arith.mulf",
               "arith.addf", "linalg.yield"]


def _block_scales(op, maps, block):
    """The BlockScales of a contraction generic of four inputs (a, b, a's
    scales, b's scales) whose body is SCALED_BODY; raises NotAGemm."""
    a_val, b_val, sa_val, sb_val, _ = list(op.operands)
    if len(maps[0].results) != 2 or len(maps[1].results) != 2:
        raise NotAGemm("a block-scaled contraction with batch dims: expected 2-D operands")
    k = ir.AffineDimExpr.get(2)
    kb = ir.AffineFloorDivExpr.get(k, ir.AffineConstantExpr.get(block))
    nb = ir.AffineFloorDivExpr.get(ir.AffineDimExpr.get(1), ir.AffineConstantExpr.get(block))
    want = (ir.AffineMap.get(3, 0, [ir.AffineDimExpr.get(0), kb]),
            ir.AffineMap.get(3, 0, [kb, nb]))
    for name, got, expected in (("A's scales", maps[2], want[0]),
                                ("B's scales", maps[3], want[1])):
        if got != expected:
            raise NotAGemm(f"{name} map {got}: expected {expected}")
    for name, value in (("A's scales", sa_val), ("B's scales", sb_val)):
        t = ir.MemRefType(value.type)
        if str(t.element_type) != "f32" or not identity_layout(t):
            raise NotAGemm(f"{name}: expected a row-major f32 buffer, got {t}")
    body = irutil.body_ops(op)
    if [o.name for o in body] != SCALED_BODY:
        raise NotAGemm("the block-scaled contraction body is not acc + (a * b) * (s * t)")
    x, y, s, t, acc = list(op.regions[0].blocks[0].arguments)
    ext_a, ext_b, product, scale, scaled, add, _ = body
    if ext_a.operands[0] != x or ext_b.operands[0] != y \
            or list(product.operands) != [ext_a.results[0], ext_b.results[0]] \
            or list(scale.operands) != [s, t] \
            or list(scaled.operands) != [product.results[0], scale.results[0]] \
            or list(add.operands) != [acc, scaled.results[0]]:
        raise NotAGemm("the block-scaled contraction body is not acc + (a * b) * (s * t)")
    return BlockScales(sa_val, sb_val, block)


def _contraction(op, block_scaled=False):
    """(A Operand, B Operand, m, n, k, batch shape, C, compute) of a
    contraction generic: loops [batch...,] M, N parallel and K reduction."""
    iterators = _iterators(op)
    rank = len(iterators)
    if rank < 3 or iterators[:-1] != ["parallel"] * (rank - 1) \
            or iterators[-1] != "reduction":
        raise NotAGemm(f"iterators {iterators}: expected [batch...,] M, N parallel and K "
                       "reduction, innermost")
    maps = irutil.indexing_maps(op)
    scales = None
    if len(maps) == 5:
        if not block_scaled:
            raise NotAGemm("block scales (dnn.matmul_block_scaled): only tc-sm90 applies them")
        scales = _block_scales(op, maps, SCALE_BLOCK)
        operands = list(op.operands)
        a_val, b_val, c_val = operands[0], operands[1], operands[4]
        maps = [maps[0], maps[1], maps[4]]
    else:
        a_val, b_val, c_val = list(op.operands)
    exprs = []
    for value, amap in zip((a_val, b_val, c_val), maps):
        e = [r.position if isinstance(r, ir.AffineDimExpr) else None for r in amap.results]
        if any(x is None and not (isinstance(r, ir.AffineConstantExpr) and r.value == 0)
               for x, r in zip(e, amap.results)):
            raise NotAGemm(f"operand map {amap} is not a projection")
        exprs.append(e)
    batch_loops = list(range(rank - 3))
    m_dim, n_dim, k_dim = rank - 3, rank - 2, rank - 1
    if exprs[2] != list(range(rank - 1)):
        raise NotAGemm(f"the accumulator map {maps[2]} is not the identity over [batch,] M, N")

    def operand(value, e, mn_dim, name):
        side = "M" if name == "A" else "N"
        used = [x for x in e if x is not None]
        if mn_dim not in used or k_dim not in used or len(set(used)) != len(used) \
                or any(x not in batch_loops + [mn_dim, k_dim] for x in used):
            raise NotAGemm(f"{name} is not indexed by ([batch...,] {side}, K) in some order")
        t = ir.MemRefType(value.type)
        if any(x is None and n != 1 for x, n in zip(e, t.shape)):
            raise NotAGemm(f"{name} has a broadcast dim of size other than 1")
        batches = tuple(e.index(b) if b in used else None for b in batch_loops)
        dims = {"mn": e.index(mn_dim), "k": e.index(k_dim),
                "batch": batches[0] if len(batches) == 1 else None}
        return Operand(value, dims, str(t.element_type),
                       batches=batches if len(batches) > 1 else None)

    a = operand(a_val, exprs[0], m_dim, "A")
    b = operand(b_val, exprs[1], n_dim, "B")
    c_type = ir.MemRefType(c_val.type)
    if str(c_type.element_type) != "f32":
        raise NotAGemm(f"accumulator type {c_type.element_type}: expected f32")
    if scales is not None:
        compute = "f32"
    else:
        compute, (a.element, b.element), (a.prologue, b.prologue) = _contraction_body(
            op, (a.element, b.element))
    fp8 = a.element in FP8_ELEMENTS and b.element in FP8_ELEMENTS
    if scales is not None and not fp8:
        raise NotAGemm(f"block-scaled operands {a.element} x {b.element}: expected fp8")
    if not fp8 and (a.element != b.element or a.element not in TC_ELEMENTS):
        raise NotAGemm(f"operand types {a.element} x {b.element}: expected both bf16, "
                       "f16 or f32, or both fp8")
    shape = list(c_type.shape)
    ta = ir.MemRefType(a_val.type)
    k = ta.shape[a.dims["k"]]
    return a, b, shape[-2], shape[-1], k, tuple(shape[:-2]), c_val, compute, scales


def _epilogue_step(op, rank, c_shape):
    """The Step of an elementwise generic after the contraction."""
    iterators = _iterators(op)
    if len(iterators) != rank or any(i != "parallel" for i in iterators):
        raise NotAGemm("an op after the contraction is not elementwise over its output")
    for inner in irutil.body_ops(op):
        if inner.regions and len(inner.regions):
            raise NotAGemm(f"'{inner.name}' with regions in the epilogue")
        if inner.name == "linalg.index":
            raise NotAGemm("the epilogue reads its loop indices")
    maps = irutil.indexing_maps(op)
    values = list(op.operands)
    block = op.regions[0].blocks[0]
    ins_count = len(op.opview.inputs)
    inputs, outputs = [], []
    for i, (value, amap) in enumerate(zip(values, maps)):
        t = ir.MemRefType(value.type)
        exprs = broadcast_exprs(amap)
        if exprs is None or len(exprs) != t.rank:
            raise NotAGemm(f"epilogue operand map {amap} is not a broadcast")
        if i < ins_count:
            # An input of any strides is read where its strides say (a
            # pair or 16-byte load only where its rows allow one:
            # pair_epilogue.vector_ok).
            inputs.append((value, exprs))
        else:
            if not identity_layout(t):
                raise NotAGemm("an epilogue output has a strided layout")
            if exprs != list(range(rank)) or list(t.shape) != c_shape:
                raise NotAGemm("an epilogue output is not written whole")
            if any(True for _ in list(block.arguments)[i].uses):
                raise NotAGemm("an epilogue op reads its output")
            outputs.append(value)
    return Step(op, inputs, outputs)


def _fill_value(op):
    """The constant an all-parallel generic without inputs writes into its
    one output (a linalg fill), or None."""
    if len(op.operands) != 1 or not all(i == "parallel" for i in _iterators(op)):
        return None
    body = irutil.body_ops(op)
    if len(body) != 1 or body[0].name != "linalg.yield":
        return None
    return irutil.constant_scalar(body[0].operands[0])


def _amax_step(op, rank):
    """(the buffer it reads, its output) of an amax over every element of a
    [batch,] M x N buffer: a generic reducing all ``rank`` dims whose body
    is max(out, |in|) (NaN-propagating, as math.absf and arith.maximumf
    are), into an output of one element; None for any other op."""
    iterators = _iterators(op)
    if len(iterators) != rank or any(i != "reduction" for i in iterators) \
            or len(op.operands) != 2:
        return None
    maps = irutil.indexing_maps(op)
    if [r.position if isinstance(r, ir.AffineDimExpr) else None
            for r in maps[0].results] != list(range(rank)):
        return None
    if any(not (isinstance(r, ir.AffineConstantExpr) and r.value == 0) for r in maps[1].results):
        return None
    body = irutil.body_ops(op)
    if [o.name for o in body] != ["math.absf", "arith.maximumf", "linalg.yield"]:
        return None
    x, out = list(op.regions[0].blocks[0].arguments)
    absf, maximum, done = body
    if absf.operands[0] != x or set(maximum.operands) != {out, absf.results[0]} \
            or done.operands[0] != maximum.results[0]:
        return None
    return op.operands[0], op.operands[1]


def match(fn, block_scaled=False):
    """The ``Gemm`` of kernel function ``fn``; raises NotAGemm. A
    block-scaled contraction (``Gemm.scales``) matches only for a caller
    that applies the scales (``block_scaled``: tc-sm90)."""
    ops = [o.operation for o in irutil.body(fn).operations]
    generics = [o for o in ops if o.name == "linalg.generic"]
    others = [o for o in ops if o.name not in ("linalg.generic", "memref.alloc", "arith.constant",
                                                "func.return", "memref.dealloc")]
    if others:
        raise NotAGemm(f"'{others[0].name}' in the kernel")
    # (An amax of the epilogue reduces every dim: not the contraction.)
    reductions = [g for g in generics if "reduction" in _iterators(g)
                  and "parallel" in _iterators(g)]
    if len(reductions) != 1:
        raise NotAGemm(f"{len(reductions)} reductions: expected one contraction")
    contraction = reductions[0]
    a, b, m, n, k, batch_shape, c, compute, scales = _contraction(contraction, block_scaled)
    position = generics.index(contraction)
    before, after = generics[:position], generics[position + 1:]
    if len(before) != 1 or not _is_zero_fill(before[0]) or before[0].operands[0] != c:
        raise NotAGemm("the accumulator is not filled with zeros right before the contraction")
    arguments = list(irutil.body(fn).arguments)
    for value in [a.value, b.value] + ([scales.a, scales.b] if scales else []):
        if value not in arguments:
            raise NotAGemm("a GEMM operand is computed inside the kernel")
    c_shape = list(ir.MemRefType(c.type).shape)
    epilogue = Epilogue(c)
    known = {c}
    # Fills of an amax's output (its zero: |x| >= 0), matched with the amax.
    fills = {op: op.operands[0] for op in after if _fill_value(op) == 0.0
             and op.operands[0] in arguments}
    for op in after:
        if op in fills:
            continue
        amax = _amax_step(op, len(c_shape))
        if amax is not None:
            source, output = amax
            if source not in known or output not in fills.values() or output not in arguments:
                raise NotAGemm("an amax that reads no epilogue value, or whose output is no "
                               "kernel output filled with zero")
            epilogue.amax.append(amax)
            continue
        step = _epilogue_step(op, len(c_shape), c_shape)
        if any(source in step.outputs for source, _ in epilogue.amax):
            raise NotAGemm("an epilogue op overwrites the value an amax reads")
        for value, exprs in step.inputs:
            if value in known and exprs != list(range(len(c_shape))):
                raise NotAGemm("the epilogue reads the accumulator through a broadcast")
            if value not in known and value not in arguments:
                raise NotAGemm("the epilogue reads a buffer computed before the GEMM")
        known.update(step.outputs)
        epilogue.steps.append(step)
    if set(fills.values()) != {output for _, output in epilogue.amax}:
        raise NotAGemm("a kernel output filled with zero that no amax reduces into")
    for alloc in (o for o in ops if o.name == "memref.alloc"):
        if alloc.results[0] not in known:
            raise NotAGemm("an allocation the GEMM does not write")
    if not epilogue.stored(arguments):
        raise NotAGemm("the kernel stores nothing")
    batch = 1
    for size in batch_shape:
        batch *= size
    return Gemm(a, b, m, n, k, batch, epilogue, compute,
                batch_shape if len(batch_shape) > 1 else None, scales)
