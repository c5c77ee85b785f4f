"""Window geometry shared by convolution and pooling: padded and
zero-interleaved copies of (N, C, *spatial) tensors, and the shape-only operand
that gives a linalg.generic the extent of its window loops.

``place`` is the one primitive. Padding is ``place`` with stride 1 and offset
``pre``; the data-gradient "insert stride - 1 zeros between dy elements, then
pad" is ``place`` with the stride and an offset that may be negative (rows
landing outside are cropped).
"""

from dnnc.codegen.linalg import emit
from dnnc.codegen.linalg.emit import PARALLEL, d


def place(value, lengths, strides, offsets, fill, element_type, scalar):
    """A new tensor (*lead, *lengths) of ``element_type`` holding ``fill``,
    with ``scalar(value[*lead, *p])`` written at [*lead, *(p * stride + offset)]
    for every p that lands inside. The spatial dims are the last
    ``len(lengths)`` dims; ``scalar`` maps one stored element to the new type
    (None: a plain copy, the element types being equal).
    """
    shape = emit.shape_of(value)
    nd = len(lengths)
    lead = list(shape[:len(shape) - nd])
    spatial = shape[len(shape) - nd:]
    rank = len(shape)
    out = emit.filled(lead + list(lengths), element_type, fill, unique=True)
    if not all(shape) or not all(lengths):
        return out  # nothing to write (a zero-size slice may not even be taken)
    first, counts = [], []
    for n, length, s, off in zip(spatial, lengths, strides, offsets):
        # Valid p: 0 <= p < n and 0 <= p * s + off < length.
        lo = max(0, -(off // s))  # ceil(-off / s)
        hi = min(n - 1, (length - 1 - off) // s)
        if hi < lo:
            return out  # nothing lands inside: all fill
        first.append(lo)
        counts.append(hi - lo + 1)
    offsets_out = [0] * len(lead) + [p * s + off for p, s, off in zip(first, strides, offsets)]
    sizes = lead + counts
    steps = [1] * len(lead) + list(strides)
    # Element k of the written slice (spatial dim i) is value element
    # first[i] + k: read that window of value (a view, no copy).
    source = value
    if any(first) or list(counts) != list(spatial):
        source = emit.extract_slice(value, [0] * len(lead) + first, sizes, [1] * rank)

    def copy(part):
        if scalar is None:
            return emit.copy(source, part)
        return emit.generic([source], [part], [emit.identity(rank)] * 2, [PARALLEL] * rank,
                            lambda x, _: [scalar(x)])[0]

    return emit.write_into(out, offsets_out, sizes, steps, copy)


def pad(value, pre, post, fill, element_type, scalar):
    """``value`` padded by ``pre`` / ``post`` elements on each spatial dim."""
    shape = emit.shape_of(value)
    spatial = shape[len(shape) - len(pre):]
    lengths = [n + a + b for n, a, b in zip(spatial, pre, post)]
    return place(value, lengths, [1] * len(pre), pre, fill, element_type, scalar)


def window_operand(window):
    """A shape-only tensor whose indexing map (the window loops alone) lets
    linalg infer the window loop ranges; bodies ignore its element."""
    return emit.empty(list(window), emit.f32())


def window_map(n_loops, first_window_loop, nd):
    return emit.amap(n_loops, [d(first_window_loop + i) for i in range(nd)])
