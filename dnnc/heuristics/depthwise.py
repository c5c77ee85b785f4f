"""Rules for depthwise convolutions: the simt-depthwise strategy.

A forward convolution with one input channel a group and one filter a
channel (groups == C == K, w [C, 1, *win]) does C * taps multiply-adds per
output pixel over 2 bytes of x and y a channel: memory-bound, nothing for
the tensor cores. It runs as a window program with weights
(dnnc/codegen/gpu/window/depthwise_emit.py): a thread owns ``vector``
channels (16 bytes of x's element type, halved until it divides C) of
``tile`` outputs along W (``tile`` = (1, T): the last spatial dim), its x
rows loaded once for all T outputs: a 3x3 / 1 window reads 3 x (T + 2)
pixels for T outputs, not 9 T; a 7x7 / 1 one 7 x (T + 6), not 49 T.

T is 4 for a window up to 4 taps wide (2 and 8 follow for the tuner), 8
for a wider one at stride 1 (4 and 2 follow): 8 outputs read a 7x7 row's
pixels 1.75 times instead of 2.5, for 64 accumulators and a row of 14
pixels of 8 channels in f32 registers, which fit the 255 a thread of a
256-thread block may hold, not the 128 of a 512-thread block (it spills:
such blocks are not offered with T = 8). Measured on an H200 (bf16,
32x96x56x56 7x7: 0.072 ms at T = 8, 0.081 at 4, 0.106 at 2, block 256;
cuDNN 0.076; 32x144x56x56 3x3: 0.032 ms at T = 4, 0.034 at 8, 0.037 at 2;
cuDNN 0.035).

A block takes a slice of the channels (window/tile.py's
``channel_slice``: all of them when their filters fit ``SMEM_BYTES`` of
shared memory) and as many tiles as ``block`` threads hold; its first
step copies the slice's filters into shared memory. The block size follows simt-generic's rules for the number
of threads (dnnc/heuristics/generic.py); simt-generic follows as the
fallback.
"""

import math

from dnnc.heuristics import generic, pointwise
from dnnc.heuristics.config import Config

STRATEGY = "simt-depthwise"
TILES = (4, 2, 8)
WIDE_TILES = (8, 4, 2)
# Window widths from which T = 8 pays (see the module doc), and the block
# size above which it spills.
WIDE_WINDOW = 5
WIDE_MAX_BLOCK = 256
TYPES = ("bf16", "f16", "f32")


def is_depthwise(problem):
    """Whether ``problem`` is a forward depthwise convolution simt-depthwise
    takes (see the module doc)."""
    inputs = problem.anchor_inputs
    if problem.anchor != "conv_fprop" or len(inputs) < 2 or not problem.anchor_outputs:
        return False
    x, w = inputs[0], inputs[1]
    return (len(x.shape) >= 3 and len(w.shape) == len(x.shape) and w.shape[1] == 1
            and w.shape[0] == x.shape[1] and x.dtype in TYPES and w.dtype == x.dtype
            and str(problem.attr("compute_type", "f32")) == "f32")


def simt_depthwise(problem):
    """The simt-depthwise configs of a depthwise convolution, best first, or []."""
    if not is_depthwise(problem):
        return []
    x, w = problem.anchor_inputs[0], problem.anchor_inputs[1]
    y = problem.anchor_outputs[0]
    channels = x.shape[1]
    width = max(1, pointwise.VECTOR_BYTES // x.element_bytes)
    while width > 1 and channels % width:
        width //= 2
    taps = math.prod(w.shape[2:])
    out_w = y.shape[-1]
    stride = list(problem.attr("stride", ()) or (1,))
    wide = w.shape[-1] >= WIDE_WINDOW and stride[-1] == 1
    tiles = [t for t in (WIDE_TILES if wide else TILES) if t <= max(1, out_w)] or [1]
    tile = tiles[0]
    work = -(-y.elements // (width * out_w)) * -(-out_w // tile)
    facts = (f"depthwise conv_fprop: {y.elements} outputs of {taps} taps, {channels} "
             f"channels; a thread per {width} channels x {tile} outputs along W ({work} "
             f"threads), the block's filters in shared memory")
    best = [Config(STRATEGY, (block, 1, 1), vector=width, tile=(1, tile),
                   reason=f"{facts}; block {block}: {why}")
            for block, why in generic.block_choices(work, problem.sms)
            if tile < 8 or block <= WIDE_MAX_BLOCK]
    return best + [best[0].replace(tile=(1, t), reason=f"{facts}; tile 1x{t} instead, "
                                   f"block {best[0].block[0]}") for t in tiles[1:]
                   if t < 8 or best[0].block[0] <= WIDE_MAX_BLOCK]


def rank(problem, facts):
    """simt-depthwise's configs then simt-generic's, or [] where it does not apply."""
    fast = simt_depthwise(problem)
    if not fast:
        return []
    work = problem.anchor_outputs[0].elements
    return fast + generic.simt_generic(work, problem.sms, None, facts, fallback_of=STRATEGY)
