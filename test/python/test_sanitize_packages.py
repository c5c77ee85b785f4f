"""tools/sanitize-packages' choice of packages: the smallest of each kind
of kernel by default, every package with --every (no GPU: the choice reads
only the folders' index.json and the packages' manifests)."""

import importlib.machinery
import importlib.util
import json
import os
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _tool():
    path = os.path.join(ROOT, "tools", "sanitize-packages")
    loader = importlib.machinery.SourceFileLoader("sanitize_packages", path)
    spec = importlib.util.spec_from_loader("sanitize_packages", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _folder(tmp_path, cases):
    """A build-gpu-tests-like folder: (name, dims, [(strategy, reason)]) a case."""
    index = {"cases": []}
    for name, dims, kernels in cases:
        package = f"{name}.dnnpkg"
        with zipfile.ZipFile(tmp_path / package, "w") as z:
            z.writestr("manifest.json", json.dumps(
                {"kernels": [{"strategy": s, "reason": r} for s, r in kernels]}))
        index["cases"].append({"name": name, "package": package, "data": f"{name}.npz",
                               "inputs": [{"dims": dims, "dtype": "bf16"}]})
    (tmp_path / "index.json").write_text(json.dumps(index))
    return str(tmp_path)


def test_one_package_per_kind_and_every_package(tmp_path):
    tool = _tool()
    gemm = ("tc-sm90", "matmul: a tensor-core GEMM")
    folder = _folder(tmp_path, [
        ("big_gemm", [512, 512], [gemm]),
        ("small_gemm", [64, 64], [gemm]),
        ("norm", [8, 1024], [("simt-reduce", "layernorm: rows")]),
    ])
    by_kind = tool.choose([folder])
    assert sorted(name for _, name in by_kind.values()) == ["norm", "small_gemm"]
    assert by_kind[("tc-sm90", "matmul")] == (folder, "small_gemm")
    every = tool.choose([folder], every=True)
    assert sorted(name for _, name in every.values()) == ["big_gemm", "norm", "small_gemm"]
    assert ("tc-sm90", "matmul", "big_gemm") in every
