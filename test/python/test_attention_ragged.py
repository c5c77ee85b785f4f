"""Ragged (packed, "THD") tensors for attention, cuDNN's ragged offsets: the
graph API's checks, the reference against padded tensors holding the same
sequences, and the CPU back end (the decomposition's gather and scatter)
against the reference, forward and backward.

A ragged tensor here is a buffer of B x S packed rows of (H, D), seen as
the logical (B, H, S, D) tensor with strides (S H D, D, H D, 1), as cuDNN's
samples make it. The entries are placed out of order and with gaps; the
rows no entry owns hold NaN, which neither the reference nor the
decomposition may read.
"""

import numpy as np
import pytest

import dnnc

F32, BF16, I32 = dnnc.data_type.FLOAT, dnnc.data_type.BFLOAT16, dnnc.data_type.INT32


def thd_strides(h, s, d):
    return [s * h * d, d, h * d, 1]


def layout(lengths, s, rng):
    """Packed row where each entry starts: entries in a random order with a
    row or two of gap between some, within B x S rows."""
    b = len(lengths)
    order = rng.permutation(b)
    starts, at = [0] * b, 0
    for n in order:
        starts[n] = at
        at += lengths[n] + int(rng.integers(0, 2))
    assert at <= b * s, "the entries do not fit the buffer"
    return starts


def pack(padded, lengths, starts, fill=np.nan):
    """The ragged (B, H, S, D) view of a buffer holding ``padded``'s rows
    below each entry's length from its start row; other rows ``fill``."""
    b, h, s, d = padded.shape
    buf = np.full((b * s, h, d), fill, padded.dtype)
    for n in range(b):
        buf[starts[n]:starts[n] + lengths[n]] = np.swapaxes(padded[n, :, :lengths[n]], 0, 1)
    return np.swapaxes(buf.reshape(b, s, h, d), 1, 2)


def unpack(ragged, lengths, starts):
    """The padded (B, H, S, D) tensor of ``ragged``'s entries, 0 past their
    lengths."""
    b, h, s, d = ragged.shape
    buf = np.swapaxes(np.asarray(ragged), 1, 2).reshape(b * s, h, d)
    out = np.zeros(ragged.shape, np.float64)
    for n in range(b):
        out[n, :, :lengths[n]] = np.swapaxes(buf[starts[n]:starts[n] + lengths[n]], 0, 1)
    return out


def offsets(starts, lengths, h, d):
    """cuDNN's ragged offset tensor (B + 1, 1, 1, 1): element offsets of the
    entries' first rows, then the end of the last."""
    end = max(s + n for s, n in zip(starts, lengths))
    return (np.array(list(starts) + [end], np.int32) * h * d).reshape(-1, 1, 1, 1)


def lengths_tensor(lengths):
    return np.array(lengths, np.int32).reshape(-1, 1, 1, 1)


class Problem:
    """A ragged sdpa (and its backward) and its data: every one of q, k, v,
    o (dO, dQ, dK, dV) ragged, or only those in ``ragged``."""

    def __init__(self, b, h, hk, s_q, s_kv, d, lq, lkv, dt=F32, ragged=None, seed=0,
                 backward=False, **masks):
        rng = np.random.default_rng(seed)
        self.shape = (b, h, hk, s_q, s_kv, d)
        self.lq, self.lkv = lq, lkv
        self.starts_q, self.starts_kv = layout(lq, s_q, rng), layout(lkv, s_kv, rng)
        ragged = set(ragged or ("q", "k", "v", "o", "do", "dq", "dk", "dv"))
        self.ragged = ragged
        npt = dt.numpy
        self.padded = {"q": rng.standard_normal((b, h, s_q, d)),
                       "k": rng.standard_normal((b, hk, s_kv, d)),
                       "v": rng.standard_normal((b, hk, s_kv, d)),
                       "do": rng.standard_normal((b, h, s_q, d))}
        self.padded = {n: x.astype(npt).astype(np.float64) for n, x in self.padded.items()}
        g = dnnc.Graph(io_data_type=dt)
        lq_t = g.tensor(name="lq", dim=[b, 1, 1, 1], data_type=I32)
        lkv_t = g.tensor(name="lkv", dim=[b, 1, 1, 1], data_type=I32)
        off_q = g.tensor(name="off_q", dim=[b + 1, 1, 1, 1], data_type=I32)
        off_kv = g.tensor(name="off_kv", dim=[b + 1, 1, 1, 1], data_type=I32)
        self.feeds = {"lq": lengths_tensor(lq), "lkv": lengths_tensor(lkv),
                      "off_q": offsets(self.starts_q, lq, h, d),
                      "off_kv": offsets(self.starts_kv, lkv, hk, d)}
        tensors = {}
        for name, heads, s, off in (("q", h, s_q, off_q), ("k", hk, s_kv, off_kv),
                                    ("v", hk, s_kv, off_kv)):
            if name in ragged:
                tensors[name] = g.tensor(name=name, dim=[b, heads, s, d],
                                         stride=thd_strides(heads, s, d), ragged_offset=off)
                self.feeds[name] = pack(self.padded[name].astype(npt), *self._rows(name))
            else:
                tensors[name] = g.tensor(name=name, dim=[b, heads, s, d])
                self.feeds[name] = self.padded[name].astype(npt)
        pad = dict(use_padding_mask=True, seq_len_q=lq_t, seq_len_kv=lkv_t, **masks)
        o, stats = g.sdpa(tensors["q"], tensors["k"], tensors["v"], generate_stats=True, **pad)
        o.set_output(True)
        if "o" in ragged:
            o.set_stride(thd_strides(h, s_q, d)).set_ragged_offset(off_q)
        stats.set_output(True)
        self.outputs = {"o": o, "stats": stats}
        if backward:
            self._backward(g, tensors, o, stats, pad, off_q, off_kv, npt)
        self.graph = g

    def _rows(self, name):
        if name in ("q", "o", "do", "dq"):
            return self.lq, self.starts_q
        return self.lkv, self.starts_kv

    def _backward(self, g, tensors, o, stats, pad, off_q, off_kv, npt):
        b, h, hk, s_q, s_kv, d = self.shape
        # The backward reads the forward's O through a graph input (its
        # values come from the reference forward).
        ragged = self.ragged
        o_in = g.tensor(name="o_in", dim=[b, h, s_q, d],
                        stride=thd_strides(h, s_q, d) if "o" in ragged else None,
                        ragged_offset=off_q if "o" in ragged else None)
        do = g.tensor(name="do", dim=[b, h, s_q, d],
                      stride=thd_strides(h, s_q, d) if "do" in ragged else None,
                      ragged_offset=off_q if "do" in ragged else None)
        st = g.tensor(name="stats_in", dim=[b, h, s_q, 1], data_type=F32)
        dq, dk, dv = g.sdpa_backward(tensors["q"], tensors["k"], tensors["v"], o_in, do, st,
                                     **pad)
        for name, t, heads, s, off in (("dq", dq, h, s_q, off_q), ("dk", dk, hk, s_kv, off_kv),
                                       ("dv", dv, hk, s_kv, off_kv)):
            t.set_output(True)
            if name in ragged:
                t.set_stride(thd_strides(heads, s, d)).set_ragged_offset(off)
            self.outputs[name] = t
        self.feeds["do"] = pack(self.padded["do"].astype(npt), *self._rows("do")) \
            if "do" in ragged else self.padded["do"].astype(npt)
        self.o_in = o_in

    def padded_view(self, name, value):
        """An output (or input) as padded, cut to the lengths."""
        if name not in self.ragged:
            return np.asarray(value, np.float64)
        return unpack(value, *self._rows(name))


def reference_padded(p, masks, backward=False, o=None, stats=None):
    """The reference on padded tensors with the same sequences: o, stats
    (and dq, dk, dv)."""
    b, h, hk, s_q, s_kv, d = p.shape
    g = dnnc.Graph(io_data_type=F32)
    q, k, v = (g.tensor(name=n, dim=list(p.padded[n].shape)) for n in ("q", "k", "v"))
    lq = g.tensor(name="lq", dim=[b, 1, 1, 1], data_type=I32)
    lkv = g.tensor(name="lkv", dim=[b, 1, 1, 1], data_type=I32)
    pad = dict(use_padding_mask=True, seq_len_q=lq, seq_len_kv=lkv, **masks)
    ro, rs = g.sdpa(q, k, v, generate_stats=True, **pad)
    ro.set_output(True)
    rs.set_output(True)
    feeds = {n: p.padded[n] for n in ("q", "k", "v")}
    feeds.update(lq=p.feeds["lq"], lkv=p.feeds["lkv"])
    names = {"o": ro, "stats": rs}
    if backward:
        o_in = g.tensor(name="o_in", dim=[b, h, s_q, d])
        do = g.tensor(name="do", dim=[b, h, s_q, d])
        st = g.tensor(name="stats_in", dim=[b, h, s_q, 1])
        for n, t in zip(("dq", "dk", "dv"), g.sdpa_backward(q, k, v, o_in, do, st, **pad)):
            t.set_output(True)
            names[n] = t
        feeds.update(o_in=o, do=p.padded["do"], stats_in=stats)
    out = g.execute_reference(feeds)
    return {n: out[t.name] for n, t in names.items()}


MASKS = [{}, {"use_causal_mask": True}, {"use_causal_mask_bottom_right": True},
         {"sliding_window_length": 3}]


@pytest.mark.parametrize("masks", MASKS)
def test_reference_matches_padded_tensors(masks):
    """The reference on ragged q, k, v and o equals the reference on padded
    tensors holding the same sequences, cut to each entry's lengths: GQA,
    lengths 0 and full, Lq != Lkv."""
    lq, lkv = [5, 0, 3, 7], [9, 4, 0, 11]
    p = Problem(4, 4, 2, 7, 11, 8, lq, lkv, **masks)
    got = p.graph.execute_reference(p.feeds)
    want = reference_padded(p, masks)
    o = p.padded_view("o", got[p.outputs["o"].name])
    for n in range(4):
        np.testing.assert_array_equal(o[n, :, :lq[n]], want["o"][n, :, :lq[n]])
    np.testing.assert_array_equal(got[p.outputs["stats"].name], want["stats"])
    # The rows no entry owns come out 0 (the decomposition's choice too).
    raw = np.swapaxes(got[p.outputs["o"].name], 1, 2).reshape(4 * 7, 4, 8)
    owned = np.zeros(4 * 7, bool)
    for s, n in zip(p.starts_q, lq):
        owned[s:s + n] = True
    assert not raw[~owned].any()


def test_reference_backward_matches_padded_tensors():
    """dQ, dK and dV of ragged tensors equal the padded reference's, cut to
    the lengths; causal bottom-right, GQA."""
    masks = {"use_causal_mask_bottom_right": True}
    lq, lkv = [6, 2, 0], [6, 9, 3]
    p = Problem(3, 4, 2, 6, 9, 8, lq, lkv, backward=True, **masks)
    fwd = reference_padded(p, masks)
    p.feeds["o_in"] = pack(fwd["o"], lq, p.starts_q)
    p.feeds["stats_in"] = fwd["stats"]
    got = p.graph.execute_reference(p.feeds)
    want = reference_padded(p, masks, backward=True, o=fwd["o"], stats=fwd["stats"])
    for name, lengths in (("dq", lq), ("dk", lkv), ("dv", lkv)):
        mine = p.padded_view(name, got[p.outputs[name].name])
        for n, length in enumerate(lengths):
            np.testing.assert_allclose(mine[n, :, :length], want[name][n, :, :length],
                                       rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("dt,hk,masks,ragged", [
    (F32, 2, {}, None),
    (F32, 4, {"use_causal_mask": True}, ("q", "o")),
    (BF16, 1, {"use_causal_mask_bottom_right": True}, None),
    (F32, 2, {"sliding_window_length": 4}, ("k", "v"))])
def test_cpu_matches_the_reference(dt, hk, masks, ragged):
    """The CPU back end (the decomposition's gather and scatter) against the
    reference: all tensors ragged or some, GQA and MHA, a zero length."""
    lq, lkv = [6, 1, 0], [13, 0, 7]
    p = Problem(3, 4, hk, 6, 13, 8, lq, lkv, dt=dt, ragged=ragged, seed=2, **masks)
    want = p.graph.execute_reference(p.feeds)
    got = p.graph.compile(target="cpu")(**p.feeds)
    tol = dict(rtol=2e-4, atol=2e-5) if dt is F32 else dict(rtol=1.6e-2, atol=1e-2)
    for name, t in p.outputs.items():
        mine, theirs = np.asarray(got[t.name], np.float64), want[t.name]
        if name == "o":
            mine, theirs = p.padded_view("o", mine), p.padded_view("o", theirs)
        np.testing.assert_allclose(mine, theirs, err_msg=name, **tol)


@pytest.mark.parametrize("ragged", [None, ("dq", "dk", "dv", "do")])
def test_cpu_backward_matches_the_reference(ragged):
    """The backward on the CPU back end against the reference."""
    masks = {"use_causal_mask": True}
    lq, lkv = [5, 3, 0], [7, 2, 4]
    p = Problem(3, 2, 1, 5, 7, 8, lq, lkv, ragged=ragged, backward=True, seed=3, **masks)
    fwd = reference_padded(p, masks)
    p.feeds["o_in"] = pack(fwd["o"], lq, p.starts_q) if "o" in p.ragged else fwd["o"]
    p.feeds["stats_in"] = fwd["stats"].astype(np.float32)
    p.feeds["o_in"] = np.asarray(p.feeds["o_in"], np.float32)
    want = p.graph.execute_reference(p.feeds)
    got = p.graph.compile(target="cpu")(**p.feeds)
    for name in ("dq", "dk", "dv"):
        t = p.outputs[name]
        mine = p.padded_view(name, np.asarray(got[t.name], np.float64))
        theirs = p.padded_view(name, want[t.name])
        np.testing.assert_allclose(mine, theirs, rtol=2e-4, atol=2e-5, err_msg=name)


def _graph(b=2, h=2, s=4, d=8):
    g = dnnc.Graph(io_data_type=F32)
    st = thd_strides(h, s, d)
    q, k, v = (g.tensor(name=n, dim=[b, h, s, d], stride=st) for n in "qkv")
    off = g.tensor(name="off", dim=[b + 1, 1, 1, 1], data_type=I32)
    lq = g.tensor(name="lq", dim=[b, 1, 1, 1], data_type=I32)
    return g, q, k, v, off, lq


def test_ragged_arguments_are_checked():
    g, q, k, v, off, lq = _graph()
    floats = g.tensor(name="foff", dim=[3, 1, 1, 1])
    with pytest.raises(dnnc.GraphError, match="ragged offset 'foff': expected an int32 tensor, "
                                              "got f32"):
        q.set_ragged_offset(floats)
    short = g.tensor(name="short", dim=[2, 1, 1, 1], data_type=I32)
    with pytest.raises(dnnc.GraphError, match=r"ragged offset 'short': expected shape "
                                              r"\(3, 1, 1, 1\)"):
        q.set_ragged_offset(short)
    bhsd = g.tensor(name="bhsd", dim=[2, 2, 4, 8])
    bhsd.set_ragged_offset(off)
    with pytest.raises(dnnc.GraphError, match="tensor 'bhsd' .ragged. stride: expected the "
                                              "sequence dim's stride to be the largest"):
        g.sdpa(bhsd, k, v, use_padding_mask=True, seq_len_q=lq, seq_len_kv=lq)
    q.set_ragged_offset(off)
    with pytest.raises(dnnc.GraphError, match="has a ragged offset: expected "
                                              "use_padding_mask=True"):
        g.sdpa(q, k, v)
    with pytest.raises(dnnc.GraphError, match="ragged offset only on the tensors of sdpa"):
        g.relu(q)
    o, stats = g.sdpa(q, k, v, generate_stats=True, use_padding_mask=True, seq_len_q=lq,
                      seq_len_kv=lq)
    with pytest.raises(dnnc.GraphError, match=r"tensor 'sdpa\d+.stats' \(stats\) has a ragged "
                                              "offset: expected one only on"):
        stats.set_ragged_offset(off)
    assert stats.get_ragged_offset() is None
    # o keeps row-major strides ([B, H, S, D]): not a packed layout.
    o.set_output(True).set_ragged_offset(off)
    with pytest.raises(dnnc.GraphError, match=r"tensor 'sdpa\d+.o' .ragged. stride"):
        g.to_mlir()
    o.set_stride(thd_strides(2, 4, 8))
    text = g.to_mlir()
    assert "ragged_strides = array<i64: 16, 0, 0, 16>" in text
    y = g.relu(k)
    with pytest.raises(dnnc.GraphError, match="taken by sdpa and sdpa_backward only, got the "
                                              "tensor read by 'dnn.relu'"):
        k.set_ragged_offset(off)
    del y


def test_batch_stride_must_merge_into_the_rows():
    g = dnnc.Graph(io_data_type=F32)
    off = g.tensor(name="off", dim=[3, 1, 1, 1], data_type=I32)
    lq = g.tensor(name="lq", dim=[2, 1, 1, 1], data_type=I32)
    q = g.tensor(name="q", dim=[2, 2, 4, 8], stride=[80, 8, 16, 1], ragged_offset=off)
    with pytest.raises(dnnc.GraphError, match="stride 0: expected S x stride_s = 64"):
        g.sdpa(q, q, q, use_padding_mask=True, seq_len_q=lq, seq_len_kv=lq)


def test_paged_and_ragged_together_are_refused():
    g, q, k, v, off, lq = _graph()
    q.set_ragged_offset(off)
    kc = g.tensor(name="kc", dim=[5, 2, 4, 8])
    kt = g.tensor(name="kt", dim=[2, 1, 1, 1], data_type=I32)
    with pytest.raises(dnnc.GraphError, match="expected no ragged offsets with a paged KV"):
        g.sdpa(q, kc, kc, use_padding_mask=True, seq_len_q=lq, seq_len_kv=lq,
               paged_attention_k_table=kt, paged_attention_v_table=kt)


def test_the_ir_round_trips():
    lq, lkv = [3, 2], [4, 1]
    p = Problem(2, 2, 2, 4, 4, 8, lq, lkv, backward=True)
    text = p.graph.to_mlir()
    assert dnnc.Graph.from_mlir(text).to_mlir() == text


def test_offsets_that_are_not_whole_rows_are_refused_by_the_reference():
    p = Problem(2, 2, 2, 4, 4, 8, [3, 2], [4, 1])
    p.feeds["off_q"] = p.feeds["off_q"] + 1
    with pytest.raises(ValueError, match=r"ragged_q\[0\] = 1: expected a multiple of the "
                                         "sequence stride 16"):
        p.graph.execute_reference(p.feeds)
