"""dnnc.frontend's execute on the GPU path (target cuda), without a GPU.

The graph is compiled for sm_90a through the JIT cache, as on a GPU; the
runtime's driver is test_runtime's FakeGPU, and torch CPU tensors pass for
cuda:0 ones (test_runtime_relaunch's ``cuda_torch``). Launches are recorded,
with the value of every kernel argument read back from the packed array as
the driver would read it: nothing runs.

* After the first execute, a call with the plan's tensors (keyed by tensor
  or by uid) goes from the variant pack to the runtime's fast path: the
  general paths are made to fail and the launches follow the new pointers.
* Bad input still raises the typed errors, on a warm plan as on a cold one,
  and launches nothing: a wrong dtype, strides, device, too small a buffer
  (ArgumentError naming the tensor, InvalidVariantPackError), a missing
  tensor, a foreign one, an unknown uid, a scalar that is no number.
* A new pass-by-value value compiles another plan, which the fast path
  then serves; buffers of other dims than the tensor's take the general
  path, as before.
"""

import ctypes
import struct

import pytest

import dnnc.frontend as cudnn
from dnnc.frontend import execute as frontend_execute

torch = pytest.importorskip("torch")
from test_runtime import cuda_mod  # noqa: E402
from test_runtime_relaunch import HostGPU, cuda_torch  # noqa: E402,F401 (a fixture)

from dnnc_runtime import ArgumentError, executable  # noqa: E402

pytestmark = pytest.mark.torch

ROWS, HIDDEN = 64, 256
CL = [HIDDEN, 1, HIDDEN, HIDDEN]        # channels-last strides of [rows, hidden, 1, 1]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


class Launches(list):
    """The recorded launches: (entry, argument values as u64, stream)."""

    def __init__(self, monkeypatch):
        super().__init__()
        self.counts = {}         # entry -> its number of arguments, as launches are packed
        monkeypatch.setattr(cuda_mod, "launch_all", self.launch_all)
        monkeypatch.setattr(cuda_mod, "pack_launches", lambda launch_args: launch_args)
        pack = executable._Launch.__init__

        def packed(launch, index, kernel, *args):
            pack(launch, index, kernel, *args)
            self.counts[kernel.entry] = len(kernel.args)
        monkeypatch.setattr(executable._Launch, "__init__", packed)

    def launch_all(self, launches, stream):
        for function, gx, gy, gz, bx, by, bz, shared, params, early in launches:
            n = self.counts[function]
            slots = (ctypes.c_void_p * n).from_address(params)
            self.append((function, [ctypes.c_uint64.from_address(s).value for s in slots],
                         stream))


@pytest.fixture
def gpu(monkeypatch, cuda_torch, cache_dir):  # noqa: F811
    monkeypatch.setenv("DNNC_CACHE_DIR", str(cache_dir))
    fake = HostGPU(monkeypatch)
    fake.recorded = Launches(monkeypatch)
    return fake


def layernorm(gpu):
    """cudnn-frontend's layernorm form, built for sm_90a; (graph, pack, tensors)."""
    g = cudnn.pygraph(io_data_type=cudnn.data_type.BFLOAT16,
                      intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, target="cuda", sm_version=90)
    X = g.tensor(name="X", dim=[ROWS, HIDDEN, 1, 1], stride=CL)
    S = g.tensor(name="scale", dim=[1, HIDDEN, 1, 1], stride=CL)
    B = g.tensor(name="bias", dim=[1, HIDDEN, 1, 1], stride=CL)
    E = g.tensor(name="epsilon", dim=[1, 1, 1, 1], is_pass_by_value=True,
                 data_type=cudnn.data_type.FLOAT)
    Y, M, V = g.layernorm(norm_forward_phase=cudnn.norm_forward_phase.TRAINING, input=X,
                          scale=S, bias=B, epsilon=E, name="LN")
    Y.set_output(True)
    M.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    V.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    g.build([cudnn.heur_mode.A])
    tensors = {"X": X, "S": S, "B": B, "E": E, "Y": Y, "M": M, "V": V}
    return g, buffers(gpu, tensors), tensors


def host_tensor(t):
    """``t`` shown as the CPU tensor it is (see host_scalar)."""
    t.__dict__["fake_device"] = torch.device("cpu")
    return t


def host_scalar(value):
    """A pass-by-value value as cudnn-frontend code passes it: a CPU tensor
    (shown as one: the fixture makes every other tensor look like cuda:0)."""
    t = torch.full((1, 1, 1, 1), value)
    t.__dict__["fake_device"] = torch.device("cpu")
    return t


def buffers(gpu, t, eps=1e-5):
    """A fresh buffer for each tensor (registered with the fake GPU)."""
    def bf16(*dims):
        return gpu.tensor(torch.randn(*dims).to(torch.bfloat16)
                          .to(memory_format=torch.channels_last))
    return {t["X"]: bf16(ROWS, HIDDEN, 1, 1), t["S"]: bf16(1, HIDDEN, 1, 1),
            t["B"]: bf16(1, HIDDEN, 1, 1), t["E"]: host_scalar(eps),
            t["Y"]: bf16(ROWS, HIDDEN, 1, 1),
            t["M"]: gpu.tensor(torch.empty(ROWS, 1, 1, 1)),
            t["V"]: gpu.tensor(torch.empty(ROWS, 1, 1, 1))}


def warm(g, pack, handle=None):
    """The first execute (the general paths); the executable."""
    g.execute(pack, None, handle=handle)
    return g._last_plan.exe


def expected_arguments(exe, plan, pack):
    """The argument values the plan's one kernel must get for ``pack``."""
    (launch,) = exe._launches
    order = [*plan.inputs, *plan.outputs]
    values = [None] * len(launch.kernel.args)
    for slot, source, offset in launch.pointers:
        if order[source].get_is_pass_by_value():     # a runtime scalar: its f32 bits
            value = float(pack[order[source]].item())
            values[slot] = struct.unpack("<I", struct.pack("<f", value))[0]
            continue
        values[slot] = pack[order[source]].data_ptr() + offset
    return values


def general_paths_fail(monkeypatch, exe):
    def fail(*args, **kwargs):
        raise AssertionError("the call took a general path")
    monkeypatch.setattr(frontend_execute.Plan, "run", fail)
    monkeypatch.setattr(exe, "_begin", fail)
    monkeypatch.setattr(cudnn.pygraph, "_pack", fail)


# -- the fast path ----------------------------------------------------------------------

def test_steady_execute_goes_straight_to_the_runtime(gpu, monkeypatch):
    g, pack, t = layernorm(gpu)
    handle = cudnn.create_handle()
    cudnn.set_stream(handle, 0x7000)
    exe = warm(g, pack, handle)
    plan = g._last_plan
    assert g._steady is not None and g._steady.plan is plan
    general_paths_fail(monkeypatch, exe)
    for _ in range(2):                               # new buffers: the pointers follow
        pack = buffers(gpu, t)
        g.execute(pack, None, handle=handle)
        entry, args, stream = gpu.recorded[-1]
        assert args == expected_arguments(exe, plan, pack) and stream == 0x7000
        by_uid = {k.get_uid(): v for k, v in buffers(gpu, t).items()}
        g.execute(by_uid, None, handle=handle)       # keyed by uid
        assert gpu.recorded[-1][1] == expected_arguments(
            exe, plan, {k: by_uid[k.get_uid()] for k in pack})
    g.execute(pack, None)                            # no handle: torch's current stream
    assert gpu.recorded[-1][2] == 0x5000
    assert len(gpu.recorded) == 1 + 5


def test_steady_calls_refuse_bad_input_as_the_first_call_does(gpu, monkeypatch):
    g, pack, t = layernorm(gpu)
    warm(g, pack)
    launched = len(gpu.recorded)
    other = cudnn.pygraph(target="cuda", sm_version=90)
    foreign = other.tensor(name="foreign", dim=[1])

    def refused(error, match, **changes):
        bad = dict(pack)
        for name, value in changes.items():
            if value is None:
                del bad[t[name]]
            else:
                bad[t[name]] = value
        with pytest.raises(error, match=match) as info:
            g.execute(bad, None)
        assert len(gpu.recorded) == launched, "a refused call launched a kernel"
        return info.value

    x = pack[t["X"]]
    err = refused(ArgumentError, r"X.*expected dtype bf16", X=gpu.tensor(x.float()))
    assert err.tensor == "X"
    column_major = gpu.tensor(torch.empty(HIDDEN, ROWS, 1, 1, dtype=torch.bfloat16)
                              .permute(1, 0, 2, 3))
    refused(ArgumentError, r"X.*expected strides \[256, 1, 256, 256\].*got \[1, 64",
            X=column_major)
    on_cpu = gpu.tensor(x.clone())
    on_cpu.__dict__["fake_device"] = torch.device("cpu")
    refused(ArgumentError, r"X.*expected a CUDA tensor", X=on_cpu)
    refused(cudnn.InvalidVariantPackError, r"input tensor 'X'.*expected dims \[64, 256, 1, 1\]"
            r".*got dims \[32, 256, 1, 1\]", X=gpu.tensor(x[:32].clone()))
    refused(cudnn.InvalidVariantPackError, r"output tensor 'LN::.*is missing", Y=None)
    refused(cudnn.InvalidVariantPackError, r"pass-by-value tensor 'epsilon'.*missing", E=None)
    # epsilon is a runtime scalar: the runtime reads it, and refuses two numbers.
    refused(ArgumentError, r"input 'epsilon': expected a number.*got a tensor of dtype "
            r"torch.float32 and shape \[2\]", E=host_tensor(torch.ones(2)))
    with pytest.raises(cudnn.InvalidVariantPackError, match="not a tensor of this graph"):
        g.execute({**pack, foreign: x}, None)
    with pytest.raises(cudnn.InvalidVariantPackError, match="uid 999"):
        g.execute({**pack, 999: x}, None)
    assert len(gpu.recorded) == launched
    # And the next good call is served by the fast path again.
    general_paths_fail(monkeypatch, g._last_plan.exe)
    g.execute(pack, None)
    assert len(gpu.recorded) == launched + 1


def test_a_new_scalar_value_runs_on_the_same_plan_fast(gpu, monkeypatch):
    """epsilon is a runtime scalar (a kernel argument): a new value is served
    by the plan already built, on the fast path, its bits in the argument."""
    g, pack, t = layernorm(gpu)
    warm(g, pack)
    first = g._last_plan
    general_paths_fail(monkeypatch, first.exe)
    monkeypatch.setattr(cudnn.pygraph, "_compile",
                        lambda *a: pytest.fail("compiled another plan"))
    for eps in (2e-5, 0.5, 1e-5):
        pack2 = {**pack, t["E"]: host_scalar(eps)}
        g.execute(pack2, None)
        assert g._last_plan is first and len(g._plans) == 1
        assert gpu.recorded[-1][1] == expected_arguments(first.exe, first, pack2)
        assert struct.pack("<f", eps) in [struct.pack("<I", a) for a in gpu.recorded[-1][1]
                                          if a < 2 ** 32]


def test_buffers_of_other_dims_take_the_general_path(gpu):
    g, pack, t = layernorm(gpu)
    warm(g, pack)
    flat_scale = gpu.tensor(torch.randn(HIDDEN).to(torch.bfloat16))  # cuDNN's [K] for [1, K, 1, 1]
    for _ in range(2):
        g.execute({**pack, t["S"]: flat_scale}, None)
        assert flat_scale.data_ptr() in gpu.recorded[-1][1]
    # A None key (cudnn-frontend code leaves optional tensors so) is skipped.
    g.execute({**pack, None: flat_scale}, None)
    assert gpu.recorded[-1][1] == expected_arguments(g._last_plan.exe, g._last_plan, pack)


def test_the_runtime_fast_path_alone_says_when_it_cannot_serve(gpu):
    g, pack, t = layernorm(gpu)
    exe = warm(g, pack)
    plan = g._last_plan
    tensors = [pack[x] for x in (*plan.inputs, *plan.outputs)]
    launched = len(gpu.recorded)
    assert exe.run_steady(tensors, 0x7000) is True
    assert exe.run_steady(tensors[:-1], 0x7000) is False              # one short
    assert exe.run_steady([tensors[0].float(), *tensors[1:]], None) is False
    assert exe.run_steady([object(), *tensors[1:]], None) is False
    assert len(gpu.recorded) == launched + 1
    assert executable.Executable.run_steady(
        type("Cold", (), {"_relaunch": None})(), tensors) is False  # before a first call


def test_a_steady_execute_costs_little_more_than_the_runtime_call(gpu, monkeypatch):
    """Host time against a driver that does nothing: execute on top of the
    runtime's own call adds the pack lookups and the scalar read, not a
    second pass over the buffers (which cost about as much as the runtime
    call itself before the fast path)."""
    from test_runtime_relaunch import per_call_us

    monkeypatch.setattr(cuda_mod, "launch_all", lambda launches, stream: None)
    g, pack, t = layernorm(gpu)
    exe = warm(g, pack)
    plan = g._last_plan
    ins, outs = [pack[x] for x in plan.inputs], [pack[x] for x in plan.outputs]
    runtime_us = per_call_us(lambda: exe(*ins, outputs=outs))
    execute_us = per_call_us(lambda: g.execute(pack, None))
    assert execute_us < 1.5 * runtime_us + 2, (
        f"execute took {execute_us:.1f} us of host time, the runtime call {runtime_us:.1f} us")


# -- what the fast path caches ------------------------------------------------------------

def test_same_buffers_again_then_one_moved_the_launch_follows(gpu, monkeypatch):
    """The pointer slots are rewritten only when an address changed: the
    same pack twice launches the same arguments, and a new buffer for one
    tensor (or the workspace-free general path writing the slots in
    between) is picked up by the next steady call."""
    g, pack, t = layernorm(gpu)
    exe = warm(g, pack)
    plan = g._last_plan
    g.execute(pack, None)
    g.execute(pack, None)
    assert gpu.recorded[-1][1] == gpu.recorded[-2][1] == expected_arguments(exe, plan, pack)
    moved = {**pack, t["M"]: gpu.tensor(torch.empty(ROWS, 1, 1, 1))}
    g.execute(moved, None)
    assert gpu.recorded[-1][1] == expected_arguments(exe, plan, moved)
    # The runtime's general path (a raw address for the scale) writes the
    # slots for its own buffers; the steady call after it must write them back.
    other_scale = gpu.tensor(torch.randn(1, HIDDEN, 1, 1).to(torch.bfloat16))
    g.execute({**moved, t["S"]: other_scale.data_ptr()}, None)
    assert other_scale.data_ptr() in gpu.recorded[-1][1]
    general_paths_fail(monkeypatch, exe)
    g.execute(moved, None)
    assert gpu.recorded[-1][1] == expected_arguments(exe, plan, moved)


def test_a_binding_that_changes_between_steady_calls_is_refused_each_time(gpu):
    """Strides that differ from the plan's only on size-1 dims are judged
    once and remembered; a tensor whose dtype, dims, strides or device
    then change is still refused with the first call's typed error, and
    the remembered strides never let another layout through."""
    g, pack, t = layernorm(gpu)
    warm(g, pack)
    # scale [1, K, 1, 1]: strides of other size-1 dims pass, and are remembered.
    scale = gpu.tensor(torch.randn(1, HIDDEN, 1, 1).to(torch.bfloat16))   # (K, 1, 1, 1)
    for _ in range(2):
        g.execute({**pack, t["S"]: scale}, None)
        assert scale.data_ptr() in gpu.recorded[-1][1]
    launched = len(gpu.recorded)
    x = pack[t["X"]]
    cases = [
        (ArgumentError, r"input 'X'|X.*expected dtype bf16", {"X": gpu.tensor(x.float())}),
        (cudnn.InvalidVariantPackError, r"input tensor 'X'.*expected dims \[64, 256, 1, 1\]",
         {"X": gpu.tensor(x[:32].clone())}),
        (ArgumentError, r"X.*expected strides \[256, 1, 256, 256\]",
         {"X": gpu.tensor(torch.empty(HIDDEN, ROWS, 1, 1, dtype=torch.bfloat16)
                          .permute(1, 0, 2, 3))}),
        # mean [rows, 1, 1, 1] is packed: a strided view is refused.
        (ArgumentError, r"LN::MEAN.*expected strides",
         {"M": gpu.tensor(torch.empty(ROWS, 2, 1, 1))[:, :1]}),
        (ArgumentError, r"scale.*expected strides",
         {"S": gpu.tensor(torch.empty(1, HIDDEN, 2, 1, dtype=torch.bfloat16))[:, :, :1]
          .as_strided((1, HIDDEN, 1, 1), (HIDDEN, 2, 1, 1))}),
    ]
    on_cpu = gpu.tensor(x.clone())
    on_cpu.__dict__["fake_device"] = torch.device("cpu")
    cases.append((ArgumentError, r"X.*expected a CUDA tensor", {"X": on_cpu}))
    for error, match, changes in cases:
        for _ in range(2):                             # and again, once anything is cached
            g.execute({**pack, t["S"]: scale}, None)
            with pytest.raises(error, match=match):
                g.execute({**pack, t["S"]: scale, **{t[k]: v for k, v in changes.items()}},
                          None)
    assert len(gpu.recorded) == launched + 2 * len(cases)


def test_a_handles_stream_object_is_read_once_and_a_destroyed_handle_refused(gpu):
    """set_stream reads a stream object's handle (as cudnnSetStream takes the
    raw handle); execute, steady or not, launches on it. A destroyed handle
    is a GraphError, and an object that is no stream the runtime's
    ArgumentError, at every execute, steady calls included."""
    from dnnc.errors import GraphError

    class SideStream:                    # what torch.cuda.Stream has
        cuda_stream = 0x8000

    g, pack, t = layernorm(gpu)
    handle = cudnn.create_handle()
    side = SideStream()
    cudnn.set_stream(handle, side)
    assert cudnn.get_stream(handle) == 0x8000
    warm(g, pack, handle)
    g.execute(pack, None, handle=handle)
    assert [r[2] for r in gpu.recorded[-2:]] == [0x8000, 0x8000]
    cudnn.set_stream(handle, "the default stream")
    launched = len(gpu.recorded)
    for _ in range(2):
        with pytest.raises(ArgumentError, match="stream=: expected a CUDA stream"):
            g.execute(pack, None, handle=handle)
    cudnn.destroy_handle(handle)
    for _ in range(2):
        with pytest.raises(GraphError, match="expected a handle from create_handle"):
            g.execute(pack, None, handle=handle)
    assert len(gpu.recorded) == launched
