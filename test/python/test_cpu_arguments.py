"""The CPU back end's arguments (dnnc/targets/cpu_arguments.py) are held to
the rule the GPU runtime holds NumPy arrays to (dnnc_runtime/host_arrays.py):
each input of exactly its dtype and dims, nothing converted, and a wrong one
refused with the same ArgumentError and the same words. The CPU back end
used to convert float64, float16, int32 and even complex64 arrays (NumPy's
ComplexWarning its only sign) where the GPU runtime refuses them."""

import ml_dtypes
import numpy as np
import pytest

import dnnc
from dnnc.dialect.types import data_type as dt
from dnnc_runtime import ArgumentError, binding

F32, BF16 = dt.FLOAT, dt.BFLOAT16


def _relu(io, dim=(2, 3)):
    g = dnnc.Graph(io_data_type=io)
    g.relu(g.tensor(name="x", dim=list(dim))).set_output(True)
    return g.compile(target="cpu")


def _gpu_message(value, dtype, dims):
    """What the GPU runtime says of ``value`` as input 'x' (binding.bind_numpy
    makes no CUDA call)."""
    spec = type("Spec", (), {"dtype": dtype, "dims": tuple(dims), "strides": None,
                             "label": "input 'x'", "name": "x"})()
    with pytest.raises(ArgumentError) as err:
        binding.bind_numpy(value, spec, writable=False)
    return str(err.value)


@pytest.mark.parametrize("io", [F32, BF16])
@pytest.mark.parametrize("wrong", [np.float64, np.float16, np.int32, np.complex64, np.float32,
                                   ml_dtypes.bfloat16])
def test_an_input_of_another_dtype_is_refused_as_on_the_gpu(io, wrong):
    if np.dtype(wrong) == io.numpy:
        pytest.skip("the input's own dtype")
    exe = _relu(io)
    value = np.ones((2, 3), wrong)
    with pytest.raises(ArgumentError) as cpu:
        exe.run(value)
    assert str(cpu.value) == (f"input 'x': expected dtype {io.mlir} (numpy {io.numpy}), got "
                              f"numpy {np.dtype(wrong)}")
    assert cpu.value.tensor == "x"
    assert isinstance(cpu.value, dnnc.GraphError)  # and one of dnnc's own errors
    assert str(cpu.value) == _gpu_message(value, io.mlir, (2, 3))


@pytest.mark.parametrize("io", [F32, BF16])
def test_an_input_of_its_own_dtype_runs(io):
    x = np.array([[-1.5, 2.0, 0.0], [3.0, -0.25, 7.0]]).astype(io.numpy)
    (y,) = _relu(io).run(x)
    assert y.dtype == io.numpy
    np.testing.assert_array_equal(y.astype(np.float64), np.maximum(x.astype(np.float64), 0))


@pytest.mark.parametrize("shape", [(3, 2), (2, 3, 1), (6,), ()])
def test_an_input_of_another_shape_is_refused_as_on_the_gpu(shape):
    value = np.ones(shape, np.float32)
    with pytest.raises(ArgumentError) as cpu:
        _relu(F32).run(value)
    assert str(cpu.value) == f"input 'x': expected shape [2, 3], got {list(shape)}"
    assert str(cpu.value) == _gpu_message(value, "f32", (2, 3))


def test_boolean_and_integer_inputs_take_their_own_types():
    g = dnnc.Graph(io_data_type=F32)
    mask = g.tensor(name="mask", dim=[4], data_type=dt.BOOLEAN)
    n = g.tensor(name="n", dim=[4], data_type=dt.INT32)
    x = g.tensor(name="x", dim=[4])
    g.select(mask, g.cast(n, F32), x).set_output(True)
    exe = g.compile(target="cpu")
    m = np.array([True, False, True, False])
    nv = np.array([5, 6, 7, 8], np.int32)
    xv = np.array([0.5, 1.5, 2.5, 3.5], np.float32)
    (y,) = exe.run(m, nv, xv)
    np.testing.assert_array_equal(y, [5.0, 1.5, 7.0, 3.5])
    for args, message in [
        ((m.astype(np.int8), nv, xv), r"input 'mask': expected dtype i1 \(numpy bool\), got "
                                      r"numpy int8"),
        ((m, nv.astype(np.int64), xv), r"input 'n': expected dtype i32 \(numpy int32\), got "
                                       r"numpy int64"),
        ((m, nv.astype(np.float32), xv), r"input 'n': expected dtype i32 \(numpy int32\), got "
                                         r"numpy float32"),
    ]:
        with pytest.raises(ArgumentError, match=message):
            exe.run(*args)


def test_a_broadcast_input_takes_an_array_of_its_full_dims():
    g = dnnc.Graph(io_data_type=F32)
    b = g.tensor(name="b", dim=[2, 3], stride=[0, 1])  # one row, read for both
    g.relu(b).set_output(True)
    exe = g.compile(target="cpu")
    row = np.array([-1.0, 2.0, -3.0], np.float32)
    with pytest.raises(ArgumentError, match=r"input 'b': expected shape \[2, 3\], got \[3\]"):
        exe.run(row)
    (y,) = exe.run(np.stack([row, row]))
    np.testing.assert_array_equal(y, np.maximum(np.stack([row, row]), 0))


@pytest.mark.parametrize("io", [F32, BF16])
def test_a_broadcast_input_of_differing_values_is_refused_as_on_the_gpu(io):
    """One element is stored along a stride-0 dim: the GPU's staging copy
    kept the last of differing values, the CPU read them all."""
    g = dnnc.Graph(io_data_type=io)
    b = g.tensor(name="x", dim=[3, 2, 4], stride=[4, 0, 1])
    g.relu(b).set_output(True)
    exe = g.compile(target="cpu")
    value = np.zeros((3, 2, 4), io.numpy)
    value[2, 1, 3] = 1.0
    with pytest.raises(ArgumentError) as cpu:
        exe.run(value)
    assert str(cpu.value) == ("input 'x': dim 1 has stride 0 (one element stored, broadcast): "
                              "expected equal values along it, got element [2, 1, 3] differing "
                              "from [2, 0, 3]")
    spec = type("Spec", (), {"dtype": io.mlir, "dims": (3, 2, 4), "strides": (4, 0, 1),
                             "label": "input 'x'", "name": "x"})()
    with pytest.raises(ArgumentError) as gpu:
        binding.bind_numpy(value, spec, writable=False)
    assert str(gpu.value) == str(cpu.value)
    value[2, 0, 3] = 1.0
    value[:, :, 0] = np.nan  # equal bits: NaN along the dim is one value
    (y,) = exe.run(value)
    np.testing.assert_array_equal(y.astype(np.float64), np.maximum(value.astype(np.float64), 0))


def test_other_objects_are_refused():
    exe = _relu(F32)
    with pytest.raises(ArgumentError, match="input 'x': expected a NumPy array or a CPU torch "
                                            "tensor, got list"):
        exe.run([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with pytest.raises(ArgumentError, match="input 'x': expected a NumPy array or a CPU torch "
                                            "tensor, got float"):
        _relu(F32, dim=()).run(1.0)
    (y,) = _relu(F32, dim=()).run(np.float32(-2.0))  # a NumPy scalar is a rank-0 array
    assert y == 0.0


def test_cpu_torch_tensors_are_checked_as_the_runtime_checks_them():
    torch = pytest.importorskip("torch")
    exe = _relu(BF16)
    x = torch.tensor([[-1.0, 2.5, 3.0], [0.5, -2.0, 1.0]], dtype=torch.bfloat16)
    (y,) = exe.run(x)
    assert y.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(y.astype(np.float64), torch.relu(x).double().numpy())
    with pytest.raises(ArgumentError, match=r"input 'x': expected dtype bf16 \(torch.bfloat16\), "
                                            r"got torch.float32"):
        exe.run(x.float())
    with pytest.raises(ArgumentError, match=r"input 'x': expected shape \[2, 3\], got \[3, 2\]"):
        exe.run(x.t().contiguous())
    (y,) = _relu(F32).run(x.float().t().contiguous().t())  # strided: read in its logical order
    np.testing.assert_array_equal(y, torch.relu(x.float()).numpy())
