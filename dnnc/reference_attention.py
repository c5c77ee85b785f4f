"""The NumPy reference of scaled dot-product attention (semantics:
dnnc/dialect/ops_attention.py), part of ``dnnc.reference``: float64
arithmetic, operands by name (``o``), attributes with defaults (``a``),
the present results (``r``).

k and v are expanded to the H query heads (GQA: query head h reads kv head
h // (H / Hk)); the gradients of the heads that share a kv head are summed.
The bias's gradient (``compute_dbias``) is ds summed over its broadcast dims.
A paged k and v are first gathered into contiguous (B, Hk, Skv, D) tensors;
positions from each sequence's Lkv on are not read (their table entries may
be anything) and stay zero, masked by the padding. Ragged (packed) tensors
are likewise gathered into padded ones, each entry's rows below its length
from its packed rows, and ragged results scattered back to their entries'
rows (the elements no entry covers are 0).
"""

import numpy as np

from dnnc.dialect.ops_attention import BACKWARD_RAGGED, RAGGED


def _expand_heads(t, heads):
    return np.repeat(t, heads // t.shape[1], axis=1)


def _sum_heads(t, kv_heads):
    """Sum the gradients of the query heads that share a kv head."""
    b, h = t.shape[:2]
    return t.reshape((b, kv_heads, h // kv_heads) + t.shape[2:]).sum(axis=2)


def _lengths(o, sq, skv):
    """Each batch entry's (Lq, Lkv), clamped to [0, Sq] and [0, Skv], shaped
    (B, 1, 1, 1)."""
    return (np.clip(o["seq_len_q"], 0, sq).reshape(-1, 1, 1, 1),
            np.clip(o["seq_len_kv"], 0, skv).reshape(-1, 1, 1, 1))


def gather_pages(cache, table, lengths, skv):
    """The contiguous (B, Hk, Skv, D) tensor of a paged ``cache`` (P, Hk,
    page_size, D): position j < lengths[b] of sequence b is row j % page_size
    of page table[b, 0, j // page_size, 0]; later positions are zero."""
    page = cache.shape[2]
    b = table.shape[0]
    out = np.zeros((b, cache.shape[1], skv, cache.shape[3]), cache.dtype)
    for n in range(b):
        for j in range(int(np.clip(lengths.reshape(-1)[n], 0, skv))):
            out[n, :, j] = cache[int(table[n, 0, j // page, 0]), :, j % page]
    return out


def _unpaged(o, a):
    """The operands with k and v contiguous (o itself when they are)."""
    if o.get("page_table_k") is None:
        return o
    skv, lengths = a["max_seq_len_kv"], o["seq_len_kv"]
    return dict(o, k=gather_pages(o["k"], o["page_table_k"], lengths, skv),
                v=gather_pages(o["v"], o["page_table_v"], lengths, skv))


# Which lengths count a ragged tensor's rows.
_LENGTH_OF = {"q": "seq_len_q", "o": "seq_len_q", "do": "seq_len_q", "dq": "seq_len_q",
              "k": "seq_len_kv", "v": "seq_len_kv", "dk": "seq_len_kv", "dv": "seq_len_kv"}


def _ragged_rows(o, a, name, sizes):
    """(b, s, packed row) of each row of ragged tensor ``name`` that entry b
    owns (s below its length) and the buffer holds, or None when ``name`` is
    not ragged; ``sizes`` is its (B, S)."""
    offsets = o.get(f"ragged_{name}")
    if offsets is None:
        return None
    names = BACKWARD_RAGGED if o.get("do") is not None else RAGGED
    stride = a["ragged_strides"][names.index(name)]
    batch, length = sizes
    lengths = np.clip(o[_LENGTH_OF[name]].reshape(-1), 0, length)
    rows = []
    for b in range(batch):
        start = int(round(float(offsets.reshape(-1)[b])))
        if start % stride:
            raise ValueError(f"ragged_{name}[{b}] = {start}: expected a multiple of the "
                             f"sequence stride {stride}")
        for s in range(int(lengths[b])):
            t = start // stride + s
            if 0 <= t < batch * length:
                rows.append((b, s, t))
    return rows


def _padded(o, a, name):
    """Operand ``name`` as a padded (B, H, S, D) tensor: itself unless ragged."""
    t = o[name]
    rows = _ragged_rows(o, a, name, (t.shape[0], t.shape[2]))
    if rows is None:
        return t
    packed = np.swapaxes(t, 1, 2).reshape((-1,) + (t.shape[1], t.shape[3]))
    out = np.zeros_like(t)
    for b, s, row in rows:
        out[b, :, s] = packed[row]
    return out


def _packed(o, a, name, t):
    """Result ``t`` (padded) written to its entries' packed rows when result
    ``name`` is ragged (0 elsewhere), else ``t``."""
    rows = _ragged_rows(o, a, name, (t.shape[0], t.shape[2]))
    if rows is None:
        return t
    packed = np.zeros((t.shape[0] * t.shape[2], t.shape[1], t.shape[3]), t.dtype)
    for b, s, row in rows:
        packed[row] = t[b, :, s]
    return np.swapaxes(packed.reshape(t.shape[0], t.shape[2], t.shape[1], t.shape[3]), 1, 2)


def _unragged(o, a, names):
    """The operands with the ragged ones among ``names`` made padded."""
    return dict(o, **{n: _padded(o, a, n) for n in names})


def _scores(o, q, k, a):
    """s = scale q k^T + bias; -inf where causal and j > i + shift, where
    j <= i + shift - window, and with padding where i >= Lq[b] or j >= Lkv[b]
    (shift: 0 top-left aligned, Skv - Sq bottom-right, Lkv[b] - Lq[b] with
    padding)."""
    s = a["scale"] * np.matmul(q, np.swapaxes(k, -1, -2))
    if o.get("bias") is not None:
        s = s + o["bias"]
    sq, skv = s.shape[-2:]
    i = np.arange(sq)[:, None]
    j = np.arange(skv)[None, :]
    shift = skv - sq
    if a.get("padding", False):
        lq, lkv = _lengths(o, sq, skv)
        shift = lkv - lq
        s = np.where((i >= lq) | (j >= lkv), -np.inf, s)
    if a.get("diagonal", "top_left") != "bottom_right":
        shift = 0
    if a["causal"]:
        s = np.where(j > i + shift, -np.inf, s)
    if a.get("window", 0):
        s = np.where(j <= i + shift - a["window"], -np.inf, s)
    return s


def _logsumexp_rows(s):
    """logsumexp over the last axis, keepdims; -inf for an all -inf row."""
    m = s.max(axis=-1, keepdims=True)
    shift = np.where(np.isneginf(m), 0.0, m)
    return shift + np.log(np.exp(s - shift).sum(axis=-1, keepdims=True))


def _probabilities(s, stats):
    """p = exp(s - stats); a fully masked row (stats = -inf) has p = 0."""
    return np.where(np.isneginf(stats), 0.0, np.exp(s - stats))


def sdpa(o, a, r):
    o = _unragged(_unpaged(o, a), a, ("q", "k", "v"))
    q, h = o["q"], o["q"].shape[1]
    s = _scores(o, q, _expand_heads(o["k"], h), a)
    stats = _logsumexp_rows(s)
    p = _probabilities(s, stats)
    return {"o": _packed(o, a, "o", np.matmul(p, _expand_heads(o["v"], h))), "stats": stats}


def sdpa_backward(o, a, r):
    o = _unragged(o, a, ("q", "k", "v", "o", "do"))
    grads = _sdpa_backward(o, a)
    return {n: _packed(o, a, n, g) for n, g in grads.items()}


def _sdpa_backward(o, a):
    q, do, h, hk = o["q"], o["do"], o["q"].shape[1], o["k"].shape[1]
    k, v = _expand_heads(o["k"], h), _expand_heads(o["v"], h)
    p = _probabilities(_scores(o, q, k, a), o["stats"])
    dv = np.matmul(np.swapaxes(p, -1, -2), do)
    dp = np.matmul(do, np.swapaxes(v, -1, -2))
    # Softmax backward: ds = p * (dp - rowsum(dp * p)), and rowsum(dp * p)
    # equals rowsum(do * o) since o = p v.
    ds = p * (dp - (do * o["o"]).sum(axis=-1, keepdims=True))
    dq = a["scale"] * np.matmul(ds, k)
    dk = a["scale"] * np.matmul(np.swapaxes(ds, -1, -2), q)
    out = {"dq": dq, "dk": _sum_heads(dk, hk), "dv": _sum_heads(dv, hk)}
    if a.get("compute_dbias", False):
        out["dbias"] = _bias_gradient(ds, o["bias"].shape)
    return out


def _bias_gradient(ds, shape):
    """dbias: ds (the gradient of the scores, which the bias enters after
    the scale; 0 where masked) summed over the dims the bias broadcasts on."""
    axes = tuple(i for i, (n, full) in enumerate(zip(shape, ds.shape)) if n == 1 and full != 1)
    return ds.sum(axis=axes, keepdims=True) if axes else ds
