"""tc-sm80's tile scheduler: one block per ``BM x BN`` output tile and K
split, batch by batch, in grouped order within a batch (GROUP_M tiles of M
down a column of N tiles, so the B columns a group reads stay in L2).

With split-K (splitk.py) the grid is ``splits`` copies of the tiles'
grid, split-major: the blocks that run at once share a split, so they
read the same K steps of the operands (the rows of A and B one tile's
neighbours read too) rather than each a K range of its own."""

from mlir.dialects import arith, gpu

from dnnc.codegen.gpu.tensorcore.emit import idx as _idx

GROUP_M = 8              # tiles of M per group in the grouped (L2-friendly) order


def tile_of_block(tiles_m, tiles_n, batches, splits=1):
    """(batch, tile_m, tile_n, split) of this block, of ``tiles_m x
    tiles_n`` tiles per batch and ``splits`` K splits: split-major, then
    batch-major, then grouped order within a batch; split is None when K
    is not split."""
    t = gpu.block_id(gpu.Dimension.x)
    split = None
    if splits > 1:
        tiles = tiles_m * tiles_n * batches
        split = arith.divui(t, _idx(tiles))
        t = arith.remui(t, _idx(tiles))
    per_batch = tiles_m * tiles_n
    batch = arith.divui(t, _idx(per_batch)) if batches > 1 else _idx(0)
    within = arith.remui(t, _idx(per_batch)) if batches > 1 else t
    per_group = GROUP_M * tiles_n
    group = arith.divui(within, _idx(per_group))
    first_m = arith.muli(group, _idx(GROUP_M))
    rows = arith.minui(arith.subi(_idx(tiles_m), first_m), _idx(GROUP_M))
    rest = arith.remui(within, _idx(per_group))
    return batch, arith.addi(first_m, arith.remui(rest, rows)), arith.divui(rest, rows), split
