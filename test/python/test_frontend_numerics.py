"""dnnc.frontend graphs, written as cudnn-frontend's samples write them, run on
the CPU back end against PyTorch (CPU) references."""

import pytest

import dnnc.frontend as cudnn

torch = pytest.importorskip(
    "torch", reason="PyTorch not installed: frontend-vs-PyTorch comparisons skipped")
import torch.nn.functional as F  # noqa: E402

pytestmark = pytest.mark.torch


def _build(g):
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()


def _graph(**kw):
    return cudnn.pygraph(intermediate_data_type=cudnn.data_type.FLOAT,
                         compute_data_type=cudnn.data_type.FLOAT, target="cpu", **kw)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-4), (torch.bfloat16, 3e-2)])
def test_layernorm_training_and_backward(dtype, tol):
    torch.manual_seed(0)
    N, C = 48, 80                                   # [batch * seq, hidden, 1, 1]
    x = (3 * torch.randn(N, C, 1, 1) - 0.5).to(dtype).to(memory_format=torch.channels_last)
    scale = (5 * torch.randn(1, C, 1, 1) - 1).to(dtype)
    bias = (7 * torch.randn(1, C, 1, 1) - 2).to(dtype)
    eps = torch.full((1, 1, 1, 1), 1e-3)

    g = _graph()
    X = g.tensor(name="X", dim=x.size(), stride=x.stride(), data_type=x.dtype)
    S = g.tensor(name="scale", dim=scale.size(), stride=scale.stride(), data_type=scale.dtype)
    B = g.tensor(name="bias", dim=bias.size(), stride=bias.stride(), data_type=bias.dtype)
    E = g.tensor(name="epsilon", dim=eps.size(), stride=eps.stride(), is_pass_by_value=True,
                 data_type=eps.dtype)
    Y, mean, inv_var = g.layernorm(name="LN", norm_forward_phase=cudnn.norm_forward_phase.TRAINING,
                                   input=X, scale=S, bias=B, epsilon=E)
    Y.set_output(True).set_data_type(x.dtype)
    mean.set_output(True).set_data_type(torch.float32)
    inv_var.set_output(True).set_data_type(torch.float32)
    _build(g)
    y, m, iv = torch.empty_like(x), torch.empty(N, 1, 1, 1), torch.empty(N, 1, 1, 1)
    g.execute({X: x, S: scale, B: bias, E: eps, Y: y, mean: m, inv_var: iv}, None)

    xf = x.float()
    y_ref = F.layer_norm(xf, [C, 1, 1], scale.float().squeeze(0), bias.float().squeeze(0), 1e-3)
    torch.testing.assert_close(y.float(), y_ref, atol=tol * 10, rtol=tol)
    torch.testing.assert_close(m, xf.mean(dim=(1, 2, 3), keepdim=True), atol=tol, rtol=tol)
    iv_ref = torch.rsqrt(xf.var(dim=(1, 2, 3), keepdim=True, unbiased=False) + 1e-3)
    torch.testing.assert_close(iv, iv_ref, atol=tol, rtol=tol)

    if dtype is not torch.float32:
        return
    xg = xf.clone().requires_grad_()
    sg = scale.float().clone().requires_grad_()
    bg = bias.float().clone().requires_grad_()
    dy = torch.randn(N, C, 1, 1)
    F.layer_norm(xg, [C, 1, 1], sg.squeeze(0), bg.squeeze(0), 1e-3).backward(dy)

    bwd = _graph()
    DY = bwd.tensor(name="DY", dim=x.size(), stride=x.stride(), data_type=x.dtype)
    Xb = bwd.tensor_like(X, name="X")
    Sb = bwd.tensor_like(S, name="scale")
    Mb = bwd.tensor_like(mean, name="mean")
    Ib = bwd.tensor_like(inv_var, name="inv_var")
    DX, DS, DB = bwd.layernorm_backward(name="DLN", grad=DY, input=Xb, scale=Sb, mean=Mb,
                                        inv_variance=Ib)
    for t in (DX, DS, DB):
        t.set_output(True).set_data_type(x.dtype)
    _build(bwd)
    dx, ds, db = torch.empty_like(x), torch.empty_like(scale), torch.empty_like(bias)
    bwd.execute({Xb: x, Sb: scale, DY: dy, Mb: m, Ib: iv, DX: dx, DS: ds, DB: db}, None)
    torch.testing.assert_close(dx, xg.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(ds, sg.grad, atol=1e-3, rtol=1e-4)
    torch.testing.assert_close(db, bg.grad, atol=1e-3, rtol=1e-4)


def test_rmsnorm_inference_uses_tensor_like_and_uids():
    torch.manual_seed(1)
    x = torch.randn(16, 40, 1, 1)
    w = torch.randn(1, 40, 1, 1)
    g = _graph()
    X, W = g.tensor_like(x), g.tensor_like(w)
    Y, inv = g.rmsnorm(norm_forward_phase=cudnn.norm_forward_phase.INFERENCE, input=X, scale=W,
                       epsilon=1e-5)
    assert inv is None
    Y.set_output(True)
    _build(g)
    y = torch.empty_like(x)
    g.execute({X.get_uid(): x, W.get_uid(): w, Y.get_uid(): y}, None)
    ref = x * torch.rsqrt(x.pow(2).mean(dim=(1, 2, 3), keepdim=True) + 1e-5) * w
    torch.testing.assert_close(y, ref, atol=1e-5, rtol=1e-5)


def test_conv_bias_relu_with_clips_channels_last():
    torch.manual_seed(2)
    x = torch.randn(2, 8, 9, 9).to(memory_format=torch.channels_last)
    w = torch.randn(16, 8, 3, 3).to(memory_format=torch.channels_last)
    b = torch.randn(1, 16, 1, 1)
    with cudnn.graph(None, io_data_type=cudnn.data_type.FLOAT) as (g, _):
        g.target = "cpu"
        X, W, B = g.tensor_like(x), g.tensor_like(w), g.tensor_like(b)
        conv = g.conv_fprop(image=X, weight=W, padding=[1, 1], stride=[2, 2], dilation=[1, 1])
        Y = g.relu(name="relu", input=g.bias(name="bias", input=conv, bias=B),
                   lower_clip=0.5, upper_clip=1.5)
        Y.set_output(True)
    _build(g)
    assert Y.get_dim() == [2, 16, 5, 5]
    # cuDNN's layout rule: the output takes the image's stride order (channels-last).
    assert Y.get_stride() == [400, 1, 80, 16]
    y = torch.empty(2, 16, 5, 5).to(memory_format=torch.channels_last)
    g.execute({X: x, W: w, B: b, Y: y}, None)
    ref = torch.clamp(F.conv2d(x, w, padding=1, stride=2) + b, min=0.5, max=1.5)
    torch.testing.assert_close(y, ref, atol=1e-4, rtol=1e-4)


def test_leaky_relu_through_relu_negative_slope_and_backward():
    torch.manual_seed(3)
    x, dy = torch.randn(4, 33), torch.randn(4, 33)
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    X, DY = g.tensor_like(x), g.tensor_like(dy)
    Y = g.relu(input=X, negative_slope=0.2).set_output(True)
    DX = g.leaky_relu_backward(loss=DY, input=X, negative_slope=0.2).set_output(True)
    _build(g)
    y, dx = torch.empty_like(x), torch.empty_like(x)
    g.execute({X: x, DY: dy, Y: y, DX: dx}, None)
    torch.testing.assert_close(y, F.leaky_relu(x, 0.2))
    torch.testing.assert_close(dx, torch.where(x > 0, dy, 0.2 * dy))


def test_matmul_bias_relu():
    torch.manual_seed(4)
    a, b, bias = torch.randn(2, 12, 20), torch.randn(2, 20, 24), torch.randn(1, 1, 24)
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    A, B, Bias = g.tensor_like(a), g.tensor_like(b), g.tensor_like(bias)
    C = g.relu(input=g.bias(input=g.matmul(A, B), bias=Bias)).set_output(True)
    _build(g)
    c = torch.empty(2, 12, 24)
    g.execute({A: a, B: b, Bias: bias, C: c}, None)
    torch.testing.assert_close(c, torch.relu(a @ b + bias), atol=1e-4, rtol=1e-4)


def test_sdpa_causal_with_stats_and_backward():
    torch.manual_seed(5)
    B, H, S, D = 1, 2, 16, 8
    q, k, v = (torch.randn(B, H, S, D) for _ in range(3))
    scale = 0.3
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    Q, K, V = g.tensor_like(q), g.tensor_like(k), g.tensor_like(v)
    O, stats = g.sdpa(q=Q, k=K, v=V, attn_scale=scale, is_inference=False, use_causal_mask=True)
    O.set_output(True)
    stats.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    _build(g)
    o, st = torch.empty_like(q), torch.empty(B, H, S, 1)
    g.execute({Q: q, K: k, V: v, O: o, stats: st}, None)
    scores = (q @ k.transpose(-1, -2)) * scale
    scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    torch.testing.assert_close(o, torch.softmax(scores, -1) @ v, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(st, torch.logsumexp(scores, -1, keepdim=True), atol=1e-5,
                               rtol=1e-5)

    qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
    do = torch.randn_like(q)
    F.scaled_dot_product_attention(qg, kg, vg, is_causal=True, scale=scale).backward(do)
    bwd = _graph(io_data_type=cudnn.data_type.FLOAT)
    t = {n: bwd.tensor_like(a) for n, a in dict(q=q, k=k, v=v, o=o, do=do, st=st).items()}
    dQ, dK, dV = bwd.sdpa_backward(q=t["q"], k=t["k"], v=t["v"], o=t["o"], dO=t["do"],
                                   stats=t["st"], attn_scale=scale, use_causal_mask=True)
    for x in (dQ, dK, dV):
        x.set_output(True)
    _build(bwd)
    dq, dk, dv = (torch.empty_like(q) for _ in range(3))
    bwd.execute({t["q"]: q, t["k"]: k, t["v"]: v, t["o"]: o, t["do"]: do, t["st"]: st,
                 dQ: dq, dK: dk, dV: dv}, None)
    for got, want in ((dq, qg.grad), (dk, kg.grad), (dv, vg.grad)):
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_sdpa_backward_dbias_of_a_bias_broadcast_over_the_batch():
    # cuDNN's dBias as its samples pass it: a tensor the caller makes with
    # the bias's dims ([1, H, Sq, Skv] here, so the batch is summed), given
    # to sdpa_backward beside bias; against autograd of an additive
    # attn_mask with a causal mask folded in (-inf above the diagonal).
    torch.manual_seed(8)
    B, H, Sq, Skv, D = 2, 3, 6, 9, 8
    q, k, v = torch.randn(B, H, Sq, D), torch.randn(B, H, Skv, D), torch.randn(B, H, Skv, D)
    bias, scale = torch.randn(1, H, Sq, Skv), 0.35
    above = torch.ones(Sq, Skv, dtype=torch.bool).triu(1)
    bg = bias.clone().requires_grad_()
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=bg.masked_fill(above, float("-inf")),
                                       scale=scale)
    do = torch.randn_like(o)
    o.backward(do)
    st = torch.logsumexp((q @ k.transpose(-1, -2) * scale + bias).masked_fill(
        above, float("-inf")), -1, keepdim=True)

    bwd = _graph(io_data_type=cudnn.data_type.FLOAT)
    t = {n: bwd.tensor_like(a) for n, a in
         dict(q=q, k=k, v=v, o=o.detach(), do=do, st=st, bias=bias).items()}
    dBias = bwd.tensor(name="dBias", dim=bias.size(), stride=bias.stride(),
                       data_type=cudnn.data_type.FLOAT).set_output(True)
    dQ, dK, dV = bwd.sdpa_backward(q=t["q"], k=t["k"], v=t["v"], o=t["o"], dO=t["do"],
                                   stats=t["st"], attn_scale=scale, bias=t["bias"],
                                   dBias=dBias, use_causal_mask=True)
    for x in (dQ, dK, dV):
        x.set_output(True)
    _build(bwd)
    dq, dk, dv, db = (torch.empty_like(x) for x in (q, k, v, bias))
    bwd.execute({t["q"]: q, t["k"]: k, t["v"]: v, t["o"]: o.detach(), t["do"]: do,
                 t["st"]: st, t["bias"]: bias, dQ: dq, dK: dk, dV: dv, dBias: db}, None)
    torch.testing.assert_close(db, bg.grad, atol=1e-4, rtol=1e-4)
    assert not db[..., above].any()

    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    t = {n: g.tensor_like(a) for n, a in dict(q=q, k=k, v=v, o=q, do=q, st=st).items()}
    with pytest.raises(cudnn.InvalidGraphError, match="dBias: expected a bias with it"):
        g.sdpa_backward(q=t["q"], k=t["k"], v=t["v"], o=t["o"], dO=t["do"], stats=t["st"],
                        dBias=g.tensor(name="dBias", dim=[1, H, Sq, Skv]))


def test_sdpa_stats_packed_and_gradients_laid_out_like_their_inputs():
    # cudnn-frontend's tests hand q in [B, S, H, D] order and allocate the
    # statistics as a packed [B, H, S, 1] tensor: Stats does not follow q's
    # layout, and each of dQ, dK, dV follows its own input's.
    torch.manual_seed(6)
    B, H, S, D = 2, 3, 8, 8
    q = torch.randn(B, S, H, D).transpose(1, 2)
    k, v = torch.randn(B, H, S, D), torch.randn(B, S, H, D).transpose(1, 2)
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    Q, K, V = g.tensor_like(q), g.tensor_like(k), g.tensor_like(v)
    O, stats = g.sdpa(q=Q, k=K, v=V, attn_scale=0.4, is_inference=False)
    O.set_output(True)
    stats.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    _build(g)
    assert stats.get_stride() == [H * S, S, 1, 1]
    assert O.get_stride() == list(q.stride())
    o, st = torch.empty_like(q), torch.empty(B, H, S, 1)
    g.execute({Q: q, K: k, V: v, O: o, stats: st}, None)
    scores = (q @ k.transpose(-1, -2)) * 0.4
    torch.testing.assert_close(st, torch.logsumexp(scores, -1, keepdim=True), atol=1e-5,
                               rtol=1e-5)

    bwd = _graph(io_data_type=cudnn.data_type.FLOAT)
    t = {n: bwd.tensor_like(a) for n, a in dict(q=q, k=k, v=v, o=o, do=q, st=st).items()}
    dQ, dK, dV = bwd.sdpa_backward(q=t["q"], k=t["k"], v=t["v"], o=t["o"], dO=t["do"],
                                   stats=t["st"], attn_scale=0.4)
    for x in (dQ, dK, dV):
        x.set_output(True)
    _build(bwd)
    assert (dQ.get_stride(), dK.get_stride(), dV.get_stride()) == \
        (list(q.stride()), list(k.stride()), list(v.stride()))


def test_sdpa_over_a_paged_cache():
    # cuDNN's paged attention as its samples write it: K and V caches of
    # pages [pages, H, page_size, D], int32 tables [B, 1, pages_per_seq, 1],
    # the kv lengths through the padding mask; against SDPA on the cache
    # gathered into each sequence's contiguous K and V.
    torch.manual_seed(7)
    B, H, Sq, D, page, per_seq = 2, 2, 3, 8, 4, 3
    pages = B * per_seq
    q = torch.randn(B, H, Sq, D)
    kc, vc = torch.randn(pages, H, page, D), torch.randn(pages, H, page, D)
    table = torch.randperm(pages, dtype=torch.int32).reshape(B, 1, per_seq, 1)
    lq = torch.full((B, 1, 1, 1), Sq, dtype=torch.int32)
    lkv = torch.tensor([9, 12], dtype=torch.int32).reshape(B, 1, 1, 1)
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    Q, K, V = g.tensor_like(q), g.tensor_like(kc), g.tensor_like(vc)
    KT, VT = g.tensor_like(table), g.tensor_like(table.clone())
    LQ, LKV = g.tensor_like(lq), g.tensor_like(lkv)
    O, _ = g.sdpa(q=Q, k=K, v=V, is_inference=True, attn_scale=0.5, use_padding_mask=True,
                  seq_len_q=LQ, seq_len_kv=LKV, use_causal_mask_bottom_right=True,
                  paged_attention_k_table=KT, paged_attention_v_table=VT,
                  paged_attention_max_seq_len_kv=page * per_seq)
    O.set_output(True)
    _build(g)
    o = torch.empty_like(q)
    g.execute({Q: q, K: kc, V: vc, KT: table, VT: table, LQ: lq, LKV: lkv, O: o}, None)
    for b in range(B):
        rows = table[b, 0, :, 0].long()
        k = kc[rows].permute(1, 0, 2, 3).reshape(H, per_seq * page, D)[:, :int(lkv[b])]
        v = vc[rows].permute(1, 0, 2, 3).reshape(H, per_seq * page, D)[:, :int(lkv[b])]
        scores = (q[b] @ k.transpose(-1, -2)) * 0.5
        shift = int(lkv[b]) - Sq   # bottom-right: row i sees columns up to i + shift
        mask = torch.arange(k.shape[1])[None, :] > (torch.arange(Sq)[:, None] + shift)
        want = torch.softmax(scores.masked_fill(mask, float("-inf")), -1) @ v
        torch.testing.assert_close(o[b], want, atol=1e-5, rtol=1e-5)


def test_wgrad_and_dgrad_take_the_callers_dims():
    torch.manual_seed(6)
    x, dy = torch.randn(2, 4, 8, 8), torch.randn(2, 6, 8, 8)
    w = torch.randn(6, 4, 3, 3)
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    X, DY, W = g.tensor_like(x), g.tensor_like(dy), g.tensor_like(w)
    DW = g.conv_wgrad(image=X, loss=DY, padding=[1, 1], stride=[1, 1], dilation=[1, 1])
    DW.set_output(True).set_dim([6, 4, 3, 3])
    DX = g.conv_dgrad(loss=DY, filter=W, padding=[1, 1], stride=[1, 1], dilation=[1, 1])
    DX.set_output(True).set_dim([2, 4, 8, 8])
    _build(g)
    dw, dx = torch.empty(6, 4, 3, 3), torch.empty_like(x)
    g.execute({X: x, DY: dy, W: w, DW: dw, DX: dx}, None)
    torch.testing.assert_close(dw, torch.nn.grad.conv2d_weight(x, w.shape, dy, padding=1),
                               atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(dx, torch.nn.grad.conv2d_input(x.shape, w, dy, padding=1),
                               atol=1e-4, rtol=1e-4)


def test_slice_and_reduction_and_genstats():
    torch.manual_seed(7)
    x = torch.randn(3, 10, 6, 5)
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    X = g.tensor_like(x)
    S = g.slice(X, [slice(0, 2), slice(1, 9, 2)]).set_output(True)
    R = g.reduction(X, mode=cudnn.reduction_mode.ADD)
    R.set_output(True).set_dim([3, 1, 6, 5]).set_data_type(cudnn.data_type.FLOAT)
    M = g.reduction(X, mode=cudnn.reduction_mode.MAX).set_output(True).set_dim([1, 10, 1, 1])
    SUM, SQ = g.genstats(X)
    SUM.set_output(True)
    SQ.set_output(True)
    _build(g)
    s, r, m = torch.empty(2, 4, 6, 5), torch.empty(3, 1, 6, 5), torch.empty(1, 10, 1, 1)
    sm, sq = torch.empty(1, 10, 1, 1), torch.empty(1, 10, 1, 1)
    g.execute({X: x, S: s, R: r, M: m, SUM: sm, SQ: sq}, None)
    torch.testing.assert_close(s, x[0:2, 1:9:2])
    torch.testing.assert_close(r, x.sum(1, keepdim=True), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(m, x.amax(dim=(0, 2, 3), keepdim=True))
    torch.testing.assert_close(sm, x.sum(dim=(0, 2, 3), keepdim=True), atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(sq, (x * x).sum(dim=(0, 2, 3), keepdim=True), atol=1e-4,
                               rtol=1e-5)


def test_batchnorm_training_inference_and_backward():
    torch.manual_seed(8)
    N, C = 4, 6
    x = torch.randn(N, C, 5, 5)
    scale, bias = torch.randn(1, C, 1, 1), torch.randn(1, C, 1, 1)
    rm, rv = torch.randn(1, C, 1, 1), torch.rand(1, C, 1, 1) + 0.5
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    X, S, B, RM, RV = (g.tensor_like(a) for a in (x, scale, bias, rm, rv))
    eps = g.tensor(name="eps", dim=[1, 1, 1, 1], is_pass_by_value=True,
                   data_type=cudnn.data_type.FLOAT)
    mom = g.tensor(name="mom", dim=[1, 1, 1, 1], is_pass_by_value=True,
                   data_type=cudnn.data_type.FLOAT)
    Y, mean, inv, nrm, nrv = g.batchnorm(input=X, scale=S, bias=B, in_running_mean=RM,
                                         in_running_var=RV, epsilon=eps, momentum=mom)
    for t in (Y, mean, inv, nrm, nrv):
        t.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    Yi = g.batchnorm_inference(input=X, mean=RM, inv_variance=RV, scale=S, bias=B)
    Yi.set_output(True)
    _build(g)
    outs = [torch.empty_like(x), *(torch.empty(1, C, 1, 1) for _ in range(4)),
            torch.empty_like(x)]
    pack = {X: x, S: scale, B: bias, RM: rm, RV: rv, eps: 1e-5, mom: torch.tensor([0.1])}
    pack.update(zip((Y, mean, inv, nrm, nrv, Yi), outs))
    g.execute(pack, None)
    rm_ref, rv_ref = rm.flatten().clone(), rv.flatten().clone()
    y_ref = F.batch_norm(x, rm_ref, rv_ref, scale.flatten(), bias.flatten(), training=True,
                         momentum=0.1, eps=1e-5)
    torch.testing.assert_close(outs[0], y_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(outs[3].flatten(), rm_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(outs[4].flatten(), rv_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(outs[5], (x - rm) * rv * scale + bias, atol=1e-5, rtol=1e-5)


def test_instancenorm_training():
    torch.manual_seed(9)
    x = torch.randn(2, 3, 4, 5)
    s, b = torch.randn(1, 3, 1, 1), torch.randn(1, 3, 1, 1)
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    X, S, B = g.tensor_like(x), g.tensor_like(s), g.tensor_like(b)
    Y, mean, inv = g.instancenorm(norm_forward_phase=cudnn.norm_forward_phase.TRAINING, input=X,
                                  scale=S, bias=B, epsilon=1e-5)
    Y.set_output(True)
    _build(g)
    y = torch.empty_like(x)
    g.execute({X: x, S: s, B: b, Y: y}, None)
    ref = F.instance_norm(x, weight=s.flatten(), bias=b.flatten(), eps=1e-5)
    torch.testing.assert_close(y, ref, atol=1e-5, rtol=1e-5)


def _count_compiles(monkeypatch, g):
    """A list that grows by one each time ``g`` compiles a plan."""
    compiles = []
    compile_plan = type(g)._compile

    def counted(self, values):
        compiles.append(dict(values))
        return compile_plan(self, values)

    monkeypatch.setattr(type(g), "_compile", counted)
    return compiles


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 2e-5), (torch.bfloat16, 2e-2)])
def test_channels_last_instancenorm_training_and_backward(dtype, tol):
    """cudnn-frontend's test_instancenorm form: x, dy and the [1, C, 1, 1]
    parameters channels_last, the statistics f32; y and dx come back
    channels-last, and the same as PyTorch's."""
    torch.manual_seed(11)
    N, C, H, W = 2, 16, 5, 6
    cl = torch.channels_last
    x = (2 * torch.randn(N, C, H, W) + 1).to(dtype).to(memory_format=cl)
    dy = torch.randn(N, C, H, W).to(dtype).to(memory_format=cl)
    scale = torch.randn(1, C, 1, 1).to(memory_format=cl)
    bias = torch.randn(1, C, 1, 1).to(memory_format=cl)
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    X, DY, S, B = (g.tensor_like(a) for a in (x, dy, scale, bias))
    Y, mean, inv = g.instancenorm(norm_forward_phase=cudnn.norm_forward_phase.TRAINING, input=X,
                                  scale=S, bias=B, epsilon=1e-5)
    Y.set_output(True).set_data_type(x.dtype)
    mean.set_output(True).set_data_type(torch.float32)
    inv.set_output(True).set_data_type(torch.float32)
    DX, DS, DB = g.instancenorm_backward(grad=DY, input=X, scale=S, mean=mean, inv_variance=inv)
    DX.set_output(True).set_data_type(x.dtype)
    DS.set_output(True).set_data_type(torch.float32)
    DB.set_output(True).set_data_type(torch.float32)
    _build(g)
    assert Y.get_stride() == list(x.stride()) and DX.get_stride() == list(x.stride())
    y, dx = torch.empty_like(x), torch.empty_like(x)
    m, iv = torch.empty(N, C, 1, 1), torch.empty(N, C, 1, 1)
    ds, db = torch.empty(1, C, 1, 1), torch.empty(1, C, 1, 1)
    g.execute({X: x, DY: dy, S: scale, B: bias, Y: y, mean: m, inv: iv, DX: dx, DS: ds, DB: db},
              None)

    xf = x.float().detach().requires_grad_()
    w, b = scale.flatten().clone().requires_grad_(), bias.flatten().clone().requires_grad_()
    y_ref = F.instance_norm(xf, weight=w, bias=b, eps=1e-5)
    dx_ref, ds_ref, db_ref = torch.autograd.grad(y_ref, (xf, w, b), dy.float())
    torch.testing.assert_close(y.float(), y_ref.detach(), atol=tol * 4, rtol=tol)
    torch.testing.assert_close(m, x.float().mean((2, 3), keepdim=True), atol=tol, rtol=tol)
    inv_ref = torch.rsqrt(x.float().var((2, 3), unbiased=False, keepdim=True) + 1e-5)
    torch.testing.assert_close(iv, inv_ref, atol=tol, rtol=tol)
    torch.testing.assert_close(dx.float(), dx_ref, atol=tol * 4, rtol=tol)
    torch.testing.assert_close(ds.flatten(), ds_ref, atol=tol * 10, rtol=tol)
    torch.testing.assert_close(db.flatten(), db_ref, atol=tol * 10, rtol=tol)


def test_channels_last_batchnorm_inference():
    """cuDNN's batchnorm inference (inverse deviation) on a channels_last x
    and parameters: lowered over x's memory order, the same values."""
    torch.manual_seed(12)
    cl = torch.channels_last
    x = torch.randn(3, 8, 5, 7).to(memory_format=cl)
    p = [torch.randn(1, 8, 1, 1).to(memory_format=cl) for _ in range(4)]
    p[1] = p[1].abs() + 0.5
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    X, M, IV, S, B = (g.tensor_like(a) for a in [x] + p)
    Y = g.batchnorm_inference(input=X, mean=M, inv_variance=IV, scale=S, bias=B)
    Y.set_output(True)
    _build(g)
    assert Y.get_stride() == list(x.stride())
    y = torch.empty_like(x)
    g.execute({X: x, M: p[0], IV: p[1], S: p[2], B: p[3], Y: y}, None)
    torch.testing.assert_close(y, (x - p[0]) * p[1] * p[2] + p[3], atol=1e-5, rtol=1e-5)


def test_scale_by_a_pass_by_value_scalar_is_one_plan_for_every_value(monkeypatch):
    x = torch.randn(3, 7)
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    compiles = _count_compiles(monkeypatch, g)
    X = g.tensor_like(x)
    alpha = g.tensor(name="alpha", dim=[1, 1], is_pass_by_value=True,
                     data_type=cudnn.data_type.FLOAT)
    Y = g.swish(g.scale(X, alpha)).set_output(True)
    _build(g)
    for a in (0.5, 2.0, torch.tensor([[-1.25]]), 3):
        y = torch.empty_like(x)
        g.execute({X: x, alpha: a, Y: y}, None)
        a = float(a)
        torch.testing.assert_close(y, F.silu(x * a), atol=1e-6, rtol=1e-5)
    assert len(compiles) == 1 and len(g._plans) == 1    # the value is a kernel argument
    assert "alpha" in g._last_plan.exe.input_names


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_norm_epsilon_by_value_is_one_plan_for_every_value(monkeypatch, norm):
    torch.manual_seed(3)
    N, C = 16, 96
    x = 0.05 * torch.randn(N, C, 1, 1)                 # small: epsilon matters
    scale, bias = torch.randn(1, C, 1, 1), torch.randn(1, C, 1, 1)
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    compiles = _count_compiles(monkeypatch, g)
    X, S, B = g.tensor_like(x), g.tensor_like(scale), g.tensor_like(bias)
    E = g.tensor(name="epsilon", dim=[1, 1, 1, 1], is_pass_by_value=True,
                 data_type=cudnn.data_type.FLOAT)
    phase = cudnn.norm_forward_phase.INFERENCE
    if norm == "layernorm":
        Y = g.layernorm(norm_forward_phase=phase, input=X, scale=S, bias=B, epsilon=E)[0]
    else:
        Y = g.rmsnorm(norm_forward_phase=phase, input=X, scale=S, bias=B, epsilon=E)[0]
    Y.set_output(True)
    _build(g)
    results = []
    for eps in (1e-5, 0.25):
        y = torch.empty_like(x)
        g.execute({X: x, S: scale, B: bias, E: torch.full((1, 1, 1, 1), eps), Y: y}, None)
        if norm == "layernorm":
            ref = F.layer_norm(x, [C, 1, 1], scale.squeeze(0), bias.squeeze(0), eps)
        else:
            ref = x * torch.rsqrt(x.pow(2).mean(dim=(1, 2, 3), keepdim=True) + eps) * scale + bias
        torch.testing.assert_close(y, ref, atol=1e-4, rtol=1e-4)
        results.append(y)
    assert not torch.allclose(results[0], results[1], atol=1e-2)   # the value mattered
    assert len(compiles) == 1 and len(g._plans) == 1


def test_compiled_in_scalar_compiles_per_value(monkeypatch):
    """A scalar dnnc takes as an attribute (a leaky relu's slope) is
    compiled in: a plan per value, as before runtime scalars."""
    x = torch.randn(4, 5)
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    compiles = _count_compiles(monkeypatch, g)
    X = g.tensor_like(x)
    slope = g.tensor(name="slope", dim=[1], is_pass_by_value=True,
                     data_type=cudnn.data_type.FLOAT)
    Y = g.leaky_relu(X, negative_slope=slope).set_output(True)
    _build(g)
    for s in (0.1, 0.3, 0.1):
        y = torch.empty_like(x)
        g.execute({X: x, slope: s, Y: y}, None)
        torch.testing.assert_close(y, F.leaky_relu(x, s))
    assert len(compiles) == 2 and len(g._plans) == 2


def test_refused_runtime_scalar_is_compiled_in(monkeypatch):
    """When the compiler refuses a runtime scalar (ScalarArgumentError: a
    kernel that cannot take it as an argument), the graph is lowered again
    with the value compiled in, and each value gets its plan; any other
    UnsupportedError is the frontend's cudnnGraphNotSupportedError."""
    from dnnc import graph as dnnc_graph
    from dnnc.errors import ScalarArgumentError

    real = dnnc_graph.Graph.compile

    def refusing(self, *args, **kwargs):
        if any(t.is_by_value for t in self.inputs):
            raise ScalarArgumentError("kernel 'main_k0': runtime scalar 'alpha' is read by "
                                      "'memref.copy'", kernel="main_k0", scalar="alpha")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(dnnc_graph.Graph, "compile", refusing)
    x = torch.randn(3, 7)
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    compiles = _count_compiles(monkeypatch, g)
    X = g.tensor_like(x)
    alpha = g.tensor(name="alpha", dim=[1, 1], is_pass_by_value=True,
                     data_type=cudnn.data_type.FLOAT)
    Y = g.scale(X, alpha).set_output(True)
    _build(g)
    for a in (0.5, 2.0):
        y = torch.empty_like(x)
        g.execute({X: x, alpha: a, Y: y}, None)
        torch.testing.assert_close(y, x * a)
    assert [list(c.values()) for c in compiles] == [[], [0.5], [2.0]]
    assert len(g._plans) == 2

    def unsupported(self, *args, **kwargs):
        raise UnsupportedError("matmul: f64 operands")

    from dnnc.errors import UnsupportedError

    monkeypatch.setattr(dnnc_graph.Graph, "compile", unsupported)
    h = _graph(io_data_type=cudnn.data_type.FLOAT)
    Xh = h.tensor_like(x)
    beta = h.tensor(name="beta", dim=[1, 1], is_pass_by_value=True,
                    data_type=cudnn.data_type.FLOAT)
    h.scale(Xh, beta).set_output(True)
    with pytest.raises(cudnn.cudnnGraphNotSupportedError, match="f64 operands"):
        _build(h)                                  # at check_support, as before


def test_cmp_and_binary_select():
    x, t = torch.randn(5, 6), torch.randn(5, 6)
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    X, T = g.tensor_like(x), g.tensor_like(t)
    Y = g.binary_select(input0=X, input1=T, mask=g.cmp_gt(input=X, comparison=T))
    Y.set_output(True)
    _build(g)
    y = torch.empty_like(x)
    g.execute({X: x, T: t, Y: y}, None)
    torch.testing.assert_close(y, torch.maximum(x, t))


def test_jit_graph_cache_and_uids():
    calls = []

    @cudnn.jit(heur_modes=[cudnn.heur_mode.A, cudnn.heur_mode.B])
    @cudnn.graph_cache(key_fn=lambda h, x: (tuple(x.shape), x.dtype))
    def make(handle, x):
        calls.append(1)
        with cudnn.graph(handle, io_data_type=cudnn.data_type.FLOAT) as (g, _):
            g.target = "cpu"
            X = g.tensor_like(x)
            Y = g.gelu(g.tanh(X)).set_output(True)
        return g, [X, Y]

    handle = cudnn.create_handle()
    x = torch.randn(4, 9)
    g, (xu, yu) = make(handle, x)
    g2, uids2 = make(handle, torch.randn(4, 9))
    assert g is g2 and uids2 == [xu, yu] and len(calls) == 1
    y = torch.empty_like(x)
    g.execute({xu: x, yu: y}, None, handle=handle)
    torch.testing.assert_close(y, F.gelu(torch.tanh(x)), atol=1e-6, rtol=1e-5)
    cudnn.destroy_handle(handle)


def test_rmsnorm_rows_training_and_backward_lower_to_rank_2_norms():
    torch.manual_seed(10)
    N, C = 12, 50
    x, w, dy = torch.randn(N, C, 1, 1), torch.randn(1, C, 1, 1), torch.randn(N, C, 1, 1)
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    X, W, DY = g.tensor_like(x), g.tensor_like(w), g.tensor_like(dy)
    Y, inv = g.rmsnorm(norm_forward_phase=cudnn.norm_forward_phase.TRAINING, input=X, scale=W,
                       epsilon=1e-5)
    DX, DW, DB = g.rmsnorm_backward(grad=DY, input=X, scale=W, inv_variance=inv,
                                    has_dbias=False)
    assert DB is None
    for t in (Y, inv, DX, DW):
        t.set_output(True)
    text = g.to_mlir()
    assert "dnn.reshape" in text and f"tensor<{N}x{C}xf32>" in text   # the row form
    _build(g)
    y, iv, dx, dw = (torch.empty_like(a) for a in (x, torch.empty(N, 1, 1, 1), x, w))
    g.execute({X: x, W: w, DY: dy, Y: y, inv: iv, DX: dx, DW: dw}, None)
    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
    ref = xg * torch.rsqrt(xg.pow(2).mean(dim=(1, 2, 3), keepdim=True) + 1e-5) * wg
    ref.backward(dy)
    torch.testing.assert_close(y, ref.detach(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(iv, torch.rsqrt(x.pow(2).mean(dim=(1, 2, 3), keepdim=True)
                                               + 1e-5), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(dx, xg.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(dw, wg.grad, atol=1e-4, rtol=1e-5)


def test_layernorm_over_several_spatial_dims_keeps_the_direct_form():
    torch.manual_seed(11)
    x, s, b = torch.randn(2, 3, 4, 5), torch.randn(1, 3, 4, 5), torch.randn(1, 3, 4, 5)
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    X, S, B = g.tensor_like(x), g.tensor_like(s), g.tensor_like(b)
    Y, _, _ = g.layernorm(norm_forward_phase=cudnn.norm_forward_phase.INFERENCE, input=X,
                          scale=S, bias=B, epsilon=1e-5)
    Y.set_output(True)
    assert "dnn.reshape" not in g.to_mlir()
    _build(g)
    y = torch.empty_like(x)
    g.execute({X: x, S: s, B: b, Y: y}, None)
    torch.testing.assert_close(y, F.layer_norm(x, [3, 4, 5], s[0], b[0], 1e-5), atol=1e-5,
                               rtol=1e-5)


def test_graph_wrapper_as_the_samples_use_it():
    torch.manual_seed(12)
    a, b, d = torch.randn(2, 16, 24), torch.randn(2, 24, 8), torch.randn(1, 1, 8)
    with cudnn.Graph(io_data_type=cudnn.data_type.FLOAT, target="cpu",
                     inputs=["mm::A", "mm::B", "bias::bias"], outputs=["bias::OUT_0"]) as graph:
        c = graph.bias(name="bias", input=graph.matmul(name="mm", A=a, B=b), bias=d)
        c.set_output(True)
    torch.testing.assert_close(graph(a, b, d), a @ b + d, atol=1e-5, rtol=1e-5)

    x, s, bb = torch.randn(32, 40, 1, 1), torch.randn(1, 40, 1, 1), torch.randn(1, 40, 1, 1)
    eps = torch.full((1, 1, 1, 1), 1e-5)
    with cudnn.Graph(io_data_type=cudnn.data_type.FLOAT, target="cpu",
                     inputs=["ln::input", "ln::scale", "ln::bias", "ln::epsilon"],
                     outputs=["ln::Y", "ln::MEAN", "ln::INV_VARIANCE"]) as graph:
        y, mean, inv = graph.layernorm(name="ln", input=x, scale=s, bias=bb, epsilon=eps,
                                       norm_forward_phase=cudnn.norm_forward_phase.TRAINING)
        for t in (y, mean, inv):
            t.set_output(True).set_data_type(torch.float32)
    y_out, m_out, _ = graph(x, s, bb, eps)
    torch.testing.assert_close(y_out, F.layer_norm(x, [40, 1, 1], s[0], bb[0], 1e-5),
                               atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(m_out, x.mean(dim=(1, 2, 3), keepdim=True))
    by_name = graph({"ln::input": x, "ln::scale": s, "ln::bias": bb, "ln::epsilon": eps})
    torch.testing.assert_close(by_name["ln::Y"], y_out)


@pytest.mark.parametrize("offset_dtype", [torch.int32, torch.int64])
def test_sdpa_on_ragged_thd_tensors(offset_dtype):
    # cuDNN's packed variable-length layout as its tests write it: q, k, v,
    # o of dims [B, H, S, D] over THD buffers (strides [S H D, D, H D, 1]),
    # ragged offsets [B + 1, 1, 1, 1] (prefix sums of the lengths times H D;
    # int64 as cuDNN 9.6+ takes them, int32) set on each, the lengths through
    # the padding mask; against SDPA on each sequence alone, forward and
    # backward.
    torch.manual_seed(8)
    B, H, S, D = 3, 2, 6, 8
    lengths = torch.tensor([4, 6, 1], dtype=torch.int32)
    total = int(lengths.sum())
    off = torch.cat([torch.zeros(1, dtype=torch.int32), torch.cumsum(lengths, 0)]) * H * D
    off = off.to(offset_dtype).reshape(B + 1, 1, 1, 1)
    seq = lengths.reshape(B, 1, 1, 1)

    def packed(rows):
        buf = torch.zeros(B * S, H, D)
        buf[:total] = rows
        return buf.reshape(B, S, H, D).permute(0, 2, 1, 3)   # strides [S H D, D, H D, 1]
    q, k, v, do = (packed(torch.randn(total, H, D)) for _ in range(4))
    g = _graph(io_data_type=cudnn.data_type.FLOAT)
    Q, K, V = g.tensor_like(q), g.tensor_like(k), g.tensor_like(v)
    OFF, LEN = g.tensor_like(off), g.tensor_like(seq)
    for t in (Q, K, V):
        t.set_ragged_offset(OFF)
    O, stats = g.sdpa(q=Q, k=K, v=V, attn_scale=0.4, generate_stats=True, use_causal_mask=True,
                      use_padding_mask=True, seq_len_q=LEN, seq_len_kv=LEN)
    O.set_output(True).set_stride(list(q.stride())).set_ragged_offset(OFF)
    stats.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    _build(g)
    o = torch.full_like(q, float("nan"))
    st = torch.empty(B, H, S, 1)
    g.execute({Q: q, K: k, V: v, OFF: off, LEN: seq, O: o, stats: st}, None)

    bwd = _graph(io_data_type=cudnn.data_type.FLOAT)
    t = {n: bwd.tensor_like(a) for n, a in dict(q=q, k=k, v=v, o=o, do=do, st=st).items()}
    BOFF, BLEN = bwd.tensor_like(off), bwd.tensor_like(seq)
    for n in ("q", "k", "v", "o", "do"):
        t[n].set_ragged_offset(BOFF)
    grads = bwd.sdpa_backward(q=t["q"], k=t["k"], v=t["v"], o=t["o"], dO=t["do"], stats=t["st"],
                              attn_scale=0.4, use_causal_mask=True, use_padding_mask=True,
                              seq_len_q=BLEN, seq_len_kv=BLEN, max_total_seq_len_q=total,
                              max_total_seq_len_kv=total)
    for x in grads:
        x.set_output(True).set_stride(list(q.stride())).set_ragged_offset(BOFF)
    _build(bwd)
    dq, dk, dv = (torch.full_like(q, float("nan")) for _ in range(3))
    bwd.execute({t["q"]: q, t["k"]: k, t["v"]: v, t["o"]: o, t["do"]: do, t["st"]: st,
                 BOFF: off, BLEN: seq, grads[0]: dq, grads[1]: dk, grads[2]: dv}, None)

    def rows(x, b):   # sequence b of packed x as [H, L, D]
        start, n = int(off[b]) // (H * D), int(lengths[b])
        return x.permute(0, 2, 1, 3).reshape(B * S, H, D)[start:start + n].transpose(0, 1)
    for b in range(B):
        qb, kb, vb = (rows(x, b).clone().requires_grad_() for x in (q, k, v))
        want = F.scaled_dot_product_attention(qb, kb, vb, is_causal=True, scale=0.4)
        want.backward(rows(do, b))
        torch.testing.assert_close(rows(o, b), want, atol=1e-5, rtol=1e-5)
        for got, ref in ((dq, qb.grad), (dk, kb.grad), (dv, vb.grad)):
            torch.testing.assert_close(rows(got, b), ref, atol=1e-4, rtol=1e-4)


def _conv_int64(x, w, padding):
    """NumPy int64 cross-correlation of (N, C, H, W) by (K, C, R, S)."""
    import numpy as np

    x, w = x.astype(np.int64), w.astype(np.int64)
    (n, _, h, wd), (k, _, r, s) = x.shape, w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    p, q = h + 2 * padding - r + 1, wd + 2 * padding - s + 1
    y = np.zeros((n, k, p, q), np.int64)
    for i in range(r):
        for j in range(s):
            y += np.einsum("nchw,kc->nkhw", xp[:, :, i:i + p, j:j + q], w[:, :, i, j])
    return y


def test_conv_int8_as_cudnn_frontends_test_builds_it():
    """test_conv_bias.py::test_conv_int8's graph (io INT8, intermediate and
    compute INT32, identity to an INT32 output, channels-last tensors, the
    output buffer a larger int32 tensor used as storage), exact against
    NumPy's int64 sums."""
    torch.manual_seed(0)
    n, c, h, w, k = 2, 64, 12, 10, 4
    x = torch.randint(-127, 128, (n, c, h, w), dtype=torch.int8) \
        .to(memory_format=torch.channels_last)
    wt = torch.randint(-127, 128, (k, c, 3, 3), dtype=torch.int8) \
        .to(memory_format=torch.channels_last)

    @cudnn.jit(heur_modes=[cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    def create(xg, wg):
        with cudnn.graph(None, io_data_type=cudnn.data_type.INT8,
                         intermediate_data_type=cudnn.data_type.INT32,
                         compute_data_type=cudnn.data_type.INT32) as (g, _):
            g.target = "cpu"
            X, W = g.tensor_like(xg), g.tensor_like(wg)
            conv = g.conv_fprop(image=X, weight=W, padding=[1, 1], stride=[1, 1],
                                dilation=[1, 1])
            Y = g.identity(name="identity", input=conv)
            Y.set_output(True).set_data_type(cudnn.data_type.INT32)
            return g, [X, W, Y]

    g, (xu, wu, yu) = create(x, wt)
    y = torch.randint(0, 127, x.size(), dtype=torch.int32).to(memory_format=torch.channels_last)
    g.execute({xu: x, wu: wt, yu: y}, torch.empty(g.get_workspace_size(), dtype=torch.uint8))
    # Y is [n, k, h, w] channels-last at the start of y's storage.
    got = y.permute(0, 2, 3, 1).reshape(-1)[:n * h * w * k].reshape(n, h, w, k).permute(0, 3, 1, 2)
    want = _conv_int64(x.numpy(), wt.numpy(), 1)
    assert torch.equal(got, torch.from_numpy(want).to(torch.int32))


@pytest.mark.parametrize("a_type, b_type, mma_type", [
    (torch.int8, torch.bfloat16, torch.bfloat16), (torch.int8, torch.int8, torch.float32),
    (torch.float16, torch.int8, torch.float16), (torch.int8, torch.float16, torch.bfloat16),
])
def test_mixed_precision_matmul_with_int8_casts(a_type, b_type, mma_type):
    """test_matmul_bias_relu.py::test_mixed_precision_matmul's graph: int8
    operands cast (identity + set_data_type) to the MMA type, B column-major."""
    torch.manual_seed(5)
    bsz, m, n, k = 4, 8, 16, 32
    if a_type is torch.int8:
        a = torch.randint(4, (bsz, m, k), dtype=torch.int8) - 1
    else:
        a = 2 * torch.randn(bsz, m, k, dtype=a_type) - 0.5
    if b_type is torch.int8:
        stored = torch.randint(3, (bsz, k, n), dtype=torch.int8) - 2
    else:
        stored = 3 * torch.randn(bsz, k, n, dtype=b_type) - 1.25
    b = torch.as_strided(stored, (bsz, k, n), (n * k, 1, n))
    mma = {torch.bfloat16: cudnn.data_type.BFLOAT16, torch.float16: cudnn.data_type.HALF,
           torch.float32: cudnn.data_type.FLOAT}[mma_type]
    g = cudnn.pygraph(target="cpu")
    A, B = g.tensor_like(a), g.tensor_like(b)
    A_cast = g.identity(input=A, compute_data_type=cudnn.data_type.FLOAT)
    A_cast.set_data_type(mma)
    B_cast = g.identity(input=B, compute_data_type=cudnn.data_type.FLOAT)
    B_cast.set_data_type(mma)
    C = g.matmul(name="matmul", A=A_cast, B=B_cast, compute_data_type=cudnn.data_type.FLOAT)
    C.set_output(True).set_data_type(mma)
    _build(g)
    want = torch.matmul(a.to(mma_type).float(), b.to(mma_type).float()).to(mma_type)
    got = torch.zeros_like(want)
    g.execute({A: a, B: b, C: got}, None)
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_int8_matmul_fuzzer_form_casts_both_to_float():
    """test_matmul_fuzzer.py's int8 configurations: A and B int8 (B strided),
    both cast to FLOAT, then bias and relu, a FLOAT output."""
    torch.manual_seed(6)
    a = torch.randint(-3, 4, (3, 17, 40), dtype=torch.int8)
    b = torch.as_strided(torch.randint(-3, 4, (3 * 40 * 9,), dtype=torch.int8), (3, 40, 9),
                         (360, 1, 40))
    bias = torch.randint(-3, 4, (1, 17, 1)).float()
    g = cudnn.pygraph(compute_data_type=cudnn.data_type.FLOAT,
                      intermediate_data_type=cudnn.data_type.FLOAT, target="cpu")
    A, B, Bias = g.tensor_like(a), g.tensor_like(b), g.tensor_like(bias)
    Ac = g.identity(input=A, compute_data_type=cudnn.data_type.FLOAT)
    Ac.set_data_type(cudnn.data_type.FLOAT)
    Bc = g.identity(input=B, compute_data_type=cudnn.data_type.FLOAT)
    Bc.set_data_type(cudnn.data_type.FLOAT)
    C = g.relu(name="relu", input=g.bias(name="bias", input=g.matmul(name="matmul", A=Ac, B=Bc),
                                         bias=Bias))
    C.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    _build(g)
    got = torch.empty(3, 17, 9)
    g.execute({A: a, B: b, Bias: bias, C: got}, None)
    assert torch.equal(got, torch.relu(a.float() @ b.float() + bias))


@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm"])
def test_untyped_statistics_of_a_bf16_graph_take_its_io_type(kind):
    """A bf16 graph whose statistics outputs are given no type: they are
    bf16 outputs (the graph's io type), the f32 statistics cast on the way
    out, in the [rows, hidden, 1, 1] form as in any other."""
    torch.manual_seed(21)
    x = (3 * torch.randn(64, 256, 1, 1) + 0.5).to(torch.bfloat16)
    scale = torch.randn(1, 256, 1, 1).to(torch.bfloat16)
    bias = torch.randn(1, 256, 1, 1).to(torch.bfloat16)
    g = _graph(io_data_type=cudnn.data_type.BFLOAT16)
    X, S, B = (g.tensor_like(a) for a in (x, scale, bias))
    phase = cudnn.norm_forward_phase.TRAINING
    if kind == "layernorm":
        Y, mean, inv = g.layernorm(norm_forward_phase=phase, input=X, scale=S, bias=B,
                                   epsilon=1e-5)
        stats = [mean, inv]
    else:
        Y, inv = g.rmsnorm(norm_forward_phase=phase, input=X, scale=S, bias=None, epsilon=1e-5)
        stats = [inv]
    for t in [Y, *stats]:
        t.set_output(True)
    _build(g)
    y = torch.empty_like(x)
    got = [torch.full((64, 1, 1, 1), float("nan"), dtype=torch.bfloat16) for _ in stats]
    g.execute({X: x, S: scale, B: bias, Y: y, **dict(zip(stats, got))}, None)
    xf = x.double()
    if kind == "layernorm":
        want = [xf.mean((1, 2, 3), keepdim=True),
                torch.rsqrt(xf.var((1, 2, 3), unbiased=False, keepdim=True) + 1e-5)]
    else:
        want = [torch.rsqrt((xf * xf).mean((1, 2, 3), keepdim=True) + 1e-5)]
    for a, b in zip(got, want):
        torch.testing.assert_close(a.double(), b, atol=1e-3, rtol=8e-3)
