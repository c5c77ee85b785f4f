"""The tile of a window program: the outputs a thread of a forward pool owns
per spatial dim; the channels a block of a depthwise convolution owns, and
how a depthwise filter gradient's block divides its threads. It imports no MLIR, so that the heuristics
(dnnc/heuristics/window.py), which choose the tile, read it as the forward
emitter (forward.py) does; the rest of the window programs is listed in
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


def rows_split(window, width):
    """Whether a thread of a depthwise filter gradient of a ``window``
    filter and ``width`` channels takes one filter row rather than the
    whole filter (depthwise_wgrad.py)."""
    taps = 1
    for k in window:
        taps *= k
    return taps * width > MAX_ACCUMULATORS and len(window) > 1


# Lanes a depthwise filter gradient's block keeps at least, where its
# channels allow: the block sums its lanes before writing a partial, so the
# more lanes, the fewer partials for as many threads.
WGRAD_MIN_LANES = 8


def wgrad_lanes(groups, window, width, threads):
    """(channel groups a block owns, filter rows a lane's threads cover,
    lanes: threads that share a channel group and tap set) of a depthwise
    filter gradient's partial-sums block of about ``threads``: the most
    channel groups that leave WGRAD_MIN_LANES lanes."""
    rows = 1
    if rows_split(window, width):
        for k in window[:-1]:
            rows *= k
    slice_ = max((k for k in range(1, groups + 1)
                  if groups % k == 0 and k * rows * WGRAD_MIN_LANES <= threads), default=1)
    return slice_, rows, max(1, threads // (slice_ * rows))

