"""dnn-kernel-clusters: a kernel launched in thread-block clusters gets its
cluster shape as its own, compile-time attribute.

A ``gpu.launch`` with ``clusters(...) in (X, Y, Z)`` (the split-row program,
dnnc/codegen/gpu/reduce/rowsplit.py) becomes, after gpu-kernel-outlining, a
``gpu.launch_func ... clusters in (X, Y, Z)`` of a ``gpu.func`` that no
longer says so. This pass writes the constant shape on the kernel as
``nvvm.cluster_dim = array<i32: X, Y, Z>``, which the NVVM back end emits
as ``.explicitcluster`` and ``.reqnctapercluster X, Y, Z``: a kernel with a
compile-time cluster shape is launched by plain ``cuLaunchKernel`` (the
runtime needs no cluster launch attribute), in clusters of that shape. The
launch keeps its clusters: the host plan records them in the manifest, for
reading (docs/artifact.md). A kernel launched with two cluster shapes, or a
shape that is not constant, is a LoweringError.

Before::

    gpu.launch_func @m::@k clusters in (%c4, %c1, %c1) blocks in (%c8, %c1, %c1)
        threads in (%c512, %c1, %c1) args(...)
    gpu.module @m { gpu.func @k(...) kernel { ... } }

After::

    gpu.launch_func @m::@k clusters in (%c4, %c1, %c1) blocks in ... (unchanged)
    gpu.module @m {
      gpu.func @k(...) kernel attributes {nvvm.cluster_dim = array<i32: 4, 1, 1>} { ... }
    }

Lit test: test/lit/passes/dnn_kernel_clusters.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import irutil
from dnnc.errors import LoweringError
from dnnc.passes import DnncPass, register

ATTR = "nvvm.cluster_dim"


def cluster_of(launch):
    """The constant cluster shape [X, Y, Z] of a gpu.launch_func, or None
    when it launches no clusters."""
    view = launch.opview
    sizes = (view.clusterSizeX, view.clusterSizeY, view.clusterSizeZ)
    if any(v is None for v in sizes):
        return None
    shape = [irutil.constant_int(v) for v in sizes]
    if any(n is None for n in shape):
        raise LoweringError(f"dnn-kernel-clusters: launch at {launch.location} has a "
                            "dynamic cluster shape")
    return shape


def mark(module):
    module = getattr(module, "operation", module)
    kernels = {}
    for gm in irutil.body(module).operations:
        if gm.operation.name == "gpu.module":
            for f in irutil.body(gm.operation).operations:
                if f.operation.name == "gpu.func":
                    kernels[(irutil.symbol(gm.operation), irutil.symbol(f.operation))] = \
                        f.operation
    for launch in irutil.launches(module):
        shape = cluster_of(launch)
        if shape is None:
            continue
        module_name, name = irutil.launched_kernel(launch)
        fn = kernels.get((module_name, name))
        if fn is None:
            raise LoweringError(f"dnn-kernel-clusters: launch of unknown kernel "
                                f"@{module_name}::@{name}")
        attr = ir.DenseI32ArrayAttr.get(shape)
        if ATTR in fn.attributes and fn.attributes[ATTR] != attr:
            raise LoweringError(f"dnn-kernel-clusters: kernel @{name} is launched in "
                                f"clusters of {list(ir.DenseI32ArrayAttr(fn.attributes[ATTR]))}"
                                f" and of {shape}")
        fn.attributes[ATTR] = attr


@register
@dataclass
class DnnKernelClusters(DnncPass):
    NAME = "dnn-kernel-clusters"

    def run(self, module):
        with module.context, ir.Location.unknown():
            mark(module)
