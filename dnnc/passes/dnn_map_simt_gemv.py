"""dnn-map-simt-gemv: lower every kernel whose ``dnn.config`` names
``simt-gemv`` to its GEMV kernel (dnnc/codegen/gpu/simt_gemv/): a matmul
whose M or N is at most 8, on the CUDA cores in one launch, each output's
K shared by ``split`` threads of a block, the fused pointwise epilogue on
each output.

The config's ``block`` is the threads, ``split`` the threads sharing an
output's K, ``vector`` the elements of a load along the long operand's
contiguous dim, ``unroll`` the loads of K issued together. The heuristics
read the operands' layouts as the graph gives them; where the operands as
stored differ (a transpose folded into the GEMM as a strided view) and the
config does not fit them, the pass chooses again for them
(heuristics/simt_gemv.skinny) and says so in the reason. A kernel that does
not read as one GEMM plus an elementwise epilogue, or that simt-gemv does
not take, goes to simt-generic with the reason.

Runs in the ``gpu`` stage on bufferized kernel functions, beside
dnn-map-simt-gemm.

Before (y = x @ W + bias, x 1 x 40, W 40 x 24 f32, config ``{block =
[64, 1, 1], split = 2, strategy = "simt-gemv", unroll = 4}``)::

    linalg.generic ... outs(%c : memref<1x24xf32>)             // fill 0
    linalg.generic ... ins(%x, %w) outs(%c) [parallel, parallel, reduction]
    linalg.generic ... ins(%c, %bias) outs(%y : memref<1x24xf32>)

After::

    gpu.launch blocks(...) in (%gx = %c1, ...) threads(...) in (%tx = %c64, ...)
        dynamic_shared_memory_size %c256_i32 {
      scf.for ... iter_args(%acc = ...) {
        memref.load %x[...] ... memref.load %w[...] ... llvm.fma.f32 ...
      }
      llvm.store ... : f32, !llvm.ptr<3>
      gpu.barrier
      llvm.load ... llvm.load ... arith.addf ... memref.store ... %y[...]
    }

Lit test: test/lit/passes/dnn_map_simt_gemv.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import irutil, simt_gemv
from dnnc.codegen.gpu.tensorcore import gemm as gemm_match
from dnnc.heuristics.config import ATTR, REASON_ATTR, fall_back, kernels_of
from dnnc.heuristics.problem import SMS
from dnnc.heuristics.simt_gemv import skinny
from dnnc.passes import DnncPass, register

STRATEGY = "simt-gemv"
SIMT = "simt-generic, one thread per output"


def skinny_of(config):
    """The simt_gemv.Skinny a config describes."""
    return simt_gemv.Skinny(config.threads, max(1, config.split), max(1, config.vector),
                            max(1, config.unroll))


def chosen_again(found):
    """simt_gemv.Skinny for ``found`` (a gemm.Gemm) as its operands are
    stored, and the heuristics' words for it (for sm_90a's SM count, as
    dnn-map-tensor-cores' choices again are: the gpu stage has no arch)."""
    side = simt_gemv.sides_of(found)
    element = ir.MemRefType(side.w.value.type).element_type
    threads, split, vector, unroll, why = skinny(
        side.rows, side.length, found.k, found.batch, side.w_k_major,
        simt_gemv.widest_vector(found), irutil.element_bytes(element),
        SMS["sm_90a"])
    return simt_gemv.Skinny(threads, split, vector, unroll), why


@register
@dataclass
class DnnMapSimtGemv(DnncPass):
    NAME = "dnn-map-simt-gemv"

    def run(self, module):
        with module.context, ir.Location.unknown():
            for fn, config in list(kernels_of(module, STRATEGY)):
                sk = skinny_of(config)
                try:
                    found = gemm_match.match(fn)
                    try:
                        simt_gemv.check(found, sk)
                    except simt_gemv.NotSupported as why:
                        sk, words = chosen_again(found)
                        simt_gemv.check(found, sk)
                        reason = str(ir.StringAttr(fn.attributes[REASON_ATTR]).value) \
                            if REASON_ATTR in fn.attributes else ""
                        fn.attributes[REASON_ATTR] = ir.StringAttr.get(
                            f"{STRATEGY} chosen again for the operands as stored ({why}): "
                            f"{words}; {reason}")
                    simt_gemv.build(fn, found, sk)
                except (gemm_match.NotAGemm, simt_gemv.NotSupported) as why:
                    fall_back(fn, f"{STRATEGY} does not apply ({why}): {SIMT}", (256, 1, 1))
                    continue
                fn.attributes[ATTR] = config.replace(
                    block=(sk.threads, 1, 1), split=sk.split, vector=sk.vector,
                    unroll=sk.unroll).to_attr()
