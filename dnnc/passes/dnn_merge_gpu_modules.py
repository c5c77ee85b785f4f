"""dnn-merge-gpu-modules: put every outlined kernel into one ``gpu.module``.

``gpu-kernel-outlining`` makes one ``gpu.module`` per launch, and names the
kernel after the host function, so two modules can hold kernels of one name.
The artifact ships one PTX module (``kernels.ptx``): this pass moves every
``gpu.func`` into a single ``gpu.module`` (named ``name``, default
``dnn_kernels``), renames each after the module it came from (those names
are unique) and points every ``gpu.launch_func`` at its new place.

Before::

    gpu.launch_func @main_k0_kernel::@main_k0_kernel ...
    gpu.launch_func @main_k0_kernel_0::@main_k0_kernel ...
    gpu.module @main_k0_kernel { gpu.func @main_k0_kernel(...) kernel {...} }
    gpu.module @main_k0_kernel_0 { gpu.func @main_k0_kernel(...) kernel {...} }

After::

    gpu.launch_func @dnn_kernels::@main_k0_kernel ...
    gpu.launch_func @dnn_kernels::@main_k0_kernel_0 ...
    gpu.module @dnn_kernels {
      gpu.func @main_k0_kernel(...) kernel {...}
      gpu.func @main_k0_kernel_0(...) kernel {...}
    }

Lit test: test/lit/passes/dnn_merge_gpu_modules.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import irutil
from dnnc.errors import LoweringError
from dnnc.passes import DnncPass, register


def _launch_target(launch):
    """(module name, kernel name) of a gpu.launch_func."""
    ref = ir.SymbolRefAttr(launch.attributes["kernel"])
    parts = list(ref.value)
    return parts[0], parts[-1]


def merge(module, name):
    module = getattr(module, "operation", module)
    gpu_modules = [op.operation for op in irutil.body(module).operations
                   if op.operation.name == "gpu.module"]
    if not gpu_modules:
        return
    taken = {irutil.symbol(op.operation) for op in irutil.body(module).operations
             if "sym_name" in op.operation.attributes}
    if name in taken:
        raise LoweringError(f"dnn-merge-gpu-modules: symbol @{name} is already taken")
    with module.context, ir.Location.unknown():
        merged = ir.Operation.create("gpu.module", regions=1,
                                     attributes={"sym_name": ir.StringAttr.get(name)},
                                     ip=ir.InsertionPoint(gpu_modules[0]))
        merged.regions[0].blocks.append()
        if "targets" in gpu_modules[0].attributes:
            merged.attributes["targets"] = gpu_modules[0].attributes["targets"]
        renamed = {}
        target = irutil.body(merged)
        for gm in gpu_modules:
            mod_name = irutil.symbol(gm)
            kernels = [op.operation for op in irutil.body(gm).operations
                       if op.operation.name in ("gpu.func", "llvm.func", "func.func")]
            for k in kernels:
                old = irutil.symbol(k)
                new = mod_name if k.name == "gpu.func" and len(kernels) == 1 else \
                    f"{mod_name}_{old}"
                renamed[(mod_name, old)] = new
                k.attributes["sym_name"] = ir.StringAttr.get(new)
                k.detach_from_parent()
                target.append(k)
            gm.erase()
        for launch in irutil.launches(module):
            key = _launch_target(launch)
            if key not in renamed:
                raise LoweringError(f"dnn-merge-gpu-modules: launch of unknown kernel "
                                    f"@{key[0]}::@{key[1]}")
            launch.attributes["kernel"] = ir.SymbolRefAttr.get([name, renamed[key]])


@register
@dataclass
class DnnMergeGpuModules(DnncPass):
    NAME = "dnn-merge-gpu-modules"
    name: str = "dnn_kernels"

    def run(self, module):
        merge(module, self.name)
