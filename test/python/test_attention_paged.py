"""Paged KV caches for attention (cuDNN's paged attention, forward only):
the graph API's checks, the reference against the same values laid out
contiguously, and the CPU back end (the decomposition's page gather) against
the reference.

The paged layouts come from contiguous K and V: each sequence's pages go to
a random permutation of the cache's pages, pages no table names hold NaN
(never read), and table entries wholly past a sequence's length hold
out-of-range page numbers (never read either).
"""

import math

import numpy as np
import pytest

import dnnc
from dnnc.reference_attention import gather_pages

F32, BF16, I32 = dnnc.data_type.FLOAT, dnnc.data_type.BFLOAT16, dnnc.data_type.INT32


def page_cache(contiguous, lengths, page, spare, rng):
    """(cache, table) holding ``contiguous`` (B, Hk, Skv, D) in pages of
    ``page`` rows placed at random among B * T + ``spare`` pages. Rows past
    the end of the last page are zero; unused pages are NaN; table entries
    of pages starting at or past a sequence's length are out of range."""
    b, hk, skv, d = contiguous.shape
    slots = math.ceil(skv / page)
    pages = b * slots + spare
    order = rng.permutation(pages)
    cache = np.full((pages, hk, page, d), np.nan, contiguous.dtype)
    table = np.empty((b, 1, slots, 1), np.int32)
    for n in range(b):
        for t in range(slots):
            where = order[n * slots + t]
            rows = contiguous[n, :, t * page:(t + 1) * page]
            cache[where] = 0
            cache[where, :, :rows.shape[1]] = rows
            stale = t * page >= lengths[n]
            table[n, 0, t, 0] = (pages + 3 + t if t % 2 else -1 - t) if stale else where
    return cache, table


def _graph(b, h, hk, sq, skv, d, page, dt=F32, max_seq_len_kv=None, **masks):
    """A paged sdpa graph: (graph, q, k cache, v cache, k table, v table,
    lengths, o, stats)."""
    slots = math.ceil(skv / page)
    g = dnnc.Graph(io_data_type=dt)
    q = g.tensor(name="q", dim=[b, h, sq, d])
    pages = b * slots + 3
    kc = g.tensor(name="k_cache", dim=[pages, hk, page, d])
    vc = g.tensor(name="v_cache", dim=[pages, hk, page, d])
    kt = g.tensor(name="k_table", dim=[b, 1, slots, 1], data_type=I32)
    vt = g.tensor(name="v_table", dim=[b, 1, slots, 1], data_type=I32)
    lq = g.tensor(name="lq", dim=[b, 1, 1, 1], data_type=I32)
    lkv = g.tensor(name="lkv", dim=[b, 1, 1, 1], data_type=I32)
    o, stats = g.sdpa(q, kc, vc, generate_stats=True, use_padding_mask=True, seq_len_q=lq,
                      seq_len_kv=lkv, paged_attention_k_table=kt, paged_attention_v_table=vt,
                      paged_attention_max_seq_len_kv=max_seq_len_kv or skv, **masks)
    o.set_output(True)
    stats.set_output(True)
    return g, o, stats


def _data(b, h, hk, sq, skv, d, page, lengths, dt=F32, seed=0):
    """Paged inputs and the same K and V contiguous."""
    rng = np.random.default_rng(seed)
    npt = dt.numpy
    q = rng.standard_normal((b, h, sq, d)).astype(npt)
    k = rng.standard_normal((b, hk, skv, d)).astype(npt)
    v = rng.standard_normal((b, hk, skv, d)).astype(npt)
    lkv = [x for _, x in lengths]
    kc, kt = page_cache(k, lkv, page, 3, rng)
    vc, vt = page_cache(v, lkv, page, 3, rng)
    # V's pages in another order than K's: the tables are independent.
    paged = {"q": q, "k_cache": kc, "v_cache": vc, "k_table": kt, "v_table": vt,
             "lq": np.array([x for x, _ in lengths], np.int32).reshape(b, 1, 1, 1),
             "lkv": np.array(lkv, np.int32).reshape(b, 1, 1, 1)}
    return paged, k, v


MASKS = [{}, {"use_causal_mask": True}, {"use_causal_mask_bottom_right": True},
         {"sliding_window_length": 3}]


@pytest.mark.parametrize("masks", MASKS)
def test_reference_matches_the_contiguous_cache(masks):
    """The reference on a paged cache equals the reference on the same K and
    V contiguous with the same padding mask; lengths not multiples of the
    page, one past Skv (clamped), one zero."""
    b, h, hk, sq, skv, d, page = 4, 4, 2, 5, 21, 8, 4
    lengths = [(5, 21), (3, 10), (2, 0), (7, 30)]
    g, o, stats = _graph(b, h, hk, sq, skv, d, page, **masks)
    paged, k, v = _data(b, h, hk, sq, skv, d, page, lengths)
    got = g.execute_reference(paged)
    flat = dnnc.Graph(io_data_type=F32)
    args = [flat.tensor(name=n, dim=list(x.shape)) for n, x in (("q", paged["q"]), ("k", k),
                                                                  ("v", v))]
    lq = flat.tensor(name="lq", dim=[b, 1, 1, 1], data_type=I32)
    lkv = flat.tensor(name="lkv", dim=[b, 1, 1, 1], data_type=I32)
    fo, fs = flat.sdpa(*args, generate_stats=True, use_padding_mask=True, seq_len_q=lq,
                       seq_len_kv=lkv, **masks)
    fo.set_output(True)
    fs.set_output(True)
    want = flat.execute_reference({"q": paged["q"], "k": k, "v": v, "lq": paged["lq"],
                                   "lkv": paged["lkv"]})
    assert np.isfinite(got[o.name]).all()
    np.testing.assert_array_equal(got[o.name], want[fo.name])
    np.testing.assert_array_equal(got[stats.name], want[fs.name])


def test_gather_pages_reads_only_positions_below_the_length():
    rng = np.random.default_rng(1)
    k = rng.standard_normal((2, 1, 10, 3))
    cache, table = page_cache(k, [10, 5], 4, 2, rng)
    got = gather_pages(cache, table, np.array([10, 5]), 10)
    np.testing.assert_array_equal(got[0], k[0])
    np.testing.assert_array_equal(got[1, :, :5], k[1, :, :5])
    assert not got[1, :, 5:].any()


@pytest.mark.parametrize("dt,hk,page,masks", [
    (F32, 2, 4, {}), (F32, 1, 8, {"use_causal_mask_bottom_right": True}),
    (BF16, 4, 4, {"use_causal_mask": True}), (F32, 2, 16, {"sliding_window_length": 4})])
def test_cpu_matches_the_reference(dt, hk, page, masks):
    """The CPU back end (the decomposition's page gather, then attention)
    against the reference: GQA and MHA, pages larger than the sequence, a
    max_seq_len_kv below the table's room."""
    b, h, sq, skv, d = 3, 4, 6, 13, 8
    lengths = [(6, 13), (4, 6), (1, 9)]
    g, o, stats = _graph(b, h, hk, sq, skv, d, page, dt=dt, **masks)
    paged, _, _ = _data(b, h, hk, sq, skv, d, page, lengths, dt=dt, seed=2)
    want = g.execute_reference(paged)
    got = g.compile(target="cpu")(**paged)
    tol = dict(rtol=2e-4, atol=2e-5) if dt is F32 else dict(rtol=1.6e-2, atol=1e-2)
    for t in (o, stats):
        np.testing.assert_allclose(np.asarray(got[t.name], np.float64), want[t.name],
                                   err_msg=t.name, **tol)


def _inputs(b=2, page=4, slots=3, pages=7):
    g = dnnc.Graph(io_data_type=F32)
    q = g.tensor(name="q", dim=[b, 2, 3, 8])
    kc = g.tensor(name="kc", dim=[pages, 1, page, 8])
    vc = g.tensor(name="vc", dim=[pages, 1, page, 8])
    kt = g.tensor(name="kt", dim=[b, 1, slots, 1], data_type=I32)
    vt = g.tensor(name="vt", dim=[b, 1, slots, 1], data_type=I32)
    lq = g.tensor(name="lq", dim=[b, 1, 1, 1], data_type=I32)
    lkv = g.tensor(name="lkv", dim=[b, 1, 1, 1], data_type=I32)
    pad = dict(use_padding_mask=True, seq_len_q=lq, seq_len_kv=lkv)
    return g, q, kc, vc, kt, vt, pad


def test_paged_arguments_are_checked():
    g, q, kc, vc, kt, vt, pad = _inputs()
    tables = dict(paged_attention_k_table=kt, paged_attention_v_table=vt)
    with pytest.raises(dnnc.GraphError, match="paged_attention_v_table: expected an int32"):
        g.sdpa(q, kc, vc, paged_attention_k_table=kt, **pad)
    floats = g.tensor(name="ft", dim=[2, 1, 3, 1])
    with pytest.raises(dnnc.GraphError, match="paged_attention_k_table: expected an int32 "
                                              "tensor, got f32"):
        g.sdpa(q, kc, vc, paged_attention_k_table=floats, paged_attention_v_table=vt, **pad)
    with pytest.raises(dnnc.GraphError, match="expected use_padding_mask=True"):
        g.sdpa(q, kc, vc, **tables)
    with pytest.raises(dnnc.GraphError, match=r"max_seq_len_kv: expected an integer in "
                                              r"1\.\.12 .*got 13"):
        g.sdpa(q, kc, vc, paged_attention_max_seq_len_kv=13, **tables, **pad)
    with pytest.raises(dnnc.GraphError, match="max_seq_len_kv: expected it only with"):
        g.sdpa(q, kc, vc, paged_attention_max_seq_len_kv=8, **pad)
    flat = g.tensor(name="flat", dim=[2, 3, 1], data_type=I32)
    with pytest.raises(dnnc.GraphError, match="rank 4"):
        g.sdpa(q, kc, vc, paged_attention_k_table=flat, paged_attention_v_table=vt, **pad)
    other = g.tensor(name="other", dim=[3, 1, 3, 1], data_type=I32)
    with pytest.raises(dnnc.VerificationError, match="'page_table_k' dim 0: expected 2"):
        g.sdpa(q, kc, vc, paged_attention_k_table=other, paged_attention_v_table=vt, **pad)
    longer = g.tensor(name="longer", dim=[2, 1, 4, 1], data_type=I32)
    with pytest.raises(dnnc.VerificationError, match="'page_table_v' dim 2: expected 3"):
        g.sdpa(q, kc, vc, paged_attention_k_table=kt, paged_attention_v_table=longer, **pad)
    small = g.tensor(name="small", dim=[7, 1, 2, 8])
    with pytest.raises(dnnc.VerificationError, match="'v' dim 2: expected 4 .page size"):
        g.sdpa(q, kc, small, **tables, **pad)
    three = g.tensor(name="three", dim=[7, 4, 8])
    with pytest.raises(dnnc.GraphError, match=r"k: expected a paged cache \(num_pages, H_kv, "
                                              r"page_size, D\), got shape \(7, 4, 8\)"):
        g.sdpa(q, three, vc, **tables, **pad)
    heads = g.tensor(name="heads", dim=[7, 2, 4, 8])
    with pytest.raises(dnnc.VerificationError, match="'v' dim 1: expected 1"):
        g.sdpa(q, kc, heads, **tables, **pad)


def test_backward_refuses_a_paged_cache():
    g, q, kc, vc, kt, vt, pad = _inputs()
    o, stats = g.sdpa(q, kc, vc, generate_stats=True, paged_attention_k_table=kt,
                      paged_attention_v_table=vt, **pad)
    with pytest.raises(dnnc.UnsupportedError, match="paged_attention_k_table: expected None "
                                                    r"\(a paged KV cache is forward only"):
        g.sdpa_backward(q, kc, vc, o, o, stats, paged_attention_k_table=kt,
                        paged_attention_v_table=vt, **pad)
