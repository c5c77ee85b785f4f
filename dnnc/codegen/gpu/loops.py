"""Loop rewrites of the simt-generic strategy (dnn-distribute-loops).

* ``distribute(loop, threads)``: an N-d ``scf.parallel`` becomes two nested
  1-d ``scf.parallel`` loops, blocks outside and threads inside, over the
  row-major linear index of the N-d iteration space, guarded by
  ``index < total``; ``gpu-map-parallel-loops`` maps them to block x and
  thread x and ``convert-parallel-loops-to-gpu`` makes the launch.
* ``serialize(loop)``: an ``scf.parallel`` nested inside a distributed loop
  becomes ``scf.for`` loops (each thread runs it alone).
* ``single_thread(ops)``: top-level compute outside any parallel loop (a
  rank-0 result, a full reduction to one element) is wrapped into a
  one-iteration ``scf.parallel``, so it runs in a kernel too.

Loop bodies are moved, not cloned: their ops keep their identity and the
induction variables are replaced by the recomputed indices.
"""

from mlir import ir
from mlir.dialects import arith, scf

from dnnc.codegen.gpu import irutil
from dnnc.errors import UnsupportedError


_index = irutil.index


def _parallel(upper_bounds):
    """An empty ``scf.parallel`` from 0 to ``upper_bounds`` step 1 (body
    terminated) at the current insertion point."""
    zero, one = _index(0), _index(1)
    loop = scf.ParallelOp([], [zero] * len(upper_bounds), [_index(n) for n in upper_bounds],
                          [one] * len(upper_bounds), [])
    block = loop.regions[0].blocks.append(*[ir.IndexType.get()] * len(upper_bounds))
    with ir.InsertionPoint(block):
        scf.ReduceOp([], 0)
    return loop, block


def _move_body(source, before):
    """Move every op of ``source`` (a block) but its terminator before ``before``."""
    ops = list(source.operations)
    for op in ops[:-1]:
        op.operation.move_before(before)


def static_bounds(loop):
    """(lower bounds, upper bounds, steps) of an scf.parallel or scf.for, as ints."""
    n = len(loop.regions[0].blocks[0].arguments) if loop.name == "scf.parallel" else 1
    operands = list(loop.operands)
    values = [irutil.constant_int(v) for v in operands[:3 * n]]
    if any(v is None for v in values):
        raise UnsupportedError(f"simt-generic: '{loop.name}' with dynamic bounds at "
                               f"{loop.location}: only static shapes are supported")
    return values[:n], values[n:2 * n], values[2 * n:3 * n]


def trip_counts(loop):
    lbs, ubs, steps = static_bounds(loop)
    return [max(0, -(-(ub - lb) // st)) for lb, ub, st in zip(lbs, ubs, steps)]


def distribute(loop, threads):
    """Replace the N-d ``scf.parallel`` ``loop`` by blocks x threads over its
    linearized iteration space. Returns the number of blocks (0: the loop ran
    no iteration and was erased)."""
    lbs, _, steps = static_bounds(loop)
    counts = trip_counts(loop)
    total = 1
    for c in counts:
        total *= c
    if total == 0:
        loop.erase()
        return 0
    blocks = -(-total // threads)
    old = loop.regions[0].blocks[0]
    with ir.InsertionPoint(loop), loop.location:
        outer, outer_body = _parallel([blocks])
        with ir.InsertionPoint.at_block_terminator(outer_body):
            inner, inner_body = _parallel([threads])
        with ir.InsertionPoint.at_block_terminator(inner_body):
            # linear = block * threads + thread; the last block is partial.
            linear = arith.addi(arith.muli(outer_body.arguments[0], _index(threads)),
                                inner_body.arguments[0])
            inside = arith.cmpi(arith.CmpIPredicate.ult, linear, _index(total))
            guard = scf.IfOp(inside)
            with ir.InsertionPoint(guard.then_block):
                terminator = scf.YieldOp([])
            with ir.InsertionPoint(terminator):
                ivs = delinearize(linear, counts, lbs, steps)
    for arg, iv in zip(old.arguments, ivs):
        arg.replace_all_uses_with(iv)
    _move_body(old, terminator)
    loop.erase()
    return blocks


def delinearize(linear, counts, lbs=None, steps=None):
    """Row-major indices of ``linear`` over ``counts``, scaled by the steps
    and shifted by the lower bounds (the original induction variables)."""
    lbs = lbs or [0] * len(counts)
    steps = steps or [1] * len(counts)
    ivs = [None] * len(counts)
    rest = linear
    for k in reversed(range(len(counts))):
        if counts[k] == 1:
            i = _index(0)
        elif k == 0:
            i = rest
        else:
            i = arith.remui(rest, _index(counts[k]))
            rest = arith.divui(rest, _index(counts[k]))
        if steps[k] != 1:
            i = arith.muli(i, _index(steps[k]))
        if lbs[k] != 0:
            i = arith.addi(i, _index(lbs[k]))
        ivs[k] = i
    return ivs


def serialize(loop):
    """Replace an ``scf.parallel`` without results by nested ``scf.for`` loops."""
    if len(loop.results):
        raise UnsupportedError(f"simt-generic: scf.parallel with reductions at {loop.location}")
    n = len(loop.regions[0].blocks[0].arguments)
    operands = list(loop.operands)
    lbs, ubs, steps = operands[:n], operands[n:2 * n], operands[2 * n:3 * n]
    old = loop.regions[0].blocks[0]
    ip = ir.InsertionPoint(loop)
    ivs = []
    with loop.location:
        for lb, ub, st in zip(lbs, ubs, steps):
            with ip:
                f = scf.ForOp(lb, ub, st)
            with ir.InsertionPoint(f.body):
                terminator = scf.YieldOp([])
            ivs.append(f.induction_variable)
            ip = ir.InsertionPoint(terminator)
    for arg, iv in zip(old.arguments, ivs):
        arg.replace_all_uses_with(iv)
    _move_body(old, terminator)
    loop.erase()


def single_thread(ops):
    """Wrap consecutive top-level ``ops`` into a one-iteration scf.parallel."""
    first = ops[0]
    for op in ops:
        for result in op.results:
            for use in result.uses:
                user = use.owner.operation
                if not any(_encloses(o, user) for o in ops):
                    raise UnsupportedError(f"simt-generic: '{op.name}' on the host computes "
                                           "a value used outside its kernel")
    with ir.InsertionPoint(first), first.location:
        loop, block = _parallel([1])
    terminator = list(block.operations)[-1]
    for op in ops:
        op.move_before(terminator)
    return loop.operation


def _encloses(op, other):
    while other is not None:
        if other == op:
            return True
        other = other.parent
        if other is not None and other.name == "func.func":
            return False
    return False
