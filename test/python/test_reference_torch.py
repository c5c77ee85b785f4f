"""The NumPy reference (dnnc.reference) against PyTorch on the CPU, in float64.

Gradients come from torch.autograd; every op that PyTorch has is compared.
The whole module is skipped, visibly, where PyTorch is not installed; the
closed-form tests of test_reference.py still run.
"""

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch not installed: reference-vs-PyTorch comparisons skipped")
import torch.nn.functional as F  # noqa: E402

import dnnc.dialect as D  # noqa: E402
from refutil import rng, run  # noqa: E402

pytestmark = pytest.mark.torch

TIGHT = dict(rtol=1e-12, atol=1e-12)
COVERED = set()  # ops compared with PyTorch here, filled by @covers


def covers(*names):
    COVERED.update(names)
    return lambda fn: fn








def T(a, grad=False):
    """A float64 (or bool) torch tensor holding a copy of a."""
    a = np.array(a)
    t = torch.tensor(a, dtype=torch.bool if a.dtype == np.bool_ else torch.float64)
    return t.requires_grad_(grad)


def N(t):
    return t.detach().numpy()


def grads(output, inputs, upstream):
    """d<output, upstream>/d inputs (None for an input output does not depend on)."""
    return [None if g is None else N(g) for g in
            torch.autograd.grad(output, inputs, T(upstream), allow_unused=True)]


def noncontiguous(a):
    return np.ascontiguousarray(np.swapaxes(a, 0, -1)).swapaxes(0, -1)


# ----------------------------------------------------------------------------
# Pointwise
# ----------------------------------------------------------------------------

# name -> (attrs, torch function, domain)
UNARY = {
    "relu": ({}, F.relu, "any"),
    "gelu": ({}, F.gelu, "any"),
    "silu": ({}, F.silu, "any"),
    "swish": ({"beta": 1.7}, lambda x: x * torch.sigmoid(1.7 * x), "any"),
    "sigmoid": ({}, torch.sigmoid, "any"),
    "tanh": ({}, torch.tanh, "any"),
    "elu": ({"alpha": 0.7}, lambda x: F.elu(x, alpha=0.7), "any"),
    "leaky_relu": ({"negative_slope": 0.2}, lambda x: F.leaky_relu(x, 0.2), "any"),
    "softplus": ({"beta": 2.0, "threshold": 3.0},
                 lambda x: F.softplus(x, beta=2.0, threshold=3.0), "any"),
    "exp": ({}, torch.exp, "any"),
    "log": ({}, torch.log, "positive"),
    "sqrt": ({}, torch.sqrt, "positive"),
    "rsqrt": ({}, torch.rsqrt, "positive"),
    "abs": ({}, torch.abs, "any"),
    "neg": ({}, torch.neg, "any"),
    "square": ({}, torch.square, "any"),
    "reciprocal": ({}, torch.reciprocal, "nonzero"),
    "sin": ({}, torch.sin, "any"),
    "cos": ({}, torch.cos, "any"),
    "erf": ({}, torch.special.erf, "any"),
    "floor": ({}, torch.floor, "any"),
    "ceil": ({}, torch.ceil, "any"),
}


def _unary_input(domain):
    x = np.concatenate([rng().uniform(-5, 5, 36), [-30.0, -1.5, -0.0, 0.0, 1.5, 30.0]])
    x = x.reshape(3, 2, 7).swapaxes(0, 2)  # (7, 2, 3), non-contiguous
    if domain == "positive":
        return np.abs(x) + 0.05
    if domain == "nonzero":
        return np.where(x == 0, 0.25, x)
    return x


@covers(*UNARY)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    attrs, fn, domain = UNARY[name]
    x = _unary_input(domain)
    np.testing.assert_allclose(run(name, {"x": x}, **attrs)["y"], N(fn(T(x))), **TIGHT)


@covers(*UNARY)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_special_values(name):
    """Infinities, NaN, signed zeros and huge values give what PyTorch gives."""
    attrs, fn, _ = UNARY[name]
    x = np.array([-np.inf, np.inf, np.nan, -0.0, 0.0, 1e308, -1e308, -1.0])
    y, expected = run(name, {"x": x}, **attrs)["y"], N(fn(T(x)))
    np.testing.assert_array_equal(np.isnan(y), np.isnan(expected))
    np.testing.assert_allclose(y, expected, **TIGHT)


@covers("gelu")
def test_gelu_tanh():
    x = _unary_input("any")
    np.testing.assert_allclose(run("gelu", {"x": x}, approximate="tanh")["y"],
                               N(F.gelu(T(x), approximate="tanh")), **TIGHT)


BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "max": torch.maximum, "min": torch.minimum, "pow": torch.pow,
}


@covers(*BINARY)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name):
    g = rng()
    a = g.uniform(0.1, 3, (5, 1, 3)).swapaxes(0, 2)
    b = g.uniform(-2, 2, (7, 5))
    a[0, 0, 1] = np.nan  # max and min propagate NaN, as torch.maximum does
    np.testing.assert_allclose(run(name, {"a": a, "b": b})["y"], N(BINARY[name](T(a), T(b))),
                               **TIGHT)


COMPARE = {
    "cmp_eq": torch.eq, "cmp_ne": torch.ne, "cmp_lt": torch.lt,
    "cmp_le": torch.le, "cmp_gt": torch.gt, "cmp_ge": torch.ge,
}


@covers(*COMPARE)
@pytest.mark.parametrize("name", sorted(COMPARE))
def test_compare(name):
    g = rng()
    a = g.integers(0, 3, (3, 1, 5)).astype(np.float64)
    b = g.integers(0, 3, (4, 5)).astype(np.float64)
    y = run(name, {"a": a, "b": b})["y"]
    assert y.dtype == np.bool_
    np.testing.assert_array_equal(y, N(COMPARE[name](T(a), T(b))))


@covers("logical_and", "logical_or", "logical_not", "select")
def test_logic_and_select():
    g = rng()
    a, b = g.random((3, 1, 5)) > 0.5, g.random((4, 5)) > 0.5
    np.testing.assert_array_equal(run("logical_and", {"a": a, "b": b})["y"],
                                  N(torch.logical_and(T(a), T(b))))
    np.testing.assert_array_equal(run("logical_or", {"a": a, "b": b})["y"],
                                  N(torch.logical_or(T(a), T(b))))
    np.testing.assert_array_equal(run("logical_not", {"x": a})["y"], N(torch.logical_not(T(a))))
    x, y = g.normal(size=(4, 1)), g.normal(size=(5,))
    np.testing.assert_array_equal(run("select", {"cond": a, "a": x, "b": y})["y"],
                                  N(torch.where(T(a), T(x), T(y))))


ACTIVATION_BACKWARD = {
    "relu_backward": ({}, F.relu),
    "gelu_backward": ({}, F.gelu),
    "silu_backward": ({}, F.silu),
    "sigmoid_backward": ({}, torch.sigmoid),
    "tanh_backward": ({}, torch.tanh),
    "swish_backward": ({"beta": 1.7}, lambda t: t * torch.sigmoid(1.7 * t)),
    "elu_backward": ({"alpha": 0.6}, lambda t: F.elu(t, alpha=0.6)),
    "leaky_relu_backward": ({"negative_slope": 0.2}, lambda t: F.leaky_relu(t, 0.2)),
    "softplus_backward": ({"beta": 2.0, "threshold": 3.0},
                          lambda t: F.softplus(t, beta=2.0, threshold=3.0)),
}


@covers(*ACTIVATION_BACKWARD)
@pytest.mark.parametrize("name,approximate", [(n, None) for n in sorted(ACTIVATION_BACKWARD)]
                         + [("gelu_backward", "tanh")])
def test_activation_backward(name, approximate):
    attrs, fn = ACTIVATION_BACKWARD[name]
    if approximate:
        attrs, fn = {"approximate": "tanh"}, (lambda t: F.gelu(t, approximate="tanh"))
    g = rng()
    x = _unary_input("any")
    dy = g.normal(size=x.shape)
    xt = T(x, grad=True)
    (expected,) = grads(fn(xt), [xt], dy)
    np.testing.assert_allclose(run(name, {"dy": dy, "x": x}, **attrs)["dx"], expected, **TIGHT)


@covers("reshape", "transpose", "slice", "concat")
def test_tensor_ops():
    x = noncontiguous(rng().normal(size=(3, 5, 7)))
    xt = T(x)
    np.testing.assert_array_equal(run("reshape", {"x": x}, declared={"y": (7, 15)})["y"],
                                  N(xt.reshape(7, 15)))
    np.testing.assert_array_equal(run("transpose", {"x": x}, permutation=(1, 2, 0))["y"],
                                  N(xt.permute(1, 2, 0)))
    np.testing.assert_array_equal(
        run("slice", {"x": x}, start=(0, 1, 2), limit=(3, 5, 6), step=(2, 3, 1))["y"],
        N(xt[0:3:2, 1:5:3, 2:6]))
    a, b = x[..., :2], x[..., 2:]
    np.testing.assert_array_equal(run("concat", {"a": a, "b": b}, axis=2)["y"],
                                  N(torch.cat([T(a), T(b)], dim=2)))


# ----------------------------------------------------------------------------
# Matmul and convolution
# ----------------------------------------------------------------------------

@covers("matmul")
def test_matmul_broadcast_batch():
    g = rng()
    a, b = g.normal(size=(3, 1, 5, 7)), noncontiguous(g.normal(size=(2, 7, 3)))
    np.testing.assert_allclose(run("matmul", {"a": a, "b": b})["c"], N(torch.matmul(T(a), T(b))),
                               **TIGHT)


def conv_attrs(nd, pre=0, post=0, stride=1, dilation=1, mode="cross_correlation"):
    def per_dim(v):
        return tuple(v) if isinstance(v, tuple) else (v,) * nd
    return dict(pre_padding=per_dim(pre), post_padding=per_dim(post), stride=per_dim(stride),
                dilation=per_dim(dilation), mode=mode)


def torch_conv(x, w, a):
    """PyTorch's convolution with dnnc's attributes (asymmetric padding via F.pad)."""
    nd = x.dim() - 2
    widths = []
    for p, q in reversed(list(zip(a["pre_padding"], a["post_padding"]))):
        widths += [p, q]  # F.pad lists the last dim first
    if a["mode"] == "convolution":
        w = torch.flip(w, dims=tuple(range(2, w.dim())))
    conv = F.conv2d if nd == 2 else F.conv3d
    return conv(F.pad(x, widths), w, stride=a["stride"], dilation=a["dilation"],
                groups=x.shape[1] // w.shape[1])


CONV_CASES = {
    "2d": ((2, 3, 7, 5), (4, 3, 3, 2), conv_attrs(2, pre=1, post=1)),
    "2d_asym_stride_dilation": ((2, 4, 9, 7), (6, 4, 3, 2),
                                conv_attrs(2, pre=(2, 0), post=(0, 3), stride=(2, 3),
                                           dilation=(2, 1))),
    "2d_groups_unreached": ((1, 6, 8, 7), (9, 2, 3, 3), conv_attrs(2, stride=2)),
    "2d_depthwise_convolution": ((2, 5, 6, 7), (5, 1, 3, 2),
                                 conv_attrs(2, pre=(1, 0), post=(1, 1), mode="convolution")),
    "3d_groups": ((2, 4, 5, 6, 3), (6, 2, 3, 2, 2),
                  conv_attrs(3, pre=(1, 0, 1), post=(0, 1, 1), stride=(1, 2, 1),
                             dilation=(1, 1, 2))),
}


@covers("conv_fprop", "conv_dgrad", "conv_wgrad")
@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv_fprop_dgrad_wgrad(case):
    xs, ws, a = CONV_CASES[case]
    g = rng()
    x, w = noncontiguous(g.normal(size=xs)), g.normal(size=ws)
    xt, wt = T(x, grad=True), T(w, grad=True)
    yt = torch_conv(xt, wt, a)
    y = run("conv_fprop", {"x": x, "w": w}, **a)["y"]
    np.testing.assert_allclose(y, N(yt), **TIGHT)
    dy = g.normal(size=y.shape)
    dx_t, dw_t = grads(yt, [xt, wt], dy)
    dx = run("conv_dgrad", {"dy": dy, "w": w}, declared={"dx": xs}, **a)["dx"]
    dw = run("conv_wgrad", {"dy": dy, "x": x}, declared={"dw": ws}, **a)["dw"]
    np.testing.assert_allclose(dx, dx_t, **TIGHT)
    np.testing.assert_allclose(dw, dw_t, **TIGHT)


@covers("conv_dgrad", "conv_wgrad")
def test_conv_grads_match_torch_nn_grad():
    g = rng()
    x, w = g.normal(size=(2, 3, 7, 6)), g.normal(size=(5, 3, 2, 3))
    a = conv_attrs(2, pre=1, post=1, stride=(2, 1), dilation=(1, 2))
    dy = g.normal(size=run("conv_fprop", {"x": x, "w": w}, **a)["y"].shape)
    kw = dict(stride=a["stride"], padding=1, dilation=a["dilation"])
    expected_dx = torch.nn.grad.conv2d_input(x.shape, T(w), T(dy), **kw)
    expected_dw = torch.nn.grad.conv2d_weight(T(x), w.shape, T(dy), **kw)
    np.testing.assert_allclose(run("conv_dgrad", {"dy": dy, "w": w}, declared={"dx": x.shape},
                                   **a)["dx"], N(expected_dx), **TIGHT)
    np.testing.assert_allclose(run("conv_wgrad", {"dy": dy, "x": x}, declared={"dw": w.shape},
                                   **a)["dw"], N(expected_dw), **TIGHT)


# ----------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------

def torch_sdpa(q, k, v, bias, scale, causal):
    """PyTorch sdpa with GQA by repeating kv heads; causal with a bias becomes
    one float mask (PyTorch takes either attn_mask or is_causal)."""
    rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    mask = bias
    if causal and bias is not None:
        sq, skv = q.shape[2], k.shape[2]
        above = torch.ones(sq, skv, dtype=torch.bool).triu(1)
        mask = bias.masked_fill(above, float("-inf"))
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale,
                                       is_causal=causal and bias is None)
    scores = scale * q @ k.transpose(-1, -2)
    if mask is not None:
        scores = scores + mask
    elif causal:
        scores = scores.masked_fill(torch.ones_like(scores, dtype=torch.bool).triu(1),
                                    float("-inf"))
    return o, torch.logsumexp(scores, dim=-1, keepdim=True)


SDPA_CASES = {
    "plain": dict(heads=(3, 3), bias=None, causal=False),
    "causal": dict(heads=(3, 3), bias=None, causal=True),
    "bias_broadcast": dict(heads=(4, 4), bias=(1, 4, 5, 1), causal=False),
    "gqa_causal_bias": dict(heads=(6, 2), bias=(2, 1, 5, 7), causal=True),
    "gqa_mqa": dict(heads=(4, 1), bias=None, causal=False),
}


@covers("sdpa", "sdpa_backward")
@pytest.mark.parametrize("case", sorted(SDPA_CASES))
def test_sdpa_forward_and_backward(case):
    c = SDPA_CASES[case]
    (h, hk), g = c["heads"], rng()
    q = noncontiguous(g.normal(size=(2, h, 5, 3)))
    k, v = g.normal(size=(2, hk, 7, 3)), g.normal(size=(2, hk, 7, 4))
    bias = None if c["bias"] is None else g.normal(size=c["bias"])
    attrs = dict(scale=0.45, causal=c["causal"])
    out = run("sdpa", {"q": q, "k": k, "v": v, "bias": bias}, generate_stats=True, **attrs)
    qt, kt, vt = T(q, grad=True), T(k, grad=True), T(v, grad=True)
    ot, lse = torch_sdpa(qt, kt, vt, None if bias is None else T(bias), 0.45, c["causal"])
    np.testing.assert_allclose(out["o"], N(ot), **TIGHT)
    np.testing.assert_allclose(out["stats"], N(lse), **TIGHT)
    do = g.normal(size=out["o"].shape)
    dq, dk, dv = grads(ot, [qt, kt, vt], do)
    back = run("sdpa_backward", {"q": q, "k": k, "v": v, "o": out["o"], "do": do,
                                 "stats": out["stats"], "bias": bias}, **attrs)
    np.testing.assert_allclose(back["dq"], dq, **TIGHT)
    np.testing.assert_allclose(back["dk"], dk, **TIGHT)
    np.testing.assert_allclose(back["dv"], dv, **TIGHT)


# Bias shapes whose gradient the backward returns (compute_dbias): whole,
# broadcast over B (cuDNN's [1, H, Sq, Skv]), over H, over both, and over
# rows or columns; with and without GQA and a causal mask.
DBIAS_CASES = {
    "whole": dict(heads=(4, 4), bias=(2, 4, 5, 7), causal=False),
    "over_batch_causal": dict(heads=(4, 4), bias=(1, 4, 5, 7), causal=True),
    "over_heads_gqa": dict(heads=(6, 2), bias=(2, 1, 5, 7), causal=False),
    "over_both_gqa_causal": dict(heads=(6, 3), bias=(1, 1, 5, 7), causal=True),
    "over_rows": dict(heads=(2, 1), bias=(2, 2, 1, 7), causal=True),
    "over_columns": dict(heads=(3, 3), bias=(1, 3, 5, 1), causal=False),
}


@covers("sdpa_backward")
@pytest.mark.parametrize("case", sorted(DBIAS_CASES))
def test_sdpa_dbias_matches_torch_attn_mask_grad(case):
    """dbias is the gradient PyTorch's autograd gives an additive attn_mask
    that requires grad: the scores' gradient after the scale, 0 where
    causally masked, summed over the bias's broadcast dims."""
    c = DBIAS_CASES[case]
    (h, hk), g = c["heads"], rng()
    q = g.normal(size=(2, h, 5, 3))
    k, v = g.normal(size=(2, hk, 7, 3)), g.normal(size=(2, hk, 7, 4))
    bias = g.normal(size=c["bias"])
    attrs = dict(scale=0.7, causal=c["causal"])
    out = run("sdpa", {"q": q, "k": k, "v": v, "bias": bias}, generate_stats=True, **attrs)
    bt = T(bias, grad=True)
    ot, _ = torch_sdpa(T(q), T(k), T(v), bt, 0.7, c["causal"])
    do = g.normal(size=out["o"].shape)
    dbias, = grads(ot, [bt], do)
    back = run("sdpa_backward", {"q": q, "k": k, "v": v, "o": out["o"], "do": do,
                                 "stats": out["stats"], "bias": bias},
               compute_dbias=True, **attrs)
    assert back["dbias"].shape == bias.shape
    np.testing.assert_allclose(back["dbias"], dbias, **TIGHT)
    if c["causal"]:
        # Masked scores get no gradient: with a bias of its own per (row,
        # column), dbias is 0 right of the diagonal.
        above = np.triu(np.ones((5, 7), bool), 1)
        if c["bias"][2:] == (5, 7):
            assert not np.any(back["dbias"][..., above])


# ----------------------------------------------------------------------------
# Normalization
# ----------------------------------------------------------------------------

def _channel_param(g, c, rank):
    return g.normal(size=(1, c) + (1,) * (rank - 2))


@covers("layernorm", "layernorm_backward")
@pytest.mark.parametrize("affine", [True, False])
def test_layernorm(affine):
    g = rng()
    x = noncontiguous(g.normal(1.0, 2.0, size=(3, 5, 2, 3)))
    pshape = (1, 1, 2, 3)
    scale, bias = (g.normal(size=pshape), g.normal(size=pshape)) if affine else (None, None)
    out = run("layernorm", {"x": x, "scale": scale, "bias": bias}, axis=2, epsilon=1e-3,
              training=True)
    xt = T(x, grad=True)
    params = [T(p.reshape(2, 3), grad=True) for p in (scale, bias)] if affine else [None, None]
    yt = F.layer_norm(xt, (2, 3), *params, eps=1e-3)
    np.testing.assert_allclose(out["y"], N(yt), **TIGHT)
    var, mean = torch.var_mean(T(x), dim=(2, 3), keepdim=True, unbiased=False)
    np.testing.assert_allclose(out["mean"], N(mean), **TIGHT)
    np.testing.assert_allclose(out["inv_variance"], N(torch.rsqrt(var + 1e-3)), **TIGHT)
    dy = g.normal(size=x.shape)
    expected = grads(yt, [xt] + [p for p in params if p is not None], dy)
    back = run("layernorm_backward", {"dy": dy, "x": x, "scale": scale, "mean": out["mean"],
                                      "inv_variance": out["inv_variance"]},
               axis=2, has_bias=affine)
    np.testing.assert_allclose(back["dx"], expected[0], **TIGHT)
    if affine:
        np.testing.assert_allclose(back["dscale"], expected[1].reshape(pshape), **TIGHT)
        np.testing.assert_allclose(back["dbias"], expected[2].reshape(pshape), **TIGHT)


@covers("rmsnorm", "rmsnorm_backward")
def test_rmsnorm():
    g = rng()
    x = g.normal(size=(3, 5, 7))
    scale, bias = g.normal(size=(1, 1, 7)), g.normal(size=(1, 1, 7))
    out = run("rmsnorm", {"x": x, "scale": scale, "bias": bias}, axis=2, epsilon=1e-2,
              training=True)
    xt, st, bt = T(x, grad=True), T(scale[0, 0], grad=True), T(bias[0, 0], grad=True)
    yt = F.rms_norm(xt, (7,), st, eps=1e-2) + bt
    np.testing.assert_allclose(out["y"], N(yt), **TIGHT)
    dy = g.normal(size=x.shape)
    dx, dscale, dbias = grads(yt, [xt, st, bt], dy)
    back = run("rmsnorm_backward", {"dy": dy, "x": x, "scale": scale, "inv_rms": out["inv_rms"]},
               axis=2, has_bias=True)
    np.testing.assert_allclose(back["dx"], dx, **TIGHT)
    np.testing.assert_allclose(back["dscale"][0, 0], dscale, **TIGHT)
    np.testing.assert_allclose(back["dbias"][0, 0], dbias, **TIGHT)


@covers("batchnorm", "batchnorm_backward", "batchnorm_inference")
@pytest.mark.parametrize("shape", [(4, 3), (3, 5, 2, 3), (2, 3, 2, 3, 2)])
def test_batchnorm(shape):
    g = rng()
    x = noncontiguous(g.normal(0.5, 2.0, size=shape))
    c, rank = shape[1], len(shape)
    scale, bias = _channel_param(g, c, rank), _channel_param(g, c, rank)
    rm, rv = _channel_param(g, c, rank), np.abs(_channel_param(g, c, rank)) + 0.5
    out = run("batchnorm", {"x": x, "scale": scale, "bias": bias, "running_mean": rm,
                            "running_var": rv}, epsilon=1e-3, momentum=0.3)
    xt, st, bt = T(x, grad=True), T(scale.ravel(), grad=True), T(bias.ravel(), grad=True)
    rmt, rvt = T(rm.ravel()), T(rv.ravel())
    yt = F.batch_norm(xt, rmt, rvt, st, bt, training=True, momentum=0.3, eps=1e-3)
    np.testing.assert_allclose(out["y"], N(yt), **TIGHT)
    np.testing.assert_allclose(out["next_running_mean"].ravel(), N(rmt), **TIGHT)
    np.testing.assert_allclose(out["next_running_var"].ravel(), N(rvt), **TIGHT)
    dy = g.normal(size=shape)
    dx, dscale, dbias = grads(yt, [xt, st, bt], dy)
    back = run("batchnorm_backward", {"dy": dy, "x": x, "scale": scale, "mean": out["mean"],
                                      "inv_variance": out["inv_variance"]})
    np.testing.assert_allclose(back["dx"], dx, **TIGHT)
    np.testing.assert_allclose(back["dscale"].ravel(), dscale, **TIGHT)
    np.testing.assert_allclose(back["dbias"].ravel(), dbias, **TIGHT)
    # Inference with the running statistics.
    y = run("batchnorm_inference", {"x": x, "scale": scale, "bias": bias, "mean": rm,
                                    "variance": rv}, epsilon=1e-3)["y"]
    expected = F.batch_norm(T(x), T(rm.ravel()), T(rv.ravel()), T(scale.ravel()),
                            T(bias.ravel()), training=False, eps=1e-3)
    np.testing.assert_allclose(y, N(expected), **TIGHT)


def _group_like(name, x, groups, scale, bias, eps):
    if name == "groupnorm":
        return F.group_norm(x, groups, scale, bias, eps=eps)
    return F.instance_norm(x, weight=scale, bias=bias, eps=eps)


@covers("groupnorm", "groupnorm_backward", "instancenorm", "instancenorm_backward")
@pytest.mark.parametrize("name,shape,groups", [
    ("groupnorm", (2, 6, 5, 3), 3), ("groupnorm", (3, 4, 5), 2),
    ("groupnorm", (2, 6, 3, 2, 2), 2), ("instancenorm", (2, 3, 5, 3), None),
    ("instancenorm", (2, 3, 2, 3, 2), None)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_and_instance_norm(name, shape, groups, affine):
    g = rng()
    x = noncontiguous(g.normal(size=shape))
    c, rank = shape[1], len(shape)
    gattr = {"groups": groups} if groups else {}
    scale, bias = ((_channel_param(g, c, rank), _channel_param(g, c, rank)) if affine
                   else (None, None))
    out = run(name, {"x": x, "scale": scale, "bias": bias}, epsilon=1e-3, training=True, **gattr)
    xt = T(x, grad=True)
    params = [T(p.ravel(), grad=True) for p in (scale, bias)] if affine else [None, None]
    yt = _group_like(name, xt, groups, *params, 1e-3)
    np.testing.assert_allclose(out["y"], N(yt), **TIGHT)
    dy = g.normal(size=shape)
    expected = grads(yt, [xt] + [p for p in params if p is not None], dy)
    back = run(name + "_backward", {"dy": dy, "x": x, "scale": scale, "mean": out["mean"],
                                    "inv_variance": out["inv_variance"]},
               has_bias=affine, **gattr)
    np.testing.assert_allclose(back["dx"], expected[0], **TIGHT)
    if affine:
        np.testing.assert_allclose(back["dscale"].ravel(), expected[1], **TIGHT)
        np.testing.assert_allclose(back["dbias"].ravel(), expected[2], **TIGHT)


# ----------------------------------------------------------------------------
# Softmax, reductions, pooling
# ----------------------------------------------------------------------------

@covers("softmax", "log_softmax", "softmax_backward", "log_softmax_backward")
@pytest.mark.parametrize("name,torch_fn", [("softmax", F.softmax),
                                           ("log_softmax", F.log_softmax)])
@pytest.mark.parametrize("axis", [0, 2])
def test_softmax(name, torch_fn, axis):
    g = rng()
    x = noncontiguous(g.normal(size=(3, 5, 7))) * 4
    y = run(name, {"x": x}, axis=axis)["y"]
    xt = T(x, grad=True)
    yt = torch_fn(xt, dim=axis)
    np.testing.assert_allclose(y, N(yt), **TIGHT)
    dy = g.normal(size=x.shape)
    (dx,) = grads(yt, [xt], dy)
    np.testing.assert_allclose(run(name + "_backward", {"dy": dy, "y": y}, axis=axis)["dx"], dx,
                               **TIGHT)


def _torch_prod(x, dim, keepdim):
    for d in sorted(dim, reverse=True):
        x = torch.prod(x, dim=d, keepdim=keepdim)
    return x


TORCH_REDUCE = {
    "sum": lambda x, dim, keepdim: torch.sum(x, dim=dim, keepdim=keepdim),
    "mean": lambda x, dim, keepdim: torch.mean(x, dim=dim, keepdim=keepdim),
    "max": lambda x, dim, keepdim: torch.amax(x, dim=dim, keepdim=keepdim),
    "min": lambda x, dim, keepdim: torch.amin(x, dim=dim, keepdim=keepdim),
    "prod": _torch_prod,
    "amax": lambda x, dim, keepdim: torch.amax(x.abs(), dim=dim, keepdim=keepdim),
    "norm1": lambda x, dim, keepdim: torch.linalg.vector_norm(x, 1, dim=dim, keepdim=keepdim),
    "norm2": lambda x, dim, keepdim: torch.linalg.vector_norm(x, 2, dim=dim, keepdim=keepdim),
}


@covers("reduction")
@pytest.mark.parametrize("mode", sorted(TORCH_REDUCE))
@pytest.mark.parametrize("axes,keepdims", [((1,), True), ((0, 2), False), ((0, 1, 2), True)])
def test_reduction(mode, axes, keepdims):
    x = noncontiguous(rng().normal(size=(3, 5, 7)))
    y = run("reduction", {"x": x}, mode=mode, axes=axes, keepdims=keepdims)["y"]
    np.testing.assert_allclose(y, N(TORCH_REDUCE[mode](T(x), axes, keepdims)), **TIGHT)


def pool_attrs(nd, mode, window, stride, pad, count_include_pad=False):
    return dict(mode=mode, window=(window,) * nd, stride=(stride,) * nd, pre_padding=(pad,) * nd,
                post_padding=(pad,) * nd, count_include_pad=count_include_pad)


def torch_pool(x, a):
    nd = x.dim() - 2
    kw = dict(kernel_size=a["window"], stride=a["stride"], padding=a["pre_padding"])
    if a["mode"] == "max":
        return (F.max_pool2d if nd == 2 else F.max_pool3d)(x, **kw)
    return (F.avg_pool2d if nd == 2 else F.avg_pool3d)(
        x, count_include_pad=a["count_include_pad"], **kw)


@covers("pooling", "pooling_backward")
@pytest.mark.parametrize("shape", [(2, 3, 7, 6), (1, 2, 5, 6, 7)])
@pytest.mark.parametrize("mode,window,stride,pad,include", [
    ("max", 3, 2, 1, False), ("max", 2, 1, 0, False), ("avg", 3, 2, 1, False),
    ("avg", 3, 2, 1, True), ("avg", 2, 3, 1, False)])
def test_pooling(shape, mode, window, stride, pad, include):
    g = rng()
    x = noncontiguous(g.permutation(np.prod(shape)).reshape(shape) * 0.1)  # distinct values
    a = pool_attrs(len(shape) - 2, mode, window, stride, pad, include)
    xt = T(x, grad=True)
    yt = torch_pool(xt, a)
    y = run("pooling", {"x": x}, **a)["y"]
    np.testing.assert_allclose(y, N(yt), **TIGHT)
    dy = g.normal(size=y.shape)
    (dx,) = grads(yt, [xt], dy)
    np.testing.assert_allclose(run("pooling_backward", {"dy": dy, "x": x}, **a)["dx"], dx,
                               **TIGHT)


# ----------------------------------------------------------------------------

def test_covered_names_are_ops():
    names = {d.name for d in D.all_ops()}
    assert COVERED <= names, sorted(COVERED - names)
    assert len(COVERED) >= 60  # every op that PyTorch has
