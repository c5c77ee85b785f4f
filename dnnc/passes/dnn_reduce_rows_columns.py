"""dnn-reduce-rows-columns: lower every kernel whose ``dnn.config`` names the
``simt-reduce-rows-columns`` strategy to a row program that also folds its
rows into column sums: one ``gpu.launch`` over blocks of consecutive rows
that makes the row program's outputs and each block's partial column sums,
and a second that sums the partials in a fixed order
(dnnc/codegen/gpu/reduce/rowcolumns.py; the second launch is the column
program's finish, colwise_finish.py's ``Finish``). dnn-fuse makes such
kernels of a norm backward: dx beside dscale and dbias, which read the same
dy and x.

Runs in the ``gpu`` stage on bufferized kernel functions, beside
dnn-reduce-rows and dnn-reduce-columns, before
convert-linalg-to-parallel-loops. The config's ``block[0]`` is the threads
per block, ``tile = [W, B]`` the rows a block works on at a time (1: the
whole block on one row; ``block[0] / 32``: a warp per row) and the rows it
folds (the rows are split over ``G = ceil(R / B)`` blocks), and optionally
``Tx``, the threads of a finish block along the columns (``tile = [W, B,
Tx]``); ``vector`` the elements per load. A kernel that is not such a program is left as it is and
handed to simt-generic: its ``dnn.config`` becomes ``simt-generic`` with the
same block, and its ``dnn.config_reason`` says why.

Before (layernorm backward of 64 x 1024 bf16, dx, dscale and dbias; config
``{block = [256, 1, 1], strategy = "simt-reduce-rows-columns",
tile = [1, 16], vector = 4}``)::

    linalg.generic ... ins(%x, %mean, %inv) outs(%xhat : memref<64x1024xf32>)
    linalg.generic {iterator_types = ["parallel", "reduction"]} ... // row sums
    linalg.generic ... outs(%dx : memref<64x1024xbf16>)
    linalg.generic {iterator_types = ["reduction", "parallel"]}
        ins(%dy, %xhat) outs(%acc : memref<1x1024xf32>)        // dscale
    linalg.generic ... ins(%acc) outs(%dscale : memref<1x1024xbf16>)
    ...

After::

    %part = memref.alloc() : memref<4x1024xf32>
    gpu.launch blocks(%g, ...) in (%c4, %c1, %c1) threads(%t, ...) in (%c256, %c1, %c1)
        dynamic_shared_memory_size %c8256_i32 {
      %raw = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %slots = memref.view %raw[%c0][] : ... to memref<16xf32, #gpu.address_space<workgroup>>
      %sums = memref.view %raw[%c64][] : ... to memref<2048xf32, #gpu.address_space<workgroup>>
      ... %sums cleared, gpu.barrier ...
      scf.for %r = %first to %end step %c1 {
        ... the row program of row %r: dy and x loaded once, dx stored ...
        ... vector.load / arith.addf / vector.store of the thread's sums ...
      }
      gpu.barrier
      ... memref.store of the block's sums into %part[%g, %c] ...
    }
    gpu.launch ... threads(%tx, %ty, ...) in (%c32, %c4, %c1) {
      ... row lane %ty loads partial %ty of its 16-byte vector of columns ...
      ... the 4 lanes added in order through shared memory, cast, stored ...
    }

Lit test: test/lit/passes/dnn_reduce_rows_columns.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu.reduce import rowcolumns
from dnnc.heuristics.config import fall_back, kernels_of
from dnnc.passes import DnncPass, register

STRATEGY = "simt-reduce-rows-columns"


@register
@dataclass
class DnnReduceRowsColumns(DnncPass):
    NAME = "dnn-reduce-rows-columns"

    def run(self, module):
        with module.context, ir.Location.unknown():
            for fn, config in kernels_of(module, STRATEGY):
                at_once = config.tile[0] if config.tile else 1
                tile = config.tile[1] if len(config.tile) > 1 else None  # none: one block
                columns = config.tile[2] if len(config.tile) > 2 else None
                try:
                    rowcolumns.build(fn, config.vector, config.block[0], at_once, tile,
                                     finish_columns=columns)
                except rowcolumns.NotARowColumnProgram as why:
                    fall_back(fn, f"simt-reduce-rows-columns does not apply ({why}): "
                              "simt-generic", config.block)
