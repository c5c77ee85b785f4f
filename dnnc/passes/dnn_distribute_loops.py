"""dnn-distribute-loops: spread each kernel function's loops over GPU blocks
and threads, as its ``dnn.config`` says (strategies ``simt-generic`` and
``simt-pointwise``).

Run after ``convert-linalg-to-parallel-loops``. In every function marked
``dnn.kernel``:

1. each top-level ``scf.parallel`` is linearized and split into an outer loop
   over blocks and an inner loop over the config's ``block[0]`` threads, with
   a bounds guard (dnnc/codegen/gpu/loops.py); parallel loops nested in it
   (a reduction between parallel dims) become ``scf.for``;
2. top-level compute outside any parallel loop (a rank-0 result, a full
   reduction) is wrapped into a one-thread loop first, so that no compute is
   left on the host.

``func.func(gpu-map-parallel-loops)`` and ``convert-parallel-loops-to-gpu``
then turn each pair into a ``gpu.launch`` of ``blocks x block[0]`` threads.

Before::

    scf.parallel (%i, %j) = (%c0, %c0) to (%c3, %c5) step (%c1, %c1) {
      ... %i, %j ...
    }

After (block = [256, 1, 1])::

    scf.parallel (%b) = (%c0) to (%c1) step (%c1) {
      scf.parallel (%t) = (%c0) to (%c256) step (%c1) {
        %l = arith.addi (arith.muli %b, %c256), %t
        scf.if (arith.cmpi ult, %l, %c15) {
          %j = arith.remui %l, %c5
          %i = arith.divui %l, %c5
          ... %i, %j ...
        }
      }
    }

Lit test: test/lit/passes/dnn_distribute_loops.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import irutil, loops
from dnnc.errors import UnsupportedError
from dnnc.passes import DnncPass, register

# The strategies whose loops this pass spreads (simt-pointwise's are vector
# loops by then: dnn-vectorize-pointwise; a simt-reduce kernel is one
# gpu.launch already, dnn-reduce-rows, and has none left).
DISTRIBUTED = ("simt-generic", "simt-pointwise", "simt-reduce", "simt-reduce-columns",
               "simt-reduce-rows-columns",
               "simt-window", "simt-transpose", "simt-depthwise", "tc-sm90", "tc-sm80",
               "simt-gemm", "simt-gemv")

# Ops that may stay on the host between launches: they only make or view
# buffers, or are constants that gpu-kernel-outlining sinks into kernels.
HOST_OPS = frozenset({
    "memref.alloc", "memref.dealloc", "memref.subview", "memref.expand_shape",
    "memref.collapse_shape", "memref.cast", "memref.reinterpret_cast",
    "arith.constant", "func.return", "func.call", "gpu.launch",
    # a tensor-core kernel's TMA descriptors (dnn-map-tensor-cores), and the
    # zero and undefined accumulators canonicalize hoists out of its
    # gpu.launch as constants
    "nvgpu.tma.create.descriptor", "builtin.unrealized_conversion_cast", "llvm.mlir.zero",
    "llvm.mlir.undef",
})


def block_threads(fn):
    """Threads per block from the kernel function's ``dnn.config``."""
    name = irutil.symbol(fn)
    if irutil.CONFIG_ATTR not in fn.attributes:
        raise UnsupportedError(f"kernel '{name}' has no dnn.config; run dnn-default-config "
                               "or the heuristics first")
    config = ir.DictAttr(fn.attributes[irutil.CONFIG_ATTR])
    strategy = ir.StringAttr(config["strategy"]).value if "strategy" in config else ""
    if strategy not in DISTRIBUTED:
        raise UnsupportedError(f"kernel '{name}': strategy '{strategy}' has no GPU lowering "
                               f"yet; expected one of {', '.join(DISTRIBUTED)}")
    block = irutil.int_list(config["block"]) if "block" in config else [256]
    threads = 1
    for b in block:
        threads *= b
    if not 1 <= threads <= 1024:
        raise UnsupportedError(f"kernel '{name}': expected 1 to 1024 threads per block, "
                               f"got {threads}")
    return threads


def _group_host_compute(fn):
    """Wrap each run of top-level compute ops into a one-thread loop."""
    run = []
    for op in list(irutil.body(fn).operations):
        op = op.operation
        if op.name in HOST_OPS or op.name == "scf.parallel":
            if run:
                loops.single_thread(run)
                run = []
        else:
            run.append(op)
    if run:
        loops.single_thread(run)


def distribute_function(fn):
    threads = block_threads(fn)
    _group_host_compute(fn)
    for op in list(irutil.body(fn).operations):
        op = op.operation
        if op.name != "scf.parallel":
            continue
        for nested in reversed(irutil.ops(op, "scf.parallel")):
            loops.serialize(nested)
        loops.distribute(op, threads)


@register
@dataclass
class DnnDistributeLoops(DnncPass):
    NAME = "dnn-distribute-loops"

    def run(self, module):
        with module.context, ir.Location.unknown():
            for fn in irutil.kernel_functions(module):
                distribute_function(fn)
