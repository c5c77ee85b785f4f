"""Run a dnn-level MLIR module with the NumPy reference.

This executes IR at any stage that still holds dnn ops (before or after
decomposition and fusion: ``func.call`` into outlined kernels is followed), so
tests can check that a pass keeps a graph's meaning without compiling it.
Every tensor is rounded to its declared element type, as storage would.
"""

import numpy as np

from dnnc import reference
from dnnc.dialect import builders
from dnnc.dialect.types import data_type
from dnnc.dialect.walk import entry_function
from dnnc.errors import GraphError, UnsupportedError


def _functions(module):
    return {str(f.attributes["sym_name"]).strip('"'): f for f in module.body.operations
            if f.operation.name == "func.func"}


def run_module(module, inputs):
    """Run the entry function on ``inputs`` (a list of arrays, in argument
    order); return the list of results as float64 (or bool) arrays."""
    funcs = _functions(module)
    return _run_function(entry_function(module), funcs, list(inputs))


def _run_function(func, funcs, args):
    block = func.regions[0].blocks[0]
    if len(args) != len(block.arguments):
        raise GraphError(f"function expects {len(block.arguments)} inputs, got {len(args)}")
    env = {}
    for arg, value in zip(block.arguments, args):
        info = builders.info_of(arg.type)
        value = np.asarray(value)
        if value.shape != info.shape:
            raise GraphError(f"input #{arg.arg_number}: expected shape {info.shape}, "
                             f"got {value.shape}")
        env[arg] = reference.round_to(value.astype(bool) if info.dtype is data_type.BOOLEAN
                                      else value.astype(np.float64), info.dtype)
    for op in block.operations:
        name = op.operation.name
        if name == "func.return":
            return [env[v] for v in op.operands]
        if name == "func.call":
            callee = str(op.attributes["callee"]).lstrip("@")
            outs = _run_function(funcs[callee], funcs, [env[v] for v in op.operands])
            for result, value in zip(op.results, outs):
                env[result] = value
            continue
        if not name.startswith("dnn."):
            raise UnsupportedError(f"the reference interpreter runs dnn ops only, got '{name}'")
        view = builders.verify(op)
        operands = {k: ([env[x] for x in v] if isinstance(v, list) else
                        (env[v] if v is not None else None))
                    for k, v in view.operands.items()}
        results = {k: builders.info_of(v.type) for k, v in view.results.items() if v is not None}
        outs = reference.evaluate(view.name, operands, view.attrs, results)
        for key, value in view.results.items():
            if value is not None:
                env[value] = reference.round_to(np.asarray(outs[key]), results[key].dtype)
    raise GraphError("function has no func.return")
