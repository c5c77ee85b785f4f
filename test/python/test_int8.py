"""int8 and uint8 tensors: the types, the graph's typed errors, casts, and
convolution and matmul with exact int32 accumulation, on the CPU back end
against NumPy sums in int64 (computed here, not by dnnc's reference) and
against dnnc's reference; the runtime's and the artifact's spellings."""

import numpy as np
import pytest

import dnnc
from dnnc import compiler, graph_mlir
from dnnc.dialect.types import as_data_type, data_type, from_mlir
from dnnc.errors import GraphError, VerificationError

I8, U8, I32 = data_type.INT8, data_type.UINT8, data_type.INT32


def _rng():
    return np.random.default_rng(7)


def _int8(rng, shape):
    return rng.integers(-128, 128, shape).astype(np.int8)


def _uint8(rng, shape):
    return rng.integers(0, 256, shape).astype(np.uint8)


def _wrap32(x):
    """An int64 array as int32 accumulators hold it (two's complement wrap)."""
    return ((np.asarray(x, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int64)


def _conv_int64(x, w, pad, stride=(1, 1), dilation=(1, 1), groups=1):
    """2-D cross-correlation of (N, C, H, W) by (K, C/groups, R, S) in int64."""
    x, w = x.astype(np.int64), w.astype(np.int64)
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    p = (h + 2 * pad[0] - dilation[0] * (r - 1) - 1) // stride[0] + 1
    q = (wd + 2 * pad[1] - dilation[1] * (s - 1) - 1) // stride[1] + 1
    y = np.zeros((n, k, p, q), np.int64)
    kg = k // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(r):
            for j in range(s):
                h0, w0 = i * dilation[0], j * dilation[1]
                window = xs[:, :, h0:h0 + (p - 1) * stride[0] + 1:stride[0],
                            w0:w0 + (q - 1) * stride[1] + 1:stride[1]]
                y[:, g * kg:(g + 1) * kg] += np.einsum(
                    "nchw,kc->nkhw", window, w[g * kg:(g + 1) * kg, :, i, j])
    return y


def _byte_round(x, dtype):
    """NumPy's int8 / uint8 of float values: to nearest even, saturated, NaN 0."""
    info = np.iinfo(dtype)
    x = np.asarray(x, np.float64)
    return np.where(np.isnan(x), 0, np.clip(np.rint(x), info.min, info.max)).astype(dtype)


def _run(g, inputs):
    """The graph on the CPU back end and on dnnc's reference."""
    got = g.compile(target="cpu")(inputs)
    ref = g.execute_reference(inputs)
    return got, ref


# -- the types -------------------------------------------------------------------

def test_int8_types_are_storage_types_apart_from_booleans():
    for spelling in ("int8", "si8", np.int8, np.dtype(np.int8)):
        assert as_data_type(spelling) is I8
    for spelling in ("uint8", "ui8", np.uint8):
        assert as_data_type(spelling) is U8
    assert I8.mlir == "si8" and U8.mlir == "ui8" and from_mlir("si8") is I8
    assert I8 is not data_type.BOOLEAN and from_mlir("i1") is data_type.BOOLEAN
    assert I8.numpy == np.int8 and U8.numpy == np.uint8 and I8.itemsize == 1
    assert I8.is_storage and I8.is_integer and not I8.is_float
    assert I32.is_integer and not data_type.BOOLEAN.is_integer
    with pytest.raises(GraphError, match="unsupported element type i8"):
        from_mlir("i8")  # booleans' lowered storage, never a dnn type


def test_int8_conv_defaults_to_int32_compute_and_round_trips():
    g = dnnc.Graph()
    x = g.tensor(name="x", dim=[1, 4, 5, 5], data_type=I8)
    w = g.tensor(name="w", dim=[2, 4, 3, 3], data_type=I8)
    y = g.conv_fprop(x, w).set_output(True).set_data_type(I32)
    assert y.get_data_type() is I32
    text = g.to_mlir()
    assert "compute_type = i32" in text and "tensor<1x4x5x5xsi8>" in text
    assert dnnc.Graph.from_mlir(text).to_mlir() == text


@pytest.mark.parametrize("build, message", [
    (lambda g, x, w, f: g.conv_fprop(x, f),
     r"'dnn.conv_fprop' op operand 'w': expected si8 or ui8 \(as operand 'x'\), got bf16"),
    (lambda g, x, w, f: g.conv_fprop(x, w, compute_data_type="float"),
     r"'dnn.conv_fprop' op attribute 'compute_type': expected i32 \(the accumulation of si8 / "
     r"ui8 operands\), got f32"),
    (lambda g, x, w, f: g.matmul(f, f, compute_data_type="int32"),
     r"'dnn.matmul' op attribute 'compute_type': i32 takes si8 or ui8 operands: expected f32 "
     r"or tf32 for operand 'a' of bf16, got i32"),
    (lambda g, x, w, f: g.relu(x),
     r"'dnn.relu' op operand 'x': expected a floating-point tensor, got si8"),
    (lambda g, x, w, f: g.add(f, x),
     r"'dnn.add' op operand 'b': expected a floating-point tensor, got si8"),
    (lambda g, x, w, f: g.conv_dgrad(x, w, [1, 4, 7, 7]),
     r"'dnn.conv_dgrad' op operand 'dy': expected a floating-point tensor, got si8"),
    (lambda g, x, w, f: g.reduction(x, "sum", [1]),
     r"'dnn.reduction' op operand 'x': expected a floating-point tensor, got si8"),
])
def test_ops_that_cannot_take_int8_say_so(build, message):
    g = dnnc.Graph()
    x = g.tensor(name="x", dim=[1, 4, 5, 5], data_type=I8)
    w = g.tensor(name="w", dim=[4, 4, 3, 3], data_type=I8)
    f = g.tensor(name="f", dim=[4, 4, 3, 3], data_type="bf16")
    with pytest.raises(VerificationError, match=message):
        build(g, x, w, f)


def test_int32_compute_type_of_the_graph_api():
    g = dnnc.Graph()
    a = g.tensor(name="a", dim=[2, 3], data_type=U8)
    b = g.tensor(name="b", dim=[3, 2], data_type=I8)
    g.matmul(a, b, compute_data_type="int32").set_output(True)
    assert "compute_type = i32" in g.to_mlir()
    with pytest.raises(GraphError, match="compute_data_type: expected float, tf32 or int32, "
                                         "got f16"):
        g.matmul(a, b, compute_data_type="f16")


# -- casts --------------------------------------------------------------------------

def test_casts_to_and_from_int8_on_the_cpu():
    values = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, 127.5, 300.0, -128.5, -1e9,
                       np.nan, np.inf, -np.inf, 3.7, -3.7], np.float32)
    ints = np.array([-2**31, -129, -128, -1, 0, 1, 127, 128, 255, 256, 2**31 - 1, 5, 77, -77,
                     1000, -1000], np.int32)
    g = dnnc.Graph()
    f = g.tensor(name="f", dim=[16], data_type="float")
    i = g.tensor(name="i", dim=[16], data_type=I32)
    b = g.tensor(name="b", dim=[16], data_type=I8)
    u = g.tensor(name="u", dim=[16], data_type=U8)
    outs = {
        "f_i8": g.cast(f, I8), "f_u8": g.cast(f, U8), "i_i8": g.cast(i, I8),
        "i_u8": g.cast(i, U8), "b_i32": g.cast(b, I32), "b_u8": g.cast(b, U8),
        "u_i8": g.cast(u, I8), "b_f32": g.cast(b, "float"), "u_bf16": g.cast(u, "bf16"),
        "b_bool": g.cast(b, "bool"), "bool_i8": g.cast(g.cmp_gt(f, g.constant(0.0)), I8),
        "c_i8": g.add(g.cast(b, "float"), g.constant(0.0)),
    }
    outs["c_i8"].set_data_type(I8)
    for name, t in outs.items():
        t.set_name(name).set_output(True)
    rng = _rng()
    bv, uv = _int8(rng, [16]), _uint8(rng, [16])
    got, ref = _run(g, {"f": values, "i": ints, "b": bv, "u": uv})
    expect = {
        "f_i8": _byte_round(values, np.int8), "f_u8": _byte_round(values, np.uint8),
        "i_i8": np.clip(ints, -128, 127), "i_u8": np.clip(ints, 0, 255),
        "b_i32": bv.astype(np.int32), "b_u8": np.clip(bv, 0, 255), "u_i8": np.clip(uv, 0, 127),
        "b_f32": bv.astype(np.float32), "u_bf16": uv.astype(np.float32), "b_bool": bv != 0,
        "bool_i8": (values > 0).astype(np.int8), "c_i8": bv,
    }
    for name, want in expect.items():
        assert got[name].dtype == outs[name].get_data_type().numpy, name
        np.testing.assert_array_equal(np.asarray(got[name]).astype(np.float64),
                                      np.asarray(want).astype(np.float64), err_msg=name)
        np.testing.assert_array_equal(np.asarray(ref[name]).astype(np.float64),
                                      np.asarray(want).astype(np.float64), err_msg=name)


def test_int8_next_to_booleans_keeps_both():
    """i1 is stored as i8 once lowered: int8 must not be read as a boolean,
    nor a boolean as int8, in one kernel or across kernels."""
    g = dnnc.Graph()
    b = g.tensor(name="b", dim=[3, 8], data_type=I8)
    m = g.tensor(name="m", dim=[3, 8], data_type="bool")
    moved = g.transpose(g.slice(b, [slice(0, 3), slice(0, 8, 2)]), [1, 0]).set_name("moved")
    both = g.concat([b, g.cast(m, I8)], 0).set_name("both")
    chosen = g.select(m, g.cast(b, "float"), g.constant(-1000.0))
    chosen = g.cast(chosen, I8).set_name("chosen")
    flags = g.cast(g.reshape(b, [24]), "bool").set_name("flags")
    for t in (moved, both, chosen, flags):
        t.set_output(True)
    rng = _rng()
    bv, mv = _int8(rng, [3, 8]), rng.random([3, 8]) < 0.5
    got, ref = _run(g, {"b": bv, "m": mv})
    expect = {"moved": bv[:, ::2].T, "both": np.concatenate([bv, mv.astype(np.int8)]),
              "chosen": np.where(mv, bv, -128), "flags": bv.reshape(24) != 0}
    for name, want in expect.items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)
        np.testing.assert_array_equal(ref[name], np.asarray(want).astype(ref[name].dtype),
                                      err_msg=name)


# -- convolution ---------------------------------------------------------------------

@pytest.mark.parametrize("pad, stride, dilation, groups, channels_last", [
    ((1, 1), (1, 1), (1, 1), 1, True),
    ((0, 2), (2, 1), (1, 2), 1, False),
    ((1, 0), (1, 2), (1, 1), 2, True),
])
def test_int8_conv_fprop_is_exact(pad, stride, dilation, groups, channels_last):
    rng = _rng()
    n, c, h, w, k, r, s = 2, 8, 7, 9, 6, 3, 3
    xv, wv = _int8(rng, [n, c, h, w]), _int8(rng, [k, c // groups, r, s])
    g = dnnc.Graph()
    stride_x = [c * h * w, 1, w * c, c] if channels_last else None
    x = g.tensor(name="x", dim=[n, c, h, w], stride=stride_x, data_type=I8)
    wt = g.tensor(name="w", dim=[k, c // groups, r, s], data_type=I8)
    y = g.conv_fprop(x, wt, padding=list(pad), stride=list(stride), dilation=list(dilation))
    y.set_name("y").set_output(True).set_data_type(I32)
    # The same sums read as f32 and saturated to int8 through a relu.
    g.cast(g.conv_fprop(x, wt, padding=list(pad), stride=list(stride),
                        dilation=list(dilation)), "float").set_name("yf").set_output(True)
    q = g.relu(g.cast(g.conv_fprop(x, wt, padding=list(pad), stride=list(stride),
                                   dilation=list(dilation)), "float"))
    q.set_name("q").set_output(True).set_data_type(I8)
    got, ref = _run(g, {"x": xv, "w": wv})
    want = _conv_int64(xv, wv, pad, stride, dilation, groups)
    assert got["y"].dtype == np.int32
    np.testing.assert_array_equal(got["y"], want)
    np.testing.assert_array_equal(got["yf"], want.astype(np.float32))
    np.testing.assert_array_equal(got["q"], np.clip(want, 0, 127))
    for name in ("y", "yf", "q"):
        np.testing.assert_array_equal(ref[name], got[name].astype(np.float64), err_msg=name)


def test_uint8_image_int8_filter_conv_in_convolution_mode():
    rng = _rng()
    xv, wv = _uint8(rng, [1, 5, 6, 6]), _int8(rng, [3, 5, 2, 3])
    g = dnnc.Graph()
    x = g.tensor(name="x", dim=[1, 5, 6, 6], data_type=U8)
    w = g.tensor(name="w", dim=[3, 5, 2, 3], data_type=I8)
    g.conv_fprop(x, w, padding=[1, 1], conv_mode="convolution").set_name("y") \
        .set_output(True).set_data_type(I32)
    got, ref = _run(g, {"x": xv, "w": wv})
    want = _conv_int64(xv, wv[:, :, ::-1, ::-1], (1, 1))
    np.testing.assert_array_equal(got["y"], want)
    np.testing.assert_array_equal(ref["y"], want)


# -- matmul ----------------------------------------------------------------------------

def test_int8_matmul_is_exact_with_broadcast_and_strides():
    rng = _rng()
    av, bv, cv = _int8(rng, [2, 1, 5, 33]), _uint8(rng, [3, 33, 4]), _int8(rng, [33, 7])
    g = dnnc.Graph()
    a = g.tensor(name="a", dim=[2, 1, 5, 33], data_type=I8)
    b = g.tensor(name="b", dim=[3, 33, 4], data_type=U8)
    # c stored transposed (7 x 33), read as 33 x 7.
    c = g.tensor(name="c", dim=[33, 7], stride=[1, 33], data_type=I8)
    g.matmul(a, b).set_name("ab").set_output(True).set_data_type(I32)
    g.matmul(a, c).set_name("ac_f32").set_output(True).set_data_type("float")
    g.matmul(a, c).set_name("ac_bf16").set_output(True).set_data_type("bf16")
    g.matmul(a, c).set_name("ac_i8").set_output(True).set_data_type(I8)
    got, ref = _run(g, {"a": av, "b": bv, "c": cv})
    a64 = av.astype(np.int64)
    ab = np.matmul(a64, bv.astype(np.int64))
    ac = np.matmul(a64, cv.astype(np.int64))
    np.testing.assert_array_equal(got["ab"], ab)
    np.testing.assert_array_equal(got["ac_f32"], ac.astype(np.float32))
    np.testing.assert_array_equal(got["ac_bf16"].astype(np.float64),
                                  ac.astype(np.float32).astype(got["ac_bf16"].dtype)
                                  .astype(np.float64))
    np.testing.assert_array_equal(got["ac_i8"], np.clip(ac, -128, 127))
    for name in got:
        np.testing.assert_array_equal(ref[name], got[name].astype(np.float64), err_msg=name)


def test_int32_accumulation_wraps_past_two_to_the_31():
    """K = 140000 products of 127 * 127 overflow int32: the accumulator wraps
    (as s32 adds do on the GPU) and so does the reference."""
    k = 140000
    g = dnnc.Graph()
    a = g.tensor(name="a", dim=[1, k], data_type=I8)
    b = g.tensor(name="b", dim=[k, 2], data_type=I8)
    g.matmul(a, b).set_name("c").set_output(True).set_data_type(I32)
    av = np.full([1, k], 127, np.int8)
    bv = np.stack([np.full(k, 127, np.int8), np.full(k, -1, np.int8)], axis=1)
    got, ref = _run(g, {"a": av, "b": bv})
    exact = np.array([[127 * 127 * k, -127 * k]], np.int64)
    assert exact[0, 0] > 2**31
    np.testing.assert_array_equal(got["c"], _wrap32(exact))
    np.testing.assert_array_equal(ref["c"], _wrap32(exact))


# -- packages and the runtime -------------------------------------------------------

@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_int8_graph_compiles_for_the_gpu(arch, tmp_path):
    g = dnnc.Graph()
    x = g.tensor(name="x", dim=[2, 8, 6, 6], stride=[288, 1, 48, 8], data_type=I8)
    w = g.tensor(name="w", dim=[4, 8, 3, 3], data_type=I8)
    a = g.tensor(name="a", dim=[5, 16], data_type=U8)
    b = g.tensor(name="b", dim=[16, 3], data_type="bf16")
    g.conv_fprop(x, w, padding=[1, 1]).set_name("y").set_output(True).set_data_type(I32)
    g.matmul(g.cast(a, "bf16"), b).set_name("c").set_output(True).set_data_type(I8)
    package = compiler.compile_module(graph_mlir.to_module(g),
                                      compiler.Options(target="cuda", arch=arch))
    manifest = package.manifest
    assert [t["dtype"] for t in manifest["inputs"]] == ["si8", "si8", "ui8", "bf16"]
    assert [t["dtype"] for t in manifest["outputs"]] == ["i32", "si8"]
    package.save(str(tmp_path / "int8.dnnpkg"))
    import dnnc_runtime

    exe = dnnc_runtime.load(str(tmp_path / "int8.dnnpkg"))
    assert [s.dtype for s in exe.inputs] == ["si8", "si8", "ui8", "bf16"]
