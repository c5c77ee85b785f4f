"""Small IR emitters the tensor-core kernels share (tc-sm90, tc-sm80, the
pair epilogue): constants, casts, comparisons, ``scf.if`` and ``scf.for``,
shared-memory pointers. Each emits at the current insertion point."""

from mlir import ir
from mlir.dialects import arith, llvm, scf

from dnnc.codegen.gpu import irutil


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


def add(v, n):
    """v + n (an index or i64 value), no op when n is 0."""
    if not n:
        return v
    const = idx(n) if isinstance(v.type, ir.IndexType) else i(n, 64)
    return arith.addi(v, const)


def shared_ptr(address_i64):
    """A shared-memory pointer (``!llvm.ptr<3>``) to an i64 address."""
    return llvm.inttoptr(ptr(3), address_i64)
