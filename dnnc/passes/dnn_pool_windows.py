"""dnn-pool-windows: lower every kernel whose ``dnn.config`` names the
``simt-window`` strategy to a window program: one ``gpu.launch`` whose
threads each own a tile of output pixels and ``vector`` channels, load the
x pixels of their windows into registers once and store the fused
epilogue's results
(dnnc/codegen/gpu/window/: program.py matches the kernel, forward.py emits a
thread's work, windows.py the launch). A pooling backward (its window generic marked
``backward = true``) is gathered the other way round: a thread owns an input
pixel and ``vector`` channels of dx and loops over the windows covering it
(dnnc/codegen/gpu/window/gradients.py).

Runs in the ``gpu`` stage on bufferized kernel functions, beside
dnn-reduce-rows, before convert-linalg-to-parallel-loops. The config's
``block[0]`` is the threads per block, ``vector`` the channels per thread
(used when x's channels are contiguous: channels-last; otherwise a thread
owns one output element per pixel and the threads run along x's contiguous
dim) and ``tile`` the output pixels a thread owns per spatial dim (a
forward's; its x pixels loaded once for all of them). A tile the kernel
cannot take (on a backward, or loading more than ``program.MAX_TAPS``
pixels a thread) is dropped, the kernel's ``dnn.config_reason`` saying so. A
kernel that is not a window program (a window of more than
``program.MAX_TAPS`` taps, ops the strategy does not know) is left as it is
and handed to simt-generic: its ``dnn.config`` becomes ``{block = [256, 1,
1], strategy = "simt-generic"}`` and its ``dnn.config_reason`` says why.

Before (max pooling 3x3 / 2 of channels-last bf16 and a relu, config
``{block = [256, 1, 1], strategy = "simt-window", tile = [2, 2], vector = 8}``)::

    linalg.generic ... outs(%acc : memref<2x16x4x4xf32>)          // fill -inf
    linalg.generic {dnn.window = {mode = "max", ...}}
        ins(%win : memref<3x3xf32>) outs(%acc : memref<2x16x4x4xf32>) {
      ... memref.load %x[...] : memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>> ...
    }
    linalg.generic ins(%acc) outs(%y : memref<2x16x4x4xbf16, strided<...>>)  // relu, truncf

After (a thread per 2 x 2 outputs and 8 channels)::

    gpu.launch blocks(%bx, %by, %bz) in (%c1, %c1, %c1) threads(%tx, %ty, %tz) in (%c256, ...) {
      %v = memref.reinterpret_cast %x to ... : memref<2x8x8x16xbf16>
      ... 25 x (vector.load %v[n, clamped h, clamped w, c] : vector<8xbf16>, arith.select
               of -inf where the pixel is padding) ...
      ... per output: 9 x arith.maximumf, arith.maximumf (relu), arith.truncf per channel,
          vector.store %r, %yv[...] : memref<2x4x4x16xbf16>, vector<8xbf16> ...
    }

Lit test: test/lit/passes/dnn_pool_windows.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu.window import gradients, program, windows
from dnnc.codegen.gpu.window.tile import spatial_tile
from dnnc.heuristics.config import fall_back, hand_over, kernels_of
from dnnc.heuristics.window import tile_loads
from dnnc.passes import DnncPass, register

STRATEGY = "simt-window"


@register
@dataclass
class DnnPoolWindows(DnncPass):
    NAME = "dnn-pool-windows"

    def run(self, module):
        with module.context, ir.Location.unknown():
            for fn, config in kernels_of(module, STRATEGY):
                try:
                    found = program.match(fn)
                    if found.backward:
                        gradients.check(found)
                except program.NotAWindowProgram as why:
                    fall_back(fn, f"simt-window does not apply ({why}): simt-generic, one "
                              "thread per output")
                    continue
                config = self._tile(fn, found, config)
                windows.build(fn, found, config.vector, config.block[0], config.tile)

    @staticmethod
    def _tile(fn, found, config):
        """``config`` without its tile where ``found`` cannot take it."""
        if not config.tile:
            return config
        text = "x".join(map(str, config.tile))
        why = None
        if found.backward:
            why = f"tile {text} applies to a forward pool only: dropped"
        else:
            loads = tile_loads(found.window, found.stride,
                               spatial_tile(config.tile, len(found.window)))
            if loads > program.MAX_TAPS:
                why = (f"tile {text} loads {loads} x pixels a thread: expected at most "
                       f"{program.MAX_TAPS}: one output a thread")
        if why is None:
            return config
        config = config.replace(tile=())
        hand_over(fn, config, why)
        return config
