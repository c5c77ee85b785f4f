"""The NumPy reference of scaled dot-product attention (semantics:
dnnc/dialect/ops_attention.py), part of ``dnnc.reference``: float64
arithmetic, operands by name (``o``), attributes with defaults (``a``),
the present results (``r``).

k and v are expanded to the H query heads (GQA: query head h reads kv head
h // (H / Hk)); the gradients of the heads that share a kv head are summed.
A paged k and v are first gathered into contiguous (B, Hk, Skv, D) tensors;
positions from each sequence's Lkv on are not read (their table entries may
be anything) and stay zero, masked by the padding.
"""

import numpy as np


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
    o = _unpaged(o, a)
    q, h = o["q"], o["q"].shape[1]
    s = _scores(o, q, _expand_heads(o["k"], h), a)
    stats = _logsumexp_rows(s)
    p = _probabilities(s, stats)
    return {"o": np.matmul(p, _expand_heads(o["v"], h)), "stats": stats}


def sdpa_backward(o, a, r):
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
    return {"dq": dq, "dk": _sum_heads(dk, hk), "dv": _sum_heads(dv, hk)}
