"""dnn-reduce-rows: lower every kernel whose ``dnn.config`` names the
``simt-reduce`` strategy to a row program: one ``gpu.launch`` with a row per
block (or per warp), warp-shuffle and shared-memory reductions
(dnnc/codegen/gpu/reduce/rowwise.py). A thread that has at most 32 elements of its
row keeps them in registers: its inputs loaded once, every intermediate
computed once (softmax: one exp per element); longer rows loop over their
vectors pass by pass, reading the inputs again and recomputing
intermediates rather than storing them.

Runs in the ``gpu`` stage on bufferized kernel functions, before
convert-linalg-to-parallel-loops. The config's ``block[0]`` is the threads
per block, ``tile[0]`` the rows a block handles (1: the whole block works on
one row; ``block[0] / 32``: a warp per row) and ``vector`` the elements per
load. ``split = C`` (sm_90) spreads each row over a cluster of C blocks that
exchange their partial reductions through distributed shared memory
(dnnc/codegen/gpu/reduce/rowsplit.py): rows too long for one block's registers are
then held in registers too, or, with ``staged = 1``, each block copies its
contiguous part of the row into shared memory (bulk copies, a piece on an
mbarrier each) and loops over it there, ``unroll`` vectors an iteration (a
row held in registers or looped by one block ignores ``unroll``). A row may be several
trailing dims (groupnorm's channels x positions; never split). A kernel
that is not a row program (the heuristics only choose simt-reduce for
softmax, norms and reductions along the innermost or trailing dims, but
their decompositions vary) is left as it is and handed to simt-generic: its
``dnn.config`` becomes ``simt-generic`` with the same block, and its
``dnn.config_reason`` says why, so that the plan shows what runs.

Before (softmax of 64 rows of 256, config ``{block = [64, 1, 1],
strategy = "simt-reduce", vector = 4}``)::

    linalg.generic ... outs(%m : memref<64x1xf32>)        // fill -inf
    linalg.generic ... ins(%x) outs(%m) ["parallel", "reduction"]  // max
    ...

After (a vector of 4 a thread: held in registers)::

    gpu.launch blocks(...) in (%gx = %c64, ...) threads(...) in (%bx = %c64, ...)
        workgroup(%smem : memref<4xf32, #gpu.address_space<workgroup>>) {
      %v = vector.load %x[%row, %j] ...
      %max = arith.maximumf ...                  // the thread's part
      %s1 = gpu.shuffle xor %max, %c16, %c32 : f32
      ...
      %e0 = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(...)   // exp, once
      ...
      vector.store %y0, %y[%row, %j] ...         // e * (1 / max(s, 1))
    }

Option ``merge``: the forms of dnnc/codegen/gpu/reduce/rowmerge.py whose two
reductions a split row held in registers exchanges at once (``shifted``:
softmax's max and sum of exp; ``centred``: a layernorm's mean and centred
squares); by default those that measured faster (rowsplit.MERGE). A staged
split row merges both forms, which measured faster there.

Lit tests: test/lit/passes/dnn_reduce_rows.mlir, dnn_reduce_rows_split.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu.reduce import rowsplit, rowwise
from dnnc.heuristics.config import fall_back, kernels_of
from dnnc.passes import DnncPass, PipelineError, register

STRATEGY = "simt-reduce"


@register
@dataclass
class DnnReduceRows(DnncPass):
    NAME = "dnn-reduce-rows"
    merge: tuple = tuple(sorted(rowsplit.MERGE))

    def run(self, module):
        unknown = set(self.merge) - set(rowsplit.MERGE_KINDS)
        if unknown:
            raise PipelineError(f"pass '{self.NAME}' option 'merge': expected kinds among "
                                f"{', '.join(rowsplit.MERGE_KINDS)}, got {', '.join(sorted(unknown))}")
        with module.context, ir.Location.unknown():
            for fn, config in kernels_of(module, STRATEGY):
                rows_per_block = config.tile[0] if config.tile else 1
                try:
                    if config.split > 1:
                        rowsplit.build(fn, config.vector, config.block[0], config.split,
                                       rows_per_block, merge=frozenset(self.merge),
                                       staged=bool(config.staged), unroll=config.unroll)
                    elif config.staged:
                        raise rowwise.NotARowProgram("a staged row that is not split")
                    else:
                        rowwise.build(fn, config.vector, config.block[0], rows_per_block)
                except rowwise.NotARowProgram as why:
                    fall_back(fn, f"simt-reduce does not apply ({why}): simt-generic, one "
                              "thread per row", config.block)
