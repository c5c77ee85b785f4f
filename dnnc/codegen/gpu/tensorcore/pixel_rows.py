"""When an implicit GEMM's activation is a plain matrix, for tc-sm90's
loaders (sm90/im2col.py's ``PixelRows``) and the heuristics that choose
them (dnnc/heuristics/contraction.py, ``tiled`` in the config).

A forward convolution of a 1x1 filter with unit stride and no padding
reads, at its only tap, input pixel m for output pixel m: its A is x's
pixels as rows, the ``[N*H*W, C]`` matrix, where x is channels-last with
its pixels one pitch apart (rows, then images, dense). The stride-1 data
gradient of such a convolution is the same product of dy (its padding is
the filter's extent less the forward padding: none). TMA then loads A's
tile as a matmul's, a tiled box of BM rows by BK channels, instead of in
im2col mode; either reads the same bytes in 128-byte rows, and the
convolution is then the matmul kernel as it runs a plain GEMM.

Not taken here: strides (the rows would step pixels s apart: an element
stride on a 4-D box), grouped convolutions (each group's channels are an
offset the im2col loader applies), a prologue on x (its loader's padding
predicate reads the convolution's geometry) and filter gradients (x is
their B, read MN-major in boxes of 64 channels).
"""


def problem(direction, window, stride, pre, post, groups=1, prologue=False):
    """Why a convolution (``direction`` "fprop", "dgrad" or "wgrad"; the
    filter's spatial ``window``; ``stride``; the forward convolution's
    ``pre`` and ``post`` padding, per spatial dim) does not read its
    activation as a plain matrix, or None."""
    if direction == "wgrad":
        return "a filter gradient reads x as its B, MN-major"
    if any(r != 1 for r in window):
        return f"a {'x'.join(map(str, window))} filter (1x1 only)"
    if any(s != 1 for s in stride):
        return f"stride {list(stride)} (unit stride only)"
    if any(pre) or any(post):
        return f"padding {list(pre)} / {list(post)} (none only)"
    if groups != 1:
        return f"{groups} groups"
    if prologue:
        return "a prologue on x"
    return None


def dense_pitch(shape, strides):
    """The pitch between consecutive pixels of a channels-last activation
    view ``[N, (D,) H, W, C]`` (``shape``, ``strides``) whose pixels form
    one matrix (each dim of more than one element steps by the pitch times
    the pixels inside it), or None."""
    pitch = None
    inner = 1        # pixels inside the current dim
    for size, stride in zip(reversed(shape[:-1]), reversed(strides[:-1])):
        if size != 1:
            if pitch is None:
                pitch = stride // inner if stride % inner == 0 else -1
            if pitch < 0 or stride != pitch * inner:
                return None
        inner *= size
    return pitch if pitch is not None else shape[-1]
