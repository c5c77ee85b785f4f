"""dnn-dedup-kernels: one ``gpu.func`` for kernels whose code is identical.

A graph repeats kernels: ResNet-50's bottlenecks run the same convolution,
batchnorm and layout kernels at the same shapes over and over, and each
occurrence is outlined as a kernel of its own. Everything after the ``gpu``
stage (NVVM conversion, LLVM's NVPTX back end, ptxas) costs time per kernel,
so this pass keeps the first of each set of identical kernels of a
``gpu.module`` and points the launches of the others at it. The kept
kernel's PTX is what it was; the package's plan launches one entry more than
once (its records keep the host kernel function each launch came from).

Two kernels are identical when their ``gpu.func`` ops print the same, the
symbol name aside: body, argument types and every attribute (launch bounds,
cluster shape, ...). The launch parameters (grid, block, dynamic shared
memory) are the launches' own and may differ. Only kernels (``gpu.func``
marked ``kernel``, which device code cannot call) launched from the host's
functions are merged.

Before::

    gpu.launch_func @dnn_kernels::@k0_kernel ...
    gpu.launch_func @dnn_kernels::@k1_kernel ...
    gpu.module @dnn_kernels {
      gpu.func @k0_kernel(%a: memref<4xf32>) kernel { ... }
      gpu.func @k1_kernel(%a: memref<4xf32>) kernel { ... }   // the same code
    }

After::

    gpu.launch_func @dnn_kernels::@k0_kernel ...
    gpu.launch_func @dnn_kernels::@k0_kernel ...
    gpu.module @dnn_kernels {
      gpu.func @k0_kernel(%a: memref<4xf32>) kernel { ... }
    }

Lit test: test/lit/passes/dnn_dedup_kernels.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import irutil
from dnnc.passes import DnncPass, register

# What a kernel's symbol is replaced by when its text is compared.
_PLACEHOLDER = "dnn_dedup_kernel"


def _code_key(fn, name):
    """The text of gpu.func ``fn`` (named ``name``) with its name replaced:
    equal for kernels of identical code. Printed in local scope, so that
    the cost is the kernel's size, not the module's, without locations
    (debug information is not code), and without verifying it again (the
    pass manager verified the module after the pass before)."""
    text = fn.get_asm(use_local_scope=True, enable_debug_info=False, assume_verified=True)
    return text.replace(f"@{name}(", f"@{_PLACEHOLDER}(", 1)


def dedup(module):
    """Merge identical kernels of each gpu.module of ``module``; return
    {(gpu.module name, dropped kernel): kept kernel}."""
    module = getattr(module, "operation", module)
    launched = {}
    for launch in irutil.launches(module):
        parts = list(ir.SymbolRefAttr(launch.attributes["kernel"]).value)
        launched.setdefault((parts[0], parts[-1]), []).append(launch)
    dropped = {}
    for gm in [op.operation for op in irutil.body(module).operations
               if op.operation.name == "gpu.module"]:
        gm_name = irutil.symbol(gm)
        funcs = [op.operation for op in irutil.body(gm).operations
                 if op.operation.name == "gpu.func" and "gpu.kernel" in op.operation.attributes]
        kept = {}
        for fn in funcs:
            name = irutil.symbol(fn)
            if (gm_name, name) not in launched:
                continue
            key = _code_key(fn, name)
            first = kept.setdefault(key, name)
            if first == name:
                continue
            target = ir.SymbolRefAttr.get([gm_name, first])
            for launch in launched.pop((gm_name, name)):
                launch.attributes["kernel"] = target
            dropped[(gm_name, name)] = first
            fn.erase()
    return dropped


@register
@dataclass
class DnnDedupKernels(DnncPass):
    NAME = "dnn-dedup-kernels"

    def run(self, module):
        dedup(module)
