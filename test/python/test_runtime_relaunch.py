"""dnnc_runtime's fast path (relaunch.py) without a GPU.

torch CPU tensors pass for cuda:0 ones here: ``torch.Tensor`` is a Python
class over the C ``TensorBase``, so the ``cuda_torch`` fixture can give it
``is_cuda``, ``get_device`` and ``device`` properties that say cuda:0 (or,
for a tensor given a ``fake_device``, that device), and a current-stream
function. The kernels are FakeGPU's, reading and writing the tensors' host
memory. Each test warms an executable up with one call (the general path,
which builds the fast path), then checks that later calls take the fast
path (``_begin``, the general path's first step, is made to fail) and
behave as the general path does: same launches, same results, same errors.

The last tests time a call against a driver that does nothing: the host
work of the runtime alone, with generous bounds that catch a path gone
slow (a per-call loop over the manifest, the fast path never taken).
"""

import ctypes
import time

import numpy as np
import pytest

from test_runtime import (FakeGPU, TMA_PTX, axpy_manifest, cuda_mod, load, scale_manifest,
                          scalar_axpy_manifest, tma_manifest)

from dnnc_runtime import ArgumentError, executable

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

CUDA0 = torch.device("cuda", 0)


class HostGPU(FakeGPU):
    """FakeGPU whose kernels may also touch the memory of registered torch CPU
    tensors; tensors torch allocates "on cuda:0" are CPU ones, registered."""

    def __init__(self, monkeypatch):
        super().__init__(monkeypatch)
        self.host = []           # (tensor, base, nbytes) of registered tensors
        empty_strided, empty = torch.empty_strided, torch.empty
        monkeypatch.setattr(torch, "empty_strided",
                            lambda *a, device=None, **k: self.tensor(empty_strided(*a, **k)))
        monkeypatch.setattr(torch, "empty",   # the workspace
                            lambda *a, device=None, **k: self.tensor(empty(*a, **k)))

    def tensor(self, t):
        """Register ``t`` (its whole storage) as device memory; return it."""
        storage = t.untyped_storage()
        self.host.append((t, storage.data_ptr(), storage.nbytes()))
        return t

    def view(self, address, nbytes):
        for _, base, size in self.host:
            if base <= address and address + nbytes <= base + size:
                return memoryview((ctypes.c_ubyte * nbytes).from_address(address)).cast("B")
        return super().view(address, nbytes)


@pytest.fixture
def cuda_torch(monkeypatch):
    """CPU tensors pass for cuda:0 tensors; the current stream is ``streams[0]``."""
    def where(t):
        return t.__dict__.get("fake_device", CUDA0)

    def index(t):
        return where(t).index if where(t).type == "cuda" else -1

    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda t: where(t).type == "cuda"))
    monkeypatch.setattr(torch.Tensor, "get_device", index)
    monkeypatch.setattr(torch.Tensor, "device", property(where))
    streams = [0x5000]
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda index: streams[0], raising=False)
    monkeypatch.setattr(executable, "_raw_stream", None)   # resolved again, to the function above
    monkeypatch.setattr(executable, "_torch_device", lambda index: "cpu")
    return streams


def steady(exe, monkeypatch):
    """From now on, a call that leaves the fast path fails the test."""
    assert exe._relaunch is not None

    def general_path(*args):
        raise AssertionError("the call took the general path")
    monkeypatch.setattr(exe, "_begin", general_path)


def f32(gpu, *shape, fill=None):
    t = torch.full(shape, fill, dtype=torch.float32) if fill is not None else \
        torch.arange(int(np.prod(shape)), dtype=torch.float32).reshape(shape)
    return gpu.tensor(t)


# -- the fast path does what the general path does -------------------------------------

def test_steady_calls_take_the_fast_path_and_follow_the_pointers(monkeypatch, cuda_torch):
    gpu = HostGPU(monkeypatch)
    exe = load(scale_manifest(n=1000))
    x, y = f32(gpu, 1000), f32(gpu, 1000, fill=float("nan"))
    assert exe(x, outputs=[y]) is y and exe._relaunch is not None
    steady(exe, monkeypatch)
    for _ in range(3):                         # new tensors: the pointer slots follow
        x, y = f32(gpu, 1000) + 1, f32(gpu, 1000, fill=float("nan"))
        gpu.tensor(x)
        assert exe(x, outputs=[y]) is y
        assert torch.equal(y, 2 * x)
        launch = gpu.launches[-1]
        assert launch["args"] == [x.data_ptr(), y.data_ptr(), 1000]
        assert launch["grid"] == (8, 1, 1) and launch["stream"] == 0x5000
    assert len(gpu.launches) == 4


def test_runtime_scalars_on_the_fast_path(monkeypatch, cuda_torch):
    """A runtime scalar (a number among the tensors) is written into its
    kernel's parameter on every fast call; a wrong one is refused as the
    general path refuses it."""
    gpu = HostGPU(monkeypatch)
    exe = load(scalar_axpy_manifest())
    x = f32(gpu, 2, 3)
    w = gpu.tensor(torch.arange(8, dtype=torch.float32).reshape(2, 4))[:, :3]
    y = f32(gpu, 2, 3, fill=float("nan"))
    exe(x, w, 0.5, outputs=[y])
    steady(exe, monkeypatch)
    for a in (-2.0, 0.1, 3, np.float32(1.5)):
        exe(x, w, a, outputs=[y])
        assert gpu.launches[-1]["args"][3] == np.float32(a)
        torch.testing.assert_close(y, 2 * x + torch.tensor(np.float32(a)) * w)
    with pytest.raises(ArgumentError, match=r"input 'a': expected a number .* got str"):
        exe(x, w, "2", outputs=[y])


class SideStream:
    cuda_stream = 0x8000       # what torch.cuda.Stream has


def test_fast_path_follows_the_current_stream_and_stream_argument(monkeypatch, cuda_torch):
    gpu = HostGPU(monkeypatch)
    exe = load(scale_manifest(n=1000))
    x, y = f32(gpu, 1000), f32(gpu, 1000)
    exe(x, outputs=[y])
    steady(exe, monkeypatch)
    cuda_torch[0] = 0x6000                     # torch.cuda.stream(...) switched streams
    exe(x, outputs=[y])
    exe(x, outputs=[y], stream=0x7000)
    exe(x, outputs=[y], stream=SideStream())
    assert [l["stream"] for l in gpu.launches[1:]] == [0x6000, 0x7000, 0x8000]


def test_fast_path_output_forms(monkeypatch, cuda_torch):
    gpu = HostGPU(monkeypatch)
    exe = load(scale_manifest(n=1000))
    x, y = f32(gpu, 1000), f32(gpu, 1000)
    exe(x, outputs=[y])
    steady(exe, monkeypatch)
    assert exe(x, outputs=[y]) is y
    assert exe(x, outputs=(y,)) is y
    assert exe(x, outputs=y) is y
    allocated = exe(x)                         # torch's allocator, the manifest's strides
    assert isinstance(allocated, torch.Tensor) and allocated is not y
    assert allocated.shape == (1000,) and allocated.stride() == (1,)
    assert gpu.launches[-1]["args"][1] == allocated.data_ptr()


def test_fast_path_allocates_every_output(monkeypatch, cuda_torch):
    gpu = HostGPU(monkeypatch)
    gpu.kernels["axpy"] = gpu.kernels["scale2"] = lambda *args: None
    exe = load(axpy_manifest())
    x, w = f32(gpu, 2, 3), f32(gpu, 2, 4)[:, :3]
    first = exe(x, w)
    steady(exe, monkeypatch)
    second = exe(x, w)
    assert second.shape == (2, 3) and second.stride() == (3, 1) and second.data_ptr() != first.data_ptr()
    workspace = exe._workspace
    assert [l["args"][:3] for l in gpu.launches[-2:]] == [
        [x.data_ptr(), workspace + 256, 6], [workspace + 256, w.data_ptr(), second.data_ptr()]]


def test_each_stream_gets_its_own_workspace_on_the_fast_path(monkeypatch, cuda_torch):
    gpu = HostGPU(monkeypatch)
    exe = load(axpy_manifest())
    x, w = f32(gpu, 2, 3), f32(gpu, 2, 4)[:, :3]
    y = f32(gpu, 2, 3, fill=float("nan"))
    exe(x, w, outputs=[y])                      # prepares; the workspace of stream 0x5000
    first = exe.workspace_of(0x5000)
    exe(x, w, outputs=[y], stream=0x7000)       # the fast path misses: a new stream
    second = exe.workspace_of(0x7000)
    assert second not in (None, first)
    assert gpu.zeroed == [(first, 512, 0x5000), (second, 512, 0x7000)]
    steady(exe, monkeypatch)
    for stream, workspace in ((0x7000, second), (0x5000, first), (0x7000, second)):
        y.fill_(float("nan"))
        exe(x, w, outputs=[y], stream=stream)
        k0, k1 = gpu.launches[-2:]
        assert k0["stream"] == k1["stream"] == stream
        assert k0["args"][1] == k1["args"][0] == workspace + 256
        assert torch.equal(y, 2 * x + 0.5 * w)
    assert len(gpu.zeroed) == 2
    exe.close()
    assert exe.workspace_of(0x5000) is None and exe.workspace_of(0x7000) is None


def test_threads_calling_one_executable_each_get_their_own_results(monkeypatch, cuda_torch):
    """Eight threads, each on a stream of its own, call one executable at
    once; the fake driver yields the GIL between the slots being written and
    read (a real launch releases it), so an unlocked call would launch
    another thread's pointers."""
    import threading

    gpu = HostGPU(monkeypatch)
    exe = load(axpy_manifest())
    launch = gpu.launch

    def slow_launch(*args):
        time.sleep(0.0005)
        launch(*args)
    gpu.launch = slow_launch
    w = f32(gpu, 2, 4)[:, :3]
    exe(f32(gpu, 2, 3), w)                      # prepares
    errors = []

    def worker(t):
        try:
            for i in range(20):
                x = gpu.tensor(torch.full((2, 3), float(t * 100 + i)))
                y = exe(x, w, stream=0x10000 + t)
                assert torch.equal(y, 2 * x + 0.5 * w), (t, i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert len({exe.workspace_of(0x10000 + t) for t in range(8)}) == 8


@pytest.mark.parametrize("bad, tensor, message", [
    (lambda x, y: (x.half(), y), "x", r"input 'x': expected dtype f32 \(torch.float32\), got torch.float16"),
    (lambda x, y: (x[:999], y), "x", r"input 'x': expected shape \[1000\], got \[999\]"),
    (lambda x, y: (torch.empty(2000)[::2], y), "x", r"input 'x': expected strides \[1\] .*got \[2\]"),
    (lambda x, y: (torch.empty(1001)[1:], y), "x", r"input 'x': expected an address aligned to 16 bytes"),
    (lambda x, y: (x, y.half()), "y", r"output 'y': expected dtype f32"),
    (lambda x, y: (np.ones(7, np.float32), y), "x", r"input 'x': expected shape \[1000\], got \[7\]"),
])
def test_fast_path_refuses_as_the_general_path_does(monkeypatch, cuda_torch, bad, tensor, message):
    gpu = HostGPU(monkeypatch)
    exe = load(scale_manifest(n=1000))
    x, y = f32(gpu, 1000), f32(gpu, 1000)
    exe(x, outputs=[y])
    args = bad(x, y)
    fresh = load(scale_manifest(n=1000))       # never called: the general path's answer
    with pytest.raises(ArgumentError, match=message) as general:
        fresh(args[0], outputs=[args[1]])
    with pytest.raises(ArgumentError, match=message) as fast:
        exe(args[0], outputs=[args[1]])
    assert str(fast.value) == str(general.value) and fast.value.tensor == general.value.tensor == tensor
    assert len(gpu.launches) == 1              # nothing launched


def test_fast_path_refuses_another_device(monkeypatch, cuda_torch):
    gpu = HostGPU(monkeypatch)
    exe = load(scale_manifest(n=1000))
    x, y = f32(gpu, 1000), f32(gpu, 1000)
    exe(x, outputs=[y])
    x.fake_device = y.fake_device = torch.device("cuda", 1)
    with pytest.raises(ArgumentError, match=r"input 'x': expected a tensor on cuda:0 \(where this "
                                            r"executable was loaded\), got cuda:1"):
        exe(x, outputs=[y])
    x.fake_device = y.fake_device = torch.device("cpu")
    with pytest.raises(ArgumentError, match=r"input 'x': expected a CUDA tensor, got a tensor on cpu"):
        exe(x, outputs=[y])
    assert len(gpu.launches) == 1


def test_fast_path_accepts_any_stride_on_size_one_dims(monkeypatch, cuda_torch):
    gpu = HostGPU(monkeypatch)
    gpu.kernels["axpy"] = gpu.kernels["scale2"] = lambda *args: None
    m = axpy_manifest()
    m["inputs"][1]["dims"] = [1, 3]            # w: one row, manifest stride 4
    m["inputs"][1]["strides"] = [4, 1]
    exe = load(m)
    x, y = f32(gpu, 2, 3), f32(gpu, 2, 3)
    exe(x, f32(gpu, 1, 4)[:, :3], outputs=[y])
    steady(exe, monkeypatch)
    w = f32(gpu, 1, 3)                         # strides (3, 1): the same bytes
    exe(x, w, outputs=[y])
    assert gpu.launches[-1]["args"][1] == w.data_ptr()
    with pytest.raises(ArgumentError, match=r"input 'x': expected strides \[3, 1\]"):
        exe(f32(gpu, 3, 2).t(), w, outputs=[y])


def test_other_calls_take_the_general_path(monkeypatch, cuda_torch):
    gpu = HostGPU(monkeypatch)
    exe = load(scale_manifest(n=1000))
    x, y = f32(gpu, 1000), f32(gpu, 1000)
    exe(x, outputs=[y])
    taken = []
    begin = exe._begin
    monkeypatch.setattr(exe, "_begin", lambda *a: taken.append(1) or begin(*a))
    assert exe(x=x, outputs=[y]) is y          # by name
    assert exe(x, outputs={"y": y}) is y       # outputs by name
    out = exe(np.ones(1000, np.float32))       # NumPy
    assert isinstance(out, np.ndarray) and (out == 2).all()
    assert len(taken) == 3
    exe(x, outputs=[y])
    assert len(taken) == 3


def test_tma_descriptors_follow_the_tensor_on_the_fast_path(monkeypatch, cuda_torch):
    gpu = HostGPU(monkeypatch)
    gpu.kernels["scale2"] = lambda *args: None
    exe = load(tma_manifest(), ptx=TMA_PTX)
    a = gpu.tensor(torch.ones(64, 128, dtype=torch.float16))
    y = gpu.tensor(torch.zeros(32, 64, dtype=torch.float16))
    exe(a, outputs=[y])
    steady(exe, monkeypatch)
    exe(a, outputs=[y])                        # same address: the descriptor is kept
    assert [e[-1] for e in gpu.encoded] == [a.data_ptr()]
    a2 = gpu.tensor(torch.ones(64, 128, dtype=torch.float16))
    exe(a2, outputs=[y])
    assert [e[-1] for e in gpu.encoded] == [a.data_ptr(), a2.data_ptr()]
    assert int.from_bytes(gpu.launches[-1]["args"][0][:8], "little") == a2.data_ptr()
    assert gpu.launches[-1]["args"][1] == y.data_ptr()


def test_close_drops_the_fast_path(monkeypatch, cuda_torch):
    gpu = HostGPU(monkeypatch)
    exe = load(scale_manifest(n=1000))
    x, y = f32(gpu, 1000), f32(gpu, 1000)
    exe(x, outputs=[y])
    assert exe._relaunch is not None
    exe.close()
    assert exe._relaunch is None
    exe(x, outputs=[y])                        # prepared again, on the general path
    assert exe._relaunch is not None and torch.equal(y, 2 * x)


# -- host time per call against a driver that does nothing -----------------------------

def per_call_us(fn, calls=200, rounds=30):
    """This thread's CPU microseconds per call: the best of ``rounds`` rounds
    (the machine may be shared; the thread's clock leaves out waiting)."""
    for _ in range(calls):
        fn()
    best = float("inf")
    for _ in range(rounds):
        start = time.thread_time_ns()
        for _ in range(calls):
            fn()
        best = min(best, (time.thread_time_ns() - start) / calls / 1e3)
    return best


def idle_driver(monkeypatch, cuda_torch):
    gpu = HostGPU(monkeypatch)
    monkeypatch.setattr(cuda_mod, "launch_all", lambda launches, stream: None)
    return gpu


def big_manifest(extra):
    """scale_manifest plus ``extra`` empty-grid kernels and workspace buffers: a
    manifest much larger than the one launch a call makes."""
    m = scale_manifest(n=1000)
    m["workspace_bytes"] = 256 * extra
    m["buffers"] += [{"kind": "workspace", "offset": 256 * i, "bytes": 256} for i in range(extra)]
    m["kernels"] += [{"name": f"empty{i}", "entry": "scale2", "strategy": "simt-generic",
                      "grid": [0, 1, 1], "block": [32, 1, 1], "shared_bytes": 0,
                      "args": [{"kind": "buffer", "buffer": 2 + i}, {"kind": "buffer", "buffer": 1},
                               {"kind": "scalar", "type": "i64", "value": 0}]}
                     for i in range(extra)]
    return m


def test_host_time_per_call_on_an_idle_driver(monkeypatch, cuda_torch):
    idle_driver(monkeypatch, cuda_torch)
    x, y = torch.ones(1000), torch.empty(1000)
    small, big = load(scale_manifest(n=1000)), load(big_manifest(300))
    for exe in (small, big):
        exe(x, outputs=[y])
        steady(exe, monkeypatch)
    small_us = per_call_us(lambda: small(x, outputs=[y]))
    big_us = per_call_us(lambda: big(x, outputs=[y]))
    # About 1-4 us on a 2020s server core; a loop over the manifest per call
    # would make the big one cost tens of microseconds more.
    assert small_us < 40, f"a one-kernel call took {small_us:.1f} us of host time"
    assert big_us < 2 * small_us + 2, (f"a call's host time grows with the manifest: {small_us:.1f} "
                                        f"us, {big_us:.1f} us with 300 unlaunched kernels")


def test_the_fast_path_runs_direct_launches_and_raises_their_failure(monkeypatch, cuda_torch):
    """An executable whose launches are packed for libcuda (test_direct_launch's
    recording stand-in): the general path and the fast path both launch
    through it, on the call's stream, and a failing status on a steady call
    is a CudaError naming the function."""
    from test_direct_launch import SERIALIZATION, FakeLibcuda

    from dnnc_runtime import direct_launch
    from dnnc_runtime.errors import CudaError

    real_launch_all = cuda_mod.launch_all
    gpu = HostGPU(monkeypatch)
    lib = FakeLibcuda()
    monkeypatch.setattr(cuda_mod, "launch_all", real_launch_all)
    monkeypatch.setattr(cuda_mod, "get_function", lambda module, entry: 0xF00)
    monkeypatch.setattr(cuda_mod, "pack_launches",
                        lambda args: direct_launch.Launches(lib, args, SERIALIZATION))
    cuda_mod.driver()
    exe = load(scale_manifest(n=1000))
    x, y = f32(gpu, 1000), f32(gpu, 1000)
    exe(x, outputs=[y], stream=0x7000)                  # the general path
    assert exe._relaunch.launch is not None
    steady(exe, monkeypatch)
    exe(x, outputs=[y])                                 # the fast path, torch's stream
    params = exe._launches[0].params
    assert lib.calls == [("ex", (0xF00, 8, 128, 0, 0x7000, params, 0)),
                         ("ex", (0xF00, 8, 128, 0, 0x5000, params, 0))]
    lib.fail_at = len(lib.calls)
    with pytest.raises(CudaError, match="cuLaunchKernelEx.*CUDA_ERROR_ILLEGAL_ADDRESS"):
        exe(x, outputs=[y])


# -- graphs of the launches, replayed when the addresses repeat (replay.py) ---------------

def _direct_executable(monkeypatch, replay_on=True, min_launches=1):
    """(executable on test_direct_launch's recording libcuda after its first
    call, the fake lib, the graphs captured, the graphs destroyed, x, y)."""
    from test_direct_launch import SERIALIZATION, FakeLibcuda

    from dnnc_runtime import direct_launch, replay

    real_launch_all = cuda_mod.launch_all
    gpu = HostGPU(monkeypatch)
    lib = FakeLibcuda()
    captured, destroyed = [], []
    monkeypatch.setattr(replay, "MIN_LAUNCHES", min_launches)   # the plan here is one kernel

    def capture(record):                   # records the launches on a stream of its own
        status, name = record(0x9000)
        assert status == 0
        captured.append(len(lib.calls))
        return 0xE000 + len(captured)

    monkeypatch.setattr(cuda_mod, "launch_all", real_launch_all)
    monkeypatch.setattr(cuda_mod, "get_function", lambda module, entry: 0xF00)
    monkeypatch.setattr(cuda_mod, "pack_launches",
                        lambda args: direct_launch.Launches(lib, args, SERIALIZATION))
    monkeypatch.setattr(cuda_mod, "capture_graph", capture)
    monkeypatch.setattr(cuda_mod, "graph_exec_destroy", destroyed.append)
    cuda_mod.driver()
    exe = load(scale_manifest(n=1000))
    exe.graph_replay = replay_on
    x, y = f32(gpu, 1000), f32(gpu, 1000)
    exe(x, outputs=[y], stream=0x7000)      # the general path builds the fast one
    steady(exe, monkeypatch)
    lib.calls.clear()
    return exe, lib, gpu, captured, destroyed, x, y


def test_repeated_addresses_are_captured_then_replayed(monkeypatch, cuda_torch):
    """The second call in a row with one address list is launched kernel by
    kernel and captured (its launches recorded on the capture's stream);
    the next with it is one graph launch on the caller's stream. Other
    addresses launch kernel by kernel, and the graph serves its own again."""
    exe, lib, gpu, captured, _, x, y = _direct_executable(monkeypatch)
    params = exe._launches[0].params
    kernel = ("ex", (0xF00, 8, 128, 0, 0x5000, params, 0))
    exe(x, outputs=[y])
    assert lib.calls == [kernel] and not captured
    exe(x, outputs=[y])
    assert lib.calls == [kernel, kernel, ("ex", (0xF00, 8, 128, 0, 0x9000, params, 0))]
    assert captured == [3]
    lib.calls.clear()
    exe(x, outputs=[y])
    assert lib.calls == [("graph", (0xE001, 0x5000))]
    y2 = f32(gpu, 1000)
    lib.calls.clear()
    exe(x, outputs=[y2])                    # new addresses: the slots follow
    assert lib.calls == [kernel]
    lib.calls.clear()
    exe(x, outputs=[y])
    assert lib.calls == [("graph", (0xE001, 0x5000))] and captured == [3]


def test_no_replay_while_the_callers_stream_is_captured(monkeypatch, cuda_torch):
    """Under the caller's own capture a held graph is not launched: the
    kernels go into the caller's graph one by one, and nothing is captured."""
    exe, lib, _, captured, _, x, y = _direct_executable(monkeypatch)
    for _ in range(2):
        exe(x, outputs=[y])
    assert captured == [3]
    lib.capturing = (0x5000,)
    lib.calls.clear()
    exe(x, outputs=[y])
    exe(x, outputs=[y])
    assert [c[0] for c in lib.calls] == ["ex", "ex"] and captured == [3]


def test_alternating_addresses_are_both_replayed(monkeypatch, cuda_torch):
    """A loop that keeps one call's output while it makes the next gets two
    sets of addresses in turn: each is captured on its second call, and
    from then on both are graph launches."""
    exe, lib, gpu, captured, _, x, y = _direct_executable(monkeypatch)
    y2 = f32(gpu, 1000)
    for out in (y, y2, y, y2):
        exe(x, outputs=[out])
    assert len(captured) == 2
    lib.calls.clear()
    for out in (y, y2, y):
        exe(x, outputs=[out])
    assert [c[0] for c in lib.calls] == ["graph"] * 3


def test_short_plans_are_not_captured(monkeypatch, cuda_torch):
    """A plan of fewer than replay.MIN_LAUNCHES kernels launches them one by one."""
    exe, lib, _, captured, _, x, y = _direct_executable(monkeypatch, min_launches=2)
    for _ in range(4):
        exe(x, outputs=[y])
    assert exe._relaunch.replays is None and not captured
    assert [c[0] for c in lib.calls] == ["ex"] * 4


def test_replay_keeps_a_few_graphs_and_can_be_turned_off(monkeypatch, cuda_torch):
    """Past replay.KEPT graphs the oldest is destroyed for the newest;
    close() destroys the rest; with graph_replay off nothing is captured."""
    from dnnc_runtime import replay

    exe, lib, gpu, captured, destroyed, x, _ = _direct_executable(monkeypatch)
    outs = [f32(gpu, 1000) for _ in range(replay.KEPT + 1)]
    for y in outs:
        exe(x, outputs=[y])
        exe(x, outputs=[y])
    assert len(captured) == replay.KEPT + 1 and destroyed == [0xE001]
    assert len(exe._relaunch.replays.graphs) == replay.KEPT
    exe.close()
    assert sorted(destroyed) == [0xE000 + i for i in range(1, replay.KEPT + 2)]

    exe, lib, _, captured, _, x, y = _direct_executable(monkeypatch, replay_on=False)
    for _ in range(3):
        exe(x, outputs=[y])
    assert exe._relaunch.replays is None and not captured
    assert [c[0] for c in lib.calls] == ["ex"] * 3


def test_captures_stop_when_addresses_keep_changing(monkeypatch, cuda_torch):
    """Past replay.CAPTURES captures an executable captures no more (each
    costs host time): the graphs it holds still serve their addresses."""
    from dnnc_runtime import replay

    monkeypatch.setattr(replay, "CAPTURES", 3)
    exe, lib, gpu, captured, _, x, _ = _direct_executable(monkeypatch)
    outs = [f32(gpu, 1000) for _ in range(5)]
    for y in outs:
        exe(x, outputs=[y])
        exe(x, outputs=[y])
    assert len(captured) == 3
    lib.calls.clear()
    exe(x, outputs=[outs[2]])
    exe(x, outputs=[outs[4]])
    assert [c[0] for c in lib.calls] == ["graph", "ex"]


def test_replay_turned_on_and_off_on_a_running_executable(monkeypatch, cuda_torch):
    """graph_replay may change after the fast path is built: on, calls start
    capturing; off, the graphs held are destroyed and kernels launch one by one."""
    exe, lib, _, captured, destroyed, x, y = _direct_executable(monkeypatch, replay_on=False)
    assert exe._relaunch.replays is None
    exe.graph_replay = True
    for _ in range(3):
        exe(x, outputs=[y])
    assert captured == [3] and lib.calls[-1][0] == "graph"
    exe.graph_replay = False
    assert exe._relaunch.replays is None and destroyed == [0xE001]
    lib.calls.clear()
    exe(x, outputs=[y])
    assert [c[0] for c in lib.calls] == ["ex"]
