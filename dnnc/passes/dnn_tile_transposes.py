"""dnn-tile-transposes: lower every kernel whose ``dnn.config`` names the
``simt-transpose`` strategy (a transpose that moves the innermost dim, which
the heuristics choose from the anchor's permutation) to one ``gpu.launch``
that moves 64 x 64 tiles through shared memory, reading vectors along the
source's contiguous dim and writing them along the destination's
(dnnc/codegen/gpu/elementwise/transpose.py).

Runs in the ``gpu`` stage on bufferized kernel functions, before
convert-linalg-to-parallel-loops. The kernel's one ``linalg.generic`` must
read its one input through permuted maps; its body (a cast, a relu, a scale:
the epilogue dnn-fuse joins to a transpose) is applied to each element as it
is written. Its dims are merged where both
buffers keep them adjacent (NCHW to NHWC is a batch of N transposes of C x
HW). ``block[0]`` is the threads per block. A kernel that is not such a
copy, or whose buffers are contiguous along the same dim, is handed to
simt-generic with the reason.

Before (config ``{block = [256, 1, 1], strategy = "simt-transpose"}``)::

    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, #id], ...}
        ins(%x : memref<96x200xf32>) outs(%y : memref<200x96xf32>) { yield %in }

After::

    %src = memref.reinterpret_cast %x to ... sizes: [19200] ...
    %dst = memref.reinterpret_cast %y to ... sizes: [19200] ...
    gpu.launch blocks(%b, ...) in (%c8, %c1, %c1) threads(%t, ...) in (%c256, %c1, %c1)
        workgroup(%tile : memref<64x65xf32, #gpu.address_space<workgroup>>) {
      %v = vector.load %src[...] : memref<19200xf32>, vector<4xf32>   (x4)
      memref.store ... %tile[...]                                        (x16)
      gpu.barrier
      %e = memref.load %tile[...]                                        (x16)
      scf.if %inside { vector.store ..., %dst[...] : memref<19200xf32>, vector<4xf32> }
    }

Lit test: test/lit/passes/dnn_tile_transposes.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu.elementwise import transpose
from dnnc.heuristics.config import add_note, fall_back, kernels_of
from dnnc.passes import DnncPass, register

STRATEGY = "simt-transpose"


@register
@dataclass
class DnnTileTransposes(DnncPass):
    NAME = "dnn-tile-transposes"

    def run(self, module):
        with module.context, ir.Location.unknown():
            for fn, config in kernels_of(module, STRATEGY):
                try:
                    note = transpose.lower_kernel(fn, config.threads)
                except transpose.NotATranspose as e:
                    fall_back(fn, f"{STRATEGY} does not apply ({e}): simt-generic, one "
                                  "thread per element", config.block)
                    continue
                add_note(fn, note)
