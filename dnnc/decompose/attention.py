"""Scaled dot-product attention, forward and backward, as matmuls, reductions
and pointwise ops (semantics: dnnc/dialect/ops_attention.py).

    s = scale * q @ k^T (+ bias)
    s = select(col > row + shift, -inf, s)           causal; row and col from dnn.gen_index
    s = select(col <= row + shift - window, -inf, s) a sliding window
    s = select(row >= Lq or col >= Lkv, -inf, s)     padding; Lq, Lkv the batch
                                                     entry's lengths, clamped
    m = max(s), shift = 0 where m = -inf else m
    e = exp(s - shift), l = sum(e)
    o = (e @ v) / (l, or 1 where l = 0)  stats = shift + log(l)

A fully masked row (all scores -inf) has e = 0 and l = 0, so o = 0 and
stats = -inf, never NaN. The backward recomputes p = exp(s - stats) (0 where
stats = -inf) and uses

    dv = p^T @ do,  dp = do @ v^T,  ds = p * (dp - rowsum(do * o))
    dq = scale * ds @ k,  dk = scale * ds^T @ q
    dbias = ds, summed over the dims the bias broadcasts on (compute_dbias)

A paged k or v (a cache (P, Hk, page_size, D) and a table (B, 1, T, 1)) is
first gathered into a contiguous (B, Hk, Skv, D) tensor without a gather op:

    hit = (table[b, t] == p)                 p from dnn.gen_index over the pages
    pages[b, t] = sum_p select(hit, cache[p], 0)
    kv = reshape(transpose(pages)) [:, :, :Skv], 0 where position >= Lkv

Selecting instead of multiplying by a one-hot keeps pages that hold inf or
NaN (any page the table does not name) out of the sum; zeroing the
positions from Lkv on keeps those of stale table entries out of e @ v. The
select is fused into the sum's kernel, so memory is that of the contiguous
K and V, but the work is B * T * (cache size): correct for the CPU back end
and simt-generic (page sizes tc-sm90 does not read), not a fast path.

Ragged (packed) q, k, v, o and their gradients are made padded before all
this, and ragged results packed after it (dnnc/decompose/ragged.py).

Grouped-query attention (H query heads, Hk kv heads) splits the heads: q and
the per-query-head tensors become (B, Hk, H/Hk, S, D), k and v (B, Hk, 1, S, D),
so batched matmuls broadcast each kv head over its group; dk and dv are summed
over the group dim. Without GQA the tensors stay 4-D.
"""

from types import SimpleNamespace

from dnnc.decompose import ragged
from dnnc.decompose.common import NEG_INF
from dnnc.dialect.ops_attention import BACKWARD_RAGGED, RAGGED, paged
from dnnc.dialect.types import data_type

F32 = data_type.FLOAT


def _group(b, t, hk, per):
    """(B, h, ...) -> (B, Hk, per, ...) for query-head tensors (h = Hk * per),
    (B, h, 1, ...) for kv tensors and broadcast biases; t itself when per = 1."""
    if per == 1:
        return t
    shape = b.shape_of(t)
    split = (hk, per) if shape[1] == hk * per else (shape[1], 1)
    return b.reshape(t, shape[:1] + split + shape[2:])


def _ungroup(b, t):
    """(B, Hk, per, ...) -> (B, Hk * per, ...); 4-D tensors pass through."""
    shape = b.shape_of(t)
    if len(shape) == 4:
        return t
    return b.reshape(t, (shape[0], shape[1] * shape[2]) + shape[3:])


def _sum_group(b, t, per, out=None):
    """Sum over the group dim of (B, Hk, per, ...); t itself when per = 1."""
    if per == 1:
        return b.cast(t, out)
    return b.sum(t, [2], keepdims=False, out=out)


def _heads(b, v):
    hk = b.shape_of(v.operands["k"])[1]
    return hk, b.shape_of(v.operands["q"])[1] // hk


def diagonal_shift(attrs, sq, skv):
    """The column of row 0's diagonal: 0 top-left aligned, Skv - Sq
    bottom-right."""
    return skv - sq if attrs.get("diagonal", "top_left") == "bottom_right" else 0


def _lengths(b, v, hk, per, sq, skv):
    """Each batch entry's (Lq, Lkv) as f32 (B, 1, 1, 1) tensors (grouped like
    the scores), clamped to [0, Sq] and [0, Skv]."""
    def one(name, limit):
        length = b.cast(v.operands[name], F32)
        length = b.binary("max", b.binary("min", length, float(limit)), 0.0)
        return _group(b, length, hk, per)
    return one("seq_len_q", sq), one("seq_len_kv", skv)


def _masked(b, s, v, hk, per):
    """-inf right of the diagonal (col > row + shift) when causal, left of
    the window (col <= row + shift - window) when there is one, and in the
    padding (row >= Lq, col >= Lkv)."""
    attrs = v.attrs
    shape = b.shape_of(s)
    r = len(shape)
    row = b.emit("gen_index", {"x": s}, {"axis": r - 2})
    col = b.emit("gen_index", {"x": s}, {"axis": r - 1})
    shift = float(diagonal_shift(attrs, shape[-2], shape[-1]))
    if attrs.get("padding", False):
        lq, lkv = _lengths(b, v, hk, per, shape[-2], shape[-1])
        outside = b.binary("logical_or", b.binary("cmp_ge", row, lq),
                           b.binary("cmp_ge", col, lkv))
        s = b.select(outside, NEG_INF, s)
        if attrs.get("diagonal", "top_left") == "bottom_right":
            shift = b.sub(lkv, lq)
    diagonal = b.add(row, shift) if not isinstance(shift, float) or shift else row
    if attrs["causal"]:
        s = b.select(b.binary("cmp_gt", col, diagonal), NEG_INF, s)
    if attrs.get("window", 0):
        left = b.sub(diagonal, float(attrs["window"]))
        s = b.select(b.binary("cmp_le", col, left), NEG_INF, s)
    return s


def _scores(b, v, q, hk, per):
    """scale * q @ k^T + bias, causally masked, on the grouped view."""
    o, a = v.operands, v.attrs
    kt = _group(b, b.swap_last(o["k"]), hk, per)
    s = b.mul(b.matmul(q, kt), a["scale"])
    if o["bias"] is not None:
        s = b.add(s, _group(b, o["bias"], hk, per))
    if a["causal"] or a.get("window", 0) or a.get("padding", False):
        s = _masked(b, s, v, hk, per)
    return s


def _gather_pages(b, cache, table, lkv, skv):
    """The contiguous (B, Hk, Skv, D) tensor of a paged ``cache`` through
    ``table`` (module docstring); positions from ``lkv`` on are 0."""
    pages, hk, page, d = b.shape_of(cache)
    batch, _, slots, _ = b.shape_of(table)
    wide = b.reshape(cache, (1, 1, pages, hk, page, d))
    which = b.reshape(b.cast(table, F32), (batch, slots, 1, 1, 1, 1))
    hit = b.binary("cmp_eq", which, b.emit("gen_index", {"x": wide}, {"axis": 2}))
    picked = b.sum(b.select(hit, wide, 0.0, out=b.dtype_of(cache)), [2], keepdims=False)
    rows = b.reshape(b.transpose(picked, [0, 2, 1, 3, 4]), (batch, hk, slots * page, d))
    if slots * page != skv:
        rows = b.emit("slice", {"x": rows}, {"start": [0, 0, 0, 0],
                                             "limit": [batch, hk, skv, d],
                                             "step": [1, 1, 1, 1]})
    position = b.emit("gen_index", {"x": rows}, {"axis": 2})
    return b.select(b.binary("cmp_ge", position, lkv), 0.0, rows, out=b.dtype_of(cache))


def _unpaged(b, v):
    """``v`` with its k and v gathered into contiguous tensors when paged."""
    o = v.operands
    if not paged(o):
        return v
    skv = v.attrs["max_seq_len_kv"]
    lkv = b.binary("max", b.binary("min", b.cast(o["seq_len_kv"], F32), float(skv)), 0.0)
    operands = dict(o, k=_gather_pages(b, o["k"], o["page_table_k"], lkv, skv),
                    v=_gather_pages(b, o["v"], o["page_table_v"], lkv, skv))
    return SimpleNamespace(operands=operands, attrs=v.attrs, results=v.results)


# Which lengths count a ragged tensor's rows.
_LENGTH_OF = {"q": "seq_len_q", "o": "seq_len_q", "do": "seq_len_q", "dq": "seq_len_q",
              "k": "seq_len_kv", "v": "seq_len_kv", "dk": "seq_len_kv", "dv": "seq_len_kv"}


class _Ragged:
    """The ragged tensors of sdpa (or sdpa_backward) ``v``: ``padded`` makes
    an operand padded, ``packed`` a result ragged (each leaves a tensor
    that is not ragged as it is)."""

    def __init__(self, b, v, names):
        self.b, self.v = b, v
        strides = v.attrs.get("ragged_strides", ()) or (0,) * len(names)
        self.strides = dict(zip(names, strides))

    def _args(self, name, x):
        b, o = self.b, self.v.operands
        limit = float(b.shape_of(x)[2])
        length = b.cast(o[_LENGTH_OF[name]], F32)
        length = b.binary("max", b.binary("min", length, limit), 0.0)
        return o[f"ragged_{name}"], self.strides[name], length

    def padded(self, name, x):
        if self.v.operands.get(f"ragged_{name}") is None:
            return x
        return ragged.padded(self.b, x, *self._args(name, x))

    def packed(self, name, x, out):
        if self.v.operands.get(f"ragged_{name}") is None:
            return x
        return ragged.packed(self.b, x, *self._args(name, x), out=out)


def _unragged(b, v, names, inputs):
    """(``v`` with its ragged ``inputs`` made padded, its _Ragged)."""
    r = _Ragged(b, v, names)
    if not any(v.operands.get(f"ragged_{n}") is not None for n in names):
        return v, r
    operands = dict(v.operands, **{n: r.padded(n, v.operands[n]) for n in inputs})
    return SimpleNamespace(operands=operands, attrs=v.attrs, results=v.results), r


def sdpa(b, v):
    v, rag = _unragged(b, _unpaged(b, v), RAGGED, ("q", "k", "v"))
    hk, per = _heads(b, v)
    s = _scores(b, v, _group(b, v.operands["q"], hk, per), hk, per)
    last = [len(b.shape_of(s)) - 1]
    shift = b.where_eq(b.max(s, last), NEG_INF, 0.0)
    e = b.unary("exp", b.sub(s, shift))
    total = b.sum(e, last)
    ev = b.matmul(e, _group(b, v.operands["v"], hk, per))
    o = _ungroup(b, b.div(ev, b.where_eq(total, 0.0, 1.0), out=b.out("o")))
    out = {"o": rag.packed("o", o, b.out("o"))}
    if v.results["stats"] is not None:
        out["stats"] = _ungroup(b, b.add(shift, b.unary("log", total)))
    return out


def sdpa_backward(b, v):
    v, rag = _unragged(b, v, BACKWARD_RAGGED, ("q", "k", "v", "o", "do"))
    o = v.operands
    hk, per = _heads(b, v)
    q, k = _group(b, o["q"], hk, per), _group(b, o["k"], hk, per)
    do, stats = _group(b, o["do"], hk, per), _group(b, o["stats"], hk, per)
    s = _scores(b, v, q, hk, per)
    p = b.where_eq(stats, NEG_INF, 0.0, b.unary("exp", b.sub(s, stats)))
    delta = _group(b, b.sum(b.mul(o["do"], o["o"]), [3]), hk, per)
    dp = b.matmul(do, _group(b, b.swap_last(o["v"]), hk, per))
    ds = b.mul(p, b.sub(dp, delta))
    scale = v.attrs["scale"]
    dq = b.mul(b.matmul(ds, k), scale, out=b.out("dq"))
    dk = b.mul(_sum_group(b, b.matmul(b.swap_last(ds), q), per), scale, out=b.out("dk"))
    dv = _sum_group(b, b.matmul(b.swap_last(p), do), per, out=b.out("dv"))
    out = {"dq": rag.packed("dq", _ungroup(b, dq), b.out("dq")),
           "dk": rag.packed("dk", dk, b.out("dk")), "dv": rag.packed("dv", dv, b.out("dv"))}
    if v.results.get("dbias") is not None:
        out["dbias"] = _bias_gradient(b, _ungroup(b, ds), o["bias"])
    return out


def _bias_gradient(b, ds, bias):
    """dbias: ds (B, H, Sq, Skv), 0 where masked (p = 0 there), summed over
    the dims the bias broadcasts on, in the bias's shape and type."""
    full, shape = b.shape_of(ds), b.shape_of(bias)
    axes = [i for i, (n, f) in enumerate(zip(shape, full)) if n == 1 and f != 1]
    if not axes:
        return b.cast(ds, b.out("dbias"))
    return b.sum(ds, axes, keepdims=True, out=b.out("dbias"))


RULES = {
    "sdpa": sdpa,
    "sdpa_backward": sdpa_backward,
}
