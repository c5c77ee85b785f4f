"""Which work units the blocks of tc-sm90's fused attention backward
(flash_backward_fused.py) run.

A unit is one kv tile (128 kv rows) of one (batch, kv head) and ``parts``
parts of its group's query heads: with ``parts`` 1 the unit walks all of
the group's query heads and writes dK and dV; with more (grouped heads
only, ``parts`` dividing the group) it walks ``group / parts`` of them and
writes its partial dK and dV, which a later launch sums over the parts in
a fixed order (flash_backward_dq.group_sum).

* ``Persistent``: ``min(units, ctas)`` blocks, each looping over units
  with the producer's ring, the mbarrier phases and the dS tiles' parity
  carried from one unit to the next (flash_backward_fused.py says how).
  Units are numbered in bands of ``band`` kv tiles: band by band, within
  a band head by head, then the band's tiles, then the parts. With a
  causal mask (no window) the bands are BAND tiles wide and the first
  come first: the kv tiles that most query tiles see (the first ones,
  either diagonal alignment), so that the last round, which not every
  block gets, holds the shortest units; and the blocks that run at once
  take BAND neighbouring kv tiles of a head, which read nearly the same
  query tiles of Q and dO (L2). Otherwise one band holds all the kv tiles
  (head by head, the order in which ``OnePerBlock``'s grid launches them).
  Round k gives block b unit ``k grid + b`` (k even) or ``k grid + grid
  - 1 - b`` (k odd): a block that took one of a round's first (longest)
  units takes one of the next round's last.

  Block balance under a cost model of a unit's steps plus two for its K and
  V and its stores (for the three problems of the docs' backward table:
  B4 H16 S4096 D64; causal B16 H16 S1024 D128; causal GQA 64q/8kv S8192
  D128): the longest block's load is 1.03 times the mean in each, where
  one block a unit in launch order gives 1.03, 1.07 and 1.24. (Bands of
  one tile, tile-major, would balance a little better: 1.01 for the GQA
  problem, and over 217 random causal problems of 264 units or more about
  1.02 times the mean load on average against about 1.035 with bands of
  4; but the blocks that run at once would then each read another head's
  Q and dO.)
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

    @staticmethod
    def lt(a, b):
        return _cmp("ult", a, b)

    @staticmethod
    def ge(a, b):
        return _cmp("uge", a, b)

    min = staticmethod(arith.minui)


class IntOps:
    """The same on Python ints: what the tests run the schedule with."""

    const = staticmethod(int)
    add, sub, mul = staticmethod(lambda a, b: a + b), staticmethod(lambda a, b: a - b), \
        staticmethod(lambda a, b: a * b)
    div, rem = staticmethod(lambda a, b: a // b), staticmethod(lambda a, b: a % b)
    select = staticmethod(lambda c, a, b: a if c else b)
    odd = staticmethod(lambda x: x % 2 == 1)
    lt = staticmethod(lambda a, b: a < b)
    ge = staticmethod(lambda a, b: a >= b)
    min = staticmethod(min)


# Kv tiles a band of the causal order holds (``Persistent``).
BAND = 4


class Persistent:
    """``kv_tiles`` x ``heads`` x ``parts`` units over at most ``ctas``
    looping blocks, in bands of ``band`` kv tiles (module docstring)."""

    def __init__(self, kv_tiles, heads, parts, ctas, band):
        self.kv_tiles, self.heads, self.parts = kv_tiles, heads, parts
        self.units = kv_tiles * heads * parts
        self.ctas = min(self.units, ctas)
        self.rounds = -(-self.units // self.ctas)
        self.band = min(band, kv_tiles)

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
        """(head, tile, part) of unit ``u`` (part None with one part). The
        last band holds kv_tiles % band tiles where that is not 0: its
        units divide by other constants, chosen by a select (no division
        by a runtime value: a subroutine call in SASS)."""
        c = ops.const
        whole, tail = divmod(self.kv_tiles, self.band)
        per_band = self.band * self.heads * self.parts
        band = ops.div(u, c(per_band))
        within = ops.sub(u, ops.mul(band, c(per_band)))

        def split(width):
            """(head, tile within the band, part) in a band ``width`` wide."""
            per_head = width * self.parts
            head, rest = ops.div(within, c(per_head)), ops.rem(within, c(per_head))
            return head, ops.div(rest, c(self.parts)), ops.rem(rest, c(self.parts))
        head, tile, part = split(self.band)
        if tail:
            last = ops.lt(band, c(whole))
            head, tile, part = (ops.select(last, a, b)
                                for a, b in zip((head, tile, part), split(tail)))
        tile = ops.add(ops.mul(band, c(self.band)), tile)
        return head, tile, part if self.parts > 1 else None

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
