"""The simt-window strategy: a pooling kernel (a window reduction with its
pointwise epilogue) as one ``gpu.launch`` whose threads each own a tile of
output pixels and a group of channels, and loop over the windows
(dnn-pool-windows); a pooling backward as one whose threads each own a tile
of input pixels and gather dx.

``build`` picks the emitter, forward.py's ``Emitter`` or gradients.py's
``GradientEmitter``, lays the launch around it (a thread per work item,
``threads`` a block, the threads past the last item guarded off) and erases
the kernel's statements. The kernel is read by program.py's ``match``; the
package's files are listed in __init__.py.

Lit test: test/lit/passes/dnn_pool_windows.mlir.
"""

from mlir import ir
from mlir.dialects import arith, gpu, scf

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.window import gradients
from dnnc.codegen.gpu.window.forward import Emitter
from dnnc.codegen.gpu.window.program import vector_width

_index = irutil.index


def build(fn, window, width, threads, tile=()):
    """Replace kernel ``fn``'s body by the window program of ``window``:
    ``threads`` per block, each owning ``width`` channels of a tile of
    ``tile`` output pixels (per spatial dim, the last dims when shorter; a
    forward only) where x's channels are contiguous (else one output
    element per pixel). Returns the number of blocks."""
    arguments = list(irutil.body(fn).arguments)
    width = vector_width(window, width)
    kind = Emitter
    if window.backward:
        kind = gradients.GradientEmitter
        width = gradients.lanes(window, width)
    if window.backward:
        emitter = kind(window, width, threads, window.stored(arguments))
    else:
        emitter = kind(window, width, threads, window.stored(arguments), tile)
    body = irutil.body(fn)
    first = next(op for op in body.operations if op.operation.name != "arith.constant")
    blocks = -(-emitter.total // threads)
    if emitter.total:
        with ir.InsertionPoint(first), fn.location:
            launch = gpu.LaunchOp((_index(blocks), _index(1), _index(1)),
                                  (_index(threads), _index(1), _index(1)))
            block = launch.regions[0].blocks[0]
            with ir.InsertionPoint(block):
                terminator = gpu.TerminatorOp()
            with ir.InsertionPoint(terminator):
                linear = arith.addi(arith.muli(block.arguments[0], _index(threads)),
                                    block.arguments[3])
                if blocks * threads != emitter.total:
                    inside = arith.cmpi(arith.CmpIPredicate.ult, linear, _index(emitter.total))
                    guard = scf.IfOp(inside)
                    with ir.InsertionPoint(guard.then_block):
                        end = scf.YieldOp([])
                    with ir.InsertionPoint(end):
                        emitter.program(linear)
                else:
                    emitter.program(linear)
    for step in reversed(window.steps):
        step.op.erase()
    window.op.erase()
    window.fill.erase()
    for op in list(body.operations):
        if op.operation.name == "memref.alloc" and not any(True for _ in op.results[0].uses):
            op.operation.erase()
    return blocks
