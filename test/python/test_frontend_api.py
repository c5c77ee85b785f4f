"""dnnc.frontend's API surface: enums, tensors, the lifecycle, typed errors,
serialization, and NumPy buffers on the CPU back end (against NumPy)."""

import numpy as np
import pytest

import dnnc.frontend as cudnn
from dnnc.errors import GraphError, UnsupportedError

# cuDNN's data types (cudnn_frontend::DataType_t), every member.
CUDNN_TYPES = ["FLOAT", "DOUBLE", "HALF", "INT8", "INT32", "INT8x4", "UINT8", "UINT8x4",
               "INT8x32", "BFLOAT16", "INT64", "BOOLEAN", "FP8_E4M3", "FP8_E5M2",
               "FAST_FLOAT_FOR_FP8", "FP8_E8M0", "FP4_E2M1", "INT4", "NOT_SET"]
DNNC_TYPES = {"FLOAT", "HALF", "BFLOAT16", "FP8_E4M3", "FP8_E5M2", "BOOLEAN", "INT32", "INT8",
              "UINT8", "FAST_FLOAT_FOR_FP8"}


def _graph(**kw):
    kw.setdefault("io_data_type", cudnn.data_type.FLOAT)
    return cudnn.pygraph(target="cpu", **kw)


def _build(g):
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A])
    g.check_support()
    g.build_plans(cudnn.build_plan_policy.HEURISTICS_CHOICE)


def _add_graph():
    g = _graph()
    a = g.tensor(name="a", dim=[4, 5], stride=[5, 1])
    b = g.tensor(name="b", dim=[1, 5], stride=[5, 1])
    y = g.add(a=a, b=b).set_output(True)
    return g, a, b, y


# -- enums -------------------------------------------------------------------------

def test_every_cudnn_data_type_exists_and_maps_or_raises():
    assert [m.name for m in cudnn.data_type] == CUDNN_TYPES
    from dnnc.frontend.enums import to_dnnc

    for name in CUDNN_TYPES:
        dt = cudnn.data_type[name]
        if name == "NOT_SET":
            assert to_dnnc(dt, "t") is None
        elif name in DNNC_TYPES:
            assert to_dnnc(dt, "t") is not None
        else:
            with pytest.raises(cudnn.UnsupportedDataTypeError, match=name):
                to_dnnc(dt, "tensor 'x'")


def test_other_enums_have_cudnns_members():
    assert [m.name for m in cudnn.heur_mode] == ["A", "B", "FALLBACK", "OPENSOURCE"]
    assert [m.name for m in cudnn.norm_forward_phase] == ["INFERENCE", "TRAINING", "NOT_SET"]
    assert {m.name for m in cudnn.reduction_mode} >= {"ADD", "MUL", "MIN", "MAX", "AMAX", "AVG",
                                                      "NORM1", "NORM2", "MUL_NO_ZEROS"}
    assert [m.name for m in cudnn.build_plan_policy] == ["HEURISTICS_CHOICE", "ALL"]
    assert cudnn.knob_type.KERNEL_CFG and cudnn.behavior_note.RUNTIME_COMPILATION
    assert cudnn.diagonal_alignment.BOTTOM_RIGHT and cudnn.convolution_mode.CONVOLUTION


def test_dtypes_are_accepted_as_torch_and_numpy_dtypes():
    from dnnc.frontend.enums import library_type

    assert library_type(np.float16) is cudnn.data_type.HALF
    assert library_type("torch.bfloat16") is cudnn.data_type.BFLOAT16
    assert library_type(np.dtype(np.int32)) is cudnn.data_type.INT32
    torch = pytest.importorskip("torch")
    assert library_type(torch.float8_e4m3fn) is cudnn.data_type.FP8_E4M3
    t = _graph().tensor(dim=[2], data_type=torch.float16)
    assert t.get_data_type() is cudnn.data_type.HALF


# -- tensors -------------------------------------------------------------------------

def test_tensor_setters_chain_and_getters_read_back():
    g = _graph()
    t = g.tensor(name="x", dim=[2, 3], stride=[3, 1], data_type=cudnn.data_type.HALF)
    same = t.set_name("y").set_data_type(cudnn.data_type.FLOAT).set_dim([3, 2]) \
        .set_stride([1, 3]).set_uid(42).set_is_pass_by_value(False)
    assert same is t
    assert (t.get_name(), t.get_dim(), t.get_stride(), t.get_uid()) == ("y", [3, 2], [1, 3], 42)
    assert t.get_data_type() is cudnn.data_type.FLOAT and not t.get_is_virtual()
    assert g.query_tensor_attributes_of_uid(42) is t
    y = g.exp(t)
    assert y.get_is_virtual() and y.set_output(True) is y and not y.get_is_virtual()
    assert y.get_dim() == [3, 2]                     # inferred by lowering
    assert isinstance(repr(t), str) and '"uid": 42' in repr(t)


def test_tensor_like_numpy_and_another_graphs_tensor():
    g = _graph()
    a = np.zeros((4, 6), dtype=np.float16)[:, ::2]
    t = g.tensor_like(a)
    assert t.get_dim() == [4, 3] and t.get_stride() == [6, 2]
    assert t.get_data_type() is cudnn.data_type.HALF and not t.get_is_pass_by_value()
    one = g.tensor_like(np.ones((1, 1), np.float32))
    assert one.get_is_pass_by_value()                 # a CPU scalar: read at execute
    h = _graph()
    u = h.tensor_like(t, name="t")
    assert u.get_dim() == [4, 3] and u.get_name() == "t" and u.get_uid() != 0


# -- lifecycle --------------------------------------------------------------------------

def test_lifecycle_with_numpy_buffers_against_numpy():
    g, a, b, y = _add_graph()
    assert g.get_execution_plan_count() == 0
    _build(g)
    assert g.get_execution_plan_count() == 1 and g.get_engine_count() == 1
    assert g.get_workspace_size() == 0 and g.get_knobs_for_engine(0) == []
    assert "cpu" in g.get_plan_name_at_index(0)
    assert "cpu executable" in g.describe_plan()
    av = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    bv = np.arange(5, dtype=np.float32).reshape(1, 5)
    out = np.full((4, 5), np.nan, np.float32)
    g.execute({a: av, b: bv, y: out}, np.empty(0, np.uint8))
    np.testing.assert_array_equal(out, av + bv)
    out2 = np.zeros_like(out)
    g.execute_plan_at_index({a.get_uid(): av, b.get_uid(): bv, y.get_uid(): out2}, None, 0)
    np.testing.assert_array_equal(out2, av + bv)
    text = repr(g)
    assert "add" in text and "output" in text and "plan (cpu)" in text


def test_build_shortcut_and_graph_context_manager():
    with cudnn.graph(None, io_data_type=cudnn.data_type.FLOAT) as (g, extra):
        assert extra == [] and isinstance(g, cudnn.pygraph)
        g.target = "cpu"
        x = g.tensor(dim=[3], stride=[1])
        y = g.neg(x).set_output(True)
    g.build([cudnn.heur_mode.FALLBACK])
    out = np.zeros(3, np.float32)
    g.execute({x: np.array([1, -2, 3], np.float32), y: out}, None)
    np.testing.assert_array_equal(out, [-1, 2, -3])


def test_to_mlir_names_the_dnn_ops():
    g = _graph()
    x = g.tensor(name="x", dim=[8, 16, 1, 1])
    s = g.tensor(name="s", dim=[1, 16, 1, 1])
    y, _, _ = g.layernorm(norm_forward_phase=cudnn.norm_forward_phase.INFERENCE, input=x,
                          scale=s, bias=s, epsilon=1e-5)
    y.set_output(True)
    text = g.to_mlir()
    assert "dnn.layernorm" in text and "func.func" in text


def test_serialize_deserialize_round_trip_on_cpu():
    g, a, b, y = _add_graph()
    _build(g)
    data = g.serialize()
    h = cudnn.pygraph()
    h.deserialize(data)
    av = np.ones((4, 5), np.float32)
    bv = np.full((1, 5), 2.0, np.float32)
    out = np.zeros((4, 5), np.float32)
    h.execute({a.get_uid(): av, b.get_uid(): bv, y.get_uid(): out}, None)
    np.testing.assert_array_equal(out, 3.0)
    with pytest.raises(cudnn.InvalidGraphError, match="serialize"):
        cudnn.pygraph().deserialize(b"not a plan")


def test_serialized_plan_keeps_its_runtime_scalars():
    g = _graph()
    x = g.tensor(name="x", dim=[3])
    s = g.tensor(name="s", dim=[1, 1], is_pass_by_value=True)
    y = g.scale(x, s).set_output(True)
    _build(g)
    h = cudnn.pygraph()
    h.deserialize(g.serialize())          # compiled at build_plans: no execute needed
    for value in (2.0, -0.5):
        out = np.zeros(3, np.float32)
        h.execute({x.get_uid(): np.arange(3, dtype=np.float32), s.get_uid(): value,
                   y.get_uid(): out}, None)
        np.testing.assert_array_equal(out, np.arange(3) * value)


def test_reported_version_can_be_set_for_version_gated_code(monkeypatch):
    monkeypatch.setenv("DNNC_FRONTEND_REPORTED_VERSION", "9.19.0")
    assert cudnn.backend_version_string() == "9.19.0"
    assert cudnn.backend_version() == 91900


def test_handles_streams_and_versions():
    h = cudnn.create_handle()
    cudnn.set_stream(handle=h, stream=0)
    assert cudnn.get_stream(h) == 0
    cudnn.destroy_handle(h)
    with pytest.raises(GraphError, match="handle"):
        cudnn.set_stream(handle=h, stream=0)
    import dnnc

    assert cudnn.backend_version_string() == dnnc.__version__
    major, minor, patch = (int(p) for p in dnnc.__version__.split(".")[:3])
    assert cudnn.backend_version() == major * 10000 + minor * 100 + patch


# -- typed errors ---------------------------------------------------------------------------

def test_unsupported_data_type_is_a_graph_error_naming_it():
    g = _graph()
    x = g.tensor(name="x", dim=[4], data_type=cudnn.data_type.INT64)
    g.relu(x).set_output(True)
    g.validate()                      # as in cuDNN: create_execution_plans says what is not
    g.build_operation_graph()         # supported, which cudnn-frontend code catches to skip
    with pytest.raises(cudnn.UnsupportedDataTypeError, match="tensor 'x'.*INT64") as err:
        g.create_execution_plans([cudnn.heur_mode.A])
    assert isinstance(err.value, GraphError)
    assert isinstance(err.value, cudnn.cudnnGraphNotSupportedError)
    assert isinstance(err.value, UnsupportedError)


@pytest.mark.parametrize("build,option", [
    (lambda g, x: g.matmul(x, x, padding=1.0), "padding"),
    (lambda g, x: g.sdpa(x, x, x, dropout=(0.1, 1, 2)), "dropout"),
    (lambda g, x: g.sdpa(x, x, x, use_alibi_mask=True), "use_alibi_mask"),
    (lambda g, x: g.batchnorm(x, x, x, None, None, 1e-5, 0.1, peer_stats=[x]), "peer_stats"),
    (lambda g, x: g.mod(x, x), "MOD"),
    (lambda g, x: g.adalayernorm(cudnn.norm_forward_phase.TRAINING, x, x, x, 1e-5),
     "adaptive"),
    (lambda g, x: g.exp(x, compute_data_type=cudnn.data_type.HALF), "compute_data_type"),
    (lambda g, x: g.reduction(x, mode=cudnn.reduction_mode.MUL_NO_ZEROS), "MUL_NO_ZEROS"),
])
def test_unsupported_options_raise_cudnns_error_naming_them(build, option):
    g = _graph()
    x = g.tensor(name="x", dim=[1, 2, 8, 8])
    out = build(g, x)                 # refused where cuDNN refuses an option: validate
    (out[0] if isinstance(out, (list, tuple)) else out).set_output(True)
    with pytest.raises(cudnn.cudnnGraphNotSupportedError, match=option):
        g.validate()
    with pytest.raises(cudnn.cudnnGraphNotSupportedError, match=option):
        g.check_support()


def test_device_tensor_epsilon_is_refused_naming_it():
    g = _graph()
    x = g.tensor(name="x", dim=[4, 8, 1, 1])
    s = g.tensor(name="s", dim=[1, 8, 1, 1])
    eps = g.tensor(name="eps", dim=[1, 1, 1, 1])        # not pass-by-value
    g.layernorm(cudnn.norm_forward_phase.INFERENCE, x, s, s, eps)[0].set_output(True)
    g.validate()
    with pytest.raises(cudnn.cudnnGraphNotSupportedError, match="layernorm epsilon.*'eps'"):
        g.check_support()
    with pytest.raises(cudnn.cudnnGraphNotSupportedError, match="layernorm epsilon.*'eps'"):
        g.to_mlir()


def test_shape_errors_are_value_errors():
    g = _graph()
    a = g.tensor(name="a", dim=[2, 3])
    b = g.tensor(name="b", dim=[4, 5])
    g.matmul(a, b).set_output(True)
    with pytest.raises(ValueError, match="matmul"):
        g.validate()
    h = _graph()
    x = h.tensor(name="x", dim=[2, 3, 4, 4])
    r = h.reduction(x, mode=cudnn.reduction_mode.ADD).set_output(True)
    with pytest.raises(cudnn.InvalidGraphError, match="set_dim"):
        h.validate()
    r.set_dim([2, 2, 4, 4])
    with pytest.raises(cudnn.InvalidGraphError, match="dim 1: expected 1 or 3"):
        h.validate()


def test_variant_pack_errors():
    g, a, b, y = _add_graph()
    _build(g)
    av, bv, out = np.zeros((4, 5), np.float32), np.zeros((1, 5), np.float32), \
        np.zeros((4, 5), np.float32)
    with pytest.raises(cudnn.InvalidVariantPackError, match="input tensor 'b'.*missing"):
        g.execute({a: av, y: out}, None)
    with pytest.raises(cudnn.InvalidVariantPackError, match="output tensor.*missing"):
        g.execute({a: av, b: bv}, None)
    with pytest.raises(ValueError, match=r"'a'.*expected dims \[4, 5\].*got dims \[5, 4\], "
                       "not dense"):
        g.execute({a: np.zeros((5, 8), np.float32)[:, ::2], b: bv, y: out}, None)
    with pytest.raises(cudnn.InvalidVariantPackError, match=r"output .*at least 20 elements"):
        g.execute({a: av, b: bv, y: np.zeros(19, np.float32)}, None)
    with pytest.raises(cudnn.InvalidVariantPackError, match="of 4 bytes.*of 8 bytes"):
        g.execute({a: av, b: bv, y: np.zeros(20, np.float64)}, None)
    with pytest.raises(cudnn.InvalidVariantPackError, match="uid 999"):
        g.execute({999: av, a: av, b: bv, y: out}, None)
    other = _graph().tensor(name="o", dim=[1])
    with pytest.raises(cudnn.InvalidVariantPackError, match="not a tensor of this graph"):
        g.execute({other: av, a: av, b: bv, y: out}, None)


def test_buffers_of_other_dims_are_storage_as_in_cudnn():
    g, a, b, y = _add_graph()
    _build(g)
    av = np.arange(20, dtype=np.float32).reshape(4, 5)
    flat_out = np.zeros(20, np.float32)                 # cuDNN takes pointers: any shape
    g.execute({a: av.reshape(20), b: np.ones(5, np.float32), y: flat_out}, None)
    np.testing.assert_array_equal(flat_out.reshape(4, 5), av + 1)
    out_t = np.zeros((10, 2), np.float32).T             # dense, in another dim order
    g.execute({a: av, b: np.ones(5, np.float32), y: out_t}, None)
    np.testing.assert_array_equal(out_t.T.reshape(4, 5), av + 1)


def test_missing_scalar_and_execute_before_build():
    g = _graph()
    x = g.tensor(name="x", dim=[3])
    s = g.tensor(name="s", dim=[1], is_pass_by_value=True)
    y = g.scale(x, s).set_output(True)
    with pytest.raises(GraphError, match="build_plans"):
        g.execute({x: np.ones(3, np.float32), y: np.ones(3, np.float32)}, None)
    _build(g)
    # s is a runtime scalar: the plan is compiled by build_plans, and the
    # value is still required at execute.
    assert "cpu" in g.get_plan_name_at_index(0)
    with pytest.raises(cudnn.InvalidVariantPackError, match="pass-by-value tensor 's'"):
        g.execute({x: np.ones(3, np.float32), y: np.ones(3, np.float32)}, None)
    with pytest.raises(cudnn.InvalidVariantPackError, match="pass-by-value tensor 's'.*got "
                                                           "object"):
        g.execute({x: np.ones(3, np.float32), s: object(), y: np.ones(3, np.float32)}, None)


def test_compiled_in_scalar_waits_for_execute():
    g = _graph()
    x = g.tensor(name="x", dim=[3])
    slope = g.tensor(name="slope", dim=[1], is_pass_by_value=True)
    y = g.leaky_relu(x, negative_slope=slope).set_output(True)    # an attribute in dnnc
    _build(g)
    assert "execute" in g.get_plan_name_at_index(0)    # not compiled until values come
    with pytest.raises(cudnn.InvalidVariantPackError, match="pass-by-value tensor 'slope'"):
        g.execute({x: np.ones(3, np.float32), y: np.ones(3, np.float32)}, None)


def test_uids_are_assigned_when_read_or_lowered_around_the_callers():
    g = _graph()
    x = g.tensor(name="x", dim=[3])
    y = g.exp(x).set_output(True).set_uid(1)          # as cudnn-frontend's sdpa tests do
    z = g.tensor(name="z", dim=[3], uid=2)
    g.add(x, z).set_output(True)
    g.validate()
    uids = [t.get_uid() for t in g._tensors]
    assert y.get_uid() == 1 and z.get_uid() == 2 and x.get_uid() not in (1, 2)
    assert len(set(uids)) == len(uids)
    x.set_uid(2)
    with pytest.raises(cudnn.InvalidGraphError, match="uid 2"):
        g.validate()


def test_kv_head_counts_dnnc_lacks_are_not_supported_errors():
    g = _graph()
    q = g.tensor(name="q", dim=[1, 6, 8, 16])
    k = g.tensor(name="k", dim=[1, 6, 8, 16])
    v = g.tensor(name="v", dim=[1, 1, 8, 16])
    g.sdpa(q=q, k=k, v=v, is_inference=True)[0].set_output(True)
    with pytest.raises(cudnn.cudnnGraphNotSupportedError, match="k with 6 heads and v with 1"):
        g.validate()


def test_a_compiled_in_scalar_is_a_number_not_a_string():
    """execute reads a pass-by-value value that dnnc compiles in with
    ``scalar_value``: numbers, one-element arrays and CPU tensors; a string
    (which float() would parse) or a boolean is refused, naming the tensor."""
    import numpy as np
    import torch

    from dnnc.frontend.execute import scalar_value

    g = cudnn.pygraph()
    t = g.tensor(name="alpha", dim=[1, 1, 1, 1], is_pass_by_value=True,
                 data_type=cudnn.data_type.FLOAT)
    assert scalar_value(0.5, t) == 0.5 and scalar_value(2, t) == 2.0
    assert scalar_value(np.array([0.25]), t) == 0.25
    assert scalar_value(torch.full((1, 1, 1, 1), 0.125), t) == 0.125
    for bad in ("1e-5", b"1", True):
        with pytest.raises(cudnn.InvalidVariantPackError,
                           match=r"pass-by-value tensor 'alpha'.*expected one number.*got "
                                 + type(bad).__name__):
            scalar_value(bad, t)
