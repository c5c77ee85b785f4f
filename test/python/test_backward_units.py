"""The work units of tc-sm90's fused attention backward
(dnnc/codegen/gpu/tensorcore/sm90/backward_units.py), on Python ints: the
schedule's own arithmetic (``Persistent.position`` and ``unit`` with
``IntOps``, the code the kernel emits with ``IndexOps``).

* Every unit runs exactly once, in the blocks and rounds the kernel loops
  over, with one part or several, in either order.
* Odd rounds run their units in reverse block order; the units run in bands
  of kv tiles, head by head within a band (with a causal mask, bands of
  BAND tiles from the first, which most query tiles see).
* The balance the module docstring states, under its cost model (a unit's
  steps plus two), for the docs' three backward problems.
"""

import heapq

import pytest

from dnnc.codegen.gpu.tensorcore.sm90.backward_units import BAND, IntOps, Persistent

CTAS = 132


def schedule(units):
    """{block: [(head, tile, part), ...] in the order it runs them}."""
    out = {}
    for block in range(units.ctas):
        out[block] = []
        for k in range(units.rounds):
            u = units.position(k, block, IntOps)
            if u < units.units:
                out[block].append(units.unit(u, IntOps))
    return out


@pytest.mark.parametrize("kv_tiles, heads, parts", [
    (7, 3, 1), (7, 3, 4), (64, 8, 1), (8, 256, 1), (32, 64, 1), (3, 2, 8), (1, 1, 1),
    (11, 13, 2),
])
@pytest.mark.parametrize("band", [1, 3, BAND, 1000])
def test_every_unit_once(kv_tiles, heads, parts, band):
    units = Persistent(kv_tiles, heads, parts, CTAS, band)
    assert units.ctas == min(CTAS, kv_tiles * heads * parts)
    ran = [u for block in schedule(units).values() for u in block]
    want = [(h, t, p if parts > 1 else None) for h in range(heads) for t in range(kv_tiles)
            for p in range(parts)]
    assert sorted(ran, key=str) == sorted(want, key=str)
    # Only the last round may be short: a block runs rounds or rounds - 1.
    counts = {len(b) for b in schedule(units).values()}
    assert counts <= {units.rounds, units.rounds - 1}, counts


def test_odd_rounds_reverse_the_blocks():
    units = Persistent(8, 256, 1, CTAS, BAND)
    assert [units.position(0, b, IntOps) for b in (0, 1, 131)] == [0, 1, 131]
    assert [units.position(1, b, IntOps) for b in (0, 1, 131)] == [263, 262, 132]
    assert [units.position(2, b, IntOps) for b in (0, 131)] == [264, 395]


def test_bands():
    """Band by band (the first kv tiles first), head by head within a band,
    then the band's tiles, then the parts; a last band of kv_tiles % band
    tiles; one band of all the tiles is head by head, the tile fastest."""
    units = Persistent(10, 3, 2, CTAS, BAND)
    order = [units.unit(u, IntOps) for u in range(units.units)]
    assert order[:9] == [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1), (0, 2, 0), (0, 2, 1),
                         (0, 3, 0), (0, 3, 1), (1, 0, 0)]
    assert order[24] == (0, 4, 0)
    # The last band: tiles 8 and 9.
    assert order[48:53] == [(0, 8, 0), (0, 8, 1), (0, 9, 0), (0, 9, 1), (1, 8, 0)]
    tiles = [tile for _, tile, _ in order]
    assert all(a // BAND <= b // BAND for a, b in zip(tiles, tiles[1:]))
    heads = [Persistent(8, 5, 1, CTAS, 8).unit(u, IntOps) for u in range(16)]
    assert heads[:9] == [(0, t, None) for t in range(8)] + [(1, 0, None)]


def _cost(group, parts, q_tiles, causal):
    """A unit's cost: its steps (query tiles of 64 rows over the part's
    heads; from the diagonal when causal, Sq = Skv) plus two."""
    def cost(unit):
        _, tile, _ = unit
        span = q_tiles - (2 * tile if causal else 0)
        return span * group // parts + 2
    return cost


# The docs' backward problems: (B, Hk, group, S, causal).
PROBLEMS = {
    "B4 H16 S4096 D64": (4, 16, 1, 4096, False),
    "causal B16 H16 S1024 D128": (16, 16, 1, 1024, True),
    "causal GQA 64q/8kv S8192 D128": (1, 8, 8, 8192, True),
}


@pytest.mark.parametrize("name, most", [
    ("B4 H16 S4096 D64", 1.035), ("causal B16 H16 S1024 D128", 1.035),
    ("causal GQA 64q/8kv S8192 D128", 1.035),
])
def test_balance(name, most):
    """The longest block's load over the mean, persistent (as the
    heuristics launch it: parts 1, there being 2 units an SM or more); a
    block a unit in launch order (the next free SM takes the next block)
    is worse or even."""
    b, hk, group, s, causal = PROBLEMS[name]
    kv_tiles, q_tiles = s // 128, s // 64
    units = Persistent(kv_tiles, b * hk, 1, CTAS, BAND if causal else kv_tiles)
    assert units.units >= 2 * CTAS
    cost = _cost(group, 1, q_tiles, causal)
    loads = [sum(map(cost, block)) for block in schedule(units).values()]
    mean = sum(loads) / CTAS
    assert max(loads) / mean <= most, max(loads) / mean
    # A block a unit: grid x the kv tile (fastest), y the head.
    free = [(0, sm) for sm in range(CTAS)]
    for head in range(b * hk):
        for tile in range(kv_tiles):
            load, sm = heapq.heappop(free)
            heapq.heappush(free, (load + cost((head, tile, None)), sm))
    assert max(load for load, _ in free) >= max(loads)
