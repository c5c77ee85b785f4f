"""A package's cubin against its PTX on a real GPU: each test package of
``DNNC_GPU_PACKAGES`` (default ``.pkgs``, built by ``tools/build-gpu-tests``)
is loaded twice, once as it comes (its cubin, which ptxas made for the GPU's
arch at build time) and once with ``cubin=False`` (its PTX, which the
driver compiles). Both must load what they say they load
(``Executable.loaded_from``), match the NumPy reference stored beside the
package, and write the same bits.

A handful of packages is enough (the rest of test/gpu runs every package,
from its cubin):

    tools/build-gpu-tests -k 'layer_rms_norm_bf16,matmul_bf16,sdpa_causal_bf16,conv_fused_tc_bf16' --out .pkgs/cubin
    DNNC_GPU_PACKAGES=.pkgs/cubin pytest test/gpu/test_cubin_gpu.py

The same bits are expected because ptxas and the driver's JIT compiler
assemble the same PTX; when the driver is of another CUDA release than the
ptxas that made the cubin, the failure message says so (another release may
schedule or contract floating-point operations differently).
"""

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dnnc_runtime  # noqa: E402
from test_packages import FOLDER, _bits, _cases, _check, _poisoned, _to_device  # noqa: E402


def _driver_version():
    from dnnc_runtime import cuda

    try:
        version = cuda.call(cuda.driver().cuDriverGetVersion)
    except Exception:  # noqa: BLE001 - for a message only
        return "unknown"
    return f"{version // 1000}.{version % 1000 // 10}"


@pytest.mark.gpu
@pytest.mark.parametrize("case", _cases())
def test_cubin_and_ptx_give_the_same_outputs(case):
    path = os.path.join(FOLDER, case["package"])
    from_cubin = dnnc_runtime.load(path)
    from_ptx = dnnc_runtime.load(path, cubin=False)
    capability = torch.cuda.get_device_capability()
    cubins = [c for c in from_cubin.artifact.cubins if c.capability == tuple(capability)]
    if not cubins:
        pytest.skip(f"{case['package']} has no cubin for compute capability "
                    f"{capability[0]}.{capability[1]} (built without ptxas, or for another arch)")
    data = np.load(os.path.join(FOLDER, case["data"]))
    inputs = {spec["name"]: float(data[spec["key"]]) if spec.get("by_value") else
              _to_device(data[spec["key"]], spec) for spec in case["inputs"]}
    results = {}
    for label, exe in (("cubin", from_cubin), ("ptx", from_ptx)):
        outputs = {spec["name"]: _poisoned(spec) for spec in case["outputs"]}
        exe(**inputs, outputs=outputs)
        torch.cuda.synchronize()
        assert exe.loaded_from == label, exe.load_note
        for spec in case["outputs"]:
            _check(f"{case['name']}.{spec['name']} (from the {label})", outputs[spec["name"]],
                   data[spec["key"]], spec)
        results[label] = outputs
    if not case.get("deterministic", True):
        return   # reduce-adds in no fixed order: each checked against the reference above
    cubin = cubins[0]
    for spec in case["outputs"]:
        a, b = _bits(results["cubin"][spec["name"]]), _bits(results["ptx"][spec["name"]])
        differ = np.flatnonzero(a != b)
        assert differ.size == 0, (
            f"{case['name']}.{spec['name']}: the cubin's bits differ from the PTX's in "
            f"{differ.size} of {a.size} bytes (first at byte {differ[:1].tolist()}); cubin "
            f"by ptxas {cubin.ptxas_version}, PTX compiled by the driver of CUDA "
            f"{_driver_version()}")
