"""The tile of a window program: the outputs a thread of a forward pool owns
per spatial dim; the channels a block of a depthwise convolution owns, and
how a depthwise filter gradient's block divides its threads. It imports no
MLIR, so that the heuristics (dnnc/heuristics/window.py, depthwise.py),
which choose the tile, read it as the emitters (forward.py,
depthwise_wgrad.py) do; the rest of the window programs is listed in
__init__.py.
"""


def spatial_tile(tile, dims):
    """A config's ``tile`` as outputs per spatial dim of a ``dims``-D
    window: a shorter tile names the last dims (``(2,)`` is 2 along W), the
    others take 1; () is one output a thread."""
    tile = list(tile or ())[-dims:] if dims else []
    return [1] * (dims - len(tile)) + [max(1, int(t)) for t in tile]


# Shared memory a depthwise convolution block's filters may take (their
# element type: bf16, f16 or f32): small enough that an SM holds 8 blocks.
SMEM_BYTES = 24 * 1024


def channel_slice(groups, width, taps, element_bytes, threads):
    """Channel groups (of ``width`` channels) a block of a depthwise
    convolution owns (depthwise_emit.py): the largest divisor of ``groups``
    whose filters (``taps`` each) fit SMEM_BYTES and that is no more than
    the block's ``threads``."""
    best = 1
    for k in range(1, groups + 1):
        if groups % k == 0 and k <= threads and k * width * taps * element_bytes <= SMEM_BYTES:
            best = k
    return best


# f32 accumulators a thread of a depthwise filter gradient may hold (its
# taps x channels: depthwise_wgrad.py); above, a thread takes one filter row.
MAX_ACCUMULATORS = 96


def wgrad_units(window, width, cg=1):
    """(filter rows, input channels) a thread of a depthwise or grouped
    filter gradient takes (depthwise_wgrad.py), of a ``window`` filter,
    ``width`` output channels and ``cg`` input channels a group: the whole
    filter (rows 0) and all ``cg`` where its accumulators fit
    MAX_ACCUMULATORS, else one filter row (a 1-D filter: the whole of it)
    and the most of the ``cg`` that fit (a divisor of ``cg``)."""
    taps = 1
    for k in window:
        taps *= k
    if taps * cg * width <= MAX_ACCUMULATORS:
        return 0, cg
    rows = 1
    for k in window[:-1]:
        rows *= k
    row_taps = window[-1] if len(window) > 1 else taps
    chunk = max((d for d in range(1, cg + 1)
                 if cg % d == 0 and row_taps * d * width <= MAX_ACCUMULATORS), default=1)
    return (rows if len(window) > 1 else 0), chunk


# Lanes a depthwise filter gradient's block keeps at least, where its
# channels allow: the block sums its lanes before writing a partial, so the
# more lanes, the fewer partials for as many threads.
WGRAD_MIN_LANES = 8


def wgrad_lanes(groups, window, width, threads, cg=1):
    """(channel groups a block owns, threads of one channel group that
    share out the filter (its rows, its input channels: wgrad_units),
    lanes: threads that share a channel group and a unit of the filter) of
    a depthwise or grouped filter gradient's partial-sums block of about
    ``threads``: the most channel groups that leave WGRAD_MIN_LANES lanes."""
    rows, chunk = wgrad_units(window, width, cg)
    units = max(1, rows) * (cg // chunk)
    slice_ = max((k for k in range(1, groups + 1)
                  if groups % k == 0 and k * units * WGRAD_MIN_LANES <= threads), default=1)
    return slice_, units, max(1, threads // (slice_ * units))
