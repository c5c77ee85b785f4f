"""Two reductions of a split row merged in one exchange (rowsplit.py).

A row program's second reduction often reads the first one's result: a
softmax sums exp(x - max), a layernorm sums (x - mean)^2. Split over a
cluster, each would be an exchange of the blocks' partials, a cluster
barrier with nothing else to do. Where the second reduction is one of the
two forms below, each block instead folds it around its own partial of the
first (the block's max, the block's mean) and the blocks exchange both
partials at once; the row's value of the second is then the blocks'
partials moved to the row's first value, in rank order (the same bits in
every block):

* **shifted sum** (softmax, log_softmax): the first is a max ``m``, the
  second a sum of ``exp(a - g(m))`` where ``a`` is the max's own term and
  ``g`` any function of ``m`` alone (softmax's -inf guard). A block sums
  ``s_q = sum exp(a - g(m_q))`` over its part, so the row's sum is
  ``sum_q s_q exp(g(m_q) - g(m))``; a block whose sum is 0 (all of its
  ``a`` at -inf) adds 0, never 0 * inf. A full-row ``exp(a - g(m))`` that
  the block holds is scaled by its block's factor, not recomputed.
* **centred squares** (layernorm, Chan et al.): the first is a sum ``s``,
  the second a sum of ``(a - s c)^2`` or ``(a - s / c)^2`` where ``a`` is
  the sum's own term (``s c`` the mean). A block of ``n = N / C`` of the
  row's positions (every block the same: the row is not ragged) centres
  its squares on its own mean ``(C s_q) c``, so the row's sum is
  ``sum_q v_q + n (mean_q - mean)^2`` (and a cross term, about 0, that
  keeps it exact for any centre). A full-row ``a - mean`` that the block
  holds moves by its block's mean less the row's.

A staged split row folds centred squares in the same pass as the sum
(rowsplit._StagedRow.fold_centred): each vector's squares about its own
mean, merged with ``chan`` into the block's squares about the block's mean,
which ``recentred`` moves to the block's shift.

``plan`` finds the pair by looking at the linalg bodies; the emission is
rowsplit._SplitRow's. Lit test: test/lit/passes/dnn_reduce_rows_split.mlir.
"""

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, math

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.reduce import rowwise

_MAX = ("arith.maximumf", "arith.maxnumf")


@dataclass
class Merge:
    """The second reduction ``second`` of ``kind`` ("shifted" or "centred")
    after ``first``; ``shift`` computes, in ``body``, the value that the
    first's result ``arg`` shifts the terms by; ``scaled`` is the full-row
    statement whose held values a block moves to the row's shift rather
    than evaluate again: a shifted sum's ``exp(a - g(m))`` (multiplied by
    the block's factor), centred squares' ``a - mean`` (plus the block's
    mean less the row's)."""

    kind: str
    first: object
    second: object
    body: object
    arg: object
    shift: object
    scaled: object = None

    def at(self, value):
        """The shift for the first's result ``value`` (a clone of its ops)."""
        return _clone(self.shift, {self.arg: value}, {})


def _owner(value):
    op = irutil.defining_op(value)
    return None if op is None else op


def _operand(stmt, value):
    """(buffer, exprs) that ``stmt``'s body argument ``value`` reads, or None
    when ``value`` is not one of its arguments."""
    if not irutil.is_block_argument(value):
        return None
    arg = ir.BlockArgument(value)
    if arg.owner != stmt.op.regions[0].blocks[0]:
        return None
    return stmt.operands[arg.arg_number], tuple(stmt.exprs[arg.arg_number])


def _uses(value, stmt, buffers):
    """True when ``value``, in ``stmt``'s body, depends on an argument that
    reads one of ``buffers``."""
    read = _operand(stmt, value)
    if read is not None:
        return read[0] in buffers
    op = _owner(value)
    if op is None or op.parent != stmt.op:
        return False  # defined outside the body
    return any(_uses(v, stmt, buffers) for v in op.operands)


def _memory_only(value, stmt, args, written):
    """True when ``value`` depends on kernel arguments that no statement
    writes, and on values from outside the body, only."""
    read = _operand(stmt, value)
    if read is not None:
        return read[0] in args and read[0] not in written
    op = _owner(value)
    if op is None or op.parent != stmt.op:
        return not irutil.is_block_argument(value)
    return not op.regions and all(_memory_only(v, stmt, args, written) for v in op.operands)


def _same(x, sx, y, sy):
    """True when ``x`` in ``sx``'s body and ``y`` in ``sy``'s compute the
    same value: the same ops on the same reads."""
    rx, ry = _operand(sx, x), _operand(sy, y)
    if rx is not None or ry is not None:
        return rx == ry
    ox, oy = _owner(x), _owner(y)
    inside_x = ox is not None and ox.parent == sx.op
    inside_y = oy is not None and oy.parent == sy.op
    if not (inside_x and inside_y):
        return not inside_x and not inside_y and x == y
    attrs = lambda op: sorted((a.name, str(a.attr)) for a in
                              (op.attributes[i] for i in range(len(op.attributes))))
    return (ox.name == oy.name and attrs(ox) == attrs(oy)
            and len(ox.operands) == len(oy.operands)
            and all(_same(a, sx, b, sy) for a, b in zip(ox.operands, oy.operands)))


def _clone(value, mapping, done):
    """``value`` computed again at the insertion point, with ``mapping``'s
    values in place of its keys."""
    if value in mapping:
        return mapping[value]
    if value in done:
        return done[value]
    op = _owner(value)
    if op is None or op.parent.name != "linalg.generic":
        return value  # defined outside the body
    new = irutil.clone_op(op, [_clone(v, mapping, done) for v in op.operands])
    for old, v in zip(op.results, new.results):
        done[old] = v
    return done[value]


def _yield(stmt):
    return list(stmt.op.regions[0].blocks[0].operations)[-1].operation.operands[0]


def _term(stmt):
    """The value a reduction combines into its accumulator."""
    acc = list(stmt.op.regions[0].blocks[0].arguments)[-1]
    op = _owner(_yield(stmt))
    a, b = op.operands
    return b if a == acc else a


def _argument(stmt, buffer):
    """``stmt``'s body argument that reads ``buffer`` as a per-row value."""
    for k, b in enumerate(stmt.operands[:-1]):
        if b == buffer and stmt.exprs[k][-1] is None:
            return stmt.op.regions[0].blocks[0].arguments[k]
    return None


def plan(statements, first, outputs, last_writes, args, ragged):
    """The Merge of reduction ``first`` with the next reduction, or None
    (kernel arguments ``args``, of which ``outputs`` are written; the last
    statement writing each buffer, ``last_writes``)."""
    try:
        name, _ = rowwise.combiner(first.op)
    except rowwise.NotARowProgram:
        return None
    result = first.operands[-1]
    if result in outputs:
        return None
    at = next(k for k, s in enumerate(statements) if s is first)
    written = {s.operands[-1] for s in statements}
    writers = {}  # buffer -> the statement writing it last, since first
    second = None
    live = True  # result holds the first's value (a fill may overwrite it)
    for s in statements[at + 1:]:
        if s.kind == "copy":
            if live and result in s.operands:
                return None
            writers[s.operands[-1]] = s
            continue
        if s.reduction:
            second = s
            break
        reads = live and result in s.operands[:-1]
        stored = s.operands[-1] in outputs and last_writes[s.operands[-1]] is s
        if reads and (stored or s.inner == 1 or s.exprs[-1][-1] is None):
            return None  # the first's result read by a per-row value or a stored one
        if s.operands[-1] == result:
            live = False
        writers[s.operands[-1]] = s
    if second is None or not live and second.operands[-1] != result:
        return None  # (a fill of result for anything but the second: keep it simple)
    try:
        if rowwise.combiner(second.op)[0] != "arith.addf":
            return None
    except rowwise.NotARowProgram:
        return None
    term = _term(first)
    if not _memory_only(term, first, args, written):
        return None

    def virtual(value):
        """The statement since ``first`` whose full-row output ``value`` (an
        argument of the second's body) reads, or None."""
        read = _operand(second, value)
        if read is None or read[1][-1] is None:
            return None
        s = writers.get(read[0])
        return s if s is not None and s.kind == "generic" and not s.reduction else None

    def difference(stmt, value):
        """(a, b) of ``value = a - b`` in ``stmt``'s body, ``a`` the first's
        term and ``b`` a function of the first's result alone, or None."""
        op = _owner(value)
        if op is None or op.name != "arith.subf":
            return None
        a, b = op.operands
        arg = _argument(stmt, result)
        if arg is None or not _same(a, stmt, term, first) or _uses(a, stmt, {result}):
            return None
        if not _uses(b, stmt, {result}) or not _only(b, stmt, arg):
            return None
        return arg, b

    t = _term(second)
    if name in _MAX:
        # exp(a - g(m)) in the second's body, or in a statement it reads.
        forms = []
        if (s := virtual(t)) is not None:
            op = _owner(_yield(s))
            if op is not None and op.name == "math.exp":
                forms.append((s, op.operands[0], s))
        op = _owner(t)
        if op is not None and op.name == "math.exp":
            if (s := virtual(op.operands[0])) is not None:
                forms.append((s, _yield(s), None))
            else:
                forms.append((second, op.operands[0], None))
        for stmt, value, scaled in forms:
            if (found := difference(stmt, value)) is not None:
                return Merge("shifted", first, second, stmt, found[0], found[1], scaled)
        return None
    if name != "arith.addf" or ragged:
        return None
    # (a - mean)^2, mean = s c or s / c, in the second's body or read.
    op = _owner(t)
    if op is None or op.name != "arith.mulf" or op.operands[0] != op.operands[1]:
        return None
    d = op.operands[0]
    stmt, value = (s, _yield(s)) if (s := virtual(d)) is not None else (second, d)
    found = difference(stmt, value)
    if found is None:
        return None
    arg, b = found
    mean = _owner(b)
    if mean is None or mean.name not in ("arith.mulf", "arith.divf"):
        return None
    x, c = mean.operands
    if mean.name == "arith.mulf" and x != arg:
        x, c = c, x
    if x != arg or irutil.constant_scalar(c) is None:
        return None
    return Merge("centred", first, second, stmt, arg, b, stmt if stmt is not second else None)


def _only(value, stmt, arg):
    """True when ``value`` in ``stmt``'s body depends on no argument but
    ``arg``."""
    if irutil.is_block_argument(value):
        return value == arg or _operand(stmt, value) is None
    op = _owner(value)
    if op is None or op.parent != stmt.op:
        return True
    return not op.regions and all(_only(v, stmt, arg) for v in op.operands)


def shifted_total(merge, init, parts, sums, first_name):
    """The row's shifted sum from the blocks' max partials ``parts`` and
    sums ``sums``, in rank order; with the row's max. (max, sum)."""
    top = parts[0]
    for p in parts[1:]:
        top = rowwise.combine(first_name, top, p)
    m = rowwise.combine(first_name, init, top)
    shift = merge.at(m)
    total = None
    for p, s in zip(parts, sums):
        term = moved(merge, rowwise.combine(first_name, init, p), shift, s)
        total = term if total is None else arith.addf(total, term)
    return m, total, shift


def moved(merge, m, shift, s):
    """``s``, a sum of exp(a - g(m)), as the sum of exp(a - shift): 0 where
    ``s`` is (all of its terms at -inf, whatever the factor)."""
    zero = arith.constant(s.type, ir.FloatAttr.get(s.type, 0.0))
    factor = math.exp(arith.subf(merge.at(m), shift))
    empty = arith.cmpf(arith.CmpFPredicate.OEQ, s, zero)
    return arith.select(empty, zero, arith.mulf(s, factor))


def centred_total(merge, init, sums, squares, blocks, n):
    """The row's sum (``init`` plus the blocks' ``sums``) and its centred
    squares from the blocks' ``squares``, each centred on its block's
    shift ``h_q`` (``block_shift``; a block holds ``n`` positions), in rank
    order: ``sum_q v_q + 2 (h_q - h) (s_q - n h_q) + n (h_q - h)^2``, whose
    middle term is about 0 (``h_q`` is the block's mean). (sum, squares)."""
    total = sums[0]
    for s in sums[1:]:
        total = arith.addf(total, s)
    total = arith.addf(init, total)
    mean = merge.at(total)
    f32 = total.type
    count = arith.constant(f32, ir.FloatAttr.get(f32, float(n)))
    two = arith.constant(f32, ir.FloatAttr.get(f32, 2.0))
    out = None
    for s, v in zip(sums, squares):
        h = merge.at(block_sum(init, s, blocks))
        d = arith.subf(h, mean)
        off = arith.subf(s, arith.mulf(count, h))  # the block's sum of a - h_q
        term = arith.addf(arith.addf(v, arith.mulf(two, arith.mulf(d, off))),
                          arith.mulf(count, arith.mulf(d, d)))
        out = term if out is None else arith.addf(out, term)
    return total, out


def chan(first, second):
    """Two folds of centred squares merged (Chan, Golub and LeVeque): each
    of ``first`` and ``second`` is (sum of the terms, sum of their squares
    centred on their own mean, count), a count a Python number or an f32
    value; the squares of the union centre on the union's mean:
    ``v1 + v2 + (s2 / n2 - s1 / n1)^2 n1 n2 / (n1 + n2)``. Only the
    difference of the means is squared, so terms far from 0 lose nothing
    to cancellation. A count of 0 (an empty first) adds nothing. (sum,
    squares, count)."""
    (s1, v1, n1), (s2, v2, n2) = first, second
    f32 = s1.type

    def value(n):
        if isinstance(n, ir.Value):
            return n
        return arith.constant(f32, ir.FloatAttr.get(f32, float(n)))

    def mean(s, n):
        if isinstance(n, ir.Value):
            # 0 / 0 at an empty fold: divide by 1 instead (its sum is 0).
            one = value(1)
            return arith.divf(s, arith.maximumf(n, one))
        return arith.mulf(s, value(1.0 / n))

    d = arith.subf(mean(s2, n2), mean(s1, n1))
    if isinstance(n1, ir.Value) or isinstance(n2, ir.Value):
        n = arith.addf(value(n1), value(n2))
        weight = arith.divf(arith.mulf(value(n1), value(n2)), n)
    else:
        n = n1 + n2
        weight = value(n1 * n2 / n)
    v = arith.addf(arith.addf(v1, v2), arith.mulf(arith.mulf(d, d), weight))
    return arith.addf(s1, s2), v, n


def recentred(merge, init, s, v, n, blocks):
    """A block's centred squares ``v`` of its ``n`` terms, which centre on
    their own mean ``s / n``, moved to the block's shift ``h`` that
    centred_total reads (``merge.at`` of block_sum: the same mean but for
    rounding, or an accumulator's initial value): ``v + n (s / n - h)^2``."""
    f32 = s.type
    d = arith.subf(arith.mulf(s, arith.constant(f32, ir.FloatAttr.get(f32, 1.0 / n))),
                   merge.at(block_sum(init, s, blocks)))
    return arith.addf(v, arith.mulf(arith.constant(f32, ir.FloatAttr.get(f32, float(n))),
                                    arith.mulf(d, d)))


def block_sum(init, s, blocks):
    """The row's sum as block partial ``s`` estimates it (``blocks`` times
    it), whose shift is the block's mean where the row's is the row's."""
    scale = arith.constant(s.type, ir.FloatAttr.get(s.type, float(blocks)))
    return arith.addf(init, arith.mulf(s, scale))
