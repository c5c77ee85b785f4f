"""dnn-map-simt-gemm: lower every kernel whose ``dnn.config`` names
``simt-gemm`` to its FFMA GEMM kernel (dnnc/codegen/gpu/simt_gemm/), the
kernel's pointwise epilogue fused in registers: f32 operands multiplied
exactly in f32, which no tensor-core strategy takes (they round f32 to
tf32).

The config's ``tile`` is ``[BM, BN, BK]``, ``block`` the threads (their
micro-tiles follow: 8 x 8 for 128 x 128 over 256 threads) and ``split`` the
blocks sharing a tile's K steps, their partials summed in a fixed order:
up to 4 splits by the tile's last block to arrive, in the same launch,
more (or with ``staged = 1``) by a second launch. The kernel must read as one GEMM plus an elementwise
epilogue (dnnc/codegen/gpu/tensorcore/gemm.py) of f32 operands with f32
compute; otherwise the kernel is left as it is and handed to
simt-generic, its ``dnn.config_reason`` saying why.

Runs in the ``gpu`` stage on bufferized kernel functions, beside
dnn-map-tensor-cores.

Before (C = A @ B + bias, f32, config ``{block = [64, 1, 1], strategy =
"simt-gemm", tile = [32, 32, 8]}``)::

    linalg.generic ... outs(%c : memref<40x24xf32>)             // fill 0
    linalg.generic ... ins(%a, %b) outs(%c) [parallel, parallel, reduction]
    linalg.generic ... ins(%c, %bias) outs(%y : memref<40x24xf32>)

After::

    gpu.launch blocks(...) in (%gx = %c2, ...) threads(...) in (%tx = %c64, ...)
        dynamic_shared_memory_size %c4608_i32 {
      ... memref.load %a[...] ... llvm.store ... : f32, !llvm.ptr<3>   // step 0
      gpu.barrier
      scf.for ... iter_args(%acc0 = ..., ...) {
        ... memref.load %a[...]                                        // step kt+1
        llvm.load ... -> vector<4xf32>  ...  llvm.fma.f32 ...
        llvm.store ... gpu.barrier
      }
      ... arith.addf ... vector.store ...
    }

Lit test: test/lit/passes/dnn_map_simt_gemm.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import simt_gemm
from dnnc.codegen.gpu.tensorcore import gemm as gemm_match
from dnnc.heuristics.config import ATTR, fall_back, kernels_of
from dnnc.passes import DnncPass, register

STRATEGY = "simt-gemm"
SIMT = "simt-generic, one thread per output"


def tile_of(config):
    """The simt_gemm.Tile a config describes (128 x 128 x 8 where it names
    no tile)."""
    m, n, k = (tuple(config.tile) + (128, 128, 8)[len(config.tile):])[:3]
    return simt_gemm.Tile(m, n, k, config.threads, max(1, config.split),
                          second_launch=config.staged == 1)


@register
@dataclass
class DnnMapSimtGemm(DnncPass):
    NAME = "dnn-map-simt-gemm"

    def run(self, module):
        with module.context, ir.Location.unknown():
            for fn, config in list(kernels_of(module, STRATEGY)):
                tile = tile_of(config)
                try:
                    found = gemm_match.match(fn)
                    simt_gemm.build(fn, found, tile)
                except (gemm_match.NotAGemm, simt_gemm.NotSupported) as why:
                    # simt-generic keeps the block (an override's, which it
                    # can run: any size up to 1024).
                    fall_back(fn, f"{STRATEGY} does not apply ({why}): {SIMT}", config.block)
                    continue
                # The config records what runs: the splits as the kernel makes
                # them (equal runs of K steps, none empty).
                _, splits = simt_gemm.splits_of(found, tile)
                fn.attributes[ATTR] = config.replace(tile=(tile.m, tile.n, tile.k),
                                                     split=splits).to_attr()
