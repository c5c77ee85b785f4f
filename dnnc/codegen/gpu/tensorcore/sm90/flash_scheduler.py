"""tc-sm90's attention forward scheduler: which query tiles a persistent
block runs (sm90/flash.py with ``FlashTile.persistent``).

A work unit is one query tile (``tile.m`` rows) of one (batch, head), or
under a causal mask two of them; the grid is ``min(units, ctas)`` blocks,
one an SM (scheduler.PERSISTENT_CTAS), and block b takes units b, b +
ctas, b + 2 ctas... in order::

    not causal   unit u: tile u % tiles of head u / tiles (b x H + h), the
                 old grid's order: the units in flight (ctas of them) share
                 ctas / tiles heads, whose K and V stay in L2.
    causal       unit u: pair p = u % pairs of head u / pairs, pairs =
                 ceil(tiles / 2): tile tiles - 1 - p, the longer, then tile
                 p (the middle tile alone where tiles is odd, last of its
                 head). Tile t sees t + 1 kv tiles (plus the bottom-right
                 shift), so every pair costs tiles + 1 steps: the units are
                 equal, and the blocks' static shares are even to within
                 one unit, which a longest-first order of single tiles dealt
                 round robin is not (its blocks' sums differ by up to a
                 round's longest minus its shortest tile, every round).
                 Heads stay in the same order, so the units in flight still
                 share few heads.

A block's items are the tiles it runs, two a unit under a causal mask
(the second skipped where the pair is the middle tile), one otherwise;
only the last round of units may hold none for some blocks. The loop
carries the count of tiles the block has run, whose parity the Q tile's
barriers take.

The index arithmetic is written once (``tiles_of``) over ``Ints``: Python
ints for the tests (``tiles_for``), or index values for the kernel
(``Values``), so both walk the same order.
"""

from mlir import ir
from mlir.dialects import arith, gpu, scf

from dnnc.codegen.gpu.tensorcore.emit import add as _add, cmp as _cmp, idx as _idx
from dnnc.codegen.gpu.tensorcore.sm90.scheduler import PERSISTENT_CTAS


class Ints:
    """The arithmetic ``tiles_of`` needs, on Python ints."""

    @staticmethod
    def div(a, b):
        return a // b

    @staticmethod
    def rem(a, b):
        return a % b

    @staticmethod
    def add(a, b):
        return a + b

    @staticmethod
    def sub(a, b):
        return a - b

    @staticmethod
    def mul(a, b):
        return a * b

    @staticmethod
    def less(a, b):
        return a < b

    @staticmethod
    def both(a, b):
        return a and b

    @staticmethod
    def select(c, a, b):
        return a if c else b


class Values(Ints):
    """The same on index values (divisors and other right-hand sides are
    Python ints: no runtime division lands in the kernel)."""

    @staticmethod
    def div(a, b):
        return arith.divui(a, _idx(b))

    @staticmethod
    def rem(a, b):
        return arith.remui(a, _idx(b))

    @staticmethod
    def add(a, b):
        return arith.addi(a, b if isinstance(b, ir.Value) else _idx(b))

    @staticmethod
    def sub(a, b):
        a = a if isinstance(a, ir.Value) else _idx(a)
        return arith.subi(a, b if isinstance(b, ir.Value) else _idx(b))

    @staticmethod
    def mul(a, b):
        return arith.muli(a, _idx(b))

    @staticmethod
    def less(a, b):
        return _cmp("ult", a, b if isinstance(b, ir.Value) else _idx(b))

    @staticmethod
    def both(a, b):
        return arith.andi(a, b)

    @staticmethod
    def select(c, a, b):
        if c.type != ir.IntegerType.get_signless(1):  # an index: nonzero
            c = _cmp("ne", c, _idx(0))
        return arith.select(c, a, b)


class FlashScheduler:
    """The work units of attention ``att`` in query tiles of ``rows`` rows
    over at most ``ctas`` persistent blocks (module docstring)."""

    def __init__(self, att, rows, ctas=PERSISTENT_CTAS):
        self.tiles = -(-att.sq // rows)
        self.heads = att.batch * att.heads
        self.causal = bool(att.causal)
        # Tile pairs a head under a causal mask, else its tiles.
        self.per_head = -(-self.tiles // 2) if self.causal else self.tiles
        self.units = self.per_head * self.heads
        self.ctas = min(self.units, ctas)
        self.rounds = -(-self.units // self.ctas)
        self.items = 2 if self.causal else 1   # tiles a unit

    def tiles_of(self, i, block, ops=Ints):
        """(valid, query tile, b x H + h) of block ``block``'s item ``i``:
        item i % items of unit (i / items) x ctas + block, which must exist
        and, for the second tile of a pair, not be the middle tile."""
        r = ops.div(i, self.items) if self.causal else i
        u = ops.add(ops.mul(r, self.ctas), block)
        valid = ops.less(u, self.units)
        head, p = ops.div(u, self.per_head), ops.rem(u, self.per_head)
        if not self.causal:
            return valid, p, head
        longer = ops.sub(self.tiles - 1, p)
        second = ops.rem(i, 2)
        # The second tile is p, unless it is the longer one (the middle).
        tile = ops.select(second, p, longer)
        return ops.both(valid, ops.select(second, ops.less(p, longer), valid)), tile, head

    def tiles_for(self, block):
        """Python side: block ``block``'s (query tile, head) in the order
        it runs them."""
        out = []
        for i in range(self.rounds * self.items):
            valid, tile, head = self.tiles_of(i, block)
            if valid:
                out.append((tile, head))
        return out

    def loop(self, body, inits):
        """Emit the block's loop over its tiles: ``body(count, tile, head,
        *iter_args)`` -> new iter_args for each (index values; ``count``
        the tiles the block ran before). Every role of a block walks the
        same tiles in the same order. One body for both tiles of a pair:
        ptxas spilled from the consumers' two copies of it."""
        block = gpu.block_id(gpu.Dimension.x)

        def item(i, count, *args):
            valid, tile, head = self.tiles_of(i, block, Values)
            if self.units % self.ctas == 0 and not self.causal:
                return [_add(count, 1)] + list(body(count, tile, head, *args) or [])
            op = scf.IfOp(valid, [count.type] + [a.type for a in args], has_else=True)
            with ir.InsertionPoint(op.then_block):
                scf.YieldOp([_add(count, 1)] + list(body(count, tile, head, *args) or []))
            with ir.InsertionPoint(op.else_block):
                scf.YieldOp([count] + list(args))
            return list(op.results)
        loop = scf.ForOp(_idx(0), _idx(self.rounds * self.items), _idx(1),
                         [_idx(0)] + list(inits))
        with ir.InsertionPoint(loop.body):
            scf.YieldOp(item(loop.induction_variable, *loop.inner_iter_args))
        return loop

    def note(self):
        """What the plan says of the schedule."""
        what = ("pairs of query tiles (the last and the first left of a head: equal work "
                "under the causal mask, the longer first)" if self.causal
                else "query tiles")
        return (f"persistent: {self.ctas} blocks take {self.units} units round robin, "
                f"{what}, head by head")
