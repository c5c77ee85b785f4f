"""dnnc.torch on CUDA tensors: the CPU tests' cases (test/python/torch_cases.py)
forward and backward in bfloat16, float16 and float32 against PyTorch in
float32 from the same values, one CUDA graph capture and replay, a call on
a side stream, and a model's training step under ``torch.compile``.

f32 runs with tf32 off on both sides (``torch.backends.cudnn.allow_tf32``
and the matmul precision), so dnnc multiplies exactly, as PyTorch then does.
Needs the MLIR bindings (the JIT compiles here), PyTorch with CUDA and a GPU
of arch sm_80 or sm_90a; the folder's conftest skips it all without a GPU.

    PYTHONPATH=$PWD:$PWD/runtime python -m pytest -q test/gpu/test_torch_ops.py
"""

import os
import sys

import pytest

try:
    import mlir  # noqa: F401
except ImportError as err:
    pytest.skip(f"the MLIR bindings are not installed ({err}): the JIT compiles on this "
                "machine", allow_module_level=True)

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("PyTorch has no CUDA device", allow_module_level=True)

import dnnc.torch as dt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
from torch_cases import CASES, compare  # noqa: E402

F = torch.nn.functional
DTYPES = [torch.bfloat16, torch.float16, torch.float32]


@pytest.fixture(autouse=True)
def _exact_f32_and_strict():
    cudnn, precision = torch.backends.cudnn.allow_tf32, torch.get_float32_matmul_precision()
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    try:
        with dt.strict():
            yield
    finally:
        torch.backends.cudnn.allow_tf32 = cudnn
        torch.set_float32_matmul_precision(precision)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_op_matches_torch(case, dtype):
    compare(case, dtype, "cuda")


def _block(x, w, q):
    y = dt.relu(dt.conv2d(x, w, padding=1))
    a = dt.scaled_dot_product_attention(q, q, q, is_causal=True)
    return y, a


def test_cuda_graph_capture():
    """Warm up (compile, load), capture conv + relu and attention, change the
    inputs in place, replay: the outputs follow the new inputs."""
    dtype = torch.bfloat16
    x = torch.randn(2, 16, 12, 12, device="cuda", dtype=dtype).to(
        memory_format=torch.channels_last)
    w = (0.2 * torch.randn(32, 16, 3, 3, device="cuda")).to(dtype).to(
        memory_format=torch.channels_last)
    q = torch.randn(2, 4, 64, 64, device="cuda", dtype=dtype)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        _block(x, w, q)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y, a = _block(x, w, q)
    x.copy_(torch.randn_like(x))
    q.copy_(torch.randn_like(q))
    graph.replay()
    torch.cuda.synchronize()
    want_y = F.relu(F.conv2d(x.float(), w.float(), padding=1))
    want_a = F.scaled_dot_product_attention(q.float(), q.float(), q.float(), is_causal=True)
    torch.testing.assert_close(y.float(), want_y, atol=5e-2, rtol=5e-2)
    torch.testing.assert_close(a.float(), want_a, atol=3e-2, rtol=3e-2)


def test_runs_on_the_current_stream():
    """A side stream busy with a long matmul, then a dnnc op on it: the op
    must wait for the matmul's output, which it does only on that stream."""
    side = torch.cuda.Stream()
    a = torch.randn(4096, 4096, device="cuda")
    with torch.cuda.stream(side):
        big = a @ a                      # queued on side, not done yet
        x = big[:64, :64].contiguous()
        y = dt.silu(x)
    side.synchronize()
    torch.testing.assert_close(y, F.silu(x), atol=1e-5, rtol=1e-5)


def test_training_step_under_torch_compile():
    torch.manual_seed(0)
    model = torch.nn.Sequential(dt.nn.Linear(64, 128), torch.nn.GELU(), dt.nn.Linear(128, 64),
                                dt.nn.LayerNorm(64)).cuda()
    reference = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(),
                                    torch.nn.Linear(128, 64), torch.nn.LayerNorm(64)).cuda()
    reference.load_state_dict(model.state_dict())
    x = torch.randn(32, 64, device="cuda")
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    loss = compiled(x).square().mean()
    loss.backward()
    want = reference(x).square().mean()
    want.backward()
    torch.testing.assert_close(loss, want, atol=1e-5, rtol=1e-5)
    for p, r in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, r.grad, atol=1e-4, rtol=1e-3)
