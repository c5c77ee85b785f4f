"""dnn-map-tensor-cores: lower every kernel whose ``dnn.config`` names a
tensor-core strategy (``tc-sm90``) to its tensor-core kernel: TMA
descriptors on the host side and one ``gpu.launch`` running the warp-
specialized wgmma mainloop with the kernel's pointwise epilogue fused in
registers (dnnc/codegen/gpu/tc_sm90.py).

Runs in the ``gpu`` stage on bufferized kernel functions, before
convert-linalg-to-parallel-loops. The config's ``tile`` is ``[BM, BN, BK]``
and ``stages`` the depth of the shared-memory ring. The kernel must read as
one GEMM plus an elementwise epilogue (dnnc/codegen/gpu/gemm.py), and the
strategy must take it (operand types, TMA's 16-byte stride rule); otherwise
the kernel is left as it is and handed to simt-generic: its ``dnn.config``
becomes ``simt-generic`` and its ``dnn.config_reason`` says why, so that the
plan shows what runs.

Before (C = A @ B + bias, bf16, config ``{block = [384, 1, 1], stages = 4,
strategy = "tc-sm90", tile = [128, 128, 64]}``)::

    linalg.generic ... outs(%c : memref<256x256xf32>)           // fill 0
    linalg.generic ... ins(%a, %b) outs(%c) [parallel, parallel, reduction]
    linalg.generic ... ins(%c, %bias) outs(%y : memref<256x256xbf16>)

After::

    %da = nvgpu.tma.create.descriptor %a' box[%c128, %c64] ...
    %pa = builtin.unrealized_conversion_cast %da : ... to !llvm.ptr
    ...
    gpu.launch blocks(...) in (%gx = %c4, ...) threads(...) in (%tx = %c384, ...)
        dynamic_shared_memory_size %c132160_i32 {
      nvvm.mbarrier.init ...
      scf.if %producer {  nvvm.setmaxregister decrease 40
                          ... nvvm.cp.async.bulk.tensor.shared.cluster.global ... }
      else {              nvvm.setmaxregister increase 232
                          scf.for ... { nvvm.wgmma.mma_async ... }
                          ... arith.addf ... vector.store ... }
    }

Lit test: test/lit/passes/dnn_map_tensor_cores.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import gemm as gemm_match
from dnnc.codegen.gpu import tc_sm90
from dnnc.heuristics.config import fall_back, kernels_of
from dnnc.passes import DnncPass, register

STRATEGY = "tc-sm90"


def tile_of(config):
    """The tc_sm90.Tile a config describes."""
    m, n, k = (tuple(config.tile) + (128, 128, 64)[len(config.tile):])[:3]
    # A consumer warpgroup per 64 rows of the tile (the block follows).
    return tc_sm90.Tile(m, n, k, config.stages, max(1, m // 64), config.split)


@register
@dataclass
class DnnMapTensorCores(DnncPass):
    NAME = "dnn-map-tensor-cores"

    def run(self, module):
        with module.context, ir.Location.unknown():
            for fn, config in kernels_of(module, STRATEGY):
                try:
                    found = gemm_match.match(fn)
                    tc_sm90.build(fn, found, tile_of(config))
                except (gemm_match.NotAGemm, tc_sm90.NotSupported) as why:
                    fall_back(fn, f"{STRATEGY} does not apply ({why}): simt-generic, one "
                              "thread per output")
