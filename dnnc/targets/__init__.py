"""The back ends a dnn module compiles for (``Options.target``).

* ``cpu``: the fused module through linalg to LLVM, run by MLIR's
  ExecutionEngine;
* ``cuda``: the whole cuda pipeline to PTX and a ``dnnc.artifact.Package``
  for the runtime.
"""
