"""dnnc/_bootstrap.py: libLLVM.so is loaded just before the first ``mlir``
import, not by ``import dnnc``.

Each check runs in a new process (this one has long imported MLIR) and
reads /proc/self/maps to see whether the library is mapped.
"""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = r"""
import json, sys
def llvm():
    return "libLLVM" in open("/proc/self/maps").read()
steps = {}
import dnnc, dnnc.frontend
steps["after import dnnc"] = [llvm(), "mlir" in sys.modules]
from dnnc import _bootstrap
spec = _bootstrap.mlir_spec()
steps["after mlir_spec"] = [llvm(), "mlir" in sys.modules, spec is not None]
import importlib.util
importlib.util.find_spec("dnnc.graph")       # other lookups load nothing either
steps["after other lookups"] = [llvm(), "mlir" in sys.modules]
from mlir import ir
with ir.Context() as ctx:
    module = ir.Module.parse("module {}")
steps["after from mlir import ir"] = [llvm(), "mlir" in sys.modules, str(module).strip()]
import dnnc.dialect
dnnc.dialect.context()                       # the dnn dialect loads through the same library
print(json.dumps(steps))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc/self/maps")
def test_libllvm_is_loaded_at_the_first_mlir_import():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "runtime")]))
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         check=True, env=env)
    steps = json.loads(run.stdout.strip().splitlines()[-1])
    assert steps["after import dnnc"] == [False, False]
    assert steps["after mlir_spec"] == [False, False, True]
    assert steps["after other lookups"] == [False, False]
    assert steps["after from mlir import ir"] == [True, True, "module {\n}"]


NO_MLIR = r"""
import sys
sys.path[:] = [p for p in sys.path if "site-packages" not in p]   # no wheels at all
import dnnc, dnnc.frontend             # needs none: no MLIR, NumPy or ml_dtypes
try:
    import mlir
except ImportError:
    print("ImportError")
"""


def test_a_missing_mlir_is_still_an_import_error():
    """Where the bindings are not installed, dnnc and dnnc.frontend import,
    and code that tries ``import mlir`` to see whether they are (the GPU
    tests do) gets ImportError, not dnnc's ToolError."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "runtime")]))
    run = subprocess.run([sys.executable, "-c", NO_MLIR], capture_output=True, text=True,
                         check=True, env=env)
    assert run.stdout.strip() == "ImportError"
