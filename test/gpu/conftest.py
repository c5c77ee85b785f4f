"""GPU tests: marked ``gpu`` and skipped, all of them, where no CUDA device is usable.

Run explicitly (pyproject's testpaths is test/python): ``pytest test/gpu``.
Works from a plain checkout too: runtime/ is put on sys.path when
dnnc_runtime is not installed.
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# The case definitions tools/build-gpu-tests compiles: they import dnnc (and
# so MLIR), which a machine that only runs the packages need not have.
collect_ignore = ["gpu_cases"]

try:
    import dnnc_runtime  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(ROOT, "runtime"))
    import dnnc_runtime  # noqa: F401


def _why_no_gpu():
    from dnnc_runtime import cuda
    try:
        cuda.init()
    except Exception as e:  # no cuda-python, no driver, no device
        return f"no usable CUDA device: {e}"
    return None if cuda.device_count() > 0 else "no CUDA device on this machine"


def pytest_collection_modifyitems(config, items):
    mine = [item for item in items if str(item.fspath).startswith(HERE + os.sep)]
    if not mine:
        return
    reason = _why_no_gpu()
    for item in mine:
        item.add_marker(pytest.mark.gpu)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
