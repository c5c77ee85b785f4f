"""Small IR emitters the tensor-core kernels share (tc-sm90, tc-sm80, the
pair epilogue): constants, casts, comparisons, ``scf.if`` and ``scf.for``,
shared-memory pointers, and the register arithmetic of the attention
kernels (reductions over a quad of lanes, ``ex2``, f32 pairs rounded to a
16-bit type). Each emits at the current insertion point."""

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.math.scalar import intrinsic


def i(n, bits=32):
    """An i``bits`` constant."""
    return arith.constant(ir.IntegerType.get_signless(bits), int(n))


def idx(n):
    """An index constant."""
    return irutil.index(n)


def ptr(space=0):
    """The ``!llvm.ptr`` type of address space ``space`` (3: shared, 1: global)."""
    return ir.Type.parse(f"!llvm.ptr<{space}>" if space else "!llvm.ptr")


def if_(cond, build_then, build_else=None):
    """``scf.if cond`` whose branches ``build_then()`` / ``build_else()`` build
    (no else without one); returns the op."""
    op = scf.IfOp(cond, [], has_else=build_else is not None)
    with ir.InsertionPoint(op.then_block):
        build_then()
        scf.YieldOp([])
    if build_else is not None:
        with ir.InsertionPoint(op.else_block):
            build_else()
            scf.YieldOp([])
    return op


def for_(lower, upper, body, inits=()):
    """scf.for over index [lower, upper) calling body(iv, *iter_args) -> yields."""
    loop = scf.ForOp(lower, upper, idx(1), list(inits))
    with ir.InsertionPoint(loop.body):
        out = body(loop.induction_variable, *loop.inner_iter_args)
        scf.YieldOp(list(out or []))
    return loop


def cmp(pred, a, b):
    """``arith.cmpi`` by predicate name (``"ult"``, ``"eq"``...)."""
    return arith.cmpi(getattr(arith.CmpIPredicate, pred), a, b)


def to_i32(v):
    """An index value as i32."""
    return arith.index_cast(ir.IntegerType.get_signless(32), v)


def to_i64(v):
    """An index value as i64."""
    return arith.index_cast(ir.IntegerType.get_signless(64), v)


def launder(x):
    """``x`` (an i64 or an index) through an opaque move, in the loop that
    uses it: what is derived from it (descriptors, addresses; 64-bit each)
    is then made in the loop, not hoisted and kept in registers across it,
    which a kernel's accumulators need."""
    index = isinstance(x.type, ir.IndexType)
    value = to_i64(x) if index else x
    out = llvm.inline_asm(value.type, [value], "mov.b64 $0, $1;", "=l,l",
                          has_side_effects=True)
    return arith.index_cast(ir.IndexType.get(), out) if index else out


def add(v, n):
    """v + n (an index or i64 value), no op when n is 0."""
    if not n:
        return v
    const = idx(n) if isinstance(v.type, ir.IndexType) else i(n, 64)
    return arith.addi(v, const)


def shared_ptr(address_i64):
    """A shared-memory pointer (``!llvm.ptr<3>``) to an i64 address."""
    return llvm.inttoptr(ptr(3), address_i64)


def shared_base(align=None):
    """The i64 address of the block's dynamic shared memory, rounded up to
    a multiple of ``align`` bytes when given (the room for that is the
    kernel's to reserve)."""
    raw = gpu.dynamic_shared_memory(ir.MemRefType.get(
        [ir.ShapedType.get_dynamic_size()], ir.IntegerType.get_signless(8),
        memory_space=ir.Attribute.parse("#gpu.address_space<workgroup>")))
    base = to_i64(memref.extract_aligned_pointer_as_index(raw))
    if align:
        base = arith.andi(arith.addi(base, i(align - 1, 64)), i(-align, 64))
    return base


def erase_replaced(ops, keep=()):
    """Erase the ops of a kernel function body a launch replaced, last
    first, each once nothing uses it; constants stay (cloned bodies may use
    them; canonicalize drops the rest), and so do the ops in ``keep``."""
    for op in reversed(ops):
        if op.name != "arith.constant" and \
                not any(True for r in op.results for _ in r.uses) and \
                not any(op == kept for kept in keep):
            op.erase()


def launch(grid, threads, shared, body):
    """A gpu.launch of ``grid`` blocks (x, y, and z when given) of ``threads``
    threads with ``shared`` bytes of dynamic shared memory, whose body
    ``body()`` emits."""
    z = grid[2] if len(grid) > 2 else 1
    op = gpu.LaunchOp((idx(grid[0]), idx(grid[1]), idx(z)), (idx(threads), idx(1), idx(1)),
                      dynamic_shared_memory_size=i(shared))
    with ir.InsertionPoint(op.regions[0].blocks[0]):
        body()
        gpu.TerminatorOp()
    return op


def f32(x):
    """An f32 constant."""
    return arith.constant(ir.F32Type.get(), float(x))


def tree(op, values):
    """``op`` over ``values`` as a balanced tree."""
    while len(values) > 1:
        values = [op(values[j], values[j + 1]) if j + 1 < len(values) else values[j]
                  for j in range(0, len(values), 2)]
    return values[0]


def quad(op, x):
    """``op`` of ``x`` over the 4 lanes of a quad (lanes 4g .. 4g + 3: the
    threads that hold one row of an mma.sync or wgmma accumulator)."""
    i32 = ir.IntegerType.get_signless(32)
    for mask in (1, 2):
        other = gpu.ShuffleOp(x, arith.constant(i32, mask), arith.constant(i32, 32),
                              gpu.ShuffleMode.XOR).results[0]
        x = op(x, other)
    return x


def ex2(x):
    """2^x, the hardware's ex2.approx.ftz."""
    return intrinsic("llvm.nvvm.ex2.approx.ftz.f", x)


def pair(lo, hi, element):
    """Two f32 values rounded to ``element`` (bf16, f16), packed in an i32
    (``lo`` in the low half): one 32-bit register of a 16-bit A fragment
    (wgmma's or mma.sync's)."""
    narrow_type = ir.BF16Type.get() if element == "bf16" else ir.F16Type.get()
    t = ir.F32Type.get()
    both = vector.from_elements(ir.VectorType.get([2], t), [lo, hi])
    narrow = arith.truncf(ir.VectorType.get([2], narrow_type), both)
    return llvm.bitcast(ir.IntegerType.get_signless(32), narrow)
