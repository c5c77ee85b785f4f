"""dnn-reduce-columns: lower every kernel whose ``dnn.config`` names the
``simt-reduce-columns`` strategy to a column program: a ``gpu.launch`` whose
threads each fold 16-byte vectors of columns down a slice of the rows, the
last block of each column of blocks to arrive summing the slices' partials
in a fixed order (dnnc/codegen/gpu/reduce/colwise.py: ``build`` and the rows
launch; the kernel is read in colwise_program.py, the finish emitted by
colwise_finish.py, what both share by colwise_emitter.py).

Runs in the ``gpu`` stage on bufferized kernel functions, beside
dnn-reduce-rows, before convert-linalg-to-parallel-loops. The config's
``block`` is ``[Tx, Ty, 1]`` (Tx threads across the columns, Ty down the
rows), ``vector`` the elements per load, ``unroll`` the rows a thread loads
before it folds them, and ``tile[0]`` the rows each block folds: the rows
are split over ``G = ceil(R / tile)`` blocks (without a tile, G = 1). A kernel that is not a column
program (the heuristics only choose simt-reduce-columns for reductions over
every dim but the innermost, but kernels vary) is left as it is and handed
to simt-generic: its ``dnn.config`` becomes ``{block = [128, 1, 1],
strategy = "simt-generic"}`` (a thread per column), and its
``dnn.config_reason`` says why.

Before (a column sum of 512 x 64 f32, config ``{block = [16, 16, 1],
strategy = "simt-reduce-columns", tile = [128], unroll = 8, vector = 4}``)::

    linalg.generic ... outs(%acc : memref<1x64xf32>)         // fill 0
    linalg.generic {iterator_types = ["reduction", "parallel"]}
        ins(%x : memref<512x64xf32>) outs(%acc : memref<1x64xf32>)  // add

After::

    %part = memref.alloc() : memref<4x64xf32>
    %count = memref.alloc() : memref<1xi32>
    gpu.launch blocks(%bx, %by, %bz) in (%c1, %c4, %c1) threads(%tx, %ty, %tz) in (%c16, %c16, %c1)
        workgroup(%smem : memref<1024xf32, #gpu.address_space<workgroup>>,
                  %ticket : memref<1xi32, #gpu.address_space<workgroup>>) {
      ... scf.for: 8 vector.load of rows, 32 arith.addf ...
      ... memref.store to %smem, gpu.barrier, the ty = 0 threads sum 16 slots ...
      vector.store %sums, %part[%by, %j] : memref<4x64xf32>, vector<4xf32>
      ... gpu.barrier; thread (0, 0): memref.atomic_rmw addi on %count[%bx] between fences ...
      scf.if %ticket[0] == 3 {                          // the last of the 4 blocks
        ... row lane %ty loads %part[%ty, %j], the lanes summed in order through %smem,
            memref.store ...
      }
    }

Lit test: test/lit/passes/dnn_reduce_columns.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu.reduce import colwise
from dnnc.heuristics.config import fall_back, kernels_of
from dnnc.passes import DnncPass, register

STRATEGY = "simt-reduce-columns"
FALLBACK_BLOCK = (128, 1, 1)


@register
@dataclass
class DnnReduceColumns(DnncPass):
    NAME = "dnn-reduce-columns"

    def run(self, module):
        with module.context, ir.Location.unknown():
            for fn, config in kernels_of(module, STRATEGY):
                tile = config.tile[0] if config.tile else None  # none: one split
                try:
                    colwise.build(fn, config.vector, config.block, config.unroll, tile)
                except colwise.NotAColumnProgram as why:
                    fall_back(fn, f"simt-reduce-columns does not apply ({why}): simt-generic, "
                              "one thread per column", FALLBACK_BLOCK)
