"""dnnc.torch on CPU tensors: every op forward and backward against eager
PyTorch (torch_cases.py), the torch.library registrations and fake
implementations (``torch.library.opcheck``), the fallback policy, the
modules in a training step, and a model under ``torch.compile``.

Everything runs on dnnc's CPU back end at float32 with small shapes; the
same cases run on CUDA tensors in test/gpu/test_torch_ops.py.
"""

import math
import os
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")

import dnnc.torch as dt  # noqa: E402
from dnnc.errors import GraphError, UnsupportedError  # noqa: E402
from dnnc.torch import runner  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_cases import CASES, compare  # noqa: E402

pytestmark = pytest.mark.torch
F = torch.nn.functional
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def _no_fallback():
    """The op tests must run dnnc, never torch behind its back."""
    with dt.strict():
        yield


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_op_matches_torch(case):
    compare(case, torch.float32, "cpu")


def test_bfloat16_on_cpu():
    case = next(c for c in CASES if c.name == "layer_norm")
    compare(case, torch.bfloat16, "cpu")


def test_channels_last_kept():
    x = torch.randn(2, 4, 6, 6).to(memory_format=torch.channels_last)
    w = torch.randn(8, 4, 3, 3)
    y = dt.conv2d(x, w, padding=1)
    assert y.is_contiguous(memory_format=torch.channels_last) and not y.is_contiguous()
    assert dt.relu(x).stride() == x.stride()


def test_compiles_once_per_signature():
    x = torch.randn(3, 11)
    dt.silu(x)
    before = runner.cache_size()
    dt.silu(torch.randn(3, 11))
    assert runner.cache_size() == before
    dt.silu(torch.randn(3, 12))
    assert runner.cache_size() == before + 1


# ---------------------------------------------------------------- registrations

def _opcheck_args():
    g = lambda *s, cl=False: (torch.randn(*s).to(memory_format=torch.channels_last) if cl  # noqa
                              else torch.randn(*s)).requires_grad_()
    d = torch.ops.dnnc
    return [
        (d.conv.default, (g(2, 4, 7, 7, cl=True), g(6, 2, 3, 3), g(6), [2, 1], [1, 1], [0, 1],
                          [1, 2], 2)),
        (d.matmul.default, (g(3, 1, 5, 4), g(2, 4, 6))),
        (d.linear.default, (g(5, 4), g(3, 4), g(3))),
        (d.sdpa.default, (g(1, 4, 5, 8), g(1, 2, 7, 8), g(1, 2, 7, 8), None, True, 0.3)),
        (d.layer_norm.default, (g(3, 4, 5), [5], g(5), g(5), 1e-5)),
        (d.rms_norm.default, (g(3, 4, 5), [4, 5], g(4, 5), 1e-6)),
        (d.batch_norm.default, (g(4, 3, 3, 3), g(3), g(3), torch.zeros(3), torch.ones(3), True,
                                0.1, 1e-5)),
        (d.batch_norm.default, (g(4, 3, 3, 3), g(3), g(3), torch.zeros(3), torch.ones(3), False,
                                0.1, 1e-5)),
        (d.group_norm.default, (g(2, 4, 3, 3), 2, g(4), None, 1e-5)),
        (d.softmax.default, (g(3, 6), 1, True)),
        (d.pool.default, (g(2, 3, 6, 6, cl=True), "avg", [3, 3], [2, 2], [1, 1], True)),
        (d.pool.default, (g(1, 2, 4, 4, 4), "max", [2, 2, 2], [2, 2, 2], [0, 0, 0], False)),
        (d.relu.default, (g(4, 5),)),
        (d.sigmoid.default, (g(4, 5),)),
        (d.elu.default, (g(4, 5), 0.5)),
        (d.gelu.default, (g(4, 5), "tanh")),
        (d.leaky_relu.default, (g(4, 5), 0.1)),
        (d.softplus.default, (g(4, 5), 1.5, 10.0)),
    ]


@pytest.mark.parametrize("op,args", _opcheck_args(),
                         ids=lambda v: str(v).split(".")[-2] if hasattr(v, "_schema") else "")
def test_opcheck(op, args):
    """Schema, fake implementation against the real one, autograd
    registration, and tracing with dynamic shapes (AOT dispatch)."""
    torch.library.opcheck(op, args)


def test_import_dnnc_does_not_import_torch():
    code = "import sys, dnnc; assert 'torch' not in sys.modules, 'torch imported'"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "runtime")]))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


# ---------------------------------------------------------------- fallback and errors

def test_fallback_warns_once_and_matches_torch():
    x = torch.randn(4, 5, dtype=torch.float64)
    with dt.strict(False), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = dt.gelu(x)
        dt.gelu(x)
    messages = [str(w.message) for w in caught if issubclass(w.category, dt.FallbackWarning)]
    assert len(messages) == 1
    assert "gelu" in messages[0] and "torch.float64" in messages[0]
    torch.testing.assert_close(y, F.gelu(x), rtol=0, atol=0)


def test_fallback_for_an_argument_dnnc_lacks():
    q = torch.randn(1, 2, 4, 8)
    with dt.strict(False), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dt.max_pool2d(torch.randn(1, 2, 5, 5), 2, ceil_mode=True)
        dt.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    text = " ".join(str(w.message) for w in caught)
    assert "ceil_mode" in text and "dropout_p" in text


def test_strict_refuses():
    x = torch.randn(4, 5, dtype=torch.float64)
    with pytest.raises(UnsupportedError, match=r"dnnc.torch.relu: tensor 'input': expected "
                                               r"dtype float32.*got torch.float64"):
        dt.relu(x, strict=True)
    with dt.strict(False):
        with pytest.raises(UnsupportedError, match="inplace"):
            dt.relu(torch.randn(3), inplace=True, strict=True)


def test_bad_input_is_a_typed_error():
    with pytest.raises(GraphError, match=r"dnnc::conv: input 'w' dim 1: expected 2 .*got 3"):
        torch.ops.dnnc.conv(torch.randn(1, 4, 5, 5), torch.randn(4, 3, 3, 3), None, [1, 1],
                            [0, 0], [0, 0], [1, 1], 2)
    with pytest.raises(GraphError, match=r"dnnc::layer_norm: input 'x': expected trailing "
                                         r"dims \[6\]"):
        dt.layer_norm(torch.randn(2, 5), (6,))


def test_batch_norm_updates_running_statistics():
    x = torch.randn(4, 3, 5, 5)
    mean, var = torch.zeros(3), torch.ones(3)
    ref_mean, ref_var = mean.clone(), var.clone()
    dt.batch_norm(x, mean, var, training=True, momentum=0.2)
    F.batch_norm(x, ref_mean, ref_var, training=True, momentum=0.2)
    torch.testing.assert_close(mean, ref_mean)
    torch.testing.assert_close(var, ref_var)


# ---------------------------------------------------------------- modules

class _Model(torch.nn.Module):
    """Conv, norm, attention and MLP: the modules and functions together."""

    def __init__(self, nn):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.LayerNorm(8)
        self.qkv = nn.Linear(8, 24)
        self.rms = nn.RMSNorm(8)
        self.out = nn.Linear(8, 4, bias=False)

    def forward(self, x, ops):
        y = ops.relu(self.conv(x))                       # (B, 8, 4, 4)
        y = y.flatten(2).transpose(1, 2)                 # (B, 16, 8)
        y = self.norm(y)
        q, k, v = self.qkv(y).view(y.shape[0], 16, 3, 2, 4).permute(2, 0, 3, 1, 4)
        a = ops.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y + a.transpose(1, 2).reshape(y.shape)
        return self.out(ops.gelu(self.rms(y))).mean(1)


class _TorchOps:
    relu = staticmethod(F.relu)
    gelu = staticmethod(F.gelu)
    scaled_dot_product_attention = staticmethod(F.scaled_dot_product_attention)


def test_modules_have_torch_state_dicts():
    for ours, theirs in ((dt.nn.Conv2d(3, 4, 3, bias=False), torch.nn.Conv2d(3, 4, 3, bias=False)),
                         (dt.nn.Linear(3, 4), torch.nn.Linear(3, 4)),
                         (dt.nn.LayerNorm((2, 3)), torch.nn.LayerNorm((2, 3))),
                         (dt.nn.RMSNorm(3), torch.nn.RMSNorm(3)),
                         (dt.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)),
                         (dt.nn.GroupNorm(2, 4), torch.nn.GroupNorm(2, 4))):
        assert isinstance(ours, type(theirs))
        assert ours.state_dict().keys() == theirs.state_dict().keys()
        ours.load_state_dict(theirs.state_dict())


def test_training_step_matches_torch():
    torch.manual_seed(0)
    ours = _Model(dt.nn)
    theirs = _Model(torch.nn)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(2, 3, 4, 4)
    target = torch.randn(2, 4)
    for model, ops in ((ours, dt), (theirs, _TorchOps)):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = F.mse_loss(model(x, ops), target)
        loss.backward()
        opt.step()
        model.loss = float(loss)
    assert math.isclose(ours.loss, theirs.loss, rel_tol=1e-5)
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        torch.testing.assert_close(p, q, atol=1e-5, rtol=1e-4, msg=name)


@pytest.mark.parametrize("momentum", [0.3, None])
def test_batchnorm_module_matches_torch(momentum):
    """Two training steps (running statistics, num_batches_tracked, the
    cumulative average of momentum=None), then eval."""
    ours = dt.nn.BatchNorm2d(3, momentum=momentum)
    theirs = torch.nn.BatchNorm2d(3, momentum=momentum)
    for _ in range(2):
        x = torch.randn(4, 3, 5, 5)
        torch.testing.assert_close(ours(x), theirs(x))
    for name, buffer in theirs.named_buffers():
        torch.testing.assert_close(getattr(ours, name), buffer, msg=name)
    ours.eval()
    theirs.eval()
    x = torch.randn(2, 3, 5, 5)
    torch.testing.assert_close(ours(x), theirs(x))


def test_swap_modules_shares_parameters():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Sequential(torch.nn.LayerNorm(4)))
    weight = model[0].weight
    dt.nn.swap_modules(model)
    assert type(model[0]) is dt.nn.Linear and type(model[1][0]) is dt.nn.LayerNorm
    assert model[0].weight is weight


def test_traces_under_torch_compile():
    """The fake implementations let dynamo and AOTAutograd trace the whole
    model in one graph (``fullgraph``); forward and gradients match eager."""
    torch.manual_seed(1)
    model = _Model(dt.nn)
    x = torch.randn(2, 3, 4, 4)
    eager = model(x, dt)
    grads = torch.autograd.grad(eager.sum(), list(model.parameters()))
    compiled = torch.compile(lambda x: model(x, dt), backend="aot_eager", fullgraph=True)
    y = compiled(x)
    torch.testing.assert_close(y, eager)
    for g, w in zip(torch.autograd.grad(y.sum(), list(model.parameters())), grads):
        torch.testing.assert_close(g, w)
