"""Ragged (packed, "THD") attention tensors to padded ones and back, for the
decomposition of sdpa and sdpa_backward (semantics: the ragged offsets in
dnnc/dialect/ops_attention.py).

A ragged tensor of logical dims (B, H, S, D) is, row by row, a buffer of T =
B x S packed rows of (H, D): row t is the tensor's element (t // S, :, t %
S, :). Entry b's row s is packed row R[b] + s, R[b] = offsets[b] / stride
(the op's ragged_strides entry), for s below the entry's length L[b]. There
is no gather op among the primitive ones, so both directions select with a
one-hot comparison and sum, as the paged cache's gather does:

    padded[b, s]  = sum_t select(t == R[b] + s and s < L[b], packed[t], 0)
    packed[t]     = sum_(b, s) select(t == R[b] + s and s < L[b], padded[b, s], 0)

Selecting rather than multiplying keeps rows that hold inf or NaN (the
buffer past the last entry) out of the sums. The packed rows no entry owns
come out 0. The work is B x S x T x H x D per tensor: right for the CPU back
end and simt-generic (what runs where tc-sm90 does not), not a fast path.

R[b] is computed in f32 as floor(offset / stride + 1/2): exact while the
offsets are below 2^24, and for larger ones as long as f32's rounding of
the offset (at most offset x 2^-24) stays below half a row.
"""

from dnnc.dialect.types import data_type

F32 = data_type.FLOAT


def _first_rows(b, offsets, stride, batch):
    """R[b] of each entry as f32 (B, 1, 1, 1, 1): the packed row where it
    starts."""
    off = b.cast(b.emit("slice", {"x": offsets}, {"start": [0, 0, 0, 0],
                                                  "limit": [batch, 1, 1, 1],
                                                  "step": [1, 1, 1, 1]}), F32)
    rows = b.unary("floor", b.add(b.div(off, float(stride)), 0.5))
    return b.reshape(rows, (batch, 1, 1, 1, 1))


def _hits(b, bshd, offsets, stride, lengths):
    """(hit, rows, packed) for a tensor ``bshd`` (B, S, H, D): hit an i1
    tensor (B, S, T, H, D), true where packed row t is entry b's row s
    below its length (``lengths``, f32 (B, 1, 1, 1), clamped to [0, S]);
    rows ``bshd`` as (B, S, 1, H, D) and packed as (1, 1, T, H, D)."""
    batch, length, heads, d = b.shape_of(bshd)
    rows = b.reshape(bshd, (batch, length, 1, heads, d))
    packed = b.reshape(bshd, (1, 1, batch * length, heads, d))
    s = b.emit("gen_index", {"x": rows}, {"axis": 1})
    t = b.emit("gen_index", {"x": packed}, {"axis": 2})
    first = _first_rows(b, offsets, stride, batch)
    owned = b.binary("cmp_eq", t, b.add(first, s))
    below = b.binary("cmp_lt", s, b.reshape(lengths, (batch, 1, 1, 1, 1)))
    return b.binary("logical_and", owned, below), rows, packed


def padded(b, x, offsets, stride, lengths):
    """The padded (B, H, S, D) tensor of ragged ``x`` (same dims): entry b's
    rows below its length from their packed rows, 0 past it."""
    bshd = b.transpose(x, [0, 2, 1, 3])
    hit, _, packed = _hits(b, bshd, offsets, stride, lengths)
    picked = b.sum(b.select(hit, packed, 0.0, out=b.dtype_of(x)), [2], keepdims=False)
    return b.transpose(picked, [0, 2, 1, 3])


def packed(b, x, offsets, stride, lengths, out=None):
    """Padded (B, H, S, D) ``x`` as a ragged tensor of the same dims: entry
    b's rows below its length at their packed rows, 0 in the rows no entry
    owns."""
    batch, heads, length, d = b.shape_of(x)
    bshd = b.transpose(x, [0, 2, 1, 3])
    hit, rows, _ = _hits(b, bshd, offsets, stride, lengths)
    rows_out = b.sum(b.select(hit, rows, 0.0), [0, 1], keepdims=False, out=out)
    return b.transpose(b.reshape(rows_out, (batch, length, heads, d)), [0, 2, 1, 3])
