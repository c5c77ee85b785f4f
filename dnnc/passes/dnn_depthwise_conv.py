"""dnn-depthwise-conv: lower every kernel whose ``dnn.config`` names the
``simt-depthwise`` strategy (a convolution with one channel a group, and
its fused pointwise epilogue) to one ``gpu.launch`` whose threads each own
``vector`` channels of ``tile`` outputs along W, load the x rows of their
windows into registers once, weight them by the block's filters staged in
shared memory, and store the epilogue's results
(dnnc/codegen/gpu/window/: depthwise.py matches the kernel,
depthwise_emit.py emits the launch). A data gradient is the same launch
reading dy (depthwise_dgrad.py: a strided one's W phases fixed when the
kernel is built, its rows predicated); a filter gradient is two launches,
partial sums over ``split`` blocks along N x P x Q into a workspace, then
their sum in order with the epilogue (depthwise_wgrad.py).

Runs in the ``gpu`` stage on bufferized kernel functions, after
dnn-pool-windows, before convert-linalg-to-parallel-loops. The config's
``block[0]`` is the threads per block (rounded down to a multiple of the
block's channel groups), ``vector`` the channels per thread and ``tile``'s
last entry the outputs per thread along W. A kernel this strategy does not
take (not a depthwise convolution after all, an op it does not know, x's
channels not contiguous in memory, so that a thread's channels are not one
vector) is left as it is and handed to simt-generic: its ``dnn.config``
becomes ``{block = [256, 1, 1], strategy = "simt-generic"}`` and its
``dnn.config_reason`` says why.

Before (3x3 / 1 of channels-last bf16 with a bias and a relu; config
``{block = [256, 1, 1], strategy = "simt-depthwise", tile = [1, 4], vector = 8}``)::

    linalg.generic ... outs(%xpad : memref<2x16x10x10xf32>)       // pad x, extf
    linalg.generic ... outs(%acc : memref<2x16x1x8x8xf32>)        // fill 0
    linalg.generic {... "reduction", "reduction", "reduction"}    // the convolution
        ins(%xpad_groups, %w_groups) outs(%acc)
    %c = memref.collapse_shape %acc ...
    linalg.generic ins(%c, %bias) outs(%y : memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>)

After (a thread per 8 channels x 4 outputs along W, 2 channel groups x 128
tiles a block)::

    gpu.launch blocks(%bx, %by, %bz) in (%c1, %c1, %c1) threads(...) in (%c256, ...)
        workgroup(%w_smem : memref<144xbf16, #gpu.address_space<workgroup>>) {
      scf.for ... { memref.load %w[...]; memref.store ..., %w_smem[...] }   // filters
      gpu.barrier
      ... 3 rows x 6 x (vector.load %xv[...] : vector<8xbf16>, arith.select on padding)
      ... 3 x (vector.load %w_smem : vector<8xbf16>, 4 x math.fma) a row
      ... per output: bias, relu, truncf per channel, vector.store ... : vector<8xbf16>
    }

Lit test: test/lit/passes/dnn_depthwise_conv.mlir.
"""

import math
from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu.window import (depthwise, depthwise_dgrad, depthwise_emit, depthwise_wgrad,
                                     grouped_emit)
from dnnc.codegen.gpu.window.program import channel_contiguous
from dnnc.codegen.gpu.window.tile import wgrad_units
from dnnc.heuristics.config import fall_back, kernels_of
from dnnc.heuristics.depthwise import STRATEGY
from dnnc.passes import DnncPass, register


def _fits(found, width, grouped):
    """Whether a thread may own ``width`` channels: x's channels of one
    load contiguous in memory, and for a grouped convolution, the channels
    dividing K and holding whole groups or dividing one (grouped_emit.py)."""
    if found.direction == "wgrad":
        # dy's channel vectors, and x's chunk of input channels a group.
        k, per = found.dy_shape[1], found.outs_per_group
        if k % width or (width % per and per % width):
            return False
        _, chunk = wgrad_units(found.window, width, found.ins_per_group)
        return (channel_contiguous(found.w.type, width)
                and channel_contiguous(found.x.type, math.gcd(chunk, width)))
    if not grouped:
        return channel_contiguous(found.x.type, width)
    k, per = found.out_shape[1], found.outs_per_group
    if k % width or (width % per and per % width):
        return False
    return channel_contiguous(found.x.type, grouped_emit.piece(found.ins_per_group, per, width))


@register
@dataclass
class DnnDepthwiseConv(DnncPass):
    NAME = "dnn-depthwise-conv"

    def run(self, module):
        with module.context, ir.Location.unknown():
            for fn, config in kernels_of(module, STRATEGY):
                try:
                    found = depthwise.match(fn)
                    width = max(1, config.vector or 1)
                    grouped = found.ins_per_group > 1 or found.outs_per_group > 1
                    while width > 1 and not _fits(found, width, grouped):
                        width //= 2
                    if not channel_contiguous(found.x.type, 1):
                        raise depthwise.NotDepthwise("x's channels are not contiguous")
                except depthwise.NotDepthwise as why:
                    fall_back(fn, f"simt-depthwise does not apply ({why}): simt-generic, one "
                              "thread per output")
                    continue
                tile = list(config.tile or (1,))[-1]
                if found.direction == "wgrad":
                    depthwise_wgrad.build(fn, found, width, config.block[0], tile, config.split)
                elif grouped:
                    grouped_emit.build(fn, found, width, config.block[0], tile)
                elif found.direction == "dgrad":
                    depthwise_dgrad.build(fn, found, width, config.block[0], tile)
                else:
                    depthwise_emit.build(fn, found, width, config.block[0], tile)
