"""Pooling backward on the simt-window strategy
(dnnc/codegen/gpu/window/gradients.py) without a GPU.

* Numerics: the gathered dx kernels run on the CPU (test_windows'
  ``emulate``) and must equal the CPU back end bit for bit (the same
  summation order), itself checked against the NumPy reference here:
  max (small integers, so ties decide; a row of -inf windows; a NaN) and
  average with and without the padding counted, 2-D and 3-D, NCHW and
  channels-last, f32 and bf16.
* The benchmark's channels-last max and average pool gradients: one kernel,
  no layout copies, no workspace, a thread per tile of 2 x 2 pixels, its
  loads and a store per pixel 16 bytes wide, no atomics, no spills.
* A max gradient that would unroll too many taps stays on simt-generic.
* A ``tile`` override (a forward's outputs a thread) is dropped, its reason
  saying why: the gradient's tile is its stride's.
"""

import numpy as np
import pytest

import dnnc
from dnnc import compiler
from dnnc.codegen.gpu import ptxas
from dnnc.dialect.types import data_type as dt
from dnnc.heuristics import window as window_rules
from refutil import typed
from test_windows import POOLS, PTXAS, STRATEGY, _entry, _from_memory, _to_memory, \
    channels_last, emulate

F32, BF16 = dt.FLOAT, dt.BFLOAT16
MODES = (("max", "max", False), ("avg", "avg", False), ("avg_pad", "avg", True))
# The forward's pools, and strides past the window (rows no window covers)
# with 3-row tiles.
GRADIENT_POOLS = POOLS + [
    ([2, 8, 8, 7], dict(window=[2, 1], stride=[3, 2], pre_padding=[1, 0],
                        post_padding=[0, 0])),
]


def gradients_graph(dtype, dims, attrs, layout, name="pool_bwd"):
    """dx of max, avg and avg counting the padding, from one x and dy."""
    g = dnnc.Graph(name=name, io_data_type=dtype)
    nhwc = layout == "nhwc"
    x = g.tensor(name="x", dim=list(dims), **({"stride": channels_last(list(dims))} if nhwc
                                              else {}))
    yd = [int(s) for s in g.pooling(x, "max", **attrs).dim]
    dy = g.tensor(name="dy", dim=yd, **({"stride": channels_last(yd)} if nhwc else {}))
    for label, mode, counted in MODES:
        dx = g.pooling_backward(dy, x, mode, count_include_pad=counted, **attrs)
        dx.set_name(label).set_output(True)
        if nhwc:
            dx.set_stride(channels_last(list(dims)))
    return g, yd


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("dims, attrs", GRADIENT_POOLS,
                         ids=["2d_c16", "3d_c7", "2d_c12", "2d_stride_past_window"])
@pytest.mark.parametrize("dtype", [F32, BF16], ids=lambda d: d.mlir)
def test_gathered_gradients_equal_the_cpu_back_end(dtype, dims, attrs, layout):
    g, yd = gradients_graph(dtype, dims, attrs, layout)
    rng = np.random.default_rng(7)
    # Small integers: many ties, so the first maximum must win.
    x = rng.integers(-2, 3, dims).astype(np.float32)
    x[0, 1] = -np.inf  # windows of -inf alone: their first real tap wins
    x[(0, 2) + (1,) * (len(dims) - 2)] = np.nan  # a NaN beats every number
    dy = rng.standard_normal(yd).astype(np.float32)
    x, dy = typed(x, dtype), typed(dy, dtype)  # what both executables take
    expected = g.compile(target="cpu")(x=x, dy=dy)
    reference = g.execute_reference({"x": x, "dy": dy})
    for name, want in reference.items():  # one rounding of dx (f32 sums here)
        e = np.asarray(expected[name], np.float64)
        tol = (1e-5 if dtype is F32 else 8e-3) * np.maximum(1.0, np.abs(want))
        assert np.all(np.abs(e - want) <= tol), (name, np.abs(e - want).max())
    run, strategies = emulate(g)
    assert list(strategies.values()) == [STRATEGY] * 3, strategies
    if layout == "nhwc":
        got = {k: _from_memory(v) for k, v in run(x=_to_memory(x), dy=_to_memory(dy)).items()}
    else:
        got = run(x=x, dy=dy)
    for name, want in expected.items():
        np.testing.assert_array_equal(np.asarray(got[name], np.float64),
                                      np.asarray(want, np.float64), err_msg=name)


def _pool_backward(mode, dims, window, stride, padding):
    """The benchmark's channels-last bf16 pooling gradient."""
    g = dnnc.Graph(name=f"{mode}pool_backward", io_data_type=BF16)
    x = g.tensor(name="x", dim=list(dims), stride=channels_last(list(dims)))
    yd = [int(s) for s in g.pooling(x, mode, window=window, stride=stride,
                                     padding=padding).dim]
    dy = g.tensor(name="dy", dim=yd, stride=channels_last(yd))
    dx = g.pooling_backward(dy, x, mode, window=window, stride=stride, padding=padding)
    dx.set_output(True).set_stride(channels_last(list(dims)))
    return g


@pytest.mark.parametrize("mode, dims, window, stride, padding, tiles, loads", [
    # Tiles of 2 x 2 pixels: (112 - 1 + 1) / 2 + 1 = 57 a dim, 2 x 2 covering
    # windows: 4 dy loads, each with its first real tap and 9 taps of x.
    ("max", (32, 64, 112, 112), 3, 2, 1, 57, 4 * (1 + 1 + 9)),
    # One covering window: dy alone.
    ("avg", (32, 128, 56, 56), 2, 2, 0, 28, 1),
])
def test_channels_last_gradient_is_one_kernel_without_copies(mode, dims, window, stride,
                                                              padding, tiles, loads):
    package = compiler.compile_cuda(_pool_backward(mode, dims, window, stride, padding),
                                    "sm_90a", cache=False)
    m = package.manifest
    (kernel,) = m["kernels"]
    assert m["workspace_bytes"] == 0
    # A thread per tile and 8 channels, 256 threads a block.
    threads = dims[0] * tiles * tiles * dims[1] // 8
    assert (kernel["strategy"], kernel["grid"], kernel["block"]) == \
        (STRATEGY, [-(-threads // 256), 1, 1], [256, 1, 1])
    ops = [line.split()[0] for line in _entry(package, kernel["entry"]).splitlines()
           if line.startswith("\t")]
    assert ops.count("ld.global.v4.b32") == loads
    assert ops.count("st.global.v4.b32") == stride * stride  # the tile's pixels
    assert not [o for o in ops if o.startswith("atom")]
    if PTXAS is None:
        return
    resources, _ = ptxas.assemble_cubin(package.ptx, "sm_90a")
    for info in resources.values():
        assert info.spill_stores == 0 and info.spill_loads == 0


@pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
@pytest.mark.parametrize("dims, attrs", GRADIENT_POOLS,
                         ids=["2d_c16", "3d_c7", "2d_c12", "2d_stride_past_window"])
def test_channels_last_gradients_do_not_spill(dims, attrs):
    # 64 channels: 16-byte vectors but where a max gradient's windows would
    # hold too many registers (the 3-D window's 8 covering windows).
    dims = [dims[0], 64] + dims[2:]
    g, _ = gradients_graph(BF16, dims, attrs, "nhwc")
    resources, _ = ptxas.assemble_cubin(compiler.compile_cuda(g, "sm_90a", cache=False).ptx,
                                        "sm_90a")
    for name, info in resources.items():
        assert info.spill_stores == 0 and info.spill_loads == 0, (name, info)


def test_a_heavily_overlapping_max_gradient_stays_on_simt_generic():
    # 5 x 5 / 1: 25 covering windows of 25 taps, 625 loads a thread.
    assert window_rules.gather_taps("max", (5, 5), (1, 1)) == 625 > \
        window_rules.MAX_GATHER_TAPS
    g, _ = gradients_graph(F32, [1, 4, 9, 9], dict(window=[5, 5], stride=[1, 1],
                                                   padding=[2, 2]), "nchw")
    package = compiler.compile_cuda(g, "sm_90a", cache=False)
    strategies = [k["strategy"] for k in package.manifest["kernels"]]
    # max: simt-generic's fill and gather loops; avg: a window program each.
    assert strategies == ["simt-generic"] * 2 + [STRATEGY] * 2, strategies


def test_a_tile_override_is_dropped_on_a_gradient():
    package = compiler.compile_cuda(_pool_backward("avg", (2, 64, 8, 8), 2, 2, 0), "sm_90a",
                                    cache=False, config="*=tile:2x2")
    (kernel,) = package.manifest["kernels"]
    assert kernel["strategy"] == STRATEGY and "tile" not in kernel["config"]
    assert kernel["reason"].startswith("tile 2x2 applies to a forward pool only: dropped; "
                                       "heuristics: user override tile=")
