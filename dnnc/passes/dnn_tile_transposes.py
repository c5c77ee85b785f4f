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
HW). ``block[0]`` is the threads per block. A kernel whose buffers both
lie contiguously in the same order (a transpose whose operand a view
already permuted) becomes a copy between their flat views, handed to
simt-pointwise (dnn-vectorize-pointwise, which runs after this pass); any
other that is not such a copy is handed to simt-generic with the reason.

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

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.elementwise import transpose
from dnnc.heuristics.config import Config, add_note, fall_back, hand_over, kernels_of
from dnnc.heuristics.pointwise import VECTOR_BYTES
from dnnc.passes import DnncPass, register

STRATEGY = "simt-transpose"
POINTWISE = "simt-pointwise"


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
                    width = plain_copy_width(fn)
                    count = transpose.flatten_plain_copy(fn) if width > 1 else None
                    if count is not None:
                        # Whole vectors; at 1, dnn-vectorize-pointwise hands the
                        # copy to simt-generic, saying why.
                        while count % width:
                            width //= 2
                        hand_over(fn, Config(POINTWISE, (256, 1, 1), vector=width, unroll=2),
                                  f"{STRATEGY} does not apply ({e}): a plain copy of {count} "
                                  "contiguous elements, simt-pointwise's vectors")
                        continue
                    fall_back(fn, f"{STRATEGY} does not apply ({e}): simt-generic, one "
                                  "thread per element", config.block)
                    continue
                add_note(fn, note)


def plain_copy_width(fn):
    """The elements of a 16-byte vector of the wider of kernel ``fn``'s two
    element types: the widest vector of a flattened copy
    (transpose.flatten_plain_copy), halved until it divides the copy."""
    widest = max(irutil.element_bytes(ir.MemRefType(t).element_type)
                 for t in irutil.function_type(fn).inputs)
    return max(1, VECTOR_BYTES // widest)
