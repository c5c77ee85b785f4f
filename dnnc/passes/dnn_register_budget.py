"""dnn-register-budget: a kernel whose warpgroups reallocate registers
(``setmaxnreg``: the tensor-core kernels' producers give registers to their
consumers) gets ``nvvm.minctasm = 1``.

ptxas applies ``setmaxnreg`` only when it knows the register count a thread
has at the kernel's entry, which it derives from the launch bounds: the
block size alone (``.maxntid``, from the launch's known block size) is not
always enough, and then it ignores every ``setmaxnreg`` (C7508) and
compiles each warpgroup within the block's even share, spilling what does
not fit. One block per SM (``.minnctapersm 1``) fixes the count at 64K
registers over the block's threads. These kernels run one block per SM
anyway: their shared memory is most of the SM's.

Before::

    gpu.func @k(...) kernel { ... nvvm.setmaxregister increase 240 ... }

After::

    gpu.func @k(...) kernel attributes {nvvm.minctasm = 1 : i32} { ... }

Lit test: test/lit/passes/dnn_register_budget.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import irutil
from dnnc.passes import DnncPass, register

ATTR = "nvvm.minctasm"


def mark(module):
    module = getattr(module, "operation", module)
    for gm in irutil.body(module).operations:
        if gm.operation.name != "gpu.module":
            continue
        for f in irutil.body(gm.operation).operations:
            fn = f.operation
            if fn.name == "gpu.func" and irutil.ops(fn, "nvvm.setmaxregister"):
                fn.attributes[ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1)


@register
@dataclass
class DnnRegisterBudget(DnncPass):
    NAME = "dnn-register-budget"

    def run(self, module):
        with module.context, ir.Location.unknown():
            mark(module)
