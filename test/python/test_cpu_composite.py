"""The CPU back end runs every composite op (attention, normalizations, softmax
and their backward ops) and matches the NumPy reference.

Composite ops reach the CPU through dnn-decompose; these tests compile whole
graphs with ``Graph.compile(target="cpu")`` and compare with
``Graph.execute_reference``. Tolerances: f32 results to rtol 2e-4 (f32
arithmetic against float64, through reductions); bf16 results to 2 bf16 ulps
(rtol 1.6e-2), since a last-place rounding difference is expected.

Several ops share a graph where they can, to keep JIT compilations few.
"""

import numpy as np
import pytest

import dnnc

F32, BF16 = dnnc.data_type.FLOAT, dnnc.data_type.BFLOAT16
TOL = {F32: dict(rtol=2e-4, atol=2e-5), BF16: dict(rtol=1.6e-2, atol=1e-2)}


def _run(g, seed=0, positive=(), special=None):
    """Compile ``g`` for the CPU, run it on seeded random inputs (NumPy arrays
    of the inputs' dtypes, some transposed views so they are not contiguous),
    and compare every output with the reference."""
    rng = np.random.default_rng(seed)
    inputs = {}
    for t in g.inputs:
        if special and t.name in special:
            inputs[t.name] = special[t.name]
            continue
        values = (rng.uniform(0.5, 1.5, t.dim) if t.name in positive
                  else rng.standard_normal(t.dim))
        array = values.astype(t.data_type.numpy)
        if array.ndim >= 2:  # a non-contiguous view with the same logical values
            array = np.ascontiguousarray(array.swapaxes(-1, -2)).swapaxes(-1, -2)
        inputs[t.name] = array
    expected = g.execute_reference(inputs)
    got = g.compile(target="cpu")(**inputs)
    for t in g.outputs:
        e, v = expected[t.name], np.asarray(got[t.name])
        assert v.shape == e.shape, t.name
        assert not np.isnan(v.astype(np.float64)).any() or np.isnan(e).any(), t.name
        np.testing.assert_allclose(v.astype(np.float64), e, err_msg=t.name,
                                   **TOL[t.get_data_type()])


def _outputs(*tensors):
    for t in tensors:
        if t is not None:
            t.set_output(True)


@pytest.mark.parametrize("dt", [F32, BF16])
@pytest.mark.parametrize("causal,bias,heads_k", [(False, False, 4), (True, True, 2),
                                                 (True, False, 1)])
def test_sdpa_forward_and_backward(dt, causal, bias, heads_k):
    g = dnnc.Graph(io_data_type=dt)
    q = g.tensor(name="q", dim=[2, 4, 5, 8])
    k = g.tensor(name="k", dim=[2, heads_k, 7, 8])
    v = g.tensor(name="v", dim=[2, heads_k, 7, 3])
    b = g.tensor(name="bias", dim=[1, 4, 5, 7]) if bias else None
    o, stats = g.sdpa(q, k, v, bias=b, use_causal_mask=causal, generate_stats=True)
    _outputs(o, stats)
    do = g.tensor(name="do", dim=[2, 4, 5, 3])
    o_in = g.tensor(name="o_in", dim=[2, 4, 5, 3], data_type=F32)
    stats_in = g.tensor(name="stats_in", dim=[2, 4, 5, 1], data_type=F32)
    _outputs(*g.sdpa_backward(q, k, v, o_in, do, stats_in, bias=b, use_causal_mask=causal))
    # The backward reads o and stats of a real forward pass, so feed the reference's.
    rng = np.random.default_rng(1)
    fwd = dnnc.Graph(io_data_type=F32)
    fq, fk, fv = (fwd.tensor(name=n, dim=t.dim) for n, t in (("q", q), ("k", k), ("v", v)))
    fb = fwd.tensor(name="bias", dim=b.dim) if bias else None
    fo, fs = fwd.sdpa(fq, fk, fv, bias=fb, use_causal_mask=causal, generate_stats=True)
    _outputs(fo, fs)
    data = {t.name: rng.standard_normal(t.dim).astype(dt.numpy)
            for t in g.inputs if t.name in ("q", "k", "v", "bias")}
    ref = fwd.execute_reference(data)
    special = dict(data, o_in=ref[fo.name].astype(np.float32),
                   stats_in=ref[fs.name].astype(np.float32))
    _run(g, special=special)


@pytest.mark.parametrize("dt,bias_dim,causal,heads_k,padding", [
    (F32, [2, 4, 5, 7], False, 4, False),     # whole
    (BF16, [1, 4, 5, 7], True, 2, False),     # over the batch (cuDNN's [1, H, S, S])
    (F32, [2, 1, 5, 7], True, 1, False),      # over the heads, MQA
    (F32, [2, 1, 1, 7], False, 2, True),      # over heads and rows, with padding
])
def test_sdpa_dbias(dt, bias_dim, causal, heads_k, padding):
    """compute_dbias on the CPU against the reference (the reference's dbias
    against PyTorch's autograd: test_reference_torch.py): the gradient of
    the scores summed over the bias's dims of size 1, 0 where masked, in
    the bias's type, beside dq, dk and dv."""
    g = dnnc.Graph(io_data_type=dt)
    q = g.tensor(name="q", dim=[2, 4, 5, 8])
    k = g.tensor(name="k", dim=[2, heads_k, 7, 8])
    v = g.tensor(name="v", dim=[2, heads_k, 7, 3])
    b = g.tensor(name="bias", dim=bias_dim)
    do = g.tensor(name="do", dim=[2, 4, 5, 3])
    o_in = g.tensor(name="o_in", dim=[2, 4, 5, 3], data_type=F32)
    stats_in = g.tensor(name="stats_in", dim=[2, 4, 5, 1], data_type=F32)
    pad = {}
    if padding:
        lq, lkv = (g.tensor(name=n, dim=[2, 1, 1, 1], data_type=dnnc.data_type.INT32)
                   for n in ("lq", "lkv"))
        pad = dict(use_padding_mask=True, seq_len_q=lq, seq_len_kv=lkv)
    dq, dk, dv, dbias = g.sdpa_backward(q, k, v, o_in, do, stats_in, bias=b,
                                        use_causal_mask=causal, compute_dbias=True, **pad)
    assert dbias.dim == bias_dim
    _outputs(dq, dk, dv, dbias)
    rng = np.random.default_rng(7)
    data = {t.name: rng.standard_normal(t.dim).astype(dt.numpy) for t in (q, k, v, b, do)}
    if padding:
        data["lq"] = np.array([3, 5], np.int32).reshape(2, 1, 1, 1)
        data["lkv"] = np.array([7, 4], np.int32).reshape(2, 1, 1, 1)
    fwd = dnnc.Graph(io_data_type=F32)
    fq, fk, fv, fb = (fwd.tensor(name=t.name, dim=t.dim) for t in (q, k, v, b))
    fpad = {}
    if padding:
        flq, flkv = (fwd.tensor(name=n, dim=[2, 1, 1, 1], data_type=dnnc.data_type.INT32)
                     for n in ("lq", "lkv"))
        fpad = dict(use_padding_mask=True, seq_len_q=flq, seq_len_kv=flkv)
    fo, fs = fwd.sdpa(fq, fk, fv, bias=fb, use_causal_mask=causal, generate_stats=True,
                      **fpad)
    _outputs(fo, fs)
    ref = fwd.execute_reference({n: data[n] for n in ("q", "k", "v", "bias", "lq", "lkv")
                                 if n in data})
    special = dict(data, o_in=ref[fo.name].astype(np.float32),
                   stats_in=ref[fs.name].astype(np.float32))
    want = g.execute_reference(special)[dbias.name]
    assert np.abs(want).max() > 1e-3  # a gradient that can be got wrong
    if causal and bias_dim[2:] == [5, 7]:
        assert not want[..., np.triu(np.ones((5, 7), bool), 1)].any()
    if padding:  # entry 1's columns from its Lkv = 4 on are padding
        assert not want[1, ..., 4:].any() and want[0, ..., 4:].any()
    _run(g, special=special)


@pytest.mark.parametrize("sq,skv", [(5, 9), (9, 5)])
@pytest.mark.parametrize("bottom_right,window", [(True, None), (False, 3), (True, 2)])
def test_sdpa_masks(sq, skv, bottom_right, window):
    """Bottom-right aligned causal masks and sliding windows, forward and
    backward, on the CPU against the reference; the reference's mask against
    one written out element by element. With Sq > Skv bottom-right aligned,
    the first rows see nothing: o = 0 and stats = -inf, not NaN."""
    g = dnnc.Graph(io_data_type=F32)
    q = g.tensor(name="q", dim=[1, 2, sq, 8])
    k = g.tensor(name="k", dim=[1, 2, skv, 8])
    v = g.tensor(name="v", dim=[1, 2, skv, 4])
    masks = dict(use_causal_mask=not bottom_right, use_causal_mask_bottom_right=bottom_right,
                 sliding_window_length=window)
    o, stats = g.sdpa(q, k, v, generate_stats=True, **masks)
    _outputs(o, stats)
    do = g.tensor(name="do", dim=[1, 2, sq, 4])
    o_in = g.tensor(name="o_in", dim=[1, 2, sq, 4])
    stats_in = g.tensor(name="stats_in", dim=[1, 2, sq, 1])
    _outputs(*g.sdpa_backward(q, k, v, o_in, do, stats_in, **masks))
    rng = np.random.default_rng(3)
    data = {n: rng.standard_normal(t.dim).astype(np.float32)
            for n, t in (("q", q), ("k", k), ("v", v))}
    # The mask written out: row i sees column j when j <= i + shift and,
    # with a window W, j > i + shift - W.
    shift = skv - sq if bottom_right else 0
    seen = np.array([[j <= i + shift and (window is None or j > i + shift - window)
                      for j in range(skv)] for i in range(sq)])
    s = np.matmul(data["q"].astype(np.float64), np.swapaxes(data["k"], -1, -2)) / np.sqrt(8)
    s = np.where(seen, s, -np.inf)
    top = np.max(s, axis=-1, keepdims=True)
    e = np.where(seen, np.exp(s - np.where(np.isinf(top), 0, top)), 0.0)
    total = e.sum(-1, keepdims=True)
    want_o = np.matmul(e / np.where(total == 0, 1, total), data["v"])
    ref = g.execute_reference(dict(data, do=np.zeros(do.dim, np.float32),
                                   o_in=np.zeros(o_in.dim, np.float32),
                                   stats_in=np.zeros(stats_in.dim, np.float32)))
    np.testing.assert_allclose(ref[o.name], want_o, rtol=1e-6, atol=1e-9)
    assert (np.isneginf(ref[stats.name][..., 0]) == ~seen.any(-1)).all()
    special = dict(data, do=rng.standard_normal(do.dim).astype(np.float32),
                   o_in=ref[o.name].astype(np.float32),
                   stats_in=ref[stats.name].astype(np.float32))
    _run(g, special=special)


@pytest.mark.parametrize("masks", [{}, dict(use_causal_mask=True),
                                   dict(use_causal_mask_bottom_right=True),
                                   dict(use_causal_mask_bottom_right=True,
                                        sliding_window_length=2)])
def test_sdpa_padding(masks):
    """Padding masks (per-batch sequence lengths), forward and backward, GQA,
    on the CPU against the reference; the reference against the padded
    entries cut to their lengths and run unpadded, with a bottom-right
    diagonal each entry's own. Padded rows give o = 0 and stats = -inf;
    padded rows and columns get zero gradients. Lengths past the end clamp."""
    lengths = [(5, 9), (3, 4), (0, 6), (6, 0), (7, 12)]  # Sq = 6, Skv = 9
    g = dnnc.Graph(io_data_type=F32)
    q = g.tensor(name="q", dim=[5, 4, 6, 8])
    k = g.tensor(name="k", dim=[5, 2, 9, 8])
    v = g.tensor(name="v", dim=[5, 2, 9, 4])
    lq = g.tensor(name="lq", dim=[5, 1, 1, 1], data_type=dnnc.data_type.INT32)
    lkv = g.tensor(name="lkv", dim=[5, 1, 1, 1], data_type=dnnc.data_type.INT32)
    pad = dict(masks, use_padding_mask=True, seq_len_q=lq, seq_len_kv=lkv)
    o, stats = g.sdpa(q, k, v, generate_stats=True, **pad)
    _outputs(o, stats)
    do = g.tensor(name="do", dim=[5, 4, 6, 4])
    o_in = g.tensor(name="o_in", dim=[5, 4, 6, 4])
    stats_in = g.tensor(name="stats_in", dim=[5, 4, 6, 1])
    dq, dk, dv = g.sdpa_backward(q, k, v, o_in, do, stats_in, **pad)
    _outputs(dq, dk, dv)
    rng = np.random.default_rng(5)
    data = {t.name: rng.standard_normal(t.dim).astype(np.float32) for t in (q, k, v, do)}
    data["lq"] = np.array([a for a, _ in lengths], np.int32).reshape(5, 1, 1, 1)
    data["lkv"] = np.array([b for _, b in lengths], np.int32).reshape(5, 1, 1, 1)
    ref = g.execute_reference(dict(data, o_in=np.zeros(o_in.dim, np.float32),
                                   stats_in=np.zeros(stats_in.dim, np.float32)))
    for n, (a, b) in enumerate(lengths):
        a, b = min(a, 6), min(b, 9)
        one = dnnc.Graph(io_data_type=F32)
        args = [one.tensor(name=t.name, dim=[1, t.dim[1], s, t.dim[3]])
                for t, s in ((q, a), (k, b), (v, b))]
        if not a or not b:  # every row padded, or seeing no column
            assert not ref[o.name][n].any() and np.isneginf(ref[stats.name][n]).all()
            continue
        uo, us = one.sdpa(*args, generate_stats=True, **masks)
        _outputs(uo, us)
        cut = {"q": data["q"][n:n + 1, :, :a], "k": data["k"][n:n + 1, :, :b],
               "v": data["v"][n:n + 1, :, :b]}
        got = one.execute_reference(cut)
        np.testing.assert_allclose(ref[o.name][n, :, :a], got[uo.name][0], rtol=1e-9)
        np.testing.assert_array_equal(ref[stats.name][n, :, :a], got[us.name][0])
        assert not ref[o.name][n, :, a:].any()
        assert np.isneginf(ref[stats.name][n, :, a:]).all()
    special = dict(data, o_in=ref[o.name].astype(np.float32),
                   stats_in=ref[stats.name].astype(np.float32))
    ref = g.execute_reference(special)
    for n, (a, b) in enumerate(lengths):
        assert not ref[dq.name][n, :, a:].any() and not ref[dk.name][n, :, b:].any()
        assert not ref[dv.name][n, :, b:].any()
    _run(g, special=special)


def test_sdpa_padding_arguments_are_checked():
    g = dnnc.Graph(io_data_type=F32)
    q, k, v = (g.tensor(name=n, dim=[2, 1, 4, 8]) for n in "qkv")
    lq = g.tensor(name="lq", dim=[2, 1, 1, 1], data_type=dnnc.data_type.INT32)
    bad = g.tensor(name="bad", dim=[2, 1, 1, 1])
    short = g.tensor(name="short", dim=[1, 1, 1, 1], data_type=dnnc.data_type.INT32)
    with pytest.raises(dnnc.GraphError, match="expected use_padding_mask=True"):
        g.sdpa(q, k, v, seq_len_q=lq, seq_len_kv=lq)
    with pytest.raises(dnnc.VerificationError, match="'seq_len_kv'.*expected an int32 tensor"):
        g.sdpa(q, k, v, use_padding_mask=True, seq_len_q=lq)
    with pytest.raises(dnnc.VerificationError, match="'seq_len_q'.*expected a tensor of int32, got f32"):
        g.sdpa(q, k, v, use_padding_mask=True, seq_len_q=bad, seq_len_kv=lq)
    with pytest.raises(dnnc.VerificationError, match="'seq_len_kv' dim 0: expected 2"):
        g.sdpa(q, k, v, use_padding_mask=True, seq_len_q=lq, seq_len_kv=short)
    with pytest.raises(dnnc.VerificationError, match="operand 'a'.*floating-point"):
        g.add(lq, lq)


def test_sdpa_mask_arguments_are_checked():
    g = dnnc.Graph(io_data_type=F32)
    q, k, v = (g.tensor(name=n, dim=[1, 1, 4, 8]) for n in "qkv")
    with pytest.raises(dnnc.GraphError, match="use_causal_mask and use_causal_mask_bottom"):
        g.sdpa(q, k, v, use_causal_mask=True, use_causal_mask_bottom_right=True)
    with pytest.raises(dnnc.GraphError, match="sliding_window_length: expected a positive"):
        g.sdpa(q, k, v, sliding_window_length=0)


@pytest.mark.parametrize("dt", [F32, BF16])
def test_layernorm_and_rmsnorm_forward_and_backward(dt):
    g = dnnc.Graph(io_data_type=dt)
    x = g.tensor(name="x", dim=[3, 5, 7])
    scale = g.tensor(name="scale", dim=[1, 5, 7])
    bias = g.tensor(name="bias", dim=[1, 5, 7])
    y, mean, inv = g.layernorm(x, scale, bias, axis=1, norm_forward_phase="training")
    _outputs(y, mean, inv)
    dy = g.tensor(name="dy", dim=[3, 5, 7])
    _outputs(*g.layernorm_backward(dy, x, scale, mean, inv, axis=1))
    gamma = g.tensor(name="gamma", dim=[1, 1, 7])
    ry, inv_rms = g.rmsnorm(x, gamma, axis=2, epsilon=1e-3, norm_forward_phase="training")
    _outputs(ry, inv_rms)
    _outputs(*g.rmsnorm_backward(dy, x, gamma, inv_rms, axis=2))
    _outputs(g.layernorm(x, axis=2)[0])  # no affine parameters
    _run(g)


@pytest.mark.parametrize("dt", [F32, BF16])
def test_batchnorm_training_inference_and_backward(dt):
    g = dnnc.Graph(io_data_type=dt)
    x = g.tensor(name="x", dim=[3, 4, 5, 3])
    scale = g.tensor(name="scale", dim=[1, 4, 1, 1])
    bias = g.tensor(name="bias", dim=[1, 4, 1, 1])
    rm = g.tensor(name="running_mean", dim=[1, 4, 1, 1], data_type=F32)
    rv = g.tensor(name="running_var", dim=[1, 4, 1, 1], data_type=F32)
    outs = g.batchnorm(x, scale, bias, rm, rv, momentum=0.2)
    _outputs(*outs)
    dy = g.tensor(name="dy", dim=[3, 4, 5, 3])
    _outputs(*g.batchnorm_backward(dy, x, scale, outs[1], outs[2]))
    _outputs(g.batchnorm_inference(x, rm, rv, scale, bias, epsilon=1e-3))
    _run(g, positive=("running_var",))


@pytest.mark.parametrize("dt", [F32, BF16])
def test_groupnorm_and_instancenorm_forward_and_backward(dt):
    g = dnnc.Graph(io_data_type=dt)
    x = g.tensor(name="x", dim=[2, 6, 3, 5])
    scale = g.tensor(name="scale", dim=[1, 6, 1, 1])
    bias = g.tensor(name="bias", dim=[1, 6, 1, 1])
    y, mean, inv = g.groupnorm(x, 3, scale, bias, norm_forward_phase="training")
    _outputs(y, mean, inv)
    dy = g.tensor(name="dy", dim=[2, 6, 3, 5])
    _outputs(*g.groupnorm_backward(dy, x, 3, scale, mean, inv))
    iy, imean, iinv = g.instancenorm(x, scale, bias, norm_forward_phase="training")
    _outputs(iy, imean, iinv)
    _outputs(*g.instancenorm_backward(dy, x, scale, imean, iinv))
    _run(g)


@pytest.mark.parametrize("dt", [F32, BF16])
def test_softmax_family_forward_and_backward(dt):
    g = dnnc.Graph(io_data_type=dt)
    x = g.tensor(name="x", dim=[3, 13, 7])
    dy = g.tensor(name="dy", dim=[3, 13, 7])
    s = g.softmax(x, axis=1)
    ls = g.log_softmax(x, axis=2)
    _outputs(s, ls, g.softmax_backward(dy, s, axis=1), g.log_softmax_backward(dy, ls, axis=2))
    _run(g)


def test_softmax_rows_of_minus_inf_give_zeros_on_the_cpu():
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[2, 4])
    _outputs(g.softmax(x, axis=1), g.log_softmax(x, axis=1))
    data = np.array([[-np.inf] * 4, [0.0, 1.0, -np.inf, 2.0]], np.float32)
    got = g.compile(target="cpu").run(data)
    assert np.all(got[0][0] == 0.0) and np.all(got[1][0] == -np.inf)
    np.testing.assert_allclose(got[0][1].sum(), 1.0, rtol=1e-6)


def test_max_over_an_empty_axis_inside_composites():
    # dnn.reduction refuses max over an empty axis; softmax and attention
    # decompose it to -inf there, as their rules for all -inf rows expect.
    g = dnnc.Graph(io_data_type="f32")
    x = g.tensor(name="x", dim=[3, 0])
    g.softmax(x, axis=1).set_name("y").set_output(True)
    y = g.compile(target="cpu")(x=np.zeros((3, 0), np.float32))["y"]
    assert y.shape == (3, 0)
    g = dnnc.Graph(io_data_type="f32")
    q = g.tensor(name="q", dim=[1, 2, 4, 8])
    k = g.tensor(name="k", dim=[1, 2, 0, 8])
    v = g.tensor(name="v", dim=[1, 2, 0, 8])
    g.sdpa(q, k, v)[0].set_name("o").set_output(True)
    rng = np.random.default_rng(0)
    o = g.compile(target="cpu")(q=rng.standard_normal((1, 2, 4, 8)).astype(np.float32),
                                k=np.zeros((1, 2, 0, 8), np.float32),
                                v=np.zeros((1, 2, 0, 8), np.float32))["o"]
    np.testing.assert_array_equal(o, np.zeros((1, 2, 4, 8), np.float32))
