"""tc-sm90's tile scheduler: which work units a persistent block runs.

A work unit is a ``BM x BN`` tile of C in one batch and, with split-K, one
of its K splits (a tile's splits are consecutive units). The grid is
``min(units, ctas)`` blocks; block b runs units b, b + grid, b + 2 grid...
(``loop``), and within a batch the tiles run in grouped order
(``grouped``: GROUP_M tiles of M down a column of N tiles, so that the B
columns a group reads stay in L2).

With a tail split (the tile's ``tail_split`` S >= 2), the tiles of the
last, partial wave are split along K over the blocks that wave would leave
idle (a data-parallel and split-K hybrid, like stream-K's "DP + SK" with
whole splits): of T tiles over P blocks, the first ``whole`` = floor(T /
P) P run whole, one a unit, and each of the ``tail_tiles`` others as
``tail_parts`` consecutive units of ``tail_per_split`` K steps (as many
parts as S, the P blocks (tail_tiles x parts <= P) and the K steps, none
empty, allow). Units 0 .. whole - 1 are whole tiles; unit whole + t parts
+ s is split s of tail tile t (tile whole + t). Every block runs T / P
whole tiles, then at most one part. The loop's body gets a fourth K-step
entry, ``(tail, tail tile)``: an i1 true for a part of a tail tile, and t
(tail_split.py sums the parts).

The producer and the consumers of a block each run ``loop`` with their own
body; since they walk the same units in the same order, the K steps the
producer loads are the ones the consumers wait for. A scheduler for another
kernel (attention's query blocks, a causal mask's uneven work) replaces this
class and keeps ``loop``'s contract (see dnnc/codegen/gpu/tensorcore/__init__.py).
"""

from mlir import ir
from mlir.dialects import arith, gpu, scf

from dnnc.codegen.gpu.tensorcore.emit import cmp as _cmp, idx as _idx
from dnnc.codegen.gpu.tensorcore.sm90.backward_units import IndexOps, IntOps

GROUP_M = 8            # tiles of M per group in the grouped (L2-friendly) tile order
# Persistent blocks: one per SM of an H100 SXM / H200 (132; one block fits an
# SM). A part with fewer SMs runs the rest as a second partial wave.
PERSISTENT_CTAS = 132


class TileScheduler:
    """The work units of ``gemm`` in ``tile``s, over at most ``ctas`` blocks."""

    def __init__(self, gemm, tile, ctas):
        self.batch = gemm.batch
        self.steps = -(-gemm.k // tile.k)
        self.tiles_m = -(-gemm.m // tile.m)
        self.tiles_n = -(-gemm.n // tile.n)
        self.total_tiles = self.tiles_m * self.tiles_n * gemm.batch
        # Split-K: each split takes ``per_split`` consecutive K steps; no
        # split is left empty (7 steps over 4 splits of 2 run as 4, 8 steps
        # over 3 of 3 as 3).
        self.per_split = -(-self.steps // max(1, tile.splits)) if self.steps else 0
        self.splits = -(-self.steps // self.per_split) if self.per_split else 1
        self.units = self.total_tiles * self.splits
        self.max_ctas = ctas
        self._tail_split(tile.tail_split, ctas)
        self.ctas = min(self.units, ctas)

    def _tail_split(self, asked, ctas):
        """The tail split's geometry (module docstring): ``whole`` tiles,
        ``tail_tiles`` split into ``tail_parts`` parts of ``tail_per_split``
        K steps. ``tail_parts`` 1 (and the units as without) where the
        tiles fill their waves or do not fill one, K has a single step, or
        the idle blocks hold no second part of each tail tile."""
        self.whole, self.tail_tiles, self.tail_parts, self.tail_per_split = \
            self.total_tiles, 0, 1, self.steps
        if asked < 2 or self.splits > 1 or self.steps < 2:
            return
        whole = self.total_tiles // ctas * ctas
        tail = self.total_tiles - whole
        # Fewer tiles than blocks (no whole tile) is split-K's case (the
        # config's split), whose sums the kernel runs without the branch.
        parts = min(asked, ctas // tail, self.steps) if tail and whole else 1
        if parts < 2:
            return
        # Equal runs of steps, none empty (as split-K's).
        per_split = -(-self.steps // parts)
        self.whole, self.tail_tiles = whole, tail
        self.tail_parts, self.tail_per_split = -(-self.steps // per_split), per_split
        self.units = whole + tail * self.tail_parts

    def drop_tail_split(self):
        """Run every tile whole after all (the units as without a tail
        split)."""
        self.whole, self.tail_tiles, self.tail_parts, self.tail_per_split = \
            self.total_tiles, 0, 1, self.steps
        self.units = self.total_tiles * self.splits
        self.ctas = min(self.units, self.max_ctas)

    @property
    def tail_split(self):
        """Whether the last wave's tiles run split (``tail_parts`` > 1)."""
        return self.tail_parts > 1

    def tail_unit(self, u, ops=IntOps):
        """(tile, first K step, end, split, tail, tail tile) of unit ``u``
        under a tail split: ``tail`` whether it is a part of a tail tile
        (then ``split`` its part and ``tail tile`` t, the tile whole + t);
        a whole tile runs every step as split 0 (its tail tile is not
        used). ``ops``: IntOps on Python ints (the tests), IndexOps on
        index values (the kernel)."""
        c = ops.const
        beyond = ops.sub(u, c(self.whole))
        tail_tile = ops.div(beyond, c(self.tail_parts))
        split = ops.rem(beyond, c(self.tail_parts))
        first = ops.mul(split, c(self.tail_per_split))
        end = ops.min(ops.add(first, c(self.tail_per_split)), c(self.steps))
        tile = ops.add(c(self.whole), tail_tile)
        tail = ops.ge(u, c(self.whole))
        return (ops.select(tail, tile, u), ops.select(tail, first, c(0)),
                ops.select(tail, end, c(self.steps)), ops.select(tail, split, c(0)),
                tail, tail_tile)

    def loop(self, body, inits):
        """The persistent loop over work units: block b takes units b, b +
        grid, ...; a unit is a tile and, with split-K, one of its K splits
        (the splits of a tile are consecutive units). ``body(batch, tile_m,
        tile_n, (first K step, end, split), *iter_args)`` -> new iter_args;
        with a tail split the K steps' tuple holds (tail, tail tile) fourth
        (tail_unit)."""
        def step(u, *args):
            if self.tail_split:
                return tail_step(u, *args)
            t = arith.divui(u, _idx(self.splits)) if self.splits > 1 else u
            per_batch = self.tiles_m * self.tiles_n
            batch = arith.divui(t, _idx(per_batch)) if self.batch > 1 else _idx(0)
            within = arith.remui(t, _idx(per_batch)) if self.batch > 1 else t
            tile_m, tile_n = self.grouped(within)
            if self.splits > 1:
                split = arith.remui(u, _idx(self.splits))
                first = arith.muli(split, _idx(self.per_split))
                end = arith.minui(arith.addi(first, _idx(self.per_split)), _idx(self.steps))
            else:
                first, end, split = _idx(0), _idx(self.steps), None
            return body(batch, tile_m, tile_n, (first, end, split), *args)

        def tail_step(u, *args):
            t, first, end, split, tail, tail_tile = self.tail_unit(u, IndexOps)
            batch, tile_m, tile_n = self.position(t)
            return body(batch, tile_m, tile_n, (first, end, split, (tail, tail_tile)), *args)
        loop = scf.ForOp(gpu.block_id(gpu.Dimension.x), _idx(self.units),
                         _idx(self.ctas), list(inits))
        with ir.InsertionPoint(loop.body):
            scf.YieldOp(list(step(loop.induction_variable, *loop.inner_iter_args) or []))
        return loop

    def position(self, t):
        """(batch, tile_m, tile_n) of tile ``t`` (over every batch)."""
        per_batch = self.tiles_m * self.tiles_n
        batch = arith.divui(t, _idx(per_batch)) if self.batch > 1 else _idx(0)
        within = arith.remui(t, _idx(per_batch)) if self.batch > 1 else t
        return (batch, *self.grouped(within))

    def grouped(self, t):
        """(tile_m, tile_n) of tile ``t`` of a batch in grouped order:
        GROUP_M tiles of M run down a column of N tiles before moving on,
        so that the B columns a group reads stay in L2."""
        per_group = GROUP_M * self.tiles_n
        group = arith.divui(t, _idx(per_group))
        first_m = arith.muli(group, _idx(GROUP_M))
        within = arith.remui(t, _idx(per_group))
        # A group has GROUP_M rows of tiles but the last, which has tiles_m %
        # GROUP_M: both constants, so no division by a runtime value (a
        # subroutine call in SASS) lands in the consumers' code.
        tail = self.tiles_m % GROUP_M
        if tail == 0:
            return (arith.addi(first_m, arith.remui(within, _idx(GROUP_M))),
                    arith.divui(within, _idx(GROUP_M)))
        full = _cmp("ule", arith.addi(first_m, _idx(GROUP_M)), _idx(self.tiles_m))
        row = arith.select(full, arith.remui(within, _idx(GROUP_M)),
                           arith.remui(within, _idx(tail)))
        col = arith.select(full, arith.divui(within, _idx(GROUP_M)),
                           arith.divui(within, _idx(tail)))
        return arith.addi(first_m, row), col
