"""The cubin a package carries beside its PTX (format version 2): how the
compiler makes and records it, how both readers check it, and which code the
runtime loads (runtime/dnnc_runtime/modules.py).

Most tests need no ptxas: they build packages around a stand-in cubin (ELF
magic and filler bytes), or compile with a stand-in ptxas (a script), so that
they run on a CI machine without the CUDA toolkit. The tests marked
``needs_ptxas`` compile with the real one and are skipped, saying so, where
it is missing.
"""

import hashlib
import io
import json
import os
import sys
import warnings
import zipfile

import numpy as np
import pytest

import dnnc
from dnnc import artifact, cache, compiler, env
from dnnc.codegen.gpu import ptxas
from dnnc_runtime import artifact as runtime_artifact
from dnnc_runtime import modules
from dnnc_runtime.errors import ArtifactError, CudaError
from kernel_builds import needs_ptxas
from test_runtime import PTX, FakeGPU, cuda_mod, scale_manifest

FAKE_CUBIN = b"\x7fELF" + bytes(range(256)) * 4


@pytest.fixture(autouse=True)
def cubins_on(monkeypatch):
    """Cubins as users get them (conftest.py turns them off for the suite)."""
    monkeypatch.delenv("DNNC_CUBIN", raising=False)


def cubin_manifest(arch="sm_80", cubin_arch=None, data=FAKE_CUBIN):
    """scale_manifest as format version 2 with one cubin entry for ``data``."""
    m = scale_manifest(arch=arch)
    m["format_version"] = 2
    m["cubins"] = [artifact.cubin_entry(cubin_arch or arch, data, "13.5.37")]
    return m


def zipped(manifest, members):
    """A .dnnpkg's bytes: the manifest, kernels.ptx, graph.mlir, ``members``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("manifest.json", json.dumps(manifest))
        z.writestr("kernels.ptx", PTX)
        z.writestr("graph.mlir", "// graph\n")
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def cubin_package(data=FAKE_CUBIN, stored=None, **kw):
    """(manifest, bytes) of a package whose manifest describes ``data`` and
    whose cubin member holds ``stored`` (default: ``data``)."""
    m = cubin_manifest(data=data, **kw)
    return m, zipped(m, {m["cubins"][0]["file"]: data if stored is None else stored})


# -- the readers ---------------------------------------------------------------

def test_both_readers_round_trip_a_cubin(tmp_path):
    m, data = cubin_package()
    a = runtime_artifact.read(data)
    assert len(a.cubins) == 1
    c = a.cubins[0]
    assert (c.module, c.file, c.arch, c.ptxas_version) == (
        "kernels.ptx", "kernels.sm_80.cubin", "sm_80", "13.5.37")
    assert c.data == FAKE_CUBIN and c.capability == (8, 0)
    assert c.sha256 == hashlib.sha256(FAKE_CUBIN).hexdigest()
    package = artifact.read(data)
    assert package.cubins == {"kernels.sm_80.cubin": FAKE_CUBIN}
    # The compiler's writer keeps the member, and one package gives one set of bytes.
    again = artifact.to_bytes(package)
    assert again == artifact.to_bytes(artifact.read(again))
    assert runtime_artifact.read(again).cubins == a.cubins
    assert "cubin kernels.sm_80.cubin (sm_80, ptxas 13.5.37, 1028 bytes)" in package.describe()


def test_format_version_1_reads_and_has_no_cubins():
    m = scale_manifest()
    assert m["format_version"] == 1
    assert runtime_artifact.read(zipped(m, {})).cubins == ()
    assert "PTX only" in artifact.describe(m)
    m["cubins"] = cubin_manifest()["cubins"]
    for read in (runtime_artifact.read, artifact.read):
        with pytest.raises((ArtifactError, artifact.ArtifactError),
                           match="cubins: expected none in format version 1"):
            read(zipped(m, {"kernels.sm_80.cubin": FAKE_CUBIN}))


@pytest.mark.parametrize("stored, match", [
    (FAKE_CUBIN[:-1] + b"\0", "sha256 expected [0-9a-f]{64}, got [0-9a-f]{64}; the package is corrupt"),
    (FAKE_CUBIN + b"\0", "expected 1028 bytes, got 1029"),
    (None, "listed in manifest.json but missing from the package"),
])
def test_a_mismatching_cubin_is_refused_naming_package_and_kernels(tmp_path, stored, match):
    m = cubin_manifest()
    members = {} if stored is None else {"kernels.sm_80.cubin": stored}
    path = tmp_path / "scale.dnnpkg"
    path.write_bytes(zipped(m, members))
    with pytest.raises(ArtifactError, match=match) as err:
        runtime_artifact.read(str(path))
    assert str(path) in str(err.value) and "kernels.sm_80.cubin" in str(err.value)
    assert "scale_k0" in str(err.value)          # the kernel the cubin holds
    with pytest.raises(artifact.ArtifactError, match=match) as err:
        artifact.read(str(path))
    assert str(path) in str(err.value) and "kernels.sm_80.cubin" in str(err.value)
    assert "scale_k0" in str(err.value)


def test_a_cubin_that_is_not_elf_is_refused():
    _, data = cubin_package(data=b"PTX?" + bytes(8))
    with pytest.raises(ArtifactError, match=r"expected an ELF file \(a cubin\)"):
        runtime_artifact.read(data)
    with pytest.raises(artifact.ArtifactError, match=r"expected an ELF file \(a cubin\)"):
        artifact.read(data)


@pytest.mark.parametrize("arch, cubin_arch, ok", [
    ("sm_80", "sm_80", True), ("sm_80", "sm_86", True), ("sm_80", "sm_90a", True),
    ("sm_80", "sm_75", False), ("sm_90a", "sm_90a", True), ("sm_90a", "sm_80", False),
    ("sm_90a", "sm_100a", False), ("sm_80", "ptx", False),
])
def test_a_cubin_must_be_for_an_arch_that_runs_the_package(arch, cubin_arch, ok):
    m, data = cubin_package(arch=arch, cubin_arch=cubin_arch)
    if ok:
        assert runtime_artifact.read(data).cubins[0].arch == cubin_arch
        artifact.validate(m)
        return
    with pytest.raises(ArtifactError, match=f"arch: expected an arch that runs {arch} code"):
        runtime_artifact.read(data)
    with pytest.raises(artifact.ArtifactError, match=f"arch expected one that runs {arch} code"):
        artifact.validate(m)


@pytest.mark.parametrize("field, value, match", [
    ("module", "other.ptx", "module"), ("file", "manifest.json", "file"),
    ("file", "../x.cubin", "file"), ("sha256", "ABC", "sha256"), ("bytes", -1, "bytes"),
    ("ptxas_version", 13, "ptxas_version"),
])
def test_malformed_cubin_entries_are_refused(field, value, match):
    m = cubin_manifest()
    m["cubins"][0][field] = value
    with pytest.raises(ArtifactError, match=match):
        runtime_artifact.parse(m, PTX, cubins={"kernels.sm_80.cubin": FAKE_CUBIN})
    with pytest.raises(artifact.ArtifactError, match=match):
        artifact.validate(m)
    twice = cubin_manifest()
    twice["cubins"] *= 2
    with pytest.raises(ArtifactError, match="a member name of its own"):
        runtime_artifact.parse(twice, PTX, cubins={"kernels.sm_80.cubin": FAKE_CUBIN})


def test_a_cache_entry_with_a_corrupt_cubin_is_a_miss(tmp_path):
    key = "ab" * 32
    m = cubin_manifest()
    good = artifact.to_bytes(artifact.Package(m, PTX, "// g\n", {"kernels.sm_80.cubin": FAKE_CUBIN}),
                             {cache.KEY_FIELD: key})
    assert cache.recorded_key(good) == key
    m2 = dict(m, cache_key=key)
    bad = zipped(m2, {"kernels.sm_80.cubin": FAKE_CUBIN[:-1] + b"\1"})
    assert cache.recorded_key(bad) is None
    store = cache.Cache(str(tmp_path))
    with open(store.path(key), "wb") as f:
        f.write(bad)
    assert store.get(key) is None and store.stats.bad == 1
    store.put(key, good)
    assert store.get(key) == good


# -- which code the runtime loads ----------------------------------------------

@pytest.fixture
def gpu(monkeypatch):
    """A FakeGPU of compute capability 8.0 whose load_module records what it
    was given (a str: PTX; bytes: a cubin); set ``gpu.refuse`` to the kinds
    (str, bytes) the fake driver refuses."""
    fake = FakeGPU(monkeypatch, capability=(8, 0))
    fake.loaded, fake.refuse = [], ()

    def load_module(image):
        fake.loaded.append(image)
        if isinstance(image, fake.refuse):
            what = "CUDA_ERROR_NO_BINARY_FOR_GPU" if isinstance(image, bytes) else \
                "CUDA_ERROR_INVALID_PTX"
            raise CudaError("cuModuleLoadDataEx", what, "refused by the fake driver")
        return "module"

    monkeypatch.setattr(cuda_mod, "load_module", load_module)
    return fake


def run_once(data, gpu, **load):
    import dnnc_runtime

    exe = dnnc_runtime.load(data, **load)
    assert exe.loaded_from is None
    x = gpu.array(np.arange(1000, dtype=np.float32))
    exe(x, outputs=[gpu.array(np.zeros(1000, np.float32))])
    return exe


def test_the_cubin_is_loaded_on_its_own_arch(gpu):
    _, data = cubin_package()
    exe = run_once(data, gpu)
    assert gpu.loaded == [FAKE_CUBIN]
    assert exe.loaded_from == "cubin"
    assert exe.load_note == "kernels.sm_80.cubin (sm_80, ptxas 13.5.37)"
    assert [launch["function"] for launch in gpu.launches] == ["scale2"]


def test_another_arch_gets_the_ptx(gpu):
    gpu.device.capability = (8, 6)
    _, data = cubin_package()
    exe = run_once(data, gpu)
    assert gpu.loaded == [PTX] and exe.loaded_from == "ptx"
    assert exe.load_note == "no cubin for compute capability 8.6 (the package has sm_80)"


def test_a_cubin_the_driver_refuses_falls_back_to_the_ptx(gpu):
    gpu.refuse = (bytes,)
    _, data = cubin_package()
    exe = run_once(data, gpu)
    assert gpu.loaded == [FAKE_CUBIN, PTX] and exe.loaded_from == "ptx"
    assert "the driver refused kernels.sm_80.cubin" in exe.load_note
    assert "CUDA_ERROR_NO_BINARY_FOR_GPU" in exe.load_note


def test_when_both_are_refused_the_ptx_error_says_the_cubin_was_tried(gpu):
    gpu.refuse = (bytes, str)
    _, data = cubin_package()
    with pytest.raises(CudaError, match="CUDA_ERROR_INVALID_PTX") as err:
        run_once(data, gpu)
    assert "the cubin was tried first" in str(err.value)
    assert "CUDA_ERROR_NO_BINARY_FOR_GPU" in str(err.value)


def test_cubins_turned_off_load_the_ptx(gpu, monkeypatch):
    _, data = cubin_package()
    exe = run_once(data, gpu, cubin=False)
    assert exe.loaded_from == "ptx" and exe.load_note == "cubins turned off (cubin=False)"
    monkeypatch.setenv("DNNC_CUBIN", "0")
    exe = run_once(data, gpu)
    assert exe.loaded_from == "ptx" and exe.load_note == "cubins turned off (DNNC_CUBIN=0)"
    assert run_once(data, gpu, cubin=True).loaded_from == "cubin"   # the argument wins
    assert gpu.loaded == [PTX, PTX, FAKE_CUBIN]


def test_a_package_without_a_cubin_loads_the_ptx(gpu):
    exe = run_once(zipped(scale_manifest(), {}), gpu)
    assert gpu.loaded == [PTX] and exe.loaded_from == "ptx"
    assert exe.load_note == "the package has no cubin"


def test_choose_is_exact_about_compute_capability():
    a = runtime_artifact.read(cubin_package(arch="sm_90a")[1])
    assert modules.choose(a, (9, 0))[0].arch == "sm_90a"
    assert modules.choose(a, (10, 0)) == (
        None, "no cubin for compute capability 10.0 (the package has sm_90a)")


# -- the compiler --------------------------------------------------------------

def small_graph(name="cubin_scale"):
    g = dnnc.Graph(name=name, io_data_type="f32")
    x = g.tensor(name="x", dim=[64, 32])
    g.relu(x).set_output(True)
    return g


def fake_ptxas(tmp_path, body):
    """An executable standing in for ptxas: a Python script running ``body``
    with ``args`` (its command line) and ``out`` (the -o path, if any)."""
    path = tmp_path / "ptxas"
    path.write_text(f"#!{sys.executable}\nimport sys\nargs = sys.argv[1:]\n"
                    "out = args[args.index('-o') + 1] if '-o' in args else None\n" + body)
    path.chmod(0o755)
    return str(path)


def test_compile_records_the_cubin_its_ptxas_made(tmp_path, monkeypatch):
    tool = fake_ptxas(tmp_path, (
        "if args == ['--version']:\n"
        "    print('Cuda compilation tools, release 99.1, V99.1.7'); sys.exit(0)\n"
        f"open(out, 'wb').write({FAKE_CUBIN!r} + args[0].encode())\n"))
    monkeypatch.setenv("DNNC_PTXAS", tool)
    ptxas.version.cache_clear()
    package = compiler.compile_cuda(small_graph(), "sm_80", cache=False)
    data = FAKE_CUBIN + b"-arch=sm_80"
    assert package.cubins == {"kernels.sm_80.cubin": data}
    assert package.manifest["cubins"] == [{
        "module": "kernels.ptx", "file": "kernels.sm_80.cubin", "arch": "sm_80",
        "ptxas_version": "99.1.7", "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest()}]
    assert runtime_artifact.read(artifact.to_bytes(package)).cubins[0].data == data


def test_a_ptxas_that_refuses_leaves_the_ptx_and_warns(tmp_path, monkeypatch):
    monkeypatch.setenv("DNNC_PTXAS", fake_ptxas(tmp_path, (
        "print(\"ptxas fatal   : Unsupported .version 9.9; current version is '8.0'\", "
        "file=sys.stderr); sys.exit(1)\n")))
    with pytest.warns(RuntimeWarning, match="no cubin in the package, PTX only: ptxas failed"):
        package = compiler.compile_cuda(small_graph(), "sm_80", cache=False)
    assert package.cubins == {} and package.manifest["cubins"] == []
    assert runtime_artifact.read(artifact.to_bytes(package)).cubins == ()


def test_no_ptxas_means_ptx_only_without_a_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("DNNC_PTXAS", str(tmp_path / "absent"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        package = compiler.compile_cuda(small_graph(), "sm_80", cache=False)
    assert package.cubins == {} and package.manifest["format_version"] == 2
    assert "PTX only" in package.describe()


def test_turning_cubins_off_is_in_the_cache_key(monkeypatch):
    g = small_graph()
    on = compiler.cache_key(g, compiler.Options(target="cuda", arch="sm_80"))
    off = compiler.cache_key(g, compiler.Options(target="cuda", arch="sm_80", cubin=False))
    assert on != off
    monkeypatch.setenv("DNNC_CUBIN", "0")
    assert compiler.cache_key(g, compiler.Options(target="cuda", arch="sm_80")) == off
    with pytest.raises(dnnc.errors.UnsupportedError, match="cubin=.* applies to target 'cuda'"):
        compiler.Options(target="cpu", cubin=False)


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_ptxas_cubin_round_trips_through_the_jit_cache(tmp_path, monkeypatch, arch):
    monkeypatch.setenv("DNNC_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("DNNC_PTXAS", raising=False)
    g = small_graph(f"cubin_{arch}")
    package, data = compiler.compile_or_read(g, arch)
    [entry] = package.manifest["cubins"]
    cubin = package.cubins[entry["file"]]
    assert entry["arch"] == arch and entry["file"] == f"kernels.{arch}.cubin"
    assert entry["ptxas_version"] == ptxas.version(ptxas.find()) != "unknown"
    assert cubin.startswith(b"\x7fELF") and entry["sha256"] == hashlib.sha256(cubin).hexdigest()
    # What ptxas makes of the package's PTX, byte for byte.
    assert ptxas.assemble_cubin(package.ptx, arch)[1] == cubin
    hit, again = compiler.compile_or_read(g, arch)
    assert hit is None and again == data
    exe_artifact = runtime_artifact.read(again)
    assert [c.data for c in exe_artifact.cubins] == [cubin]
    monkeypatch.setenv("DNNC_CUBIN", "0")
    off, _ = compiler.compile_or_read(g, arch)
    assert off is not None and off.cubins == {} and off.manifest["cubins"] == []


@needs_ptxas
def test_dnnc_compile_no_cubin(tmp_path, monkeypatch, capsys):
    from dnnc import cli

    monkeypatch.delenv("DNNC_PTXAS", raising=False)
    src = tmp_path / "g.mlir"
    src.write_text(small_graph().to_mlir())
    with_cubin, without = tmp_path / "a.dnnpkg", tmp_path / "b.dnnpkg"
    assert cli.main(["compile", str(src), "--arch", "sm_90a", "-o", str(with_cubin)]) == 0
    assert "cubin kernels.sm_90a.cubin (sm_90a, ptxas" in capsys.readouterr().out
    assert cli.main(["compile", str(src), "--arch", "sm_90a", "--no-cubin", "-o",
                     str(without)]) == 0
    assert "PTX only" in capsys.readouterr().out
    assert set(zipfile.ZipFile(with_cubin).namelist()) - set(zipfile.ZipFile(without).namelist()) \
        == {"kernels.sm_90a.cubin"}
    assert cli.main(["compile", str(src), "--no-cubin"]) == 2
    assert "--no-cubin configures GPU kernels: it needs --arch" in capsys.readouterr().err


def test_frontend_plan_says_which_code(tmp_path, monkeypatch):
    import dnnc.frontend as cudnn

    monkeypatch.setenv("DNNC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DNNC_PTXAS", fake_ptxas(tmp_path, (
        f"open(out, 'wb').write({FAKE_CUBIN!r}) if out else print('V1.2.3')\n")))
    ptxas.version.cache_clear()
    g = cudnn.pygraph(io_data_type=cudnn.data_type.FLOAT, compute_data_type=cudnn.data_type.FLOAT,
                      target="cuda", sm_version=80)
    x = g.tensor(name="x", dim=[8, 32], stride=[32, 1])
    g.relu(input=x).set_output(True)
    g.build([cudnn.heur_mode.A])
    text = g.describe_plan()
    assert text.endswith("\ncode: PTX and kernels.sm_80.cubin (sm_80), loaded at the first execute")
    exe = g._last_plan.exe
    exe.loaded_from, exe.load_note = "cubin", "kernels.sm_80.cubin (sm_80, ptxas 1.2.3)"
    assert g.describe_plan().endswith(
        "\ncode: loaded from its cubin: kernels.sm_80.cubin (sm_80, ptxas 1.2.3)")


# -- ptxas on several threads (DNNC_PTXAS_THREADS) ------------------------------

@pytest.mark.parametrize("value, flag", [(None, None), ("1", None), ("0", None),
                                         ("4", "--split-compile=4")])
def test_ptxas_threads_reach_the_command_line(tmp_path, monkeypatch, value, flag):
    tool = fake_ptxas(tmp_path, (
        "if args == ['--version']:\n"
        "    print('Cuda compilation tools, release 99.1, V99.1.7'); sys.exit(0)\n"
        "open(out, 'wb').write(b'\\x7fELF' + ' '.join(args).encode())\n"))
    monkeypatch.setenv("DNNC_PTXAS", tool)
    if value is None:
        monkeypatch.delenv("DNNC_PTXAS_THREADS", raising=False)
    else:
        monkeypatch.setenv("DNNC_PTXAS_THREADS", value)
    ptxas.version.cache_clear()
    package = compiler.compile_cuda(small_graph("cubin_threads"), "sm_80", cache=False)
    args = package.cubins["kernels.sm_80.cubin"][4:].decode().split()
    assert [a for a in args if a.startswith("--split-compile")] == ([flag] if flag else [])


@pytest.mark.parametrize("value", ["four", "-2"])
def test_ptxas_threads_that_are_not_a_count_are_refused(monkeypatch, value):
    monkeypatch.setenv("DNNC_PTXAS_THREADS", value)
    with pytest.raises(ValueError, match=f"DNNC_PTXAS_THREADS: expected .*{value}"):
        env.ptxas_threads()


@needs_ptxas
def test_ptxas_on_threads_makes_the_same_cubin_every_time():
    text = compiler.compile_cuda(small_graph("cubin_split"), "sm_90a", cache=False,
                                 cubin=False).ptx
    one = ptxas.assemble_cubin(text, "sm_90a")[1]
    split = [ptxas.assemble_cubin(text, "sm_90a", threads=4)[1] for _ in range(2)]
    assert split[0] == split[1]
    assert one == ptxas.assemble_cubin(text, "sm_90a", threads=1)[1]
