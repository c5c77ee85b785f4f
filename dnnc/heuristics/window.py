"""Rules for pooling kernels: the simt-window strategy.

A forward pooling kernel (with its fused pointwise epilogue) runs as a window
program (dnnc/codegen/gpu/window/windows.py): a thread per tile of output pixels
and group of ``vector`` channels, the windows unrolled in registers.
``vector`` is 16 bytes of x's element type, halved until it divides C; it
only takes effect where x's channels are contiguous in memory (channels-
last) — elsewhere a thread owns one output element per pixel, the threads
running along x's contiguous dim.

``tile`` is the outputs a thread owns per spatial dim (the last dims when
shorter: ``(2, 2)`` is 2 x 2 along H and W; () is one). Its x pixels are
loaded once for all of them (``tile_loads``), so:

* where windows overlap (window > stride along H or W), neighbouring
  outputs share taps and a tile of 2 along each overlapping dim of the
  last two reads fewer: 3x3 / 2 loads 25 pixels for 2 x 2 outputs, not 36,
  and the L2 serves the x rows two output rows share once, not twice; the
  tile halves back while a thread would load more than ``MAX_TILE_LOADS``
  pixels (16 bytes each, all in flight: registers);
* where they do not (2x2 / 2), no load is shared, and a tile of 2 along H
  pays only when one output a thread makes more than one wave of threads
  (``SM_THREADS`` an SM): the grid then fits in one wave, without the
  half-full second wave a 1.5-wave grid ends on; its threads each keep 2
  windows' loads in flight.

The block size follows simt-generic's rules for the number of threads
(dnnc/heuristics/generic.py). A window of more than ``MAX_TAPS``
taps (a global pool) stays on simt-generic, ranked by
dnnc/heuristics/reduction.py. The backward gathers dx
(dnnc/codegen/gpu/window/gradients.py): a thread per tile of s_1 x s_2 ...
input pixels (those the same windows cover; ``tile`` does not apply) and
``vector`` channels; a max gradient whose threads would load more than
``MAX_GATHER_TAPS`` x taps stays on simt-generic too.
"""

import math

from dnnc.codegen.gpu.window.tile import spatial_tile
from dnnc.heuristics import generic, pointwise, reduction
from dnnc.heuristics.config import Config

# Taps a window program unrolls (dnnc/codegen/gpu/window/program.py's MAX_TAPS) and
# x taps a thread of a max window gradient loads (window/gradients.py's
# MAX_GATHER_TAPS), repeated here so that the heuristics import no MLIR.
MAX_TAPS = 64
MAX_GATHER_TAPS = 256
# x pixels a forward thread loads for its tile, chosen by the heuristics: 3x3
# / 2's 2 x 2 tile loads 25 (74 registers for 16-byte vectors of bf16, no
# spills); 2x2 / 2's 2 x 1 loads 8 (32 registers). An override may ask for
# up to MAX_TAPS.
MAX_TILE_LOADS = 32
SM_THREADS = 2048


def tile_loads(window, stride, tile):
    """x pixels a forward thread loads for its ``tile`` of outputs (per
    spatial dim, as ``spatial_tile`` gives it): per dim, the rows
    u * s + t its windows touch, each loaded once."""
    return math.prod(len({u * s + t for u in range(n) for t in range(w)})
                     for w, s, n in zip(window, stride, tile))


def forward_tile(window, stride, out, channels_threads, sms):
    """(tile, why) of a forward pool of output spatial dims ``out`` (see the
    module doc): ``channels_threads`` is the threads one output a thread
    makes."""
    nd = len(window)
    overlap = [i for i in range(max(0, nd - 2), nd) if window[i] > stride[i] and out[i] > 1]
    if overlap:
        tile = [1] * nd
        for i in overlap:
            tile[i] = 2
        while tile_loads(window, stride, tile) > MAX_TILE_LOADS and max(tile) > 1:
            tile[tile.index(max(tile))] //= 2
        loads = tile_loads(window, stride, tile)
        if math.prod(tile) == 1:
            return (), f"one output a thread (a tile would load more than {MAX_TILE_LOADS})"
        return tuple(tile), (f"overlapping windows: {loads} loads for "
                             f"{'x'.join(map(str, tile))} outputs, not "
                             f"{math.prod(window) * math.prod(tile)}")
    if nd >= 2 and out[-2] > 1 and channels_threads > SM_THREADS * sms:
        tile = [1] * nd
        tile[-2] = 2
        return tuple(tile), (f"{channels_threads} threads at one output a thread are more than "
                             f"a wave ({SM_THREADS} x {sms} SMs): 2 outputs a thread along H")
    return (), "one output a thread"


def gather_taps(mode, window, stride):
    """Loads a thread of a window gradient makes (window/gradients.py): the
    (W - 1) / s + 1 windows per dim covering its tile of s_1 x s_2 ... input
    pixels, times the window's taps for max."""
    windows = math.prod((w - 1) // s + 1 for w, s in zip(window, stride))
    return windows * math.prod(window) if mode == "max" else windows


def simt_window(problem):
    """The simt-window configs of a pooling problem, forward (a thread per
    output pixel) or backward (a thread per input pixel, dx gathered), or []."""
    backward = problem.anchor == "pooling_backward"
    inputs = problem.anchor_inputs
    x = (inputs[1] if backward else inputs[0]) if len(inputs) > backward else None
    y = problem.anchor_outputs[0] if problem.anchor_outputs else None
    window = problem.attr("window", ())
    stride = problem.attr("stride", ()) or (1,) * len(window)
    if problem.anchor not in ("pooling", "pooling_backward") or x is None or y is None \
            or len(x.shape) < 3 or not window or math.prod(window) > MAX_TAPS:
        return []
    taps = math.prod(window)
    if backward:
        taps = gather_taps(problem.attr("mode", "max"), window, stride)
        if taps > MAX_GATHER_TAPS:
            return []
    channels = x.shape[1]
    width = max(1, pointwise.VECTOR_BYTES // x.element_bytes)
    while width > 1 and channels % width:
        width //= 2
    work = -(-y.elements // width)
    if backward:  # a thread per tile of s_1 x s_2 ... input pixels
        pre = problem.attr("pre_padding", ()) or (0,) * len(window)
        tiles = math.prod((n - 1 + p) // s + 1 for n, p, s in zip(x.shape[2:], pre, stride))
        work = x.shape[0] * -(-channels // width) * tiles
    tile, why_tile = (), ""
    if not backward:
        tile, why_tile = forward_tile(list(window), list(stride), y.shape[2:], work,
                                      problem.sms)
        work = -(-work // math.prod(tile or (1,)))
    facts = (f"pooling: {y.elements} outputs of {taps} taps; channels-last: a thread per "
             f"{'x'.join(map(str, tile or (1,)))} pixels and {width} channels ({work} "
             f"threads), else per output; {why_tile}")
    if backward:
        facts = (f"pooling_backward: {y.elements} dx elements gathered, {taps} taps a "
                 f"thread; a thread per tile of {'x'.join(str(s) for s in stride)} pixels and "
                 f"{width} channels where C is contiguous ({work} threads), else 1 channel")
    best = [Config("simt-window", (block, 1, 1), vector=width, tile=tile,
                   reason=f"{facts}; block {block}: {why}")
            for block, why in generic.block_choices(work, problem.sms)]
    if backward:
        return best
    # The other tiles, for the tuner: one output a thread, and the default's
    # doubled along H (along W where only H is tiled).
    others = [()] if tile else []
    grown = list(spatial_tile(tile, len(window)))
    if len(grown) >= 2:
        grown[-1 if grown[-1] == 1 and grown[-2] > 1 else -2] *= 2
        if tile_loads(window, stride, grown) <= MAX_TAPS:
            others.append(tuple(grown))
    return best + [best[0].replace(tile=t, reason=f"{facts}; tile "
                                   f"{'x'.join(map(str, t or (1,)))} instead, block "
                                   f"{best[0].block[0]}")
                   for t in others if t != tile]


def rank(problem):
    fast = simt_window(problem)
    rest = reduction.rank(problem)
    if not fast:
        return rest
    facts = f"{problem.anchor}: {problem.anchor_outputs[0].elements} windows"
    return fast + generic.simt_generic(problem.anchor_outputs[0].elements, problem.sms, None,
                                       facts, fallback_of="simt-window")
