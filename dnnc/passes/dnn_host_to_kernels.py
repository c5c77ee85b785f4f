"""dnn-host-to-kernels: leave nothing on the host that touches memory.

Run after bufferization (``one-shot-bufferize`` with function boundaries, then
``buffer-results-to-out-params``). The GPU back end launches kernels; the host
code may only allocate buffers, take views and call kernel functions. This
pass removes or moves what bufferization leaves there:

1. A copy of a fresh buffer into an output parameter is elided: the buffer's
   writers write the output parameter directly (``memref.alloc`` + writes +
   ``memref.copy %alloc, %out`` becomes writes into ``%out``). A later copy
   *from* the buffer reads the output instead, which holds the same data.
2. A splat constant buffer (``memref.get_global`` of a splat
   ``memref.global``) becomes a ``memref.alloc`` filled with ``linalg.fill``
   (by a new kernel function ``<graph>_fill`` when on the host).
3. Every other ``memref.copy`` becomes a ``linalg.copy``: in place inside a
   kernel function, or in a new kernel function ``<graph>_copy`` called from
   the host.

Before::

    func.func private @k(%x: memref<4xf32>, %out: memref<4xf32>) attributes {dnn.kernel} {
      %a = memref.alloc() : memref<4xf32>
      linalg.generic ... ins(%x : memref<4xf32>) outs(%a : memref<4xf32>)
      memref.copy %a, %out : memref<4xf32> to memref<4xf32>
      return
    }

After::

    func.func private @k(%x: memref<4xf32>, %out: memref<4xf32>) attributes {dnn.kernel} {
      linalg.generic ... ins(%x : memref<4xf32>) outs(%out : memref<4xf32>)
      return
    }

Lit test: test/lit/passes/dnn_host_to_kernels.mlir.
"""

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg, memref

from dnnc.codegen.gpu import irutil, outline
from dnnc.errors import UnsupportedError
from dnnc.passes import DnncPass, register


def _uses(value):
    return [u.owner.operation for u in value.uses]


def _elide_output_copy(fn, copy):
    """Forward ``copy``'s fresh source buffer into its output-parameter
    destination when that is safe; True when done."""
    src, dst = copy.operands[0], copy.operands[1]
    alloc = irutil.defining_op(src)
    if alloc is None or alloc.name != "memref.alloc" or src.type != dst.type:
        return False
    if not irutil.is_block_argument(dst) or dst.owner != irutil.body(fn):
        return False
    if len(list(dst.uses)) != 1 or alloc.block != copy.block:
        return False
    # After the copy the buffer may only be read by copies (a second output
    # that returns the same tensor): they then read the output parameter.
    for user in _uses(src):
        if user == copy or not copy.is_before_in_block(_ancestor_in(user, copy.block)):
            continue
        if user.name != "memref.copy" or user.operands[0] != src:
            return False
    src.replace_all_uses_with(dst)
    copy.erase()
    alloc.erase()
    return True


def _ancestor_in(op, block):
    """The ancestor of ``op`` (or ``op``) whose block is ``block``."""
    while op.block != block:
        op = op.parent
    return op


def _globals(module):
    return {irutil.symbol(op): op for op in irutil.ops(module, "memref.global")}


def _fill_splat_global(module, get, globals_):
    """Replace a ``memref.get_global`` of a splat constant by alloc + fill (the
    fill in a new kernel function when on the host)."""
    name = ir.FlatSymbolRefAttr(get.attributes["name"]).value
    glob = globals_.get(name)
    init = glob.attributes["initial_value"] if glob is not None and \
        "initial_value" in glob.attributes else None
    if init is None or not isinstance(init, ir.DenseElementsAttr) or not init.is_splat:
        raise UnsupportedError(f"dnn-host-to-kernels: constant buffer @{name} is not a splat; "
                               "only splat constants can be made on the GPU")
    splat = init.get_splat_value()
    t = ir.MemRefType(get.results[0].type)

    def fill(target):
        value = ir.Operation.create("arith.constant", results=[splat.type],
                                    attributes={"value": splat}).result
        linalg.fill(value, outs=[target])

    with ir.InsertionPoint(get), get.location:
        buf = memref.alloc(t, [], [])
        if _in_kernel(get):
            fill(buf)
        else:
            graph = irutil.symbol(irutil.graph_function(module))
            kernel = outline.new_kernel(module, f"{graph}_fill", [t],
                                        lambda args: fill(args[0]), "fill")
            outline.call(kernel, [buf])
    get.results[0].replace_all_uses_with(buf)
    get.erase()


def _in_kernel(op):
    while op is not None and op.name != "func.func":
        op = op.parent
    return op is not None and irutil.KERNEL_ATTR in op.attributes


def _copy_to_kernel(module, fn, copy):
    src, dst = copy.operands[0], copy.operands[1]
    with ir.InsertionPoint(copy), copy.location:
        if irutil.KERNEL_ATTR in fn.attributes:
            linalg.copy(src, outs=[dst])
        else:
            base = f"{irutil.symbol(irutil.graph_function(module))}_copy"
            kernel = outline.copy_kernel(module, base, src.type, dst.type)
            outline.call(kernel, [src, dst])
    copy.erase()


def run(module):
    module = getattr(module, "operation", module)
    with module.context, ir.Location.unknown():
        for fn in irutil.functions(module):
            for copy in list(irutil.body(fn).operations):
                if copy.operation.name == "memref.copy":
                    _elide_output_copy(fn, copy.operation)
        globals_ = _globals(module)
        for get in irutil.ops(module, "memref.get_global"):
            _fill_splat_global(module, get, globals_)
        for glob in globals_.values():  # every reader was replaced above
            glob.erase()
        for fn in irutil.functions(module):
            for copy in irutil.ops(fn, "memref.copy"):
                _copy_to_kernel(module, fn, copy)


@register
@dataclass
class DnnHostToKernels(DnncPass):
    NAME = "dnn-host-to-kernels"

    def run(self, module):
        run(module)
