"""dnnc_runtime: load a .dnnpkg and run it on a GPU, without MLIR or the compiler.

    import dnnc_runtime
    exe = dnnc_runtime.load("graph.dnnpkg")     # validates; no GPU needed yet
    print(exe.plan)                             # the kernels, as a table
    y = exe(x, w)                               # torch / CuPy / DLPack / NumPy arguments
    exe(x, w, outputs=[y])                      # into caller-provided outputs (graph-capturable)
    ms = exe.time(x, w, repeat=100)             # per-kernel median milliseconds

Depends on numpy and cuda-python only, each imported when first needed:
cuda-python on first GPU use, numpy when a NumPy array is an argument or a
result (loading a package and calling it with torch tensors need neither
numpy nor ml_dtypes); PyTorch, CuPy, Numba and ml_dtypes are used when the
caller's arguments come from them.
The rule (docs/artifact.md, DESIGN.md): this package never imports ``mlir``
or ``dnnc``.
"""

from .artifact import FORMAT_VERSION
from .errors import ArgumentError, ArtifactError, CudaError, DeviceError, DnncRuntimeError
from .executable import Executable, Plan, load

__version__ = "0.1.0"

__all__ = ["load", "Executable", "Plan", "FORMAT_VERSION", "DnncRuntimeError", "ArtifactError",
           "ArgumentError", "CudaError", "DeviceError", "__version__"]
