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


# f32 accumulators a thread of a filter gradient may hold (its taps x
# channels: depthwise_wgrad.py); above, a thread takes one filter row.
# A grouped thread feeds each x load to the accumulators of its Cg input
# channels, so its loads are few for its work: MAX_ACCUMULATORS. A
# depthwise thread's x load feeds one accumulator a tap: it does little
# work per load, and what hides the loads' latency is the number of warps
# an SM holds. DEPTHWISE_ACCUMULATORS keeps such a thread near 64
# registers (ptxas: a 3x3's rows of 3 taps x 4 channels take 62 with runs
# of 8 pixels, the whole filter's 9 x 4 take 102, 9 x 8 take 178), so that
# four 256-thread blocks fit an SM where one did.
MAX_ACCUMULATORS = 96
DEPTHWISE_ACCUMULATORS = 32


def accumulator_budget(cg):
    """f32 accumulators a filter gradient's thread may hold, of ``cg``
    input channels a group (1: depthwise)."""
    return DEPTHWISE_ACCUMULATORS if cg == 1 else MAX_ACCUMULATORS


def wgrad_units(window, width, cg=1):
    """(filter rows, input channels) a thread of a depthwise or grouped
    filter gradient takes (depthwise_wgrad.py), of a ``window`` filter,
    ``width`` output channels and ``cg`` input channels a group: the whole
    filter (rows 0) and all ``cg`` where its accumulators fit
    ``accumulator_budget``, else one filter row (a 1-D filter: the whole of
    it) and the most of the ``cg`` that fit (a divisor of ``cg``)."""
    most = accumulator_budget(cg)
    taps = 1
    for k in window:
        taps *= k
    if taps * cg * width <= most:
        return 0, cg
    rows = 1
    for k in window[:-1]:
        rows *= k
    row_taps = window[-1] if len(window) > 1 else taps
    chunk = max((d for d in range(1, cg + 1)
                 if cg % d == 0 and row_taps * d * width <= most), default=1)
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


# Registers a partial-sums thread holds besides its accumulators and
# pixels (addresses, indices, the loop), and what an SM offers.
WGRAD_OVERHEAD_REGISTERS = 16
SM_REGISTERS = 65536
SM_THREADS = 2048


def wgrad_registers(window, width, cg, tile, stride, element_bytes, dilation=1):
    """About the registers ptxas gives a depthwise or grouped filter
    gradient's partial-sums thread (depthwise_wgrad.py): its f32
    accumulators, the run's ``tile`` dy vectors and one filter row's x
    pixels as loaded (``element_bytes`` each; ``stride`` and ``dilation``
    along W), and
    WGRAD_OVERHEAD_REGISTERS. (ptxas 13 on sm_90a, bf16, runs of 8: a
    3x3's rows of 3 taps x 4 channels 62 against 64 here, a 7x7's 7 x 4
    96 against 88: either way four and two 256-thread blocks an SM; a
    3x3's whole filter x 8 channels 178 against 160: one.)"""
    rows, chunk = wgrad_units(window, width, cg)
    taps = 1
    for k in window:
        taps *= k
    row_taps = window[-1]
    accumulators = (row_taps if rows else taps) * chunk * width
    pixels = (tile - 1) * stride + (row_taps - 1) * dilation + 1
    loaded = (tile * width + pixels * max(width, chunk)) * element_bytes
    return accumulators + -(-loaded // 4) + WGRAD_OVERHEAD_REGISTERS


def blocks_per_sm(registers, threads):
    """Blocks of ``threads`` threads of ``registers`` registers each that an
    SM holds at once (registers are given 8 at a time, threads a warp at a
    time)."""
    warps = -(-threads // 32) * 32
    per_thread = -(-min(255, registers) // 8) * 8
    return max(1, min(SM_REGISTERS // (per_thread * warps), SM_THREADS // warps))
