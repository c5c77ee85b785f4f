"""One argument rule on both back ends, checked on a real GPU: the JIT's
executable (dnnc_runtime) and the CPU back end's refuse the same wrong
arguments with the same ``dnnc_runtime.ArgumentError`` and the same words
(dnnc_runtime/host_arrays.py, dnnc/targets/cpu_arguments.py), and compute
the same results from the right ones, a broadcast (stride-0) input included.

Needs the MLIR bindings (the JIT compiles here), PyTorch with CUDA and a GPU;
the folder's conftest marks every test ``gpu`` and skips them without one.
"""

import numpy as np
import pytest

try:
    import mlir  # noqa: F401
except ImportError as err:
    pytest.skip(f"the MLIR bindings are not installed ({err}): the JIT compiles on this "
                "machine", allow_module_level=True)

torch = pytest.importorskip("torch")
ml_dtypes = pytest.importorskip("ml_dtypes")

import dnnc  # noqa: E402
from dnnc_runtime import ArgumentError  # noqa: E402

DIMS = [3, 5, 8]
STRIDES = [8, 0, 1]  # "b" stores one row of 8 per batch entry, read for all 5 rows


def _graph(dtype):
    g = dnnc.Graph(io_data_type=dtype)
    x = g.tensor(name="x", dim=DIMS)
    b = g.tensor(name="b", dim=DIMS, stride=STRIDES)
    g.relu(g.add(x, b)).set_name("y").set_output(True)
    return g


def _executables(dtype):
    g = _graph(dtype)
    return g.compile(target="cuda", cache=False), g.compile(target="cpu")


def _message(call):
    with pytest.raises(ArgumentError) as err:
        call()
    return str(err.value)


@pytest.mark.parametrize("dtype, host", [("f32", np.float32), ("bf16", ml_dtypes.bfloat16)])
def test_both_back_ends_refuse_the_same_numpy_arguments_alike(dtype, host):
    gpu, cpu = _executables(dtype)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(DIMS).astype(host)
    b = np.broadcast_to(rng.standard_normal([3, 1, 8]), DIMS).astype(host)
    differing = b.copy()
    differing[1, 4, 2] += 1
    wrong = [
        (x.astype(np.float64), b),
        (x.astype(np.float16), b),
        (x.astype(np.int32), b),
        (x.astype(np.complex64), b),
        (x.astype(np.float32 if dtype != "f32" else ml_dtypes.bfloat16), b),
        (x[:, :4], b),
        (x, differing),
    ]
    for args in wrong:
        assert _message(lambda: gpu(*args)) == _message(lambda: cpu(*args))
    want = np.maximum(x.astype(np.float64) + b.astype(np.float64), 0)
    (got_cpu,) = cpu.run(x, b)
    got_gpu = gpu(x, b)
    got_gpu = got_gpu[0] if isinstance(got_gpu, (list, tuple)) else got_gpu
    np.testing.assert_array_equal(np.asarray(got_gpu).astype(np.float64),
                                  got_cpu.astype(np.float64))
    np.testing.assert_allclose(got_cpu.astype(np.float64), want, rtol=1e-2 if dtype != "f32"
                               else 1e-6)


def test_torch_tensors_are_checked_alike():
    gpu, cpu = _executables("bf16")
    x = torch.randn(DIMS, dtype=torch.bfloat16)
    row = torch.randn([3, 1, 8], dtype=torch.bfloat16)
    # Expanded after the move: .cuda() of an expanded tensor makes it dense.
    b, b_gpu = row.expand(DIMS), row.cuda().expand(DIMS)  # stride 0 where "b" has it
    assert list(b.stride()) == list(b_gpu.stride()) == STRIDES
    # The same wrong dtype: both name it in torch's spelling.
    assert _message(lambda: gpu(x.float().cuda(), b_gpu)) == _message(lambda: cpu(x.float(), b))
    out = torch.full(DIMS, float("nan"), dtype=torch.bfloat16, device="cuda")
    gpu(x.cuda(), b_gpu, outputs=[out])
    torch.cuda.synchronize()
    (got_cpu,) = cpu.run(x, b)
    np.testing.assert_array_equal(out.float().cpu().numpy(), got_cpu.astype(np.float32))
    np.testing.assert_array_equal(out.float().cpu().numpy(),
                                  torch.relu(x.float() + b.float()).bfloat16().float().numpy())
