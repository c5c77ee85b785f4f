"""Sizes and strides the families draw from.

Sizes are the edges kernels get wrong: 1, primes, and one either side of
the tile and vector widths (32, 64, 128, 256, 1024). Strides are
row-major, padded rows (a slice of a wider buffer), a random order of the
dims in memory (transposed, channels-last and every other permutation),
or both; broadcasting comes from dims of size 1 in the operands.
"""

import math

EDGES = (1, 2, 3, 5, 7, 13, 17, 31, 32, 33, 61, 63, 64, 65, 97, 127, 128, 129, 255, 256, 257,
         509, 1023, 1024, 1025, 2047, 4099)
SMALL = (1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 32, 33)


def size(rng, pool=EDGES):
    return int(pool[int(rng.integers(len(pool)))])


def dims_within(rng, rank, budget, pool=EDGES):
    """``rank`` sizes from ``pool`` whose product is at most ``budget``."""
    while True:
        dims = [size(rng, pool) for _ in range(rank)]
        if math.prod(dims) <= budget:
            return dims


def row_major(dims, pad=0):
    """Row-major strides of ``dims``, each innermost row ``pad`` elements wider."""
    return ordered(dims, list(range(len(dims))), pad)


def ordered(dims, order, pad=0):
    """Strides of ``dims`` laid out in memory with dim ``order[-1]``
    innermost, ``order[0]`` outermost, the innermost rows ``pad`` wider."""
    strides, step = [0] * len(dims), 1
    for j, d in enumerate(reversed(order)):
        strides[d] = step
        step *= max(int(dims[d]), 1) + (pad if j == 0 else 0)
    return strides


def channels_last(dims):
    """(N, C, *spatial) stored (N, *spatial, C)."""
    return ordered(dims, [0, *range(2, len(dims)), 1])


def layout(rng, dims, share=0.5):
    """Strides for ``dims``: row-major (None) in ``1 - share`` of the
    draws, else padded rows, a random dim order, or both."""
    if rng.random() >= share or len(dims) == 0:
        return None
    kind = int(rng.integers(3))
    pad = int(rng.integers(1, 9)) if kind != 1 else 0
    order = list(range(len(dims)))
    if kind != 0:
        order = [int(i) for i in rng.permutation(len(dims))]
    return ordered(dims, order, pad)


def storage_elements(dims, strides):
    """Elements a buffer of ``dims`` laid out with ``strides`` spans."""
    if strides is None or any(int(d) == 0 for d in dims):
        return math.prod(int(d) for d in dims)
    return 1 + sum((int(d) - 1) * int(s) for d, s in zip(dims, strides))
