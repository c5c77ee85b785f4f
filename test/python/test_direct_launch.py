"""Launches through libcuda itself (runtime/dnnc_runtime/direct_launch.py):
the ctypes structures against cuda-python's own bytes, and the launch loop
against a recording stand-in for libcuda (no GPU here)."""

import ctypes

import pytest

from dnnc_runtime import cuda, direct_launch
from dnnc_runtime.errors import CudaError

driver = pytest.importorskip("cuda.bindings.driver")
SERIALIZATION = int(driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)


def test_structures_have_cuda_pythons_bytes():
    theirs = driver.CUlaunchConfig()
    theirs.gridDimX, theirs.gridDimY, theirs.gridDimZ = 3, 5, 7
    theirs.blockDimX, theirs.blockDimY, theirs.blockDimZ = 128, 2, 1
    theirs.sharedMemBytes = 99000
    theirs.hStream = driver.CUstream(0x1234)
    attribute = driver.CUlaunchAttribute()
    attribute.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attribute.value.programmaticStreamSerializationAllowed = 1
    theirs.attrs, theirs.numAttrs = [attribute], 1

    mine_attribute = direct_launch.Attribute()
    mine_attribute.id = SERIALIZATION
    mine_attribute.value[0] = 1
    mine = direct_launch.Config(3, 5, 7, 128, 2, 1, 99000, 0x1234,
                                ctypes.pointer(mine_attribute), 1)
    size = ctypes.sizeof(direct_launch.Config)
    assert size == 56 and ctypes.sizeof(direct_launch.Attribute) == 72
    their_bytes = ctypes.string_at(theirs.getPtr(), size)
    my_bytes = ctypes.string_at(ctypes.addressof(mine), size)
    attrs_at = direct_launch.Config.attrs.offset
    # Equal but for the attribute array's address (each points at its own).
    assert my_bytes[:attrs_at] == their_bytes[:attrs_at]
    assert my_bytes[attrs_at + 8:] == their_bytes[attrs_at + 8:]
    assert ctypes.string_at(attribute.getPtr(), 72) == \
        ctypes.string_at(ctypes.addressof(mine_attribute), 72)


def _value(arg):
    """What C receives for one argument of an untyped ctypes call."""
    return None if arg is None else arg.value


class FakeLibcuda:
    """cuLaunchKernel / cuLaunchKernelEx that record their arguments (as
    libcuda would read them: the ctypes objects' values, the config through
    its pointer) and fail with ``fail_at``'s status on that call."""

    def __init__(self, fail_at=None, status=700):
        self.calls, self.fail_at, self.status = [], fail_at, status

    def _result(self):
        return self.status if len(self.calls) - 1 == self.fail_at else 0

    def cuLaunchKernel(self, *args):
        assert len(args) == 11 and all(a is None or isinstance(a, ctypes._SimpleCData)
                                       for a in args), "an argument ctypes would convert"
        self.calls.append(("plain", tuple(_value(a) for a in args)))
        return self._result()

    def cuLaunchKernelEx(self, ref, function, params, extra):
        config = ref._obj
        attribute = (config.attrs[0].id, config.attrs[0].value[0]) if config.numAttrs else ()
        self.calls.append(("ex", (function.value, config.gridDimX, config.blockDimX,
                                  config.sharedMemBytes, config.hStream, params.value,
                                  config.numAttrs, *attribute)))
        return self._result()

    # replay.py's: a graph launch is recorded; ``capturing`` holds the
    # streams that report being captured.
    capturing = ()

    def cuGraphLaunch(self, graph, stream):
        self.calls.append(("graph", (graph.value, stream.value)))
        return self._result()

    def cuStreamIsCapturing(self, stream, status):
        status._obj.value = 1 if stream.value in self.capturing else 0
        return 0


def _launch_args():
    early = object()   # cuda.dependent_launch_config's object: only its presence counts
    return ((driver.CUfunction(0xA0), 4, 1, 1, 128, 1, 1, 0, 0x5000, None),
            (driver.CUfunction(0xB0), 8, 2, 1, 256, 1, 1, 4096, 0x6000, early),
            (driver.CUfunction(0xC0), 1, 1, 1, 32, 1, 1, 0, 0x7000, None))


def test_launches_run_in_order_with_the_stream():
    lib = FakeLibcuda()
    launches = direct_launch.Launches(lib, _launch_args(), SERIALIZATION,
                                      entry="cuLaunchKernel")
    assert launches.run(0xCAFE) == (0, None)
    assert lib.calls == [
        ("plain", (0xA0, 4, 1, 1, 128, 1, 1, 0, 0xCAFE, 0x5000, None)),
        ("ex", (0xB0, 8, 256, 4096, 0xCAFE, 0x6000, 1, SERIALIZATION, 1)),
        ("plain", (0xC0, 1, 1, 1, 32, 1, 1, 0, 0xCAFE, 0x7000, None)),
    ]
    launches.run(0xBEEF)   # a new stream reaches every launch
    assert [args[8 if kind == "plain" else 4] for kind, args in lib.calls[3:]] == [0xBEEF] * 3
    launches.run(0)        # and the legacy default stream
    assert [args[8 if kind == "plain" else 4] for kind, args in lib.calls[6:]] == [None] * 3


def test_the_default_entry_launches_every_kernel_with_cuLaunchKernelEx():
    lib = FakeLibcuda()
    launches = direct_launch.Launches(lib, _launch_args(), SERIALIZATION)
    assert direct_launch.DEFAULT_ENTRY == "cuLaunchKernelEx"
    assert launches.run(0xCAFE) == (0, None)
    assert lib.calls == [
        ("ex", (0xA0, 4, 128, 0, 0xCAFE, 0x5000, 0)),     # no attribute
        ("ex", (0xB0, 8, 256, 4096, 0xCAFE, 0x6000, 1, SERIALIZATION, 1)),
        ("ex", (0xC0, 1, 32, 0, 0xCAFE, 0x7000, 0)),
    ]
    with pytest.raises(ValueError, match="launch entry"):
        direct_launch.Launches(lib, _launch_args(), SERIALIZATION, entry="cuLaunch")


def test_a_failing_launch_stops_the_plan_and_names_the_function():
    lib = FakeLibcuda(fail_at=1)
    launches = direct_launch.Launches(lib, _launch_args(), SERIALIZATION)
    assert launches.run(0) == (700, "cuLaunchKernelEx")
    assert len(lib.calls) == 2
    lib.calls.clear()
    cuda.driver()
    with pytest.raises(CudaError, match="cuLaunchKernelEx.*CUDA_ERROR_ILLEGAL_ADDRESS"):
        cuda.launch_all(launches, 0)


def test_without_libcuda_the_tuples_stay(monkeypatch):
    monkeypatch.setattr(direct_launch, "library", lambda: None)
    args = _launch_args()
    assert cuda.pack_launches(args) is args


def test_the_context_reader_reads_cuCtxGetCurrent(monkeypatch):
    """What Device.activate asks first: the current context as an int, 0
    for none or a failing call (activate then asks cuda-python)."""
    answers = [(0, 0x1234), (0, None), (201, 0x1234)]

    class Lib:
        def cuCtxGetCurrent(self, ref):
            status, context = answers.pop(0)
            ref._obj.value = context
            return status
    monkeypatch.setattr(direct_launch, "library", lambda: Lib())
    current = direct_launch.context_reader()
    assert [current(), current(), current()] == [0x1234, 0, 0]
    monkeypatch.setattr(direct_launch, "library", lambda: None)
    assert direct_launch.context_reader() is None

