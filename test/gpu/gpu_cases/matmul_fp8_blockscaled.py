"""Block-scaled fp8 matmuls (dnn.matmul_block_scaled) on tc-sm90: A's scales
one per row and 128-wide K block (1 x 128), B's one per 128 x 128 block, as
DeepSeek-V3 quantizes, applied in the mainloop (sm90/block_scales.py).

Shapes: M, N, K of 128, 256 and 4096, and ones that are multiples of
nothing (200 x 392 x 320: the last K block of 64, a last column block of
8); B stored N x K (K-major, read in place) and K x N (copied K-major
first); a skinny product whose K is split; bf16 and f32 outputs, and an
e4m3 one. Each product is computed twice over the same operands (an fp8
output only with the first scales):

* with scales drawn from [0.5, 2) (``positive``), held to the contraction's
  tight tolerance (gain 4): a scale read at the wrong row, K block or
  column block moves an output by a good part of a block's sum;
* with scales of 2^-8 .. 2^8 (``fixed``: the powers laid out cyclically,
  so that neighbouring rows and blocks differ), held to the tolerance of the
  largest scale product (gain 2^16): the dynamic range DeepSeek's scales
  span, exact in f32 (powers of two).

The K loop a kernel runs (sm90/block_scales.py) is the heuristics' (K steps
in groups of 4, two temporaries) unless a case's config override picks
another: whole steps (``promote_overlap:0``), groups of 2 or 8, or tiles
128 x 256 (two halves of 128 columns a step, each with its own scale of B).
Their shapes have K steps that are no multiple of the group (the first
count % group steps run whole), partial last K blocks, ragged M, and N that
is no multiple of 256 (a last tile whose second half lies partly or wholly
past N); a split K gives units of different step counts (7, 7 and 6).
"""

import numpy as np

import dnnc

from .case import BF16, E4M3, E5M2, F32, Case, contracted, outputs

BLOCK = 128
NARROW = ("sa", "sb")                            # drawn from [0.5, 2)
WIDE = {"wa": 2.0 ** np.arange(-8, 9), "wb": 2.0 ** np.arange(8, -9, -1)}
NARROW_GAIN, WIDE_GAIN = 4.0, 2.0 ** 16


def _blocks(n):
    return -(-n // BLOCK)


def blockscaled(ta, tb, shapes):
    """The outputs of block-scaled GEMMs of ``ta`` x ``tb`` operands, one per
    (M, N, K, B stored N x K, output type) of ``shapes``."""
    def build():
        g = dnnc.Graph(io_data_type=F32, compute_data_type=F32)
        for i, (m, n, k, weight, out) in enumerate(shapes):
            a = g.tensor(name=f"a{i}", dim=[m, k], data_type=ta)
            b = g.tensor(name=f"b{i}", dim=[k, n], data_type=tb,
                         stride=[1, k] if weight else None)
            # An fp8 output takes the narrow scales alone: the wide ones
            # reach past e4m3's largest value (448).
            wide = () if out in (E4M3, E5M2) else ((tuple(WIDE), WIDE_GAIN),)
            for scales, gain in ((NARROW, NARROW_GAIN),) + wide:
                sa = g.tensor(name=f"{scales[0]}{i}", dim=[m, _blocks(k)])
                sb = g.tensor(name=f"{scales[1]}{i}", dim=[_blocks(k), _blocks(n)])
                c = g.matmul_block_scaled(a, b, sa, sb)
                y = c if out is F32 else g.cast(c, out)
                label = "narrow" if gain == NARROW_GAIN else "wide"
                outputs(contracted(y.set_name(f"c{i}_{m}x{n}x{k}_{label}"), a, b, k, gain))
        return g
    return build


# (M, N, K, B stored N x K, output type)
SQUARE = [(128, 128, 128, True, BF16), (256, 256, 256, True, F32),
          (200, 392, 320, True, BF16), (200, 392, 320, False, F32),
          (256, 4096, 128, True, BF16), (4096, 128, 256, True, F32),
          (128, 256, 4096, True, F32), (256, 384, 512, True, E4M3)]
LARGE = [(4096, 4096, 4096, True, BF16)]
SKINNY = [(64, 256, 8192, True, F32)]


# K steps 5, 6 (the last of 64), 7, 9 (the last of 80) and 11, ragged M and N.
STEPS = [(256, 256, 640, True, BF16), (200, 392, 704, True, F32),
         (384, 128, 896, False, BF16), (256, 384, 1104, True, F32),
         (130, 200, 1408, True, E4M3)]
# N of 256, 392 (the last tile's second half 8 columns wide), 300 (wholly
# past N: its column of B's scales is clamped) and 640; K of 320 (a last
# block of 64); ragged M.
WIDE_N = [(256, 256, 384, True, BF16), (200, 392, 320, True, F32),
          (256, 300, 512, False, BF16), (384, 640, 640, True, F32),
          (128, 392, 128, True, E4M3)]
# 20 K steps split 3 ways: units of 7, 7 and 6 steps.
SPLIT = [(256, 256, 2560, True, F32)]
GROUPS_OF = {0: "*=promote_overlap:0", 2: "*=promote_overlap:2", 8: "*=promote_overlap:8"}
# The heuristics give these shapes tiles 64 wide (few tiles): 128 by
# override, in groups of 2 as the heuristics take them at 128 columns where
# the step count is no multiple of 4 or K is split.
TILE_128 = "*=tile:128x128x128,stages:6,promote_overlap:2"
WIDE_TILE = "*=tile:128x256x128,stages:4,promote_overlap:0"


def _case(name, ta, tb, shapes, config=None):
    count = range(len(shapes))
    positive = tuple(f"{s}{i}" for i in count for s in NARROW)
    fixed = {f"{s}{i}": values for i in count for s, values in WIDE.items()}
    return Case(name, blockscaled(ta, tb, shapes), positive=positive, fixed=fixed,
                config=config)


CASES = [
    _case("matmul_fp8_blockscaled_e4m3", E4M3, E4M3, SQUARE),
    _case("matmul_fp8_blockscaled_e4m3_e5m2", E4M3, E5M2, SQUARE[:4]),
    _case("matmul_fp8_blockscaled_4096", E4M3, E4M3, LARGE),
    _case("matmul_fp8_blockscaled_split_k", E4M3, E4M3, SKINNY),
    # The heuristics' groups of 4 over step counts that are no multiple of 4.
    _case("matmul_fp8_blockscaled_steps", E4M3, E4M3, STEPS),
    _case("matmul_fp8_blockscaled_steps_e5m2", E5M2, E4M3, STEPS[:2]),
    _case("matmul_fp8_blockscaled_steps_128", E4M3, E4M3, STEPS, TILE_128),
    _case("matmul_fp8_blockscaled_split_units", E4M3, E4M3, SPLIT,
          "*=tile:128x128x128,stages:6,split:3,promote_overlap:2"),
    # The other loops, by config override.
    *[_case(f"matmul_fp8_blockscaled_groups_of_{g}", E4M3, E4M3, SQUARE[:4] + STEPS, config)
      for g, config in GROUPS_OF.items()],
    _case("matmul_fp8_blockscaled_groups_of_8_4096", E4M3, E4M3, LARGE, GROUPS_OF[8]),
    _case("matmul_fp8_blockscaled_wide_tile", E4M3, E4M3, WIDE_N, WIDE_TILE),
    _case("matmul_fp8_blockscaled_wide_tile_e5m2", E4M3, E5M2, WIDE_N[:2], WIDE_TILE),
    _case("matmul_fp8_blockscaled_wide_tile_4096", E4M3, E4M3, LARGE, WIDE_TILE),
]
