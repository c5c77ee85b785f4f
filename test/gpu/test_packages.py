"""Run the compiled test packages on the GPU with the runtime alone, and check
them against the NumPy reference's results stored beside them.

The packages come from ``tools/build-gpu-tests`` (run where MLIR is installed;
it compiles the cases of ``gpu_cases/`` into ``.pkgs/`` with ``index.json``).
This file needs only dnnc_runtime, torch and NumPy, and imports none of
``gpu_cases/``, so it also proves the compile-here, run-there flow: set
``DNNC_GPU_PACKAGES`` to use another folder.

Inputs are laid out with the manifest's strides (channels-last cases really
are channels-last in memory); outputs are pre-filled with NaN (booleans with
0xFF) so that an element the kernels never write fails the comparison. The
zero-size cases pass tensors without elements (torch puts them at address 0)
and check that the outputs that do have elements (zeros, NaN means) are
written, by a plan with no empty launch. Each package is called twice,
outputs poisoned again before the second call, which must find the
workspace as the first left it and write the same bits as the first: every
dnnc kernel sums in a fixed order, with no float atomics (split-K partials,
column partials and cluster exchanges are added in split / rank order;
integer atomics only count arrivals), so outputs, backward reductions
included, are deterministic; the one exception, a package whose index entry
says ``"deterministic": false`` (the fused attention backward sums dQ by
TMA reduce-adds), has both calls checked against the reference only. A runtime scalar (an
input marked ``by_value``) is passed as a Python float; a case that lists
``runs`` is then called once more per run with other values of its scalars,
each checked against the reference's outputs for those values.
"""

import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dnnc_runtime  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FOLDER = os.environ.get("DNNC_GPU_PACKAGES", os.path.join(ROOT, ".pkgs"))
INDEX = os.path.join(FOLDER, "index.json")

TORCH_DTYPES = {
    "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
    "f8E4M3FN": torch.float8_e4m3fn, "f8E5M2": torch.float8_e5m2, "i1": torch.bool,
    "i32": torch.int32, "si8": torch.int8, "ui8": torch.uint8,
}


def _cases():
    if not os.path.exists(INDEX):
        return [pytest.param(None, marks=pytest.mark.skip(
            reason=f"no {INDEX}: build it with tools/build-gpu-tests"))]
    with open(INDEX) as f:
        index = json.load(f)
    return [pytest.param(c, id=c["name"]) for c in index["cases"]]


def _to_device(array, spec):
    """A device tensor with the manifest's dims and strides holding ``array``."""
    dtype = TORCH_DTYPES[spec["dtype"]]
    if spec["dtype"] == "bf16":
        host = torch.from_numpy(np.ascontiguousarray(array).view(np.int16)).view(dtype)
    elif spec["dtype"].startswith("f8"):
        host = torch.from_numpy(np.ascontiguousarray(array).view(np.uint8)).view(dtype)
    else:
        host = torch.from_numpy(np.ascontiguousarray(array))
    dims, strides = spec["dims"], spec["strides"]
    # A dim the input broadcasts (stride 0) stores one element: copy index 0
    # of it (the case drew equal values along it) into a tensor of size 1
    # there, then expand it to the manifest's dims and strides.
    broadcast = [d for d, (n, s) in enumerate(zip(dims, strides)) if s == 0 and n > 1]
    stored = [1 if d in broadcast else n for d, n in enumerate(dims)]
    host = host.reshape(dims)
    for d in broadcast:
        host = host.narrow(d, 0, 1)
    out = torch.empty_strided(stored, strides, dtype=dtype, device="cuda")
    out.copy_(host.to("cuda"))
    return out.expand(dims)


def _poisoned(spec):
    dtype = TORCH_DTYPES[spec["dtype"]]
    out = torch.empty_strided(spec["dims"], spec["strides"], dtype=dtype, device="cuda")
    if dtype == torch.bool:
        out.view(torch.uint8).fill_(0xFF)
    elif spec["dtype"].startswith("f8"):
        out.view(torch.uint8).fill_(0x7F)  # NaN in both fp8 formats
    elif spec["dtype"] in ("i32", "si8", "ui8"):
        out.fill_({"i32": -0x5A5A5A5B, "si8": -91, "ui8": 0xA5}[spec["dtype"]])  # 0xA5 bytes
    else:
        out.fill_(float("nan"))
    return out


def _fp8_order(codes):
    """fp8 codes -> integers in the order of their values (sign-magnitude)."""
    codes = codes.astype(np.int32)
    magnitude = codes & 0x7F
    return np.where(codes & 0x80, -magnitude, magnitude)


def _bits(t):
    """The bytes of ``t``'s elements in logical (row-major) order."""
    return t.contiguous().reshape(-1).view(torch.uint8).cpu().numpy()


def _check(name, got, expected, rule):
    if rule["compare"] == "exact" or got.dtype == torch.bool:
        np.testing.assert_array_equal(got.cpu().numpy(), expected, err_msg=name)
        return
    if rule["compare"] == "fp8_ulps":
        ref = torch.from_numpy(np.asarray(expected, np.float32)).to(got.dtype)
        got = got.contiguous().cpu()
        # NaN where the reference has NaN (of either sign: a NaN's code is
        # not specified), elsewhere codes at most ``ulps`` apart.
        nan = np.isnan(np.asarray(expected, np.float64))
        np.testing.assert_array_equal(torch.isnan(got.float()).numpy(), nan,
                                      err_msg=f"{name}: NaN positions")
        a = _fp8_order(got.view(torch.uint8).numpy())[~nan]
        b = _fp8_order(ref.view(torch.uint8).numpy())[~nan]
        off = np.abs(a - b) > rule["ulps"]
        if "atol" in rule:
            # A contraction's output: within the absolute tolerance of its f32
            # sum passes too (gpu_cases/case.py, comparison).
            values = got.float().numpy().astype(np.float64)[~nan]
            off &= np.abs(values - np.asarray(expected, np.float64)[~nan]) > rule["atol"]
        assert not off.any(), (f"{name}: {int(off.sum())} elements more than {rule['ulps']} "
                               f"codes and {rule.get('atol', 0)} from the reference")
        return
    values = got.float().cpu().double().numpy()
    nan = np.isnan(expected)
    assert not np.isnan(values[~nan]).any(), f"{name}: NaN where the reference has none"
    np.testing.assert_allclose(values, expected, rtol=rule["rtol"], atol=rule["atol"],
                               equal_nan=True, err_msg=name)


@pytest.mark.gpu
@pytest.mark.parametrize("case", _cases())
def test_package_matches_reference(case):
    exe = dnnc_runtime.load(os.path.join(FOLDER, case["package"]))
    # The compiler drops kernels without iterations: every launch has work.
    assert len(exe.plan) == case["kernels"] and all(k.has_work for k in exe.plan)
    data = np.load(os.path.join(FOLDER, case["data"]))
    inputs = {spec["name"]: float(data[spec["key"]]) if spec.get("by_value") else
              _to_device(data[spec["key"]], spec) for spec in case["inputs"]}
    # Twice, outputs poisoned each time: the second call finds the workspace
    # as the first left it (split-K arrival counters back at zero) and
    # writes the same bits (sums in a fixed order: NaN where the first call
    # had NaN, with the same payload).
    first = {}
    for call in ("first call", "second call"):
        outputs = {spec["name"]: _poisoned(spec) for spec in case["outputs"]}
        exe(**inputs, outputs=outputs)
        torch.cuda.synchronize()
        for spec in case["outputs"]:
            name = f"{case['name']}.{spec['name']}"
            _check(f"{name} ({call})", outputs[spec["name"]], data[spec["key"]], spec)
            if not case.get("deterministic", True):
                continue  # dQ summed by reduce-adds in no fixed order: checked above
            bits = _bits(outputs[spec["name"]])
            if call == "first call":
                first[spec["name"]] = bits
                continue
            differ = np.flatnonzero(bits != first[spec["name"]])
            assert differ.size == 0, (
                f"{name}: the second call's bits differ from the first's in {differ.size} of "
                f"{bits.size} bytes (first at byte {differ[:1].tolist()}): not deterministic")
    # The same executable with other values of its runtime scalars (numbers,
    # passed to the kernels by value): each run's outputs are the
    # reference's for its values.
    for j, run in enumerate(case.get("runs", ()), 1):
        values = {name: float(data[key]) for name, key in run["inputs"].items()}
        outputs = {spec["name"]: _poisoned(spec) for spec in run["outputs"]}
        exe(**dict(inputs, **values), outputs=outputs)
        torch.cuda.synchronize()
        for spec in run["outputs"]:
            _check(f"{case['name']}.{spec['name']} (run {j}: {values})", outputs[spec["name"]],
                   data[spec["key"]], spec)
