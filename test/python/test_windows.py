"""The simt-window strategy (dnnc/codegen/gpu/window/windows.py, dnn-pool-windows)
without a GPU.

* Numerics: a window program's launch runs on the CPU (test_colwise's
  ``emulate_launches``) against the CPU back end, bit for bit, for max (with a fused
  relu) and average pooling with and without the padding counted, 2-D and
  3-D, NCHW and channels-last, channel counts that take 8-, 4- and 1-wide
  vectors, f32 / bf16 / f16, with the heuristics' tiles, one output a
  thread, and tiles that do not divide the output. A channels-last graph
  tensor is fed and read as its memory holds it (the CPU executable binds
  row-major buffers).
* The benchmark's channels-last max pool: one kernel, no layout copies, no
  workspace; a thread's 2 x 2 outputs read the 25 x pixels of their
  windows as one 16-byte load each and store 8 channels with one each;
  ptxas finds no spills. A tile the kernel cannot take is dropped, and the
  kernel's reason says why.
"""

import numpy as np
import pytest

import dnnc
import dnnc.graph_mlir
from dnnc import compiler
from dnnc.codegen.gpu import ptxas
from dnnc.dialect.types import data_type as dt
from refutil import typed
from test_colwise import emulate as colwise_emulate

F32, F16, BF16 = dt.FLOAT, dt.HALF, dt.BFLOAT16
STRATEGY = "simt-window"
PASS = "dnn-pool-windows"
PTXAS = ptxas.find()


def channels_last(dims):
    """Strides of logical (N, C, *spatial) dims stored (N, *spatial, C)."""
    strides, step = [0] * len(dims), dims[1]
    strides[1] = 1
    for d in reversed(range(2, len(dims))):
        strides[d] = step
        step *= dims[d]
    strides[0] = step
    return strides


def emulate(g, config=""):
    """A CpuExecutable of graph ``g`` through the GPU lowering (with the
    config override ``config``), window programs run as loops; also the
    strategies the kernels ended with."""
    return colwise_emulate(g, config, through=PASS)


def _to_memory(x):
    """(N, C, *s) values as a channels-last buffer holds them, shaped (N, C, *s)."""
    order = [0] + list(range(2, x.ndim)) + [1]
    return np.ascontiguousarray(x.transpose(order)).reshape(x.shape)


def _from_memory(buffer):
    """The (N, C, *s) values of a channels-last buffer bound as (N, C, *s)."""
    n, c, *s = buffer.shape
    back = [0, buffer.ndim - 1] + list(range(1, buffer.ndim - 1))
    return np.asarray(buffer).reshape([n] + s + [c]).transpose(back)


POOLS = [
    ([2, 16, 7, 5], dict(window=[3, 2], stride=[2, 1], pre_padding=[1, 0], post_padding=[2, 1])),
    ([1, 7, 5, 3, 7], dict(window=[2, 2, 3], stride=[2, 1, 2], pre_padding=[1, 0, 2],
                           post_padding=[0, 1, 1])),
    ([2, 12, 9, 9], dict(window=[3, 3], stride=[2, 2], padding=[1, 1])),
]


def pools_graph(dtype, dims, attrs, layout):
    g = dnnc.Graph(io_data_type=dtype)
    strides = {"stride": channels_last(dims)} if layout == "nhwc" else {}
    x = g.tensor(name="x", dim=dims, **strides)
    for name, mode, counted in (("max_relu", "max", False), ("avg", "avg", False),
                                ("avg_pad", "avg", True)):
        y = g.pooling(x, mode, count_include_pad=counted, **attrs)
        if mode == "max":
            y = g.relu(y)
        y.set_name(name).set_output(True)
        if layout == "nhwc":
            y.set_stride(channels_last([int(d) for d in y.dim]))
    return g


# Outputs a thread: the heuristics' (2 x 2 where windows overlap), one, and
# 3 x 1 (2-D) or 2 x 3 x 1 (3-D), which divide none of the outputs' H (or D).
TILES = ["", "*=tile:1", "*=tile:2x3x1"]


@pytest.mark.parametrize("tile", TILES, ids=["heuristics", "tile_1", "tile_ragged"])
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("dims, attrs", POOLS, ids=["2d_c16", "3d_c7", "2d_c12"])
@pytest.mark.parametrize("dtype", [F32, BF16, F16], ids=lambda d: d.mlir)
def test_window_programs_match_the_cpu_back_end(dtype, dims, attrs, layout, tile):
    g = pools_graph(dtype, dims, attrs, layout)
    x = np.random.default_rng(5).standard_normal(dims).astype(np.float32)
    x = typed(x, dtype)  # what both executables take
    expected = g.compile(target="cpu")(x=x)
    run, strategies = emulate(g, tile)
    # One kernel per pool, the relu fused into the max pool's.
    assert list(strategies.values()) == [STRATEGY] * 3, strategies
    if layout == "nhwc":
        got = {k: _from_memory(v) for k, v in run(x=_to_memory(x)).items()}
    else:
        got = run(x=x)
    # Bit-identical: the taps are folded in the CPU back end's order, in f32,
    # whatever the tile.
    for name, want in expected.items():
        np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want), err_msg=name)


def maxpool_nhwc(dtype=BF16, dims=(32, 64, 112, 112)):
    """The benchmark's channels-last max pool 3x3 / 2, padding 1."""
    g = dnnc.Graph(name="maxpool", io_data_type=dtype)
    x = g.tensor(name="x", dim=list(dims), stride=channels_last(list(dims)))
    y = g.pooling(x, "max", window=3, stride=2, padding=1)
    y.set_output(True).set_stride(channels_last([int(d) for d in y.dim]))
    return g


def _entry(package, name):
    text = package.ptx[package.ptx.index(f".entry {name}("):]
    return text[:text.index("\n}\n")]


def test_channels_last_max_pool_is_one_kernel_without_copies():
    package = compiler.compile_cuda(maxpool_nhwc(), "sm_90a", cache=False)
    m = package.manifest
    (kernel,) = m["kernels"]
    assert m["workspace_bytes"] == 0
    # 32 x 56 x 56 pixels / 2 x 2 a thread x 64 channels / 8 per thread,
    # 256 threads a block.
    assert (kernel["strategy"], kernel["grid"], kernel["block"]) == \
        (STRATEGY, [32 * 28 * 28 * 8 // 256, 1, 1], [256, 1, 1])
    assert kernel["config"]["tile"] == [2, 2]
    ops = [line.split()[0] for line in _entry(package, kernel["entry"]).splitlines()
           if line.startswith("\t")]
    # 5 x 5 x pixels for the 4 windows' 36 taps.
    assert ops.count("ld.global.v4.b32") == 25
    assert ops.count("st.global.v4.b32") == 4
    if PTXAS is None:
        return
    resources, _ = ptxas.assemble_cubin(package.ptx, "sm_90a")
    for info in resources.values():
        assert info.spill_stores == 0 and info.spill_loads == 0


def test_one_output_a_thread_when_asked():
    package = compiler.compile_cuda(maxpool_nhwc(), "sm_90a", cache=False, config="*=tile:1")
    (kernel,) = package.manifest["kernels"]
    assert kernel["grid"] == [32 * 56 * 56 * 8 // 256, 1, 1]
    ops = [line.split()[0] for line in _entry(package, kernel["entry"]).splitlines()
           if line.startswith("\t")]
    assert ops.count("ld.global.v4.b32") == 9 and ops.count("st.global.v4.b32") == 1


def test_a_tile_the_kernel_cannot_take_is_dropped():
    # 8 x 8 outputs of 3 x 3 / 2 would load 17 x 17 pixels a thread.
    package = compiler.compile_cuda(maxpool_nhwc(dims=(2, 64, 20, 20)), "sm_90a", cache=False,
                                    config="*=tile:8x8")
    (kernel,) = package.manifest["kernels"]
    assert "tile" not in kernel["config"]
    assert kernel["reason"].startswith("tile 8x8 loads 289 x pixels a thread: expected at "
                                       "most 64: one output a thread; heuristics: user "
                                       "override tile=")


def test_nchw_threads_run_along_w():
    # Channels are not contiguous: a thread per output element, W fastest,
    # scalar loads; the row-major input needs no copy either.
    g = dnnc.Graph(name="maxpool", io_data_type=F32)
    x = g.tensor(name="x", dim=[4, 8, 32, 32])
    g.pooling(x, "avg", window=2, stride=2).set_output(True)
    package = compiler.compile_cuda(g, "sm_90a", cache=False)
    (kernel,) = package.manifest["kernels"]
    # 8192 outputs: blocks of 128 (simt-generic's rule for few threads).
    assert (kernel["strategy"], kernel["grid"], kernel["block"]) == \
        (STRATEGY, [4 * 8 * 16 * 16 // 128, 1, 1], [128, 1, 1])
    ops = [line.split()[0] for line in _entry(package, kernel["entry"]).splitlines()
           if line.startswith("\t")]
    assert ops.count("ld.global.b32") == 4 and ops.count("st.global.b32") == 1
