"""The tile of a window program: the outputs a thread of a forward pool owns
per spatial dim; and the channels a block of a depthwise convolution owns. It imports no MLIR, so that the heuristics
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
