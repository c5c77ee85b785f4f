"""Rules for depthwise convolutions and those of a few channels a group
(ResNeXt's 32 groups of 4: window/grouped_emit.py): the simt-depthwise
strategy, forward, data gradient and filter gradient.

Gradients: a data gradient has the forward's configs (dy read where the
forward reads x), its tile rounded to a whole number of W stride phases
(dnnc/codegen/gpu/window/depthwise_dgrad.py). A filter gradient
(depthwise_wgrad.py) reduces over N x P x Q: ``tile`` is the run of output
pixels along W a work item takes (WGRAD_TILE), ``split`` the blocks the
reduction is spread over, chosen so that the grid is WGRAD_WAVES times the
blocks the SMs hold at once (window/tile.py's register estimate: the grid
is one wave, every block looping over its share of the pixels) but its
partial sums (written, then read back by the second launch) stay under
1/WGRAD_WORKSPACE_SHARE of the bytes of x and dy.

Forward:

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

A tile that divides W is preferred to one up to twice as wide that does
not (``_dividing``), and a wide window over a short row (W up to
SHORT_ROW) takes the whole row a thread over 8 bytes of channels
(SHORT_ROW).

A block takes a slice of the channels (window/tile.py's
``channel_slice``: all of them when their filters fit ``SMEM_BYTES`` of
shared memory) and as many tiles as ``block`` threads hold; its first
step copies the slice's filters into shared memory. The block size follows simt-generic's rules for the number
of threads (dnnc/heuristics/generic.py); simt-generic follows as the
fallback.
"""

import math

from dnnc.heuristics import generic, pointwise
from dnnc.codegen.gpu.window.tile import SMEM_BYTES, blocks_per_sm, wgrad_lanes, wgrad_registers
from dnnc.heuristics.config import Config

STRATEGY = "simt-depthwise"
TILES = (4, 2, 8)
WIDE_TILES = (8, 4, 2)
# SHORT_ROW: a wide window's forward over a W of at most this many outputs
# takes the whole row a thread (T = W) over SHORT_ROW_BYTES of channels, in
# blocks of 256. On an H200 (bf16, ConvNeXt's 7x7 at 32x384x14x14; cuDNN
# 0.027-0.028 ms): 8 channels x 7 outputs, 188 registers in blocks of 120,
# 0.038 ms; 4 channels x 7 in blocks of 240, 0.028; 4 channels x 14, 127
# registers in blocks of 240, 0.024.
SHORT_ROW = 16
SHORT_ROW_BYTES = 8
# Window widths from which T = 8 pays (see the module doc), and the block
# size above which it spills.
WIDE_WINDOW = 5
WIDE_MAX_BLOCK = 256
TYPES = ("bf16", "f16", "f32")
# A filter gradient's run of output pixels a work item (8 at stride 1: a
# 3x3's row of 10 x pixels for 8 outputs; 4 when strided) and the blocks an
# SM its grid aims at, best first.
WGRAD_TILE = 8
WGRAD_WAVES = (1, 2, 4)
# (1/16 left small images' gradients a fraction of the SMs: ConvNeXt's
# 7x7 at 14 x 14, 32 x 384 channels, 4 blocks of partials along the
# reduction, 96 blocks in all; 1/8 gives it 8.)
WGRAD_WORKSPACE_SHARE = 8
# WGRAD_SHORT_ROWS: a filter gradient (stride 1) over rows of at most
# SHORT_ROW outputs takes runs that divide W; a wide window's, a grid of
# two waves first and partials up to 1/WGRAD_SHORT_ROWS_SHARE of x and dy.
# On an H200 (bf16, ConvNeXt's 7x7 at 32x384x14x14; cuDNN 0.0286 ms) runs
# of 8 in 8 splits (one wave, 1/8) took 0.0354 ms, in 16 splits 0.0316,
# runs of 7 in 16 splits 0.0290. MobileNetV2's 3x3 at 32x384x14x14 (cuDNN
# 0.0165-0.0167 ms): runs of 8 in 43 splits (one wave) 0.0186-0.0188,
# runs of 7 in 43 splits 0.0162-0.0164, in 16 0.0165-0.0167, in 24
# 0.0146-0.0148 (no rule here picks 24 yet).
WGRAD_SHORT_ROWS_SHARE = 4
# The channels a depthwise filter gradient's thread owns: 8 bytes (4 bf16
# channels), not 16. Its accumulators are taps x channels; at 8 channels a
# 3x3's take 72 registers and ptxas gives the thread 178, one 252-thread
# block an SM (8 warps to hide every load's latency: 50% of cuDNN's speed
# on an H200). At 4 channels a row of taps a thread (tile.py's
# DEPTHWISE_ACCUMULATORS) it takes 62 and four blocks fit; a warp still
# reads whole 32-byte sectors of each pixel's channels.
WGRAD_DEPTHWISE_BYTES = 8
# A grouped forward's thread holds a row of taps' f32 weights for its
# channels (S x Cg x width: window/grouped_emit.py) beside its
# accumulators (tile x width). ptxas 13 (sm_90a, bf16), ResNeXt-50's 32
# groups of 4 in 3x3: 8 channels x 4 outputs a thread take 170 registers
# (96 of weights: one 256-thread block an SM), 4 channels x 8 outputs 128
# (two blocks), with more multiply-adds a load (10 x pixels a row for 8
# outputs, 4 weights a load). So where 16 bytes of channels overflow
# GROUPED_ROW_WEIGHTS and 8 bytes fit, a thread takes 8 bytes, and as
# many outputs as GROUPED_ACCUMULATORS allow.
GROUPED_ROW_WEIGHTS = 48
GROUPED_ACCUMULATORS = 32
# The bytes of a group's channels that tc-sm90's grouped implicit GEMM reads
# in whole K steps (64 bf16 / f16 channels: tensorcore/conv.groups_problem).
SMALL_GROUP_K_STEP = 128


def _roles(problem):
    """(data, filter) of a depthwise convolution anchor, any direction: the
    tensor whose channels are the groups ([N, C, *spatial]: fprop's x,
    dgrad's dx, wgrad's x) and the filter's shape ([C, 1, *win]: w, or
    wgrad's dw); None for any other anchor."""
    inputs, outputs = problem.anchor_inputs, problem.anchor_outputs
    if len(inputs) < 2 or not outputs:
        return None
    if problem.anchor == "conv_fprop":
        return inputs[0], inputs[1]
    if problem.anchor == "conv_dgrad":   # (dy, w) -> dx
        return outputs[0], inputs[1]
    if problem.anchor == "conv_wgrad":   # (dy, x) -> dw
        return inputs[1], outputs[0]
    return None


def is_depthwise(problem):
    """Whether ``problem`` is a depthwise convolution (forward, data or
    filter gradient) simt-depthwise takes (see the module doc)."""
    roles = _roles(problem)
    if roles is None:
        return False
    x, w = roles
    types = {t.dtype for t in problem.anchor_inputs}
    # (One channel is one group, not depthwise: dnn-depthwise-conv takes
    # two groups at least, and the implicit GEMM reads 2-byte pixels.)
    return (len(x.shape) >= 3 and len(w.shape) == len(x.shape) and w.shape[1] == 1
            and w.shape[0] == x.shape[1] > 1 and len(types) == 1 and types <= set(TYPES)
            and str(problem.attr("compute_type", "f32")) == "f32")


def _group_shape(problem):
    """(G, ins, outs) of a grouped convolution: its groups, the channels a
    group of the operand read through windows (x: Cg; a data gradient's
    dy: Kg) and of the output (y and dw: Kg; dx: Cg); None for another
    anchor or a shape that is no grouped convolution."""
    inputs, outputs = problem.anchor_inputs, problem.anchor_outputs
    if problem.anchor not in ("conv_fprop", "conv_dgrad", "conv_wgrad") or len(inputs) < 2 \
            or not outputs:
        return None
    data, w, out = inputs[0], inputs[1], outputs[0]
    if problem.anchor == "conv_wgrad":   # (dy, x) -> dw
        x, w = inputs[1], out
    else:
        x = data if problem.anchor == "conv_fprop" else out
    cg, k = w.shape[1], w.shape[0]
    if len(x.shape) < 3 or len(w.shape) != len(x.shape) or cg < 1 or x.shape[1] % cg:
        return None
    groups = x.shape[1] // cg
    if groups < 2 or k % groups:
        return None
    kg = k // groups
    return (groups, kg, cg) if problem.anchor == "conv_dgrad" else (groups, cg, kg)


def is_small_groups(problem):
    """Whether ``problem`` is a convolution (any direction) of a few
    channels a group (not depthwise) that simt-depthwise takes: groups the
    tensor cores do not (the channels a group reduces no whole K steps of
    SMALL_GROUP_K_STEP bytes; f32 computed as f32), whose filters for one
    vector of output channels fit shared memory (window/tile.py; a filter
    gradient stages none)."""
    shape = _group_shape(problem)
    types = {t.dtype for t in problem.anchor_inputs}
    if shape is None or len(types) != 1 or not types <= set(TYPES) \
            or str(problem.attr("compute_type", "f32")) != "f32":
        return False
    _, ins, outs = shape
    data = problem.anchor_inputs[0]
    if data.dtype != "f32" and (ins * data.element_bytes) % SMALL_GROUP_K_STEP == 0:
        return False  # tc-sm90's grouped implicit GEMM takes it
    if problem.anchor == "conv_wgrad":   # no filter staged: the partials fit any Cg
        return True
    w = problem.anchor_inputs[1]
    width = _grouped_width(problem.anchor_outputs[0].shape[1], outs, data.element_bytes)
    return width * math.prod(w.shape[2:]) * ins * data.element_bytes <= SMEM_BYTES


def _grouped_width(k, kg, element_bytes, vector_bytes=pointwise.VECTOR_BYTES):
    """Output channels a thread of a grouped convolution owns:
    ``vector_bytes`` (16), halved until they divide K and hold whole groups
    or divide one (window/grouped_emit.py)."""
    width = max(1, vector_bytes // element_bytes)
    while width > 1 and (k % width or (width % kg and kg % width)):
        width //= 2
    return width


def _grouped_forward(channels, ins, outs, row_taps, element_bytes, width, tiles):
    """(width, tiles) of a grouped forward's thread, from the 16-byte
    ``width`` and ``tiles``: 8 bytes of channels instead where that makes a
    row of taps' f32 weights fit GROUPED_ROW_WEIGHTS, and then 8 outputs
    along W first (see GROUPED_ROW_WEIGHTS)."""
    if row_taps * ins * width <= GROUPED_ROW_WEIGHTS:
        return width, tiles
    narrow = _grouped_width(channels, outs, element_bytes, pointwise.VECTOR_BYTES // 2)
    if narrow == width or row_taps * ins * narrow > GROUPED_ROW_WEIGHTS:
        return width, tiles
    first = max(t for t in TILES if t * narrow <= GROUPED_ACCUMULATORS)
    return narrow, (first,) + tuple(t for t in tiles if t != first)


def _dividing(tile, width, phases=1):
    """``tile``, or the largest tile from half of it up that divides the
    output's ``width`` (a multiple of ``phases``). A last tile that runs
    past W guards its outputs (depthwise_emit.py), and the guards cost more
    than the shorter rows: on an H200 (bf16, ConvNeXt's 7x7 at
    32x384x14x14) T = 8 over W = 14 took 0.424 ms, its guarded sums spilled
    by ptxas; T = 7 divides it."""
    if width % tile == 0:
        return tile
    for t in range(tile - 1, -(-tile // 2) - 1, -1):
        if t % phases == 0 and width % t == 0:
            return t
    return tile


def _short_row(window_w, stride_w, out_w):
    """Whether a window ``window_w`` wide at stride ``stride_w`` runs over
    rows of at most SHORT_ROW outputs (see SHORT_ROW, WGRAD_SHORT_ROWS)."""
    return window_w >= WIDE_WINDOW and stride_w == 1 and out_w <= SHORT_ROW


def simt_depthwise(problem):
    """The simt-depthwise configs of a depthwise or small-group
    convolution, best first, or []."""
    grouped = not is_depthwise(problem) and is_small_groups(problem)
    if not is_depthwise(problem) and not grouped:
        return []
    if problem.anchor == "conv_wgrad":
        return wgrad_configs(problem)
    x, w = _roles(problem)
    y = problem.anchor_outputs[0]
    channels = y.shape[1]
    element_bytes = problem.anchor_inputs[0].element_bytes
    width = max(1, pointwise.VECTOR_BYTES // element_bytes)
    while width > 1 and channels % width:
        width //= 2
    stride = list(problem.attr("stride", ()) or (1,))
    wide = w.shape[-1] >= WIDE_WINDOW and stride[-1] == 1
    choices = WIDE_TILES if wide else TILES
    if grouped:
        groups, ins, outs = _group_shape(problem)
        width = _grouped_width(channels, outs, element_bytes)
        if problem.anchor == "conv_fprop":
            width, choices = _grouped_forward(channels, ins, outs, w.shape[-1], element_bytes,
                                              width, choices)
    taps = math.prod(w.shape[2:])
    out_w = y.shape[-1]
    # A strided data gradient's thread owns a whole number of stride phases
    # along W (depthwise_dgrad.py): its tile is rounded to that.
    phases = stride[-1] if problem.anchor == "conv_dgrad" else 1
    tiles = [t for t in choices if t <= max(1, out_w)] or [1]
    tiles = list(dict.fromkeys(_dividing(max(1, t // phases) * phases, out_w, phases)
                               for t in tiles))
    short = (not grouped and problem.anchor == "conv_fprop"
             and _short_row(w.shape[-1], stride[-1], out_w))
    if short:
        # A whole row a thread, 8 bytes of channels (see SHORT_ROW).
        while width > 1 and (width * element_bytes > SHORT_ROW_BYTES or channels % width):
            width //= 2
        tiles = [out_w] + [t for t in tiles if t != out_w]
    tile = tiles[0]
    work = -(-y.elements // (width * out_w)) * -(-out_w // tile)
    kind = f"{groups} groups of {ins} channels" if grouped else "depthwise"
    facts = (f"{kind} {problem.anchor}: {y.elements} outputs of {taps} taps, {channels} "
             f"channels; a thread per {width} channels x {tile} outputs along W ({work} "
             f"threads), the block's filters in shared memory")
    blocks = generic.block_choices(work, problem.sms)
    if short:
        blocks = [(256, "a whole row of a wide window a thread")] + \
            [(b, why) for b, why in blocks if b != 256]
    best = [Config(STRATEGY, (block, 1, 1), vector=width, tile=(1, tile),
                   reason=f"{facts}; block {block}: {why}")
            for block, why in blocks
            if tile <= 4 or block <= WIDE_MAX_BLOCK]
    return best + [best[0].replace(tile=(1, t), reason=f"{facts}; tile 1x{t} instead, "
                                   f"block {best[0].block[0]}") for t in tiles[1:]
                   if t <= 4 or best[0].block[0] <= WIDE_MAX_BLOCK]


def wgrad_configs(problem):
    """simt-depthwise configs of a depthwise filter gradient, best first
    (dnnc/codegen/gpu/window/depthwise_wgrad.py): a thread per channel
    vector and filter (or filter row), runs of ``tile`` output pixels along
    W as its work items, the reduction split over ``split`` blocks along x
    so that the grid is WGRAD_WAVES times the blocks the SMs hold at once
    (tile.py's register estimate; their partial sums then summed in order
    by a second launch). A depthwise thread owns WGRAD_DEPTHWISE_BYTES of
    channels, a grouped one 16 bytes (see WGRAD_DEPTHWISE_BYTES)."""
    dy, x = problem.anchor_inputs[0], problem.anchor_inputs[1]
    dw = problem.anchor_outputs[0]
    channels, window, cg = dy.shape[1], list(dw.shape[2:]), dw.shape[1]
    kg = channels // (x.shape[1] // cg)
    kind = "depthwise" if cg == kg == 1 else f"{x.shape[1] // cg} groups of {cg} channels"
    width = _grouped_width(channels, kg, x.element_bytes,
                           WGRAD_DEPTHWISE_BYTES if cg == 1 else pointwise.VECTOR_BYTES)
    out = list(dy.shape[2:])
    stride = list(problem.attr("stride", ()) or (1,))
    dilation = list(problem.attr("dilation", ()) or (1,))
    tile = WGRAD_TILE if stride[-1] == 1 else WGRAD_TILE // 2
    tile = max(1, min(tile, out[-1]))
    share, waves_first = WGRAD_WORKSPACE_SHARE, WGRAD_WAVES
    if stride[-1] == 1 and out[-1] <= SHORT_ROW:   # see WGRAD_SHORT_ROWS
        tile = _dividing(tile, out[-1])
        if _short_row(window[-1], stride[-1], out[-1]):
            share = WGRAD_SHORT_ROWS_SHARE
            waves_first = (2,) + tuple(w for w in WGRAD_WAVES if w != 2)
    # The partials written and read back are at most 1/share of the bytes of
    # x and dy the first launch reads.
    most = max(1, (x.elements + dy.elements) * x.element_bytes
               // (share * 2 * 4 * dw.elements))
    configs = []
    for waves, tile in [(w, tile) for w in waves_first] + [(waves_first[0], max(1, tile // 2))]:
        block = 256
        slice_, units, lanes = wgrad_lanes(channels // width, window, width, block, cg)
        threads = slice_ * units * lanes
        resident = blocks_per_sm(wgrad_registers(window, width, cg, tile, stride[-1],
                                                 x.element_bytes, dilation[-1]), threads)
        grid_y = channels // width // slice_
        items = dy.shape[0] * math.prod(out[:-1]) * -(-out[-1] // tile)
        # Rounded down: a grid of a wave's blocks and a few more would run a
        # second, nearly empty wave.
        split = max(1, min(-(-items // lanes), waves * resident * problem.sms // grid_y, most))
        share = "a share of the filter" if units > 1 else "the filter"
        config = Config(STRATEGY, (block, 1, 1), vector=width, tile=(1, tile), split=split,
                        reason=(f"{kind} conv_wgrad: {dw.elements} filter taps summed over "
                                f"{dy.elements // channels} pixels, {channels} channels; a "
                                f"thread per {width} channels x {share}, runs of {tile} "
                                f"pixels along W ({items} of them) over "
                                f"{split} x {lanes} threads ({waves} x {resident} blocks an "
                                f"SM), then a second launch sums the {split} partials in "
                                f"order"))
        if config not in configs:
            configs.append(config)
    return configs


def rank(problem, facts):
    """simt-depthwise's configs then simt-generic's, or [] where it does not apply."""
    fast = simt_depthwise(problem)
    if not fast:
        return []
    work = problem.anchor_outputs[0].elements
    return fast + generic.simt_generic(work, problem.sms, None, facts, fallback_of=STRATEGY)
