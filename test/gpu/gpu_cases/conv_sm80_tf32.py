"""tf32 convolutions on tc-sm80: f32 tensors multiplied as tf32 (the
default for f32 convolutions) by tc-sm80's implicit GEMM, its gather
loaders copying 4-byte elements by cp.async (16-byte chunks of 4 channels,
8- or 4-byte chunks cut at C where C is not a multiple of 4) and mma.sync
m16n8k8 tf32 reading the fragments as the tf32 matmul does (ldmatrix of a
K-major operand, 32-bit shared loads of an MN-major one: a data
gradient's filter, a filter gradient's dy and x), each rounded to tf32 in
registers: dnnc/codegen/gpu/tensorcore/sm80/.

* ``conv_sm80_tf32_{direction}_*``: conv_random_tf32.py's first graphs of
  each direction (same draws: geometry, 3-D, strides, dilation, padding,
  convolution mode, epilogues) with tc-sm80 forced, in the tiles of
  ``CONFIGS`` in turn: none named (4 warps of 128 x 128 x 16), 64 x 64 x 16
  in 3 stages, and 8 warps of 256 x 128 x 32; what tc-sm80 does not take
  (groups) falls back to simt-generic.
* ``conv_sm80_tf32_odd_{direction}_*``: conv_odd_channels.py's draws (C
  or K of 1, 3, 5, 6, 7, 12, 63, 65) in f32, not forced: on sm_90a tc-sm90
  hands what its TMA cannot step to tc-sm80 (a stem keeps tc-sm90's fold),
  and a filter gradient of C not a multiple of 64 goes to tc-sm80 by the
  heuristics (tc-sm90's transposed product does not tile it).
* ``conv_sm80_tf32_split_{direction}``: forced in 64 x 64 x 16 tiles with
  K split 3 ways (the partials summed in split order by a second launch).

Tolerance, where tc-sm80 is forced: f32's (case.RTOL), not
conv_random_tf32's: tc-sm80 rounds each operand to tf32 to nearest even as
the NumPy reference does, so the products agree exactly and only the order
of the f32 sums differs (truncating instead, as the tensor cores would
without the rounding, is off by up to 2^-11 a product, ten times this
tolerance; what falls back to simt-generic rounds as the reference too).
The odd-channel graphs keep conv_random_tf32's: some of their convolutions
run on tc-sm90, which truncates.
"""

from .case import F32, Case
from .conv_odd_channels import draw as draw_odd
from .conv_random import PER_GRAPH, random_convs
from .conv_random_tf32 import CONFIGS as TF32_CONFIGS, DIRECTIONS, RTOL as TF32_RTOL

SEED = 20261130
GRAPHS = 4           # a direction's, forced
ODD_GRAPHS = 2       # a direction's
CONFIGS = ("*=strategy:tc-sm80", "*=strategy:tc-sm80,tile:64x64x16,stages:3",
           "*=strategy:tc-sm80,tile:256x128x32,stages:3")
SPLIT = "*=strategy:tc-sm80,tile:64x64x16,stages:3,split:3"
ODD_CONFIGS = {d: draw_odd(d, SEED + i, ODD_GRAPHS * PER_GRAPH)
               for i, d in enumerate(DIRECTIONS)}


def _positive(direction):
    """The scale inputs of a forward graph's scale_shift epilogues."""
    return tuple(f"s{i}" for i in range(PER_GRAPH)) if direction == "fprop" else ()


def _graph(configs, j):
    return configs[j * PER_GRAPH:(j + 1) * PER_GRAPH]


CASES = [
    Case(f"conv_sm80_tf32_{direction}_{j:02d}",
         random_convs(F32, _graph(TF32_CONFIGS[direction], j), direction),
         positive=_positive(direction), seed=SEED + 100 * i + j,
         config=CONFIGS[j % len(CONFIGS)])
    for i, direction in enumerate(DIRECTIONS)
    for j in range(GRAPHS)
] + [
    Case(f"conv_sm80_tf32_odd_{direction}_{j:02d}",
         random_convs(F32, _graph(ODD_CONFIGS[direction], j), direction),
         positive=_positive(direction), seed=SEED + 1000 + 100 * i + j, rtol=TF32_RTOL)
    for i, direction in enumerate(DIRECTIONS)
    for j in range(ODD_GRAPHS)
] + [
    Case(f"conv_sm80_tf32_split_{direction}",
         random_convs(F32, _graph(TF32_CONFIGS[direction], GRAPHS), direction),
         positive=_positive(direction), seed=SEED + 2000 + i, config=SPLIT)
    for i, direction in enumerate(DIRECTIONS)
]
