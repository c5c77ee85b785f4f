"""dnnc_runtime without a GPU: artifact validation, argument checks, launch packing.

.dnnpkg files are built by hand here (zipfile + a manifest dict + a small PTX
text). Argument checks run against a poisoned CUDA layer (any driver call
fails the test), which proves they all happen before the first CUDA call. The
launch path (device binding, argument packing, workspace, NumPy staging,
skipped empty kernels, streams, timing) runs against ``FakeGPU``, a stand-in
for ``dnnc_runtime.cuda`` whose memory is host bytearrays and whose kernels
are Python functions. The real GPU tests are in test/gpu/test_runtime_gpu.py.
"""

import ctypes
import io
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
try:
    import dnnc_runtime
except ImportError:  # a plain checkout: the runtime lives in runtime/
    sys.path.insert(0, os.path.join(ROOT, "runtime"))
    import dnnc_runtime

from dnnc_runtime import ArgumentError, ArtifactError, CudaError, DeviceError, DnncRuntimeError
from dnnc_runtime import artifact as artifact_mod
from dnnc_runtime import cuda as cuda_mod

try:
    import torch
except ImportError:
    torch = None

# Only the .entry signatures matter without a GPU: the loader checks that every
# kernel's entry exists and takes as many (and as wide) parameters as bound.
PTX = """
.version 7.0
.target sm_80
.address_size 64

.visible .entry scale2(
\t.param .u64 scale2_param_0,
\t.param .u64 scale2_param_1,
\t.param .u64 scale2_param_2
)
{
\tret;
}

.visible .entry axpy(
\t.param .u64 axpy_param_0,
\t.param .u64 axpy_param_1,
\t.param .u64 axpy_param_2,
\t.param .f32 axpy_param_3,
\t.param .u32 axpy_param_4
)
{
\tret;
}
"""


def scale_manifest(n=1000, arch="sm_80", dtype="f32"):
    """y = 2 * x over n elements: one kernel scale2(x, y, n:i64)."""
    return {
        "format_version": 1, "dnnc_version": "0.1.0", "mlir_version": "22.1.8",
        "arch": arch, "graph": "scale",
        "inputs": [{"name": "x", "dims": [n], "strides": [1], "dtype": dtype}],
        "outputs": [{"name": "y", "dims": [n], "strides": [1], "dtype": dtype}],
        "workspace_bytes": 0,
        "buffers": [{"kind": "input", "index": 0}, {"kind": "output", "index": 0}],
        "kernels": [{
            "name": "scale_k0", "entry": "scale2", "strategy": "simt-pointwise",
            "grid": [(n + 127) // 128, 1, 1], "block": [128, 1, 1], "shared_bytes": 0,
            "args": [{"kind": "buffer", "buffer": 0, "byte_offset": 0},
                     {"kind": "buffer", "buffer": 1, "byte_offset": 0},
                     {"kind": "scalar", "type": "i64", "value": n}]}],
    }


def axpy_manifest():
    """Two inputs x [2, 3] and w [2, 3] (w stored with padded rows), output y [2, 3].

    Kernel 0 writes x * 2 into the workspace (slice at 256), kernel 1 computes
    y = ws + w * a; kernel 2 has an empty grid and must never launch.
    """
    return {
        "format_version": 1, "arch": "sm_90a", "graph": "axpy",
        "inputs": [{"name": "x", "dims": [2, 3], "strides": [3, 1], "dtype": "f32"},
                   {"name": "w", "dims": [2, 3], "strides": [4, 1], "dtype": "f32"}],
        "outputs": [{"name": "y", "dims": [2, 3], "strides": [3, 1], "dtype": "f32"}],
        "workspace_bytes": 512,
        "buffers": [{"kind": "input", "index": 0}, {"kind": "input", "index": 1},
                    {"kind": "output", "index": 0},
                    {"kind": "workspace", "offset": 256, "bytes": 24}],
        "kernels": [
            {"name": "k0_scale", "entry": "scale2", "strategy": "simt-pointwise",
             "grid": [1, 1, 1], "block": [32, 1, 1], "shared_bytes": 0,
             "args": [{"kind": "buffer", "buffer": 0}, {"kind": "buffer", "buffer": 3},
                      {"kind": "scalar", "type": "i64", "value": 6}]},
            {"name": "k1_axpy", "entry": "axpy", "strategy": "simt-generic",
             "grid": [1, 1, 1], "block": [32, 1, 1], "shared_bytes": 65536,
             "dependent_launch": True,
             "args": [{"kind": "buffer", "buffer": 3}, {"kind": "buffer", "buffer": 1},
                      {"kind": "buffer", "buffer": 2, "byte_offset": 0},
                      {"kind": "scalar", "type": "f32", "value": 0.5},
                      {"kind": "scalar", "type": "i32", "value": 6}]},
            {"name": "k2_empty", "entry": "scale2", "strategy": "simt-generic",
             "grid": [0, 1, 1], "block": [32, 1, 1], "shared_bytes": 0,
             "args": [{"kind": "buffer", "buffer": 0}, {"kind": "buffer", "buffer": 2},
                      {"kind": "scalar", "type": "i64", "value": 0}]},
        ],
    }


def package(manifest, ptx=PTX, source="// graph.mlir\n"):
    """A .dnnpkg as bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("manifest.json", json.dumps(manifest))
        if ptx is not None:
            z.writestr("kernels.ptx", ptx)
        if source is not None:
            z.writestr("graph.mlir", source)
    return buf.getvalue()


def load(manifest, **kw):
    return dnnc_runtime.load(package(manifest, **kw))


# -- loading and validating artifacts ------------------------------------------

def test_load_from_bytes_path_and_file(tmp_path):
    data = package(scale_manifest())
    path = tmp_path / "scale.dnnpkg"
    path.write_bytes(data)
    for source in (data, str(path), path, open(path, "rb")):
        exe = dnnc_runtime.load(source)
        assert [t.name for t in exe.inputs] == ["x"] and [t.name for t in exe.outputs] == ["y"]
        assert exe.inputs[0].dims == (1000,) and exe.outputs[0].dtype == "f32"
        assert exe.arch == "sm_80" and exe.artifact.source == "// graph.mlir\n"
        assert exe.device is None  # loading touches no GPU


def test_plan_is_a_table():
    exe = load(axpy_manifest())
    assert [k.name for k in exe.plan] == ["k0_scale", "k1_axpy", "k2_empty"]
    assert exe.plan[1].shared_bytes == 65536 and exe.plan[1].grid == (1, 1, 1)
    text = str(exe.plan)
    lines = text.splitlines()
    assert lines[0].split() == ["#", "kernel", "entry", "strategy", "grid", "block", "shared", "args"]
    assert "k1_axpy" in lines[2] and "simt-generic" in lines[2] and "65536" in lines[2]
    assert "skipped: empty grid" in lines[3]
    assert "axpy" in repr(exe) and "sm_90a" in repr(exe)
    assert exe.plan.labels == ["scale2#0", "axpy", "scale2#2"]


REASON = ("simt-pointwise (x4 vectors) not implemented yet (1 pointwise op over 6 elements); "
          "block 32: few points (6): one block of 32 holds them")


def explained_manifest():
    """axpy_manifest with the optional config and reason of every launch; k0
    and k2 come from one kernel function, k1 from a copy made after the
    heuristics."""
    m = axpy_manifest()
    k0, k1, k2 = m["kernels"]
    k0.update(config={"block": [32, 1, 1], "strategy": "simt-pointwise", "vector": 4,
                      "unroll": 2}, reason=REASON)
    k1.update(config={"block": [32, 1, 1], "strategy": "simt-generic"},
              reason="created by dnn-io-strides after the heuristics; default config")
    k2.update(name="k0_scale", strategy="simt-pointwise", config=k0["config"], reason=REASON)
    return m


def test_plan_shows_strategy_launch_and_reason():
    exe = load(explained_manifest())
    k0, k1, _ = exe.plan
    assert k0.reason == REASON and k0.config["vector"] == 4
    assert k0.config_text == "simt-pointwise vector=4 unroll=2"
    assert k1.config_text == "simt-generic"
    lines = str(exe.plan).splitlines()
    assert lines[1].split()[:7] == ["0", "k0_scale", "scale2", "simt-pointwise", "vector=4",
                                    "unroll=2", "1x1x1"]
    # The reason sits under its launch, indented, wrapped; once per kernel function.
    text = "\n".join(lines)
    assert lines[2].lstrip().startswith("why: simt-pointwise (x4 vectors) not implemented yet")
    assert lines[2].startswith("   why:") and lines[3].startswith("        ")
    assert all(len(line) <= 100 for line in lines if line.startswith(" "))
    assert " ".join(line.strip() for line in lines[2:4]) == f"why: {REASON}"
    assert text.count("why: simt-pointwise") == 1
    assert "k1_axpy" in lines[4] and "why: created by dnn-io-strides after the heuristics" in lines[5]
    assert "skipped: empty grid" in lines[-1]


def test_manifest_without_config_or_reason_still_loads():
    """Packages of older compilers have neither field: empty, and no reason line."""
    exe = load(axpy_manifest())
    assert all(k.reason == "" and k.config == {} for k in exe.plan)
    assert "why:" not in str(exe.plan) and len(str(exe.plan).splitlines()) == 4


def test_llvm_style_ptx_signatures():
    """What MLIR/LLVM's NVPTX back end writes: .ptr/.align qualifiers, .maxntid."""
    ptx = """
.version 8.0
.target sm_90a
.address_size 64

.visible .entry g_k0_kernel_3(
	.param .u64 .ptr .align 1 g_k0_kernel_3_param_0,
	.param .u64 .ptr .global .align 16 g_k0_kernel_3_param_1,
	.param .u64 g_k0_kernel_3_param_2
)
.maxntid 256, 1, 1
{
	ret;
}
"""
    m = scale_manifest()
    m["kernels"][0]["entry"] = "g_k0_kernel_3"
    assert load(m, ptx=ptx).plan[0].entry == "g_k0_kernel_3"
    assert artifact_mod.ptx_params(ptx, "g_k0_kernel_3") == [8, 8, 8]
    assert artifact_mod.ptx_params(".entry s(.param .align 8 .b8 s_param_0[128])", "s") == [128]
    assert artifact_mod.ptx_params(ptx, "g_k0_kernel") is None


def test_format_version_mismatch_names_both_versions():
    m = scale_manifest()
    m["format_version"] = 3
    with pytest.raises(ArtifactError, match=r"format_version: expected one of 1, 2 .* got 3"):
        load(m)
    del m["format_version"]
    with pytest.raises(ArtifactError, match="missing required key: format_version"):
        load(m)


@pytest.mark.parametrize("key", ["arch", "inputs", "outputs", "workspace_bytes", "buffers", "kernels"])
def test_missing_required_key(key):
    m = scale_manifest()
    del m[key]
    with pytest.raises(ArtifactError, match=f"missing required key.*{key}"):
        load(m)


def test_not_a_package(tmp_path):
    with pytest.raises(ArtifactError, match="not a .dnnpkg"):
        dnnc_runtime.load(b"this is not a zip")
    with pytest.raises(ArtifactError, match="has no kernels.ptx"):
        load(scale_manifest(), ptx=None)
    with pytest.raises(ArtifactError, match="no such artifact file"):
        dnnc_runtime.load(str(tmp_path / "missing.dnnpkg"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("manifest.json", "{not json")
        z.writestr("kernels.ptx", PTX)
    with pytest.raises(ArtifactError, match="not valid JSON"):
        dnnc_runtime.load(buf.getvalue())


def test_graph_mlir_is_optional():
    assert load(scale_manifest(), source=None).artifact.source == ""


def _broken(edit):
    m = axpy_manifest()
    edit(m)
    return m


@pytest.mark.parametrize("edit, message", [
    (lambda m: m.update(arch="hopper"), r"arch: expected a name like 'sm_80'.*got 'hopper'"),
    (lambda m: m["inputs"][0].update(dtype="f64"), r"inputs\[0\] 'x': dtype: expected one of f32, .*got 'f64'"),
    (lambda m: m["inputs"][0].update(strides=[3]), r"'x': strides: expected 2 \(one per dim\), got 1"),
    (lambda m: m["outputs"][0].update(strides=[1, 1]),
     r"outputs\[0\] 'y': dim 1 \(size 3\) stride: expected >= 2, the elements dim 0 spans, got 1"),
    (lambda m: m["outputs"][0].update(strides=[0, 1]),
     r"outputs\[0\] 'y': dim 0 \(size 2\) stride: expected > 0, got 0 \(an output cannot broadcast"),
    (lambda m: m["inputs"][0].update(dims=[2, -3]), r"'x': dims: expected >= 0, got -3"),
    (lambda m: m["inputs"][0].update(dims=[2, "3"]), r"'x': dims: expected an integer, got '3'"),
    (lambda m: m["inputs"][0].pop("dtype"), r"'x': missing key 'dtype'"),
    (lambda m: m["outputs"][0].update(name="x"), r"tensor name 'x' is used more than once"),
    (lambda m: m["buffers"][1].update(index=2), r"buffers\[1\]: input index: expected < 2 .*got 2"),
    (lambda m: m["buffers"][3].update(offset=100), r"offset: expected a multiple of 256, got 100"),
    (lambda m: m["buffers"][3].update(bytes=300),
     r"workspace slice \[256, 556\) out of range: expected within workspace_bytes = 512"),
    (lambda m: m["buffers"][0].update(kind="constant"), r"kind: expected input, output or workspace"),
    (lambda m: m["kernels"][0]["args"][1].update(buffer=7),
     r"kernels\[0\] 'k0_scale': args\[1\]: buffer: expected an index < 4 .*got 7"),
    (lambda m: m["kernels"][1]["args"][2].update(byte_offset=4096),
     r"byte_offset: expected <= 24 \(the size of buffers\[2\]\), got 4096"),
    (lambda m: m["kernels"][0]["args"][2].update(type="f16"), r"type: expected one of i32, i64, f32"),
    (lambda m: m["kernels"][1]["args"][4].update(value=2**40), r"value: expected <= 2147483647"),
    (lambda m: m["kernels"][0].update(block=[64, 32, 1]), r"block: expected at most 1024 threads"),
    (lambda m: m["kernels"][0].update(grid=[1, 1]), r"grid: expected 3 entries, got 2"),
    (lambda m: m["kernels"][1].update(dependent_launch="yes"),
     r"'k1_axpy': dependent_launch: expected true or false, got 'yes'"),
    (lambda m: m["kernels"][1].update(name=""), r"kernels\[1\]: name: expected a non-empty string"),
    (lambda m: m["kernels"][0].update(entry="nowhere"), r"entry 'nowhere' is not in kernels.ptx"),
    (lambda m: m["kernels"][0]["args"].pop(), r"'k0_scale': expected 3 arguments .* got 2"),
    (lambda m: m["kernels"][0]["args"].__setitem__(2, {"kind": "scalar", "type": "i32", "value": 6}),
     r"argument 2 is an i32 \(4 bytes\) .* parameter 2 of .entry scale2 is 8 bytes"),
    (lambda m: m["kernels"][1]["args"].__setitem__(3, {"kind": "buffer", "buffer": 0}),
     r"argument 3 is a pointer \(8 bytes\) .* is 4 bytes"),
    (lambda m: m["kernels"][0]["args"][0].update(kind="texture"),
     r"kind: expected buffer, scalar, scalar_input or tma, got 'texture'"),
    (lambda m: m["kernels"][0].update(reason=["slow"]), r"'k0_scale': reason: expected a string"),
    (lambda m: m["kernels"][0].update(config="block=32"), r"'k0_scale': config: expected an object"),
    (lambda m: m["kernels"][0].update(config={"strategy": "tc-sm90"}),
     r"'k0_scale': config: strategy expected 'simt-pointwise' \(the kernel's strategy\), got 'tc-sm90'"),
])
def test_manifest_errors(edit, message):
    with pytest.raises(ArtifactError, match=message):
        load(_broken(edit))


def test_errors_are_one_hierarchy():
    for cls in (ArtifactError, ArgumentError, CudaError, DeviceError):
        assert issubclass(cls, DnncRuntimeError) and issubclass(cls, RuntimeError)
    err = CudaError("cuModuleLoadDataEx", "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed",
                    log="ptxas fatal: parse error")
    assert "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX" in str(err)
    assert err.log in str(err) and err.call == "cuModuleLoadDataEx"


# -- arch compatibility (pure: takes the compute capability) -------------------

@pytest.mark.parametrize("arch, capability, runs", [
    ("sm_90a", (9, 0), True), ("sm_90a", (10, 0), False), ("sm_90a", (8, 0), False),
    ("sm_80", (8, 0), True), ("sm_80", (8, 6), True), ("sm_80", (9, 0), True),
    ("sm_80", (7, 5), False), ("sm_86", (8, 0), False), ("sm_100a", (10, 0), True),
    ("sm_100f", (10, 3), True), ("sm_100f", (11, 0), False), ("sm_120", (12, 0), True),
])
def test_arch_runs_on(arch, capability, runs):
    assert artifact_mod.arch_runs_on(arch, capability) is runs


def test_arch_errors_name_both():
    with pytest.raises(ArtifactError, match=r"built for sm_90a cannot run on .*compute capability "
                                            r"8\.0, sm_80\).*runs only on compute capability 9\.0"):
        artifact_mod.check_arch("sm_90a", (8, 0))
    with pytest.raises(ArtifactError, match=r"built for sm_80 .*7\.5, sm_75\).*needs compute "
                                            r"capability 8\.0 or newer"):
        artifact_mod.check_arch("sm_80", (7, 5))
    assert cuda_mod.arch_name((9, 0)) == "sm_90a" and cuda_mod.arch_name((8, 6)) == "sm_86"


# -- argument checks happen before any CUDA call --------------------------------

@pytest.fixture
def no_cuda(monkeypatch):
    """Every CUDA entry point of the runtime fails the test if called."""
    def poisoned(name):
        def fail(*args, **kwargs):
            raise AssertionError(f"CUDA called: {name}")
        return fail
    for name in dir(cuda_mod):
        obj = getattr(cuda_mod, name)
        if callable(obj) and not name.startswith("__") and getattr(obj, "__module__", "") == cuda_mod.__name__:
            if name not in ("arch_name", "check"):
                monkeypatch.setattr(cuda_mod, name, poisoned(name))


class FakeCudaArray:
    """An object with __cuda_array_interface__ and a made-up device address."""

    def __init__(self, shape, typestr="<f4", strides=None, address=0x7F00_0000_0000, readonly=False):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr,
                                         "data": (address, readonly), "strides": strides,
                                         "version": 3}


def _axpy_args():
    return np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)


@pytest.mark.parametrize("call, tensor, message", [
    (lambda exe, x, w: exe(x), "w", r"missing input\(s\) w: expected 2 input\(s\) \(x, w\), got 1"),
    (lambda exe, x, w: exe(x, w, x), None, r"expected 2 input\(s\) \(x, w\), got 3 positional"),
    (lambda exe, x, w: exe(x, v=w), "v", r"unknown input 'v': expected one of x, w"),
    (lambda exe, x, w: exe(x, y=w), "y", r"unknown input 'y'.*\(outputs go in outputs=\)"),
    (lambda exe, x, w: exe(x, w, x=x), "x", r"input 'x' is given both by position and by name"),
    (lambda exe, x, w: exe(x, np.ones((3, 2), np.float32)), "w",
     r"input 'w': expected shape \[2, 3\], got \[3, 2\]"),
    (lambda exe, x, w: exe(x.astype(np.float16), w), "x",
     r"input 'x': expected dtype f32 \(numpy float32\), got numpy float16"),
    (lambda exe, x, w: exe(x, [[1.0] * 3] * 2), "w", r"input 'w': expected a torch tensor, .*got list"),
    (lambda exe, x, w: exe(x, w, outputs=[]), None, r"outputs=: expected 1 output\(s\) \(y\), got 0"),
    (lambda exe, x, w: exe(x, w, outputs={"z": x}), "z", r"outputs=: unknown output 'z'"),
    (lambda exe, x, w: exe(x, w, outputs=[np.ones((2, 3), np.float64)]), "y",
     r"output 'y': expected dtype f32 \(numpy float32\), got numpy float64"),
    (lambda exe, x, w: exe(x, w, outputs=[np.broadcast_to(np.float32(0), (2, 3))]), "y",
     r"output 'y': expected a writable array, got a read-only one"),
    (lambda exe, x, w: exe(x, w, stream="s"), None, r"stream=: expected a CUDA stream"),
    (lambda exe, x, w: exe(FakeCudaArray((2, 3), "<f2"), w), "x",
     r"input 'x': expected dtype f32 \(typestr <f4\), got typestr <f2"),
    (lambda exe, x, w: exe(FakeCudaArray((2, 3)), FakeCudaArray((2, 3))), "w",
     r"input 'w': expected strides \[4, 1\] \(in elements; any on size-1 dims\), got \[3, 1\]"),
    (lambda exe, x, w: exe(FakeCudaArray((2, 3), strides=(12, 6)), w), "x",
     r"expected strides in whole elements of 4 bytes, got byte strides \[12, 6\]"),
    (lambda exe, x, w: exe(FakeCudaArray((2, 3), address=0x7F00_0000_0004), w), "x",
     r"input 'x': expected an address aligned to 16 bytes, got 0x7f0000000004 \(4 bytes past"),
    (lambda exe, x, w: exe(x, w, outputs=[FakeCudaArray((2, 3), readonly=True)]), "y",
     r"output 'y': expected a writable array, got a read-only one"),
])
def test_argument_errors_before_any_cuda_call(no_cuda, call, tensor, message):
    exe = load(axpy_manifest())
    with pytest.raises(ArgumentError, match=message) as info:
        call(exe, *_axpy_args())
    assert info.value.tensor == tensor


def test_good_arguments_reach_the_device(no_cuda):
    """The checks accept what they should: then the first CUDA call happens."""
    exe = load(axpy_manifest())
    x, w = FakeCudaArray((2, 3)), FakeCudaArray((2, 3), strides=(16, 4))
    with pytest.raises(AssertionError, match="CUDA called"):
        exe(x, w)
    # size-1 dims may have any stride; dims of size 0 make any strides fine
    one = load(scale_manifest(n=1))
    with pytest.raises(AssertionError, match="CUDA called"):
        one(FakeCudaArray((1,), strides=(64,)))


def test_dlpack_without_torch_is_refused_clearly(no_cuda, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "torch.utils", None)
    monkeypatch.setitem(sys.modules, "torch.utils.dlpack", None)

    class Producer:
        def __dlpack__(self, stream=None):
            raise AssertionError("not reached")

    exe = load(scale_manifest())
    with pytest.raises(ArgumentError, match=r"input 'x': a DLPack argument \(Producer\) is imported "
                                            r"through PyTorch, which is not installed"):
        exe(Producer())


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.torch
def test_torch_argument_errors(no_cuda):
    exe = load(axpy_manifest())
    x = torch.ones(2, 3)
    w = torch.ones(2, 4)[:, :3]           # the manifest's padded layout: strides (4, 1)
    cases = [
        ((x, w), "x", r"input 'x': expected a CUDA tensor, got a tensor on cpu"),
        ((x.half(), w), "x", r"input 'x': expected dtype f32 \(torch.float32\), got torch.float16"),
        ((x.numpy(), torch.ones(2, 3)), "w", r"input 'w': expected strides \[4, 1\] .*got \[3, 1\]"),
        ((x.numpy(), w), "w", r"input 'w': expected a CUDA tensor, got a tensor on cpu"),
        ((x.t(), w), "x", r"input 'x': expected shape \[2, 3\], got \[3, 2\]"),
        ((torch.ones(3, 2).t(), w), "x", r"input 'x': expected strides \[3, 1\] .*got \[1, 2\]"),
    ]
    for args, tensor, message in cases:
        with pytest.raises(ArgumentError, match=message) as info:
            exe(*args)
        assert info.value.tensor == tensor
    with pytest.raises(ArgumentError, match=r"output 'y': expected a CUDA tensor, got a tensor on cpu"):
        exe(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32), outputs=[torch.empty(2, 3)])


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.torch
def test_torch_dtype_spellings(no_cuda):
    for dtype, torch_dtype in [("bf16", torch.bfloat16), ("f16", torch.float16),
                               ("f8E4M3FN", torch.float8_e4m3fn), ("f8E5M2", torch.float8_e5m2),
                               ("i1", torch.bool), ("i32", torch.int32), ("si8", torch.int8),
                               ("ui8", torch.uint8)]:
        exe = load(scale_manifest(n=4, dtype=dtype))
        with pytest.raises(ArgumentError, match="expected a CUDA tensor"):  # the dtype was accepted
            exe(torch.zeros(4, dtype=torch_dtype))
        with pytest.raises(ArgumentError, match=f"expected dtype {dtype} "):
            exe(torch.zeros(4, dtype=torch.float32 if dtype != "f32" else torch.float16))


def test_numpy_dtype_spellings(no_cuda):
    import ml_dtypes
    for dtype, np_dtype in [("bf16", ml_dtypes.bfloat16), ("f8E4M3FN", ml_dtypes.float8_e4m3fn),
                            ("f8E5M2", ml_dtypes.float8_e5m2), ("i1", np.bool_), ("f16", np.float16),
                            ("i32", np.int32), ("si8", np.int8), ("ui8", np.uint8)]:
        exe = load(scale_manifest(n=4, dtype=dtype))
        with pytest.raises(AssertionError, match="CUDA called"):  # accepted: goes on to the GPU
            exe(np.zeros(4, np_dtype))
        with pytest.raises(ArgumentError, match=f"expected dtype {dtype} "):
            exe(np.zeros(4, np.float32 if dtype != "f32" else np.float16))
    # int8 and uint8 are told apart, and neither is a boolean.
    for dtype, wrong in [("si8", np.uint8), ("ui8", np.int8), ("si8", np.bool_), ("i1", np.int8)]:
        with pytest.raises(ArgumentError, match=f"expected dtype {dtype} "):
            load(scale_manifest(n=4, dtype=dtype))(np.zeros(4, wrong))


# -- the launch path, on a fake GPU --------------------------------------------

class FakeDevice:
    def __init__(self, capability):
        self.index, self.name, self.capability = 0, "Fake GPU", capability
        self.max_shared_optin = 227 * 1024
        self.arch = cuda_mod.arch_name(capability)

    def activate(self):
        return False

    def deactivate(self, pushed):
        pass


class FakeGPU:
    """Stands in for dnnc_runtime.cuda: memory is bytearrays, kernels are Python functions.

    A kernel function gets the FakeGPU and the launch's argument values (read
    back from the packed void*[] exactly as the driver would).
    """

    PARAMS = {"scale2": ("u64", "u64", "i64"), "axpy": ("u64", "u64", "u64", "f32", "i32"),
              "tcopy": ("tma", "u64")}
    CTYPES = {"u64": ctypes.c_uint64, "i64": ctypes.c_int64, "i32": ctypes.c_int32,
              "f32": ctypes.c_float}

    def __init__(self, monkeypatch, capability=(9, 0)):
        self.device = FakeDevice(capability)
        self.memory = {}           # base address -> bytearray
        self.next_address = 0x7F00_0000_0000
        self.launches = []
        self.opted_in = {}
        self.capturing = False
        self.kernels = {"scale2": self._scale2, "axpy": self._axpy, "tcopy": lambda desc, y: None}
        self.encoded = []          # the arguments of every encode_tensor_map
        self.zeroed = []           # (address, nbytes, stream) of every memset_async
        patch = {
            "get_device": lambda index: self.device,
            "current_device_index": lambda: None,
            "load_module": lambda ptx: "module",
            "unload_module": lambda module: None,
            "get_function": lambda module, entry: entry,
            "allow_dynamic_shared": lambda f, n: self.opted_in.__setitem__(f, n),
            "launch": self.launch,
            "launch_all": self.launch_all,
            "pack_launches": lambda launch_args: launch_args,
            "mem_alloc": self.alloc,
            "mem_free": lambda address: self.memory.pop(address),
            "memset_async": self.memset_async,
            "dependent_launch_config": lambda *dims: ("early", dims),
            "copy_to_device": self.copy_to_device,
            "copy_to_host": self.copy_to_host,
            "synchronize": lambda stream: None,
            "synchronize_context": lambda: None,
            "is_capturing": lambda stream: self.capturing,
            "event_create": lambda: object(),
            "event_record": lambda event, stream: None,
            "event_elapsed_ms": lambda a, b: 0.25,
            "event_destroy": lambda event: None,
            "encode_tensor_map": self.encode_tensor_map,
            "encode_im2col_tensor_map": self.encode_im2col_tensor_map,
        }
        for name, fn in patch.items():
            monkeypatch.setattr(cuda_mod, name, fn)

    # memory
    def alloc(self, nbytes):
        """Fresh memory holds garbage, as cuMemAlloc's does."""
        address = self.next_address
        self.memory[address] = bytearray(b"\xa5" * nbytes)
        self.next_address += (nbytes + 255) // 256 * 256 + 256
        return address

    def view(self, address, nbytes):
        for base, mem in self.memory.items():
            if base <= address and address + nbytes <= base + len(mem):
                return memoryview(mem)[address - base:address - base + nbytes]
        raise AssertionError(f"address {address:#x} (+{nbytes}) is not device memory")

    def array(self, host, strides=None):
        """A FakeCudaArray over fake device memory holding ``host``."""
        host = np.ascontiguousarray(host)
        address = self.alloc(host.nbytes)
        self.view(address, host.nbytes)[:] = host.tobytes()
        a = FakeCudaArray(host.shape, host.dtype.str, strides, address)
        a.host = lambda: np.frombuffer(self.view(address, host.nbytes), host.dtype).reshape(host.shape)
        return a

    def memset_async(self, address, nbytes, stream):
        self.zeroed.append((address, nbytes, stream))
        self.view(address, nbytes)[:] = bytes(nbytes)

    def copy_to_device(self, address, host_address, nbytes, stream):
        self.view(address, nbytes)[:] = ctypes.string_at(host_address, nbytes)

    def copy_to_host(self, host_address, address, nbytes, stream):
        ctypes.memmove(host_address, bytes(self.view(address, nbytes)), nbytes)

    def f32(self, address, n):
        return np.frombuffer(self.view(address, 4 * n), np.float32)

    # TMA descriptors: the fake's 128 bytes are the tensor's address, then the box
    def encode_tensor_map(self, dtype, shape, strides, box, swizzle, l2_promotion, oob_fill, address):
        self.encoded.append((dtype, shape, strides, box, swizzle, l2_promotion, oob_fill, address))
        if address % 16:   # what the driver says to an address TMA cannot use
            raise CudaError("cuTensorMapEncodeTiled", "CUDA_ERROR_INVALID_VALUE", "invalid argument")
        return address.to_bytes(8, "little") + bytes(box) + bytes(120 - len(box))

    def encode_im2col_tensor_map(self, dtype, shape, strides, box, lower, upper, element_strides,
                                 swizzle, l2_promotion, oob_fill, address):
        self.encoded.append(("im2col", dtype, shape, strides, box, lower, upper, element_strides,
                             swizzle, l2_promotion, oob_fill, address))
        return address.to_bytes(8, "little") + bytes(box) + bytes(element_strides) + \
            bytes(120 - len(box) - len(element_strides))

    # launch
    def launch(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, early=None):
        types = self.PARAMS[function]
        slots = (ctypes.c_void_p * len(types)).from_address(params)
        args = []
        for i, t in enumerate(types):
            if t == "tma":   # by value: the parameter points at the 128 bytes, aligned
                assert slots[i] % 64 == 0
                args.append(ctypes.string_at(slots[i], 128))
            else:
                args.append(self.CTYPES[t].from_address(slots[i]).value)
        self.launches.append({"function": function, "grid": (gx, gy, gz), "block": (bx, by, bz),
                              "shared": shared, "stream": stream, "args": args,
                              "early": early})
        self.kernels[function](*args)

    def launch_all(self, launches, stream):
        for function, gx, gy, gz, bx, by, bz, shared, params, early in launches:
            self.launch(function, gx, gy, gz, bx, by, bz, shared, stream, params, early)

    def _scale2(self, x, y, n):          # y[i] = 2 x[i], flat
        self.f32(y, n)[:] = 2 * self.f32(x, n)

    def _axpy(self, ws, w, y, a, n):     # y = ws + a * w, with w's rows padded to 4
        w2 = np.lib.stride_tricks.as_strided(self.f32(w, 7), (2, 3), (16, 4))
        self.f32(y, n)[:] = self.f32(ws, n) + a * w2.reshape(-1)


def test_launch_packs_pointers_and_scalars(monkeypatch):
    gpu = FakeGPU(monkeypatch)
    exe = load(axpy_manifest())
    x_host = np.arange(6, dtype=np.float32).reshape(2, 3)
    w_host = np.zeros((2, 4), np.float32)
    w_host[:, :3] = [[10, 20, 30], [40, 50, 60]]
    x, w = gpu.array(x_host), gpu.array(w_host)
    w_view = FakeCudaArray((2, 3), "<f4", (16, 4), w.__cuda_array_interface__["data"][0])
    y = gpu.array(np.full((2, 3), np.nan, np.float32))
    out = exe(x, w=w_view, outputs={"y": y}, stream=7)
    assert out is y
    np.testing.assert_array_equal(y.host(), 2 * x_host + 0.5 * w_host[:, :3])

    assert [l["function"] for l in gpu.launches] == ["scale2", "axpy"]   # k2 (empty grid) skipped
    k0, k1 = gpu.launches
    workspace = exe._workspace
    x_addr, w_addr, y_addr = (a.__cuda_array_interface__["data"][0] for a in (x, w, y))
    assert k0["args"] == [x_addr, workspace + 256, 6]
    assert k1["args"] == [workspace + 256, w_addr, y_addr, 0.5, 6]
    assert k1["shared"] == 65536 and gpu.opted_in == {"axpy": 65536}
    assert k0["stream"] == k1["stream"] == 7 and k0["block"] == (32, 1, 1)
    # k1 waits for the grids ahead: launched with its dependent-launch config.
    assert k0["early"] is None and k1["early"] == ("early", (1, 1, 1, 32, 1, 1, 65536))
    assert exe.device is gpu.device
    # The workspace was zeroed on the call's stream before the kernels ran:
    # the bytes no kernel wrote are still zero.
    assert gpu.zeroed == [(workspace, 512, 7)]
    assert bytes(gpu.view(workspace, 256)) == bytes(256)

    # a second call on the stream reuses its workspace (not zeroed again) and
    # only the pointers change
    x2 = gpu.array(x_host + 1)
    exe(x2, w_view, outputs=[y], stream=7)
    assert exe._workspace == workspace and len(gpu.zeroed) == 1
    assert gpu.launches[2]["args"][0] == x2.__cuda_array_interface__["data"][0]
    assert gpu.launches[2]["args"][1] == workspace + 256

    # another stream gets a workspace of its own, zeroed on that stream
    exe(x2, w_view, outputs=[y])
    assert gpu.launches[4]["stream"] == 0      # no stream given, no torch: the default stream
    other = exe.workspace_of(0)
    assert other not in (None, workspace) and gpu.zeroed[1:] == [(other, 512, 0)]
    assert gpu.launches[4]["args"][1] == other + 256 and gpu.launches[5]["args"][0] == other + 256
    np.testing.assert_array_equal(y.host(), 2 * (x_host + 1) + 0.5 * w_host[:, :3])
    exe(x, w_view, outputs=[y], stream=7)      # back on stream 7: its own workspace again
    assert gpu.launches[6]["args"][1] == workspace + 256 and len(gpu.zeroed) == 2


def test_numpy_inputs_are_staged_and_outputs_copied_back(monkeypatch):
    gpu = FakeGPU(monkeypatch)
    exe = load(axpy_manifest())
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = np.arange(6, dtype=np.float32).reshape(3, 2).T   # any NumPy layout: staging relayouts it
    y = exe(x, w)
    assert isinstance(y, np.ndarray) and y.shape == (2, 3)
    np.testing.assert_array_equal(y, 2 * x + 0.5 * w)
    given = np.full((2, 3), np.nan, np.float32)
    assert exe(x=x, w=w, outputs=[given]) is given
    np.testing.assert_array_equal(given, 2 * x + 0.5 * w)
    assert set(gpu.memory) == {exe._workspace}        # staging buffers were freed


def test_device_arrays_get_device_array_outputs(monkeypatch):
    gpu = FakeGPU(monkeypatch)
    exe = load(scale_manifest(n=8))
    x = gpu.array(np.arange(8, dtype=np.float32))
    y = exe(x)
    assert isinstance(y, dnnc_runtime.binding.DeviceArray)
    assert y.__cuda_array_interface__["shape"] == (8,)
    np.testing.assert_array_equal(y.numpy(), 2 * np.arange(8, dtype=np.float32))


def test_arch_checked_when_bound_to_the_device(monkeypatch):
    FakeGPU(monkeypatch, capability=(8, 0))
    exe = load(axpy_manifest())                      # sm_90a: loads fine anywhere
    with pytest.raises(ArtifactError, match=r"sm_90a cannot run on Fake GPU \(cuda:0\) \(compute "
                                            r"capability 8\.0, sm_80\)"):
        exe(*_axpy_args())
    assert exe.device is None


def test_capture_rules(monkeypatch):
    gpu = FakeGPU(monkeypatch)
    exe = load(scale_manifest(n=8))
    x, y = gpu.array(np.ones(8, np.float32)), gpu.array(np.ones(8, np.float32))
    gpu.capturing = True
    with pytest.raises(DeviceError, match="call it once before capturing"):
        exe(x, outputs=[y])
    gpu.capturing = False
    exe(x, outputs=[y])                               # warm-up outside capture
    gpu.capturing = True
    exe(x, outputs=[y])                               # device arrays + outputs: fine
    with pytest.raises(ArgumentError, match="NumPy arguments .* CUDA graph capture forbids"):
        exe(np.ones(8, np.float32))
    with pytest.raises(ArgumentError, match="output 'y': allocating an output is not allowed"):
        exe(x)


def test_time_reports_each_kernel(monkeypatch):
    gpu = FakeGPU(monkeypatch)
    exe = load(axpy_manifest())
    ms = exe.time(*_axpy_args(), repeat=5, warmup=2)
    assert ms == {"scale2#0": 0.25, "axpy": 0.25, "total": 0.25}   # scale2 is launched twice
    assert len(gpu.launches) == 2 * 7


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.torch
def test_dlpack_goes_through_torch(no_cuda):
    exe = load(scale_manifest(n=4))
    capsule = torch.utils.dlpack.to_dlpack(torch.zeros(4))
    with pytest.raises(ArgumentError, match="expected a CUDA tensor, got a tensor on cpu"):
        exe(capsule)
    with pytest.raises(ArgumentError, match="expected shape \\[4\\], got \\[5\\]"):
        exe(torch.utils.dlpack.to_dlpack(torch.zeros(5)))


# -- TMA descriptor arguments ---------------------------------------------------------

TMA_PTX = PTX + """
.visible .entry tcopy(
	.param .align 64 .b8 tcopy_param_0[128],
	.param .u64 .ptr .align 16 tcopy_param_1
)
{
	ret;
}
"""


def tma_arg(**changes):
    """A TMA descriptor over all of input 'a' (f16 [64, 128]): 32 x 64 boxes, 128-byte swizzle."""
    arg = {"kind": "tma", "buffer": 0, "byte_offset": 0, "dtype": "f16",
           "shape": [64, 128], "strides": [128, 1], "box": [32, 64],
           "swizzle": 128, "l2_promotion": 256, "oob_fill": "zero"}
    arg.update(changes)
    return arg


def tma_manifest(**changes):
    """y = copy of a through TMA: a pointer kernel (scale2 on the workspace), then
    tcopy(desc(a), y). The first launch shows that a refused descriptor stops the
    call before anything runs."""
    return {
        "format_version": 1, "arch": "sm_90a", "graph": "tcopy",
        "inputs": [{"name": "a", "dims": [64, 128], "strides": [128, 1], "dtype": "f16"}],
        "outputs": [{"name": "y", "dims": [32, 64], "strides": [64, 1], "dtype": "f16"}],
        "workspace_bytes": 256,
        "buffers": [{"kind": "input", "index": 0}, {"kind": "output", "index": 0},
                    {"kind": "workspace", "offset": 0, "bytes": 256}],
        "kernels": [
            {"name": "k0", "entry": "scale2", "strategy": "simt-pointwise",
             "grid": [1, 1, 1], "block": [32, 1, 1], "shared_bytes": 0,
             "args": [{"kind": "buffer", "buffer": 2}, {"kind": "buffer", "buffer": 2},
                      {"kind": "scalar", "type": "i64", "value": 0}]},
            {"name": "k1_tcopy", "entry": "tcopy", "strategy": "tc-sm90",
             "grid": [1, 1, 1], "block": [128, 1, 1], "shared_bytes": 4096,
             "args": [tma_arg(**changes), {"kind": "buffer", "buffer": 1}]},
        ],
    }


def test_tma_argument_loads():
    exe = load(tma_manifest(), ptx=TMA_PTX)
    arg = exe.plan[1].args[0]
    assert (arg.kind, arg.buffer, arg.byte_offset, arg.dtype) == ("tma", 0, 0, "f16")
    assert (arg.shape, arg.strides, arg.box) == ((64, 128), (128, 1), (32, 64))
    assert (arg.swizzle, arg.l2_promotion, arg.oob_fill, arg.nbytes) == (128, 256, "zero", 128)
    assert artifact_mod.ptx_params(TMA_PTX, "tcopy") == [128, 8]
    # l2_promotion and oob_fill have defaults; a box row may exceed 128 bytes unswizzled
    arg = tma_arg(swizzle=0, box=[2, 128])
    del arg["l2_promotion"], arg["oob_fill"], arg["byte_offset"]
    m = tma_manifest()
    m["kernels"][1]["args"][0] = arg
    arg = load(m, ptx=TMA_PTX).plan[1].args[0]
    assert (arg.l2_promotion, arg.oob_fill, arg.byte_offset, arg.box) == (0, "zero", 0, (2, 128))
    # every storage type TMA moves, rank 1 to 5, a tf32 operand stored as f32
    for changes in [dict(dtype="f32", shape=[32, 128], box=[32, 32]), dict(dtype="bf16", oob_fill="nan"),
                    dict(dtype="f8E4M3FN", shape=[64, 256], strides=[256, 1], box=[256, 128]),
                    dict(dtype="f8E5M2", shape=[16384], strides=[1], box=[128], swizzle=0),
                    dict(shape=[2, 2, 2, 2, 512], strides=[4096, 2048, 1024, 512, 1],
                         box=[1, 1, 2, 2, 64]),
                    dict(byte_offset=256, shape=[63, 128])]:
        assert load(tma_manifest(**changes), ptx=TMA_PTX).plan[1].args[0].kind == "tma"


def _tma_broken(edit):
    m = tma_manifest()
    edit(m["kernels"][1]["args"][0])
    return m


@pytest.mark.parametrize("edit, message", [
    (lambda a: a.update(buffer=3), r"args\[0\]: buffer: expected an index < 3 \(the number of buffers\), got 3"),
    (lambda a: a.pop("buffer"), r"args\[0\]: missing key 'buffer'"),
    (lambda a: a.update(byte_offset=8), r"byte_offset: expected a multiple of 16 .*got 8"),
    (lambda a: a.update(byte_offset=2**20), r"byte_offset: expected <= 16384 \(the size of buffers\[0\]\)"),
    (lambda a: a.update(dtype="i1"), r"dtype: expected one of f32, f16, bf16, f8E4M3FN, f8E5M2 .*got 'i1'"),
    (lambda a: a.update(dtype="tf32"), r"dtype: expected one of .*tf32 is stored as f32\), got 'tf32'"),
    (lambda a: a.update(dtype=["f16"]), r"dtype: expected one of .*got \['f16'\]"),
    (lambda a: a.pop("dtype"), r"args\[0\]: missing key 'dtype'"),
    (lambda a: a.update(shape=[]), r"shape: expected 1 to 5 dims, got 0"),
    (lambda a: a.update(shape=[1] * 6, strides=[8] * 5 + [1], box=[1] * 6), r"shape: expected 1 to 5 dims, got 6"),
    (lambda a: a.update(shape=[64, 0]), r"args\[0\]: shape: expected >= 1, got 0"),
    (lambda a: a.update(shape=[64, 2**32 + 1]), r"shape: expected <= 4294967296, got 4294967297"),
    (lambda a: a.update(shape=[64, "128"]), r"shape: expected an integer, got '128'"),
    (lambda a: a.update(shape="64x128"), r"shape: expected a list, got '64x128'"),
    (lambda a: a.update(strides=[1]), r"strides: expected 2 entries \(one per dim of shape\), got 1"),
    (lambda a: a.update(box=[32, 64, 1]), r"box: expected 2 entries \(one per dim of shape\), got 3"),
    (lambda a: a.update(strides=[128, 2]), r"strides: expected 1 for the innermost dim .*got 2"),
    (lambda a: a.update(strides=[-128, 1]), r"strides: expected >= 0, got -128"),
    (lambda a: a.update(strides=[4, 1]),
     r"strides: expected the outer strides to be multiples of 16 bytes below 2\*\*40, got 4 elements "
     r"of f16 = 8 bytes"),
    (lambda a: a.update(strides=[2**39, 1], shape=[1, 128]), r"below 2\*\*40, got 549755813888 elements "
                                                             r"of f16 = 1099511627776 bytes"),
    (lambda a: a.update(box=[0, 64]), r"box: expected >= 1, got 0"),
    (lambda a: a.update(box=[512, 64]), r"box: expected <= 256, got 512"),
    (lambda a: a.update(box=[32, 4]), r"box: expected the innermost box dim to span a multiple of 16 "
                                      r"bytes, got 4 x 2 = 8 bytes"),
    (lambda a: a.update(box=[32, 128]), r"box: expected the innermost box dim to span at most the "
                                        r"swizzle \(128 bytes\), got 128 x 2 = 256 bytes"),
    (lambda a: a.update(swizzle=32), r"at most the swizzle \(32 bytes\), got 64 x 2 = 128 bytes"),
    (lambda a: a.update(swizzle=16), r"swizzle: expected one of 0, 32, 64, 128 \(bytes\), got 16"),
    (lambda a: a.update(swizzle=True), r"swizzle: expected an integer, got True"),
    (lambda a: a.pop("swizzle"), r"args\[0\]: missing key 'swizzle'"),
    (lambda a: a.update(l2_promotion=32), r"l2_promotion: expected one of 0, 64, 128, 256 \(bytes\), got 32"),
    (lambda a: a.update(oob_fill="inf"), r"oob_fill: expected one of zero, nan, got 'inf'"),
    (lambda a: a.update(oob_fill=None), r"oob_fill: expected one of zero, nan, got None"),
    (lambda a: a.update(dtype="f8E5M2", oob_fill="nan"), r"oob_fill: expected 'zero' for f8E5M2 .*got 'nan'"),
    (lambda a: a.update(shape=[128, 128]), r"shape: expected the tensor to lie within buffers\[0\] "
                                           r"\(16384 bytes\), got byte_offset \+ extent = 0 \+ 32768 bytes"),
    (lambda a: a.update(byte_offset=16), r"got byte_offset \+ extent = 16 \+ 16384 bytes"),
])
def test_tma_manifest_errors(edit, message):
    with pytest.raises(ArtifactError, match=r"manifest.json: kernels\[1\] 'k1_tcopy': args\[0\]: "):
        load(_tma_broken(edit), ptx=TMA_PTX)
    with pytest.raises(ArtifactError, match=message):
        load(_tma_broken(edit), ptx=TMA_PTX)


def test_tma_argument_must_match_a_128_byte_parameter():
    m = tma_manifest()
    k0, k1 = m["kernels"]
    k0["args"][0] = tma_arg(byte_offset=0, shape=[16, 8], strides=[8, 1], box=[16, 8], buffer=2)
    with pytest.raises(ArtifactError, match=r"kernel 'k0': argument 0 is a TMA descriptor \(128 bytes\) "
                                            r"in manifest.json, but parameter 0 of .entry scale2 is 8 bytes"):
        load(m, ptx=TMA_PTX)
    m = tma_manifest()
    m["kernels"][1]["args"][0] = {"kind": "buffer", "buffer": 0}
    with pytest.raises(ArtifactError, match=r"kernel 'k1_tcopy': argument 0 is a pointer \(8 bytes\) "
                                            r"in manifest.json, but parameter 0 of .entry tcopy is 128 bytes"):
        load(m, ptx=TMA_PTX)


@pytest.mark.parametrize("shape, strides, box, itemsize, expected", [
    # a row-major bf16 matrix: dim 0 is the innermost; one byte stride (the row's)
    ([4096, 2048], [2048, 1], [128, 64], 2, ((2048, 4096), (4096,), (64, 128), (1, 1))),
    # a padded f32 batch of matrices, rank 3
    ([2, 3, 8], [48, 16, 1], [1, 3, 8], 4, ((8, 3, 2), (64, 192), (8, 3, 1), (1, 1, 1))),
    # rank 1: no stride at all
    ([1000], [1], [256], 1, ((1000,), (), (256,), (1,))),
])
def test_tensor_map_dims_reverse_to_innermost_first(shape, strides, box, itemsize, expected):
    assert cuda_mod.tensor_map_dims(shape, strides, box, itemsize) == expected


class FakeDriver:
    """Just enough of cuda.bindings.driver for encode_tensor_map: enums are
    their member names, cuuintNN_t wrappers are tagged tuples."""

    class Enum:
        def __getattr__(self, name):
            return name

    CUresult = type("CUresult", (), {"CUDA_SUCCESS": "CUDA_SUCCESS"})

    def __init__(self, status="CUDA_SUCCESS"):
        self.status, self.calls = status, []
        self.raw = ctypes.create_string_buffer(bytes(range(128)), 128)
        for name in ("CUtensorMapDataType", "CUtensorMapInterleave", "CUtensorMapSwizzle",
                     "CUtensorMapL2promotion", "CUtensorMapFloatOOBfill"):
            setattr(self, name, self.Enum())
        self.cuuint64_t = lambda v: ("u64", v)
        self.cuuint32_t = lambda v: ("u32", v)

    def cuTensorMapEncodeTiled(self, *args):
        self.calls.append(args)
        raw = self.raw
        return self.status, type("CUtensorMap", (), {"getPtr": lambda _: ctypes.addressof(raw)})()

    def cuTensorMapEncodeIm2col(self, *args):
        return self.cuTensorMapEncodeTiled(*args)

    def cuGetErrorString(self, status):
        return "CUDA_SUCCESS", b"invalid argument"


def test_encode_tensor_map_asks_the_driver_innermost_first(monkeypatch):
    fake = FakeDriver()
    monkeypatch.setattr(cuda_mod, "_d", fake)
    monkeypatch.setattr(cuda_mod, "_SUCCESS", "CUDA_SUCCESS")
    monkeypatch.setattr(cuda_mod, "driver", lambda: fake)
    raw = cuda_mod.encode_tensor_map("bf16", (4096, 2048), (2048, 1), (128, 64), 128, 256, "zero",
                                     0x7F00_0000_0000)
    assert raw == bytes(range(128))       # the CUtensorMap's 128 bytes, copied out
    assert fake.calls == [(
        "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 2, 0x7F00_0000_0000,
        [("u64", 2048), ("u64", 4096)], [("u64", 4096)], [("u32", 64), ("u32", 128)],
        [("u32", 1), ("u32", 1)], "CU_TENSOR_MAP_INTERLEAVE_NONE", "CU_TENSOR_MAP_SWIZZLE_128B",
        "CU_TENSOR_MAP_L2_PROMOTION_L2_256B", "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")]
    for dtype, type_name in [("f32", "FLOAT32"), ("f16", "FLOAT16"), ("f8E4M3FN", "UINT8"),
                             ("f8E5M2", "UINT8")]:
        cuda_mod.encode_tensor_map(dtype, (64,), (1,), (64,), 0, 0, "nan", 0)
        assert fake.calls[-1][0] == f"CU_TENSOR_MAP_DATA_TYPE_{type_name}"
        assert fake.calls[-1][8:] == ("CU_TENSOR_MAP_SWIZZLE_NONE", "CU_TENSOR_MAP_L2_PROMOTION_NONE",
                                      "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA")
    cuda_mod.encode_tensor_map("f16", (64, 64), (64, 1), (8, 32), 64, 64, "zero", 0)
    assert fake.calls[-1][8:10] == ("CU_TENSOR_MAP_SWIZZLE_64B", "CU_TENSOR_MAP_L2_PROMOTION_L2_64B")
    fake.status = "CUDA_ERROR_INVALID_VALUE"
    with pytest.raises(CudaError, match=r"cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE"):
        cuda_mod.encode_tensor_map("f16", (64,), (1,), (64,), 0, 0, "zero", 0x7F00_0000_0002)


def test_tma_descriptors_are_encoded_when_the_tensor_moves(monkeypatch):
    gpu = FakeGPU(monkeypatch)
    gpu.kernels["scale2"] = lambda *args: None
    exe = load(tma_manifest(), ptx=TMA_PTX)
    a = gpu.array(np.ones((64, 128), np.float16))
    y = gpu.array(np.zeros((32, 64), np.float16))
    a_addr = a.__cuda_array_interface__["data"][0]
    exe(a, outputs=[y])
    assert [l["function"] for l in gpu.launches] == ["scale2", "tcopy"]
    desc, y_addr = gpu.launches[1]["args"]
    assert len(desc) == 128 and int.from_bytes(desc[:8], "little") == a_addr and desc[8:10] == bytes([32, 64])
    assert y_addr == y.__cuda_array_interface__["data"][0]
    assert gpu.encoded == [("f16", (64, 128), (128, 1), (32, 64), 128, 256, "zero", a_addr)]
    exe(a, outputs=[y])                    # same tensor: the descriptor is kept
    assert len(gpu.encoded) == 1 and gpu.launches[3]["args"][0] == desc
    a2 = gpu.array(np.ones((64, 128), np.float16))
    exe(a2, outputs=[y])                   # moved: encoded again
    a2_addr = a2.__cuda_array_interface__["data"][0]
    assert [e[-1] for e in gpu.encoded] == [a_addr, a2_addr]
    assert int.from_bytes(gpu.launches[5]["args"][0][:8], "little") == a2_addr
    exe.time(a2, outputs=[y], repeat=3, warmup=1)
    assert len(gpu.encoded) == 2 and len(gpu.launches) == 6 + 2 * 4
    gpu.capturing = True                   # host-only encoding: allowed under capture
    exe(a, outputs=[y])                    # back: a's bytes are kept, not encoded again
    assert [e[-1] for e in gpu.encoded] == [a_addr, a2_addr]
    assert gpu.launches[-1]["args"][0] == desc
    others = [gpu.array(np.ones((64, 128), np.float16)) for _ in range(8)]
    for t in others:                       # eight more addresses push a's out
        exe(t, outputs=[y])
    exe(a, outputs=[y])
    assert len(gpu.encoded) == 2 + 8 + 1 and gpu.encoded[-1][-1] == a_addr
    assert gpu.launches[-1]["args"][0] == desc


def test_tma_address_refused_is_an_argument_error_before_any_launch(monkeypatch):
    gpu = FakeGPU(monkeypatch)
    m = tma_manifest()
    m["inputs"][0]["alignment"] = 2        # the binding lets it through; TMA does not
    exe = load(m, ptx=TMA_PTX)
    base = gpu.alloc(64 * 128 * 2 + 16)
    a = FakeCudaArray((64, 128), "<f2", address=base + 2)
    y = gpu.array(np.zeros((32, 64), np.float16))
    with pytest.raises(ArgumentError, match=r"input 'a': cannot encode the TMA descriptor of kernel "
                                            r"'k1_tcopy' \(argument 0: f16\[64, 128\] at byte offset 0\): "
                                            r"expected an address aligned to 16 bytes, got 0x[0-9a-f]+02 "
                                            r"\(cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE "
                                            r"\(invalid argument\)\); .*before any kernel of this call ran"
                       ) as info:
        exe(a, outputs=[y])
    assert info.value.tensor == "a" and gpu.launches == []   # k0 did not run either
    with pytest.raises(ArgumentError, match="input 'a': cannot encode"):
        exe.time(a, outputs=[y])
    assert gpu.launches == []
    exe(FakeCudaArray((64, 128), "<f2", address=base), outputs=[y])   # the next good call encodes
    assert [e[-1] for e in gpu.encoded] == [base + 2, base + 2, base]


def test_tma_over_the_workspace_that_fails_is_an_artifact_error(monkeypatch):
    gpu = FakeGPU(monkeypatch)
    monkeypatch.setattr(cuda_mod, "encode_tensor_map", lambda *a: (_ for _ in ()).throw(
        CudaError("cuTensorMapEncodeTiled", "CUDA_ERROR_INVALID_VALUE")))
    m = tma_manifest()
    m["kernels"][1]["args"][0] = tma_arg(buffer=2, shape=[2, 64], strides=[64, 1], box=[2, 64],
                                         swizzle=0)
    exe = load(m, ptx=TMA_PTX)
    with pytest.raises(ArtifactError, match=r"cannot encode the TMA descriptor of kernel 'k1_tcopy' "
                                            r"\(argument 0: f16\[2, 64\] at byte offset 0 of the "
                                            r"workspace\): cuTensorMapEncodeTiled failed"):
        exe(gpu.array(np.ones((64, 128), np.float16)), outputs=[gpu.array(np.zeros((32, 64), np.float16))])


# -- TMA im2col descriptors -----------------------------------------------------------

def im2col_arg(**changes):
    """An im2col descriptor over input 'x' (f16 [N=2, H=8, W=8, C=64]) for a
    3x3 convolution with padding 1 and stride 2: 128 pixels of 64 channels."""
    arg = tma_arg(shape=[2, 8, 8, 64], strides=[4096, 512, 64, 1], box=[128, 64],
                  im2col={"lower": [-1, -1], "upper": [-1, -1], "element_strides": [1, 2, 2, 1]})
    arg.update(changes)
    return arg


def im2col_manifest(**changes):
    """tma_manifest with the descriptor made an im2col one over x [2, 8, 8, 64]
    (as many bytes as tma_manifest's input)."""
    m = tma_manifest()
    m["inputs"][0].update(name="x", dims=[2, 8, 8, 64], strides=[4096, 512, 64, 1])
    m["kernels"][1]["args"][0] = im2col_arg(**changes)
    return m


def _im2col_field(**changes):
    field = im2col_arg()["im2col"]
    field.update(changes)
    return field


def test_tma_im2col_argument_loads():
    arg = load(im2col_manifest(), ptx=TMA_PTX).plan[1].args[0]
    assert (arg.kind, arg.shape, arg.strides, arg.box) == ("tma", (2, 8, 8, 64), (4096, 512, 64, 1),
                                                          (128, 64))
    assert arg.im2col == artifact_mod.Im2colSpec((-1, -1), (-1, -1), (1, 2, 2, 1))
    assert load(tma_manifest(), ptx=TMA_PTX).plan[1].args[0].im2col is None   # tiled
    # rank 3 to 5, each with its corners' extremes; the box's extremes (1024
    # pixels, 256 one-byte channels unswizzled); bf16 with NaN fill
    for changes in [
            dict(shape=[2, 64, 64], strides=[4096, 64, 1],
                 im2col={"lower": [-32768], "upper": [32767], "element_strides": [1, 8, 1]}),
            dict(im2col={"lower": [-128, 127], "upper": [-128, 127], "element_strides": [1, 1, 1, 1]}),
            dict(shape=[2, 4, 4, 4, 64], strides=[4096, 1024, 256, 64, 1],
                 im2col={"lower": [-16, 0, 15], "upper": [-16, -3, 15], "element_strides": [1] * 5}),
            dict(dtype="f8E4M3FN", shape=[1, 8, 8, 256], strides=[16384, 2048, 256, 1],
                 box=[1024, 256], swizzle=0),
            dict(dtype="bf16", oob_fill="nan", box=[1, 8], swizzle=0)]:
        arg = load(im2col_manifest(**changes), ptx=TMA_PTX).plan[1].args[0]
        assert arg.im2col is not None and list(arg.box) == changes.get("box", [128, 64])


@pytest.mark.parametrize("changes, message", [
    (dict(shape=[64, 128], strides=[128, 1]), r"shape: expected 3 to 5 dims \(an im2col descriptor: "
                                             r"N, \[D, H,\] W, C\), got 2"),
    (dict(shape=[1] * 5 + [64], strides=[64] * 5 + [1]), r"shape: expected 3 to 5 dims .*got 6"),
    (dict(box=[2, 8, 64]), r"box: expected 2 entries \(\[pixels, channels\] of an im2col descriptor\), "
                           r"got 3"),
    (dict(box=[0, 64]), r"box: pixels: expected >= 1, got 0"),
    (dict(box=[1025, 64]), r"box: pixels: expected <= 1024, got 1025"),
    (dict(box=[128, 257], swizzle=0), r"box: channels: expected <= 256, got 257"),
    (dict(box=[128, 128]), r"box: expected the innermost box dim to span at most the swizzle "
                           r"\(128 bytes\), got 128 x 2 = 256 bytes"),
    (dict(box=[128, 4]), r"box: expected the innermost box dim to span a multiple of 16 bytes, "
                         r"got 4 x 2 = 8 bytes"),
    (dict(strides=[4096, 512, 4, 1]), r"strides: expected the outer strides to be multiples of 16 "
                                      r"bytes below 2\*\*40, got 4 elements of f16 = 8 bytes"),
    (dict(strides=[4096, 512, 64, 2]), r"strides: expected 1 for the innermost dim .*got 2"),
    (dict(byte_offset=8), r"byte_offset: expected a multiple of 16 .*got 8"),
    (dict(im2col=[[-1, -1], [-1, -1], [1, 2, 2, 1]]), r"im2col: expected an object, got \[\["),
    (dict(im2col=_im2col_field(lower=None)), r"im2col: lower: expected a list, got None"),
    (dict(im2col={"lower": [-1, -1], "upper": [-1, -1]}), r"im2col: missing key 'element_strides'"),
    (dict(im2col=_im2col_field(lower=[-1])), r"im2col: lower: expected 2 entries \(one per spatial "
                                             r"dim of a rank 4 tensor\), got 1"),
    (dict(im2col=_im2col_field(upper=[-1, -1, -1])), r"im2col: upper: expected 2 entries .*got 3"),
    (dict(im2col=_im2col_field(lower=[-1, 128])), r"im2col: lower \(rank 4\): expected <= 127, got 128"),
    (dict(im2col=_im2col_field(upper=[-129, 0])), r"im2col: upper \(rank 4\): expected >= -128, got -129"),
    (dict(im2col=_im2col_field(lower=[-1, 1.5])), r"im2col: lower \(rank 4\): expected an integer, "
                                                  r"got 1.5"),
    (dict(shape=[2, 4, 4, 4, 64], strides=[4096, 1024, 256, 64, 1],
          im2col={"lower": [-16, 0, 16], "upper": [0, 0, 0], "element_strides": [1] * 5}),
     r"im2col: lower \(rank 5\): expected <= 15, got 16"),
    (dict(shape=[2, 64, 64], strides=[4096, 64, 1],
          im2col={"lower": [0], "upper": [-32769], "element_strides": [1, 1, 1]}),
     r"im2col: upper \(rank 3\): expected >= -32768, got -32769"),
    (dict(im2col=_im2col_field(lower=[0, 0], upper=[-8, 0])),
     r"im2col: expected a pixel box of at least one pixel along H \(size \+ upper - "
     r"lower >= 1\), got 8 \+ -8 - 0 = 0"),
    (dict(shape=[2, 4, 4, 4, 64], strides=[4096, 1024, 256, 64, 1],
          im2col={"lower": [0, 0, 3], "upper": [0, 0, -2], "element_strides": [1] * 5}),
     r"im2col: expected a pixel box of at least one pixel along W .*got 4 \+ -2 - 3 = -1"),
    (dict(im2col=_im2col_field(element_strides=[1, 2, 1])), r"im2col: element_strides: expected 4 "
                                                            r"entries \(one per dim of shape\), got 3"),
    (dict(im2col=_im2col_field(element_strides=[1, 0, 2, 1])), r"im2col: element_strides: expected "
                                                               r">= 1, got 0"),
    (dict(im2col=_im2col_field(element_strides=[1, 9, 2, 1])), r"im2col: element_strides: expected "
                                                               r"<= 8, got 9"),
])
def test_tma_im2col_manifest_errors(changes, message):
    with pytest.raises(ArtifactError, match=r"manifest.json: kernels\[1\] 'k1_tcopy': args\[0\]: "
                                            + message):
        load(im2col_manifest(**changes), ptx=TMA_PTX)


@pytest.mark.parametrize("shape, strides, box, lower, upper, steps, itemsize, expected", [
    # N, H, W, C bf16, a different value per dim: the corners come back (W, H), the
    # dims and element strides (C, W, H, N)
    ([2, 8, 6, 64], [3072, 384, 64, 1], [128, 64], [-1, -2], [-3, -4], [1, 2, 3, 1], 2,
     ((64, 6, 8, 2), (128, 768, 6144), (-2, -1), (-4, -3), 64, 128, (1, 3, 2, 1))),
    # N, D, H, W, C f32, channels padded to 16
    ([1, 2, 3, 4, 8], [384, 192, 64, 16, 1], [32, 8], [0, -1, -2], [1, 2, 3], [1, 1, 2, 3, 1], 4,
     ((8, 4, 3, 2, 1), (64, 256, 768, 1536), (-2, -1, 0), (3, 2, 1), 8, 32, (1, 3, 2, 1, 1))),
    # N, W, C one-byte
    ([4, 100, 32], [3200, 32, 1], [256, 32], [-5], [5], [1, 4, 1], 1,
     ((32, 100, 4), (32, 3200), (-5,), (5,), 32, 256, (1, 4, 1))),
])
def test_im2col_tensor_map_dims_reverse_to_innermost_first(shape, strides, box, lower, upper, steps,
                                                           itemsize, expected):
    assert cuda_mod.im2col_tensor_map_dims(shape, strides, box, lower, upper, steps,
                                           itemsize) == expected


def test_encode_im2col_tensor_map_asks_the_driver_innermost_first(monkeypatch):
    fake = FakeDriver()
    monkeypatch.setattr(cuda_mod, "_d", fake)
    monkeypatch.setattr(cuda_mod, "_SUCCESS", "CUDA_SUCCESS")
    monkeypatch.setattr(cuda_mod, "driver", lambda: fake)
    args = ("bf16", (2, 8, 6, 64), (3072, 384, 64, 1), (128, 64), (-1, -2), (-3, -4), (1, 2, 3, 1),
            128, 256, "zero")
    raw = cuda_mod.encode_im2col_tensor_map(*args, 0x7F00_0000_0000)
    assert raw == bytes(range(128))
    assert fake.calls == [(
        "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 4, 0x7F00_0000_0000,
        [("u64", 64), ("u64", 6), ("u64", 8), ("u64", 2)], [("u64", 128), ("u64", 768), ("u64", 6144)],
        [-2, -1], [-4, -3], ("u32", 64), ("u32", 128),
        [("u32", 1), ("u32", 3), ("u32", 2), ("u32", 1)], "CU_TENSOR_MAP_INTERLEAVE_NONE",
        "CU_TENSOR_MAP_SWIZZLE_128B", "CU_TENSOR_MAP_L2_PROMOTION_L2_256B",
        "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")]
    # the driver's form is kept per descriptor shape, apart from the tiled one's
    key = (id(fake), "im2col", *args)
    assert cuda_mod._TENSOR_MAP_ARGS[key] == (fake.calls[0][:2], fake.calls[0][3:])
    cuda_mod.encode_im2col_tensor_map(*args, 0x7F00_0000_0100)
    assert fake.calls[1] == fake.calls[0][:2] + (0x7F00_0000_0100,) + fake.calls[0][3:]
    fake.status = "CUDA_ERROR_INVALID_VALUE"
    with pytest.raises(CudaError, match=r"cuTensorMapEncodeIm2col failed: CUDA_ERROR_INVALID_VALUE"):
        cuda_mod.encode_im2col_tensor_map(*args, 0x7F00_0000_0002)


def test_tma_im2col_descriptors_are_encoded_in_im2col_mode_at_launch(monkeypatch):
    gpu = FakeGPU(monkeypatch)
    gpu.kernels["scale2"] = lambda *args: None
    exe = load(im2col_manifest(), ptx=TMA_PTX)
    x = gpu.array(np.ones((2, 8, 8, 64), np.float16))
    y = gpu.array(np.zeros((32, 64), np.float16))
    x_addr = x.__cuda_array_interface__["data"][0]
    exe(x, outputs=[y])
    assert gpu.encoded == [("im2col", "f16", (2, 8, 8, 64), (4096, 512, 64, 1), (128, 64), (-1, -1),
                            (-1, -1), (1, 2, 2, 1), 128, 256, "zero", x_addr)]
    desc = gpu.launches[1]["args"][0]
    assert int.from_bytes(desc[:8], "little") == x_addr and desc[8:14] == bytes([128, 64, 1, 2, 2, 1])
    exe(x, outputs=[y])                    # same tensor: kept, as a tiled descriptor is
    assert len(gpu.encoded) == 1 and gpu.launches[3]["args"][0] == desc


# -- zero-size tensors -------------------------------------------------------------

def test_zero_size_tensors_launch_nothing_and_allocate_nothing(monkeypatch):
    gpu = FakeGPU(monkeypatch)
    sizes = []
    alloc = gpu.alloc
    monkeypatch.setattr(cuda_mod, "mem_alloc", lambda n: sizes.append(n) or alloc(n))
    m = scale_manifest(n=0)
    assert m["kernels"][0]["grid"] == [0, 1, 1]
    exe = load(m)
    assert not exe.plan[0].has_work
    y = exe(np.zeros(0, np.float32))
    assert isinstance(y, np.ndarray) and y.shape == (0,) and y.dtype == np.float32
    given = np.zeros(0, np.float32)
    assert exe(np.zeros(0, np.float32), outputs=[given]) is given
    # Device arrays of zero elements may sit at address 0, unaligned or not.
    exe(FakeCudaArray((0,), address=0), outputs=[FakeCudaArray((0,), address=0x7F00_0000_0004)])
    assert gpu.launches == [] and sizes == []


def test_plan_without_kernels(monkeypatch):
    """Every output empty: no kernel, no PTX; loading the (absent) module is skipped."""
    gpu = FakeGPU(monkeypatch)
    monkeypatch.setattr(cuda_mod, "load_module", lambda ptx: pytest.fail("module loaded"))
    m = scale_manifest(n=0)
    m.update(kernels=[], inputs=[{"name": "x", "dims": [0, 16], "strides": [16, 1], "dtype": "bf16"}],
             outputs=[{"name": "y", "dims": [0, 16], "strides": [1, 1], "dtype": "bf16"}])
    exe = load(m, ptx="")
    assert len(exe.plan) == 0 and str(exe.plan).splitlines()[0].split()[0] == "#"
    import ml_dtypes
    y = exe(np.zeros((0, 16), ml_dtypes.bfloat16))
    assert y.shape == (0, 16) and y.dtype == ml_dtypes.bfloat16
    assert exe.time(np.zeros((0, 16), ml_dtypes.bfloat16)) == {"total": 0.0}
    exe.close()
    assert gpu.launches == []


def test_empty_allocation_makes_no_driver_call(monkeypatch):
    monkeypatch.setattr(cuda_mod, "call", lambda *a: pytest.fail(f"driver called: {a[0]}"))
    assert cuda_mod.mem_alloc(0) == 0
    cuda_mod.mem_free(0)


# -- the runtime never loads MLIR or the compiler ------------------------------

def test_runtime_imports_no_mlir():
    code = ("import dnnc_runtime, sys; "
            "assert not any(m == 'mlir' or m.startswith('mlir.') for m in sys.modules), 'mlir'; "
            "assert not any(m == 'dnnc' or m.startswith('dnnc.') for m in sys.modules), 'dnnc'")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(ROOT, "runtime"),
                                                      env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=os.path.join(ROOT, "test"))
    assert proc.returncode == 0, proc.stderr


def test_runtime_sources_never_import_mlir():
    import re
    folder = os.path.dirname(dnnc_runtime.__file__)
    pattern = re.compile(r"^\s*(import|from)\s+(mlir|dnnc)\b", re.M)
    for name in os.listdir(folder):
        if name.endswith(".py"):
            text = open(os.path.join(folder, name)).read()
            assert not pattern.search(text), name


@pytest.mark.parametrize("dtype", ["float8_e5m2", "float8_e4m3fn", "bfloat16"])
def test_strided_host_view_of_every_storage_type(dtype):
    """NumPy outputs are read back through a strided view; it must work for the
    ml_dtypes types that NumPy's array interface cannot name."""
    import ml_dtypes
    from dnnc_runtime import binding

    class Spec:
        dims, strides = (2, 3), (1, 2)

    flat = np.arange(6).astype(getattr(ml_dtypes, dtype))
    view = binding.view_of(flat, Spec)
    assert view.dtype == flat.dtype
    np.testing.assert_array_equal(view.astype(np.float32), [[0, 2, 4], [1, 3, 5]])


# -- runtime scalars: a number per call, passed to the kernel by value ----------

def scalar_axpy_manifest():
    """axpy_manifest with its f32 ``a`` a runtime scalar: input 'a' (rank 0,
    by_value), bound to kernel 1's parameter 3 as a scalar_input."""
    m = axpy_manifest()
    m["inputs"].append({"name": "a", "dims": [], "strides": [], "dtype": "f32",
                        "by_value": True})
    m["buffers"].append({"kind": "input", "index": 2})
    m["kernels"][1]["args"][3] = {"kind": "scalar_input", "type": "f32", "buffer": 4}
    return m


def test_runtime_scalar_reaches_the_kernel_by_value(monkeypatch):
    gpu = FakeGPU(monkeypatch)
    exe = load(scalar_axpy_manifest())
    x_host = np.arange(6, dtype=np.float32).reshape(2, 3)
    w_host = np.zeros((2, 4), np.float32)
    w_host[:, :3] = [[10, 20, 30], [40, 50, 60]]
    x, w = gpu.array(x_host), gpu.array(w_host)
    w_view = FakeCudaArray((2, 3), "<f4", (16, 4), w.__cuda_array_interface__["data"][0])
    y = gpu.array(np.full((2, 3), np.nan, np.float32))
    # One executable, three values (a Python float, a NumPy scalar, by name):
    # each launch gets the call's value, rounded to f32.
    for value, given in ((0.5, 0.5), (-2.0, np.float32(-2.0)), (0.1, np.float64(0.1))):
        exe(x, w_view, given, outputs=[y], stream=7)
        assert gpu.launches[-1]["args"][3] == np.float32(value)
        np.testing.assert_array_equal(y.host(), 2 * x_host + np.float32(value) * w_host[:, :3])
    exe(x, w=w_view, a=3, outputs=[y])
    assert gpu.launches[-1]["args"][3] == 3.0
    assert exe.inputs[2].by_value and not exe.inputs[0].by_value


@pytest.mark.parametrize("value, message", [
    ("0.5", r"input 'a': expected a number .* got str"),
    (None, r"input 'a': expected a number .* got NoneType"),
    (True, r"input 'a': expected a number .* got bool"),
    (np.ones(2, np.float32), r"input 'a': expected a number .* got an array of dtype float32 and "
                             r"shape \[2\]"),
    (1e39, r"input 'a': expected a value within f32's range .* got 1e\+39"),
    (10 ** 400, r"input 'a': expected a value within f32's range .* got 1000000"),
])
def test_runtime_scalar_errors_before_any_cuda_call(no_cuda, value, message):
    exe = load(scalar_axpy_manifest())
    x, w = _axpy_args()
    with pytest.raises(ArgumentError, match=message) as info:
        exe(x, w, value)
    assert info.value.tensor == "a"


@pytest.mark.parametrize("edit, message", [
    (lambda m: m["inputs"][2].update(dims=[1], strides=[1]),
     r"by_value: expected true only on a rank-0 f32 input, got True on a f32\[1\] input"),
    (lambda m: m["inputs"][2].update(dtype="f16"), r"by_value: expected true only on a rank-0 f32"),
    (lambda m: m["outputs"][0].update(by_value=True),
     r"by_value: expected true only on a rank-0 f32 input, got True on a f32\[2, 3\] output"),
    (lambda m: m["kernels"][1]["args"][3].update(buffer=1),
     r"expected an f32 scalar_input naming the buffer of an input marked by_value, got buffer 1"),
    (lambda m: m["inputs"][2].pop("by_value"),
     r"expected an f32 scalar_input naming the buffer of an input marked by_value, got buffer 4"),
])
def test_runtime_scalar_manifest_errors(edit, message):
    m = scalar_axpy_manifest()
    edit(m)
    with pytest.raises(ArtifactError, match=message):
        load(m)


def test_an_entry_launched_twice_is_opted_in_once_to_the_most_shared_memory(monkeypatch):
    # dnn-dedup-kernels: identical kernels share one PTX entry; each launch
    # keeps its own record (name, grid, shared memory).
    gpu = FakeGPU(monkeypatch)
    manifest = scale_manifest(n=256, arch="sm_90a")
    first = manifest["kernels"][0]
    first["shared_bytes"] = 70000
    second = dict(first, name="scale_k1", shared_bytes=60000)
    manifest["kernels"] = [first, second]
    exe = load(manifest)
    x = gpu.array(np.arange(256, dtype=np.float32))
    y = gpu.array(np.full(256, np.nan, np.float32))
    exe(x, outputs={"y": y})
    assert [l["function"] for l in gpu.launches] == ["scale2", "scale2"]
    assert [l["shared"] for l in gpu.launches] == [70000, 60000]
    assert gpu.opted_in == {"scale2": 70000}
    np.testing.assert_array_equal(y.host(), 2 * np.arange(256, dtype=np.float32))
