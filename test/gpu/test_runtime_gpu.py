"""dnnc_runtime on a real GPU, with hand-written PTX in hand-built .dnnpkg files.

Kernels (PTX for sm_80, which the driver JIT-compiles for any later GPU):
- ``scale2(x, y, n: u64)``: y[i] = 2 x[i] for i < n;
- ``add_c(a, y, c: f32, n: u32)``: y[i] = a[i] + c, passed through dynamic
  shared memory at byte 98304, so it fails unless the runtime opted the
  kernel in to > 48 KiB;
- ``spin(ns: u64)``: waits ``ns`` nanoseconds by the global timer, so that
  calls on several streams overlap for as long as a test needs.

Outputs are NaN-prefilled wherever the caller provides them, so an unwritten
element fails the comparison. Run: ``pytest test/gpu`` (skipped without a GPU).
"""

import io
import json
import math
import statistics
import time
import zipfile

import numpy as np
import pytest

import dnnc_runtime
from dnnc_runtime import ArgumentError, ArtifactError, CudaError

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(
    torch is None or not torch.cuda.is_available(),
    reason="PyTorch is not installed" if torch is None else "PyTorch sees no CUDA device")

PTX = r"""
.version 7.0
.target sm_80
.address_size 64

.extern .shared .align 16 .b8 smem[];

.visible .entry scale2(
    .param .u64 scale2_param_0,
    .param .u64 scale2_param_1,
    .param .u64 scale2_param_2
)
{
    .reg .pred  %p<2>;
    .reg .f32   %f<3>;
    .reg .b32   %r<5>;
    .reg .b64   %rd<10>;

    ld.param.u64        %rd1, [scale2_param_0];
    ld.param.u64        %rd2, [scale2_param_1];
    ld.param.u64        %rd3, [scale2_param_2];
    mov.u32             %r1, %ctaid.x;
    mov.u32             %r2, %ntid.x;
    mov.u32             %r3, %tid.x;
    mad.lo.s32          %r4, %r1, %r2, %r3;
    cvt.u64.u32         %rd4, %r4;
    setp.ge.u64         %p1, %rd4, %rd3;
    @%p1 bra            SCALE_DONE;
    cvta.to.global.u64  %rd5, %rd1;
    shl.b64             %rd6, %rd4, 2;
    add.s64             %rd7, %rd5, %rd6;
    ld.global.f32       %f1, [%rd7];
    add.f32             %f2, %f1, %f1;
    cvta.to.global.u64  %rd8, %rd2;
    add.s64             %rd9, %rd8, %rd6;
    st.global.f32       [%rd9], %f2;
SCALE_DONE:
    ret;
}

.visible .entry add_c(
    .param .u64 add_c_param_0,
    .param .u64 add_c_param_1,
    .param .f32 add_c_param_2,
    .param .u32 add_c_param_3
)
{
    .reg .pred  %p<2>;
    .reg .f32   %f<4>;
    .reg .b32   %r<9>;
    .reg .b64   %rd<8>;

    ld.param.u64        %rd1, [add_c_param_0];
    ld.param.u64        %rd2, [add_c_param_1];
    ld.param.f32        %f1, [add_c_param_2];
    ld.param.u32        %r5, [add_c_param_3];
    mov.u32             %r1, %ctaid.x;
    mov.u32             %r2, %ntid.x;
    mov.u32             %r3, %tid.x;
    mad.lo.s32          %r4, %r1, %r2, %r3;
    setp.ge.u32         %p1, %r4, %r5;
    @%p1 bra            ADD_DONE;
    mul.wide.u32        %rd3, %r4, 4;
    cvta.to.global.u64  %rd4, %rd1;
    add.s64             %rd5, %rd4, %rd3;
    ld.global.f32       %f2, [%rd5];
    // round-trip through dynamic shared memory beyond 96 KiB
    mov.u32             %r6, smem;
    shl.b32             %r7, %r3, 2;
    add.u32             %r8, %r6, %r7;
    st.shared.f32       [%r8+98304], %f2;
    ld.shared.f32       %f3, [%r8+98304];
    add.f32             %f3, %f3, %f1;
    cvta.to.global.u64  %rd6, %rd2;
    add.s64             %rd7, %rd6, %rd3;
    st.global.f32       [%rd7], %f3;
ADD_DONE:
    ret;
}

.visible .entry spin(
    .param .u64 spin_param_0
)
{
    .reg .pred  %p<2>;
    .reg .b64   %rd<5>;

    ld.param.u64        %rd1, [spin_param_0];
    mov.u64             %rd2, %globaltimer;
SPIN:
    mov.u64             %rd3, %globaltimer;
    sub.s64             %rd4, %rd3, %rd2;
    setp.lt.u64         %p1, %rd4, %rd1;
    @%p1 bra            SPIN;
    ret;
}
"""


def tensor(name, dims, strides):
    return {"name": name, "dims": dims, "strides": strides, "dtype": "f32"}


def extent(dims, strides):
    return 1 + sum((d - 1) * s for d, s in zip(dims, strides))


def scale_manifest(dims=(1000,), strides=(1,), arch="sm_80"):
    """y = 2 x; the kernel runs over every element the layout spans."""
    n = extent(dims, strides)
    return {
        "format_version": 1, "dnnc_version": "0.1.0", "mlir_version": "22.1.8",
        "arch": arch, "graph": "scale",
        "inputs": [tensor("x", list(dims), list(strides))],
        "outputs": [tensor("y", list(dims), list(strides))],
        "workspace_bytes": 0,
        "buffers": [{"kind": "input", "index": 0}, {"kind": "output", "index": 0}],
        "kernels": [{"name": "scale_k0", "entry": "scale2", "strategy": "simt-pointwise",
                     "grid": [math.ceil(n / 128), 1, 1], "block": [128, 1, 1], "shared_bytes": 0,
                     "args": [{"kind": "buffer", "buffer": 0, "byte_offset": 0},
                              {"kind": "buffer", "buffer": 1, "byte_offset": 0},
                              {"kind": "scalar", "type": "i64", "value": n}]}],
    }


def two_kernel_manifest(n=1000):
    """y = 2 x + 1: scale2 into a workspace slice, add_c (100 KB shared) out of it,
    then a kernel with an empty grid, which must be skipped."""
    ws_offset, ws_bytes = 512, 4 * n
    return {
        "format_version": 1, "arch": "sm_80", "graph": "two",
        "inputs": [tensor("x", [n], [1])], "outputs": [tensor("y", [n], [1])],
        "workspace_bytes": ws_offset + ws_bytes,
        "buffers": [{"kind": "input", "index": 0}, {"kind": "output", "index": 0},
                    {"kind": "workspace", "offset": ws_offset, "bytes": ws_bytes}],
        "kernels": [
            {"name": "k0_scale", "entry": "scale2", "strategy": "simt-pointwise",
             "grid": [math.ceil(n / 128), 1, 1], "block": [128, 1, 1], "shared_bytes": 0,
             "args": [{"kind": "buffer", "buffer": 0}, {"kind": "buffer", "buffer": 2},
                      {"kind": "scalar", "type": "i64", "value": n}]},
            {"name": "k1_add", "entry": "add_c", "strategy": "simt-generic",
             "grid": [math.ceil(n / 128), 1, 1], "block": [128, 1, 1], "shared_bytes": 100000,
             "args": [{"kind": "buffer", "buffer": 2}, {"kind": "buffer", "buffer": 1},
                      {"kind": "scalar", "type": "f32", "value": 1.0},
                      {"kind": "scalar", "type": "i32", "value": n}]},
            {"name": "k2_empty", "entry": "scale2", "strategy": "simt-generic",
             "grid": [0, 1, 1], "block": [128, 1, 1], "shared_bytes": 0,
             "args": [{"kind": "buffer", "buffer": 0}, {"kind": "buffer", "buffer": 1},
                      {"kind": "scalar", "type": "i64", "value": 0}]},
        ],
    }


def spinning_manifest(n=1 << 20, ns=2_000_000):
    """y = 2 x + 1 as two_kernel_manifest's, with a ``spin`` of ``ns`` between
    the write of the workspace and its read: calls on two streams that
    shared one workspace would read each other's."""
    m = two_kernel_manifest(n)
    m["kernels"].insert(1, {"name": "k_spin", "entry": "spin", "strategy": "simt-generic",
                            "grid": [1, 1, 1], "block": [32, 1, 1], "shared_bytes": 0,
                            "args": [{"kind": "scalar", "type": "i64", "value": ns}]})
    return m


def package(manifest, ptx=PTX):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("manifest.json", json.dumps(manifest))
        z.writestr("kernels.ptx", ptx)
        z.writestr("graph.mlir", "// hand-written test artifact\n")
    return buf.getvalue()


def load(manifest, ptx=PTX):
    return dnnc_runtime.load(package(manifest, ptx))


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# -- NumPy in, NumPy out (no torch needed) --------------------------------------

def test_numpy_roundtrip():
    exe = load(scale_manifest())
    x = rand(1000)
    y = exe(x)
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y, 2 * x)
    out = np.full(1000, np.nan, np.float32)
    assert exe(x, outputs=[out]) is out
    np.testing.assert_array_equal(out, 2 * x)


def test_numpy_padded_layout():
    exe = load(scale_manifest(dims=(10, 100), strides=(128, 1)))
    x = rand(10, 100, seed=1)
    np.testing.assert_array_equal(exe(x), 2 * x)


def test_two_kernels_workspace_and_large_shared_memory_numpy():
    exe = load(two_kernel_manifest())
    assert [k.name for k in exe.plan] == ["k0_scale", "k1_add", "k2_empty"]
    assert "skipped" in str(exe.plan).splitlines()[3]
    x = rand(1000, seed=2)
    np.testing.assert_array_equal(exe(x), 2 * x + 1)
    np.testing.assert_array_equal(exe(x=x), 2 * x + 1)   # workspace reused


def test_bad_ptx_reports_the_jit_log():
    broken = PTX.replace("add.f32             %f2, %f1, %f1;", "add.f32 %f2, %f1, %nosuchreg;")
    exe = load(scale_manifest(), ptx=broken)
    with pytest.raises(CudaError, match="cuModuleLoadDataEx failed") as info:
        exe(rand(1000))
    assert info.value.log, "expected the JIT error log"
    assert "nosuchreg" in info.value.log or "error" in info.value.log.lower()


def test_arch_refused_or_accepted_by_compute_capability():
    from dnnc_runtime import cuda
    device = cuda.get_device(0)
    major, minor = device.capability
    other = "sm_100a" if (major, minor) != (10, 0) else "sm_90a"
    exe = load(scale_manifest(arch=other))
    with pytest.raises(ArtifactError, match=f"built for {other} cannot run on .*compute capability "
                                            f"{major}\\.{minor}"):
        exe(rand(1000))
    exact = load(scale_manifest(arch=cuda.arch_name(device.capability)))
    np.testing.assert_array_equal(exact(rand(1000)), 2 * rand(1000))


# -- torch ------------------------------------------------------------------------

@needs_torch
def test_torch_inputs_and_outputs():
    exe = load(scale_manifest())
    x = torch.from_numpy(rand(1000, seed=3)).cuda()
    y = exe(x)
    assert isinstance(y, torch.Tensor) and y.is_cuda and y.shape == (1000,)
    np.testing.assert_array_equal(y.cpu().numpy(), 2 * x.cpu().numpy())
    out = torch.full_like(x, float("nan"))
    assert exe(x, outputs={"y": out}) is out
    np.testing.assert_array_equal(out.cpu().numpy(), 2 * x.cpu().numpy())


@needs_torch
def test_torch_strided_tensors():
    exe = load(scale_manifest(dims=(10, 100), strides=(128, 1)))
    base = torch.from_numpy(rand(10, 128, seed=4)).cuda()
    x = base[:, :100]
    y = exe(x)
    assert y.stride() == (128, 1)
    np.testing.assert_array_equal(y.cpu().numpy(), 2 * x.cpu().numpy())
    with pytest.raises(ArgumentError, match=r"input 'x': expected strides \[128, 1\]"):
        exe(x.contiguous())


@needs_torch
def test_two_kernels_torch():
    exe = load(two_kernel_manifest())
    x = torch.from_numpy(rand(1000, seed=5)).cuda()
    out = torch.full_like(x, float("nan"))
    exe(x, outputs=[out])
    np.testing.assert_array_equal(out.cpu().numpy(), 2 * x.cpu().numpy() + 1)


@needs_torch
def test_bad_argument_launches_nothing():
    exe = load(scale_manifest())
    x = torch.from_numpy(rand(1001, seed=6)).cuda()[1:]          # 4 bytes off alignment
    out = torch.full((1000,), float("nan"), device="cuda")
    with pytest.raises(ArgumentError, match=r"input 'x': expected an address aligned to 16 bytes"):
        exe(x, outputs=[out])
    with pytest.raises(ArgumentError, match=r"output 'y': expected dtype f32"):
        exe(x.clone(), outputs=[out.half()])
    torch.cuda.synchronize()
    assert torch.isnan(out).all()


@needs_torch
def test_runs_on_the_current_torch_stream_or_the_given_one():
    exe = load(scale_manifest())
    x = torch.zeros(1000, device="cuda")
    exe(x)                                                         # prepare outside the test
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(20_000_000)   # keep the side stream busy: wrong-stream launches read 0
        x.fill_(3.0)
        y = exe(x)
    side.synchronize()
    assert (y == 6.0).all()

    out = torch.full_like(x, float("nan"))
    with torch.cuda.stream(side):
        torch.cuda._sleep(20_000_000)
        x.fill_(5.0)
    exe(x, outputs=[out], stream=side)
    side.synchronize()
    assert (out == 10.0).all()


@needs_torch
def test_cuda_graph_capture_and_replay():
    exe = load(two_kernel_manifest())
    x = torch.from_numpy(rand(1000, seed=7)).cuda()
    out = torch.full_like(x, float("nan"))
    exe(x, outputs=[out])                 # the first call loads the kernels: outside capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        exe(x, outputs=[out])
        allocated = exe(x)                # an output from the graph's memory pool
    for seed in (8, 9):
        x.copy_(torch.from_numpy(rand(1000, seed=seed)))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        want = 2 * x.cpu().numpy() + 1
        np.testing.assert_array_equal(out.cpu().numpy(), want)
        np.testing.assert_array_equal(allocated.cpu().numpy(), want)


@needs_torch
def test_repeated_addresses_replay_a_graph_of_the_launches(monkeypatch):
    """The third call in a row on the same tensors (the fast path's second)
    captures the plan's launches; later ones launch that graph, reading the
    inputs' current contents; other addresses launch kernel by kernel."""
    from dnnc_runtime import replay

    monkeypatch.setattr(replay, "MIN_LAUNCHES", 1)      # the plan here launches two kernels
    exe = load(two_kernel_manifest())
    exe.graph_replay = True
    x = torch.from_numpy(rand(1000, seed=11)).cuda()
    out = torch.full_like(x, float("nan"))
    for seed in range(12, 18):
        x.copy_(torch.from_numpy(rand(1000, seed=seed)))
        out.fill_(float("nan"))
        exe(x, outputs=[out])
        np.testing.assert_array_equal(out.cpu().numpy(), 2 * x.cpu().numpy() + 1)
    replays = exe._relaunch.replays
    assert replays is not None and len(replays.graphs) == 1
    other = torch.full_like(x, float("nan"))
    exe(x, outputs=[other])
    exe(x, outputs=[out])
    torch.cuda.synchronize()
    np.testing.assert_array_equal(other.cpu().numpy(), 2 * x.cpu().numpy() + 1)
    np.testing.assert_array_equal(out.cpu().numpy(), 2 * x.cpu().numpy() + 1)
    exe.close()
    assert not replays.graphs


@needs_torch
def test_a_held_graph_is_not_launched_under_the_callers_capture(monkeypatch):
    """With a graph of its launches held, a call made while torch captures
    the stream puts its kernels in torch's graph, which then replays right."""
    from dnnc_runtime import replay

    monkeypatch.setattr(replay, "MIN_LAUNCHES", 1)      # the plan here launches two kernels
    exe = load(two_kernel_manifest())
    exe.graph_replay = True
    x = torch.from_numpy(rand(1000, seed=21)).cuda()
    out = torch.full_like(x, float("nan"))
    for _ in range(4):
        exe(x, outputs=[out])
    assert len(exe._relaunch.replays.graphs) == 1
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        exe(x, outputs=[out])
    for seed in (22, 23):
        x.copy_(torch.from_numpy(rand(1000, seed=seed)))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        np.testing.assert_array_equal(out.cpu().numpy(), 2 * x.cpu().numpy() + 1)


@needs_torch
@pytest.mark.filterwarnings("ignore:The CUDA Graph is empty")
def test_first_call_under_capture_is_refused():
    exe = load(scale_manifest())
    x = torch.zeros(1000, device="cuda")
    out = torch.empty_like(x)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(dnnc_runtime.DeviceError, match="call it once before capturing"):
        with torch.cuda.graph(graph):
            exe(x, outputs=[out])


@needs_torch
def test_dlpack_capsule_input():
    exe = load(scale_manifest())
    x = torch.from_numpy(rand(1000, seed=10)).cuda()
    y = exe(torch.utils.dlpack.to_dlpack(x))
    np.testing.assert_array_equal(y.cpu().numpy(), 2 * x.cpu().numpy())


@needs_torch
def test_time_per_kernel():
    exe = load(two_kernel_manifest())
    x = torch.from_numpy(rand(1000, seed=11)).cuda()
    ms = exe.time(x, repeat=20, warmup=3)
    assert list(ms) == ["scale2#0", "add_c", "total"]      # the empty-grid scale2 (#2) never ran
    assert all(0 < v < 100 for v in ms.values())
    assert ms["total"] >= ms["scale2#0"]


@needs_torch
def test_host_overhead_of_a_one_kernel_relaunch_is_under_20us():
    exe = load(scale_manifest())
    x = torch.from_numpy(rand(1000, seed=12)).cuda()
    out = torch.empty_like(x)
    for _ in range(200):
        exe(x, outputs=[out])
    torch.cuda.synchronize()
    given, allocated = [], []
    for _ in range(2000):
        t0 = time.perf_counter()
        exe(x, outputs=[out])
        t1 = time.perf_counter()
        exe(x)
        t2 = time.perf_counter()
        given.append(t1 - t0)
        allocated.append(t2 - t1)
    torch.cuda.synchronize()
    given_us, allocated_us = statistics.median(given) * 1e6, statistics.median(allocated) * 1e6
    print(f"median host time per call: outputs given {given_us:.1f} us, "
          f"outputs allocated {allocated_us:.1f} us")
    assert given_us < 20, f"relaunch with outputs= took {given_us:.1f} us (median)"
    assert allocated_us < 20, f"relaunch allocating the output took {allocated_us:.1f} us (median)"


@needs_torch
def test_host_time_of_a_steady_one_kernel_call_is_near_torch():
    """A call after the first with torch tensors in the manifest's layout takes the
    fast path (dnnc_runtime/relaunch.py): its checks, one slot write per pointer
    and cuLaunchKernel. Its host time stays within 1.5x of torch.mul(x, 2, out=y)
    measured in the same process (on an H200 host: 11.8 us against 9.2 us, with
    cuLaunchKernel alone through cuda-python at 5.9 us; absolute times move
    with the host's load, the ratio much less)."""
    exe = load(scale_manifest())
    x = torch.from_numpy(rand(1000, seed=12)).cuda()
    out = torch.empty_like(x)

    def median_us(call):
        for _ in range(200):
            call()
        torch.cuda.synchronize()
        samples = []
        for _ in range(5000):
            t0 = time.perf_counter()
            call()
            samples.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
        return statistics.median(samples) * 1e6

    ours = median_us(lambda: exe(x, outputs=[out]))
    assert exe._relaunch is not None
    np.testing.assert_array_equal(out.cpu().numpy(), 2 * x.cpu().numpy())
    theirs = median_us(lambda: torch.mul(x, 2, out=out))
    print(f"median host time of a steady call: {ours:.1f} us (torch.mul {theirs:.1f} us)")
    assert ours < 1.5 * theirs, f"a steady one-kernel call took {ours:.1f} us of host time " \
        f"(median), torch.mul {theirs:.1f} us"


# -- CuPy (arrays with __cuda_array_interface__) -----------------------------------

def test_cupy_arrays():
    cupy = pytest.importorskip("cupy")
    exe = load(scale_manifest())
    x = cupy.asarray(rand(1000, seed=13))
    y = exe(x)
    assert isinstance(y, dnnc_runtime.binding.DeviceArray)
    np.testing.assert_array_equal(cupy.asnumpy(cupy.asarray(y)), 2 * cupy.asnumpy(x))
    np.testing.assert_array_equal(y.numpy(), 2 * cupy.asnumpy(x))
    out = cupy.full(1000, cupy.nan, dtype=cupy.float32)
    assert exe(x, outputs=[out]) is out
    np.testing.assert_array_equal(cupy.asnumpy(out), 2 * cupy.asnumpy(x))


# -- several streams and threads ------------------------------------------------

@needs_torch
def test_calls_on_two_streams_at_once_use_their_own_workspaces():
    exe = load(spinning_manifest())
    n = 1 << 20
    exe(torch.zeros(n, device="cuda"))              # prepares on the current stream
    torch.cuda.synchronize()
    streams = [torch.cuda.Stream() for _ in range(2)]
    xs = [torch.from_numpy(rand(n, seed=20 + i)).cuda() for i in range(2)]
    outs = [torch.full_like(xs[0], float("nan")) for _ in range(2)]
    torch.cuda.synchronize()
    for s, x, out in zip(streams, xs, outs):         # the second starts while the first spins
        exe(x, outputs=[out], stream=s)
    torch.cuda.synchronize()
    for x, out in zip(xs, outs):
        np.testing.assert_array_equal(out.cpu().numpy(), 2 * x.cpu().numpy() + 1)
    workspaces = {exe.workspace_of(s.cuda_stream) for s in streams}
    assert len(workspaces) == 2 and None not in workspaces


@needs_torch
def test_threads_with_streams_of_their_own_share_one_executable():
    import threading

    exe = load(spinning_manifest(n=1 << 16, ns=50_000))
    n = 1 << 16
    exe(torch.zeros(n, device="cuda"))
    torch.cuda.synchronize()
    errors = []

    def worker(t):
        try:
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                for i in range(20):
                    x = torch.full((n,), float(t * 100 + i), device="cuda")
                    y = exe(x)
                    stream.synchronize()
                    assert (y == 2 * x + 1).all().item(), (t, i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
