"""dnn-register-budget: a kernel whose warpgroups reallocate registers
(``setmaxnreg``: the tensor-core kernels' producers give registers to their
consumers) gets ``nvvm.minctasm = 1``; so does tc-sm80's attention kernel
(launched from a kernel function that carries ``dnn.attention`` and is
configured tc-sm80), whose threads hold O, S, P and Q in up to 255
registers: with the block size alone as its launch bound ptxas may keep a
block of 128 or 256 threads to 128 registers a thread and spill (seen with
ptxas 13 at head dims 32 / 8, 64 / 72, 248 / 120); any launch bound lets
it take what the kernel needs.

ptxas applies ``setmaxnreg`` only when it knows the register count a thread
has at the kernel's entry, which it derives from the launch bounds: the
block size alone (``.maxntid``, from the launch's known block size) is not
always enough, and then it ignores every ``setmaxnreg`` (C7508) and
compiles each warpgroup within the block's even share, spilling what does
not fit. One block per SM (``.minnctapersm 1``) fixes the count at 64K
registers over the block's threads. These kernels run one block per SM
anyway: their shared memory is most of the SM's.

A kernel function whose builder planned its grid for several blocks an SM
says so in ``dnn.blocks_per_sm`` (irutil.BLOCKS_PER_SM_ATTR: one count per
gpu.launch, in order, 0 for none; simt-depthwise's filter gradient sets
it): each launched kernel gets that count as ``nvvm.minctasm``, so that
ptxas keeps its threads within the registers that many blocks leave them
instead of taking a few more and holding one block fewer.

Before::

    gpu.func @k(...) kernel { ... nvvm.setmaxregister increase 240 ... }

After::

    gpu.func @k(...) kernel attributes {nvvm.minctasm = 1 : i32} { ... }

A simt-gemm kernel (an FFMA GEMM, configured simt-gemm) gets
``nvvm.minctasm = 2``: two blocks an SM, so that one block's FFMAs run while
the other waits at its barrier. Without the bound ptxas gives a 128 x 128
tile's 256 threads 151 registers (one block an SM); with it 128, no spills
(ptxas 13, sm_90a).

Lit test: test/lit/passes/dnn_register_budget.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import irutil
from dnnc.heuristics.config import ATTR as CONFIG
from dnnc.heuristics.config import Config
from dnnc.passes import DnncPass, register

ATTR = "nvvm.minctasm"


# Kernel functions whose launched kernels hold as many registers as ptxas
# gives them: (the attribute they carry, their configured strategy).
WIDE_KERNELS = (("dnn.attention", "tc-sm80"),)


# Kernel functions whose launched kernels should share an SM with another
# block: {configured strategy: blocks an SM}.
SHARED_SM = {"simt-gemm": 2}


def _shared(module):
    """{(gpu.module, gpu.func) names: blocks an SM} launched from kernel
    functions configured one of SHARED_SM's strategies."""
    out = {}
    for fn in irutil.functions(module):
        config = Config.of_kernel(fn) if CONFIG in fn.attributes else None
        if config is None or config.strategy not in SHARED_SM:
            continue
        for launch in irutil.ops(fn, "gpu.launch_func"):
            out[tuple(ir.SymbolRefAttr(launch.attributes["kernel"]).value)] = \
                SHARED_SM[config.strategy]
    return out


def _wide(module):
    """{(gpu.module, gpu.func) names} launched from the kernel functions of
    WIDE_KERNELS."""
    out = set()
    for fn in irutil.functions(module):
        config = Config.of_kernel(fn) if CONFIG in fn.attributes else None
        if config is None or not any(attr in fn.attributes and config.strategy == strategy
                                     for attr, strategy in WIDE_KERNELS):
            continue
        for launch in irutil.ops(fn, "gpu.launch_func"):
            out.add(tuple(ir.SymbolRefAttr(launch.attributes["kernel"]).value))
    return out


def _planned(module):
    """{(gpu.module, gpu.func) names: blocks an SM} of the kernels launched
    from kernel functions that carry irutil.BLOCKS_PER_SM_ATTR."""
    out = {}
    for fn in irutil.functions(module):
        if irutil.BLOCKS_PER_SM_ATTR not in fn.attributes:
            continue
        counts = list(ir.DenseI32ArrayAttr(fn.attributes[irutil.BLOCKS_PER_SM_ATTR]))
        for launch, count in zip(irutil.ops(fn, "gpu.launch_func"), counts):
            if count > 0:
                out[tuple(ir.SymbolRefAttr(launch.attributes["kernel"]).value)] = count
    return out


def mark(module):
    module = getattr(module, "operation", module)
    wide = _wide(module)
    planned = _planned(module)
    shared = _shared(module)
    i32 = ir.IntegerType.get_signless(32)
    for gm in irutil.body(module).operations:
        if gm.operation.name != "gpu.module":
            continue
        for f in irutil.body(gm.operation).operations:
            fn = f.operation
            if fn.name != "gpu.func":
                continue
            name = (irutil.symbol(gm.operation), irutil.symbol(fn))
            if irutil.contains(fn, "nvvm.setmaxregister") or name in wide:
                fn.attributes[ATTR] = ir.IntegerAttr.get(i32, 1)
            elif name in planned:
                fn.attributes[ATTR] = ir.IntegerAttr.get(i32, planned[name])
            elif name in shared:
                fn.attributes[ATTR] = ir.IntegerAttr.get(i32, shared[name])


@register
@dataclass
class DnnRegisterBudget(DnncPass):
    NAME = "dnn-register-budget"

    def run(self, module):
        with module.context, ir.Location.unknown():
            mark(module)
