"""Rules for pooling kernels: the simt-window strategy.

A forward pooling kernel (with its fused pointwise epilogue) runs as a window
program (dnnc/codegen/gpu/windows.py): a thread per output pixel and group
of ``vector`` channels, the window unrolled in registers. ``vector`` is 16
bytes of x's element type, halved until it divides C; it only takes effect
where x's channels are contiguous in memory (channels-last) — elsewhere a
thread owns one output element, the threads running along x's contiguous dim.
The block size follows simt-generic's rules for the number of threads
(dnnc/heuristics/generic.py). A window of more than ``windows.MAX_TAPS``
taps (a global pool) stays on simt-generic, ranked by
dnnc/heuristics/reduction.py. The backward gathers dx
(dnnc/codegen/gpu/window_gradients.py): a thread per tile of s_1 x s_2 ...
input pixels (those the same windows cover) and ``vector`` channels; a max
gradient whose threads would load more than ``MAX_GATHER_TAPS`` x taps stays
on simt-generic too.
"""

import math

from dnnc.heuristics import generic, pointwise, reduction
from dnnc.heuristics.config import Config

# Taps a window program unrolls (dnnc/codegen/gpu/windows.py's MAX_TAPS) and
# x taps a thread of a max window gradient loads (window_gradients.py's
# MAX_GATHER_TAPS), repeated here so that the heuristics import no MLIR.
MAX_TAPS = 64
MAX_GATHER_TAPS = 256


def gather_taps(mode, window, stride):
    """Loads a thread of a window gradient makes (window_gradients.py): the
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
    facts = (f"pooling: {y.elements} outputs of {taps} taps; channels-last: a thread per "
             f"pixel and {width} channels ({work} threads), else per output")
    if backward:
        facts = (f"pooling_backward: {y.elements} dx elements gathered, {taps} taps a "
                 f"thread; a thread per tile of {'x'.join(str(s) for s in stride)} pixels and "
                 f"{width} channels where C is contiguous ({work} threads), else 1 channel")
    return [Config("simt-window", (block, 1, 1), vector=width,
                   reason=f"{facts}; block {block}: {why}")
            for block, why in generic.block_choices(work, problem.sms)]


def rank(problem):
    fast = simt_window(problem)
    rest = reduction.rank(problem)
    if not fast:
        return rest
    facts = f"{problem.anchor}: {problem.anchor_outputs[0].elements} windows"
    return fast + generic.simt_generic(problem.anchor_outputs[0].elements, problem.sms, None,
                                       facts, fallback_of="simt-window")
