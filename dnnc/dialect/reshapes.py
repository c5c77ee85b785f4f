"""How a reshape regroups dims, and what a broadcast operand becomes across one.

A reshape keeps the row-major order of the elements, so it pairs runs of its
operand's dims with runs of its result's dims whose sizes multiply to the
same count (``groups``): [8192, 768] -> [8, 1024, 768] pairs (8192) with
(8, 1024) and (768) with (768). A pointwise op over the result can run over
the operand's shape instead (dnn-sink-reshapes) when each of its other
operands, aligned on the right against the result as broadcasting aligns
it, either spans a whole run of the result (then it spans the paired run of
the operand: a residual [8, 1024, 768] becomes [8192, 768]) or is 1 along all
of it (then it is 1 along the paired run: a bias [768] stays [768]).
An operand that varies along part of a run only (a per-batch [8, 1, 768]
against (8, 1024), or a bias [768] against (3, 768) that a reshape made of a
GEMM's 2304 columns) has no such shape: ``across`` says why.

Test: test/python/test_fusion_reshapes.py.
"""

import math


def groups(src, dst):
    """[(src dims, dst dims)]: the runs of dims of shapes ``src`` and ``dst``
    (equal element counts, no zero dims) that hold the same elements, in
    order, each a tuple of dim indices (a run of size-1 dims may be empty on
    one side). None when a dim is 0 or the counts differ."""
    src, dst = list(src), list(dst)
    if 0 in src or 0 in dst or math.prod(src) != math.prod(dst):
        return None
    out, i, j = [], 0, 0
    while i < len(src) or j < len(dst):
        gi, gj, ps, pd = [], [], 1, 1
        if i < len(src):
            gi.append(i)
            ps = src[i]
            i += 1
        if j < len(dst):
            gj.append(j)
            pd = dst[j]
            j += 1
        while ps != pd:
            if ps < pd:
                gi.append(i)
                ps *= src[i]
                i += 1
            else:
                gj.append(j)
                pd *= dst[j]
                j += 1
        out.append((tuple(gi), tuple(gj)))
    return out


def across(shape, src, dst):
    """(shape over ``src``, None) for an operand of ``shape`` that broadcasts
    to ``dst``, the result of a reshape of a ``src``-shaped tensor: the shape
    (rank of ``src``) that holds the same elements broadcast to ``src`` (see
    the module docstring); (None, why) when there is none."""
    shape, src, dst = list(shape), list(src), list(dst)
    if len(shape) > len(dst):
        return None, f"operand {shape} has more dims than the result {dst}"
    aligned = [1] * (len(dst) - len(shape)) + shape
    if any(a not in (1, d) for a, d in zip(aligned, dst)):
        return None, f"operand {shape} does not broadcast to {dst}"
    runs = groups(src, dst)
    if runs is None:
        return None, f"a reshape of {src} to {dst} regroups no dims"
    out = []
    for gi, gj in runs:
        moving = [d for d in gj if dst[d] != 1]   # size-1 dims fit either way
        whole = all(aligned[d] == dst[d] for d in moving)
        if whole:
            out += [src[d] for d in gi]
        elif all(aligned[d] == 1 for d in moving):
            out += [1] * len(gi)
        else:
            part = [aligned[d] for d in gj]
            return None, (f"operand {shape} is {part} along the dims {[dst[d] for d in gj]} "
                          f"that the reshape makes of {[src[d] for d in gi]}: it varies "
                          f"along part of them only")
    return out, None


def same_broadcast(a, b):
    """True when shapes ``a`` and ``b`` differ only by leading 1s (the same
    operand to a broadcasting op)."""
    a, b = list(a), list(b)
    while a and a[0] == 1:
        a.pop(0)
    while b and b[0] == 1:
        b.pop(0)
    return a == b
