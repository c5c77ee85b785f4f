"""dnn-pool-windows: lower every kernel whose ``dnn.config`` names the
``simt-window`` strategy to a window program: one ``gpu.launch`` whose
threads each own an output pixel and ``vector`` channels, loop over the
window in registers and store the fused epilogue's results
(dnnc/codegen/gpu/windows.py). A pooling backward (its window generic marked
``backward = true``) is gathered the other way round: a thread owns an input
pixel and ``vector`` channels of dx and loops over the windows covering it
(dnnc/codegen/gpu/window_gradients.py).

Runs in the ``gpu`` stage on bufferized kernel functions, beside
dnn-reduce-rows, before convert-linalg-to-parallel-loops. The config's
``block[0]`` is the threads per block and ``vector`` the channels per thread
(used when x's channels are contiguous: channels-last; otherwise a thread
owns one output element and the threads run along x's contiguous dim). A
kernel that is not a window program (a window of more than
``windows.MAX_TAPS`` taps, ops the strategy does not know) is left as it is
and handed to simt-generic: its ``dnn.config`` becomes ``{block = [256, 1,
1], strategy = "simt-generic"}`` and its ``dnn.config_reason`` says why.

Before (max pooling 3x3 / 2 of channels-last bf16 and a relu, config
``{block = [256, 1, 1], strategy = "simt-window", vector = 8}``)::

    linalg.generic ... outs(%acc : memref<2x16x4x4xf32>)          // fill -inf
    linalg.generic {dnn.window = {mode = "max", ...}}
        ins(%win : memref<3x3xf32>) outs(%acc : memref<2x16x4x4xf32>) {
      ... memref.load %x[...] : memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>> ...
    }
    linalg.generic ins(%acc) outs(%y : memref<2x16x4x4xbf16, strided<...>>)  // relu, truncf

After::

    gpu.launch blocks(%bx, %by, %bz) in (%c1, %c1, %c1) threads(%tx, %ty, %tz) in (%c256, ...) {
      %v = memref.reinterpret_cast %x to ... : memref<2x8x8x16xbf16>
      ... 9 x (scf.if %inside { vector.load %v[...] : vector<8xbf16> } , arith.maximumf) ...
      ... arith.maximumf (relu), arith.truncf per channel ...
      vector.store %r, %yv[...] : memref<2x4x4x16xbf16>, vector<8xbf16>
    }

Lit test: test/lit/passes/dnn_pool_windows.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import window_gradients, windows
from dnnc.heuristics.config import fall_back, kernels_of
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
                    found = windows.match(fn)
                    if found.backward:
                        window_gradients.check(found)
                except windows.NotAWindowProgram as why:
                    fall_back(fn, f"simt-window does not apply ({why}): simt-generic, one "
                              "thread per output")
                    continue
                windows.build(fn, found, config.vector, config.block[0])
