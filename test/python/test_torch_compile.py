"""``torch.compile(model, backend="dnnc")`` on CPU tensors, against eager PyTorch.

Each ATen op the backend maps (dnnc/torch/aten_map.py) is compiled through
the backend and run on dnnc's CPU back end; the test checks that the op went
to dnnc (the backend's report) and that the result, and for ops with a
backward its gradients, match eager PyTorch. Then whole models: an MLP, a
small conv net with batchnorm and pooling, a transformer block (LayerNorm,
causal SDPA, MLP with GELU), forward and a training step; explain's report;
an op dnnc does not take running in torch with the result still right.

The rest of each graph runs eagerly here (option fallback="eager"); one test
runs it through Inductor. Skipped, visibly, where PyTorch is not installed.
"""

import copy
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch not installed: the torch.compile backend is not tested")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import dnnc.torch  # noqa: E402

pytestmark = pytest.mark.torch

F32 = dict(rtol=1e-4, atol=1e-4)


def _clone(t, grad):
    if not isinstance(t, torch.Tensor):
        return t
    c = t.detach().clone()
    return c.requires_grad_(grad and c.is_floating_point())


def check(fn, *inputs, ops, grad=False, tol=F32, fallback="eager"):
    """Compile ``fn`` with the dnnc backend; check that each of ``ops``
    (``aten.x`` names) ran in dnnc and that its outputs (and with ``grad``
    the inputs' gradients) match eager ``fn``'s. Returns the report."""
    torch._dynamo.reset()
    report = []
    compiled = torch.compile(fn, backend="dnnc", dynamic=False, fullgraph=True,
                             options={"fallback": fallback, "report": report})
    ours = [_clone(t, grad) for t in inputs]
    theirs = [_clone(t, grad) for t in inputs]
    got, want = compiled(*ours), fn(*theirs)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, f"output {i}"
        torch.testing.assert_close(g, w, **tol, msg=lambda m: f"output {i}: {m}")
    if grad:
        gen = torch.Generator().manual_seed(1)
        weights = [torch.randn(w.shape, generator=gen, dtype=torch.float32).to(w.dtype)
                   for w in want]
        sum((g * u).float().sum() for g, u in zip(got, weights)).backward()
        sum((w * u).float().sum() for w, u in zip(want, weights)).backward()
        for i, (a, b) in enumerate(zip(ours, theirs)):
            if isinstance(a, torch.Tensor) and a.requires_grad:
                torch.testing.assert_close(a.grad, b.grad, **tol,
                                           msg=lambda m: f"grad of input {i}: {m}")
    taken = {op for g in report for r in g.regions for _, op in r.ops}
    left = {f"{op}: {why}" for g in report for _, op, why in g.fallbacks}
    for op in ops:
        assert op in taken, f"{op} did not go to dnnc; left to torch: {sorted(left)}"
    return report


def randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


X = randn(2, 3, 8)
Y = randn(2, 3, 8, seed=1)
POS = randn(2, 3, 8).abs() + 0.5

# -- pointwise --------------------------------------------------------------------

BINARY = [
    ("add", lambda x, y: torch.add(x, y, alpha=2.0), "aten.add"),
    ("add_scalar", lambda x, y: x + 1.5 + y, "aten.add"),
    ("sub", lambda x, y: torch.sub(x, y, alpha=0.5), "aten.sub"),
    ("rsub", lambda x, y: 1.0 - x * y, "aten.rsub"),
    ("mul", lambda x, y: x * y * 3.0, "aten.mul"),
    ("div", lambda x, y: x / (y.abs() + 1) / 2.0, "aten.div"),
    ("maximum", torch.maximum, "aten.maximum"),
    ("minimum", torch.minimum, "aten.minimum"),
    ("pow_tensor", lambda x, y: torch.pow(x.abs() + 1, y), "aten.pow"),
    ("where", lambda x, y: torch.where(x > y, x, y * 2), "aten.where"),
    ("compare", lambda x, y: ((x >= y) | (x < -1)) & ~(y == 0), "aten.ge"),
]


@pytest.mark.parametrize("name,fn,op", BINARY, ids=[b[0] for b in BINARY])
def test_binary(name, fn, op):
    check(fn, X, Y, ops=[op], grad=name not in ("compare", "where", "maximum", "minimum"))


UNARY = [
    ("relu", F.relu, "aten.relu", X),
    ("gelu", F.gelu, "aten.gelu", X),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), "aten.gelu", X),
    ("silu", F.silu, "aten.silu", X),
    ("sigmoid", torch.sigmoid, "aten.sigmoid", X),
    ("tanh", torch.tanh, "aten.tanh", X),
    ("exp", torch.exp, "aten.exp", X),
    ("log", torch.log, "aten.log", POS),
    ("sqrt", torch.sqrt, "aten.sqrt", POS),
    ("rsqrt", torch.rsqrt, "aten.rsqrt", POS),
    ("abs", lambda x: torch.abs(x) * 2, "aten.abs", X),
    ("neg", lambda x: -x * 2, "aten.neg", X),
    ("reciprocal", torch.reciprocal, "aten.reciprocal", POS),
    ("sin", torch.sin, "aten.sin", X),
    ("cos", torch.cos, "aten.cos", X),
    ("erf", torch.erf, "aten.erf", X),
    ("floor", lambda x: torch.floor(x * 3), "aten.floor", X),
    ("ceil", lambda x: torch.ceil(x * 3), "aten.ceil", X),
    ("square", lambda x: x ** 2 + x ** 3, "aten.pow", X),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), "aten.leaky_relu", X),
    ("softplus", lambda x: F.softplus(x, beta=2.0, threshold=1.0), "aten.softplus", X),
    ("elu", lambda x: F.elu(x, alpha=0.7), "aten.elu", X),
    ("clamp", lambda x: torch.clamp(x, -0.5, 0.7) + x.clamp(min=0.1), "aten.clamp", X),
    ("hardtanh", lambda x: F.hardtanh(x, -0.3, 0.4) * 2, "aten.hardtanh", X),
]


@pytest.mark.parametrize("name,fn,op,x", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, fn, op, x):
    check(fn, x, ops=[op], grad=name not in ("floor", "ceil"))


# The activations' backward ops, each read from the backward graph.
BACKWARD = [
    ("relu", F.relu, "aten.threshold_backward"),
    ("gelu", F.gelu, "aten.gelu_backward"),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), "aten.gelu_backward"),
    ("silu", F.silu, "aten.silu_backward"),
    ("sigmoid", torch.sigmoid, "aten.sigmoid_backward"),
    ("tanh", torch.tanh, "aten.tanh_backward"),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), "aten.leaky_relu_backward"),
    ("softplus", lambda x: F.softplus(x, beta=2.0, threshold=1.0), "aten.softplus_backward"),
]


@pytest.mark.parametrize("name,fn,op", BACKWARD, ids=[b[0] for b in BACKWARD])
def test_activation_backward(name, fn, op):
    check(fn, X, ops=[op], grad=True)


def test_casts():
    check(lambda x: (x.to(torch.bfloat16) * 2).to(torch.float32) + x, X,
          ops=["aten._to_copy"], grad=True)


def test_bf16_graph():
    x, y = X.to(torch.bfloat16), Y.to(torch.bfloat16)
    check(lambda a, b: F.gelu(a * b + a), x, y, ops=["aten.gelu"],
          tol=dict(rtol=2e-2, atol=2e-2))


# -- data movement -------------------------------------------------------------------

VIEWS = [
    ("view", lambda x: (x * 2).view(6, 8), "aten.view"),
    ("permute", lambda x: (x * 2).permute(2, 0, 1) + 1, "aten.permute"),
    ("transpose", lambda x: (x + 1).transpose(0, 2) * 3, "aten.transpose"),
    ("expand", lambda x: (x.sum(1, keepdim=True).expand(2, 3, 8) / 2).exp(), "aten.expand"),
    ("unsqueeze_squeeze", lambda x: (x * 2).unsqueeze(1).squeeze(1) + 1, "aten.unsqueeze"),
    ("slice", lambda x: (x * 2)[:, 1:, 2:7:2] + 1, "aten.slice"),
    ("select", lambda x: (x * 2)[:, 1] + 1, "aten.select"),
    ("split", lambda x: torch.mul(*(x * 2).split(4, dim=2)), "aten.split"),
    ("cat", lambda x: torch.cat([x * 2, x + 1], dim=1) * 3, "aten.cat"),
    ("clone", lambda x: (x * 2).clone() + 1, "aten.clone"),
]


@pytest.mark.parametrize("name,fn,op", VIEWS, ids=[v[0] for v in VIEWS])
def test_data_movement(name, fn, op):
    check(fn, X, ops=[op], grad=True)


def test_transposed_input_is_a_stride_pattern():
    """A transpose of a region input becomes an input of permuted strides,
    not a copy kernel (the weight of every linear layer)."""
    w = randn(8, 5, seed=3)
    report = check(lambda x, w: x @ w.t() * 2, randn(4, 5), w, ops=["aten.mm", "aten.t"])
    graph = report[0].regions[0].region.graph
    assert not any(n.opdef.name == "transpose" for n in graph.nodes)
    assert [t.get_stride() for t in graph.inputs if t.dim == [5, 8]] == [[1, 5]]


# -- matmul and convolution -------------------------------------------------------------


def test_mm():
    check(lambda a, b: torch.mm(a, b) * 2, randn(5, 7), randn(7, 3, seed=1),
          ops=["aten.mm"], grad=True)


def test_bmm():
    check(lambda a, b: torch.bmm(a, b) + 1, randn(2, 5, 7), randn(2, 7, 3, seed=1),
          ops=["aten.bmm"], grad=True)


def test_addmm():
    check(lambda x, w, b: torch.addmm(b, x, w, beta=0.5, alpha=2.0), randn(4, 6),
          randn(6, 3, seed=1), randn(3, seed=2), ops=["aten.addmm"], grad=True)


def test_linear_training():
    check(F.linear, randn(4, 6), randn(3, 6, seed=1), randn(3, seed=2),
          ops=["aten.addmm", "aten.mm", "aten.sum"], grad=True)


CONVS = [
    ("plain", dict()),
    ("stride_padding", dict(stride=2, padding=1)),
    ("dilation", dict(padding=2, dilation=2)),
    ("groups", dict(padding=1, groups=2)),
]


@pytest.mark.parametrize("name,kw", CONVS, ids=[c[0] for c in CONVS])
def test_conv2d(name, kw):
    x = randn(2, 4, 7, 7)
    w = randn(6, 4 // kw.get("groups", 1), 3, 3, seed=1)
    check(lambda x, w, b: F.conv2d(x, w, b, **kw), x, w, randn(6, seed=2),
          ops=["aten.convolution", "aten.convolution_backward"], grad=True)


def test_conv2d_channels_last():
    x = randn(2, 4, 6, 6).contiguous(memory_format=torch.channels_last)
    w = randn(8, 4, 3, 3, seed=1)
    report = check(lambda x, w: F.relu(F.conv2d(x, w, padding=1)), x, w,
                   ops=["aten.convolution"])
    region = report[0].regions[0].region
    assert list(region.inputs[0].strides) == [144, 1, 24, 4]   # N, C, H, W as NHWC


def test_conv3d():
    check(lambda x, w: F.conv3d(x, w, padding=1), randn(1, 2, 4, 4, 4),
          randn(3, 2, 3, 3, 3, seed=1), ops=["aten.convolution"], grad=True)


# -- normalization --------------------------------------------------------------------


def test_layer_norm():
    check(lambda x, w, b: F.layer_norm(x, (8,), w, b, 1e-5), X, randn(8, seed=1),
          randn(8, seed=2), ops=["aten.native_layer_norm", "aten.native_layer_norm_backward"],
          grad=True)


def test_layer_norm_without_affine():
    check(lambda x: F.layer_norm(x, (3, 8)) * 2, X,
          ops=["aten.native_layer_norm", "aten.native_layer_norm_backward"], grad=True)


def test_rms_norm():
    check(lambda x, w: F.rms_norm(x, (8,), w, 1e-6), X, randn(8, seed=1),
          ops=["aten.rsqrt", "aten.mean"], grad=True)


def test_batch_norm_training_updates_running_statistics():
    x = randn(4, 3, 5, 5)
    ours, theirs = nn.BatchNorm2d(3), nn.BatchNorm2d(3)
    with torch.no_grad():
        for m in (ours, theirs):
            m.weight.copy_(randn(3, seed=1))
            m.bias.copy_(randn(3, seed=2))
    check_module(ours, theirs, x, ops=["aten._native_batch_norm_legit_functional",
                                      "aten.native_batch_norm_backward"])
    torch.testing.assert_close(ours.running_mean, theirs.running_mean, **F32)
    torch.testing.assert_close(ours.running_var, theirs.running_var, **F32)


def test_batch_norm_eval():
    m = nn.BatchNorm2d(3).eval()
    with torch.no_grad():
        m.running_mean.copy_(randn(3, seed=1))
        m.running_var.copy_(randn(3, seed=2).abs() + 0.5)
    check(m, randn(2, 3, 4, 4), ops=["aten._native_batch_norm_legit_no_training"])


def test_group_norm():
    check(lambda x, w, b: F.group_norm(x, 2, w, b), randn(2, 4, 3, 3), randn(4, seed=1),
          randn(4, seed=2), ops=["aten.native_group_norm", "aten.native_group_norm_backward"],
          grad=True)


# -- softmax, reductions, pooling ----------------------------------------------------------


def test_softmax():
    check(lambda x: F.softmax(x, dim=-1) * 2, X,
          ops=["aten._softmax", "aten._softmax_backward_data"], grad=True)


def test_log_softmax():
    check(lambda x: F.log_softmax(x, dim=1), X,
          ops=["aten._log_softmax", "aten._log_softmax_backward_data"], grad=True)


REDUCTIONS = [
    ("sum", lambda x: x.sum(dim=(0, 2)) * 2, "aten.sum"),
    ("sum_all", lambda x: (x * 2).sum(), "aten.sum"),
    ("mean", lambda x: x.mean(dim=-1, keepdim=True) + x, "aten.mean"),
    ("amax", lambda x: torch.amax(x - 1, dim=1), "aten.amax"),
    ("amin", lambda x: torch.amin(x + 1, dim=(1, 2), keepdim=True), "aten.amin"),
]


@pytest.mark.parametrize("name,fn,op", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reduction(name, fn, op):
    check(fn, X, ops=[op], grad=name in ("sum", "sum_all", "mean"))


def test_max_pool_inference():
    with torch.no_grad():
        check(lambda x: F.max_pool2d(x, 3, stride=2, padding=1), randn(2, 3, 7, 7),
              ops=["aten.max_pool2d_with_indices"])


def test_max_pool_training():
    """Training: max pooling's backward reads the forward's input instead of
    its indices (dnnc::pool_backward, aten_nn.backward_from_input), so the
    partition saves no indices and dnnc runs the forward pooling too."""
    report = check(lambda x: F.max_pool2d(x * 2, 3, stride=2, padding=1), randn(2, 3, 7, 7),
                   grad=True, ops=["aten.max_pool2d_with_indices", "dnnc.pool_backward"])
    left = [op for g in report for _, op, _ in g.fallbacks]
    assert not any("max_pool" in op for op in left), left


def test_max_pool_training_ties():
    """Windows of equal values after a relu (zeros) and repeated ones: the
    gradient goes to each window's first maximum, as torch's indices say."""
    x = torch.tensor([[[[0.5, 0.5, -1.0, 2.0], [0.5, -3.0, 2.0, 2.0],
                        [-1.0, -2.0, -1.0, -1.0], [1.0, 1.0, -1.0, -4.0]]]]).repeat(2, 3, 1, 1)
    check(lambda x: F.max_pool2d(torch.relu(x), 2), x, grad=True,
          ops=["aten.max_pool2d_with_indices", "dnnc.pool_backward"])


def test_max_pool_indices_read_stay_in_torch():
    """Indices the model itself reads are made by torch: the forward pooling
    stays there, with the reason."""
    def fn(x):
        y, i = F.max_pool2d(x * 2, 2, return_indices=True)
        return y + i.to(y.dtype)
    report = check(fn, randn(2, 3, 6, 6), grad=True, ops=["dnnc.pool_backward"])
    reasons = [why for g in report for _, op, why in g.fallbacks
               if op == "aten.max_pool2d_with_indices"]
    assert reasons and "indices" in reasons[0], reasons


def test_avg_pool():
    check(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
          randn(2, 3, 7, 7), ops=["aten.avg_pool2d", "aten.avg_pool2d_backward"], grad=True)


def test_adaptive_avg_pool():
    check(lambda x: F.adaptive_avg_pool2d(x, 2) * 2, randn(2, 3, 6, 6),
          ops=["aten._adaptive_avg_pool2d", "aten._adaptive_avg_pool2d_backward"], grad=True)


# -- attention ----------------------------------------------------------------------------

SDPA = "aten._scaled_dot_product_flash_attention_for_cpu"


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_sdpa(causal):
    q, k, v = randn(2, 2, 5, 8), randn(2, 2, 5, 8, seed=1), randn(2, 2, 5, 8, seed=2)
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal), q, k, v,
          ops=[SDPA, SDPA + "_backward"], grad=True)


def test_sdpa_scale_and_mask():
    q, k, v = randn(1, 2, 4, 8), randn(1, 2, 6, 8, seed=1), randn(1, 2, 6, 8, seed=2)
    mask = randn(1, 1, 4, 6, seed=3)
    check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3),
          q, k, v, mask, ops=[SDPA])


# -- models ----------------------------------------------------------------------------------


def check_module(ours, theirs, *inputs, ops=(), fallback="eager", tol=F32):
    """A training step of ``ours`` compiled against eager ``theirs`` (a copy):
    outputs, every parameter's gradient. Returns the report."""
    torch._dynamo.reset()
    report = []
    compiled = torch.compile(ours, backend="dnnc", dynamic=False,
                             options={"fallback": fallback, "report": report})
    got, want = compiled(*inputs), theirs(*inputs)
    torch.testing.assert_close(got, want, **tol)
    weight = randn(*want.shape, seed=9)
    (got * weight).sum().backward()
    (want * weight).sum().backward()
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        torch.testing.assert_close(p.grad, q.grad, **tol, msg=lambda m: f"grad of {name}: {m}")
    taken = {op for g in report for r in g.regions for _, op in r.ops}
    for op in ops:
        assert op in taken, f"{op} did not go to dnnc"
    return report


class Block(nn.Module):
    """A transformer block: LayerNorm, causal attention, MLP with GELU."""

    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc, self.out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


def _pair(module):
    torch.manual_seed(0)
    m = module()
    return m, copy.deepcopy(m)


def test_mlp():
    ours, theirs = _pair(lambda: nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32),
                                               nn.GELU(), nn.Linear(32, 4)))
    report = check_module(ours, theirs, randn(8, 16), ops=["aten.addmm", "aten.gelu_backward"])
    assert all(not g.fallbacks for g in report)   # every op of both graphs in dnnc


def test_conv_net():
    ours, theirs = _pair(lambda: nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1, groups=2), nn.SiLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(8, 10), nn.LogSoftmax(-1)))
    check_module(ours, theirs, randn(2, 3, 8, 8),
                 ops=["aten.convolution", "aten.convolution_backward",
                      "aten._native_batch_norm_legit_functional", "aten._log_softmax"])


def test_channels_last_flatten():
    """A channels-last net's pooling and flatten reach ATen as as_strided
    views forward and an as_strided_scatter of a copy backward: all in dnnc,
    so that nothing splits the network's regions."""
    ours, theirs = _pair(lambda: nn.Sequential(
        nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(8, 4)).to(memory_format=torch.channels_last))
    x = randn(2, 3, 8, 8).contiguous(memory_format=torch.channels_last)
    report = check_module(ours, theirs, x, ops=["aten.as_strided", "aten.as_strided_scatter",
                                               "aten.copy", "aten.new_zeros"])
    assert [len(g.regions) for g in report] == [1, 1]
    assert all(not g.fallbacks for g in report), [g.fallbacks for g in report]


def test_transformer_block():
    ours, theirs = _pair(Block)
    report = check_module(ours, theirs, randn(2, 8, 32),
                          ops=["aten.native_layer_norm", SDPA, SDPA + "_backward",
                               "aten.gelu", "aten.native_layer_norm_backward"])
    assert [len(g.regions) for g in report] == [1, 1]   # each graph one dnnc graph


def test_transformer_block_epilogues_through_views():
    """The block's linear layers reach dnnc as addmm, a view to [B, T, N],
    then the gelu or the residual add: each of those joins its GEMM's
    epilogue through the view (dnn-sink-reshapes), in inference and in the
    training step's forward (which also returns the viewed pre-activation),
    and gelu's backward joins the GEMM making its dy: no pointwise kernel is
    left in any plan."""
    torch.manual_seed(0)
    model = Block()
    x = randn(2, 8, 32)
    training = dnnc.torch.explain(model, x, backward=True)
    model.eval()
    with torch.no_grad():
        inference = dnnc.torch.explain(model, x)
    for report in (training, inference):
        for g in report.graphs:
            names = [name for r in g.regions for name, _, _ in r.kernels]
            assert names and not any(name.endswith("_pointwise") for name in names), \
                (g.kind, names)


# -- what stays in torch, explain, registration -------------------------------------------------


def test_unsupported_op_falls_back():
    report = check(lambda x: torch.cumsum(F.relu(x), dim=2) * 2 + x.sort(dim=2).values, X,
                   ops=["aten.relu"], grad=True)
    reasons = {op: why for g in report for _, op, why in g.fallbacks}
    assert "no dnnc mapping" in reasons["aten.cumsum"]
    assert "aten.sort" in reasons


def test_regions_do_not_cycle_through_torch():
    """relu and the add it feeds cannot be one region: the add also reads a
    cumsum (torch) of the relu, which would have to run inside it."""
    def f(x):
        a = F.relu(x) * 3
        return torch.tanh(a) + torch.cumsum(a, dim=2)

    report = check(f, X, ops=["aten.relu", "aten.tanh", "aten.add"])
    assert len(report[0].regions) == 2
    first, second = ({op for _, op in r.ops} for r in report[0].regions)
    assert {"aten.relu", "aten.mul"} <= first and "aten.add" in second


def test_unsupported_dtype_falls_back():
    x = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    report = check(lambda x: F.relu(x - 10) * 2, x, ops=[])
    reasons = [why for g in report for _, op, why in g.fallbacks if op == "aten.relu"]
    assert reasons and "float64" in reasons[0]


def test_regions_called_directly_unless_inductor_runs_the_rest(monkeypatch):
    """A graph that Python runs calls its regions as compiled.run_region,
    without torch's dispatch of dnnc::compiled_region; a graph whose rest
    Inductor compiles calls the custom op (Inductor needs an op). Both
    compute what eager does."""
    from dnnc.torch import backend, compiled

    direct = []
    monkeypatch.setattr(backend, "run_region",
                        lambda key, inputs: direct.append(key) or compiled.run_region(key, inputs))
    report = check(lambda x: F.relu(x - 1) * 2, X, ops=["aten.relu"])
    assert report[0].residual.startswith("nothing") and len(direct) == 1
    direct.clear()
    report = check(lambda x: torch.cumsum(torch.tanh(x) * 2, dim=1), X, ops=["aten.tanh"],
                   fallback="inductor")
    assert report[0].residual.startswith("Inductor") and not direct


def test_inductor_runs_the_rest():
    report = check(lambda x: torch.cumsum(torch.tanh(x) * 2, dim=1), X, ops=["aten.tanh"],
                   fallback="inductor")
    assert report[0].residual.startswith("Inductor")


def test_inductor_takes_a_view_rebuilt_in_the_rest():
    """A linear layer's transposed weight, saved for the backward, is
    rebuilt outside the region as ``aten.t`` of it; with a batchnorm's
    int64 step counter (left to torch) the rest goes to Inductor, which
    refused ``aten.t`` ("both a fallback and a decomp") until the backend
    rewrote it as the permute it is. No warning, and the step's gradients
    match eager's."""
    ours, theirs = _pair(lambda: nn.Sequential(nn.BatchNorm1d(8), nn.Linear(8, 4)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        report = check_module(ours, theirs, randn(16, 8), fallback="inductor")
    forward = report[0]
    assert forward.residual.startswith("Inductor"), forward.residual


def test_explain():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    x = randn(3, 8)
    report = dnnc.torch.explain(model, x, backward=True)
    text = str(report)
    assert [g.kind for g in report.graphs] == ["forward", "backward"]
    assert "forward graph:" in text and "backward graph:" in text
    kinds = {op for _, _, _, op in report.dnnc_ops}
    assert {"aten.addmm", "aten.gelu", "aten.gelu_backward", "aten.mm"} <= kinds
    kernels = [k for g in report.graphs for r in g.regions for k in r.kernels]
    assert any(strategy.startswith(("simt-gemm", "simt-gemv", "tc-"))
               for _, strategy, _ in kernels), kernels
    assert "kernel forward_region0_k" in text


def test_explain_reports_fallback_reasons():
    report = dnnc.torch.explain(lambda x: torch.cumsum(x, 0) + F.relu(x), X)
    assert any(op == "aten.cumsum" and "no dnnc mapping" in why
               for _, _, op, why in report.fallbacks)
    assert "left to torch:" in str(report) and "aten.cumsum" in str(report)


def test_backend_registered():
    assert "dnnc" in torch._dynamo.list_backends()


def test_import_dnnc_does_not_import_torch():
    code = "import sys, dnnc; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- the CUDA attention ops, mapped and run on the CPU back end ---------------------------------
# The fused attention ops torch picks on a GPU (flash, efficient, cuDNN) are
# traced here on meta tensors; their dnnc mapping then runs on CPU tensors
# against PyTorch's math attention.

aten = torch.ops.aten


def _flash(q, k, v, bias):
    r = aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True, scale=0.5)
    g = aten._scaled_dot_product_flash_attention_backward(
        r[0] * 0 + v[..., :1].sum(), q, k, v, r[0], r[1], r[2], r[3], r[4], r[5], 0.0, True,
        r[6], r[7], scale=0.5)
    return r[0], r[1], g[0], g[1], g[2]


def _efficient(q, k, v, bias):
    r = aten._scaled_dot_product_efficient_attention(q, k, v, bias, True, 0.0, True, scale=0.5)
    g = aten._scaled_dot_product_efficient_attention_backward(
        r[0] * 0 + v[..., :1].sum(), q, k, v, bias, r[0], r[1], r[2], r[3], 0.0,
        [True, True, True, False], True, scale=0.5)
    return r[0], r[1], g[0], g[1], g[2]


def _cudnn(q, k, v, bias):
    r = aten._scaled_dot_product_cudnn_attention(q, k, v, bias, True, 0.0, True, scale=0.5)
    g = aten._scaled_dot_product_cudnn_attention_backward(
        r[0] * 0 + v[..., :1].sum(), q, k, v, r[0], r[1], r[6], r[7], bias, r[2], r[3], r[4],
        r[5], 0.0, True, scale=0.5)
    return r[0], r[1], g[0], g[1], g[2]


@pytest.mark.parametrize("fn", [_flash, _efficient, _cudnn], ids=["flash", "efficient", "cudnn"])
def test_cuda_attention_ops(fn):
    from torch.fx.experimental.proxy_tensor import make_fx

    from dnnc.torch import partition
    from dnnc.torch.compiled import CompiledRegion

    shapes = [(1, 2, 5, 8)] * 3 + [(1, 2, 5, 5)]
    metas = [torch.empty(s, device="meta") for s in shapes]
    gm = make_fx(fn, tracing_mode="fake")(*metas)
    regions, refused = partition.propose(gm, "cpu")
    attention = [n for n in gm.graph.nodes if "attention" in str(n.target)]
    assert len(attention) == 2 and not any(n in refused for n in attention), \
        {n.name: why for n, why in refused.items()}
    nodes = [n for n in gm.graph.nodes if n.op == "call_function"]
    output = next(n for n in gm.graph.nodes if n.op == "output")
    region = CompiledRegion("attention", nodes, list(output.args[0]), "cpu")

    q, k, v = (randn(*s, seed=i).requires_grad_() for i, s in enumerate(shapes[:3]))
    bias = randn(*shapes[3], seed=3) if fn is _efficient or fn is _cudnn else None
    inputs = {"q_1": q, "k_1": k, "v_1": v, "bias_1": bias}
    o, lse, dq, dk, dv = region.run([inputs[n.name].detach() for n in region.input_nodes])

    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        mask = torch.ones(5, 5, dtype=torch.bool).tril()
        scores = (q @ k.transpose(-1, -2)) * 0.5
        if bias is not None:
            scores = scores + bias
        scores = scores.masked_fill(~mask, float("-inf"))
        ref = torch.softmax(scores, -1) @ v
    (ref * 0 + v[..., :1].sum().detach() * ref).sum().backward()
    torch.testing.assert_close(o, ref.detach(), **F32)
    torch.testing.assert_close(lse[..., :5].reshape(1, 2, 5),
                               torch.logsumexp(scores, -1).detach(), **F32)
    if lse.shape[2] > 5 and lse.dim() == 3:
        assert lse.shape[2] % 32 == 0   # the efficient kernel's padded rows
    for got, t in ((dq, q), (dk, k), (dv, v)):
        torch.testing.assert_close(got, t.grad, **F32)


def test_entry_point():
    """pyproject's torch_dynamo_backends entry point names the backend."""
    import importlib
    import os
    import re

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "pyproject.toml")) as f:
        text = f.read()
    section = text.split("[project.entry-points.torch_dynamo_backends]", 1)[1]
    target = re.search(r'^dnnc = "([\w.]+):(\w+)"', section, re.M)
    assert target, "no dnnc entry in [project.entry-points.torch_dynamo_backends]"
    module, name = target.groups()
    assert getattr(importlib.import_module(module), name) is dnnc.torch.dnnc_backend


def test_bench_models_build():
    """bench/torch_models.py's models (the GPU test's and benchmark's), small,
    on the CPU: ResNet-50 runs eagerly; a ViT block runs through the backend."""
    import benchutil

    models = benchutil.load("torch_models", "torch_models.py")
    resnet, (x,) = models.build("resnet50", 1, device="cpu", dtype=torch.float32, image=32)
    assert resnet.eval()(x).shape == (1, 1000)
    assert x.is_contiguous(memory_format=torch.channels_last)
    block, (x,) = models.build("vit_block", 1, device="cpu", dtype=torch.float32, seq=5)
    check(block, x, ops=["aten.native_layer_norm", "aten.addmm", SDPA],
          tol=dict(rtol=2e-4, atol=2e-4))
