"""Which code of a package the runtime loads on a GPU: a cubin, or the PTX.

Every package holds its kernels as PTX, which the driver compiles for the
GPU when loading it (``cuModuleLoadDataEx`` runs the driver's JIT compiler:
milliseconds for a small package, seconds for a large one, unless the
driver's own disk cache has it from an earlier process). A package compiled
where ptxas was found also holds a cubin: the same PTX assembled for one
arch, machine code the driver loads as it is. ``load`` takes the cubin when

1. cubins are not turned off: ``use_cubin`` False (``dnnc_runtime.load(...,
   cubin=False)``), or, when ``use_cubin`` is None, ``DNNC_CUBIN=0`` in the
   environment (read here, the runtime's one place for it);
2. the package has one for exactly the device's compute capability (an
   sm_90a cubin for 9.0; an sm_80 cubin is not tried on an 8.6 GPU, which
   gets the PTX compiled for it); and
3. the driver accepts it (one too old for the ptxas that made it refuses
   it, for instance);

else it loads the PTX, as it always did. So it never fails where loading
the PTX would have worked: when the cubin is refused and the PTX is too,
the PTX's error is raised, with the cubin's in its message. ``load``
returns the module, which code it came from ("cubin" or "ptx") and why,
which ``Executable.loaded_from`` and ``load_note`` report.
"""

import os

from . import cuda
from .errors import CudaError

CUBIN, PTX = "cubin", "ptx"


def cubins_enabled(use_cubin=None):
    """``use_cubin`` when given, else False only when DNNC_CUBIN is ``0``."""
    if use_cubin is not None:
        return bool(use_cubin)
    return os.environ.get("DNNC_CUBIN", "").strip() != "0"


def choose(artifact, capability, use_cubin=None):
    """(the CubinSpec to try, or None; why not, when None): pure Python,
    steps 1 and 2 of the module docstring."""
    if not artifact.cubins:
        return None, "the package has no cubin"
    if not cubins_enabled(use_cubin):
        return None, ("cubins turned off (DNNC_CUBIN=0)" if use_cubin is None
                      else "cubins turned off (cubin=False)")
    for cubin in artifact.cubins:
        if cubin.capability == tuple(capability):
            return cubin, ""
    archs = ", ".join(c.arch for c in artifact.cubins)
    return None, (f"no cubin for compute capability {capability[0]}.{capability[1]} "
                  f"(the package has {archs})")


def load(artifact, capability, use_cubin=None):
    """(module, "cubin" or "ptx", note) for ``artifact`` on the current
    context's device of compute ``capability``."""
    cubin, why = choose(artifact, capability, use_cubin)
    if cubin is not None:
        try:
            module = cuda.load_module(cubin.data)
        except CudaError as err:
            why = f"the driver refused {cubin.file}: {err}"
        else:
            return module, CUBIN, f"{cubin.file} ({cubin.arch}, ptxas {cubin.ptxas_version})"
    try:
        module = cuda.load_module(artifact.ptx)
    except CudaError as err:
        if cubin is not None:
            err.args = (f"{err.args[0]} (the cubin was tried first: {why})", *err.args[1:])
        raise
    return module, PTX, why
