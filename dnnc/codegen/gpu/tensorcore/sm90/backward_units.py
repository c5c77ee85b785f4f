"""Which work units the blocks of tc-sm90's fused attention backward
(flash_backward_fused.py) run.

A unit is one kv tile (128 kv rows) of one (batch, kv head) and ``parts``
parts of its group's query heads: with ``parts`` 1 the unit walks all of
the group's query heads and writes dK and dV; with more (grouped heads
only, ``parts`` dividing the group) it walks ``group / parts`` of them and
writes its partial dK and dV, which a later launch sums over the parts in
a fixed order (flash_backward_dq.group_sum). Units are numbered
``(tile, head, part)``:

* ``Persistent``: ``min(units, ctas)`` blocks, each looping over units
  with the producer's ring, the mbarrier phases and the dS tiles' parity
  carried from one unit to the next (flash_backward_fused.py says how).
  Round k gives block b unit ``k grid + b`` (k even) or ``k grid + grid
  - 1 - b`` (k odd): a block that took one of a round's first (longest)
  units takes one of the next round's last. With a causal mask the units
  run tile-major, the kv tiles that most query tiles see (the first ones,
  either diagonal alignment) first, so that the last round, which not
  every block gets, holds the shortest; otherwise head-major, the order in
  which ``OnePerBlock``'s grid launches them, so that the blocks that run
  at once read the same few heads' Q and dO (L2).

  Block balance under a cost model of a unit's steps plus two for its K and
  V and its stores (for the three problems of the docs' backward table:
  B4 H16 S4096 D64; causal B16 H16 S1024 D128; causal GQA 64q/8kv S8192
  D128): the longest block's load is 1.03, 1.03 and 1.01 times the mean,
  where one block a unit in launch order gives 1.03, 1.07 and 1.24.
* ``OnePerBlock``: the grid ``(kv tiles, B x Hk x parts)``, a block a unit
  (the form before ``Persistent``, kept selectable: config ``persistent:0``).

Both give the kernel the same contract: ``loop(body, inits)`` calls
``body(k, head, tile, part, *carried)`` for each of the block's units in
order (``k``: how many the block ran before, the parity of its resident
barriers; ``head`` of B x Hk; ``part`` None with one part) and returns the
carried values after the last.
"""

from mlir import ir
from mlir.dialects import arith, gpu, scf

from dnnc.codegen.gpu.tensorcore.emit import cmp as _cmp, for_ as _for, idx as _idx


class IndexOps:
    """The arithmetic ``Persistent`` schedules with, on index values."""

    const = staticmethod(_idx)
    add, sub, mul = staticmethod(arith.addi), staticmethod(arith.subi), staticmethod(arith.muli)
    div, rem, select = staticmethod(arith.divui), staticmethod(arith.remui), \
        staticmethod(arith.select)

    @staticmethod
    def odd(x):
        return _cmp("ne", arith.andi(x, _idx(1)), _idx(0))


class IntOps:
    """The same on Python ints: what the tests run the schedule with."""

    const = staticmethod(int)
    add, sub, mul = staticmethod(lambda a, b: a + b), staticmethod(lambda a, b: a - b), \
        staticmethod(lambda a, b: a * b)
    div, rem = staticmethod(lambda a, b: a // b), staticmethod(lambda a, b: a % b)
    select = staticmethod(lambda c, a, b: a if c else b)
    odd = staticmethod(lambda x: x % 2 == 1)


class Persistent:
    """``kv_tiles`` x ``heads`` x ``parts`` units over at most ``ctas``
    looping blocks, tile-major when ``longest_first`` (module docstring)."""

    def __init__(self, kv_tiles, heads, parts, ctas, longest_first):
        self.kv_tiles, self.heads, self.parts = kv_tiles, heads, parts
        self.units = kv_tiles * heads * parts
        self.ctas = min(self.units, ctas)
        self.rounds = -(-self.units // self.ctas)
        self.longest_first = longest_first

    def grid(self):
        return (self.ctas, 1)

    def position(self, k, block, ops=IndexOps):
        """The unit block ``block`` runs in round ``k`` (past the count in
        a short last round): round k's position of the block, reversed in
        odd rounds."""
        c = ops.const
        at = ops.select(ops.odd(k), ops.sub(c(self.ctas - 1), block), block)
        return ops.add(ops.mul(k, c(self.ctas)), at)

    def unit(self, u, ops=IndexOps):
        """(head, tile, part) of unit ``u`` (part None with one part)."""
        c = ops.const
        part = None
        if self.parts > 1:
            part = ops.rem(u, c(self.parts))
            u = ops.div(u, c(self.parts))
        if self.longest_first:
            tile, head = ops.div(u, c(self.heads)), ops.rem(u, c(self.heads))
        else:
            head, tile = ops.div(u, c(self.kv_tiles)), ops.rem(u, c(self.kv_tiles))
        return head, tile, part

    def loop(self, body, inits):
        block = gpu.block_id(gpu.Dimension.x)
        full = self.rounds * self.ctas == self.units

        def round_(k, *carried):
            u = self.position(k, block)
            if full:
                return body(k, *self.unit(u), *carried)
            # Only the last round may be short: its missing units are past
            # the count.
            op = scf.IfOp(_cmp("ult", u, _idx(self.units)), [x.type for x in carried],
                          has_else=True)
            with ir.InsertionPoint(op.then_block):
                scf.YieldOp(list(body(k, *self.unit(u), *carried)))
            with ir.InsertionPoint(op.else_block):
                scf.YieldOp(list(carried))
            return list(op.results)
        return list(_for(_idx(0), _idx(self.rounds), round_, inits).results)


class OnePerBlock:
    """A block a unit: grid x the kv tile, grid y (batch, kv head) and part."""

    def __init__(self, kv_tiles, heads, parts):
        self.kv_tiles, self.heads, self.parts = kv_tiles, heads, parts
        self.units = kv_tiles * heads * parts
        self.ctas = self.units

    def grid(self):
        return (self.kv_tiles, self.heads * self.parts)

    def loop(self, body, inits):
        y = gpu.block_id(gpu.Dimension.y)
        head, part = y, None
        if self.parts > 1:
            head, part = arith.divui(y, _idx(self.parts)), arith.remui(y, _idx(self.parts))
        return list(body(_idx(0), head, gpu.block_id(gpu.Dimension.x), part, *inits))
