"""Strides the cases declare: channels-last, padded rows and interleaved heads."""


def channels_last(dims):
    """Strides of logical (N, C, *spatial) dims stored (N, *spatial, C)."""
    strides, step = [0] * len(dims), dims[1]
    strides[1] = 1
    for d in reversed(range(2, len(dims))):
        strides[d] = step
        step *= dims[d]
    strides[0] = step
    return strides


def padded_rows(dims, pad):
    """Strides of ``dims`` stored row-major but for ``pad`` unused elements
    after each innermost row: a slice of a buffer ``pad`` elements wider."""
    strides, step = [0] * len(dims), 1
    for d in reversed(range(len(dims))):
        strides[d] = step
        step *= dims[d] + (pad if d == len(dims) - 1 else 0)
    return strides


def heads_interleaved(dims):
    """Strides of logical (B, H, S, D) dims stored (B, S, H, D): the heads of
    a position side by side, as a projection's output reshaped to heads
    lies (PyTorch's [B, S, H, D] transposed to [B, H, S, D])."""
    b, h, s, d = dims
    return [s * h * d, d, h * d, 1]
